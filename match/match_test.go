package match_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/worker"
)

type env struct {
	t       testing.TB
	db      *database.DB
	in      *catalog.Store
	follows *follow.Service
	m       *match.Service
	ctx     context.Context
}

func setup(t testing.TB) *env {
	t.Helper()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := match.NewService(db)
	return &env{t: t, db: db, in: catalog.NewStore(db, worker.NewEnqueuer(ins)), follows: follow.NewService(db),
		m: m, ctx: context.Background()}
}

// user makes a user with instant alerts: every user is the match job's
// audience here (in the product, the users with instant alerts or
// channels: their follows are in instant_follows).
func (e *env) user(sub string) int64 {
	u, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: sub})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `INSERT INTO digest_schedules (user_id, frequency) VALUES ($1, 'instant')`, u.ID); err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

func (e *env) follow(uid int64, kind, id string, opts follow.Options) {
	t, err := follow.ParseTarget(kind, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.follows.Follow(e.ctx, uid, t, opts); err != nil {
		e.t.Fatal(err)
	}
}

// ingest stores papers and returns the ingest's result (its seqs, the high
// seq after them).
func (e *env) ingest(ps ...paper.Paper) *catalog.IngestResult {
	res, err := e.in.Ingest(e.ctx, ps, catalog.SourcePush)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) high() int64 {
	w, err := e.in.HighSeq(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *env) matched(q match.Query) []match.Paper {
	r, err := e.m.Matched(e.ctx, q)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Total < len(r.Papers) {
		e.t.Errorf("total %d < %d papers", r.Total, len(r.Papers))
	}
	return r.Papers
}

func ids(ps []match.Paper) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ArxivID)
	}
	return out
}

func reasons(p match.Paper) []string {
	var out []string
	for _, r := range p.Reasons {
		out = append(out, r.String())
	}
	return out
}

