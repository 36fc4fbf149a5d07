package match_test

import (
	"fmt"
	"slices"
	"testing"

	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/match"
)

// markedFixture is a user following cs.LG with n papers of cs.LG stored
// one batch each (2611.00001 oldest), the high seq before them, and the
// inbox to mark them with.
func markedFixture(t *testing.T, n int) (e *env, ib *inbox.Service, uid int64, before int64) {
	e = setup(t)
	ib = inbox.New(e.db, e.m)
	uid = e.user("reader")
	e.follow(uid, "category", "cs.LG", follow.Options{})
	before = e.high()
	for i := 1; i <= n; i++ {
		e.ingest(p(fmt.Sprintf("2611.%05d", i), "cs.LG", []string{"cs.LG"}))
	}
	return e, ib, uid, before
}

func mark(t *testing.T, e *env, ib *inbox.Service, uid int64, st inbox.State, arxivIDs ...string) {
	t.Helper()
	for _, id := range arxivIDs {
		if _, err := ib.Set(e.ctx, uid, id, st); err != nil {
			t.Fatal(err)
		}
	}
}

// A query with Unread leaves out the papers the user marked read or
// done, on both paths of a bounded window (digests, alerts, channels:
// the windowed one and the per-user statement), with Total counting only
// the papers kept and Limit filled from the unmarked ones; another user
// and a query without Unread see every paper; marking a paper unread
// again brings it back.
func TestUnreadLeavesMarkedPapersOut(t *testing.T) {
	t.Parallel()
	e, ib, uid, before := markedFixture(t, 6)
	other := e.user("other")
	e.follow(other, "category", "cs.LG", follow.Options{})
	mark(t, e, ib, uid, inbox.Read, "2611.00006")
	mark(t, e, ib, uid, inbox.Done, "2611.00004")
	high := e.high()
	qs := []match.Query{
		{UserID: uid, AfterSeq: before, UpToSeq: high, Unread: true, IDsOnly: true},
		{UserID: uid, AfterSeq: before, UpToSeq: high, Unread: true, Limit: 2},
		{UserID: uid, AfterSeq: before, UpToSeq: high},
		{UserID: other, AfterSeq: before, UpToSeq: high, Unread: true},
	}
	want := []struct {
		ids   []string
		total int
	}{
		{[]string{"2611.00005", "2611.00003", "2611.00002", "2611.00001"}, 4},
		{[]string{"2611.00005", "2611.00003"}, 4},
		{[]string{"2611.00006", "2611.00005", "2611.00004", "2611.00003", "2611.00002", "2611.00001"}, 6},
		{[]string{"2611.00006", "2611.00005", "2611.00004", "2611.00003", "2611.00002", "2611.00001"}, 6},
	}
	windowed, err := e.m.MatchedMany(e.ctx, qs)
	if err != nil {
		t.Fatal(err)
	}
	perUser, err := match.PerUserMatchedMany(e.m, e.ctx, qs)
	if err != nil {
		t.Fatal(err)
	}
	for path, rs := range map[string][]match.Result{"windowed": windowed, "per-user": perUser} {
		for i, r := range rs {
			got := make([]string, 0, len(r.Papers))
			for _, p := range r.Papers {
				got = append(got, fmt.Sprintf("2611.%05d", paperNumber(t, e, p.ID)))
				if len(p.Reasons) != 1 || p.Reasons[0].Key() != "category:cs.LG" {
					t.Errorf("%s query %d: paper %d has reasons %v", path, i, p.ID, p.Reasons)
				}
			}
			if !slices.Equal(got, want[i].ids) || r.Total != want[i].total {
				t.Errorf("%s query %d: %v (total %d), want %v (total %d)", path, i, got, r.Total, want[i].ids, want[i].total)
			}
		}
	}

	mark(t, e, ib, uid, inbox.Unread, "2611.00006")
	r, err := e.m.Matched(e.ctx, qs[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 5 || len(r.Papers) != 5 {
		t.Errorf("after marking 2611.00006 unread again: %d papers, total %d; want 5", len(r.Papers), r.Total)
	}
}

// paperNumber is the number of the fixture's paper id.
func paperNumber(t *testing.T, e *env, id int64) int {
	t.Helper()
	var arxivID string
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT arxiv_id FROM papers WHERE id = $1`, id).Scan(&arxivID); err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscanf(arxivID, "2611.%05d", &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// "Ever" (a feed's newest Limit) with Unread gives Limit unread papers
// even when the user marked every one of the newest papers read or
// done: the selection's per-key reads skip marked papers, so the feed is
// not cut short by them.
func TestUnreadEverFillsTheLimit(t *testing.T) {
	t.Parallel()
	e, ib, uid, _ := markedFixture(t, 30)
	for i := 11; i <= 30; i++ {
		st := inbox.Read
		if i%2 == 0 {
			st = inbox.Done
		}
		mark(t, e, ib, uid, st, fmt.Sprintf("2611.%05d", i))
	}
	got := ids(e.matched(match.Query{UserID: uid, Limit: 5, Unread: true}))
	want := []string{"2611.00010", "2611.00009", "2611.00008", "2611.00007", "2611.00006"}
	if !slices.Equal(got, want) {
		t.Errorf("the newest 5 unread: %v, want %v", got, want)
	}
	if got := ids(e.matched(match.Query{UserID: uid, Limit: 5})); !slices.Equal(got, []string{"2611.00030", "2611.00029", "2611.00028", "2611.00027", "2611.00026"}) {
		t.Errorf("without Unread: %v", got)
	}
}
