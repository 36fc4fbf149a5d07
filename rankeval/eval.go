// Package rankeval is followfeed-lab rank-eval: it measures the product's
// ranking (package relevance, the code the product runs) on real arXiv
// listings against arrival order, random order and a plain TF-IDF cosine,
// under the protocol BENCHMARKS.md writes out (Protocol, below), and
// writes its figures as a section of BENCHMARKS.md. It is lab code: the
// followfeed binary does not link it.
package rankeval

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"followfeed/relevance"
	"followfeed/search"
)

// TestMonths are the months whose figures are reported; ValidationMonths
// are the months parameters were chosen on (never the test months). Each
// has its 12 months before it in the listings, contiguous (the listings
// are contiguous from 9204 to 9912 and from 0612 to 0712).
var (
	TestMonths       = []string{"9811", "9901", "9903", "9905", "9907", "9909", "9911", "0712"}
	ValidationMonths = []string{"9710", "9802", "9806", "9808"}
)

// The protocol's numbers.
const (
	historyMonths = 12
	minHistory    = 3  // a user's papers in the 12 months before
	moreFeedback  = 5  // "more" on earlier papers of the user's co-authors
	lessFeedback  = 10 // "less" on random earlier papers
)

// Method names, in the report's order.
const (
	Arrival         = "arrival order"
	Random          = "random order"
	TFIDF           = "TF-IDF cosine of titles"
	ProductCold     = "product, cold start"
	ProductFeedback = "product, with feedback"
)

// Methods are the rankings compared, in the report's order.
var Methods = []string{Arrival, Random, TFIDF, ProductCold, ProductFeedback}