func p(id, primary string, cats []string, authorIDs ...string) paper.Paper {
	return paper.Paper{ArxivID: id, Title: "Paper " + id, PrimaryCategory: primary, Categories: cats,
		Authors:     []paper.Author{{Name: "Mingzhi Wen", IDs: authorIDs}},
		SubmittedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
}

// TestLateEnrichmentDeliversOnceWithBothReasons is the acceptance case: a
// paper first matched by a category follow and, after enrichment, by a
// researcher follow reaches the user once, with both reasons.
func TestLateEnrichmentDeliversOnceWithBothReasons(t *testing.T) {
	t.Parallel()
	e := setup(t)
	u := e.user("reader")
	e.follow(u, "category", "cs.LG", follow.Options{})
	e.follow(u, "researcher", "openalex:A5023888391", follow.Options{})

	w0 := e.high()
	e.ingest(p("2202.02326", "cs.LG", []string{"cs.LG", "cs.SE"}))
	w1 := e.high()
	first := e.matched(match.Query{UserID: u, AfterSeq: w0, UpToSeq: w1})
	if !slices.Equal(ids(first), []string{"2202.02326"}) || !slices.Equal(reasons(first[0]), []string{"category/cs.LG"}) {
		t.Fatalf("first window: %v %v", ids(first), first)
	}

	// Enrichment: the author's OpenAlex id arrives later.
	res := e.ingest(p("2202.02326", "cs.LG", []string{"cs.LG", "cs.SE"}, "openalex:A5023888391"))
	if res.Updated != 1 || res.Keys != 1 {
		t.Fatalf("enrichment: %+v", res)
	}
	w2 := e.high()
	if second := e.matched(match.Query{UserID: u, AfterSeq: w1, UpToSeq: w2}); len(second) != 0 {
		t.Fatalf("the paper was delivered twice: %v", ids(second))
	}
	// The feed shows it once with both reasons.
	feed := e.matched(match.Query{UserID: u})
	if len(feed) != 1 || !slices.Equal(reasons(feed[0]), []string{"category/cs.LG", "researcher/openalex:A5023888391"}) {
		t.Fatalf("feed: %v %v", ids(feed), feed)
	}
	// A user who follows only the researcher gets it as new in that window.
	v := e.user("fan")
	e.follow(v, "researcher", "openalex:A5023888391", follow.Options{})
	got := e.matched(match.Query{UserID: v, AfterSeq: w1, UpToSeq: w2})
	if !slices.Equal(ids(got), []string{"2202.02326"}) || got[0].Replaced {
		t.Fatalf("researcher follower in the enrichment window: %v", got)
	}
}

func TestCrossListOption(t *testing.T) {
	t.Parallel()
	e := setup(t)
	all, primaryOnly := e.user("all"), e.user("primary-only")
	no := false
	e.follow(all, "category", "cs.AI", follow.Options{})
	e.follow(primaryOnly, "category", "cs.AI", follow.Options{IncludeCrossLists: &no})
	e.ingest(p("2301.00001", "cs.LG", []string{"cs.LG", "cs.AI"}), p("2301.00002", "cs.AI", []string{"cs.AI"}))
	if got := ids(e.matched(match.Query{UserID: all})); len(got) != 2 {
		t.Errorf("with cross-lists: %v", got)
	}
	got := e.matched(match.Query{UserID: primaryOnly})
	if !slices.Equal(ids(got), []string{"2301.00002"}) {
		t.Fatalf("without cross-lists: %v", ids(got))
	}
	// The follow is the paper's reason: the reasons statement finds the key's row
	// that is not a cross-list.
	if !slices.Equal(reasons(got[0]), []string{"category/cs.AI"}) {
		t.Errorf("without cross-lists, reasons %v", reasons(got[0]))
	}
}

// TestCrossListFollowIsNoReasonForACrossListedPaper: a paper that matches
// through one follow (cs.LG, its primary) and only cross-lists the category
// of another follow that leaves cross-lists out (cs.AI) is shown with the
// first follow as its only reason, in every kind of query: the reasons statement must
// apply the follow's cross-list option like the selection does.
func TestCrossListFollowIsNoReasonForACrossListedPaper(t *testing.T) {
	t.Parallel()
	e := setup(t)
	u := e.user("reader")
	no := false
	e.follow(u, "category", "cs.LG", follow.Options{})
	e.follow(u, "category", "cs.AI", follow.Options{IncludeCrossLists: &no})
	w0 := e.high()
	e.ingest(p("2301.00001", "cs.LG", []string{"cs.LG", "cs.AI"}))
	w1 := e.high()
	lg, err := follow.ParseTarget("category", "cs.LG")
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]match.Query{
		"feed":             {UserID: u},
		"per-follow feed":  {UserID: u, Only: &lg},
		"window":           {UserID: u, AfterSeq: w0, UpToSeq: w1},
		"window, ids only": {UserID: u, AfterSeq: w0, UpToSeq: w1, IDsOnly: true},
	} {
		got := e.matched(q)
		if len(got) != 1 || !slices.Equal(reasons(got[0]), []string{"category/cs.LG"}) {
			var rs [][]string
			for _, p := range got {
				rs = append(rs, reasons(p))
			}
			t.Errorf("%s: papers %v with reasons %v, want 2301.00001 with only category/cs.LG", name, ids(got), rs)
		}
	}
}

func TestArchiveAndAliasFollows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	u := e.user("archivist")
	e.follow(u, "category", "math", follow.Options{})
	e.follow(u, "category", "cs.IT", follow.Options{})
	e.ingest(p("2301.00001", "math.AG", []string{"math.AG"}),
		p("2301.00002", "math.IT", []string{"math.IT"}),
		p("2301.00003", "hep-th", []string{"hep-th"}))
	got := e.matched(match.Query{UserID: u})
	if !slices.Equal(ids(got), []string{"2301.00002", "2301.00001"}) && !slices.Equal(ids(got), []string{"2301.00001", "2301.00002"}) {
		t.Fatalf("archive/alias: %v", ids(got))
	}
	for _, pp := range got {
		if pp.ArxivID == "2301.00002" && !slices.Equal(reasons(pp), []string{"category/math", "category/cs.IT"}) {
			t.Errorf("math.IT paper reasons: %v", reasons(pp))
		}
	}
}

