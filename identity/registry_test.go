package identity_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/harvest"
	"followfeed/identity"
	fakeopenalex "followfeed/internal/fake/openalex"
	"followfeed/internal/testdb"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/openalex"
	"followfeed/paper"
	"followfeed/worker"
)

type env struct {
	t       *testing.T
	ctx     context.Context
	db      *database.DB
	papers  *catalog.Store
	follows *follow.Service
	reg     *identity.Registry
	m       *match.Service
}

func setup(t *testing.T) *env {
	t.Helper()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), db: db, papers: catalog.NewStore(db, worker.NewEnqueuer(ins)),
		follows: follow.NewService(db), m: match.NewService(db)}
	e.reg = identity.NewRegistry(db, e.follows)
	e.papers.ObserveIdentities(e.reg)
	return e
}

// user makes a user with instant alerts: the match job's audience (its
// follows are in instant_follows).
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

func (e *env) follow(uid int64, kind, id string) follow.Target {
	t, err := follow.ParseTarget(kind, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.follows.Follow(e.ctx, uid, t, follow.Options{}); err != nil {
		e.t.Fatal(err)
	}
	return t
}

func (e *env) put(body string) *identity.PutResult {
	e.t.Helper()
	kind := follow.Researcher
	if strings.Contains(body, "ror:") {
		kind = follow.Institution
	}
	recs, err := identity.DecodeRecords(kind, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.reg.Put(e.ctx, recs)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) ingest(ps ...paper.Paper) *catalog.IngestResult {
	e.t.Helper()
	res, err := e.papers.Ingest(e.ctx, ps, catalog.SourcePush)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// matchJob runs the match job's query over an ingest's key rows.
func (e *env) matchJob(res *catalog.IngestResult) match.BatchResult {
	e.t.Helper()
	var batch match.BatchResult
	err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		batch, err = e.m.AffectedUsers(e.ctx, tx, res.FromSeq, res.ToSeq)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return batch
}

func (e *env) feed(uid int64) []match.Paper {
	e.t.Helper()
	r, err := e.m.Matched(e.ctx, match.Query{UserID: uid})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Papers
}

func (e *env) version(uid int64) int64 {
	var v int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT version FROM user_feeds WHERE user_id = $1`, uid).Scan(&v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

func arxivIDs(ps []match.Paper) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ArxivID)
	}
	return out
}

func byAuthor(name string, ids ...string) func(*paper.Paper) {
	return func(p *paper.Paper) { p.Authors = []paper.Author{{Name: name, IDs: ids}} }
}

// The case: the Follow button sends the host's id; the person's
// papers carry OpenAlex and ORCID ids. Once the host links the ids, the
// follow matches papers stored before the link, the follower's feed
// version moves, and the name is the registry's.
func TestAFollowOfAnyIDMatchesPapersCarryingAnotherIDOfThePerson(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reader := e.user("reader")
	e.follow(reader, "researcher", "host:1955166")
	e.ingest(testpaper.New("2202.02326", byAuthor("M. Wen", "openalex:A5023888391")))
	if got := e.feed(reader); len(got) != 0 {
		t.Fatalf("before any link the host id matches nothing, got %v", arxivIDs(got))
	}
	before := e.version(reader)
	res := e.put(`{"ids": ["host:1955166", "openalex:A5023888391", "s2:1741101"], "name": "Mingzhi Wen", "other_names": ["M. Wen"]}`)
	if res.Received != 1 || res.Updated != 1 || len(res.Merges) != 0 {
		// The paper made openalex:A5023888391 known (named "M. Wen"), so
		// the record updates that identity.
		t.Errorf("put %+v", res)
	}
	if e.version(reader) == before {
		t.Error("a link that changes the feed must bump the follower's feed version")
	}
	got := e.feed(reader)
	if len(got) != 1 || got[0].ArxivID != "2202.02326" || len(got[0].Reasons) != 1 || got[0].Reasons[0].ID != "host:1955166" {
		t.Fatalf("after the link: %+v", got)
	}
	fs, err := e.follows.All(e.ctx, reader)
	if err != nil || fs[0].DisplayName() != "Mingzhi Wen" || follow.ReasonLabels(fs)["researcher:host:1955166"] != "Mingzhi Wen" {
		t.Errorf("follow name %+v %v", fs, err)
	}
	// Idempotent: the same record again changes nothing, bumps nobody.
	v := e.version(reader)
	if res := e.put(`{"ids": ["host:1955166", "openalex:A5023888391", "s2:1741101"], "name": "Mingzhi Wen", "other_names": ["M. Wen"]}`); res.Unchanged != 1 {
		t.Errorf("second put %+v", res)
	}
	if e.version(reader) != v {
		t.Error("an unchanged put bumped a feed")
	}
	// A later paper under the third id is found by the match job for this
	// follower.
	stranger := e.user("stranger")
	e.follow(stranger, "researcher", "host:42")
	batch := e.matchJob(e.ingest(testpaper.New("2203.00001", byAuthor("Mingzhi Wen", "s2:1741101"))))
	if !slices.Equal(batch.Users, []int64{reader}) {
		t.Errorf("match job users %v, want [%d]", batch.Users, reader)
	}
}

// A record whose ids belong to two identities merges them and says so; a
// user following two ids of the person sees each paper once, with one
// reason, and counts once; the count is the same under every id.
func TestMergesReportedAndAPersonCountsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["orcid:0000-0001-6187-6610", "openalex:A5023888391"], "name": "Jason Priem"}` + "\n" +
		`{"ids": ["host:77"], "name": "J. Priem"}`)
	reader, other := e.user("reader"), e.user("other")
	e.follow(reader, "researcher", "host:77")
	e.follow(reader, "researcher", "orcid:0000-0001-6187-6610")
	e.follow(other, "researcher", "openalex:A5023888391")
	e.ingest(testpaper.New("2202.02326", byAuthor("Jason Priem", "openalex:A5023888391")),
		testpaper.New("2202.02327", byAuthor("Jason Priem", "host:77")))

	res := e.put(`{"ids": ["host:77", "openalex:A5023888391"], "name": "Jason Priem"}`)
	if len(res.Merges) != 1 || res.Merges[0].Index != 0 || res.Merges[0].Into != "orcid:0000-0001-6187-6610" ||
		!slices.Contains(res.Merges[0].Merged, "host:77") {
		t.Fatalf("merges %+v", res.Merges)
	}
	got := e.feed(reader)
	if len(got) != 2 {
		t.Fatalf("feed %v", arxivIDs(got))
	}
	for _, p := range got {
		if len(p.Reasons) != 1 || p.Reasons[0].ID != "host:77" { // the follow made first
			t.Errorf("%s reasons %v", p.ArxivID, p.Reasons)
		}
	}
	for _, id := range []string{"host:77", "orcid:0000-0001-6187-6610", "openalex:A5023888391"} {
		ident, err := e.reg.Lookup(e.ctx, follow.Researcher, id, reader)
		if err != nil {
			t.Fatal(err)
		}
		if ident.Followers != 2 || ident.Following == nil || !*ident.Following || ident.ID != "orcid:0000-0001-6187-6610" ||
			ident.Name != "Jason Priem" || len(ident.IDs) != 3 || !slices.Contains(ident.OtherNames, "J. Priem") {
			t.Errorf("lookup %s: %+v", id, ident)
		}
		st, err := e.follows.Status(e.ctx, follow.Target{Kind: follow.Researcher, ID: id}, other)
		if err != nil || st.Followers != 2 || !*st.Following || st.Name != "Jason Priem" {
			t.Errorf("status %s: %+v %v", id, st, err)
		}
	}
	if _, err := e.reg.Lookup(e.ctx, follow.Researcher, "host:404", 0); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

// A split takes an id off; papers that list both ids on one author do not
// link them again; the host can.
func TestSplitSticksUntilTheHostLinksAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1", "openalex:A5023888391"], "name": "Mingzhi Wen"}`)
	reader := e.user("reader")
	e.follow(reader, "researcher", "host:1")
	e.ingest(testpaper.New("2202.02326", byAuthor("Somebody Else", "openalex:A5023888391")))
	if len(e.feed(reader)) != 1 {
		t.Fatal("linked paper missing")
	}
	v := e.version(reader)
	ident, err := e.reg.Split(e.ctx, follow.Researcher, "host:1", "openalex:A5023888391")
	if err != nil || len(ident.IDs) != 1 || ident.Name != "Mingzhi Wen" {
		t.Fatalf("split %+v %v", ident, err)
	}
	if e.version(reader) == v {
		t.Error("a split must bump the followers' feeds")
	}
	if got := e.feed(reader); len(got) != 0 {
		t.Errorf("after the split: %v", arxivIDs(got))
	}
	// A pushed paper listing both ids on one author does not undo it.
	e.ingest(testpaper.New("2202.09999", byAuthor("Mingzhi Wen", "host:1", "openalex:A5023888391")))
	if ident, _ := e.reg.Lookup(e.ctx, follow.Researcher, "host:1", 0); len(ident.IDs) != 1 {
		t.Errorf("a paper re-linked a split: %+v", ident)
	}
	if _, err := e.reg.Split(e.ctx, follow.Researcher, "host:1", "s2:5"); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("splitting an id that is not linked: %v", err)
	}
	e.put(`{"ids": ["host:1", "openalex:A5023888391"]}`)
	if ident, _ := e.reg.Lookup(e.ctx, follow.Researcher, "openalex:A5023888391", 0); len(ident.IDs) != 2 {
		t.Errorf("the host's link: %+v", ident)
	}
}

// "Not this person": the paper leaves the user's feed for that follow
// (and the person's other ids), stays for a category follow, and the host
// sees the dispute under any id of the person.
func TestNotThisPersonRemovesThePaperForThatFollowOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1", "openalex:A5023888391"], "name": "Mingzhi Wen"}`)
	reader, other := e.user("reader"), e.user("other")
	e.follow(reader, "researcher", "openalex:A5023888391")
	e.follow(other, "researcher", "host:1")
	e.ingest(testpaper.New("2202.02326", byAuthor("M. Wen", "openalex:A5023888391")),
		testpaper.New("2202.02327", byAuthor("M. Wen", "host:1")))
	t1 := follow.Target{Kind: follow.Researcher, ID: "openalex:A5023888391"}
	if st, err := e.reg.DisputeOf(e.ctx, reader, t1, "2202.02327"); err != nil || st.Title == "" || !st.Reported.IsZero() {
		t.Errorf("before the dispute: %+v %v", st, err)
	}
	// The hooks run once per new dispute, in its transaction, with the
	// user and the follow (package ranking retrains the user's model).
	var hooked []string
	e.reg.OnNotThisPerson(func(_ context.Context, _ pgx.Tx, userID int64, t follow.Target) error {
		hooked = append(hooked, fmt.Sprint(userID, " ", t.Key()))
		return nil
	})
	v := e.version(reader)
	if err := e.reg.NotThisPerson(e.ctx, reader, t1, "2202.02327"); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.NotThisPerson(e.ctx, reader, t1, "2202.02327"); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(reader, " ", t1.Key()); !slices.Equal(hooked, []string{want}) {
		t.Errorf("the dispute's hooks ran %q, want once: %q", hooked, want)
	}
	// The link's page then says it was done: for that follow and user
	// only; an unknown paper has no state.
	if st, err := e.reg.DisputeOf(e.ctx, reader, t1, "2202.02327"); err != nil || st.Reported.IsZero() {
		t.Errorf("after the dispute: %+v %v", st, err)
	}
	if st, err := e.reg.DisputeOf(e.ctx, other, follow.Target{Kind: follow.Researcher, ID: "host:1"}, "2202.02327"); err != nil || !st.Reported.IsZero() {
		t.Errorf("another user's state: %+v %v", st, err)
	}
	if st, err := e.reg.DisputeOf(e.ctx, reader, t1, "2999.99999"); err != nil || st != (identity.DisputeState{}) {
		t.Errorf("an unknown paper's state: %+v %v", st, err)
	}
	if e.version(reader) == v {
		t.Error("a dispute must bump the user's feed")
	}
	if got := arxivIDs(e.feed(reader)); !slices.Equal(got, []string{"2202.02326"}) {
		t.Errorf("user's feed %v", got)
	}
	if got := e.feed(other); len(got) != 2 {
		t.Errorf("another user's feed %v", arxivIDs(got))
	}
	e.follow(reader, "category", "cs.LG")
	for _, p := range e.feed(reader) {
		if p.ArxivID == "2202.02327" && (len(p.Reasons) != 1 || p.Reasons[0].Kind != follow.Category) {
			t.Errorf("disputed paper reasons %v", p.Reasons)
		}
	}
	ds, err := e.reg.Disputes(e.ctx, "host:1", 0)
	if err != nil || len(ds) != 1 || ds[0].ArxivID != "2202.02327" || ds[0].ID != "openalex:A5023888391" {
		t.Errorf("disputes %+v %v", ds, err)
	}
	if err := e.reg.NotThisPerson(e.ctx, reader, follow.Target{Kind: follow.Researcher, ID: "host:9"}, "2202.02327"); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("dispute without the follow: %v", err)
	}
	if err := e.reg.NotThisPerson(e.ctx, reader, t1, "2999.99999"); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("dispute of an unknown paper: %v", err)
	}
}

