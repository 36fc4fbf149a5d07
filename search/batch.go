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
	ix := newBatchIndex(sameVocab(docs))
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

// sameVocab returns docs with their ids in one vocab: the one most of
// them share (the others are rewritten into it, see vocab).
func sameVocab(docs []*Doc) []*Doc {
	v := docs[0].vocab
	mixed := false
	for _, d := range docs {
		mixed = mixed || d.vocab != v
	}
	if !mixed {
		return docs
	}
	count := map[*vocab]int{}
	for _, d := range docs {
		count[d.vocab]++
		if count[d.vocab] > count[v] {
			v = d.vocab
		}
	}
	out := make([]*Doc, len(docs))
	for i, d := range docs {
		out[i] = d.in(v)
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
	docs  []*Doc // all of vocab
	vocab *vocab
	words int // uint64 words per bitset
	// entries maps an entry, by kind, from its word's id to its number in
	// postings plus one (0: no doc has it); ids past the end are of words
	// added to the vocab after the index was built, which no doc has.
	entries  [entryKinds][]int32
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
	v := docs[0].vocab
	ix := &batchIndex{docs: docs, vocab: v, words: (len(docs) + 63) / 64, exact: map[termKey][]uint64{}}
	// Slices indexed by id, up to the docs' largest (4 bytes a word and
	// kind: at most some 8 MB for a full vocab, zeroed per batch, where a
	// map per kind cost a string hash per word of every doc).
	n := 0
	for _, d := range docs {
		for _, f := range [...]*field{&d.title, &d.abstract, &d.authors} {
			if len(f.ids) > 0 {
				n = max(n, int(f.ids[len(f.ids)-1])+1)
			}
		}
		if len(d.cats) > 0 {
			n = max(n, int(d.cats[len(d.cats)-1])+1)
		}
	}
	for k := range ix.entries {
		ix.entries[k] = make([]int32, n)
	}
	add := func(kind int, id uint32, di int32) {
		m := ix.entries[kind]
		e := m[id] - 1
		if e < 0 {
			e = int32(len(ix.postings))
			m[id] = e + 1
			ix.postings = append(ix.postings, nil)
		}
		ix.postings[e] = append(ix.postings[e], di)
	}
	for i, d := range docs {
		di := int32(i)
		for _, w := range d.title.ids {
			add(entryTitle, w, di)
			add(entryText, w, di)
		}
		for _, w := range d.abstract.ids {
			if !d.title.has(w) {
				add(entryText, w, di)
			}
		}
		for _, w := range d.authors.ids {
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
	return &batchIndex{docs: ix.docs, vocab: ix.vocab, words: ix.words, entries: ix.entries, postings: ix.postings,
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

// set returns the docs that have the entry of kind and word ids[i]
// (none when ids is nil: a word the vocab lacks).
func (ix *batchIndex) set(kind int, ids []uint32, i int) bitset {
	if ids == nil {
		return bitset{b: ix.empty}
	}
	id := ids[i]
	if int(id) >= len(ix.entries[kind]) || ix.entries[kind][id] == 0 {
		return bitset{b: ix.empty}
	}
	e := ix.entries[kind][id] - 1
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

// word returns the docs that have word i of term n (whose ids are
// stems and folds) in its field: exact for a title, author or any-field
// word; for abs: the title-or-abstract entry, a bound.
func (ix *batchIndex) word(n *node, stems, folds []uint32, i int) (bitset, bool) {
	switch n.field {
	case Title:
		return ix.set(entryTitle, stems, i), true
	case Abstract:
		return ix.set(entryText, stems, i), false
	case Author:
		return ix.set(entryAuthor, folds, i), true
	}
	return ix.union(ix.set(entryText, stems, i), ix.set(entryAuthor, folds, i)), true
}

// term returns the docs term n matches. A single word's entry is exact
// (but for abs:); otherwise the docs of the bound (all of the term's
// words in its field) are checked against n once, and the answer kept
// for the other searches with the same term.
func (ix *batchIndex) term(n *node) bitset {
	stems, folds := n.cachedIDs(ix.vocab)
	s, exact := ix.word(n, stems, folds, 0)
	if len(n.stems) == 1 && exact {
		return s
	}
	k := termKey{n.field, n.text}
	if b, ok := ix.exact[k]; ok {
		ix.release(s)
		return bitset{b: b}
	}
	for i := 1; i < len(n.stems); i++ {
		w, _ := ix.word(n, stems, folds, i)
		s = ix.intersect(s, w)
	}
	b := make([]uint64, ix.words)
	for w, word := range s.b {
		for word != 0 {
			di := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if n.matchIDs(ix.docs[di], stems, folds) {
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
		key, _ := n.cachedIDs(ix.vocab)
		return ix.set(entryCat, key, 0)
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