// Options configure a run.
type Options struct {
	// Dir holds the listings, one file per month named YYMM.
	Dir string
	// Months are the test months (YYMM).
	Months []string
	// Params are the product's ranking parameters.
	Params relevance.Params
	// Background is the number of other earlier papers each user's model
	// takes as negatives.
	Background int
	// Seed fixes the random order, the background samples and the
	// simulated feedback.
	Seed uint64
	// Workers evaluate users in parallel (0: GOMAXPROCS).
	Workers int
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Metrics are a method's figures over users: recall@10 and recall@50 (the
// share of a user's relevant papers ranked in the first 10 or 50,
// averaged over users) and MRR (the mean over users of 1 / the rank of
// their first relevant paper).
type Metrics struct {
	Recall10, Recall50, MRR float64
}

// MonthResult is one test month's part of a run.
type MonthResult struct {
	Month      string
	Candidates int
	Users      int
	// Metrics are by method (Methods' order).
	Metrics []Metrics
}

// Result is a run's figures.
type Result struct {
	Months []MonthResult
	// Users is the number of (user, month) pairs evaluated.
	Users int
	// Metrics are over every user of every month, by method.
	Metrics []Metrics
	// Train are the durations of the product's Train calls (cold start
	// and with feedback), sorted; Examples their mean number of examples.
	Train    []time.Duration
	Examples float64
	Elapsed  time.Duration
}

// Run evaluates every method on every month of o.Months; it stops early
// with ctx's error when ctx is done.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	res := &Result{Metrics: make([]Metrics, len(Methods))}
	var examples int
	for _, s := range o.Months {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := parseMonth(s)
		if err != nil {
			return nil, err
		}
		mr, train, ex, err := evalMonth(o, m)
		if err != nil {
			return nil, err
		}
		res.Months = append(res.Months, mr)
		res.Train = append(res.Train, train...)
		examples += ex
		for i := range Methods {
			res.Metrics[i].add(mr.Metrics[i], float64(mr.Users))
		}
		res.Users += mr.Users
		if o.Log != nil {
			fmt.Fprintf(o.Log, "rank-eval: %s: %d candidates, %d users; recall@10 %s\n", mr.Month, mr.Candidates, mr.Users, recallLine(mr.Metrics))
		}
	}
	for i := range res.Metrics {
		res.Metrics[i].scale(1 / float64(max(res.Users, 1)))
	}
	slices.Sort(res.Train)
	if len(res.Train) > 0 {
		res.Examples = float64(examples) / float64(len(res.Train))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func recallLine(ms []Metrics) string {
	var parts []string
	for i, m := range ms {
		parts = append(parts, fmt.Sprintf("%s %.3f", Methods[i], m.Recall10))
	}
	return strings.Join(parts, ", ")
}

func (m *Metrics) add(o Metrics, w float64) {
	m.Recall10 += w * o.Recall10
	m.Recall50 += w * o.Recall50
	m.MRR += w * o.MRR
}

func (m *Metrics) scale(f float64) {
	m.Recall10 *= f
	m.Recall50 *= f
	m.MRR *= f
}

// paper is a record with its authors' keys.
type paper struct {
	rec  Record
	keys []string
	vec  *relevance.Vector
}

func newPaper(r Record) *paper {
	p := &paper{rec: r}
	for _, a := range r.Authors {
		if k := relevance.NameKey(a); k != "" && !slices.Contains(p.keys, k) {
			p.keys = append(p.keys, k)
		}
	}
	return p
}

func (p *paper) relevance(drop string) *relevance.Paper {
	rp := &relevance.Paper{ID: p.rec.ID, Title: p.rec.Title, Categories: p.rec.Categories}
	for _, a := range p.rec.Authors {
		if drop == "" || relevance.NameKey(a) != drop {
			rp.Authors = append(rp.Authors, a)
		}
	}
	return rp
}

// isPersonKey reports whether a NameKey is a person's ("surname i"), not
// a group's or a single word.
func isPersonKey(k string) bool {
	sur, ini, ok := strings.Cut(k, " ")
	return ok && sur != "" && ini != "" && !strings.Contains(ini, " ") && len([]rune(ini)) == 1
}

// evalMonth evaluates every user of month t.
func evalMonth(o Options, t month) (MonthResult, []time.Duration, int, error) {
	mr := MonthResult{Month: t.String(), Metrics: make([]Metrics, len(Methods))}
	var hist []*paper
	for m := t - historyMonths; m < t; m++ {
		recs, err := loadMonth(o.Dir, m)
		if err != nil {
			return mr, nil, 0, fmt.Errorf("rank-eval: month %s needs the 12 months before it: %w", t, err)
		}
		for _, r := range recs {
			hist = append(hist, newPaper(r))
		}
	}
	recs, err := loadMonth(o.Dir, t)
	if err != nil {
		return mr, nil, 0, err
	}
	var test []*paper
	for _, r := range recs {
		test = append(test, newPaper(r))
	}
	mr.Candidates = len(test)

	// The corpus is every paper up to the test month's (as the product's
	// is, after ingesting it); each paper's vector is built once.
	corpus := relevance.NewCorpus(o.Params)
	for _, p := range append(slices.Clip(hist), test...) {
		corpus.Add(p.relevance(""))
	}
	for _, p := range append(slices.Clip(hist), test...) {
		p.vec = corpus.Vector(p.relevance(""))
	}

	// Users: person keys with at least minHistory earlier papers and one
	// in the test month.
	count := map[string]int{}
	for _, p := range hist {
		for _, k := range p.keys {
			count[k]++
		}
	}
	inTest := map[string]bool{}
	for _, p := range test {
		for _, k := range p.keys {
			inTest[k] = true
		}
	}
	var users []string
	for k, n := range count {
		if n >= minHistory && inTest[k] && isPersonKey(k) {
			users = append(users, k)
		}
	}
	slices.Sort(users)
	mr.Users = len(users)

	titles := titleVectors(corpus, test)
	type out struct {
		m        []Metrics
		train    []time.Duration
		examples int
	}
	outs := make([]out, len(users))
	var wg sync.WaitGroup
	next := make(chan int)
	for range o.Workers {
		wg.Go(func() {
			for i := range next {
				m, tr, ex := evalUser(o, t, users[i], hist, test, titles, corpus)
				outs[i] = out{m, tr, ex}
			}
		})
	}
	for i := range users {
		next <- i
	}
	close(next)
	wg.Wait()
	var train []time.Duration
	var examples int
	for _, u := range outs {
		for i := range Methods {
			mr.Metrics[i].add(u.m[i], 1)
		}
		train = append(train, u.train...)
		examples += u.examples
	}
	for i := range mr.Metrics {
		mr.Metrics[i].scale(1 / float64(max(len(users), 1)))
	}
	return mr, train, examples, nil
}

// userSeed is a user's own random stream: the same whatever the order
// users are evaluated in.
func userSeed(o Options, t month, user string) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d", user, t)
	return rand.New(rand.NewPCG(o.Seed, h.Sum64()))
}

// evalUser ranks the test month's papers for one user by every method and
// returns each method's figures, the durations of the product's Train
// calls and their examples.
func evalUser(o Options, t month, user string, hist, test []*paper, titles []tfidf, corpus *relevance.Corpus) ([]Metrics, []time.Duration, int) {
	rng := userSeed(o, t, user)
	var own, others []int
	coauthors := map[string]bool{}
	for i := len(hist) - 1; i >= 0; i-- { // newest first
		if slices.Contains(hist[i].keys, user) {
			own = append(own, i)
			for _, k := range hist[i].keys {
				if k != user {
					coauthors[k] = true
				}
			}
		} else {
			others = append(others, i)
		}
	}
	// The user's name as their newest earlier paper writes it.
	name := user
	for _, a := range hist[own[0]].rec.Authors {
		if relevance.NameKey(a) == user {
			name = a
			break
		}
	}

	// The candidates: the month's papers with the user's name removed
	// from every author list.
	cands := make([]*relevance.Vector, len(test))
	relevant := map[int]bool{}
	for i, p := range test {
		cands[i] = p.vec
		if slices.Contains(p.keys, user) {
			relevant[i] = true
			cands[i] = corpus.Vector(p.relevance(user))
		}
	}

	ms := make([]Metrics, len(Methods))
	n := len(test)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	ms[0] = measure(order, relevant)
	shuffled := slices.Clone(order)
	rng.Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	ms[1] = measure(shuffled, relevant)

	// Plain TF-IDF: the cosine of a paper's title with the user's earlier
	// titles, as one document.
	var doc []string
	for _, i := range own {
		doc = append(doc, hist[i].rec.Title)
	}
	profile := newTFIDF(corpus, strings.Join(doc, " \n "))
	ms[2] = measure(rankBy(n, func(i int) float64 { return profile.cosine(titles[i]) }), relevant)

	// The product: the user follows themself (the host said "this user
	// is researcher X"); cold start, then with feedback.
	prof := relevance.Profile{People: []relevance.Person{{Name: name, Self: true}}}
	var ex []relevance.Example
	for _, i := range own {
		ex = append(ex, relevance.Example{Vector: hist[i].vec, Source: relevance.Own})
	}
	bg := sample(rng, others, o.Background)
	for _, i := range bg {
		ex = append(ex, relevance.Example{Vector: hist[i].vec, Source: relevance.Background})
	}
	var train []time.Duration
	score := func(ex []relevance.Example) Metrics {
		start := time.Now()
		m := relevance.Train(o.Params, prof, ex)
		train = append(train, time.Since(start))
		return measure(rankBy(n, func(i int) float64 { return float64(m.Score(cands[i])) }), relevant)
	}
	ms[3] = score(ex)

	// Feedback: "more" on five earlier papers of the user's co-authors,
	// "less" on ten random earlier papers (not the user's).
	var byCoauthors []int
	for _, i := range others {
		for _, k := range hist[i].keys {
			if coauthors[k] {
				byCoauthors = append(byCoauthors, i)
				break
			}
		}
	}
	more := sample(rng, byCoauthors, moreFeedback)
	rest := slices.DeleteFunc(slices.Clone(others), func(i int) bool { return slices.Contains(more, i) })
	less := sample(rng, rest, lessFeedback)
	var fb []relevance.Example
	for _, i := range more {
		fb = append(fb, relevance.Example{Vector: hist[i].vec, Source: relevance.More})
	}
	for _, i := range less {
		fb = append(fb, relevance.Example{Vector: hist[i].vec, Source: relevance.Less})
	}
	ms[4] = score(append(fb, ex...))
	return ms, train, len(ex)*2 + len(fb)
}

// sample returns k of items drawn without replacement (all when fewer).
func sample(rng *rand.Rand, items []int, k int) []int {
	if k >= len(items) {
		return slices.Clone(items)
	}
	out := make([]int, 0, k)
	picked := map[int]bool{}
	for len(out) < k {
		j := rng.IntN(len(items))
		if !picked[j] {
			picked[j] = true
			out = append(out, items[j])
		}
	}
	return out
}

// rankBy returns 0…n-1 by score, highest first; ties keep arrival order.
func rankBy(n int, score func(int) float64) []int {
	s := make([]float64, n)
	order := make([]int, n)
	for i := range n {
		s[i], order[i] = score(i), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s[b], s[a]) })
	return order
}

