package relevance

import (
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"followfeed/search"
)

// Paper is what ranking reads of a paper. The caller fills it from its own
// paper type; nothing in it is trusted (see the limits below).
type Paper struct {
	// ID names the paper in reasons ("like 2.5 papers you marked" lists
	// them) and in Profile.Papers: the caller's choice, e.g. the arXiv id.
	ID              string
	Title, Abstract string
	// Authors are names as written; they are compared by NameKey.
	Authors []string
	// Categories are arXiv categories ("astro-ph.GA"), the primary first:
	// a marked paper's first is its topic (Params.LessTopic).
	Categories []string
	// Institutions are normalised institution ids ("ror:03dbr7087").
	Institutions []string
	// Cites are the ids of papers it cites, named as Profile.Papers names
	// the followed papers, when the caller knows them.
	Cites []string
}

// The limits on what a Vector reads of a Paper: text beyond them is
// ignored (a hostile or broken record costs at most this much).
const (
	maxTitleBytes    = 2 << 10
	maxAbstractBytes = 32 << 10
	maxListItems     = 500 // authors, institutions, cites
	maxCategories    = 20
)

// Feature namespaces: a feature is the hash of its namespace and its text.
const (
	nsWord        byte = 'w'
	nsAuthor      byte = 'a'
	nsCategory    byte = 'c'
	nsInstitution byte = 'i'
	nsCite        byte = 'r'
)

// hash is a feature's id: 64-bit FNV-1a of its namespace and text, folded
// to 32 bits; never 0 (Score's table uses 0 for an empty slot). It is part
// of the model format (Version): a model keeps hashes, not texts.
func hash(ns byte, s string) uint32 {
	h := uint64(14695981039346656037)
	h ^= uint64(ns)
	h *= 1099511628211
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	x := uint32(h ^ h>>32)
	if x == 0 {
		x = 1
	}
	return x
}

// Vector is a paper's features: sparse, sorted by feature, with their
// values (the words' part of unit length, TF-IDF weighted). Build it once
// per paper with Corpus.Vector and share it: it is read-only and safe for
// concurrent use. It keeps the Paper (its strings, not a copy of them) for
// Explain.
type Vector struct {
	feats []uint32
	vals  []float32
	ns    []byte
	// nameable, parallel to feats, says which features are words a
	// words reason may name (not functionWords).
	nameable []bool
	paper    Paper
	// authorFeats are, parallel to paper.Authors, each author's feature
	// (of their NameKey), 0 for an author without a key or whose key an
	// earlier author has: Explain's persons and co-authors.
	authorFeats []uint32
	// instFeats and citeFeats are, parallel to paper.Institutions and
	// paper.Cites, each id's feature (0 for an empty id): Explain looks
	// for a followed one in every user's explanation of the paper, and a
	// paper enriched with its references cites some 50 (hashing them
	// for each user cost more than the rest of the explanation).
	instFeats, citeFeats []uint32
	// spelled makes, once, for a vector that is explained (the papers
	// shown, which many users share), spellings: each word feature's
	// first spelling, parallel to feats (see spellAll).
	spelled   sync.Once
	spellings []string
}

// Len is the number of features of v.
func (v *Vector) Len() int { return len(v.feats) }

// Paper is the paper v was built from, cut to the limits Vector reads.
func (v *Vector) Paper() *Paper { return &v.paper }

// value returns v's value of feature f (0 when v lacks it).
func (v *Vector) value(f uint32) float32 {
	if i, ok := slices.BinarySearch(v.feats, f); ok {
		return v.vals[i]
	}
	return 0
}

// Corpus is the document frequencies of words over the papers it was
// given, for TF-IDF, with the Params vectors are built with. Keep one per
// process and Add each ingest batch to it; it is safe for concurrent use.
// Its size grows with the distinct words seen (a map entry each); Prune
// bounds it.
type Corpus struct {
	params Params
	mu     sync.RWMutex
	n      int
	df     map[uint32]uint32
}

// NewCorpus returns an empty Corpus whose vectors use p.
func NewCorpus(p Params) *Corpus {
	return &Corpus{params: p, df: make(map[uint32]uint32)}
}

// Params returns the parameters c's vectors use.
func (c *Corpus) Params() Params { return c.params }

// Docs is the number of papers added.
func (c *Corpus) Docs() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.n
}