// The recorded OpenAlex work feeds the registry through enrichment: each
// author's OpenAlex id and ORCID are one person named after the author,
// each institution's ROR and OpenAlex ids one institution with OpenAlex's
// name and country; a ror: follow then matches the enriched paper.
func TestEnrichmentFromRecordedOpenAlexFeedsTheRegistry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	raw, err := os.ReadFile("testdata/openalex/work-W2741809807.json")
	if err != nil {
		t.Fatal(err)
	}
	var work map[string]any
	if err := json.Unmarshal(raw, &work); err != nil {
		t.Fatal(err)
	}
	var names struct {
		Authorships []struct {
			Author struct {
				DisplayName string `json:"display_name"`
			} `json:"author"`
		} `json:"authorships"`
	}
	json.Unmarshal(raw, &names)
	p := testpaper.New("2202.02326", func(p *paper.Paper) {
		p.Authors = nil
		for _, a := range names.Authorships {
			p.Authors = append(p.Authors, paper.Author{Name: a.Author.DisplayName})
		}
	})
	if _, err := e.papers.Ingest(e.ctx, []paper.Paper{p}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	reader := e.user("reader")
	e.follow(reader, "institution", "ror:05ppvf150")
	e.follow(reader, "researcher", "orcid:0000-0001-6187-6610")

	fake := fakeopenalex.New(nil)
	fake.AddRecorded("2202.02326", work)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	client := openalex.NewClient(openalex.Config{BaseURL: ts.URL, MaxRetries: -1})
	en := harvest.NewEnricher(e.papers, client, harvest.EnrichPolicy{FirstRetry: time.Hour, MaxAttempts: 2, Batch: 10}, nil, nil)
	en.OnIdentities(e.reg.OpenAlexSink())
	if _, err := en.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	priem, err := e.reg.Lookup(e.ctx, follow.Researcher, "openalex:A5023888391", 0)
	if err != nil || priem.Name != "Jason Priem" || !slices.Equal(priem.IDs, []string{"openalex:A5023888391", "orcid:0000-0001-6187-6610"}) ||
		priem.ID != "orcid:0000-0001-6187-6610" || priem.Followers != 1 {
		t.Errorf("author %+v %v", priem, err)
	}
	inst, err := e.reg.Lookup(e.ctx, follow.Institution, "openalex:I4210166736", 0)
	if err != nil || inst.Name != "Impact Technology Development (United States)" || inst.Country != "US" || inst.ID != "ror:05ppvf150" {
		t.Errorf("institution %+v %v", inst, err)
	}
	got := e.feed(reader)
	if len(got) != 1 || len(got[0].Reasons) != 2 {
		t.Errorf("enriched paper in feed %+v", got)
	}
}

