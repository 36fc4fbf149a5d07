package catalog_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/testpaper"
	"followfeed/internal/testwait"
	"followfeed/paper"
)

// backfillFixture is a store with papers of the last days and a user who
// follows search (no backfill job: the tests call BackfillSearch).
type backfillFixture struct {
	store   *catalog.Store
	db      *database.DB
	follows *follow.Service
	user    int64
	search  follow.Target
	now     time.Time
}

func newBackfillFixture(t *testing.T, search string) *backfillFixture {
	t.Helper()
	store, db := newStore(t)
	f := &backfillFixture{store: store, db: db, follows: follow.NewService(db), now: time.Now().UTC(),
		search: follow.Target{Kind: follow.Query, ID: search}}
	u, err := account.NewUsers(db).Ensure(context.Background(), &auth.Claims{Subject: "backfilled"})
	if err != nil {
		t.Fatal(err)
	}
	f.user = u.ID
	return f
}

// paper is a cs.LG paper titled title, announced days ago.
func (f *backfillFixture) paper(id, title string, days float64) paper.Paper {
	at := f.now.Add(-time.Duration(days * float64(24*time.Hour)))
	return testPaper(id, func(p *paper.Paper) { p.Title, p.SubmittedAt, p.AnnouncedAt = title, at, at })
}

func (f *backfillFixture) ingest(t *testing.T, ctx context.Context, ps ...paper.Paper) {
	t.Helper()
	if _, err := f.store.Ingest(ctx, ps, catalog.SourcePush); err != nil {
		t.Fatalf("ingest %s: %v", ps[0].ArxivID, err)
	}
}

func (f *backfillFixture) follow(t *testing.T) {
	t.Helper()
	if _, _, err := f.follows.Follow(context.Background(), f.user, f.search, follow.Options{}); err != nil {
		t.Fatal(err)
	}
}

func (f *backfillFixture) since() time.Time { return f.now.Add(-catalog.BackfillDays * 24 * time.Hour) }

