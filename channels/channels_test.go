package channels_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/match"
	"followfeed/notify"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/worker"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// env is the channel machinery on a fresh database: the real paper store
// (whose ingests enqueue real River match jobs), the real match service
// with the channels' OnAffected hook, and a channels service on an injected
// clock. No River client works the jobs: the test runs them (run), so it
// decides when time passes.
type env struct {
	t       *testing.T
	ctx     context.Context
	db      *database.DB
	papers  *catalog.Store
	follows *follow.Service
	matcher *match.Service
	prefs   *notify.Preferences
	addrs   *account.Addresses
	rank    *ranking.Service
	ch      *channels.Service
	clk     *clock
	done    map[int64]bool // River job ids already run
	rcv     *receivers
}

func setup(t *testing.T, start time.Time) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), db: testdb.New(t), clk: &clock{t: start}, done: map[int64]bool{}}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	enq := worker.NewEnqueuer(ins)
	e.papers = catalog.NewStore(e.db, enq)
	e.follows = follow.NewService(e.db)
	e.matcher = match.NewService(e.db)
	base, _ := url.Parse("https://followfeed.test")
	e.addrs = account.NewAddresses(e.db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, enq)
	e.prefs = notify.NewPreferences(e.db, e.addrs, e.clk.Now)
	e.rank = ranking.New(ranking.Config{DB: e.db, Enqueuer: enq, Matcher: e.matcher})
	e.ch = channels.NewService(channels.Config{DB: e.db, Matcher: e.matcher, Follows: e.follows, Enqueuer: enq,
		Guard: channels.NewGuard([]string{"127.0.0.1"}), BaseURL: "https://followfeed.test", Now: e.clk.Now, SecretKey: testSecretKey,
		Ranking: e.rank, Feedback: e.addrs})
	e.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
		return e.ch.ScheduleInstant(ctx, tx, res.Users)
	})
	e.rcv = newReceivers(t)
	return e
}

// user creates a user in time zone tz with digest hour and weekday (the
// digest itself off: channels keep their own schedule) and follows.
func (e *env) reader(sub, tz string, hour int, weekday string, follows ...string) int64 {
	e.t.Helper()
	u, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: sub})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range follows {
		kind, id, _ := strings.Cut(f, "/")
		tg, err := follow.ParseTarget(kind, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.follows.Follow(e.ctx, u.ID, tg, follow.Options{}); err != nil {
			e.t.Fatal(err)
		}
	}
	off := "off"
	if _, err := e.prefs.Update(e.ctx, u.ID, notify.ProfilePatch{Timezone: &tz,
		Digest: &notify.DigestPatch{Frequency: &off, Hour: &hour, Weekday: &weekday}}); err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

// webhook adds a webhook channel of user to the receiver named name.
func (e *env) webhook(user int64, name, mode string, only ...follow.Target) int64 {
	e.t.Helper()
	typ, u := "webhook", e.rcv.URL+"/"+name
	spec := channels.Spec{Type: &typ, URL: &u, Mode: &mode}
	if only != nil {
		spec.Follows = &only
	}
	c, err := e.ch.Create(e.ctx, user, spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.ID
}

func testPaper(id, cat string, authorIDs ...string) paper.Paper {
	return paper.Paper{ArxivID: id, Title: "Paper " + id, PrimaryCategory: cat, Categories: []string{cat},
		Authors: []paper.Author{{Name: "Mingzhi Wen", IDs: authorIDs}}}
}

// match runs the match job of an ingest result (as the worker would).
func (e *env) match(res *catalog.IngestResult) {
	e.t.Helper()
	if res.Keys == 0 {
		return
	}
	if _, err := e.matcher.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) push(ps ...paper.Paper) {
	e.t.Helper()
	res, err := e.papers.Ingest(e.ctx, ps, catalog.SourcePush)
	if err != nil {
		e.t.Fatal(err)
	}
	e.match(res)
}

// run works every queued channel_collect job, then every channel_deliver
// job, once each (as the worker would), and returns the collections run.
func (e *env) run() (collected []int64) {
	e.t.Helper()
	for _, j := range testjobs.List(e.t, e.db.Pool, worker.ChannelCollectArgs{}.Kind()) {
		if e.done[j.ID] {
			continue
		}
		e.done[j.ID] = true
		var a worker.ChannelCollectArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.ch.Collect(e.ctx, a.ChannelID); err != nil {
			e.t.Fatal(err)
		}
		collected = append(collected, a.ChannelID)
	}
	for _, j := range testjobs.List(e.t, e.db.Pool, worker.ChannelDeliverArgs{}.Kind()) {
		if e.done[j.ID] {
			continue
		}
		e.done[j.ID] = true
		var a worker.ChannelDeliverArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			e.t.Fatal(err)
		}
		if err := e.ch.Deliver(e.ctx, a.EventID); err != nil {
			e.t.Fatalf("delivering event %d: %v", a.EventID, err)
		}
	}
	return collected
}

// receivers is one HTTP server on 127.0.0.1 recording, per path, the
// papers of every papers.matched body it is sent.
type receivers struct {
	*httptest.Server
	mu     sync.Mutex
	got    map[string][]string         // path → arXiv ids in arrival order
	events map[string][]channels.Event // path → the events in arrival order
}

func newReceivers(t *testing.T) *receivers {
	r := &receivers{got: map[string][]string{}, events: map[string][]channels.Event{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev channels.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		r.mu.Lock()
		name := strings.TrimPrefix(req.URL.Path, "/")
		for _, p := range ev.Data.Papers {
			r.got[name] = append(r.got[name], p.ArxivID)
		}
		r.events[name] = append(r.events[name], ev)
		r.mu.Unlock()
		w.WriteHeader(204)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receivers) papers(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[name])
}

func (r *receivers) received(name string) []channels.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[name])
}

