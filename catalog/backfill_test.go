package catalog_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testjobs"
	"followfeed/internal/testpaper"
	"followfeed/internal/testwait"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/worker"
)

// TestBackfillIsAJob: following a query commits at once even while
// another transaction holds the writers' lock (an ingest, a backfill): the
// follow only enqueues a search_backfill job, one per search however many
// follow it meanwhile. A real River client then works the job: the last 30
// days' matches get their key rows, the match job bumps every follower's
// feed version within seconds, a search unfollowed before its job ran gets
// nothing, and running the backfill again writes nothing.
func TestBackfillIsAJob(t *testing.T) {
	t.Parallel()
	store, db := newStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	at := func(d time.Duration) func(*paper.Paper) {
		return func(p *paper.Paper) { p.SubmittedAt, p.AnnouncedAt = now.Add(-d), now.Add(-d) }
	}
	titled := func(title string) func(*paper.Paper) { return func(p *paper.Paper) { p.Title = title } }
	day := 24 * time.Hour
	if _, err := store.Ingest(ctx, []paper.Paper{
		testPaper("2609.00001", at(2*day), titled("Diffusion models for graphs")),
		testPaper("2609.00002", at(10*day), titled("Score-based diffusion models")),
		testPaper("2609.00003", at(29*day), titled("Diffusion models, a month ago")),
		testPaper("2609.00004", at(3*day), titled("Transformers for tables")),
		testPaper("2607.00005", at(45*day), titled("Diffusion models, long ago")),
	}, catalog.SourcePush); err != nil {
		t.Fatal(err)
	}
	users := account.NewUsers(db)
	uid := func(sub string) int64 {
		u, err := users.Ensure(ctx, &auth.Claims{Subject: sub})
		if err != nil {
			t.Fatal(err)
		}
		return u.ID
	}
	a, b, c := uid("a"), uid("b"), uid("c")
	follows := follow.NewService(db)
	follows.OnFollow(store.BackfillHook(nil))
	search := follow.Target{Kind: follow.Query, ID: "diffusion models"}
	dropped := follow.Target{Kind: follow.Query, ID: "transformers"}
	late := follow.Target{Kind: follow.Query, ID: "graphs"}
	// The last phase holds b's follow of late open after its hooks ran
	// (held says it got there).
	hold, held := make(chan struct{}), make(chan struct{})
	follows.OnFollow(func(ctx context.Context, _ pgx.Tx, user int64, t follow.Target) error {
		if user == b && t == late {
			close(held)
			<-hold
		}
		return nil
	})

	// Another writer holds the lock for as long as it likes.
	holder, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalog.WritersLock); err != nil {
		t.Fatal(err)
	}
	quick, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	began := time.Now()
	for _, f := range []struct {
		user int64
		t    follow.Target
	}{{a, search}, {b, search}, {c, dropped}} {
		if _, created, err := follows.Follow(quick, f.user, f.t, follow.Options{}); err != nil || !created {
			t.Fatalf("follow %s while the writers' lock is held: created %v, %v (it must not wait for the lock)", f.t, created, err)
		}
	}
	t.Logf("three follows while the writers' lock was held took %v", time.Since(began).Round(time.Millisecond))
	if _, err := follows.Unfollow(ctx, c, dropped); err != nil {
		t.Fatal(err)
	}
	kind := worker.BackfillArgs{}.Kind()
	if jobs := testjobs.List(t, db.Pool, kind); len(jobs) != 2 {
		t.Fatalf("%d backfill jobs for two searches (one followed twice), want 2", len(jobs))
	}
	rows := func(s follow.Target) []string {
		r, err := db.Pool.Query(ctx, `SELECT p.arxiv_id FROM search_matches k JOIN papers p ON p.id = k.paper_id WHERE k.key = $1 ORDER BY 1`, s.Key())
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := rows(search); len(got) != 0 {
		t.Fatalf("key rows before the job ran: %v", got)
	}
	version := func(user int64) int64 {
		var v int64
		if err := db.Pool.QueryRow(ctx, `SELECT version FROM user_feeds WHERE user_id = $1`, user).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	va, vb := version(a), version(b)

	// The lock is released; a real River client works the jobs.
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	jobs := runJobs(t, db, store)
	jobs.WaitCompleted(t, db.Pool, kind, 2)
	want := []string{"2609.00001", "2609.00002", "2609.00003"}
	if got := rows(search); !slices.Equal(got, want) {
		t.Fatalf("backfilled papers %v, want %v (the last 30 days' matches only)", got, want)
	}
	if got := rows(dropped); len(got) != 0 {
		t.Errorf("a search nobody follows any more was backfilled: %v", got)
	}
	if !testwait.Until(10*time.Second, func() bool { return version(a) != va && version(b) != vb }) {
		t.Fatalf("feed versions not bumped 10 s after the backfill: a %d→%d, b %d→%d", va, version(a), vb, version(b))
	}
	t.Logf("backfilled and both followers' feed versions bumped %v after the lock was released", time.Since(released).Round(time.Millisecond))
	got, err := match.NewService(db).Matched(ctx, match.Query{UserID: b})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Papers) != 3 {
		t.Errorf("the second follower's matches: %d papers, want 3", len(got.Papers))
	}
	if n, err := store.BackfillSearch(ctx, search.ID, now.Add(-catalog.BackfillDays*day), nil); err != nil || n != 0 {
		t.Errorf("a second backfill: %d papers, %v; want 0", n, err)
	}

	// Following it again once the job has completed enqueues a new one
	// (papers stored while nobody followed have no rows yet).
	if _, err := follows.Unfollow(ctx, a, search); err != nil {
		t.Fatal(err)
	}
	if _, _, err := follows.Follow(ctx, a, search, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	jobs.WaitCompleted(t, db.Pool, kind, 3)
	if got := rows(search); !slices.Equal(got, want) {
		t.Errorf("after following again: %v, want %v", got, want)
	}

	// A follow that finds the search's job already running inserts no job
	// of its own; the running job waits for it to commit, then bumps it.
	// Here a follows late (job 4 starts and waits for the writers' lock),
	// unfollows, and b follows while the job runs, its transaction held
	// open after the job was deduplicated until the job has scanned.
	holder, err = db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalog.WritersLock); err != nil {
		t.Fatal(err)
	}
	if _, _, err := follows.Follow(ctx, a, late, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	// A job's start signals nothing (River's subscription tells of an
	// attempt's end only): its running state is polled.
	waitJobs := func(what string, n int, states ...rivertype.JobState) {
		t.Helper()
		if !testwait.Until(10*time.Second, func() bool { return testjobs.Count(t, db.Pool, kind, states...) == n }) {
			t.Fatalf("waiting for %s: %d jobs %v", what, testjobs.Count(t, db.Pool, kind, states...), states)
		}
	}
	waitJobs("the fourth job to run", 1, rivertype.JobStateRunning)
	if _, err := follows.Unfollow(ctx, a, late); err != nil {
		t.Fatal(err)
	}
	vb = version(b)
	followed := make(chan error, 1)
	go func() {
		_, _, err := follows.Follow(ctx, b, late, follow.Options{})
		followed <- err
	}()
	// b's follow has run its hooks (and left the job alone) once it waits
	// on hold; then the job scans, and waits for b's follow (a lock).
	select {
	case <-held:
	case err := <-followed:
		t.Fatalf("b's follow ended before its hooks held it: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("b's follow did not reach its hooks in 10 s")
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(10*time.Second, func() bool {
		return testpaper.Count(t, db, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}) {
		t.Fatal("the job did not come to wait for b's follow in progress")
	}
	if n := testjobs.Count(t, db.Pool, kind); n != 4 {
		t.Fatalf("%d backfill jobs, want 4: b's follow inserted one while the search's job ran", n)
	}
	if testjobs.Count(t, db.Pool, kind, rivertype.JobStateRunning) != 1 || len(rows(late)) != 0 {
		t.Fatalf("the job did not wait for b's follow in progress (rows %v)", rows(late))
	}
	close(hold)
	if err := <-followed; err != nil {
		t.Fatalf("b's follow while the job ran: %v", err)
	}
	jobs.WaitCompleted(t, db.Pool, kind, 4)
	if got := rows(late); !slices.Equal(got, []string{"2609.00001"}) {
		t.Errorf("the search b followed while its job ran: rows %v, want [2609.00001]", got)
	}
	if version(b) <= vb+1 { // b's own follow bumped it once
		t.Errorf("b's feed version %d → %d: the backfill did not bump it", vb, version(b))
	}
	if n := testjobs.Count(t, db.Pool, kind, rivertype.JobStateRetryable, rivertype.JobStateDiscarded); n != 0 {
		t.Errorf("%d backfill jobs failed", n)
	}
}

// runJobs starts a River client working backfill and match jobs until the
// test ends, and returns its events, subscribed before it started.
func runJobs(t *testing.T, db *database.DB, store *catalog.Store) *testjobs.Events {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	client, err := worker.NewClient(worker.Deps{Pool: db.Pool, Logger: logger, Jobs: []worker.Registration{
		worker.Register(&worker.BackfillWorker{Papers: store, Logger: logger}),
		worker.Register(&worker.MatchWorker{Match: match.NewService(db), Logger: logger}),
	}}, worker.Settings{TestOnly: true, FetchPollInterval: 200 * time.Millisecond, SoftStop: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	events := testjobs.Subscribe(t, client)
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := worker.Stop(ctx, client); err != nil {
			t.Error(err)
		}
	})
	return events
}
