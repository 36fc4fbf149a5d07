package search

import (
	"slices"
)

// Doc is a paper's text as searches see it: title and abstract words
// (stemmed), author name words (folded, not stemmed), and the paper's
// category keys, all as ids of one vocab (see vocab). Build it with
// NewDoc; it is read-only afterwards and safe to share between goroutines.
type Doc struct {
	vocab                    *vocab
	title, abstract, authors field
	cats                     []uint32 // sorted, distinct
	// sig has bit id%512 set for the id of every word of the three
	// fields: a word whose bit is clear is in none of them, found without
	// a search of the fields (mayHave). titleSig is the same for the
	// title's words alone, in 128 bits: a title has ten words or so, and
	// most title searches (ti:, and the title part of a search of every
	// field) end on it without a search of the title.
	sig      [8]uint64
	titleSig [2]uint64
}

// sign sets d.sig and d.titleSig from its fields.
func (d *Doc) sign() {
	for _, f := range []*field{&d.title, &d.abstract, &d.authors} {
		setBits(d.sig[:], f.ids)
	}
	setBits(d.titleSig[:], d.title.ids)
}

// mayHave reports whether every word of ids may be in d (false: one is
// surely not; true: each is, or shares its bit with one that is).
func (d *Doc) mayHave(ids []uint32) bool { return hasBits(d.sig[:], ids) }

// titleMayHave is mayHave for d's title alone.
func (d *Doc) titleMayHave(ids []uint32) bool { return hasBits(d.titleSig[:], ids) }

// setBits sets in sig, whose length is a power of two, the bit of each id
// (id modulo 64×len(sig)).
func setBits(sig []uint64, ids []uint32) {
	mask := uint32(len(sig) - 1)
	for _, id := range ids {
		sig[(id>>6)&mask] |= 1 << (id & 63)
	}
}

// hasBits reports whether sig has the bit of every id (setBits).
func hasBits(sig []uint64, ids []uint32) bool {
	mask := uint32(len(sig) - 1)
	for _, id := range ids {
		if sig[(id>>6)&mask]&(1<<(id&63)) == 0 {
			return false
		}
	}
	return true
}

// field is the words of one field: its distinct words' ids, ascending,
// and each word's positions, ascending, as a span of one array, so a
// paper costs a few allocations and a binary search finds a word.
type field struct {
	ids   []uint32
	spans []span // spans[i]: the positions of ids[i] in pos
	pos   []int32
}

type span struct{ off, n int32 }

// newField returns the field of the words ids[i] at positions pos[i], in
// any order (keys is scratch, returned grown for reuse).
func newField(ids []uint32, pos []int32, keys []uint64) (field, []uint64) {
	// Sorting id<<32|pos orders by word, each word's positions ascending.
	keys = keys[:0]
	for i, id := range ids {
		keys = append(keys, uint64(id)<<32|uint64(uint32(pos[i])))
	}
	slices.Sort(keys)
	f := field{pos: make([]int32, len(keys))}
	n := 0
	for i, k := range keys {
		if i == 0 || k>>32 != keys[i-1]>>32 {
			n++
		}
	}
	f.ids = make([]uint32, 0, n)
	f.spans = make([]span, 0, n)
	for i, k := range keys {
		id := uint32(k >> 32)
		if i == 0 || id != f.ids[len(f.ids)-1] {
			f.ids = append(f.ids, id)
			f.spans = append(f.spans, span{off: int32(i)})
		}
		f.spans[len(f.spans)-1].n++
		f.pos[i] = int32(uint32(k))
	}
	return f, keys
}

// has reports whether id occurs in f.
func (f *field) has(id uint32) bool {
	_, ok := slices.BinarySearch(f.ids, id)
	return ok
}

// positions returns where id occurs in f, ascending.
func (f *field) positions(id uint32) ([]int32, bool) {
	i, ok := slices.BinarySearch(f.ids, id)
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
	v := currentVocab()
	d := &Doc{vocab: v}
	for _, k := range categoryKeys {
		d.cats = append(d.cats, v.intern(k))
	}
	slices.Sort(d.cats)
	d.cats = slices.Compact(d.cats)
	// One token buffer for the three fields, about the abstract's size;
	// words are folded by tokenize and stemmed (and numbered) by v.
	toks, _ := tokenize(title, 0, false, true, make([]token, 0, 16+len(abstract)/5))
	ids := make([]uint32, 0, cap(toks))
	pos := make([]int32, 0, cap(toks))
	var keys []uint64
	numbered := func(toks []token, stemmed bool) {
		ids, pos = v.stemAll(toks, stemmed, ids[:0]), pos[:0]
		for _, t := range toks {
			pos = append(pos, t.pos)
		}
	}
	numbered(toks, true)
	d.title, keys = newField(ids, pos, keys)
	toks, _ = tokenize(abstract, 0, false, true, toks[:0])
	numbered(toks, true)
	d.abstract, keys = newField(ids, pos, keys)
	toks = toks[:0]
	var p int32
	for _, a := range authors {
		toks, p = tokenize(a, p, false, true, toks)
		p += authorGap
	}
	numbered(toks, false)
	d.authors, _ = newField(ids, pos, keys)
	d.sign()
	return d
}

