package match_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"followfeed/database"
	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/paper"
)

func (e *env) mute(uid int64, in mute.Input) {
	e.t.Helper()
	s, err := mute.Parse(in)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := mute.NewService(e.db).Create(e.ctx, uid, s); err != nil {
		e.t.Fatal(err)
	}
}

func str(s string) *string { return &s }

// mutedFixture is ada following cs.LG and the researcher openalex:A2,
// with three mutes: the person whose ids are openalex:A1 and an ORCID
// (muted by the ORCID, for every follow), cs.LG's cross-lists (every
// follow), and the words "dark matter" in an abstract, for the cs.LG
// follow only. Papers, oldest first:
//
//	m1 cs.LG by A1                        muted person: dropped
//	m2 cs.LG by A2                        kept, reasons cs.LG and A2
//	m3 math.ST cross-listed to cs.LG      muted cross-list: dropped
//	m4 cs.LG, "dark matter"               cs.LG muted for it, no reason left: dropped
//	m5 cs.LG by A2, "dark matter"         cs.LG muted for it, A2 stays: kept, reason A2
//	m6 cs.LG by bob's follow only          (bob has no mutes: all six)
func mutedFixture(t *testing.T) (*env, int64, int64, int64) {
	e := setup(t)
	ada, bob := e.user("ada"), e.user("bob")
	before := e.high()
	e.follow(ada, "category", "cs.LG", follow.Options{})
	e.follow(ada, "researcher", "openalex:A2", follow.Options{})
	e.follow(bob, "category", "cs.LG", follow.Options{})
	// The registry's fixture: one person with two ids (identity owns
	// these tables; the test only needs the link).
	if _, err := e.db.Pool.Exec(e.ctx, `
		WITH i AS (INSERT INTO identities (kind) VALUES ('researcher') RETURNING id)
		INSERT INTO identity_keys (key, identity_id, source)
		SELECT k, i.id, 'host' FROM i, unnest(ARRAY['researcher:openalex:A1', 'researcher:orcid:0000-0002-1825-0097']) k`); err != nil {
		t.Fatal(err)
	}
	e.mute(ada, mute.Input{Researcher: str("orcid:0000-0002-1825-0097")})
	no := false
	e.mute(ada, mute.Input{Category: str("cs.LG"), CrossLists: &no})
	e.mute(ada, mute.Input{Query: str(`abs:"dark matter"`), HasFollow: true, FollowKind: "category", FollowID: "cs.LG"})
	dark := func(q paper.Paper) paper.Paper {
		q.Abstract = "We weigh dark matter halos."
		return q
	}
	e.ingest(p("2611.00001", "cs.LG", []string{"cs.LG"}, "openalex:A1"))
	e.ingest(p("2611.00002", "cs.LG", []string{"cs.LG"}, "openalex:A2"))
	e.ingest(p("2611.00003", "math.ST", []string{"math.ST", "cs.LG"}))
	e.ingest(dark(p("2611.00004", "cs.LG", []string{"cs.LG"})))
	e.ingest(dark(p("2611.00005", "cs.LG", []string{"cs.LG"}, "openalex:A2")))
	return e, ada, bob, before
}

