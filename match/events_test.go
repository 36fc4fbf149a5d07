package match_test

import (
	"slices"
	"testing"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/paper"
)

// eventRows lists the event rows of key as "event detail" strings, oldest
// first.
func (e *env) eventRows(key string) []string {
	return e.rows(`SELECT rtrim(event || ' ' || coalesce(detail, '')) FROM paper_keys WHERE key = $1 AND event <> '' ORDER BY seq`, key)
}

// The events of a followed paper: each is one key row, told once, with its
// own reason and item id, in feeds (no window) and digests (a window), also
// to a user who saw the paper through another follow; a record that
// changes nothing is no event.
func TestPaperFollowEvents(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reader, other := e.user("reader"), e.user("other")
	e.follow(reader, "paper", "2609.00010v1", follow.Options{})
	e.follow(reader, "category", "cs.LG", follow.Options{}) // sees the paper as a new cs.LG paper too
	e.follow(other, "category", "cs.LG", follow.Options{})
	key := "paper:2609.00010"
	var f bool
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT include_replacements FROM follows WHERE key = $1`, key).Scan(&f); err != nil || !f {
		t.Fatalf("a paper follow must include replacements: %v %v", f, err)
	}

	v1 := testpaper.New("2609.00010v1", func(p *paper.Paper) { p.Comments = "8 pages" })
	e.ingest(v1)
	e.ingest(v1) // the same record again
	if got := e.eventRows(key); len(got) != 0 {
		t.Fatalf("the first version and an unchanged record are no events: %q", got)
	}

	reasonsOf := func(p match.Paper) []string {
		var out []string
		for _, r := range p.Reasons {
			out = append(out, p.ReasonName(r, ""))
		}
		return out
	}
	step := func(name string, ps []paper.Paper, wantEvent, wantReason string) {
		t.Helper()
		w := e.high()
		e.ingest(ps...)
		// The digest's window: just this record.
		got := e.matched(match.Query{UserID: reader, AfterSeq: w, UpToSeq: e.high()})
		if len(got) != 1 || got[0].ArxivID != "2609.00010" || got[0].EventID() != wantEvent ||
			!slices.Contains(reasonsOf(got[0]), wantReason) {
			t.Fatalf("%s: window %+v, want event %q and reason %q", name, got, wantEvent, wantReason)
		}
		// The feed: the newest event names the item.
		feed := e.matched(match.Query{UserID: reader})
		if len(feed) != 1 || feed[0].EventID() != wantEvent {
			t.Fatalf("%s: feed %+v", name, feed)
		}
		// A user without the paper follow hears of no event.
		if got := e.matched(match.Query{UserID: other, AfterSeq: w, UpToSeq: e.high()}); len(got) != 0 {
			t.Errorf("%s: the category follower was told: %+v", name, got)
		}
		// The same record again is no event.
		before := len(e.eventRows(key))
		e.ingest(ps...)
		if n := len(e.eventRows(key)); n != before {
			t.Errorf("%s: the same record again wrote %d event rows", name, n-before)
		}
	}
	v2 := testpaper.New("2609.00010v2", func(p *paper.Paper) { p.Comments = "12 pages, accepted at ICML" })
	step("new version", []paper.Paper{v2}, "v2", "New version v2 of A paper called 2609.00010 (comments: 12 pages, accepted at ICML)")
	pub := v2
	pub.JournalRef = "Phys. Rev. X 16, 011001 (2026)"
	step("publication", []paper.Paper{pub}, "published", "Published in Phys. Rev. X 16, 011001 (2026)")
	v3 := testpaper.New("2609.00010v3", func(p *paper.Paper) {
		p.Comments = "12 pages, accepted at ICML"
		p.JournalRef = "Phys. Rev. X 16, 011001 (2026)"
		p.DOI = "10.1103/PhysRevX.16.011001"
	})
	step("a version with unchanged comments", []paper.Paper{v3}, "v3", "New version v3 of A paper called 2609.00010")

	want := []string{"version 12 pages, accepted at ICML", "published Phys. Rev. X 16, 011001 (2026)", "version"}
	if got := e.eventRows(key); !slices.Equal(got, want) {
		t.Errorf("event rows %q, want %q", got, want)
	}

	// Withdrawal (an OAI-PMH deleted record): the paper's key rows go, its
	// followers are told.
	w := e.high()
	res, err := e.in.Ingest(e.ctx, []paper.Paper{{ArxivID: "2609.00010", Deleted: true}}, catalog.SourceOAI)
	if err != nil || res.Deleted != 1 {
		t.Fatalf("withdrawal: %+v %v", res, err)
	}
	got := e.matched(match.Query{UserID: reader, AfterSeq: w, UpToSeq: e.high()})
	if len(got) != 1 || got[0].EventID() != "withdrawn" || !slices.Contains(reasonsOf(got[0]), "Withdrawn: A paper called 2609.00010") {
		t.Fatalf("withdrawal: %+v", got)
	}
	if got := e.matched(match.Query{UserID: other}); len(got) != 0 {
		t.Errorf("a withdrawn paper stays in a category feed: %+v", got)
	}
	if got := e.eventRows(key); !slices.Equal(got, []string{"withdrawn"}) {
		t.Errorf("event rows after the withdrawal %q", got)
	}
}
