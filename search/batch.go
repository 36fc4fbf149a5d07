package search

import (
	"math/bits"
	"runtime"
	"sync"
)

// MatchBatch evaluates every search against every doc and returns, per doc
// (in the order of docs), the indices into queries of the searches that
// match it, ascending. It gives exactly the answers of Query.Match.
//
// It does not try every pair. The batch's docs are indexed by their words
// and categories (an inverted index: entry → the set of docs that have
// it, as a bitset of the batch), and each search is evaluated once on
// those sets: a word is its entry's set, AND, OR and NOT are word-wise
// operations on bitsets (len(docs)/64 words each). Where the sets can only
// bound the answer from above — a phrase (its words, not yet their order),
// an abs: word (the index does not tell abstract from title), a NOT of
// either — the docs in the bound are checked with Match. The cost per
// search is a few bitset operations of len(docs)/64 words plus those
// checks; building the index is one pass over the docs' entries. It grows
// linearly with the number of searches and with the number of docs, not
// with their product. Large sets of searches are shared among the cores.
func MatchBatch(queries []*Query, docs []*Doc) [][]int32 {
	if len(queries) == 0 || len(docs) == 0 {
		return make([][]int32, len(docs))
	}
	ix := newBatchIndex(docs)
	// The searches are independent: a share of them per core, each with
	// its own scratch, the index shared read-only.
	workers := min(runtime.GOMAXPROCS(0), 1+len(queries)/minPerWorker)
	if workers <= 1 {
		return ix.match(queries, 0, docs)
	}
	parts := make([][][]int32, workers)
	per := (len(queries) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(queries))
		wg.Go(func() { parts[w] = ix.fork().match(queries[lo:hi], lo, docs) })
	}
	wg.Wait()
	out := make([][]int32, len(docs))
	for di := range out {
		n := 0
		for _, p := range parts {
			n += len(p[di])
		}
		if n == 0 {
			continue
		}
		out[di] = make([]int32, 0, n)
		for _, p := range parts {
			out[di] = append(out[di], p[di]...) // parts hold ascending ranges
		}
	}
	return out
}

// minPerWorker is the fewest searches worth a goroutine of their own.
const minPerWorker = 2000

// match evaluates queries (whose indices start at base) on the docs.
func (ix *batchIndex) match(queries []*Query, base int, docs []*Doc) [][]int32 {
	out := make([][]int32, len(docs))
	for i, q := range queries {
		set, exact := ix.eval(q.root)
		for w, word := range set.b {
			for word != 0 {
				di := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				if exact || q.root.match(docs[di]) {
					out[di] = append(out[di], int32(base+i))
				}
			}
		}
		ix.release(set)
	}
	return out
}

// bitset is a set of docs of the batch. Sets from the index are shared
// (owned false) and never written; eval's results are owned scratch.
type bitset struct {
	b     []uint64
	owned bool
}

type batchIndex struct {
	words    int // uint64 words per bitset
	postings map[entry][]int32
	// sets caches the bitsets of entries of more than dense docs; rarer
	// entries are built into scratch when used (a few bits each).
	sets  map[entry][]uint64
	empty []uint64
	all   []uint64
	free  [][]uint64
}

const dense = 16

func newBatchIndex(docs []*Doc) *batchIndex {
	ix := &batchIndex{words: (len(docs) + 63) / 64, postings: make(map[entry][]int32, 8*len(docs)), sets: map[entry][]uint64{}}
	for i, d := range docs {
		for _, e := range d.entries {
			ix.postings[e] = append(ix.postings[e], int32(i))
		}
	}
	ix.empty = make([]uint64, ix.words)
	ix.all = make([]uint64, ix.words)
	for i := range docs {
		ix.all[i/64] |= 1 << (i % 64)
	}
	return ix
}

// fork returns an index over the same postings with scratch and caches
// of its own, for another goroutine.
func (ix *batchIndex) fork() *batchIndex {
	return &batchIndex{words: ix.words, postings: ix.postings, sets: map[entry][]uint64{}, empty: ix.empty, all: ix.all}
}

func (ix *batchIndex) scratch() bitset {
	if n := len(ix.free); n > 0 {
		b := ix.free[n-1]
		ix.free = ix.free[:n-1]
		return bitset{b: b, owned: true}
	}
	return bitset{b: make([]uint64, ix.words), owned: true}
}

func (ix *batchIndex) release(s bitset) {
	if s.owned {
		ix.free = append(ix.free, s.b)
	}
}

// own returns s as a set the caller may write.
func (ix *batchIndex) own(s bitset) bitset {
	if s.owned {
		return s
	}
	o := ix.scratch()
	copy(o.b, s.b)
	return o
}

// set returns the docs that have entry e.
func (ix *batchIndex) set(e entry) bitset {
	ps := ix.postings[e]
	if len(ps) == 0 {
		return bitset{b: ix.empty}
	}
	if len(ps) > dense {
		b, ok := ix.sets[e]
		if !ok {
			b = make([]uint64, ix.words)
			for _, di := range ps {
				b[di/64] |= 1 << (di % 64)
			}
			ix.sets[e] = b
		}
		return bitset{b: b}
	}
	s := ix.scratch()
	clear(s.b)
	for _, di := range ps {
		s.b[di/64] |= 1 << (di % 64)
	}
	return s
}

// union returns a ∪ b, releasing both.
func (ix *batchIndex) union(a, b bitset) bitset {
	a = ix.own(a)
	for i, w := range b.b {
		a.b[i] |= w
	}
	ix.release(b)
	return a
}

// intersect returns a ∩ b, releasing both.
func (ix *batchIndex) intersect(a, b bitset) bitset {
	a = ix.own(a)
	for i, w := range b.b {
		a.b[i] &= w
	}
	ix.release(b)
	return a
}

// word returns the docs that have word i of term n in its field: exact
// for a title, author or any-field word; for abs: the title-or-abstract
// entry, a bound.
func (ix *batchIndex) word(n *node, i int) (bitset, bool) {
	switch n.field {
	case Title:
		return ix.set(entry{entryTitle, n.stems[i]}), true
	case Abstract:
		return ix.set(entry{entryText, n.stems[i]}), false
	case Author:
		return ix.set(entry{entryAuthor, n.folds[i]}), true
	}
	return ix.union(ix.set(entry{entryText, n.stems[i]}), ix.set(entry{entryAuthor, n.folds[i]})), true
}

// eval returns the docs n matches, or a superset of them and false.
func (ix *batchIndex) eval(n *node) (bitset, bool) {
	switch n.op {
	case opCat:
		return ix.set(entry{entryCat, n.catKey}), true
	case opTerm:
		s, exact := ix.word(n, 0)
		if len(n.stems) == 1 {
			return s, exact
		}
		// A phrase: the docs with all its words (in its field), to be
		// checked for their order.
		for i := 1; i < len(n.stems); i++ {
			w, _ := ix.word(n, i)
			s = ix.intersect(s, w)
		}
		return s, false
	case opNot:
		k, exact := ix.eval(n.kids[0])
		if !exact {
			ix.release(k)
			return bitset{b: ix.all}, false
		}
		o := ix.scratch()
		for i, w := range k.b {
			o.b[i] = ix.all[i] &^ w
		}
		ix.release(k)
		return o, true
	}
	// opAnd, opOr
	s, exact := ix.eval(n.kids[0])
	for _, k := range n.kids[1:] {
		ks, kexact := ix.eval(k)
		if n.op == opAnd {
			s = ix.intersect(s, ks)
		} else {
			s = ix.union(s, ks)
		}
		exact = exact && kexact
	}
	return s, exact
}
