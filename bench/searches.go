package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"followfeed/follow"
	"followfeed/search"
)

// WeightedCategory is a category and how many users follow it: cat:
// filters of drawn searches are weighted like the follows.
type WeightedCategory struct {
	ID        string
	Followers int64
}

// SearchMix reports what DrawSearches drew.
type SearchMix struct {
	Searches int
	// Terms counts searches by their number of terms (words, phrases and
	// au: names, excluded ones included; cat: filters not): Terms[1] …
	// Terms[4].
	Terms                                           [5]int
	Cat, CatOr, Phrase, Negation, Or, Field, Author int
	// Refused are drafts the parser refused; Duplicate drafts equal to
	// one drawn before.
	Refused, Duplicate int
	FirstRefusal       string
	// Refined is how many drafts matched more than MaxShare of the preview
	// and got another term; Abandoned those still too broad at four.
	Refined, Abandoned int
	// DraftShare is the mean share of the preview's papers the first
	// drafts matched, before any refinement; FinalShare the same of the
	// searches returned.
	DraftShare, FinalShare float64
	TermsPerSearch         float64
	DistinctWords          int
	DistinctCategories     int
}

// The shape of drawn searches, in the proportions query services
// report (short queries, mostly AND of a few words).
var termWeights = []float64{1: 0.25, 2: 0.35, 3: 0.25, 4: 0.15}

const (
	catShare      = 0.25 // searches with a cat: filter
	catOrShare    = 0.15 // of those: (cat:A OR cat:B)
	phraseShare   = 0.12 // of the terms: a "phrase" (a recurring bigram)
	negationShare = 0.12 // of searches with 2+ terms: the last is -excluded
	orShare       = 0.15 // of searches with 3+ terms: (a OR b) c …
	fieldShare    = 0.06 // of the terms: ti: or abs:
	authorShare   = 0.03 // of searches: au:"researcher N" and the rest
	// MaxShare is the broadest search a user keeps: one that the
	// preview (GET /v1/search/preview) shows matching more of the recent
	// papers gets another term, as the preview is there for. 2% of arXiv
	// is some 20 papers a day, the flow of a mid-size category.
	MaxShare = 0.02
)

// draft is a search being drawn.
type draft struct {
	terms  []string // positive terms: words, "phrases", ti:/abs: words, au:"names"
	neg    string   // an excluded term, or ""
	or     bool     // the first two terms are alternatives
	cat    string   // cat:X or (cat:A OR cat:B), or ""
	words  []string // the words drawn, for the mix
	cats   []string
	phrase bool
	field  bool
	author bool
}

func (d *draft) k() int {
	if d.neg != "" {
		return len(d.terms) + 1
	}
	return len(d.terms)
}

func (d *draft) String() string {
	parts := slices.Clone(d.terms)
	if d.or {
		parts = append([]string{"(" + parts[0] + " OR " + parts[1] + ")"}, parts[2:]...)
	}
	if d.neg != "" {
		parts = append(parts, "-"+d.neg)
	}
	if d.cat != "" {
		parts = append(parts, d.cat)
	}
	return strings.Join(parts, " ")
}

// searchDrawer draws the parts of searches.
type searchDrawer struct {
	r           *rand.Rand
	v           *Vocabulary
	cats        []WeightedCategory
	catCum      []float64
	researchers int
}

func (s *searchDrawer) cat() string {
	u := s.r.Float64() * s.catCum[len(s.catCum)-1]
	return s.cats[min(sort.SearchFloat64s(s.catCum, u), len(s.cats)-1)].ID
}

// term draws a word (sometimes in ti: or abs:) or a phrase.
func (s *searchDrawer) term(d *draft) string {
	if s.r.Float64() < phraseShare {
		a, b := s.v.Phrase(s.r)
		d.phrase = true
		d.words = append(d.words, a, b)
		return `"` + a + " " + b + `"`
	}
	w := s.v.ContentWord(s.r)
	d.words = append(d.words, w)
	if s.r.Float64() < fieldShare {
		d.field = true
		if s.r.Float64() < 0.7 {
			return "ti:" + w
		}
		return "abs:" + w
	}
	return w
}

func (s *searchDrawer) draft() *draft {
	d := &draft{}
	k := 1
	for u := s.r.Float64(); k < len(termWeights)-1 && u >= termWeights[k]; k++ {
		u -= termWeights[k]
	}
	pos := k
	if k >= 2 && s.r.Float64() < negationShare {
		pos--
		d.neg = s.term(d)
	}
	if s.r.Float64() < authorShare {
		// A person's papers (on a topic): the name among the terms, drawn
		// like the batch's authors.
		a := 1 + s.r.IntN(s.researchers)
		if s.r.Float64() < 0.5 {
			a = max(int(math.Pow(float64(s.researchers), s.r.Float64())), 1)
		}
		d.terms = append(d.terms, fmt.Sprintf(`au:"Researcher %d"`, a))
		d.author = true
		pos--
	}
	for range pos {
		d.terms = append(d.terms, s.term(d))
	}
	if len(d.terms) >= 3 && s.r.Float64() < orShare {
		d.or = true // alternatives within a topic: (a OR b) c …
	}
	if s.r.Float64() < catShare {
		if s.r.Float64() < catOrShare {
			a, b := s.cat(), s.cat()
			d.cat = "(cat:" + a + " OR cat:" + b + ")"
			d.cats = []string{a, b}
		} else {
			c := s.cat()
			d.cat = "cat:" + c
			d.cats = []string{c}
		}
	}
	return d
}