// Add counts the distinct words of each paper's title and abstract.
func (c *Corpus) Add(papers ...*Paper) {
	var words []uint32
	var stems []string
	all := make([][]uint32, 0, len(papers))
	for _, p := range papers {
		words, stems = wordHashes(p, 1, words[:0], stems[:0])
		slices.Sort(words)
		all = append(all, slices.Clone(slices.Compact(words)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += len(papers)
	for _, ws := range all {
		for _, w := range ws {
			c.df[w]++
		}
	}
}

// Prune forgets the words fewer than minDF papers had (most of a corpus's
// distinct words occur once): they then weigh as words never seen, the
// most. It bounds a long-running process's Corpus.
func (c *Corpus) Prune(minDF uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w, n := range c.df {
		if n < minDF {
			delete(c.df, w)
		}
	}
}

// IDF is the inverse document frequency of a stemmed word (a word of
// search.Stems): ln((1+N)/(1+df)) + 1 over the N papers added, as
// scikit-learn's smooth IDF.
func (c *Corpus) IDF(stem string) float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.idf(hash(nsWord, stem))
}

func (c *Corpus) idf(w uint32) float64 {
	return math.Log(float64(1+c.n)/float64(1+c.df[w])) + 1
}

// wordHashes appends the word features of p's title (repeat times) and
// abstract to words (stems is scratch, returned for reuse).
func wordHashes(p *Paper, repeat int, words []uint32, stems []string) ([]uint32, []string) {
	stems = search.Stems(cut(p.Title, maxTitleBytes), stems[:0])
	n := len(stems)
	for range repeat {
		for _, s := range stems[:n] {
			words = append(words, hash(nsWord, s))
		}
	}
	stems = search.Stems(cut(p.Abstract, maxAbstractBytes), stems[:0])
	for _, s := range stems {
		words = append(words, hash(nsWord, s))
	}
	return words, stems
}

// cut returns s's first max bytes, never splitting a character.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// Vector returns the features of p: its words' TF-IDF (sublinear term
// frequency, 1 + ln tf, times IDF; of unit length over the words), its
// authors' NameKeys (AuthorWeight over the square root of their number),
// its categories, institutions and cited papers.
func (c *Corpus) Vector(p *Paper) *Vector {
	pr := &c.params
	v := &Vector{paper: *p}
	v.paper.Title, v.paper.Abstract = cut(p.Title, maxTitleBytes), cut(p.Abstract, maxAbstractBytes)
	v.paper.Authors = limit(p.Authors, maxListItems)
	v.paper.Categories = limit(p.Categories, maxCategories)
	v.paper.Institutions = limit(p.Institutions, maxListItems)
	v.paper.Cites = limit(p.Cites, maxListItems)
	p = &v.paper

	words, _ := wordHashes(p, max(pr.TitleRepeat, 1), nil, nil)
	slices.Sort(words)
	type entry struct {
		f  uint32
		x  float32
		ns byte
	}
	es := make([]entry, 0, len(words)/2+len(p.Authors)+len(p.Categories)+len(p.Institutions)+len(p.Cites))
	var norm float64
	c.mu.RLock()
	for i := 0; i < len(words); {
		j := i + 1
		for j < len(words) && words[j] == words[i] {
			j++
		}
		x := (1 + math.Log(float64(j-i))) * c.idf(words[i])
		norm += x * x
		es = append(es, entry{f: words[i], x: float32(x), ns: nsWord})
		i = j
	}
	c.mu.RUnlock()
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for i := range es {
			es[i].x *= inv
		}
	}
	add := func(ns byte, items []string, x float32, key func(string) string) {
		for _, s := range items {
			if key != nil {
				s = key(s)
			}
			if s != "" && x != 0 {
				es = append(es, entry{f: hash(ns, s), x: x, ns: ns})
			}
		}
	}
	authorKeys := make([]string, len(p.Authors))
	v.authorFeats = make([]uint32, len(p.Authors))
	for i, a := range p.Authors {
		authorKeys[i] = NameKey(a)
	}
	keys := distinct(authorKeys, nil)
	seen := make(map[string]bool, len(keys))
	for i, k := range authorKeys {
		if k != "" && !seen[k] {
			seen[k] = true
			v.authorFeats[i] = hash(nsAuthor, k)
		}
	}
	if len(keys) > 0 {
		add(nsAuthor, keys, pr.AuthorWeight/float32(math.Sqrt(float64(len(keys)))), nil)
	}
	add(nsCategory, distinct(p.Categories, nil), pr.CategoryWeight, nil)
	add(nsInstitution, distinct(p.Institutions, nil), pr.InstitutionWeight, nil)
	add(nsCite, distinct(p.Cites, nil), pr.CiteWeight, nil)
	v.instFeats, v.citeFeats = featuresOf(nsInstitution, p.Institutions), featuresOf(nsCite, p.Cites)

	// Sorted by feature; two features with one hash (rare) are one.
	slices.SortStableFunc(es, func(a, b entry) int {
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	})
	v.feats = make([]uint32, 0, len(es))
	v.vals = make([]float32, 0, len(es))
	v.ns = make([]byte, 0, len(es))
	v.nameable = make([]bool, 0, len(es))
	for _, e := range es {
		if n := len(v.feats); n > 0 && v.feats[n-1] == e.f {
			v.vals[n-1] += e.x
			continue
		}
		v.feats = append(v.feats, e.f)
		v.vals = append(v.vals, e.x)
		v.ns = append(v.ns, e.ns)
		v.nameable = append(v.nameable, e.ns == nsWord && !functionWords[e.f])
	}
	return v
}

// featuresOf returns, parallel to ids, each id's feature in namespace ns,
// 0 for an empty id.
func featuresOf(ns byte, ids []string) []uint32 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]uint32, len(ids))
	for i, id := range ids {
		if id != "" {
			out[i] = hash(ns, id)
		}
	}
	return out
}

func limit(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// distinct returns the distinct non-empty key(s) of items (s itself when
// key is nil), in first-seen order.
func distinct(items []string, key func(string) string) []string {
	out := make([]string, 0, len(items))
	for _, s := range items {
		if key != nil {
			s = key(s)
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
