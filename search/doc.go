package search

// Doc is a paper's text as searches see it: title and abstract words
// (stemmed), author name words (folded, not stemmed), and the paper's
// category keys. Build it with NewDoc; it is read-only afterwards and safe
// to share between goroutines.
type Doc struct {
	title, abstract, authors map[string][]int32
	cats                     map[string]bool
	// triggers are the distinct index entries of the doc (see trigger).
	triggers []string
}

// authorGap separates the words of two authors, so that a phrase never
// spans two names.
const authorGap = 1 << 10

// NewDoc returns the Doc of a paper with the given title, abstract, author
// names and category keys ("category:cs.LG", "archive:cs": the keys a
// cat: filter resolves to).
func NewDoc(title, abstract string, authors []string, categoryKeys []string) *Doc {
	d := &Doc{cats: make(map[string]bool, len(categoryKeys))}
	seen := map[string]bool{}
	addTrigger := func(t string) {
		if !seen[t] {
			seen[t] = true
			d.triggers = append(d.triggers, t)
		}
	}
	var buf []token
	index := func(toks []token, stemmed bool) map[string][]int32 {
		m := make(map[string][]int32, len(toks))
		for _, t := range toks {
			m[t.stem] = append(m[t.stem], t.pos)
			if stemmed {
				addTrigger(stemTrigger(t.stem))
			} else {
				addTrigger(authorTrigger(t.stem))
			}
		}
		return m
	}
	buf, _ = tokenize(title, 0, true, true, buf[:0])
	d.title = index(buf, true)
	buf, _ = tokenize(abstract, 0, true, true, buf[:0])
	d.abstract = index(buf, true)
	buf = buf[:0]
	var pos int32
	for _, a := range authors {
		buf, pos = tokenize(a, pos, false, true, buf)
		pos += authorGap
	}
	d.authors = index(buf, false)
	for _, k := range categoryKeys {
		d.cats[k] = true
		addTrigger(catTrigger(k))
	}
	return d
}

// Index entries: a stemmed title/abstract word, a folded author word, a
// category key.
func stemTrigger(s string) string   { return "s:" + s }
func authorTrigger(s string) string { return "a:" + s }
func catTrigger(k string) string    { return "c:" + k }

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
		return d.cats[n.catKey]
	}
	switch n.field {
	case Title:
		return hasSeq(d.title, n.stems)
	case Abstract:
		return hasSeq(d.abstract, n.stems)
	case Author:
		return hasSeq(d.authors, n.folds)
	}
	return hasSeq(d.title, n.stems) || hasSeq(d.abstract, n.stems) || hasSeq(d.authors, n.folds)
}

// hasSeq reports whether words occur in m at consecutive positions (one
// word: anywhere).
func hasSeq(m map[string][]int32, words []string) bool {
	first, ok := m[words[0]]
	if !ok {
		return false
	}
	if len(words) == 1 {
		return true
	}
	rest := make([][]int32, len(words)-1)
	for i, w := range words[1:] {
		if rest[i], ok = m[w]; !ok {
			return false
		}
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