// TestMutesInFeedsAndWindows: the rules of mutes.go, on a feed ("ever"),
// a bounded window (the windowed path and the per-user statement), and
// per-follow queries; another user's results are untouched.
func TestMutesInFeedsAndWindows(t *testing.T) {
	t.Parallel()
	e, ada, bob, before := mutedFixture(t)
	after := e.high()
	check := func(what string, ps []match.Paper, want []string, wantReasons map[string][]string) {
		t.Helper()
		if got := ids(ps); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
		for _, q := range ps {
			if w, ok := wantReasons[q.ArxivID]; ok && !slices.Equal(reasons(q), w) {
				t.Errorf("%s: %s's reasons %v, want %v", what, q.ArxivID, reasons(q), w)
			}
		}
	}
	kept := []string{"2611.00005", "2611.00002"}
	rs := map[string][]string{"2611.00005": {"researcher/openalex:A2"}, "2611.00002": {"category/cs.LG", "researcher/openalex:A2"}}
	check("ada's feed", e.matched(match.Query{UserID: ada}), kept, rs)
	check("bob's feed", e.matched(match.Query{UserID: bob}), []string{"2611.00005", "2611.00004", "2611.00003", "2611.00002", "2611.00001"}, nil)

	window := []match.Query{{UserID: ada, AfterSeq: before, UpToSeq: after}, {UserID: bob, AfterSeq: before, UpToSeq: after, IDsOnly: true}}
	for name, run := range map[string]func([]match.Query) ([]match.Result, error){
		"windowed": func(qs []match.Query) ([]match.Result, error) { return e.m.MatchedMany(e.ctx, qs) },
		"per user": func(qs []match.Query) ([]match.Result, error) { return match.PerUserMatchedMany(e.m, e.ctx, qs) },
	} {
		res, err := run(window)
		if err != nil {
			t.Fatal(err)
		}
		check(name+" window of ada", res[0].Papers, kept, rs)
		if res[0].Total != 2 || res[1].Total != 5 {
			t.Errorf("%s window totals: ada %d, bob %d; want 2 and 5 (only what is kept)", name, res[0].Total, res[1].Total)
		}
		// A digest that shows one paper still counts only the kept.
		one := []match.Query{{UserID: ada, AfterSeq: before, UpToSeq: after, IDsOnly: true, Limit: 1}}
		if res, err := run(one); err != nil || len(res[0].Papers) != 1 || res[0].Total != 2 {
			t.Errorf("%s window of ada, limit 1: %v total %d (%v); want one paper of 2", name, ids(res[0].Papers), res[0].Total, err)
		}
	}

	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	a2 := follow.Target{Kind: follow.Researcher, ID: "openalex:A2"}
	check("ada's cs.LG feed", e.matched(match.Query{UserID: ada, Only: &lg}), []string{"2611.00002"}, nil)
	check("ada's researcher feed", e.matched(match.Query{UserID: ada, Only: &a2}), kept, nil)
}

// TestMutesJudgedInTheWindowAsOnPapers: a digest's window (ids, no one
// follow) of a muting user is judged by the windowed path before any
// Paper is made (windowmutes.go); it keeps the same papers, with the same
// reasons (a scoped mute takes its follow out) and the same Total, as the
// per-user statement whose Papers the mutes judge (mutes.apply), at every
// limit; a window with a paper seen before it, whose reasons are read,
// and a per-follow window are left to apply.
func TestMutesJudgedInTheWindowAsOnPapers(t *testing.T) {
	t.Parallel()
	e, ada, bob, before := mutedFixture(t)
	e.mute(ada, mute.Input{Researcher: str("openalex:A7"), HasFollow: true, FollowKind: "category", FollowID: "cs.LG"})
	e.ingest(p("2611.00006", "cs.LG", []string{"cs.LG"}, "openalex:A7"))                // cs.LG muted for A7: no reason left
	e.ingest(p("2611.00007", "cs.LG", []string{"cs.LG"}, "openalex:A7", "openalex:A2")) // A2 stays
	e.ingest(p("2611.00008", "cs.LG", []string{"cs.LG"}))
	after := e.high()
	type got struct {
		ids     []int64
		reasons [][]string
		total   int
	}
	of := func(r match.Result) got {
		g := got{total: r.Total}
		for _, q := range r.Papers {
			g.ids, g.reasons = append(g.ids, q.ID), append(g.reasons, reasons(q))
		}
		return g
	}
	for _, limit := range []int{1, 2, 3, 50} {
		qs := []match.Query{
			{UserID: ada, AfterSeq: before, UpToSeq: after, IDsOnly: true, Limit: limit},
			{UserID: bob, AfterSeq: before, UpToSeq: after, IDsOnly: true, Limit: limit},
		}
		ctx, judged := match.CountJudged(e.ctx)
		w, err := e.m.MatchedMany(ctx, qs)
		if err != nil {
			t.Fatal(err)
		}
		pu, err := match.PerUserMatchedMany(e.m, e.ctx, qs)
		if err != nil {
			t.Fatal(err)
		}
		if n := judged.Load(); n != 1 {
			t.Errorf("limit %d: %d windows judged by the windowed path; want ada's (bob has no mute)", limit, n)
		}
		for i := range qs {
			if a, b := of(w[i]), of(pu[i]); fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("limit %d, query %d: windowed %+v, per user %+v", limit, i, a, b)
			}
		}
		if limit == 50 {
			kept := []string{"2611.00008", "2611.00007", "2611.00005", "2611.00002"}
			var gotIDs []string
			for _, q := range w[0].Papers {
				gotIDs = append(gotIDs, fmt.Sprintf("2611.%05d", paperNumber(t, e, q.ID)))
			}
			if !slices.Equal(gotIDs, kept) || w[0].Total != 4 {
				t.Errorf("ada's window: %v of %d; want %v of 4", gotIDs, w[0].Total, kept)
			}
			if r := reasons(w[0].Papers[1]); !slices.Equal(r, []string{"researcher/openalex:A2"}) {
				t.Errorf("2611.00007's reasons %v; want only A2 (cs.LG muted for A7)", r)
			}
		}
	}
	// Not the windowed path's to judge: a per-follow window, and a window
	// with a paper seen before it (a new version of 2611.00002, whose
	// first listing is older than the window).
	// cy follows cs.LG with its replacements and mutes a person.
	cy, yes := e.user("cy"), true
	e.follow(cy, "category", "cs.LG", follow.Options{IncludeReplacements: &yes})
	e.mute(cy, mute.Input{Researcher: str("openalex:A7")})
	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	e.ingest(p("2611.00002v2", "cs.LG", []string{"cs.LG"}, "openalex:A2"))
	for name, q := range map[string]match.Query{
		"per follow": {UserID: ada, AfterSeq: before, UpToSeq: after, IDsOnly: true, Only: &lg},
		"seen":       {UserID: cy, AfterSeq: after, UpToSeq: e.high(), IDsOnly: true},
	} {
		ctx, judged := match.CountJudged(e.ctx)
		rs, err := e.m.MatchedMany(ctx, []match.Query{q})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs[0].Papers) == 0 {
			t.Errorf("%s: an empty window; want papers, for the mutes to judge", name)
		}
		if n := judged.Load(); n != 0 {
			t.Errorf("%s: %d windows judged by the windowed path; want them left to apply", name, n)
		}
	}
}