// checkHits checks that the search's search_hits rows list exactly want
// (arXiv ids), each paper once, and that want is what the search finds
// among the window's papers as stored now.
func (f *backfillFixture) checkHits(t *testing.T, want ...string) {
	t.Helper()
	ctx := context.Background()
	rows, err := f.db.Pool.Query(ctx, `
		SELECT p.arxiv_id, count(*) FROM search_matches k JOIN papers p ON p.id = k.paper_id
		WHERE k.key = $1 GROUP BY 1 ORDER BY 1`, f.search.Key())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var id string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		got = append(got, id)
		if n != 1 {
			t.Errorf("%s is listed %d times for %s", id, n, f.search.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s lists %v, want %v", f.search.ID, got, want)
	}
	// What a scan of the stored papers finds now.
	var ids []int64
	if err := f.db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(id), '{}') FROM papers
		WHERE deleted_at IS NULL AND coalesce(announced_at, submitted_at, created_at) >= $1`, f.since()).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	tx, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	stored, err := catalog.Load(ctx, tx, ids, catalog.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	q, err := follow.CompileQuery(f.search.ID)
	if err != nil {
		t.Fatal(err)
	}
	var matching []string
	for _, p := range stored {
		if q.Match(p.Doc()) {
			matching = append(matching, p.ArxivID)
		}
	}
	slices.Sort(matching)
	if !slices.Equal(matching, want) {
		t.Errorf("the stored papers' text matches %v, the test wants %v", matching, want)
	}
}

// TestBackfillNeverBlocksIngest: a backfill scans without the writers'
// lock. Held in the middle of its scan (after its first chunk), ingests
// complete, and they change what it scanned in every way: a new matching
// paper (the ingest matches it itself), a paper it matched whose text is
// corrected so it no longer matches, one it did not match corrected so it
// does (the ingest matches it), a withdrawal, and a paper stored while
// nobody followed the search (so no ingest matched it: only the backfill
// can). When it resumes, the search lists exactly what its text matches
// now among the window's papers, each paper once.
func TestBackfillNeverBlocksIngest(t *testing.T) {
	t.Parallel()
	f := newBackfillFixture(t, "diffusion models")
	ctx := context.Background()
	f.ingest(t, ctx,
		f.paper("2609.00001", "Diffusion models for graphs", 2),
		f.paper("2609.00002", "Diffusion models, before a correction", 3),
		f.paper("2609.00003", "Transformers for tables", 4),
		f.paper("2609.00004", "Diffusion models, to be withdrawn", 5),
		f.paper("2607.00005", "Diffusion models, long ago", 45))
	f.follow(t)

	scanned, resume := make(chan int), make(chan struct{})
	release := sync.OnceFunc(func() { close(resume) })
	defer release() // a failing test does not leave the backfill held
	first := true
	catalog.SetBackfillScanned(f.store, func(search string, n int) {
		if search != f.search.ID || !first {
			return
		}
		first = false
		scanned <- n
		<-resume
	})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := f.store.BackfillSearch(ctx, f.search.ID, f.since(), nil)
		done <- result{n, err}
	}()
	select {
	case n := <-scanned:
		t.Logf("the backfill is held after scanning %d papers", n)
	case r := <-done:
		t.Fatalf("the backfill ended without scanning: %+v", r)
	}

	// Ingest goes on while the backfill is in its scan: each must commit
	// within 10 s (behind a lock held until the scan ends, it would not).
	quick, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	began := time.Now()
	f.ingest(t, quick,
		f.paper("2609.00006", "Diffusion models for proteins", 1),
		f.paper("2609.00002", "Transformers, corrected", 3),
		f.paper("2609.00003", "Diffusion models for tables", 4),
		testPaper("2609.00004", func(p *paper.Paper) { p.Deleted = true }))
	// Stored while nobody follows the search: no ingest matches it.
	if _, err := f.follows.Unfollow(quick, f.user, f.search); err != nil {
		t.Fatal(err)
	}
	f.ingest(t, quick, f.paper("2609.00007", "Diffusion models nobody was told of", 1))
	f.follow(t)
	t.Logf("three ingests committed in %v while the backfill was held in its scan", time.Since(began).Round(time.Millisecond))
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The ingest matched 2609.00006 and .00003 itself; the backfill adds
	// .00001 (unchanged) and .00007 (stored unmatched), not .00002 (no
	// longer matching), .00004 (withdrawn) or .00005 (too old).
	if r.n != 2 {
		t.Errorf("the backfill added %d papers, want 2", r.n)
	}
	f.checkHits(t, "2609.00001", "2609.00003", "2609.00006", "2609.00007")
	if n, err := f.store.BackfillSearch(ctx, f.search.ID, f.since(), nil); err != nil || n != 0 {
		t.Errorf("a second backfill: %d papers, %v; want 0", n, err)
	}
}

// TestBackfillCatchesUpUnderTheLock: a writer that holds the writers'
// lock from before the backfill takes it (an ingest that read the followed
// queries before the follow committed, so it matches nothing for this
// search) stores a matching paper and commits only while the backfill
// waits for the lock: the backfill's last look, under the lock, finds it.
func TestBackfillCatchesUpUnderTheLock(t *testing.T) {
	t.Parallel()
	f := newBackfillFixture(t, "spectral updates")
	ctx := context.Background()
	f.ingest(t, ctx, f.paper("2609.00011", "Spectral updates for local learning", 2))
	f.follow(t)

	// The writer: the writers' lock, and a paper row of its own.
	writer, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(ctx)
	if _, err := writer.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, catalog.WritersLock); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Exec(ctx, `
		INSERT INTO papers (arxiv_id, version, title, authors, primary_category, categories, abs_url, pdf_url, source, announced_at)
		VALUES ('2609.00012', 1, 'Spectral updates, committed late', '[]', 'cs.LG', '{cs.LG}', 'u', 'u', 'push', now())`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var added int
	go func() {
		var err error
		added, err = f.store.BackfillSearch(ctx, f.search.ID, f.since(), nil)
		done <- err
	}()
	testwait.For(t, 10*time.Second, "the backfill to wait for the writers' lock", func() bool {
		return testpaper.Count(t, f.db, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
			int64(uint32(catalog.WritersLock))) > 0
	})
	if err := writer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if added != 2 {
		t.Errorf("the backfill added %d papers, want 2", added)
	}
	f.checkHits(t, "2609.00011", "2609.00012")
}