// A followed OpenAlex author id that OpenAlex merged into another profile
// is answered under the survivor: enrichment links the two (and the
// survivor's ORCID), so the follow matches the survivor's papers; an id
// OpenAlex does not know is remembered and not asked again.
func TestEnrichmentLinksMergedOpenAlexProfilesToTheSurvivor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reader := e.user("reader")
	e.follow(reader, "researcher", "openalex:A1000000001") // merged away
	e.follow(reader, "researcher", "openalex:A1000000002") // unknown to OpenAlex
	e.ingest(testpaper.New("2202.02326", byAuthor("Jason Priem", "openalex:A5023888391")))

	fake := fakeopenalex.New(nil)
	fake.AddAuthor(fakeopenalex.AuthorProfile{ID: "A5023888391", Name: "Jason Priem", ORCID: "0000-0001-6187-6610"}, "A1000000001")
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	client := openalex.NewClient(openalex.Config{BaseURL: ts.URL, MaxRetries: -1})
	en := harvest.NewEnricher(e.papers, client, harvest.EnrichPolicy{FirstRetry: time.Hour, MaxAttempts: 2, Batch: 10}, nil, nil)
	en.OnIdentities(e.reg.OpenAlexSink())
	v := e.version(reader)
	st, err := en.RunOnce(e.ctx)
	if err != nil || st.Authors != 2 || st.Merged != 1 {
		t.Fatalf("run %+v %v", st, err)
	}
	ident, err := e.reg.Lookup(e.ctx, follow.Researcher, "openalex:A1000000001", 0)
	if err != nil || ident.Name != "Jason Priem" || len(ident.IDs) != 3 || ident.ID != "orcid:0000-0001-6187-6610" {
		t.Errorf("merged profile %+v %v", ident, err)
	}
	if got := e.feed(reader); len(got) != 1 || got[0].ArxivID != "2202.02326" {
		t.Errorf("feed %v", arxivIDs(got))
	}
	if e.version(reader) == v {
		t.Error("the link did not bump the follower's feed")
	}
	if st, err := en.RunOnce(e.ctx); err != nil || st.Authors != 0 {
		t.Errorf("second run asked again: %+v %v", st, err)
	}
}