// TestDailyAndWeeklyChannelsGetTheirWindowAtTheUsersHour drives the
// scheduler with an injected clock through eight days, every 15 minutes,
// for a user in Tokyo whose digest hour is 09:00 and weekday Friday: the
// daily channel collects at 09:00 Tokyo each day (00:00 UTC) and gets the
// papers matched since its last window, nothing before its hour; the
// weekly channel collects only on Friday at 09:00 and gets the whole
// week's papers, each once.
func TestDailyAndWeeklyChannelsGetTheirWindowAtTheUsersHour(t *testing.T) {
	t.Parallel()
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, tokyo) // Monday 10:00 in Tokyo, just after the hour
	e := setup(t, start)
	user := e.reader("night-shift", "Asia/Tokyo", 9, "friday", "category/cs.LG")
	daily := e.webhook(user, "daily", "daily")
	weekly := e.webhook(user, "weekly", "weekly")

	// Papers arrive on Monday, Tuesday and Thursday afternoons (Tokyo).
	arrivals := map[time.Time]paper.Paper{
		time.Date(2026, 11, 30, 15, 0, 0, 0, tokyo): testPaper("2611.00001", "cs.LG"),
		time.Date(2026, 12, 1, 15, 0, 0, 0, tokyo):  testPaper("2612.00002", "cs.LG"),
		time.Date(2026, 12, 3, 15, 0, 0, 0, tokyo):  testPaper("2612.00003", "cs.LG"),
		time.Date(2026, 12, 3, 16, 0, 0, 0, tokyo):  testPaper("2612.00004", "astro-ph.GA"), // not followed
	}
	type window struct {
		at      string
		channel int64
	}
	var windows []window
	for now := start; now.Before(start.AddDate(0, 0, 8)); now = now.Add(15 * time.Minute) {
		e.clk.Set(now)
		if p, ok := arrivals[now]; ok {
			e.push(p)
		}
		if _, err := e.ch.ScheduleWindows(e.ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range e.run() {
			windows = append(windows, window{now.In(tokyo).Format("Mon 02 15:04"), id})
		}
		if now.Equal(time.Date(2026, 12, 1, 8, 45, 0, 0, tokyo)) {
			if got := e.rcv.papers("daily"); len(got) != 0 {
				t.Fatalf("before Tuesday 09:00 the daily channel got %v", got)
			}
		}
	}
	var dailyAt, weeklyAt []string
	for _, w := range windows {
		switch w.channel {
		case daily:
			dailyAt = append(dailyAt, w.at)
		case weekly:
			weeklyAt = append(weeklyAt, w.at)
		}
	}
	wantDaily := []string{"Tue 01 09:00", "Wed 02 09:00", "Thu 03 09:00", "Fri 04 09:00", "Sat 05 09:00", "Sun 06 09:00", "Mon 07 09:00", "Tue 08 09:00"}
	if !slices.Equal(dailyAt, wantDaily) {
		t.Errorf("daily windows at %v, want %v", dailyAt, wantDaily)
	}
	if want := []string{"Fri 04 09:00"}; !slices.Equal(weeklyAt, want) {
		t.Errorf("weekly windows at %v, want %v", weeklyAt, want)
	}
	// Daily: Monday's paper on Tuesday, Tuesday's on Wednesday, Thursday's
	// on Friday; each once.
	if got, want := e.rcv.papers("daily"), []string{"2611.00001", "2612.00002", "2612.00003"}; !slices.Equal(got, want) {
		t.Errorf("daily channel got %v, want %v", got, want)
	}
	got := e.rcv.papers("weekly")
	sort.Strings(got)
	if want := []string{"2611.00001", "2612.00002", "2612.00003"}; !slices.Equal(got, want) {
		t.Errorf("weekly channel got %v, want %v", got, want)
	}
	// Running the scheduler again at the same instant queues nothing.
	if n, err := e.ch.ScheduleWindows(e.ctx); err != nil || n != 0 {
		t.Errorf("a second run queued %d (%v)", n, err)
	}
}

