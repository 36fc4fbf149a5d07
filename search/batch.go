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
// and categories (an inverted index: entry → the docs that have it, made
// a bitset of the batch when used), and each search is evaluated once on
// those sets: a word is its entry's set, AND, OR and NOT are word-wise
// operations on bitsets (len(docs)/64 words each). Where an entry only
// bounds a term's docs from above — a phrase (its words, not yet their
// order), an abs: word (the index does not tell abstract from title) —
// the docs in the bound are checked against that term alone, once per
// batch for every search that has the same term (searches share phrases),
// so every set is exact and no search is checked doc by doc. The cost per
// search is a few bitset operations of len(docs)/64 words; building the
// index is one pass over the docs' words. It grows linearly with the
// number of searches and with the number of docs, not with their product.
// Large sets of searches are shared among the cores.
func MatchBatch(queries []*Query, docs []*Doc) [][]int32 {
	if len(queries) == 0 || len(docs) == 0 {
		return make([][]int32, len(docs))
	}
	ix := newBatchIndex(docs)
	// The searches are independent: a share of them per core, each with
	// its own scratch and caches, the postings shared read-only.
	workers := min(runtime.GOMAXPROCS(0), 1+len(queries)/minPerWorker)
	if workers <= 1 {
		return ix.match(queries, 0, len(docs))
	}
	parts := make([][][]int32, workers)
	per := (len(queries) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(queries))
		wg.Go(func() { parts[w] = ix.fork().match(queries[lo:hi], lo, len(docs)) })
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

// match evaluates queries (whose indices start at base) on the n docs.
func (ix *batchIndex) match(queries []*Query, base, n int) [][]int32 {
	out := make([][]int32, n)
	for i, q := range queries {
		set := ix.eval(q.root)
		for w, word := range set.b {
			for word != 0 {
				di := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				out[di] = append(out[di], int32(base+i))
			}
		}
		ix.release(set)
	}
	return out
}

// bitset is a set of docs of the batch. Sets from the index and its
// caches are shared (owned false) and never written; eval's results are
// owned scratch.
type bitset struct {
	b     []uint64
	owned bool
}

// Kinds of entries of the batch index.
const (
	entryText   = iota // a stemmed word of the title or abstract
	entryTitle         // a stemmed word of the title
	entryAuthor        // a folded word of an author name
	entryCat           // a category key
	entryKinds
)

// postings are the docs (ascending) of one entry of the index.
type postings []int32

type batchIndex struct {
	docs  []*Doc
	words int // uint64 words per bitset
	// entries maps an entry, by kind, to its number in postings.
	entries  [entryKinds]map[string]int32
	postings []postings
	// sets caches the bitsets of entries (by number) of more than dense
	// docs; rarer entries are built into scratch when used (a few bits).
	sets [][]uint64
	// exact caches the docs a term matches, for the terms an entry only
	// bounds (phrases, abs: words), as found by checking the bound.
	exact map[termKey][]uint64
	empty []uint64
	all   []uint64
	free  [][]uint64
}

// termKey identifies a term: its field and its words.
type termKey struct {
	field Field
	text  string
}

const dense = 16

func newBatchIndex(docs []*Doc) *batchIndex {
	ix := &batchIndex{docs: docs, words: (len(docs) + 63) / 64, exact: map[termKey][]uint64{}}
	for k := range ix.entries {
		ix.entries[k] = make(map[string]int32, 4*len(docs))
	}
	add := func(kind int, term string, di int32) {
		m := ix.entries[kind]
		e, ok := m[term]
		if !ok {
			e = int32(len(ix.postings))
			m[term] = e
			ix.postings = append(ix.postings, nil)
		}
		ix.postings[e] = append(ix.postings[e], di)
	}
	for i, d := range docs {
		di := int32(i)
		for _, w := range d.title.words {
			add(entryTitle, w, di)
			add(entryText, w, di)
		}
		for _, w := range d.abstract.words {
			if !d.title.has(w) {
				add(entryText, w, di)
			}
		}
		for _, w := range d.authors.words {
			add(entryAuthor, w, di)
		}
		for _, k := range d.cats {
			add(entryCat, k, di)
		}
	}
	ix.sets = make([][]uint64, len(ix.postings))
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
	return &batchIndex{docs: ix.docs, words: ix.words, entries: ix.entries, postings: ix.postings,
		sets: make([][]uint64, len(ix.postings)), exact: map[termKey][]uint64{}, empty: ix.empty, all: ix.all}
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

// set returns the docs that have the entry of kind and term.
func (ix *batchIndex) set(kind int, term string) bitset {
	e, ok := ix.entries[kind][term]
	if !ok {
		return bitset{b: ix.empty}
	}
	ps := ix.postings[e]
	if len(ps) > dense {
		b := ix.sets[e]
		if b == nil {
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
		return ix.set(entryTitle, n.stems[i]), true
	case Abstract:
		return ix.set(entryText, n.stems[i]), false
	case Author:
		return ix.set(entryAuthor, n.folds[i]), true
	}
	return ix.union(ix.set(entryText, n.stems[i]), ix.set(entryAuthor, n.folds[i])), true
}

// term returns the docs term n matches. A single word's entry is exact
// (but for abs:); otherwise the docs of the bound (all of the term's
// words in its field) are checked against n once, and the answer kept
// for the other searches with the same term.
func (ix *batchIndex) term(n *node) bitset {
	s, exact := ix.word(n, 0)
	if len(n.stems) == 1 && exact {
		return s
	}
	k := termKey{n.field, n.text}
	if b, ok := ix.exact[k]; ok {
		ix.release(s)
		return bitset{b: b}
	}
	for i := 1; i < len(n.stems); i++ {
		w, _ := ix.word(n, i)
		s = ix.intersect(s, w)
	}
	b := make([]uint64, ix.words)
	for w, word := range s.b {
		for word != 0 {
			di := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if n.match(ix.docs[di]) {
				b[w] |= 1 << (di % 64)
			}
		}
	}
	ix.release(s)
	ix.exact[k] = b
	return bitset{b: b}
}

// eval returns the docs n matches.
func (ix *batchIndex) eval(n *node) bitset {
	switch n.op {
	case opCat:
		return ix.set(entryCat, n.catKey)
	case opTerm:
		return ix.term(n)
	case opNot:
		k := ix.eval(n.kids[0])
		o := ix.scratch()
		for i, w := range k.b {
			o.b[i] = ix.all[i] &^ w
		}
		ix.release(k)
		return o
	}
	// opAnd, opOr
	s := ix.eval(n.kids[0])
	for _, k := range n.kids[1:] {
		ks := ix.eval(k)
		if n.op == opAnd {
			s = ix.intersect(s, ks)
		} else {
			s = ix.union(s, ks)
		}
	}
	return s
}