// Institutions likewise: a ror: follow matches papers that carry only the
// institution's OpenAlex id once the two are linked, and its public name
// and count are the institution's.
func TestARORFollowMatchesPapersCarryingTheOpenAlexInstitutionID(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reader := e.user("reader")
	e.follow(reader, "institution", "ror:05ppvf150")
	e.ingest(testpaper.New("2202.02326", func(p *paper.Paper) { p.Institutions = []string{"openalex:I4210166736"} }))
	if got := e.feed(reader); len(got) != 0 {
		t.Fatalf("unlinked: %v", arxivIDs(got))
	}
	e.put(`{"ids": ["ror:05ppvf150", "openalex:I4210166736"], "name": "Impactstory", "country": "US"}`)
	got := e.feed(reader)
	if len(got) != 1 || len(got[0].Reasons) != 1 || got[0].Reasons[0].ID != "ror:05ppvf150" {
		t.Fatalf("linked: %+v", got)
	}
	st, err := e.follows.Status(e.ctx, follow.Target{Kind: follow.Institution, ID: "openalex:I4210166736"}, reader)
	if err != nil || st.Followers != 1 || !*st.Following || st.Name != "Impactstory" {
		t.Errorf("status %+v %v", st, err)
	}
	pub, err := e.m.Public(e.ctx, "institution:openalex:I4210166736", 10)
	if err != nil || len(pub) != 1 {
		t.Errorf("public feed of the other id: %d %v", len(pub), err)
	}
}