// TestMutesNeverLeaveAFeedShort: when the newest papers are muted, a
// feed of Limit papers still shows the Limit newest kept ones.
func TestMutesNeverLeaveAFeedShort(t *testing.T) {
	t.Parallel()
	e, ada, _, _ := mutedFixture(t)
	for _, id := range []string{"2611.00011", "2611.00012", "2611.00013", "2611.00014", "2611.00015", "2611.00016"} {
		e.ingest(p(id, "cs.LG", []string{"cs.LG"}, "openalex:A1")) // the muted person
	}
	if got := ids(e.matched(match.Query{UserID: ada, Limit: 2})); !slices.Equal(got, []string{"2611.00005", "2611.00002"}) {
		t.Errorf("a feed of 2 under 6 newer muted papers: %v", got)
	}
	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	if got := ids(e.matched(match.Query{UserID: ada, Only: &lg, Limit: 1})); !slices.Equal(got, []string{"2611.00002"}) {
		t.Errorf("a per-follow feed of 1 under muted papers: %v", got)
	}
}

// TestExplainNamesTheMutes: "why not" names the mutes that hide a paper,
// the follows that match it and the ones left, with the surfaces' rules.
func TestExplainNamesTheMutes(t *testing.T) {
	t.Parallel()
	e, ada, bob, _ := mutedFixture(t)
	ms, err := mute.NewService(e.db).List(e.ctx, ada)
	if err != nil || len(ms) != 3 {
		t.Fatalf("ada's mutes: %v %v", ms, err)
	}
	person, cross, words := ms[0].ID, ms[1].ID, ms[2].ID
	str := func(ts []follow.Target) (out []string) {
		for _, t := range ts {
			out = append(out, t.String())
		}
		return
	}
	for _, c := range []struct {
		user          int64
		arxiv         string
		follows, kept []string
		mutes         []int64
		shown         bool
	}{
		{ada, "2611.00001", []string{"category/cs.LG"}, nil, []int64{person}, false},
		{ada, "2611.00002", []string{"category/cs.LG", "researcher/openalex:A2"}, []string{"category/cs.LG", "researcher/openalex:A2"}, nil, true},
		{ada, "2611.00003", []string{"category/cs.LG"}, nil, []int64{cross}, false},
		{ada, "2611.00004", []string{"category/cs.LG"}, nil, []int64{words}, false},
		{ada, "2611.00005", []string{"category/cs.LG", "researcher/openalex:A2"}, []string{"researcher/openalex:A2"}, []int64{words}, true},
		{bob, "2611.00001", []string{"category/cs.LG"}, []string{"category/cs.LG"}, nil, true},
	} {
		ex, err := e.m.Explain(e.ctx, c.user, c.arxiv)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(str(ex.Follows), c.follows) || !slices.Equal(str(ex.Kept), c.kept) || !slices.Equal(ex.Mutes, c.mutes) || ex.Shown != c.shown {
			t.Errorf("%d, %s: %+v; want follows %v, kept %v, mutes %v, shown %v", c.user, c.arxiv, ex, c.follows, c.kept, c.mutes, c.shown)
		}
	}
	if _, err := e.m.Explain(e.ctx, ada, "2611.99999"); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("an unknown paper: %v, want not found", err)
	}
}

