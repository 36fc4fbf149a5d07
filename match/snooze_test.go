package match_test

import (
	"slices"
	"testing"
	"time"

	"followfeed/follow"
	"followfeed/match"
)

// TestSnoozedFollowsLeaveDeliveryWindowsOnly: a delivery window (At set)
// leaves out the papers only a snoozed follow matched, keeps a paper
// another follow matches too (with both reasons), and counts what it
// keeps; a feed (no At), or a delivery after the snooze, has them all.
func TestSnoozedFollowsLeaveDeliveryWindowsOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	uid := e.user("sleepy")
	e.follow(uid, "category", "cs.LG", follow.Options{})
	e.follow(uid, "category", "math.AG", follow.Options{})
	now := time.Now()
	lg, _ := follow.ParseTarget("category", "cs.LG")
	until := now.UTC().AddDate(0, 0, 3).Format("2006-01-02")
	if _, err := e.follows.Snooze(e.ctx, uid, lg, &until, now); err != nil {
		t.Fatal(err)
	}
	e.ingest(p("2401.00001", "cs.LG", nil), p("2401.00002", "math.AG", nil), p("2401.00003", "cs.LG", []string{"cs.LG", "math.AG"}))
	high := e.high()
	delivery := match.Query{UserID: uid, AfterSeq: 0, UpToSeq: high, At: now}
	got := e.matched(delivery)
	if want := []string{"2401.00003", "2401.00002"}; !slices.Equal(ids(got), want) {
		t.Fatalf("delivery window: %v, want %v", ids(got), want)
	}
	if r := reasons(got[0]); len(r) != 2 {
		t.Errorf("the paper both follows match: reasons %v", r)
	}
	rs, err := e.m.MatchedMany(e.ctx, []match.Query{delivery})
	if err != nil || rs[0].Total != 2 {
		t.Errorf("total %d (%v), want 2", rs[0].Total, err)
	}
	feed := delivery
	feed.At = time.Time{}
	if n := len(e.matched(feed)); n != 3 {
		t.Errorf("a feed's window has %d papers, want all 3", n)
	}
	later := delivery
	later.At = now.AddDate(0, 0, 4)
	if n := len(e.matched(later)); n != 3 {
		t.Errorf("after the snooze: %d papers, want 3", n)
	}
}