// followWith follows with options.
func (e *env) followWith(uid int64, kind, id string, opts follow.Options) {
	e.t.Helper()
	t, err := follow.ParseTarget(kind, id)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.follows.Follow(e.ctx, uid, t, opts); err != nil {
		e.t.Fatal(err)
	}
}

// The match job expands a batch's keys through the registry before the
// join: two ids of one person are one match for their follower, a
// cross-list reaches only follows that include cross-lists, a new
// version only follows that include replacements, and NewKeys lists the keys the batch brought a first
// match to.
func TestMatchJobExpandsKeysThroughTheRegistry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1", "s2:1", "openalex:A1"], "name": "Mingzhi Wen"}`)
	yes, no := true, false
	twoIDs, fan, primary, stranger := e.user("two-ids"), e.user("fan"), e.user("primary"), e.user("stranger")
	e.follow(twoIDs, "researcher", "host:1")
	e.follow(twoIDs, "researcher", "s2:1")
	e.followWith(fan, "researcher", "openalex:A1", follow.Options{IncludeReplacements: &yes})
	e.followWith(primary, "category", "stat.ML", follow.Options{IncludeCrossLists: &no})
	e.follow(stranger, "researcher", "host:2")
	b1 := e.matchJob(e.ingest(testpaper.New("2202.02326v1", byAuthor("M. Wen", "s2:1"))))
	if !slices.Equal(b1.Users, []int64{twoIDs, fan}) {
		t.Errorf("first version: users %v, want [%d %d]", b1.Users, twoIDs, fan)
	}
	want := []string{"archive:cs", "archive:stat", "category:cs.LG", "category:stat.ML", "researcher:s2:1"}
	if got := slices.Sorted(slices.Values(b1.NewKeys)); !slices.Equal(got, want) {
		t.Errorf("new keys %v, want %v", got, want)
	}
	b2 := e.matchJob(e.ingest(testpaper.New("2202.02326v2", byAuthor("M. Wen", "s2:1"))))
	if !slices.Equal(b2.Users, []int64{fan}) || len(b2.NewKeys) != 0 {
		t.Errorf("second version: users %v new keys %v, want [%d] and none", b2.Users, b2.NewKeys, fan)
	}
	if got := e.feed(twoIDs); len(got) != 1 || len(got[0].Reasons) != 1 {
		t.Errorf("two ids of one person: %+v", got)
	}
}

