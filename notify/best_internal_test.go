package notify

import (
	"testing"

	"followfeed/follow"
	"followfeed/match"
)

// TestPlanBestNeverListsMoreThanAMailHolds: papers a kept follow brings
// pass a small budget, but not the mail's bound (MaxPapersLimit): the
// ones past it are counted, like any paper not listed.
func TestPlanBestNeverListsMoreThanAMailHolds(t *testing.T) {
	person, _ := follow.ParseTarget("researcher", "host:1")
	var res match.Result
	var ranked []int64
	for i := range int64(MaxPapersLimit + 25) {
		res.Papers = append(res.Papers, match.Paper{ID: i + 1, Seq: i + 1, Reasons: []follow.Target{person}})
		ranked = append(ranked, i+1)
	}
	res.Total = len(res.Papers)
	plan := planBest(res, []follow.Follow{{Target: person}}, ranked, 5, true, false)
	if len(plan.groups) != 1 || len(plan.groups[0].papers) != MaxPapersLimit || plan.omitted != 25 {
		t.Fatalf("%d groups, %d listed, %d omitted; want %d listed, 25 omitted", len(plan.groups), len(plan.groups[0].papers), plan.omitted, MaxPapersLimit)
	}
	if plan.groups[0].papers[0].ID != 1 || plan.groups[0].papers[MaxPapersLimit-1].ID != MaxPapersLimit {
		t.Error("the best kept papers are not the ones listed")
	}
	// Without keep, the budget holds.
	if plan := planBest(res, []follow.Follow{{Target: person}}, ranked, 5, false, false); len(plan.groups[0].papers) != 5 || plan.omitted != MaxPapersLimit+20 {
		t.Errorf("keep false: %d listed, %d omitted", len(plan.groups[0].papers), plan.omitted)
	}
}
