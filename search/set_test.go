package search

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// TestWordTableGrowth: words added from an empty table (16 slots, grown
// many times) keep their ids, in the order they were added, and their
// bytes; words never added are not found.
func TestWordTableGrowth(t *testing.T) {
	tab := newWordTable(0)
	checkWordTable(t, &tab, 20000)
	if len(tab.slots) < 2*tab.len() {
		t.Fatalf("%d slots for %d words: more than half full", len(tab.slots), tab.len())
	}
}

// TestWordTableCollisions: with every hash cut to a few bits, words share
// their start slot and their tag (the hash bits a slot keeps) in long
// runs, and are still told apart by their bytes.
func TestWordTableCollisions(t *testing.T) {
	for _, mask := range []uint64{0, 0x1_0000_0003, 0xffff_ffff_0000_0000} {
		tab := newWordTable(0)
		tab.hashMask = mask
		checkWordTable(t, &tab, 3000)
	}
}

func checkWordTable(t *testing.T, tab *wordTable, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	var words []string
	have := map[string]bool{}
	for len(words) < n {
		// Short words of any length (the empty word among them), many
		// prefixes of others, most drawn more than once.
		w := strconv.FormatUint(r.Uint64N(1<<r.IntN(24)), 36)
		if r.IntN(1000) == 0 {
			w = ""
		}
		id, added := tab.add(w)
		if have[w] == added {
			t.Fatalf("add(%q): added %v, but the table had it: %v", w, added, have[w])
		}
		if added {
			if int(id) != len(words) {
				t.Fatalf("add(%q) = %d, want the next id %d", w, id, len(words))
			}
			words = append(words, w)
			have[w] = true
		}
	}
	for id, w := range words {
		if got, ok := tab.lookup(w); !ok || int(got) != id {
			t.Fatalf("lookup(%q) = %d, %v; want %d", w, got, ok, id)
		}
		if string(tab.word(uint32(id))) != w {
			t.Fatalf("word(%d) = %q, want %q", id, tab.word(uint32(id)), w)
		}
		if again, added := tab.add(w); added || int(again) != id {
			t.Fatalf("add(%q) again = %d, %v; want %d, false", w, again, added, id)
		}
	}
	for _, w := range []string{"Absent", "a b", "-1"} { // not base 36
		if _, ok := tab.lookup(w); ok {
			t.Fatalf("lookup(%q) found a word never added", w)
		}
	}
	if tab.len() != len(words) {
		t.Fatalf("len = %d, want %d", tab.len(), len(words))
	}
}

// retained returns the heap objects fn's result keeps alive.
func retained(fn func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := fn()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(x)
	if after.HeapObjects < before.HeapObjects {
		return 0
	}
	return after.HeapObjects - before.HeapObjects
}

// TestLongLivedStructuresArePointerPoor: a vocab of 50,000 words and the
// set of the drawn searches are a few dozen heap objects each, not one or
// more per word, search or term (the garbage collector marks every object
// of a process's heap on every cycle).
func TestLongLivedStructuresArePointerPoor(t *testing.T) {
	n := retained(func() any {
		v := newVocab()
		for i := range 50000 {
			v.intern(fmt.Sprintf("word%d", i))
		}
		return v
	})
	if n > 50 {
		t.Errorf("a vocab of 50000 words keeps %d heap objects", n)
	}
	ps := loadPapers(t)
	qs := drawQueries(t, ps)
	n = retained(func() any { return NewSet(qs) })
	if n > 50 {
		t.Errorf("the set of %d searches keeps %d heap objects", len(qs), n)
	}
}

// TestSetBuiltFromSets: a set built partly from another set's searches
// (AddFrom, in another order) and partly from parsed searches has the same
// normal forms and gives the same answers as the set of those searches,
// and both give Match's.
func TestSetBuiltFromSets(t *testing.T) {
	ps := loadPapers(t)
	docs := docsOf(ps)
	qs := drawQueries(t, ps)
	half := NewSet(qs[:len(qs)/2])
	order := rand.New(rand.NewPCG(5, 6)).Perm(len(qs))
	var b SetBuilder
	var want []*Query
	for _, i := range order {
		if i < len(qs)/2 {
			b.AddFrom(half, i)
		} else {
			b.Add(qs[i])
		}
		want = append(want, qs[i])
	}
	s := b.Set()
	if s.Len() != len(want) {
		t.Fatalf("the set has %d searches, want %d", s.Len(), len(want))
	}
	for i, q := range want {
		if s.String(i) != q.String() {
			t.Fatalf("search %d is %q, want %q", i, s.String(i), q.String())
		}
	}
	checkAnswers(t, ps, docs, want, s.Match(docs))
}