// "Not this person" holds in the match job too: a batch whose only match
// for a user is a paper they disputed for that person — an id of the
// person added to it later, a new version — is no new match for them (no
// instant alert, no instant channel), as their feed and digests leave it
// out; another user of the person still gets it, and a paper they did
// not dispute in the same batch is a new match.
func TestDisputedPaperIsNoNewMatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1", "openalex:A5023888391"], "name": "Mingzhi Wen"}`)
	yes := true
	reader, other := e.user("reader"), e.user("other")
	e.followWith(reader, "researcher", "host:1", follow.Options{IncludeReplacements: &yes})
	e.follow(other, "researcher", "host:1")
	e.ingest(testpaper.New("2202.02326v1", byAuthor("M. Wen", "openalex:A5023888391")))
	if err := e.reg.NotThisPerson(e.ctx, reader, follow.Target{Kind: follow.Researcher, ID: "host:1"}, "2202.02326"); err != nil {
		t.Fatal(err)
	}
	// Another id of the person on the disputed paper (a new key row).
	b := e.matchJob(e.ingest(testpaper.New("2202.02326v1", byAuthor("M. Wen", "openalex:A5023888391", "orcid:0000-0002-1825-0097"))))
	if !slices.Equal(b.Users, []int64{other}) {
		t.Errorf("new id on the disputed paper: users %v, want [%d]", b.Users, other)
	}
	// A new version of it, for a follow that includes replacements.
	b = e.matchJob(e.ingest(testpaper.New("2202.02326v2", byAuthor("M. Wen", "openalex:A5023888391"))))
	if len(b.Users) != 0 {
		t.Errorf("new version of the disputed paper: users %v, want none", b.Users)
	}
	// With a paper the user did not dispute, the batch is a new match.
	b = e.matchJob(e.ingest(testpaper.New("2202.02326v3", byAuthor("M. Wen", "openalex:A5023888391")),
		testpaper.New("2203.00001", byAuthor("M. Wen", "orcid:0000-0002-1825-0097"))))
	if !slices.Equal(b.Users, []int64{reader, other}) {
		t.Errorf("with an undisputed paper: users %v, want [%d %d]", b.Users, reader, other)
	}
	if got := arxivIDs(e.feed(reader)); !slices.Equal(got, []string{"2203.00001"}) {
		t.Errorf("user's feed %v", got)
	}
	// A category follow (with replacements) still matches the disputed
	// paper.
	e.followWith(reader, "category", "cs.LG", follow.Options{IncludeReplacements: &yes})
	b = e.matchJob(e.ingest(testpaper.New("2202.02326v4", byAuthor("M. Wen", "openalex:A5023888391"))))
	if !slices.Equal(b.Users, []int64{reader}) {
		t.Errorf("a new version of the disputed paper through a category follow: users %v, want [%d]", b.Users, reader)
	}
}

// The match job reads only the users the categories did not match for
// the researcher keys, still through the registry:
// a follower of host:1 is matched by a paper carrying s2:1.
func TestMatchJobReadsTheRestThroughTheRegistry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1", "s2:1"], "name": "Mingzhi Wen"}`)
	var want []int64
	for i := range 8 { // 8 of 10 users: categories match 80% of them
		u := e.user(fmt.Sprintf("cat-%d", i))
		e.follow(u, "category", "cs.LG")
		want = append(want, u)
	}
	fan := e.user("fan")
	e.follow(fan, "researcher", "host:1")
	stranger := e.user("stranger")
	e.follow(stranger, "researcher", "host:2")
	b := e.matchJob(e.ingest(testpaper.New("2202.02326", byAuthor("M. Wen", "s2:1"))))
	if want = append(want, fan); !slices.Equal(b.Users, want) {
		t.Errorf("users %v, want %v", b.Users, want)
	}
}

// The host push: a record that joins a new host id to a known,
// followed person and renames them is applied (the host decides) and says
// so: the link (which ids, to whom) and the rename (from what), beside the
// counts and merges of before. Putting it again reports nothing.
func TestHostPutReportsLinksAndRenames(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1955166", "openalex:A5023888391", "s2:1741101"], "name": "Mingzhi Wen"}`)
	reader := e.user("reader")
	e.follow(reader, "researcher", "host:1955166")
	v := e.version(reader)
	res := e.put(`{"ids": ["host:77", "s2:1741101"], "name": "Somebody Else"}` + "\n" + `{"ids": ["host:78"], "name": "New Person"}`)
	if res.Updated != 1 || res.Created != 1 || len(res.Merges) != 0 {
		t.Errorf("counts %+v", res)
	}
	wantLinks := []identity.Link{{Index: 0, To: "openalex:A5023888391", IDs: []string{"host:77"}}}
	wantRenames := []identity.Rename{{Index: 0, ID: "openalex:A5023888391", From: "Mingzhi Wen", To: "Somebody Else"}}
	if !reflect.DeepEqual(res.Links, wantLinks) || !reflect.DeepEqual(res.Renames, wantRenames) {
		t.Errorf("links %+v renames %+v, want %+v %+v", res.Links, res.Renames, wantLinks, wantRenames)
	}
	if e.version(reader) == v {
		t.Error("the rename did not bump the follower's feed")
	}
	res = e.put(`{"ids": ["host:77", "s2:1741101"], "name": "Somebody Else"}`)
	if res.Unchanged != 1 || len(res.Links) != 0 || len(res.Renames) != 0 || res.Links == nil || res.Renames == nil {
		t.Errorf("the same record again: %+v", res)
	}
}

