package search

import (
	"slices"
	"testing"
)

func TestStemsAreTheWordsADocIndexes(t *testing.T) {
	title := `Schr\"odinger's self-supervised {G}aussian galaxies in M\"{u}ller--Straße clusters`
	got := Stems(title, nil)
	want := []string{"schroding", "selfsupervis", "self", "supervis", "gaussian", "galaxi", "in", "muller", "strass", "cluster"}
	if !slices.Equal(got, want) {
		t.Errorf("Stems = %q, want %q", got, want)
	}
	// Every stem is a word of the Doc's title, in the Doc's own vocab.
	d := NewDoc(title, "", nil, nil)
	for _, s := range got {
		id, ok := d.vocab.lookup(s)
		if !ok || !d.title.has(id) {
			t.Errorf("stem %q is not a word of the Doc's title", s)
		}
	}
	if n := len(d.title.ids); n != len(slices.Compact(slices.Sorted(slices.Values(got)))) {
		t.Errorf("the Doc's title has %d distinct words, Stems gives %d", n, len(got))
	}
	if got := Stems("", []string{"x"}); !slices.Equal(got, []string{"x"}) {
		t.Errorf("Stems of nothing changed dst: %q", got)
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		`M\"uller, J.`:      "muller, j.",
		"MÜLLER":            "muller",
		"Ørsted Łukasz":     "orsted lukasz",
		`Jos\'{e} Garc\'ia`: "jose garcia",
		"":                  "",
	} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}