// measure returns recall@10, recall@50 and the reciprocal rank of the
// first relevant paper of one ranking.
func measure(order []int, relevant map[int]bool) Metrics {
	var m Metrics
	found := 0
	for rank, i := range order {
		if !relevant[i] {
			continue
		}
		if found == 0 {
			m.MRR = 1 / float64(rank+1)
		}
		found++
		if rank < 10 {
			m.Recall10++
		}
		if rank < 50 {
			m.Recall50++
		}
	}
	m.Recall10 /= float64(len(relevant))
	m.Recall50 /= float64(len(relevant))
	return m
}

// tfidf is a plain TF-IDF vector of one text: term frequency times the
// corpus's IDF, by stem, with its norm.
type tfidf struct {
	w    map[string]float64
	norm float64
}

func newTFIDF(c *relevance.Corpus, text string) tfidf {
	v := tfidf{w: map[string]float64{}}
	for _, s := range search.Stems(text, nil) {
		v.w[s]++
	}
	for s, tf := range v.w {
		x := tf * c.IDF(s)
		v.w[s] = x
		v.norm += x * x
	}
	v.norm = math.Sqrt(v.norm)
	return v
}

func (v tfidf) cosine(o tfidf) float64 {
	if v.norm == 0 || o.norm == 0 {
		return 0
	}
	var dot float64
	for s, x := range o.w {
		dot += x * v.w[s]
	}
	return dot / (v.norm * o.norm)
}

func titleVectors(c *relevance.Corpus, ps []*paper) []tfidf {
	out := make([]tfidf, len(ps))
	for i, p := range ps {
		out[i] = newTFIDF(c, p.rec.Title)
	}
	return out
}
