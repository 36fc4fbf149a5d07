package bench

import (
	"math"
	"slices"
	"testing"

	"followfeed/follow"
	"followfeed/search"
)

// Drawn searches are distinct normal forms the real parser accepts, in
// the advertised mix, none broader than MaxShare of the preview, and the
// same for the same seed.
func TestDrawSearches(t *testing.T) {
	t.Parallel()
	v, err := NewVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	cats := []WeightedCategory{{"cs.LG", 900}, {"cs.CV", 500}, {"hep-th", 100}, {"math.PR", 50}}
	preview := previewDocs(v, ScaleS, 1000, 2)
	const n = 4000
	got, mix := DrawSearches(v, cats, ScaleS.Researchers, preview, n, 3)
	t.Logf("%+v", mix)
	if len(got) != n || mix.Searches != n {
		t.Fatalf("drew %d searches (mix says %d), want %d", len(got), mix.Searches, n)
	}
	seen := map[string]bool{}
	var qs []*search.Query
	for _, s := range got {
		if seen[s] {
			t.Fatalf("%q drawn twice", s)
		}
		seen[s] = true
		q, err := follow.CompileQuery(s)
		if err != nil || q.String() != s {
			t.Fatalf("%q is not a normal form the parser gives back: %v %v", s, q, err)
		}
		qs = append(qs, q)
	}
	hits := make([]int, len(qs))
	for _, h := range search.MatchBatch(qs, preview) {
		for _, qi := range h {
			hits[qi]++
		}
	}
	for i, h := range hits {
		if float64(h)/float64(len(preview)) > MaxShare {
			t.Errorf("%q matches %d of the %d preview papers, more than %.0f%%", got[i], h, len(preview), 100*MaxShare)
		}
	}
	share := func(k int) float64 { return float64(k) / n }
	within := func(name string, got, want, tol float64) {
		if math.Abs(got-want) > tol {
			t.Errorf("%s: %.3f of the searches, want %.3f ± %.3f", name, got, want, tol)
		}
	}
	within("cat:", share(mix.Cat), catShare, 0.03)
	// Refinement and repeats move some single words to more terms.
	within("1 term", share(mix.Terms[1]), termWeights[1]-0.05, 0.07)
	within("4 terms", share(mix.Terms[4]), termWeights[4], 0.05)
	if mix.Terms[0] != 0 || mix.Terms[1]+mix.Terms[2]+mix.Terms[3]+mix.Terms[4] != n {
		t.Errorf("terms per search %v: not all 1–4", mix.Terms)
	}
	for name, k := range map[string]int{"phrase": mix.Phrase, "negation": mix.Negation, "or": mix.Or, "field": mix.Field, "author": mix.Author, "cat or": mix.CatOr, "refined": mix.Refined} {
		if k == 0 {
			t.Errorf("no search with %s", name)
		}
	}
	if mix.FinalShare > mix.DraftShare {
		t.Errorf("refined searches match more (%.4f) than the drafts (%.4f)", mix.FinalShare, mix.DraftShare)
	}
	again, _ := DrawSearches(v, cats, ScaleS.Researchers, preview, n, 3)
	if !slices.Equal(got, again) {
		t.Error("the same seed drew other searches")
	}
}
