package bench

import (
	"context"
	"strings"
	"testing"

	"followfeed/match"
)

// The digests with the reader's controls at a tiny scale through the real
// services: the plan marks papers of the readers' windows (which their
// digests' selection then leaves out) and of their feeds, the controlled
// digests are all sent, listing fewer papers than without, and nothing
// of the controls is left afterwards, nor after a run that starts on
// leftovers.
func TestMeasureControlsLeavesTheDataset(t *testing.T) {
	t.Parallel()
	s := Scale{Users: 40, CategoryFollow: 2, ResearcherFoll: 3, Papers: 2000, Researchers: 80, AuthorsPer: 2, AbstractChars: 300}
	d, _ := tiny(t, s)
	db, ctx := d.DB, context.Background()
	v, err := NewVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := MeasureMatch(ctx, db, d.Papers, d.Matcher, batchPapers(300, s, v, 1))
	defer RemoveBatch(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	users, err := SampleUsers(ctx, db, 12)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanControls(ctx, d.Matcher, users, mr.FromSeq, mr.ToSeq)
	if err != nil {
		t.Fatal(err)
	}
	perUser := map[int64]int{}
	states := map[string]int{}
	for _, m := range plan.Marks {
		perUser[m.UserID]++
		states[string(m.State)]++
	}
	if plan.Users != len(users) || len(perUser) != len(users) || plan.InWindow == 0 || plan.InWindow >= len(plan.Marks) || states["read"] == 0 || states["done"] == 0 {
		t.Fatalf("plan: %d users (%d with marks), %d marks (%v), %d in the windows", plan.Users, len(perUser), len(plan.Marks), states, plan.InWindow)
	}
	for u, n := range perUser {
		if n > ControlRead {
			t.Errorf("user %d: %d marks", u, n)
		}
	}

	// In place, the marks of the windows leave the digests' selection.
	window := func(unread bool) int {
		qs := make([]match.Query, len(users))
		for i, u := range users {
			qs[i] = match.Query{UserID: u, AfterSeq: mr.FromSeq - 1, UpToSeq: mr.ToSeq, Limit: windowCandidates, IDsOnly: true, Unread: unread}
		}
		rs, err := d.Matcher.MatchedMany(ctx, qs)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rs {
			n += len(r.Papers)
		}
		return n
	}
	all := window(false)
	if err := PutControls(ctx, db, plan); err != nil {
		t.Fatal(err)
	}
	if left := window(true); left != all-plan.InWindow {
		t.Errorf("the windows' candidates with the controls in place: %d of %d, want %d fewer", left, all, plan.InWindow)
	}
	if n, err := RemoveControls(ctx, db); err != nil || n != len(plan.Marks) {
		t.Fatalf("RemoveControls: %d, %v; want %d", n, err, len(plan.Marks))
	}

	plain, err := MeasureDigests(ctx, db, d.Digester, users, mr.FromSeq, mr.ToSeq, 2, 3)
	if err != nil || plain.Sent != len(users) {
		t.Fatalf("digests: %+v, %v", plain, err)
	}
	controlled, err := MeasureDigestsControlled(ctx, db, d.Digester, plan, users, mr.FromSeq, mr.ToSeq, 2, 3)
	if err != nil || controlled.Sent != len(users) || controlled.Listed >= plain.Listed || controlled.Listed == 0 {
		t.Fatalf("digests with controls: %+v, %v (without: %d listed)", controlled, err, plain.Listed)
	}
	left := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM paper_states) + (SELECT count(*) FROM digests)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := left(); n != 0 {
		t.Errorf("%d states and ledger rows left after the measurement", n)
	}
	// A run that stopped midway leaves them; the next run's start takes
	// them off.
	if err := PutControls(ctx, db, plan); err != nil {
		t.Fatal(err)
	}
	if n, err := RemoveControls(ctx, db); err != nil || n != len(plan.Marks) || left() != 0 {
		t.Errorf("RemoveControls of leftovers: %d, %v; %d left", n, err, left())
	}

	f, detail := controlsFigure([]DigestRun{plain}, []DigestRun{controlled}, plan, len(users))
	t.Logf("%s: %s\n%s", f.Name, f.Result, detail)
	if f.Key != "digests-controls" || f.Value != controlled.Rate || f.Pass != (controlled.Rate >= 0.9*plain.Rate) || !strings.Contains(detail, "inbox.PutStates") {
		t.Errorf("figure %+v", f)
	}
	slow := plain
	slow.Rate = controlled.Rate * 2
	if f, _ := controlsFigure([]DigestRun{slow}, []DigestRun{controlled}, plan, len(users)); f.Pass {
		t.Errorf("half the rate without passes: %+v", f)
	}
}
