package search

import "sync"

// A Set is a list of compiled searches in a form that holds no pointer per
// search, term or word, for the sets a process keeps for long (every
// followed query, between ingest batches): a process holding a large
// pointer-rich heap makes every garbage collection cycle mark all of it
// while requests allocate, and the requests' tail latency follows.
//
// Each search is a postfix program of int32 instructions (a term, a
// category filter, NOT of the top of the stack, AND or OR of the top two)
// over a table of the set's distinct terms (field and words: stems, then
// folded forms; a category filter's key); words and normal forms are
// substrings of two strings (one arena each) located by offsets. A term
// that several searches share is one entry, evaluated once per batch.
// Sets are read-only once built and safe for concurrent use; build one
// with NewSet or a SetBuilder.
type Set struct {
	norms    string   // the normal forms, end to end
	normEnds []uint32 // normEnds[i]: where search i's normal form ends in norms
	prog     []int32  // the searches' programs, end to end
	progEnds []uint32 // progEnds[i]: where search i's program ends in prog
	// Term t is termFields[t] (a Field, or catField) with the words
	// (entries) termEnds[t−1] … termEnds[t]−1: a category filter's key
	// alone, a term's k stems then its k folded words.
	termFields []uint8
	termEnds   []uint32
	words      string   // the entries' words, end to end
	wordEnds   []uint32 // wordEnds[e]: where entry e ends in words

	mu  sync.Mutex
	ids *setIDs // the entries' ids in the vocab of the last batch
}

// catField marks a term that is a category filter.
const catField = 0xff

// Instructions: op in the low 3 bits, a term's number above them.
const (
	insShift = 3
	insMask  = 1<<insShift - 1
)

// Len returns the number of searches in s.
func (s *Set) Len() int { return len(s.normEnds) }

// String returns the name of search i: the one given to SetBuilder.AddAs,
// else its normal form (Query.String of the search it was built from); a
// substring of s's arena, it keeps all of s's names alive while referenced.
func (s *Set) String(i int) string { return s.norms[start(s.normEnds, i):s.normEnds[i]] }

// start is where item i of an array of ends starts.
func start(ends []uint32, i int) uint32 {
	if i == 0 {
		return 0
	}
	return ends[i-1]
}

// program returns search i's instructions.
func (s *Set) program(i int) []int32 { return s.prog[start(s.progEnds, i):s.progEnds[i]] }

// entries returns the first and last-plus-one entries of term t.
func (s *Set) entries(t int32) (uint32, uint32) { return start(s.termEnds, int(t)), s.termEnds[t] }

// word returns entry e's word.
func (s *Set) word(e uint32) string { return s.words[start(s.wordEnds, int(e)):s.wordEnds[e]] }

// NewSet returns the set of qs, in their order: search i of the set is
// qs[i], and MatchSet gives exactly the answers of qs[i].Match.
func NewSet(qs []*Query) *Set {
	var b SetBuilder
	for _, q := range qs {
		b.Add(q)
	}
	return b.Set()
}

// A SetBuilder makes a Set, search by search. Its zero value is ready to
// use; it is not safe for concurrent use.
type SetBuilder struct {
	s     Set
	norms []byte
	words []byte
	terms map[string]int32 // a term's field and words → its number
	key   []byte
	buf   [2][]string
}

// Add appends the search q, named by its normal form.
func (b *SetBuilder) Add(q *Query) { b.AddAs(q, q.norm) }

// AddAs appends the search q under name (Set.String's answer for it). A
// caller that parsed q from a stored normal form names it by that text: a
// stored form parsed again can read otherwise (a category alias resolved
// by a newer taxonomy), and the match keys must be the followed ones.
func (b *SetBuilder) AddAs(q *Query, name string) {
	b.addNode(q.root)
	b.end(name)
}

func (b *SetBuilder) addNode(n *node) {
	switch n.op {
	case opCat:
		b.ins(opCat, b.term(catField, []string{n.catKey}, nil))
	case opTerm:
		b.ins(opTerm, b.term(uint8(n.field), n.stems, n.folds))
	case opNot:
		b.addNode(n.kids[0])
		b.ins(opNot, 0)
	default: // opAnd, opOr: the kids, combined left to right as they come
		b.addNode(n.kids[0])
		for _, k := range n.kids[1:] {
			b.addNode(k)
			b.ins(n.op, 0)
		}
	}
}

// AddFrom appends search i of s (the same search: the same name,
// s.String(i), and the same answers) without parsing it again.
func (b *SetBuilder) AddFrom(s *Set, i int) {
	for _, ins := range s.program(i) {
		o := op(ins & insMask)
		if o != opTerm && o != opCat {
			b.s.prog = append(b.s.prog, ins)
			continue
		}
		t := ins >> insShift
		lo, hi := s.entries(t)
		ws := b.buf[0][:0]
		for e := lo; e < hi; e++ {
			ws = append(ws, s.word(e))
		}
		b.buf[0] = ws
		f := s.termFields[t]
		if f == catField {
			b.ins(o, b.term(f, ws, nil))
		} else {
			k := len(ws) / 2
			b.ins(o, b.term(f, ws[:k], ws[k:]))
		}
	}
	b.end(s.String(i))
}

