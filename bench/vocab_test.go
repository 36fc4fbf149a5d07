package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Generated papers resemble the sample the vocabulary was estimated from:
// as long, and a common word occurs in as many of them.
func TestVocabularyLikeSample(t *testing.T) {
	v, err := NewVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sample %+v; %.1f tail words per paper, tail exponent %.2f, %d phrases", v.Sample, v.TailWords, v.TailExponent, len(v.phrases))
	r := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	df := map[string]int{}
	var total int
	for range n {
		ti, ab := v.Paper(r)
		ws := append(words(ti), words(ab)...)
		total += len(ws)
		seen := map[string]bool{}
		for _, w := range ws {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	mean := float64(total) / n
	t.Logf("generated: %.1f words per paper (sample %.1f), %d distinct words in %d papers", mean, v.meanLen, len(df), n)
	if math.Abs(mean-v.meanLen) > 0.1*v.meanLen {
		t.Errorf("%.1f words per paper, the sample has %.1f", mean, v.meanLen)
	}
	checked := 0
	for _, h := range v.head {
		if h.df < 0.2 {
			continue
		}
		checked++
		got := float64(df[h.w]) / n
		if math.Abs(got-h.df) > 0.05+0.1*h.df {
			t.Errorf("%q in %.2f of the papers, in %.2f of the sample's", h.w, got, h.df)
		}
	}
	if checked < 20 {
		t.Errorf("only %d common words checked", checked)
	}
	if len(df) < 10*v.Sample.Distinct {
		t.Errorf("%d distinct words in %d papers: the tail is missing", len(df), n)
	}
}