// TestMutesAndReadStateSelectAWindowOnce: a digest's window (Unread, a
// limit smaller than its candidates) for a user with mutes and read
// papers is selected once: the read state keeps the window whole for the
// mutes (they filter it, count what is kept and cut it to the limit), so
// the mutes never select it again; the newest Limit kept papers and the
// Total of the kept ones come out as without the shortcut.
func TestMutesAndReadStateSelectAWindowOnce(t *testing.T) {
	t.Parallel()
	e, ada, _, before := mutedFixture(t)
	ib := inbox.New(e.db, e.m)
	for _, id := range []string{"2611.00021", "2611.00022", "2611.00023", "2611.00024", "2611.00025", "2611.00026"} {
		e.ingest(p(id, "cs.LG", []string{"cs.LG"}))
	}
	e.ingest(p("2611.00027", "cs.LG", []string{"cs.LG"}, "openalex:A1")) // the muted person
	mark(t, e, ib, ada, inbox.Read, "2611.00026")
	after := e.high()
	// A window of ids is judged by the windowed path itself
	// (windowmutes.go); one that loads its papers whole is over-selected
	// for the mutes (overselect) and judged on its Papers: both once.
	for _, idsOnly := range []bool{true, false} {
		ctx, reselects := match.CountReselects(e.ctx)
		rs, err := e.m.MatchedMany(ctx, []match.Query{{UserID: ada, AfterSeq: before, UpToSeq: after, Limit: 3, IDsOnly: idsOnly, Unread: true}})
		if err != nil {
			t.Fatal(err)
		}
		// Kept: m2, m5 of the fixture and 21..25 (26 read, 27 muted).
		got := make([]int, 0, len(rs[0].Papers))
		for _, q := range rs[0].Papers {
			got = append(got, paperNumber(t, e, q.ID))
		}
		if !slices.Equal(got, []int{25, 24, 23}) || rs[0].Total != 7 {
			t.Errorf("window of 3 (IDsOnly %t): papers %v, total %d; want [25 24 23] of 7", idsOnly, got, rs[0].Total)
		}
		if n := reselects.Load(); n != 0 {
			t.Errorf("the window (IDsOnly %t) was selected again %d times; want once in all", idsOnly, n)
		}
	}
}

// TestMutesJudgeThePaperAsItIsNow: the mutes judge a digest's candidates
// by their stored rows as they are now, though the process keeps what it
// judged before: a paper's new version whose title has a muted word, and
// an enrichment that names a muted person among its authors, hide papers
// the same window showed before they changed.
func TestMutesJudgeThePaperAsItIsNow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ada := e.user("ada")
	e.follow(ada, "category", "cs.LG", follow.Options{})
	before := e.high()
	e.ingest(p("2611.00031v1", "cs.LG", []string{"cs.LG"}))
	e.ingest(p("2611.00032v1", "cs.LG", []string{"cs.LG"}))
	e.mute(ada, mute.Input{Query: str("ti:zebra")})
	e.mute(ada, mute.Input{Researcher: str("openalex:A9")})
	window := func() []string {
		t.Helper()
		rs, err := e.m.MatchedMany(e.ctx, []match.Query{{UserID: ada, AfterSeq: before, UpToSeq: e.high(), IDsOnly: true}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, q := range rs[0].Papers {
			got = append(got, fmt.Sprintf("2611.%05d", paperNumber(t, e, q.ID)))
		}
		return got
	}
	if got := window(); !slices.Equal(got, []string{"2611.00032", "2611.00031"}) {
		t.Fatalf("before the changes: %v", got)
	}
	v2 := p("2611.00031v2", "cs.LG", []string{"cs.LG"})
	v2.Title = "Zebra crossings for graphs"
	e.ingest(v2)
	if got := window(); !slices.Equal(got, []string{"2611.00032"}) {
		t.Errorf("after a new version titled %q: %v, want it hidden", v2.Title, got)
	}
	e.ingest(p("2611.00032v1", "cs.LG", []string{"cs.LG"}, "openalex:A9"))
	if got := window(); len(got) != 0 {
		t.Errorf("after an enrichment naming the muted person: %v, want nothing", got)
	}
}
