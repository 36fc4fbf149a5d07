package bench

import (
	"context"
	"strings"
	"testing"

	"followfeed/match"
	"followfeed/mute"
)

// The digests with the user's controls at a tiny scale through the real
// services: the plan marks papers of the users' windows and of their
// feeds and gives every user mutes of each kind, which their digests'
// selection then leaves out, the controlled
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
	mutes := map[int64]int{}
	for _, m := range plan.Mutes {
		mutes[m.UserID]++
	}
	for _, u := range users {
		if mutes[u] > ControlMutes || mutes[u] == 0 {
			t.Errorf("user %d: %d mutes", u, mutes[u])
		}
	}
	if plan.Kinds[mute.Researcher] == 0 || plan.Kinds[mute.Query] == 0 || plan.Kinds[mute.Category] == 0 || len(plan.Mutes) != plan.Kinds[mute.Researcher]+plan.Kinds[mute.Query]+plan.Kinds[mute.Category] {
		t.Errorf("%d mutes: %v", len(plan.Mutes), plan.Kinds)
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
	if window(true) != all {
		t.Fatal("read state before any was given")
	}
	if err := PutControls(ctx, db, plan); err != nil {
		t.Fatal(err)
	}
	muted := window(false)
	if left := window(true); muted >= all || left >= muted || left < all-plan.InWindow-(all-muted) {
		t.Errorf("the windows' candidates: %d, with the mutes %d, with the read papers too %d (%d marked in the windows)", all, muted, left, plan.InWindow)
	}
	if n, m, err := RemoveControls(ctx, db); err != nil || n != len(plan.Marks) || m != len(plan.Mutes) {
		t.Fatalf("RemoveControls: %d states, %d mutes, %v; want %d, %d", n, m, err, len(plan.Marks), len(plan.Mutes))
	}
	if window(false) != all {
		t.Error("the windows' candidates changed after RemoveControls")
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
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM paper_states) + (SELECT count(*) FROM mutes) + (SELECT count(*) FROM digests)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := left(); n != 0 {
		t.Errorf("%d states, mutes and ledger rows left after the measurement", n)
	}
	// A run that stopped midway leaves them; the next run's start takes
	// them off.
	if err := PutControls(ctx, db, plan); err != nil {
		t.Fatal(err)
	}
	if n, m, err := RemoveControls(ctx, db); err != nil || n != len(plan.Marks) || m != len(plan.Mutes) || left() != 0 {
		t.Errorf("RemoveControls of leftovers: %d, %d, %v; %d left", n, m, err, left())
	}

	if only := plan.Only(true); len(only.Marks) != 0 || len(only.Mutes) != len(plan.Mutes) {
		t.Errorf("the plan's mutes only: %d marks, %d mutes", len(only.Marks), len(only.Mutes))
	}
	reads, err := MeasureDigestsControlled(ctx, db, d.Digester, plan.Only(false), users, mr.FromSeq, mr.ToSeq, 2, 3)
	if err != nil || reads.Sent != len(users) || reads.Listed >= plain.Listed {
		t.Fatalf("digests with read papers only: %+v, %v (without: %d listed)", reads, err, plain.Listed)
	}
	if n := left(); n != 0 {
		t.Errorf("%d states, mutes and ledger rows left after the read papers alone", n)
	}
	f, detail := controlsFigure([]DigestRun{plain}, ControlRuns{Both: []DigestRun{controlled}, Read: []DigestRun{reads}}, plan, len(users))
	t.Logf("%s: %s\n%s", f.Name, f.Result, detail)
	if f.Key != "digests-controls" || f.Value != controlled.Rate || f.Pass != (controlled.Rate >= 0.9*plain.Rate) || !strings.Contains(detail, "inbox.PutStates") || !strings.Contains(detail, "mute.PutMany") || !strings.Contains(detail, "the read papers alone") || !strings.Contains(detail, "the mutes alone not measured") {
		t.Errorf("figure %+v", f)
	}
	slow := plain
	slow.Rate = controlled.Rate * 2
	if f, _ := controlsFigure([]DigestRun{slow}, ControlRuns{Both: []DigestRun{controlled}}, plan, len(users)); f.Pass {
		t.Errorf("half the rate without passes: %+v", f)
	}
}
