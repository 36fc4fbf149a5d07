package match_test

import (
	"slices"
	"testing"

	"followfeed/follow"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/paper"
)

// hitRows lists the search_hits rows of key as (paper count, replacement,
// new_paper), oldest first.
func (e *env) hitRows(key string) [][3]any {
	rows, err := e.db.Pool.Query(e.ctx, `SELECT cardinality(paper_ids), replacement, new_paper FROM search_hits WHERE key = $1 ORDER BY seq`, key)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out [][3]any
	for rows.Next() {
		var n int
		var r, np bool
		if err := rows.Scan(&n, &r, &np); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, [3]any{n, r, np})
	}
	return out
}

func titled(id, title string) paper.Paper {
	return testpaper.New(id, func(p *paper.Paper) { p.Title = title })
}

// A batch's matches of a search are one search_hits row listing its
// papers (not a key row per paper), inside the batch's seq range; a new
// version writes a replacement row, a withdrawal takes the paper out of
// its rows (and a row left empty goes), and the match job counts the
// search's followers as affected.
func TestSearchHitsOneRowPerSearchAndBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reader := e.user("reader")
	e.follow(reader, "query", "diffusion", follow.Options{})
	key := "query:diffusion"
	res := e.ingest(titled("2611.00001v1", "Diffusion models for graphs"), titled("2611.00002v1", "Score diffusion"),
		titled("2611.00003v1", "Transformers"), titled("2611.00004v1", "Diffusion again"))
	if got := e.hitRows(key); !slices.Equal(got, [][3]any{{3, false, true}}) {
		t.Fatalf("rows of the batch: %v, want one row of 3 new papers", got)
	}
	if res.Hits != 3 {
		t.Errorf("IngestResult.Hits = %d, want 3", res.Hits)
	}
	if n := testpaper.Count(t, e.db, `SELECT count(*) FROM paper_keys WHERE key LIKE 'query:%'`); n != 0 {
		t.Errorf("%d query: key rows in paper_keys", n)
	}
	if n := testpaper.Count(t, e.db, `SELECT count(*) FROM search_hits WHERE seq BETWEEN $1 AND $2`, res.FromSeq, res.ToSeq); n != 1 {
		t.Errorf("the hit row is not inside the batch's seq range %d..%d", res.FromSeq, res.ToSeq)
	}
	br, err := e.m.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(br.Users, reader) || !slices.Contains(br.NewKeys, key) {
		t.Errorf("match job: users %v, new keys %v; want the search's follower and its key", br.Users, br.NewKeys)
	}

	// A new version of a matched paper: a replacement row; a stored paper
	// whose new text matches: a new (not new_paper) match.
	e.ingest(titled("2611.00001v2", "Diffusion models for graphs, revised"), titled("2611.00003v2", "Transformers and diffusion"))
	if got := e.hitRows(key); !slices.Equal(got, [][3]any{{3, false, true}, {1, false, false}, {1, true, false}}) {
		t.Fatalf("rows after two new versions: %v", got)
	}
	// The same records again write nothing.
	e.ingest(titled("2611.00001v2", "Diffusion models for graphs, revised"), titled("2611.00003v2", "Transformers and diffusion"))
	if got := e.hitRows(key); len(got) != 3 {
		t.Fatalf("the same records again wrote rows: %v", got)
	}

	// Withdrawals: 2611.00003 was alone in its row, which goes.
	gone := func(id string) paper.Paper { p := testpaper.New(id); p.Deleted = true; return p }
	e.ingest(gone("2611.00002"), gone("2611.00003"))
	if got := e.hitRows(key); !slices.Equal(got, [][3]any{{2, false, true}, {1, true, false}}) {
		t.Fatalf("rows after withdrawals: %v", got)
	}
	if got := ids(e.matched(match.Query{UserID: reader})); !slices.Equal(got, []string{"2611.00004", "2611.00001"}) {
		t.Errorf("feed after withdrawals: %v", got)
	}
}

