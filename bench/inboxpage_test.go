package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The inbox page at a tiny scale through the real handler: every sampled
// user signs in and gets their inbox listing papers, the figure is judged
// by its target, and signing in and reading the page change no user and
// no feed row.
func TestMeasureInboxLeavesTheDataset(t *testing.T) {
	t.Parallel()
	d, _ := tiny(t, Scale{Users: 30, CategoryFollow: 2, ResearcherFoll: 3, Papers: 1500, Researchers: 60, AuthorsPer: 2, AbstractChars: 300})
	db, ctx := d.DB, context.Background()
	users, err := SampleUsers(ctx, db, 10)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT md5(string_agg(u::text, ',' ORDER BY id)) FROM users u)
			|| (SELECT md5(string_agg(f::text, ',' ORDER BY user_id)) FROM user_feeds f)
			|| (SELECT count(*) FROM paper_states)::text`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	res, err := MeasureInbox(ctx, d, users)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Renders) != len(users) || res.Size == 0 || res.Papers == 0 || res.Papers > inboxPageSize {
		t.Errorf("%d renders, %d bytes, %.1f papers", len(res.Renders), res.Size, res.Papers)
	}
	if after := snapshot(); after != before {
		t.Errorf("the users or their feed rows changed: %s, then %s", before, after)
	}
	f, detail := inboxFigure(Levels[0].Targets, res)
	t.Logf("%s: %s\n%s", f.Name, f.Result, detail)
	if f.Key != "inbox" || f.Value <= 0 || f.Pass != (f.Value <= 15) || !strings.Contains(detail, "POST /login") {
		t.Errorf("figure %+v", f)
	}
	if tight, _ := inboxFigure(Targets{Inbox: time.Nanosecond}, res); tight.Pass {
		t.Errorf("a 1 ns target passes: %+v", tight)
	}
	// A secret the handler does not know signs nobody in.
	d.AuthSecret = []byte(strings.Repeat("x", 40))
	if _, err := MeasureInbox(ctx, d, users[:1]); err == nil {
		t.Error("signing in with another secret worked")
	}
}