// in returns d with its ids in v: d itself when they already are, else
// a copy whose words are numbered by v (added to it as needed).
func (d *Doc) in(v *vocab) *Doc {
	if d.vocab == v {
		return d
	}
	o := &Doc{vocab: v}
	move := func(f *field) field {
		ids := make([]uint32, 0, len(f.pos))
		pos := make([]int32, 0, len(f.pos))
		for i, id := range f.ids {
			nid := v.intern(d.vocab.word(id))
			s := f.spans[i]
			for _, p := range f.pos[s.off : s.off+s.n] {
				ids = append(ids, nid)
				pos = append(pos, p)
			}
		}
		nf, _ := newField(ids, pos, nil)
		return nf
	}
	o.title, o.abstract, o.authors = move(&d.title), move(&d.abstract), move(&d.authors)
	for _, c := range d.cats {
		o.cats = append(o.cats, v.intern(d.vocab.word(c)))
	}
	slices.Sort(o.cats)
	o.sign()
	return o
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
		id, ok := d.vocab.lookup(n.catKey)
		if !ok {
			return false
		}
		_, ok = slices.BinarySearch(d.cats, id)
		return ok
	}
	if r := n.resolved.Load(); r != nil && r.v == d.vocab && (r.size < 0 || r.size == d.vocab.n.Load()) {
		return matchIDs(n.field, d, r.stems, r.folds)
	}
	// A vocab never renumbers nor drops a word: ids it had are its ids
	// for good. Words it lacks may come with the next document, so a
	// partial lookup holds only while the vocab has no word it did not
	// have before the lookup (its size then, read first).
	size := d.vocab.n.Load()
	stems, folds := n.ids(d.vocab, nil, nil)
	if (n.field == Author || stems != nil) && (n.field != Author && n.field != All || folds != nil) {
		size = -1 // complete
	}
	n.resolved.Store(&termIDs{v: d.vocab, size: size, stems: stems, folds: folds})
	return matchIDs(n.field, d, stems, folds)
}

// termIDs is a term's word ids in vocab v (node.ids), kept on the node
// for the next document of v: a query matched against many documents (a
// user's search mutes, against every candidate of their digests) looks
// its words up once per vocab, not once per document under the vocab's
// lock.
type termIDs struct {
	v *vocab
	// size is -1 when the term's words were all found, else the vocab's
	// number of words before the lookup that missed one: the ids hold
	// while it has as many.
	size         int64
	stems, folds []uint32
}

// ids returns the ids in v of the term's stems and folded words, appended
// to stems and folds; nil for either when v lacks one of its words (no
// doc of v has them all). The folds are only looked up for the fields
// that use them.
func (n *node) ids(v *vocab, stems, folds []uint32) ([]uint32, []uint32) {
	if n.field != Author {
		stems = v.lookupAll(n.stems, stems)
	}
	if n.field == Author || n.field == All {
		folds = v.lookupAll(n.folds, folds)
	}
	return stems, folds
}

// matchIDs is match for a term of field whose words have the ids stems
// and folds (as returned by node.ids, in d's vocab).
func matchIDs(field Field, d *Doc, stems, folds []uint32) bool {
	// Most documents lack a term's words: the signature says so without
	// searching the fields.
	switch field {
	case Title:
		return d.titleMayHave(stems) && hasSeq(&d.title, stems)
	case Abstract:
		return d.mayHave(stems) && hasSeq(&d.abstract, stems)
	case Author:
		return d.mayHave(folds) && hasSeq(&d.authors, folds)
	}
	return d.mayHave(stems) && (d.titleMayHave(stems) && hasSeq(&d.title, stems) || hasSeq(&d.abstract, stems)) ||
		d.mayHave(folds) && hasSeq(&d.authors, folds)
}

// hasSeq reports whether the words ids occur in f at consecutive
// positions (one word: anywhere); nil ids occur nowhere.
func hasSeq(f *field, ids []uint32) bool {
	if len(ids) == 0 {
		return false
	}
	first, ok := f.positions(ids[0])
	if !ok {
		return false
	}
	if len(ids) == 1 {
		return true
	}
	var restBuf [8][]int32
	rest := restBuf[:0]
	for _, id := range ids[1:] {
		ps, ok := f.positions(id)
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