// TestAPaperReachesEachChannelOnce: a paper matched again later — an
// OpenAlex enrichment adds a researcher the user follows (new key rows,
// a new match job that affects the user again), the same record pushed
// again, a new version — is not sent a second time; each of the user's
// two channels gets it exactly once, and later papers still flow.
func TestAPaperReachesEachChannelOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	user := e.reader("twice", "UTC", 7, "monday", "category/cs.LG", "researcher/openalex:A5023888391")
	e.webhook(user, "one", "instant")
	e.webhook(user, "two", "instant")

	e.push(testPaper("2611.01234", "cs.LG"))
	if got := e.run(); len(got) != 2 {
		t.Fatalf("the first match queued %d collections, want 2", len(got))
	}
	for _, ch := range []string{"one", "two"} {
		if got := e.rcv.papers(ch); !slices.Equal(got, []string{"2611.01234"}) {
			t.Fatalf("channel %s got %v after the first match", ch, got)
		}
	}

	// Enrichment: the author turns out to be a followed researcher. The
	// match job affects the user again (their feed changes: a new reason).
	res, err := e.papers.Enrich(e.ctx, []string{"2611.01234"}, func(p *paper.Paper) {
		p.Authors[0].IDs = []string{"openalex:A5023888391"}
	})
	if err != nil || res.Keys == 0 {
		t.Fatalf("enrich: %+v %v", res, err)
	}
	e.match(res)
	if got := e.run(); len(got) != 2 {
		t.Errorf("the enrichment's match queued %d collections, want 2 (the user was affected)", len(got))
	}
	// The same record again, and a new version (replacements are off).
	e.push(testPaper("2611.01234", "cs.LG", "openalex:A5023888391"))
	v2 := testPaper("2611.01234v2", "cs.LG", "openalex:A5023888391")
	v2.Title = "Paper 2611.01234, revised"
	e.push(v2)
	e.run()
	for _, ch := range []string{"one", "two"} {
		if got := e.rcv.papers(ch); !slices.Equal(got, []string{"2611.01234"}) {
			t.Errorf("channel %s got %v: the paper was sent again", ch, got)
		}
	}

	e.push(testPaper("2612.00001", "cs.LG"))
	e.run()
	for _, ch := range []string{"one", "two"} {
		if got := e.rcv.papers(ch); !slices.Equal(got, []string{"2611.01234", "2612.00001"}) {
			t.Errorf("channel %s got %v after a new paper", ch, got)
		}
	}
}