func TestReplacementsOnlyForThoseWhoAskedAndOncePerVersion(t *testing.T) {
	t.Parallel()
	e := setup(t)
	plain, eager := e.user("plain"), e.user("eager")
	yes := true
	e.follow(plain, "category", "cs.LG", follow.Options{})
	e.follow(eager, "category", "cs.LG", follow.Options{IncludeReplacements: &yes})
	e.ingest(p("2301.00001v1", "cs.LG", []string{"cs.LG"}))
	w1 := e.high()
	res := e.ingest(p("2301.00001v2", "cs.LG", []string{"cs.LG"}))
	if res.Replaced != 1 {
		t.Fatalf("v2: %+v", res)
	}
	w2 := e.high()
	if got := e.matched(match.Query{UserID: plain, AfterSeq: w1, UpToSeq: w2}); len(got) != 0 {
		t.Errorf("a follow without replacements heard of v2: %v", ids(got))
	}
	got := e.matched(match.Query{UserID: eager, AfterSeq: w1, UpToSeq: w2})
	if len(got) != 1 || !got[0].Replaced || got[0].Version != 2 {
		t.Errorf("eager follower in the v2 window: %+v", got)
	}
	// Only the eager follower has a new match.
	affected, err := e.m.RunBatch(e.ctx, w1+1, w2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(affected.Users, []int64{eager}) {
		t.Errorf("v2 batch affected %v, want only %d", affected.Users, eager)
	}
	// Re-sending v2 is not another replacement.
	if res := e.ingest(p("2301.00001v2", "cs.LG", []string{"cs.LG"})); res.Replaced != 0 || res.Keys != 0 {
		t.Errorf("v2 again: %+v", res)
	}
}

func TestAffectedUsersHonourOptionsAndIgnoreOthers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	no := false
	a, b, c := e.user("a"), e.user("b"), e.user("c")
	e.follow(a, "category", "cs.AI", follow.Options{})
	e.follow(b, "category", "cs.AI", follow.Options{IncludeCrossLists: &no})
	e.follow(c, "category", "math", follow.Options{})
	res := e.ingest(p("2301.00001", "cs.LG", []string{"cs.LG", "cs.AI"}))
	br, err := e.m.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(br.Users, []int64{a}) {
		t.Errorf("affected %v, want only %d", br.Users, a)
	}
	var versions []int64
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT version FROM user_feeds WHERE user_id = ANY($1) ORDER BY user_id`, []int64{a, b, c})
	for rows.Next() {
		var v int64
		rows.Scan(&v)
		versions = append(versions, v)
	}
	// Every user got +1 for their follow; the match job bumps no feed
	// (the batch's rows change the validators, see feeds.Validators).
	if !slices.Equal(versions, []int64{2, 2, 2}) {
		t.Errorf("feed versions %v", versions)
	}
}

func TestFeedLimitTotalAndDeletedPapers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	u := e.user("reader")
	e.follow(u, "category", "cs.LG", follow.Options{})
	var batch []paper.Paper
	for i := range 30 {
		batch = append(batch, p(fmt.Sprintf("2301.%05d", i+1), "cs.LG", []string{"cs.LG"}))
	}
	e.ingest(batch...)
	r, err := e.m.Matched(e.ctx, match.Query{UserID: u, Limit: 10, AfterSeq: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Papers) != 10 {
		t.Errorf("limit: %d papers", len(r.Papers))
	}
	for i := 1; i < len(r.Papers); i++ {
		if r.Papers[i-1].Seq < r.Papers[i].Seq {
			t.Errorf("not newest first")
		}
	}
	// A withdrawn paper leaves the feed.
	e.in.Ingest(e.ctx, []paper.Paper{{ArxivID: r.Papers[0].ArxivID, Deleted: true}}, catalog.SourceOAI)
	for _, pp := range e.matched(match.Query{UserID: u, Limit: 50}) {
		if pp.ArxivID == r.Papers[0].ArxivID {
			t.Errorf("deleted paper %s still in the feed", pp.ArxivID)
		}
	}
	// Digests count the whole window.
	win, err := e.m.Matched(e.ctx, match.Query{UserID: u, AfterSeq: 0, UpToSeq: e.high(), Limit: 5})
	if err != nil || win.Total != 29 || len(win.Papers) != 5 {
		t.Errorf("window total %d, papers %d, err %v", win.Total, len(win.Papers), err)
	}
	// Per-follow view: only that follow's matches.
	e.follow(u, "researcher", "s2:42", follow.Options{})
	e.ingest(p("2302.00001", "math.AG", []string{"math.AG"}, "s2:42"))
	only, _ := follow.ParseTarget("researcher", "s2:42")
	if got := ids(e.matched(match.Query{UserID: u, Only: &only})); !slices.Equal(got, []string{"2302.00001"}) {
		t.Errorf("per-follow: %v", got)
	}
	pub, err := e.m.Public(e.ctx, "researcher:s2:42", 10)
	if err != nil || len(pub) != 1 {
		t.Errorf("public: %v %v", pub, err)
	}
}

// TestAffectedUsersCombineEachKeysRows: the match job joins each key once
// with flags for the rows the batch has of it, so a category that one
// paper has as its primary and another as a cross-list reaches follows
// without cross-lists, and a new version's cross-list only follows that
// include both cross-lists (to be affected) and replacements (to match).
func TestAffectedUsersCombineEachKeysRows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	yes, no := true, false
	all, noCross, eager, eagerNoCross := e.user("all"), e.user("no-cross"), e.user("eager"), e.user("eager-no-cross")
	e.follow(all, "category", "cs.AI", follow.Options{})
	e.follow(noCross, "category", "cs.AI", follow.Options{IncludeCrossLists: &no})
	e.follow(eager, "category", "cs.AI", follow.Options{IncludeReplacements: &yes})
	e.follow(eagerNoCross, "category", "cs.AI", follow.Options{IncludeCrossLists: &no, IncludeReplacements: &yes})
	run := func(res *catalog.IngestResult) match.BatchResult {
		t.Helper()
		br, err := e.m.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil)
		if err != nil {
			t.Fatal(err)
		}
		return br
	}
	br := run(e.ingest(p("2301.00001v1", "cs.LG", []string{"cs.LG", "cs.AI"}), p("2301.00002v1", "cs.AI", []string{"cs.AI"})))
	if want := []int64{all, noCross, eager, eagerNoCross}; !slices.Equal(br.Users, want) {
		t.Errorf("primary and cross-list: users %v, want %v", br.Users, want)
	}
	br = run(e.ingest(p("2301.00001v2", "cs.LG", []string{"cs.LG", "cs.AI"})))
	if !slices.Equal(br.Users, []int64{eager}) {
		t.Errorf("a new version's cross-list: users %v, want [%d]", br.Users, eager)
	}
	br = run(e.ingest(p("2301.00002v2", "cs.AI", []string{"cs.AI"})))
	if !slices.Equal(br.Users, []int64{eager, eagerNoCross}) {
		t.Errorf("a new version's primary: users %v, want [%d %d]", br.Users, eager, eagerNoCross)
	}
}

// TestAffectedUsersOnlyAmongTheAudience: the match job finds every
// affected user with instant delivery once, with the right "new match",
// through categories and through the registry, finds nobody without
// instant delivery (whose follows instant_follows does not hold), and
// bumps no feed. Instant delivery starts and stops here through the tables
// the triggers watch (digest_schedules, channels).
func TestAffectedUsersOnlyAmongTheAudience(t *testing.T) {
	t.Parallel()
	e := setup(t)
	yes := true
	var cat []int64
	for i := range 4 {
		u := e.user(fmt.Sprintf("cat-%d", i))
		e.follow(u, "category", "cs.LG", follow.Options{})
		cat = append(cat, u)
	}
	eager := e.user("eager") // researcher and new versions of cs.AI
	e.follow(eager, "researcher", "s2:42", follow.Options{})
	e.follow(eager, "category", "cs.AI", follow.Options{})
	other := e.user("other")
	e.follow(other, "category", "math.AG", follow.Options{IncludeReplacements: &yes})
	e.ingest(p("2301.00009v1", "cs.AI", []string{"cs.AI"}))
	res := e.ingest(p("2301.00001", "cs.LG", []string{"cs.LG"}), p("2301.00002", "math.NT", []string{"math.NT"}, "s2:42"),
		p("2301.00009v2", "cs.AI", []string{"cs.AI"}))
	everyone := append([]int64{eager, other}, cat...)
	before := map[int64]int64{}
	for _, u := range everyone {
		before[u] = e.version(u)
	}
	for _, tc := range []struct {
		name    string
		alerts  []int64 // users with instant alerts
		channel []int64 // users with an enabled instant channel
		want    []int64
	}{
		{"everyone", everyone, nil, slices.Sorted(slices.Values(append([]int64{eager}, cat...)))},
		{"two category users, the researcher's, another", []int64{cat[1], cat[0], eager, other}, nil, []int64{cat[0], cat[1], eager}},
		{"only the researcher follow's user, by channel", nil, []int64{eager}, []int64{eager}},
		{"alerts and a channel", []int64{cat[2]}, []int64{cat[2], cat[3]}, []int64{cat[2], cat[3]}},
		{"nobody affected", []int64{other}, nil, nil},
		{"nobody", nil, nil, nil},
	} {
		if _, err := e.db.Pool.Exec(e.ctx, `
			UPDATE digest_schedules SET frequency = CASE WHEN user_id = ANY($1) THEN 'instant' ELSE 'daily' END`, tc.alerts); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Pool.Exec(e.ctx, `DELETE FROM channels`); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Pool.Exec(e.ctx, `
			INSERT INTO channels (user_id, type, url, mode) SELECT u, 'webhook', 'https://hooks.example/x', 'instant' FROM unnest($1::bigint[]) u`, tc.channel); err != nil {
			t.Fatal(err)
		}
		br, err := e.m.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(br.Users, tc.want) {
			t.Errorf("%s: users %v, want %v", tc.name, br.Users, tc.want)
		}
	}
	for u, v := range before {
		if got := e.version(u); got != v {
			t.Errorf("user %d: feed version %d, was %d: the match job bumps no feed", u, got, v)
		}
	}
}

func (e *env) version(uid int64) int64 {
	var v int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT version FROM user_feeds WHERE user_id = $1`, uid).Scan(&v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// TestReasonsInFollowOrder: a paper matched by three follows has them as
// reasons in the order the user made them (the follows list), not in the
// order of their keys, in every kind of query; the ids-only window takes
// them from the selection, whose keys come unsorted with their ranks.
func TestReasonsInFollowOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	u := e.user("reader")
	// Made in the reverse of their keys' order.
	e.follow(u, "researcher", "openalex:A5023888391", follow.Options{})
	e.follow(u, "category", "cs.LG", follow.Options{})
	e.follow(u, "category", "cs.AI", follow.Options{})
	w0 := e.high()
	e.ingest(p("2301.00001", "cs.LG", []string{"cs.LG", "cs.AI"}, "openalex:A5023888391"))
	w1 := e.high()
	want := []string{"researcher/openalex:A5023888391", "category/cs.LG", "category/cs.AI"}
	for name, q := range map[string]match.Query{
		"feed":             {UserID: u},
		"window":           {UserID: u, AfterSeq: w0, UpToSeq: w1},
		"window, ids only": {UserID: u, AfterSeq: w0, UpToSeq: w1, IDsOnly: true},
	} {
		got := e.matched(q)
		if len(got) != 1 || !slices.Equal(reasons(got[0]), want) {
			var rs [][]string
			for _, p := range got {
				rs = append(rs, reasons(p))
			}
			t.Errorf("%s: papers %v with reasons %v, want 2301.00001 with %v", name, ids(got), rs, want)
		}
	}
}