// A user's window (a digest, a channel) holds the search's matches of
// the window only: new papers and stored papers newly matched, not papers
// it matched before (unless a new version arrived and the follow includes
// replacements).
func TestSearchHitsInWindows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	plain, repl := e.user("plain"), e.user("repl")
	e.follow(plain, "query", "diffusion", follow.Options{})
	yes := true
	e.follow(repl, "query", "diffusion", follow.Options{IncludeReplacements: &yes})
	e.ingest(titled("2611.00001v1", "Diffusion one"), titled("2611.00002v1", "Other"))
	w1 := e.high()
	e.ingest(titled("2611.00003v1", "Diffusion three"), titled("2611.00001v2", "Diffusion one, v2"),
		titled("2611.00002v2", "Other, now about diffusion"))
	w2 := e.high()
	e.ingest(titled("2611.00004v1", "Diffusion four"))

	window := func(u int64, after, upTo int64) []string {
		return ids(e.matched(match.Query{UserID: u, AfterSeq: after, UpToSeq: upTo, IDsOnly: false}))
	}
	if got := window(plain, 0, w1); !slices.Equal(got, []string{"2611.00001"}) {
		t.Errorf("first window: %v", got)
	}
	// In the second window 2611.00003 is new and 2611.00002 newly matched;
	// 2611.00001 was matched before and is only a new version.
	got := window(plain, w1, w2)
	slices.Sort(got)
	if !slices.Equal(got, []string{"2611.00002", "2611.00003"}) {
		t.Errorf("second window without replacements: %v", got)
	}
	got = window(repl, w1, w2)
	slices.Sort(got)
	if !slices.Equal(got, []string{"2611.00001", "2611.00002", "2611.00003"}) {
		t.Errorf("second window with replacements: %v", got)
	}
	for _, p := range e.matched(match.Query{UserID: repl, AfterSeq: w1, UpToSeq: w2}) {
		if p.Replaced != (p.ArxivID == "2611.00001") {
			t.Errorf("%s: Replaced = %v", p.ArxivID, p.Replaced)
		}
	}
	if got := window(plain, w2, 0); !slices.Equal(got, []string{"2611.00004"}) {
		t.Errorf("third window: %v", got)
	}
	// Digests select ids only, and count.
	r, err := e.m.MatchedMany(e.ctx, []match.Query{{UserID: plain, AfterSeq: w1, UpToSeq: w2, IDsOnly: true, Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if r[0].Total != 2 || len(r[0].Papers) != 1 || len(r[0].Papers[0].Reasons) != 1 {
		t.Errorf("digest window: total %d, %d papers, %+v", r[0].Total, len(r[0].Papers), r[0].Papers)
	}
}

// The reasons of a paper are the user's own follows: of the many
// searches that match it, only the user's.
func TestSearchReasonsOnlyFromOwnSearches(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reader, other := e.user("reader"), e.user("other")
	e.follow(reader, "query", "diffusion", follow.Options{})
	e.follow(reader, "category", "cs.LG", follow.Options{})
	e.follow(other, "query", "graphs", follow.Options{})
	e.follow(other, "query", "diffusion graphs", follow.Options{})
	e.ingest(titled("2611.00001v1", "Diffusion on graphs"))
	// A new version makes the feed read reasons (not a paper new in the
	// window), through loadReasonsSQL.
	e.ingest(titled("2611.00001v2", "Diffusion on graphs, revised"))
	for _, q := range []match.Query{{UserID: reader}, {UserID: reader, IDsOnly: true}, {UserID: reader, AfterSeq: 1}} {
		got := e.matched(q)
		if len(got) != 1 {
			t.Fatalf("%+v: %d papers", q, len(got))
		}
		rs := reasons(got[0])
		slices.Sort(rs)
		want := []string{follow.Target{Kind: follow.Category, ID: "cs.LG"}.String(), follow.Target{Kind: follow.Query, ID: "diffusion"}.String()}
		slices.Sort(want)
		if !slices.Equal(rs, want) {
			t.Errorf("%+v: reasons %v, want %v", q, rs, want)
		}
	}
	got := e.matched(match.Query{UserID: other})
	if len(got) != 1 || len(got[0].Reasons) != 2 {
		t.Errorf("the other user's feed: %+v", got)
	}
}
