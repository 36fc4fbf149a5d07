package search

import "slices"

// Doc is a paper's text as searches see it: title and abstract words
// (stemmed), author name words (folded, not stemmed), and the paper's
// category keys. Build it with NewDoc; it is read-only afterwards and safe
// to share between goroutines.
type Doc struct {
	title, abstract, authors field
	cats                     []string
}

// field is the words of one field: its distinct words (in the order they
// first occur), each word's positions, ascending, as a span of one array,
// and an index from word to its number, so a paper costs a few
// allocations and one map operation per word.
type field struct {
	index map[string]int32
	words []string
	spans []span // spans[i]: the positions of words[i] in pos
	pos   []int32
}

type span struct{ off, n int32 }

// newField returns the field of toks, whose positions do not decrease.
func newField(toks []token) field {
	f := field{index: make(map[string]int32, len(toks))}
	nums := make([]int32, len(toks)) // each token's word number
	for i, t := range toks {
		w, ok := f.index[t.stem]
		if !ok {
			w = int32(len(f.words))
			f.index[t.stem] = w
			f.words = append(f.words, t.stem)
			f.spans = append(f.spans, span{})
		}
		f.spans[w].n++
		nums[i] = w
	}
	// A counting sort: each word's positions in token order, so ascending.
	var off int32
	for i := range f.spans {
		off, f.spans[i] = off+f.spans[i].n, span{off: off}
	}
	f.pos = make([]int32, len(toks))
	for i, t := range toks {
		s := &f.spans[nums[i]]
		f.pos[s.off+s.n] = t.pos
		s.n++
	}
	return f
}

// has reports whether w occurs in f.
func (f *field) has(w string) bool {
	_, ok := f.index[w]
	return ok
}

// positions returns where w occurs in f, ascending.
func (f *field) positions(w string) ([]int32, bool) {
	i, ok := f.index[w]
	if !ok {
		return nil, false
	}
	s := f.spans[i]
	return f.pos[s.off : s.off+s.n], true
}

// authorGap separates the words of two authors, so that a phrase never
// spans two names.
const authorGap = 1 << 10

// NewDoc returns the Doc of a paper with the given title, abstract, author
// names and category keys ("category:cs.LG", "archive:cs": the keys a
// cat: filter resolves to).
func NewDoc(title, abstract string, authors []string, categoryKeys []string) *Doc {
	d := &Doc{}
	for _, k := range categoryKeys {
		if !slices.Contains(d.cats, k) {
			d.cats = append(d.cats, k)
		}
	}
	// One token buffer for the three fields, about the abstract's size.
	toks, _ := tokenize(title, 0, true, true, make([]token, 0, 16+len(abstract)/5))
	d.title = newField(toks)
	toks, _ = tokenize(abstract, 0, true, true, toks[:0])
	d.abstract = newField(toks)
	toks = toks[:0]
	var pos int32
	for _, a := range authors {
		toks, pos = tokenize(a, pos, false, true, toks)
		pos += authorGap
	}
	d.authors = newField(toks)
	return d
}

// Match reports whether the search matches the paper: evaluated directly
// on its text, term by term. MatchBatch gives the same answers for many
// searches and papers at once.
func (q *Query) Match(d *Doc) bool { return q.root.match(d) }

func (n *node) match(d *Doc) bool {
	switch n.op {
	case opAnd:
		for _, k := range n.kids {
			if !k.match(d) {
				return false
			}
		}
		return true
	case opOr:
		for _, k := range n.kids {
			if k.match(d) {
				return true
			}
		}
		return false
	case opNot:
		return !n.kids[0].match(d)
	case opCat:
		return slices.Contains(d.cats, n.catKey)
	}
	switch n.field {
	case Title:
		return hasSeq(&d.title, n.stems)
	case Abstract:
		return hasSeq(&d.abstract, n.stems)
	case Author:
		return hasSeq(&d.authors, n.folds)
	}
	return hasSeq(&d.title, n.stems) || hasSeq(&d.abstract, n.stems) || hasSeq(&d.authors, n.folds)
}

// hasSeq reports whether words occur in f at consecutive positions (one
// word: anywhere).
func hasSeq(f *field, words []string) bool {
	first, ok := f.positions(words[0])
	if !ok {
		return false
	}
	if len(words) == 1 {
		return true
	}
	var restBuf [8][]int32
	rest := restBuf[:0]
	for _, w := range words[1:] {
		ps, ok := f.positions(w)
		if !ok {
			return false
		}
		rest = append(rest, ps)
	}
next:
	for _, p := range first {
		for i, ps := range rest {
			if !contains(ps, p+int32(i)+1) {
				continue next
			}
		}
		return true
	}
	return false
}

func contains(ps []int32, p int32) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
		if x > p {
			return false
		}
	}
	return false
}
