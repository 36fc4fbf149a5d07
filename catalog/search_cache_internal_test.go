package catalog

import (
	"slices"
	"testing"

	"followfeed/paper"
	"followfeed/search"
)

// setNorms returns the normal forms of a set's searches, in order.
func setNorms(s *search.Set) []string {
	out := make([]string, s.Len())
	for i := range out {
		out[i] = s.String(i)
	}
	return out
}

// The compiled-search cache: the same read reuses the set whole, a read
// with searches added, dropped and reordered gives exactly the read's
// searches in its order (the ones compiled before taken from the old set),
// and a search that no longer parses is left out, also when it comes back
// in the next read.
func TestSearchCacheCompile(t *testing.T) {
	var c searchCache
	first := []string{"graph neural", `"diffusion model" cat:cs.LG`, "(ti:attention OR ti:transformer) cat:cs"}
	s1 := c.compile(first)
	if !slices.Equal(setNorms(s1), first) {
		t.Fatalf("first set %q, want %q", setNorms(s1), first)
	}
	if c.compile(slices.Clone(first)) != s1 {
		t.Fatal("the same read did not reuse the set")
	}
	second := []string{"(ti:attention OR ti:transformer) cat:cs", "cat:cs.ZZ graph", "spectral abs:momentum", "graph neural"}
	s2 := c.compile(second)
	want := []string{second[0], second[2], second[3]}
	if !slices.Equal(setNorms(s2), want) {
		t.Fatalf("second set %q, want %q", setNorms(s2), want)
	}
	if c.compile(slices.Clone(second)) != s2 {
		t.Fatal("the same read with a refused search did not reuse the set")
	}
	third := []string{second[0], "spectral abs:momentum", "cat:cs.ZZ graph", "graph neural"}
	if s3 := c.compile(third); s3 == s2 || !slices.Equal(setNorms(s3), want) {
		t.Fatalf("a read with the refused search elsewhere: %q (reused: %v), want %q", setNorms(s3), s3 == s2, want)
	}
	// The set answers as the parsed searches do.
	d := (&paper.Paper{Title: "Graph neural networks", Abstract: "Spectral methods with momentum.", PrimaryCategory: "cs.LG",
		Categories: []string{"cs.LG"}, Authors: []paper.Author{{Name: "Ana Núñez"}}}).Doc()
	got := c.compile(third).Match([]*search.Doc{d})[0]
	if !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("the paper matches searches %v, want [1 2] (spectral abs:momentum, graph neural)", got)
	}
}

// A stored search that parses into another normal form today (here its
// case and spacing; in production a category alias a newer taxonomy
// resolves) keeps the text it was read with: its hits go under the key
// its followers follow, and the same read still reuses the set.
func TestSearchCacheKeepsTheStoredText(t *testing.T) {
	var c searchCache
	stored := []string{"Graph   NEURAL", "spectral abs:momentum"}
	s := c.compile(stored)
	if !slices.Equal(setNorms(s), stored) {
		t.Fatalf("set names %q, want the stored texts %q", setNorms(s), stored)
	}
	m := searchMatches{set: s}
	if got, want := m.key(0), "query:Graph   NEURAL"; got != want {
		t.Fatalf("match key %q, want %q (the followed key)", got, want)
	}
	if c.compile(slices.Clone(stored)) != s {
		t.Fatal("the same read did not reuse the set")
	}
	d := (&paper.Paper{Title: "Graph neural networks", PrimaryCategory: "cs.LG", Categories: []string{"cs.LG"}}).Doc()
	if got := s.Match([]*search.Doc{d})[0]; !slices.Equal(got, []int32{0}) {
		t.Fatalf("the paper matches searches %v, want [0]", got)
	}
}
