package notify_test

import (
	"testing"
	"time"

	"followfeed/follow"
	"followfeed/match"
	"followfeed/notify"
)

// TestGroupPapersSpecificityRanks pins the order of specificity a paper's
// group is chosen by: a researcher, then an institution, then a category,
// then a whole archive, whatever order the follows were made in. The
// follows are made least specific first, so any tie in the ranks (the
// earlier follow wins a tie) or any swap moves a paper to another group.
func TestGroupPapersSpecificityRanks(t *testing.T) {
	archive := follow.Target{Kind: follow.Category, ID: "cs"}
	category := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	institution := follow.Target{Kind: follow.Institution, ID: "ror:03dbr7087"}
	researcher := follow.Target{Kind: follow.Researcher, ID: "openalex:A5023888391"}
	if !archive.IsArchive() || category.IsArchive() {
		t.Fatal("taxonomy: cs should be an archive and cs.LG not")
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	follows := []follow.Follow{
		{Target: archive, Label: "archive", CreatedAt: t0},
		{Target: category, Label: "category", CreatedAt: t0.Add(time.Hour)},
		{Target: institution, Label: "institution", CreatedAt: t0.Add(2 * time.Hour)},
		{Target: researcher, Label: "researcher", CreatedAt: t0.Add(3 * time.Hour)},
	}
	papers := []match.Paper{
		{ID: 1, Reasons: []follow.Target{archive, category}},              // category
		{ID: 2, Reasons: []follow.Target{category, institution}},          // institution, not category
		{ID: 3, Reasons: []follow.Target{institution, researcher}},        // researcher, not institution
		{ID: 4, Reasons: []follow.Target{archive, institution}},           // institution, not archive
		{ID: 5, Reasons: []follow.Target{archive}},                        // archive
		{ID: 6, Reasons: []follow.Target{institution, archive}},           // institution
		{ID: 7, Reasons: []follow.Target{researcher, category}},           // researcher
		{ID: 8, Reasons: []follow.Target{category, archive, institution}}, // institution
	}
	c := notify.GroupPapers(match.Result{Papers: papers, Total: len(papers)}, follows)
	got := map[string][]int64{}
	var order []string
	for _, g := range c.Groups {
		order = append(order, g.Name)
		for _, p := range g.Papers {
			got[g.Name] = append(got[g.Name], p.ID)
		}
	}
	want := map[string][]int64{"researcher": {3, 7}, "institution": {2, 4, 6, 8}, "category": {1}, "archive": {5}}
	for name, ids := range want {
		if len(got[name]) != len(ids) {
			t.Errorf("group %s has papers %v, want %v", name, got[name], ids)
			continue
		}
		for i := range ids {
			if got[name][i] != ids[i] {
				t.Errorf("group %s has papers %v, want %v", name, got[name], ids)
				break
			}
		}
	}
	if len(order) != 4 || order[0] != "researcher" || order[1] != "institution" || order[2] != "category" || order[3] != "archive" {
		t.Errorf("groups in order %v, want researcher, institution, category, archive", order)
	}
}
