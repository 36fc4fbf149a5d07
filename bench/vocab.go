package bench

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The measured batch's titles and abstracts, and the queries run
// against it, come from one word distribution estimated from real
// abstracts (testdata/abstracts.json: the arXiv and OpenAlex records of
// the shared fixtures, see testdata/SOURCES.md). The generated dataset's
// own papers keep their fixed synthetic text: changing it would change the
// dataset that is built once.
//
// What decides which papers a search matches is in how many papers each
// word occurs (its document frequency), so the model is one of documents,
// not of a stream of words:
//
//   - every word of the sample (the head) occurs in a generated paper with
//     the probability it occurs in a sample paper, smoothed by Good-Turing
//     for words the sample has in few papers (a word seen in 1 of 20
//     papers occurs in far fewer than 5% of all papers), and, when it
//     occurs, as often as it does in the sample papers that have it
//     (words are bursty: a topic word recurs within its abstract);
//   - every paper also has words the sample never saw (the tail): as many
//     as a sample paper has words no other sample paper has (Good-Turing's
//     estimate of the unseen), drawn from an unbounded list of
//     pseudo-words whose document frequency falls Zipf-like with rank,
//     df(r) ∝ r^−s, s chosen so that the tail continues the head at its
//     rarest words;
//   - two-word phrases of the sample occur, as pairs, in as many papers as
//     they do in the sample (smoothed the same way), so that phrase
//     searches find their phrases;
//   - lengths are those of the sample's titles and abstracts; a shorter
//     paper has proportionally fewer words.
//
// Word frequencies follow: a word's expected count is its document
// frequency times its count per paper, which reproduces the sample's
// counts for common words and a Zipf-like rank-frequency curve overall.
// Searches draw their words by those frequencies (ContentWord).

//go:embed testdata/abstracts.json
var abstractsJSON []byte

// Vocabulary is a word distribution for synthetic titles, abstracts and
// searches. Build it with NewVocabulary; it is read-only afterwards and
// safe to share.
type Vocabulary struct {
	head []headWord // sample words, most frequent first
	// contentCum is the cumulative token weight (df × count per paper) of
	// the head's content words, in head order; contentIdx their indices.
	contentCum []float64
	contentIdx []int
	// Tail: TailWords pseudo-words per paper (of average length), ranks
	// above len(head) with df(r) ∝ r^−TailExponent.
	TailWords    float64
	TailExponent float64
	tailRepeat   float64 // count per paper − 1 of a tail word
	phrases      []phrase
	phraseCum    []float64 // cumulative count, for drawing phrases
	titleLens    []int     // in words, of the sample's titles
	abstractLens []int     // in words, of the sample's abstracts
	meanLen      float64   // title + abstract, in words
	// Sample reports what the sample holds.
	Sample SampleStats
}

type headWord struct {
	w       string
	df      float64 // probability of occurring in a paper of average length
	repeat  float64 // mean count per paper that has it, minus one
	content bool
}

type phrase struct {
	a, b  string
	df    float64
	count int
}

// SampleStats describes the abstracts a Vocabulary was estimated from.
type SampleStats struct {
	Papers   int
	Words    int // tokens of titles and abstracts
	Distinct int
	// OnlyOne is how many words occur in exactly one sample paper.
	OnlyOne int
}

// wordRE finds words: letters and digits, with inner hyphens and
// apostrophes ("self-supervised", "specker's").
var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*`)

func words(s string) []string { return wordRE.FindAllString(strings.ToLower(s), -1) }

// functionWords are words that texts use but searches do not: the search
// parser's stop words and the other closed-class words (determiners,
// pronouns, prepositions, conjunctions, auxiliaries, a few adverbs).
var functionWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by for from has have in into is it its of on or
		that the their this to was we were which will with our not no can these those also than then there
		they via such where each more most other both been over under between all one two so however thus
		here while when what how why who whom whose only very well may might must should could would do does
		did done if any some many much out up about after before through without within upon yet even still
		i e g us them he she his her him itself being same own too further whether either neither nor per
		since because although though among against during above below off again once`) {
		m[w] = true
	}
	return m
}()