// Papers (the lowest-ranked source, also fed by OpenAlex) and OpenAlex
// never merge two identities the host registered apart: a paper whose
// author lists both host ids, and an OpenAlex profile joining an id of
// each, change nothing (each follower keeps only their person's papers)
// and are logged for the operator. They may still link new ids to one of
// them and join an identity the host never registered to one it did. An
// id the host put counts as registered even when a paper brought it
// first.
func TestPapersAndOpenAlexNeverMergeHostRegisteredIdentities(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var log strings.Builder
	e.reg.LogTo(slog.New(slog.NewTextHandler(&log, nil)))
	e.put(`{"ids": ["host:1", "openalex:A1"], "name": "Alice"}` + "\n" + `{"ids": ["host:2", "orcid:0000-0002-1825-0097"], "name": "Bob"}`)
	alice, bob := e.user("alice-fan"), e.user("bob-fan")
	e.follow(alice, "researcher", "host:1")
	e.follow(bob, "researcher", "host:2")
	e.ingest(testpaper.New("2202.00002", byAuthor("Bob", "host:2")))

	e.ingest(testpaper.New("2202.00012", byAuthor("A. B.", "host:1", "host:2")))
	if err := e.reg.Observe(e.ctx, identity.SourceOpenAlex, []identity.Record{{Kind: follow.Researcher,
		IDs: []string{"openalex:A1", "orcid:0000-0002-1825-0097"}, Name: "OpenAlex's merged profile"}}); err != nil {
		t.Fatal(err)
	}
	for who, id := range map[string]string{"Alice": "host:1", "Bob": "host:2"} {
		ident, err := e.reg.Lookup(e.ctx, follow.Researcher, id, 0)
		if err != nil || ident.Name != who || len(ident.IDs) != 2 || len(ident.OtherNames) != 0 {
			t.Errorf("%s after the paper and OpenAlex: %+v %v", who, ident, err)
		}
	}
	if got := arxivIDs(e.feed(alice)); !slices.Equal(got, []string{"2202.00012"}) {
		t.Errorf("Alice's follower gets %v, want only the paper that names her", got)
	}
	for _, want := range []string{`level=WARN msg="identity: refused to merge identities the host registered apart`,
		`source=paper ids=host:1,host:2 identities=openalex:A1,orcid:0000-0002-1825-0097`,
		`source=openalex ids=openalex:A1,orcid:0000-0002-1825-0097 identities=openalex:A1,orcid:0000-0002-1825-0097`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}

	// A new id joins one of them; an identity only papers know joins one.
	e.ingest(testpaper.New("2202.00013", byAuthor("Alice", "host:1", "s2:9")),
		testpaper.New("2202.00014", byAuthor("Alice", "dblp:a/Alice")))
	e.ingest(testpaper.New("2202.00015", byAuthor("Alice", "dblp:a/Alice", "openalex:A1")))
	if ident, _ := e.reg.Lookup(e.ctx, follow.Researcher, "host:1", 0); !slices.Equal(ident.IDs, []string{"dblp:a/Alice", "host:1", "openalex:A1", "s2:9"}) {
		t.Errorf("Alice's ids %v", ident.IDs)
	}

	// An id a paper brought, then the host put (no new id, no name): the
	// identity is the host's, and a paper does not merge it with another.
	e.ingest(testpaper.New("2202.00016", byAuthor("Carol", "openalex:A7")))
	if res := e.put(`{"ids": ["openalex:A7"]}` + "\n" + `{"ids": ["host:5"], "name": "Eve"}`); res.Unchanged != 1 || res.Created != 1 {
		t.Errorf("put %+v", res)
	}
	e.ingest(testpaper.New("2202.00017", byAuthor("Carol", "openalex:A7", "host:5")))
	if ident, _ := e.reg.Lookup(e.ctx, follow.Researcher, "host:5", 0); len(ident.IDs) != 1 || ident.Name != "Eve" {
		t.Errorf("a paper merged an identity the host put with another: %+v", ident)
	}
}

// A split gives each side its host-given name: two people the host
// registered apart, then merged by the host, split again: the split-off
// id's identity is named as the host named it, with the other names the
// host gave it, and the identity it leaves keeps its own name and none of
// the other's among its other names, whichever name the merge kept.
func TestSplitGivesEachSideItsHostGivenName(t *testing.T) {
	t.Parallel()
	for _, merge := range []string{`{"ids": ["host:1", "host:2"]}`, `{"ids": ["host:2", "host:1"]}`} {
		e := setup(t)
		e.put(`{"ids": ["host:1", "s2:1"], "name": "Alice"}`)
		e.put(`{"ids": ["host:2"], "name": "Bob", "other_names": ["B."]}`)
		if res := e.put(merge); len(res.Merges) != 1 {
			t.Fatalf("%s: merges %+v", merge, res.Merges)
		}
		merged, _ := e.reg.Lookup(e.ctx, follow.Researcher, "host:1", 0)
		if len(merged.IDs) != 3 || len(merged.OtherNames) == 0 {
			t.Fatalf("%s: merged %+v", merge, merged)
		}
		left, err := e.reg.Split(e.ctx, follow.Researcher, "host:1", "host:2")
		if err != nil || left.Name != "Alice" || len(left.OtherNames) != 0 {
			t.Errorf("%s: the identity left: %+v %v", merge, left, err)
		}
		off, err := e.reg.Lookup(e.ctx, follow.Researcher, "host:2", 0)
		if err != nil || off.Name != "Bob" || !slices.Equal(off.OtherNames, []string{"B."}) || !slices.Equal(off.IDs, []string{"host:2"}) {
			t.Errorf("%s: the split-off identity: %+v %v", merge, off, err)
		}
	}
}

