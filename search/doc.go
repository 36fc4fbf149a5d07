package search

import "slices"

// Doc is a paper's text as searches see it: title and abstract words
// (stemmed), author name words (folded, not stemmed), and the paper's
// category keys. Build it with NewDoc; it is read-only afterwards and safe
// to share between goroutines.
type Doc struct {
	title, abstract, authors field
	cats                     []string
	// entries are the doc's distinct index entries (see entry).
	entries []entry
}

// field is the words of one field: each word's positions, ascending, in
// one array (a word's span of it), so a paper costs a few allocations.
type field struct {
	spans map[string]span
	pos   []int32
}

type span struct{ off, n int32 }

func newField(toks []token) field {
	f := field{spans: make(map[string]span, len(toks))}
	for _, t := range toks {
		s := f.spans[t.stem]
		s.n++
		f.spans[t.stem] = s
	}
	var off int32
	for w, s := range f.spans {
		f.spans[w] = span{off: off}
		off += s.n
	}
	f.pos = make([]int32, len(toks))
	for _, t := range toks {
		s := f.spans[t.stem]
		f.pos[s.off+s.n] = t.pos
		s.n++
		f.spans[t.stem] = s
	}
	return f
}

// positions returns where w occurs in f, ascending.
func (f *field) positions(w string) ([]int32, bool) {
	s, ok := f.spans[w]
	if !ok {
		return nil, false
	}
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
	toks, _ := tokenize(title, 0, true, true, nil)
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
	d.entries = make([]entry, 0, 2*len(d.title.spans)+len(d.abstract.spans)+len(d.authors.spans)+len(d.cats))
	for w := range d.title.spans {
		d.entries = append(d.entries, entry{entryTitle, w}, entry{entryText, w})
	}
	for w := range d.abstract.spans {
		if _, ok := d.title.spans[w]; !ok {
			d.entries = append(d.entries, entry{entryText, w})
		}
	}
	for w := range d.authors.spans {
		d.entries = append(d.entries, entry{entryAuthor, w})
	}
	for _, k := range d.cats {
		d.entries = append(d.entries, entry{entryCat, k})
	}
	return d
}

// An entry of the batch index (MatchBatch): a stemmed word of the title or
// abstract, of the title alone, a folded author word, a category key.
type entry struct {
	kind byte
	term string
}

const (
	entryText   = 's'
	entryTitle  = 't'
	entryAuthor = 'a'
	entryCat    = 'c'
)

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