func (b *SetBuilder) ins(o op, t int32) { b.s.prog = append(b.s.prog, t<<insShift|int32(o)) }

// end closes the search being added, whose name is norm.
func (b *SetBuilder) end(norm string) {
	b.s.progEnds = append(b.s.progEnds, uint32(len(b.s.prog)))
	b.norms = append(b.norms, norm...)
	b.s.normEnds = append(b.s.normEnds, uint32(len(b.norms)))
}

// term returns the number of the term of field with the words stems and
// folds, adding it when new.
func (b *SetBuilder) term(field uint8, stems, folds []string) int32 {
	k := append(b.key[:0], field)
	for _, ws := range [2][]string{stems, folds} {
		for _, w := range ws {
			k = append(k, 0)
			k = append(k, w...)
		}
	}
	b.key = k
	if t, ok := b.terms[string(k)]; ok {
		return t
	}
	if b.terms == nil {
		b.terms = map[string]int32{}
	}
	t := int32(len(b.s.termFields))
	b.terms[string(k)] = t
	b.s.termFields = append(b.s.termFields, field)
	for _, ws := range [2][]string{stems, folds} {
		for _, w := range ws {
			b.words = append(b.words, w...)
			b.s.wordEnds = append(b.s.wordEnds, uint32(len(b.words)))
		}
	}
	b.s.termEnds = append(b.s.termEnds, uint32(len(b.s.wordEnds)))
	return t
}

// Set returns the set of the searches added, in their order, and resets
// b. The set's arrays are trimmed to their size.
func (b *SetBuilder) Set() *Set {
	s := &Set{
		norms: string(b.norms), normEnds: trim(b.s.normEnds), prog: trim(b.s.prog), progEnds: trim(b.s.progEnds),
		termFields: trim(b.s.termFields), termEnds: trim(b.s.termEnds), words: string(b.words), wordEnds: trim(b.s.wordEnds),
	}
	*b = SetBuilder{}
	return s
}

func trim[T any](s []T) []T { return append([]T(nil), s...) }

// setIDs are the ids, in one vocab, of a set's entries (ids[e], for the
// words the vocab has), and which terms' words it lacks some of:
// missing[t] bit 0 for the stems, bit 1 for the folded words (of the
// words the term's field uses; a filter's key is its stems). A term with
// a missing word matches no doc of that vocab (no doc has that word).
// incomplete lists those terms, looked up again on the next batch (a
// later doc may have added the word). Read-only once made.
type setIDs struct {
	vocab      *vocab
	ids        []uint32
	missing    []uint8
	incomplete []int32
}

// idsIn returns the ids of s's entries in v: those of the last batch
// when it was of v and they were all found, else looked up (only the
// terms still missing a word, when the last batch was of v too).
func (s *Set) idsIn(v *vocab) *setIDs {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.ids
	if old != nil && old.vocab == v && len(old.incomplete) == 0 {
		return old
	}
	r := &setIDs{vocab: v}
	var todo []int32
	if old != nil && old.vocab == v {
		r.ids, r.missing = append([]uint32(nil), old.ids...), append([]uint8(nil), old.missing...)
		todo = old.incomplete
	} else {
		r.ids, r.missing = make([]uint32, len(s.wordEnds)), make([]uint8, len(s.termFields))
	}
	v.mu.RLock()
	lookup := func(t int32) {
		lo, hi := s.entries(t)
		f := s.termFields[t]
		k := (hi - lo) / 2
		var m uint8
		for e := lo; e < hi; e++ {
			part := uint8(1) // a stem, or a filter's key
			if f != catField && e >= lo+k {
				part = 2
			}
			if f != catField && (part == 1 && Field(f) == Author || part == 2 && Field(f) != Author && Field(f) != All) {
				continue // a word its field does not use
			}
			id, ok := v.words.lookup(s.word(e))
			if !ok {
				m |= part
			}
			r.ids[e] = id
		}
		r.missing[t] = m
		if m != 0 {
			r.incomplete = append(r.incomplete, t)
		}
	}
	if todo != nil {
		for _, t := range todo {
			lookup(t)
		}
	} else {
		for t := range s.termFields {
			lookup(int32(t))
		}
	}
	v.mu.RUnlock()
	s.ids = r
	return r
}

// term returns the ids of term t's stems and folded words (nil where the
// vocab lacks one of them), and its number of words.
func (r *setIDs) term(s *Set, t int32) (stems, folds []uint32, words int) {
	lo, hi := s.entries(t)
	if s.termFields[t] == catField {
		if r.missing[t] == 0 {
			stems = r.ids[lo:hi]
		}
		return stems, nil, 1
	}
	k := (hi - lo) / 2
	if r.missing[t]&1 == 0 {
		stems = r.ids[lo : lo+k]
	}
	if r.missing[t]&2 == 0 {
		folds = r.ids[lo+k : hi]
	}
	return stems, folds, int(k)
}