// Content reports whether w is a word a search would use: not a function
// word, not a number, at least two letters.
func Content(w string) bool {
	if functionWords[w] || utf8.RuneCountInString(w) < 2 {
		return false
	}
	for _, r := range w {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// goodTuring returns the smoothed number of papers (out of the sample's)
// for a word seen in d of them, from nd (how many words were seen in
// exactly d papers): d* = (d+1) n(d+1) / n(d) while that stays increasing
// and below d+1, else d.
func goodTuring(nd map[int]int) func(d int) float64 {
	star := map[int]float64{}
	prev := 0.0
	for d := 1; d <= 5 && nd[d] > 0 && nd[d+1] > 0; d++ {
		s := float64(d+1) * float64(nd[d+1]) / float64(nd[d])
		if s <= prev || s >= float64(d+1) {
			break
		}
		star[d], prev = s, s
	}
	return func(d int) float64 {
		if s, ok := star[d]; ok {
			return s
		}
		return float64(d)
	}
}

// NewVocabulary estimates the distribution from the embedded abstracts.
func NewVocabulary() (*Vocabulary, error) {
	var recs []struct {
		Title    string `json:"title"`
		Abstract string `json:"abstract"`
	}
	if err := json.Unmarshal(abstractsJSON, &recs); err != nil || len(recs) == 0 {
		return nil, fmt.Errorf("reading testdata/abstracts.json: %v", err)
	}
	v := &Vocabulary{}
	count, papers := map[string]int{}, map[string]int{}
	pairCount, pairPapers := map[[2]string]int{}, map[[2]string]int{}
	var total int
	for _, r := range recs {
		tw, aw := words(r.Title), words(r.Abstract)
		v.titleLens = append(v.titleLens, len(tw))
		v.abstractLens = append(v.abstractLens, len(aw))
		total += len(tw) + len(aw)
		seen, seenPair := map[string]bool{}, map[[2]string]bool{}
		for _, part := range [][]string{tw, aw} {
			for i, w := range part {
				count[w]++
				seen[w] = true
				if i > 0 && Content(part[i-1]) && Content(w) {
					p := [2]string{part[i-1], w}
					pairCount[p]++
					seenPair[p] = true
				}
			}
		}
		for w := range seen {
			papers[w]++
		}
		for p := range seenPair {
			pairPapers[p]++
		}
	}
	n := float64(len(recs))
	v.meanLen = float64(total) / n
	v.Sample = SampleStats{Papers: len(recs), Words: total, Distinct: len(count)}
	nd := map[int]int{}
	for _, d := range papers {
		nd[d]++
	}
	v.Sample.OnlyOne = nd[1]
	gt := goodTuring(nd)
	for w, c := range count {
		d := papers[w]
		v.head = append(v.head, headWord{w: w, df: gt(d) / n, repeat: float64(c)/float64(d) - 1, content: Content(w)})
	}
	// Most frequent first; equal counts in a fixed order.
	slices.SortFunc(v.head, func(a, b headWord) int {
		if c := count[b.w] - count[a.w]; c != 0 {
			return c
		}
		return strings.Compare(a.w, b.w)
	})
	var acc float64
	var onlyOneRepeat float64
	for i, h := range v.head {
		if papers[h.w] == 1 {
			onlyOneRepeat += h.repeat / float64(nd[1])
		}
		if h.content {
			acc += h.df * (1 + h.repeat)
			v.contentCum = append(v.contentCum, acc)
			v.contentIdx = append(v.contentIdx, i)
		}
	}
	// The unseen: a sample paper has nd[1]/n words no other has; the
	// smoothing above left those words gt(1)/n of a paper each, and the
	// tail supplies the rest of a new paper's new words. Its document
	// frequency at rank H+1 equals the head's rarest, gt(1)/n: with
	// TailWords words per paper drawn from a Pareto over ranks > H,
	// df(H) = TailWords (s−1) / H.
	v.TailWords = float64(nd[1]) / n
	h := float64(len(v.head))
	v.TailExponent = 1 + gt(1)/n*h/v.TailWords
	v.tailRepeat = onlyOneRepeat
	// Phrases: content-word pairs, smoothed like words.
	pnd := map[int]int{}
	for _, d := range pairPapers {
		pnd[d]++
	}
	pgt := goodTuring(pnd)
	for p, c := range pairCount {
		v.phrases = append(v.phrases, phrase{a: p[0], b: p[1], df: pgt(pairPapers[p]) / n, count: c})
	}
	slices.SortFunc(v.phrases, func(a, b phrase) int {
		if c := b.count - a.count; c != 0 {
			return c
		}
		return strings.Compare(a.a+" "+a.b, b.a+" "+b.b)
	})
	acc = 0
	for _, p := range v.phrases {
		acc += float64(p.count)
		v.phraseCum = append(v.phraseCum, acc)
	}
	return v, nil
}

// tailRank draws a tail rank: a Pareto over ranks above the head's.
func (v *Vocabulary) tailRank(r *rand.Rand) int64 {
	h := float64(len(v.head))
	x := h * math.Pow(1-r.Float64(), -1/(v.TailExponent-1))
	return int64(min(x, 1e15))
}

// ContentWord draws a content word by its frequency in generated text:
// head words by document frequency × count per paper, the tail by its
// share of the words.
func (v *Vocabulary) ContentWord(r *rand.Rand) string {
	headW := v.contentCum[len(v.contentCum)-1]
	tailW := v.TailWords * (1 + v.tailRepeat) // per paper of average length, like headW
	if u := r.Float64() * (headW + tailW); u < headW {
		return v.head[v.contentIdx[min(sort.SearchFloat64s(v.contentCum, u), len(v.contentIdx)-1)]].w
	}
	return pseudoWord(v.tailRank(r))
}

// Phrase draws a two-word phrase of the sample by how often it occurs.
func (v *Vocabulary) Phrase(r *rand.Rand) (string, string) {
	p := v.phrases[min(sort.SearchFloat64s(v.phraseCum, r.Float64()*v.phraseCum[len(v.phraseCum)-1]), len(v.phrases)-1)]
	return p.a, p.b
}

// syllables make pseudo-words: consonant + vowel, so that no pseudo-word
// ends in a consonant and no two stem alike.
var syllables = func() []string {
	var out []string
	for _, c := range "bdfgklmnprstvz" {
		for _, v := range "aeiou" {
			out = append(out, string(c)+string(v))
		}
	}
	return out
}()

// pseudoWord is the word of a tail rank: distinct ranks give distinct
// words of at least three syllables ("bakoti").
func pseudoWord(rank int64) string {
	var b strings.Builder
	n := int64(len(syllables))
	for i := 0; i < 3 || rank > 0; i++ {
		b.WriteString(syllables[rank%n])
		rank /= n
	}
	return b.String()
}

// poisson draws from a Poisson distribution of mean m (small m).
func poisson(r *rand.Rand, m float64) int {
	l, k, p := math.Exp(-m), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Paper generates a title and an abstract (see the model above).
func (v *Vocabulary) Paper(r *rand.Rand) (title, abstract string) {
	tl := v.titleLens[r.IntN(len(v.titleLens))]
	al := v.abstractLens[r.IntN(len(v.abstractLens))]
	scale := float64(tl+al) / v.meanLen
	present := func(df float64) bool { return r.Float64() < 1-math.Pow(1-min(df, 1), scale) }
	var units [][]string // words and phrases, to be shuffled
	add := func(w string, repeat float64) {
		for range 1 + poisson(r, repeat) {
			units = append(units, []string{w})
		}
	}
	for _, h := range v.head {
		if present(h.df) {
			add(h.w, h.repeat)
		}
	}
	for range poisson(r, v.TailWords*scale) {
		add(pseudoWord(v.tailRank(r)), v.tailRepeat)
	}
	for _, p := range v.phrases {
		if present(p.df) {
			units = append(units, []string{p.a, p.b})
		}
	}
	r.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	// The title: the first content words (titles are mostly content),
	// joined by the odd function word; the other words are the abstract.
	var tw []string
	rest := units[:0]
	for _, u := range units {
		if len(tw) < tl && len(u) == 1 && Content(u[0]) {
			if len(tw) > 0 && r.Float64() < 0.2 {
				tw = append(tw, []string{"of", "for", "and", "in", "with", "on"}[r.IntN(6)])
			}
			tw = append(tw, u[0])
			continue
		}
		rest = append(rest, u)
	}
	return sentence(tw, false), v.sentences(r, rest)
}

// sentences writes units as sentences of 8–30 words.
func (v *Vocabulary) sentences(r *rand.Rand, units [][]string) string {
	var b strings.Builder
	var s []string
	until := 8 + r.IntN(23)
	for i, u := range units {
		s = append(s, u...)
		if len(s) >= until || i == len(units)-1 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(sentence(s, true))
			s, until = s[:0], 8+r.IntN(23)
		}
	}
	return b.String()
}

func sentence(ws []string, stop bool) string {
	s := strings.Join(ws, " ")
	if s == "" {
		return s
	}
	first, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(first)) + s[size:]
	if stop {
		s += "."
	}
	return s
}

// String summarises the distribution for the report.
func (v *Vocabulary) String() string {
	return fmt.Sprintf("%d real abstracts (%d words, %d distinct), their document frequencies smoothed by Good-Turing, "+
		"%.0f words per paper from a Zipf-like tail of pseudo-words (df ∝ rank^−%.2f), %d two-word phrases",
		v.Sample.Papers, v.Sample.Words, v.Sample.Distinct, v.TailWords, v.TailExponent, len(v.phrases))
}
