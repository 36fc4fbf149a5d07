package search

import (
	"math/bits"
	"runtime"
	"sync"
)

// MatchBatch evaluates every search against every doc and returns, per doc
// (in the order of docs), the indices into queries of the searches that
// match it, ascending. It gives exactly the answers of Query.Match. It is
// NewSet(queries).Match(docs): a caller that evaluates the same searches
// batch after batch keeps their Set instead.
func MatchBatch(queries []*Query, docs []*Doc) [][]int32 {
	return NewSet(queries).Match(docs)
}

// Match evaluates every search of s against every doc and returns, per
// doc (in the order of docs), the numbers of the searches that match it,
// ascending. It gives exactly the answers of Query.Match of the searches
// s was built from.
//
// It does not try every pair. The batch's docs are indexed by their words
// and categories (an inverted index: entry → the docs that have it, made
// a bitset of the batch when used), and each search is evaluated once on
// those sets: a word is its entry's set, AND, OR and NOT are word-wise
// operations on bitsets (len(docs)/64 words each). Where an entry only
// bounds a term's docs from above — a phrase (its words, not yet their
// order), an abs: word (the index does not tell abstract from title) —
// the docs in the bound are checked against that term alone, once per
// batch for every search that has the same term (searches share terms),
// so every set is exact and no search is checked doc by doc. The cost per
// search is a few bitset operations of len(docs)/64 words; building the
// index is one pass over the docs' words. It grows linearly with the
// number of searches and with the number of docs, not with their product.
// Large sets of searches are shared among the cores.
func (s *Set) Match(docs []*Doc) [][]int32 {
	n := s.Len()
	if n == 0 || len(docs) == 0 {
		return make([][]int32, len(docs))
	}
	ix := newBatchIndex(sameVocab(docs))
	ids := s.idsIn(ix.vocab)
	// The searches are independent: a share of them per core, each with
	// its own scratch and caches, the postings shared read-only.
	workers := min(runtime.GOMAXPROCS(0), 1+n/minPerWorker)
	if workers <= 1 {
		return ix.match(s, ids, 0, n)
	}
	parts := make([][][]int32, workers)
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, n)
		wg.Go(func() { parts[w] = ix.fork().match(s, ids, lo, hi) })
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

// match evaluates searches lo … hi−1 of s (whose entries have the ids
// ids) on the batch's docs.
func (ix *batchIndex) match(s *Set, ids *setIDs, lo, hi int) [][]int32 {
	out := make([][]int32, len(ix.docs))
	var stack []bitset
	for i := lo; i < hi; i++ {
		stack = stack[:0]
		for _, ins := range s.program(i) {
			t := ins >> insShift
			switch op(ins & insMask) {
			case opTerm:
				stack = append(stack, ix.term(s, ids, t))
			case opCat:
				key, _, _ := ids.term(s, t)
				stack = append(stack, ix.set(entryCat, key, 0))
			case opNot:
				k := stack[len(stack)-1]
				o := ix.scratch()
				for j, w := range k.b {
					o.b[j] = ix.all[j] &^ w
				}
				ix.release(k)
				stack[len(stack)-1] = o
			case opAnd:
				top := len(stack) - 1
				stack[top-1] = ix.intersect(stack[top-1], stack[top])
				stack = stack[:top]
			case opOr:
				top := len(stack) - 1
				stack[top-1] = ix.union(stack[top-1], stack[top])
				stack = stack[:top]
			}
		}
		set := stack[0]
		for w, word := range set.b {
			for word != 0 {
				di := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				out[di] = append(out[di], int32(i))
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
	// exact caches the docs a term (by number in the set) matches, for
	// the terms an entry only bounds (phrases, abs: words), as found by
	// checking the bound.
	exact map[int32][]uint64
	empty []uint64
	all   []uint64
	free  [][]uint64
}

const dense = 16

func newBatchIndex(docs []*Doc) *batchIndex {
	v := docs[0].vocab
	ix := &batchIndex{docs: docs, vocab: v, words: (len(docs) + 63) / 64, exact: map[int32][]uint64{}}
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
		sets: make([][]uint64, len(ix.postings)), exact: map[int32][]uint64{}, empty: ix.empty, all: ix.all}
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

// word returns the docs that have word i of a term of field (whose ids
// are stems and folds) in its field: exact for a title, author or
// any-field word; for abs: the title-or-abstract entry, a bound.
func (ix *batchIndex) word(field Field, stems, folds []uint32, i int) (bitset, bool) {
	switch field {
	case Title:
		return ix.set(entryTitle, stems, i), true
	case Abstract:
		return ix.set(entryText, stems, i), false
	case Author:
		return ix.set(entryAuthor, folds, i), true
	}
	return ix.union(ix.set(entryText, stems, i), ix.set(entryAuthor, folds, i)), true
}

// term returns the docs term t of s matches. A single word's entry is
// exact (but for abs:); otherwise the docs of the bound (all of the
// term's words in its field) are checked against the term once, and the
// answer kept for the other searches with the same term.
func (ix *batchIndex) term(s *Set, ids *setIDs, t int32) bitset {
	field := Field(s.termFields[t])
	stems, folds, words := ids.term(s, t)
	b, exact := ix.word(field, stems, folds, 0)
	if words == 1 && exact {
		return b
	}
	if e, ok := ix.exact[t]; ok {
		ix.release(b)
		return bitset{b: e}
	}
	for i := 1; i < words; i++ {
		w, _ := ix.word(field, stems, folds, i)
		b = ix.intersect(b, w)
	}
	e := make([]uint64, ix.words)
	for w, word := range b.b {
		for word != 0 {
			di := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if matchIDs(field, ix.docs[di], stems, folds) {
				e[w] |= 1 << (di % 64)
			}
		}
	}
	ix.release(b)
	ix.exact[t] = e
	return bitset{b: e}
}