// What a host write remembers with each of its ids (identity_keys source,
// host_name and host_other_names, which a split gives back): a new id is
// inserted with its record's names, a known one (the host's, or one
// OpenAlex linked) becomes the host's and gains the record's other names
// (sorted, distinct), and keeps its name when the record gives none.
func TestHostWriteRemembersNamesWithEveryID(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if err := e.reg.Observe(e.ctx, identity.SourceOpenAlex, []identity.Record{{Kind: follow.Researcher, IDs: []string{"openalex:A1"}, Name: "Z. Upstream"}}); err != nil {
		t.Fatal(err)
	}
	e.put(`{"ids": ["host:1", "s2:1"], "name": "Alice", "other_names": ["b", "a", "b"]}`)
	e.put(`{"ids": ["host:1", "s2:2"], "other_names": ["c", "a"]}`)
	e.put(`{"ids": ["host:1"], "name": "Alicia"}`)
	e.put(`{"ids": ["openalex:A1", "host:9"], "name": "Zed"}`)
	type row struct {
		source, name string
		others       []string
	}
	want := map[string]row{
		"researcher:host:1":      {"host", "Alicia", []string{"a", "b", "c"}},
		"researcher:s2:1":        {"host", "Alice", []string{"a", "b"}},
		"researcher:s2:2":        {"host", "", []string{"a", "c"}},
		"researcher:openalex:A1": {"host", "Zed", []string{}},
		"researcher:host:9":      {"host", "Zed", []string{}},
	}
	for key, w := range want {
		var got row
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT source, coalesce(host_name, ''), host_other_names FROM identity_keys WHERE key = $1`, key).
			Scan(&got.source, &got.name, &got.others); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %+v, want %+v", key, got, w)
		}
	}
}

// TestHostWriteAgainRewritesNoKey: a host sending again the records it
// sent (a periodic sync) leaves every key's row as it was (its xmin: not
// rewritten), while a new name or other name for a known key is written.
func TestHostWriteAgainRewritesNoKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if err := e.reg.Observe(e.ctx, identity.SourceOpenAlex, []identity.Record{{Kind: follow.Researcher, IDs: []string{"openalex:A1"}, Name: "Z. Upstream"}}); err != nil {
		t.Fatal(err)
	}
	records := []string{
		`{"ids": ["host:1", "s2:1"], "name": "Alice", "other_names": []}`,
		`{"ids": ["openalex:A1", "host:9"], "name": "Zed"}`,
		`{"ids": ["host:2"]}`,
	}
	for _, r := range records {
		e.put(r)
	}
	keys := []string{"researcher:host:1", "researcher:s2:1", "researcher:openalex:A1", "researcher:host:9", "researcher:host:2"}
	versions := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		rows, err := e.db.Pool.Query(e.ctx, `SELECT key, xmin::text FROM identity_keys WHERE key = ANY($1)`, keys)
		if err != nil {
			t.Fatal(err)
		}
		var k, x string
		if _, err := pgx.ForEachRow(rows, []any{&k, &x}, func() error { out[k] = x; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(out) != len(keys) {
			t.Fatalf("%d of the %d keys stored: %v", len(out), len(keys), out)
		}
		return out
	}
	before := versions()
	for _, r := range records {
		e.put(r)
	}
	if after := versions(); !reflect.DeepEqual(after, before) {
		t.Errorf("the same records again rewrote keys: xmin %v, before %v", after, before)
	}
	e.put(`{"ids": ["host:9", "openalex:A1"], "name": "Zed", "other_names": ["Z. Upstream"]}`)
	after := versions()
	for _, k := range []string{"researcher:openalex:A1", "researcher:host:9"} {
		if after[k] == before[k] {
			t.Errorf("%s: not written for a new other name", k)
		}
	}
	if after["researcher:s2:1"] != before["researcher:s2:1"] {
		t.Error("researcher:s2:1 rewritten by another record")
	}
}
