package ranking

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"followfeed/paper"
	"followfeed/relevance"
)

// TestTrainingsKeepTheSharedVectors: the vectors surfaces rank stay cached
// whatever the trainings read (their examples have a quarter of the
// cache to themselves), a user's next training finds its examples, and an
// example a surface ranks becomes shared.
func TestTrainingsKeepTheSharedVectors(t *testing.T) {
	ctx := context.Background()
	tx := newTexts(nil, relevance.DefaultParams(), 0, 0, 8) // 6 shared, 2 examples
	g := &generation{corpus: relevance.NewCorpus(relevance.DefaultParams())}
	tx.swap(g)
	have := map[int64]*paper.Paper{}
	for id := int64(1); id <= 30; id++ {
		have[id] = &paper.Paper{ArxivID: fmt.Sprintf("2401.%05d", id), Title: fmt.Sprintf("Paper %d on pulsar timing", id),
			Abstract: "We time pulsars."}
	}
	read := func(use vectorUse, ids ...int64) map[int64]*relevance.Vector {
		t.Helper()
		for _, id := range ids { // one at a time: a call keeps its vectors in no set order
			if _, err := tx.vectors(ctx, g, []int64{id}, have, use); err != nil {
				t.Fatal(err)
			}
		}
		out, err := tx.vectors(ctx, g, ids, have, use)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cached := func(id int64) (shared, ok bool) {
		e, ok := tx.vecs[id]
		if !ok {
			return false, false
		}
		return e.Value.(*cachedVector).shared, true
	}
	ranked := read(forRanking, 1, 2, 3, 4, 5, 6)
	read(forTraining, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	for id := int64(1); id <= 6; id++ {
		if shared, ok := cached(id); !ok || !shared {
			t.Errorf("ranked paper %d after the trainings: cached %v, shared %v", id, ok, shared)
		}
	}
	if got := read(forRanking, 1)[1]; got != ranked[1] {
		t.Error("a ranked paper's vector was made again")
	}
	// The last trainings' examples are found again, and stay examples.
	again := read(forTraining, 19, 20)
	if again[19] != read(forTraining, 19)[19] {
		t.Error("a training's example was made again")
	}
	if shared, ok := cached(20); !ok || shared {
		t.Errorf("example 20: cached %v, shared %v", ok, shared)
	}
	if _, ok := cached(11); ok {
		t.Error("the examples hold more than their quarter")
	}
	// Ranked, an example becomes shared, and the least recent shared
	// vector (2: 1 was read since) makes room.
	read(forRanking, 20)
	if shared, ok := cached(20); !ok || !shared {
		t.Errorf("example 20 after a ranking: cached %v, shared %v", ok, shared)
	}
	if _, ok := cached(2); ok {
		t.Error("the shared vectors hold more than their cap")
	}
	if n := tx.shared.Len() + tx.examples.Len(); n != len(tx.vecs) || n > 8 {
		t.Errorf("%d vectors listed, %d mapped (at most 8)", n, len(tx.vecs))
	}
}

// TestKeptLexiconHoldsTheBatchsVectors: the kept lexicon serves a batch
// only with the very vectors the batch has (a paper's vector made again,
// after a new corpus, has other values): otherwise the batch gets a new
// lexicon, made of its own vectors.
func TestKeptLexiconHoldsTheBatchsVectors(t *testing.T) {
	c := relevance.NewCorpus(relevance.DefaultParams())
	vectors := func(ids []int64) map[int64]*relevance.Vector {
		out := map[int64]*relevance.Vector{}
		for _, id := range ids {
			out[id] = c.Vector(&relevance.Paper{ID: fmt.Sprintf("2401.%05d", id), Title: fmt.Sprintf("Paper %d on pulsar timing", id), Abstract: "We time pulsars."})
		}
		return out
	}
	ids := []int64{1, 2, 3, 4}
	var kept lexicons
	first := vectors(ids)
	lex, _ := kept.of(ids, first)
	if again, _ := kept.of(ids[:2], first); again != lex {
		t.Fatal("the same vectors made another lexicon")
	}
	remade := vectors(ids[:2])
	lex2, at := kept.of(ids[:2], remade)
	if lex2 == lex {
		t.Fatal("a batch with papers' vectors made again was served the lexicon of the old ones")
	}
	for _, id := range ids[:2] {
		if lex2.Vector(at[id]) != remade[id] {
			t.Errorf("paper %d: the new lexicon holds another vector than the batch's", id)
		}
	}
}

// TestRankingReadsThePrimaryCategoryFirst: the paper ranking reads has its
// primary category first (a mark's topic), whatever order the row keeps
// its categories in, each once.
func TestRankingReadsThePrimaryCategoryFirst(t *testing.T) {
	for _, tc := range []struct {
		primary string
		cats    []string
		want    []string
	}{
		{"astro-ph.CO", []string{"astro-ph.CO", "gr-qc"}, []string{"astro-ph.CO", "gr-qc"}},
		{"astro-ph.CO", []string{"gr-qc", "astro-ph.CO", "hep-th"}, []string{"astro-ph.CO", "gr-qc", "hep-th"}},
		{"astro-ph.CO", []string{"gr-qc"}, []string{"astro-ph.CO", "gr-qc"}},
		{"astro-ph.CO", nil, []string{"astro-ph.CO"}},
		{"", []string{"gr-qc", "hep-th"}, []string{"gr-qc", "hep-th"}},
	} {
		got := toRelevance(&paper.Paper{ArxivID: "2401.00001", PrimaryCategory: tc.primary, Categories: tc.cats}).Categories
		if !slices.Equal(got, tc.want) {
			t.Errorf("primary %q, categories %v: ranking reads %v, want %v", tc.primary, tc.cats, got, tc.want)
		}
	}
}