// TestPruneRemovesOldFinalEvents: delivered and failed events older than
// 30 days go with their attempts; pending ones and recent ones stay.
func TestPruneRemovesOldFinalEvents(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := setup(t, now)
	user := e.reader("keeper", "UTC", 7, "monday", "category/cs.LG")
	id := e.webhook(user, "prune", "instant")
	for range 4 {
		if _, err := e.ch.Test(e.ctx, user, id); err != nil {
			t.Fatal(err)
		}
	}
	e.run() // four delivered events, one attempt each
	var ids []int64
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT id FROM channel_events WHERE channel_id = $1 ORDER BY id`, id)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != 4 {
		t.Fatalf("events %v %v", ids, err)
	}
	// Event 0: delivered 31 days ago; 1: failed 31 days ago; 2: pending
	// since 40 days (a delivery may still come); 3: delivered 29 days ago.
	for i, q := range []string{
		`UPDATE channel_events SET updated_at = $2::timestamptz - interval '31 days' WHERE id = $1`,
		`UPDATE channel_events SET state = 'failed', updated_at = $2::timestamptz - interval '31 days' WHERE id = $1`,
		`UPDATE channel_events SET state = 'pending', updated_at = $2::timestamptz - interval '40 days' WHERE id = $1`,
		`UPDATE channel_events SET updated_at = $2::timestamptz - interval '29 days' WHERE id = $1`,
	} {
		if _, err := e.db.Pool.Exec(e.ctx, q, ids[i], now); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.ch.Prune(e.ctx)
	if err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want 2", n, err)
	}
	rows, _ = e.db.Pool.Query(e.ctx, `SELECT id FROM channel_events WHERE channel_id = $1 ORDER BY id`, id)
	left, _ := pgx.CollectRows(rows, pgx.RowTo[int64])
	if !slices.Equal(left, ids[2:]) {
		t.Errorf("left %v, want %v", left, ids[2:])
	}
	ds, err := e.ch.Deliveries(e.ctx, user, id)
	if err != nil || len(ds) != 2 {
		t.Errorf("%d attempts left (%v), want the 2 of the kept events", len(ds), err)
	}
	if n, _ := e.ch.Prune(e.ctx); n != 0 {
		t.Errorf("a second prune deleted %d", n)
	}
}

// TestPruneForgetsSentPapersAfterTheLedgerRetention: a channel's record
// of the papers it was sent (channel_papers) keeps them for 90 days: the
// prune drops a record 91 days old and keeps one 89 days old, and leaves
// the events alone (they have their own, shorter retention).
func TestPruneForgetsSentPapersAfterTheLedgerRetention(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := setup(t, now)
	user := e.reader("ledger", "UTC", 7, "monday", "category/cs.LG")
	id := e.webhook(user, "ledger", "instant")
	e.push(testPaper("2611.00001", "cs.LG"), testPaper("2611.00002", "cs.LG"))
	e.run()
	for arxiv, age := range map[string]string{"2611.00001": "91 days", "2611.00002": "89 days"} {
		if _, err := e.db.Pool.Exec(e.ctx, `
			UPDATE channel_papers SET sent_at = $2::timestamptz - $3::interval
			WHERE channel_id = $1 AND paper_id = (SELECT id FROM papers WHERE arxiv_id = $4)`, id, now, age, arxiv); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.ch.Prune(e.ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT p.arxiv_id FROM channel_papers c JOIN papers p ON p.id = c.paper_id WHERE c.channel_id = $1`, id)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(left, []string{"2611.00002"}) {
		t.Errorf("records left %v (%v), want only the paper sent 89 days ago", left, err)
	}
	var events int
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM channel_events WHERE channel_id = $1`, id).Scan(&events); err != nil || events != 1 {
		t.Errorf("%d events left (%v), want the one just delivered", events, err)
	}
}

// TestAFilteredChannelGetsAPaperWhenItsFollowFirstMatches: the user
// follows cs.LG and a researcher. A channel limited to the researcher does
// not get a cs.LG paper by someone else, but gets it when enrichment later
// finds the researcher among its authors, although the user's cs.LG
// follow matched it before; a paper that arrives with the researcher comes
// at once. A channel limited to both follows gets the first paper once
// (cs.LG, then the researcher in a later window: the ledger), and so does
// the unfiltered channel.
func TestAFilteredChannelGetsAPaperWhenItsFollowFirstMatches(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	const researcher = "openalex:A5023888391"
	user := e.reader("filtered", "UTC", 7, "monday", "category/cs.LG", "researcher/"+researcher)
	r, err := follow.ParseTarget("researcher", researcher)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := follow.ParseTarget("category", "cs.LG")
	if err != nil {
		t.Fatal(err)
	}
	e.webhook(user, "researcher", "instant", r)
	e.webhook(user, "both", "instant", lg, r)
	e.webhook(user, "all", "instant")
	daily := e.webhook(user, "daily", "daily", r)

	e.push(testPaper("2611.00100", "cs.LG")) // no author ids yet
	e.run()
	if got := e.rcv.papers("researcher"); len(got) != 0 {
		t.Fatalf("the researcher's channel got %v before any researcher matched", got)
	}
	if got := e.rcv.papers("both"); !slices.Equal(got, []string{"2611.00100"}) {
		t.Fatalf("the channel of both follows got %v, want the cs.LG paper", got)
	}

	// Enrichment adds the researcher: the researcher's channel gets the
	// paper now; the others already had it.
	res, err := e.papers.Enrich(e.ctx, []string{"2611.00100"}, func(p *paper.Paper) {
		p.Authors[0].IDs = []string{researcher}
	})
	if err != nil || res.Keys == 0 {
		t.Fatalf("enrich: %+v %v", res, err)
	}
	e.match(res)
	e.run()
	// A paper that arrives with the researcher already known.
	e.push(testPaper("2611.00200", "cs.LG", researcher))
	e.run()
	// The daily channel's window closes at 07:00 the next day.
	e.clk.Set(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC))
	if _, err := e.ch.ScheduleWindows(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.run(); !slices.Contains(got, daily) {
		t.Fatalf("the daily channel was not collected at its hour (collected %v)", got)
	}

	for ch, want := range map[string][]string{
		"researcher": {"2611.00100", "2611.00200"},
		"both":       {"2611.00100", "2611.00200"},
		"all":        {"2611.00100", "2611.00200"},
	} {
		if got := e.rcv.papers(ch); !slices.Equal(got, want) {
			t.Errorf("channel %s got %v, want %v", ch, got, want)
		}
	}
	got := e.rcv.papers("daily")
	sort.Strings(got)
	if want := []string{"2611.00100", "2611.00200"}; !slices.Equal(got, want) {
		t.Errorf("the daily researcher channel got %v, want %v", got, want)
	}
}