// DrawSearches draws n distinct queries, as the normal forms the
// parser gives (follow.CompileQuery): 1–4 terms drawn from v (content
// words by frequency, recurring phrases, ti:/abs: fields, au: names of the
// researcher pool, OR, -exclusions), a quarter with cat: filters weighted
// by cats' followers. A draft the parser refuses is skipped, as a user
// would be refused; one drawn twice counts once. Drafts are tried on
// preview (papers like the batch's, not the batch): one matching more
// than MaxShare of them gets another term, up to four, and is dropped if
// still that broad.
func DrawSearches(v *Vocabulary, cats []WeightedCategory, researchers int, preview []*search.Doc, n int, seed uint64) ([]string, SearchMix) {
	s := &searchDrawer{r: rand.New(rand.NewPCG(seed, 11)), v: v, cats: cats, researchers: researchers}
	var sum float64
	for _, c := range cats {
		sum += float64(c.Followers)
		s.catCum = append(s.catCum, sum)
	}
	var mix SearchMix
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	words, catIDs := map[string]bool{}, map[string]bool{}
	var termSum int
	var refine []*draft
	first := true
	for round := 0; len(out) < n && round < 50; round++ {
		// This round's drafts: the refined ones and new ones.
		var ds []*draft
		var qs []*search.Query
		var norms []string
		for _, d := range refine {
			d.terms = append(d.terms, s.term(d))
			mix.Refined++
			ds = append(ds, d)
		}
		for len(ds) < n-len(out)+len(refine) {
			ds = append(ds, s.draft())
		}
		refine = refine[:0]
		kept := ds[:0]
		for _, d := range ds {
			q, err := follow.CompileQuery(d.String())
			if err != nil {
				mix.Refused++
				if mix.FirstRefusal == "" {
					mix.FirstRefusal = d.String() + ": " + err.Error()
				}
				continue
			}
			if seen[q.String()] {
				mix.Duplicate++
				continue
			}
			seen[q.String()] = true
			kept = append(kept, d)
			qs = append(qs, q)
			norms = append(norms, q.String())
		}
		hits := make([]int, len(qs))
		for _, h := range search.MatchBatch(qs, preview) {
			for _, qi := range h {
				hits[qi]++
			}
		}
		for i, d := range kept {
			share := float64(hits[i]) / float64(max(len(preview), 1))
			if first {
				mix.DraftShare += share
			}
			if share > MaxShare {
				delete(seen, norms[i]) // a refined search may come back to it
				if d.k() < 4 {
					refine = append(refine, d)
				} else {
					mix.Abandoned++
				}
				continue
			}
			if len(out) == n {
				continue
			}
			out = append(out, norms[i])
			mix.FinalShare += share
			mix.Terms[d.k()]++
			termSum += d.k()
			for _, w := range d.words {
				words[w] = true
			}
			for _, c := range d.cats {
				catIDs[c] = true
			}
			for _, f := range []struct {
				on bool
				n  *int
			}{{d.phrase, &mix.Phrase}, {d.field, &mix.Field}, {d.neg != "", &mix.Negation}, {d.or, &mix.Or},
				{d.author, &mix.Author}, {d.cat != "", &mix.Cat}, {len(d.cats) == 2, &mix.CatOr}} {
				if f.on {
					*f.n++
				}
			}
		}
		if first {
			mix.DraftShare /= float64(max(len(kept), 1))
			first = false
		}
	}
	mix.Searches = len(out)
	if len(out) > 0 {
		mix.TermsPerSearch = float64(termSum) / float64(len(out))
		mix.FinalShare /= float64(len(out))
	}
	mix.DistinctWords, mix.DistinctCategories = len(words), len(catIDs)
	return out, mix
}

// previewDocs returns n papers drawn like the batch's (another seed), as
// searches see them: the recent papers a user previews a search on.
func previewDocs(v *Vocabulary, s Scale, n int, seed uint64) []*search.Doc {
	ps := batchPapers(n, s, v, seed)
	out := make([]*search.Doc, 0, n)
	for i := range ps {
		if ps[i].Normalize(true) == nil {
			out = append(out, ps[i].Doc())
		}
	}
	return out
}
