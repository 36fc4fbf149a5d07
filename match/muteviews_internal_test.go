package match

import (
	"testing"

	"followfeed/follow"
	"followfeed/paper"
)

// TestViewsKeepTwoGenerations: a view is found under its id and version
// only; a full generation becomes the previous one, whose views are still
// found (and move to the current one); a view in neither is forgotten.
func TestViewsKeepTwoGenerations(t *testing.T) {
	c := newViews(2)
	v := func(version uint32) *muteView {
		return newMuteView(&paper.Paper{Title: "A title", PrimaryCategory: "cs.LG", Categories: []string{"cs.LG"}}, version)
	}
	one := v(7)
	c.put(1, one)
	if c.get(1, 7) != one || c.get(1, 8) != nil || c.get(2, 7) != nil {
		t.Fatal("a view is found by its id and version only")
	}
	c.put(2, v(1))
	c.put(3, v(1)) // the current generation (1, 2) is full: it becomes the previous one
	if c.get(1, 7) != one {
		t.Fatal("a view of the previous generation is found")
	}
	// 1 moved to the current generation (3, 1), so 2 is the previous one's
	// only view; two more fill the current one and forget 2.
	c.put(4, v(1))
	c.put(5, v(1))
	if c.get(2, 1) != nil {
		t.Error("a view two generations old is still kept")
	}
	if c.get(1, 7) == nil && c.get(4, 1) == nil {
		t.Error("the newest views are gone")
	}
	if n := c.c.Len(); n > 2*2 {
		t.Errorf("%d views kept, more than two generations of 2", n)
	}
}

// TestMuteViewWordsAreMadeOnce: a view's words are made on first use and
// the text they are made of is dropped.
func TestMuteViewWordsAreMadeOnce(t *testing.T) {
	mv := newMuteView(&paper.Paper{Title: "Dark matter halos", Abstract: "We weigh them.", PrimaryCategory: "astro-ph.CO", Categories: []string{"astro-ph.CO"}}, 1)
	d := mv.words()
	if d == nil || mv.words() != d || mv.text != nil {
		t.Errorf("words: %p then %p, text kept: %v", d, mv.words(), mv.text != nil)
	}
	if len(mv.keys) == 0 {
		t.Error("no keys")
	}
}

// TestCompiledMutesAreParsedOnce: a query mute's key is compiled once per
// process and its query shared; a key that does not compile is nil, and
// stays nil.
func TestCompiledMutesAreParsedOnce(t *testing.T) {
	key := follow.Target{Kind: follow.Query, ID: `ti:"dark matter"`}.Key()
	q := compiledMute(key)
	if q == nil || q.String() != `ti:"dark matter"` {
		t.Fatalf("compiledMute(%q) = %v", key, q)
	}
	if again := compiledMute(key); again != q {
		t.Error("the same key was compiled again")
	}
	for _, bad := range []string{"query:ti:(", "category:cs.LG", "nonsense"} {
		if q := compiledMute(bad); q != nil {
			t.Errorf("compiledMute(%q) = %q, want nil", bad, q)
		}
	}
}

// TestCategoryMuteIsProbedForCrossListsOnly: a category mute (its
// cross-lists) is indexed under the hash a view gives a cross-listed key,
// so a paper listed in the category as its own finds no rule to probe,
// while one cross-listed there does, and a muted person's keys are found
// as they are.
func TestCategoryMuteIsProbedForCrossListsOnly(t *testing.T) {
	um := &userMutes{rules: []*muteRule{
		{id: 1, kind: "category", key: "category:astro-ph.GA"},
		{id: 2, kind: "researcher", key: "researcher:ann", keys: map[string]bool{"researcher:ann": true}},
	}}
	um.index()
	own := newMuteView(&paper.Paper{Title: "T", PrimaryCategory: "astro-ph.GA", Categories: []string{"astro-ph.GA"}}, 1)
	cross := newMuteView(&paper.Paper{Title: "T", PrimaryCategory: "astro-ph.CO", Categories: []string{"astro-ph.CO", "astro-ph.GA"}}, 1)
	probes := func(v *muteView, key string) int {
		for i, k := range v.keys {
			if k.Key == key {
				return len(um.byKey[v.keyHashes[i]])
			}
		}
		t.Fatalf("the paper has no key %s: %v", key, v.keys)
		return 0
	}
	if n := probes(own, "category:astro-ph.GA"); n != 0 {
		t.Errorf("a paper listed in the muted category as its own probes %d rules", n)
	}
	if n := probes(cross, "category:astro-ph.GA"); n != 1 {
		t.Errorf("a paper cross-listed in the muted category probes %d rules, want 1", n)
	}
	if len(um.byKey[viewKeyHash(paper.Key{Key: "researcher:ann"})]) != 1 {
		t.Error("a muted person's key is not found as it is")
	}
	if !keep(um, "", &Paper{}, own, nil) || keep(um, "", &Paper{}, cross, nil) {
		t.Error("the category mute must hide the cross-list only")
	}
}
