package database_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/database"
	"followfeed/internal/pgcluster"
)

// pair is a throwaway primary and a real streaming standby of it
// (pg_basebackup -R), shared by the subtests of TestReplica, which run one
// after the other: the last one stops and restarts the standby.
type pair struct {
	primary, standby *pgcluster.Cluster
	// db and rep are plain pools on each server, for the test's own
	// writes and for pausing the standby's replay.
	db, rep *database.DB
	marks   int // the newest row of marks written on the primary
}

func newPair(t *testing.T) *pair {
	t.Helper()
	ctx := context.Background()
	primary, err := pgcluster.New(ctx)
	if errors.Is(err, pgcluster.ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.Destroy)
	p := &pair{primary: primary}
	p.db = open(t, primary.URL("postgres"))
	if _, err := p.db.Pool.Exec(ctx, `CREATE TABLE marks (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if p.standby, err = primary.Standby(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.standby.Destroy)
	p.rep = open(t, p.standby.URL("postgres"))
	p.mark(t)
	p.caughtUp(t)
	return p
}

func open(t *testing.T, dsn string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), dsn, database.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// mark writes the next row of marks on the primary and returns its n.
func (p *pair) mark(t *testing.T) int {
	t.Helper()
	p.marks++
	if _, err := p.db.Pool.Exec(context.Background(), `INSERT INTO marks VALUES ($1)`, p.marks); err != nil {
		t.Fatal(err)
	}
	return p.marks
}

// caughtUp waits until the standby has every mark.
func (p *pair) caughtUp(t *testing.T) {
	t.Helper()
	waitFor(t, "the standby to replay every mark", func() bool {
		var n int
		err := p.rep.Pool.QueryRow(context.Background(), `SELECT coalesce(max(n), 0) FROM marks`).Scan(&n)
		return err == nil && n >= p.marks
	})
}

func (p *pair) replay(t *testing.T, pause bool) {
	t.Helper()
	fn := "pg_wal_replay_resume"
	if pause {
		fn = "pg_wal_replay_pause"
	}
	if _, err := p.rep.Pool.Exec(context.Background(), `SELECT `+fn+`()`); err != nil {
		t.Fatal(err)
	}
}

// attach opens a DB on the primary with the standby attached as its
// replica; the warn lines go to the returned log.
func (p *pair) attach(t *testing.T, opt database.ReplicaOptions) (*database.DB, *syncBuffer) {
	t.Helper()
	return attachAt(t, p.primary.URL("postgres"), p.standby.URL("postgres"), opt)
}

func attachAt(t *testing.T, primary, replica string, opt database.ReplicaOptions) (*database.DB, *syncBuffer) {
	t.Helper()
	db := open(t, primary)
	log := &syncBuffer{}
	opt.Logger = slog.New(slog.NewTextHandler(log, nil))
	if err := db.AttachReplica(replica, opt); err != nil {
		t.Fatal(err)
	}
	return db, log
}

// noMonitor is a lag monitor period no test reaches: its replica is
// never lagging, never checked, and never marked down by it.
const noMonitor = time.Hour

// fresh is the freshness check of a read that answers with mark n.
func fresh(n int) *database.Fresh {
	return &database.Fresh{SQL: `SELECT coalesce(max(n), 0) >= $1 FROM marks`, Args: []any{n}}
}

// server is where a transaction runs: "replica" or "primary".
func server(tx pgx.Tx) (string, error) {
	var standby bool
	if err := tx.QueryRow(context.Background(), `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		return "", err
	}
	if standby {
		return "replica", nil
	}
	return "primary", nil
}

// read runs a Read that records where fn ran (each run) and the newest
// mark it saw.
func read(t *testing.T, db *database.DB, f *database.Fresh) (runs []string, newest int) {
	t.Helper()
	err := db.Read(context.Background(), f, func(tx pgx.Tx) error {
		s, err := server(tx)
		if err != nil {
			return err
		}
		runs = append(runs, s)
		return tx.QueryRow(context.Background(), `SELECT coalesce(max(n), 0) FROM marks`).Scan(&newest)
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return runs, newest
}

// counts are every counter of both kinds of read.
type counts [2]struct{ Replica, Stale, Lagging, Errors, Down uint64 }

func countsOf(db *database.DB) counts {
	var c counts
	for k := range c {
		s := db.Replica().Stats(database.ReadKind(k))
		c[k].Replica, c[k].Stale, c[k].Lagging, c[k].Errors, c[k].Down =
			s.Replica.Load(), s.Stale.Load(), s.Lagging.Load(), s.Errors.Load(), s.Down.Load()
	}
	return c
}

// moved checks that since before exactly the named counters (kind and
// field, "checked.stale") moved, by one each.
func moved(t *testing.T, db *database.DB, before counts, want ...string) {
	t.Helper()
	exp := before
	for _, w := range want {
		kind, field, _ := strings.Cut(w, ".")
		k := database.Checked
		if kind == "bounded" {
			k = database.Bounded
		}
		c := &exp[k]
		switch field {
		case "replica":
			c.Replica++
		case "stale":
			c.Stale++
		case "lagging":
			c.Lagging++
		case "errors":
			c.Errors++
		case "down":
			c.Down++
		default:
			t.Fatalf("no counter %q", w)
		}
	}
	if got := countsOf(db); got != exp {
		t.Errorf("counters %+v, want %+v (%v since %+v)", got, exp, want, before)
	}
}

// readOn runs one read (read) and checks that fn ran once, on where, and
// that exactly counter moved; it returns the newest mark fn saw.
func readOn(t *testing.T, db *database.DB, f *database.Fresh, where, counter string) (newest int) {
	t.Helper()
	c := countsOf(db)
	runs, newest := read(t, db, f)
	wantRuns(t, runs, where)
	moved(t, db, c, counter)
	return newest
}

func wantRuns(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("fn ran on %v, want %v", got, want)
	}
}

// TestReplica runs DB.Read and ReadBatch against a real primary and a
// real streaming standby: checked reads go to the replica exactly when its
// snapshot passes the freshness check, bounded reads exactly when the lag
// monitor last found it caught up; any replica error sends the read to the
// primary and leaves the replica alone for DownFor; a domain answer or
// the caller's cancellation is final; each read is counted once, under its
// kind.
func TestReplica(t *testing.T) {
	p := newPair(t)
	ctx := context.Background()

	t.Run("checked reads: fresh on the replica, stale on the primary", func(t *testing.T) {
		db, _ := p.attach(t, database.ReplicaOptions{LagEvery: noMonitor})
		n := p.marks
		if got := readOn(t, db, fresh(n), "replica", "checked.replica"); got != n {
			t.Errorf("the replica saw mark %d, want %d", got, n)
		}

		// Replay paused, a new mark on the primary: a read that must show
		// it is not fresh on the replica; fn runs once, on the primary.
		p.replay(t, true)
		defer p.replay(t, false)
		n = p.mark(t)
		if got := readOn(t, db, fresh(n), "primary", "checked.stale"); got != n {
			t.Errorf("the primary saw mark %d, want %d", got, n)
		}
		// A read that needs only an older mark is still fresh there.
		if got := readOn(t, db, fresh(n-1), "replica", "checked.replica"); got != n-1 {
			t.Errorf("the paused replica saw mark %d, want %d", got, n-1)
		}
		// A check that answers no row is not fresh either.
		readOn(t, db, &database.Fresh{SQL: `SELECT true FROM marks WHERE n = $1`, Args: []any{n}}, "primary", "checked.stale")
		if !db.Replica().Up() {
			t.Error("a stale replica was left alone: staleness is no error")
		}

		p.replay(t, false)
		p.caughtUp(t)
		readOn(t, db, fresh(n), "replica", "checked.replica")
	})

	t.Run("ReadBatch: first's results only from a fresh snapshot", func(t *testing.T) {
		db, _ := p.attach(t, database.ReplicaOptions{LagEvery: noMonitor})
		batch := func(f *database.Fresh) (firsts, fns []string) {
			t.Helper()
			var where string
			err := db.ReadBatch(ctx, f, func(b *pgx.Batch) {
				b.Queue(`SELECT CASE WHEN pg_is_in_recovery() THEN 'replica' ELSE 'primary' END`).QueryRow(func(row pgx.Row) error {
					if err := row.Scan(&where); err != nil {
						return err
					}
					firsts = append(firsts, where)
					return nil
				})
			}, func(tx pgx.Tx) error {
				// first's callbacks have run before fn, in fn's transaction.
				s, err := server(tx)
				if s != where {
					return fmt.Errorf("first read %q, fn runs on %q", where, s)
				}
				fns = append(fns, s)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return firsts, fns
		}
		c := countsOf(db)
		firsts, fns := batch(fresh(p.marks))
		wantRuns(t, firsts, "replica")
		wantRuns(t, fns, "replica")
		moved(t, db, c, "checked.replica")

		p.replay(t, true)
		defer p.replay(t, false)
		n := p.mark(t)
		c = countsOf(db)
		firsts, fns = batch(fresh(n))
		wantRuns(t, firsts, "primary") // the replica's results were discarded unread
		wantRuns(t, fns, "primary")
		moved(t, db, c, "checked.stale")
		p.replay(t, false)
		p.caughtUp(t)
	})

	t.Run("bounded reads: on the replica while the lag monitor finds it caught up", func(t *testing.T) {
		db, log := p.attach(t, database.ReplicaOptions{LagEvery: 300 * time.Millisecond})
		r := db.Replica()
		// Before the monitor's first comparison (two periods) the replica's
		// lag is unknown: the primary answers.
		readOn(t, db, nil, "primary", "bounded.lagging")

		waitFor(t, "a bounded read on the replica", func() bool {
			runs, _ := read(t, db, nil)
			return runs[0] == "replica"
		})
		readOn(t, db, nil, "replica", "bounded.replica")

		// Replay paused and the primary writing: within two periods the
		// monitor finds the replica behind; bounded reads go to the
		// primary, checked reads that are fresh stay on the replica.
		p.replay(t, true)
		defer p.replay(t, false)
		old := p.marks
		p.mark(t)
		waitFor(t, "the monitor to find the replica lagging", r.Lagging)
		if got := readOn(t, db, nil, "primary", "bounded.lagging"); got != p.marks {
			t.Errorf("the bounded read saw mark %d, want %d", got, p.marks)
		}
		readOn(t, db, fresh(old), "replica", "checked.replica")
		if !strings.Contains(log.String(), "replica is lagging") {
			t.Errorf("no warn line about the lag in:\n%s", log)
		}

		p.replay(t, false)
		waitFor(t, "the monitor to find the replica caught up", func() bool { return !r.Lagging() })
		readOn(t, db, nil, "replica", "bounded.replica")
		if !r.Up() {
			t.Error("the lag monitor left the replica alone: lag is no error")
		}
	})

	t.Run("a replica error sends the read to the primary and the replica is left alone", func(t *testing.T) {
		const downFor = 700 * time.Millisecond
		db, log := p.attach(t, database.ReplicaOptions{LagEvery: noMonitor, DownFor: downFor})
		r := db.Replica()
		// pg_current_wal_lsn() fails on a standby ("recovery is in
		// progress") and works on the primary.
		var runs []string
		c := countsOf(db)
		start := time.Now()
		err := db.Read(ctx, fresh(p.marks), func(tx pgx.Tx) error {
			s, _ := server(tx)
			runs = append(runs, s)
			var lsn string
			return tx.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn)
		})
		if err != nil {
			t.Fatalf("Read with a replica error: %v, want the primary's answer", err)
		}
		wantRuns(t, runs, "replica", "primary")
		moved(t, db, c, "checked.errors")
		if r.Up() {
			t.Error("the replica is still used after an error")
		}
		if !strings.Contains(log.String(), "replica unavailable") {
			t.Errorf("no warn line about the replica in:\n%s", log)
		}
		// Left alone: every read of either kind goes to the primary.
		readOn(t, db, fresh(p.marks), "primary", "checked.down")
		readOn(t, db, nil, "primary", "bounded.down")
		// After DownFor it is tried again.
		waitFor(t, "the replica to be tried again", r.Up)
		if waited := time.Since(start); waited < downFor {
			t.Errorf("the replica was tried again after %v, before DownFor (%v)", waited, downFor)
		}
		readOn(t, db, fresh(p.marks), "replica", "checked.replica")

		// An error of both servers is the primary's.
		c = countsOf(db)
		runs = nil
		err = db.Read(ctx, fresh(p.marks), func(tx pgx.Tx) error {
			s, _ := server(tx)
			runs = append(runs, s)
			_, err := tx.Exec(ctx, `SELECT 1 / 0`)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "division by zero") {
			t.Errorf("Read failing on both = %v, want the division by zero", err)
		}
		moved(t, db, c, "checked.errors")
		wantRuns(t, runs, "replica", "primary")
	})

	t.Run("domain answers and cancellation are final", func(t *testing.T) {
		db, _ := p.attach(t, database.ReplicaOptions{LagEvery: noMonitor})
		r := db.Replica()
		for _, answer := range []error{
			database.Missing("you do not follow cs.LG"),
			fmt.Errorf("loading: %w", database.ErrNotFound),
			apperr.New(apperr.Invalid, "that cursor is not one of ours"),
		} {
			var runs []string
			c := countsOf(db)
			err := db.Read(ctx, fresh(p.marks), func(tx pgx.Tx) error {
				s, err := server(tx)
				runs = append(runs, s)
				if err != nil {
					return err
				}
				return answer
			})
			if !errors.Is(err, answer) {
				t.Errorf("Read = %v, want %v as is", err, answer)
			}
			wantRuns(t, runs, "replica") // not asked again of the primary
			moved(t, db, c, "checked.replica")
		}
		if !r.Up() {
			t.Error("a domain answer left the replica alone")
		}

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		c := countsOf(db)
		called := false
		err := db.Read(cctx, fresh(p.marks), func(pgx.Tx) error { called = true; return nil })
		if !errors.Is(err, context.Canceled) || called {
			t.Errorf("Read with a cancelled context = %v (fn called: %v), want context.Canceled without fn", err, called)
		}
		moved(t, db, c) // neither an error of the replica nor a read
		if !r.Up() {
			t.Error("the caller's cancellation left the replica alone")
		}
	})

	t.Run("a replica that never answered", func(t *testing.T) {
		port, err := pgcluster.FreePort(54600, 54699)
		if err != nil {
			t.Fatal(err)
		}
		// Nothing listens there: AttachReplica does not connect, and reads
		// go to the primary.
		db, _ := attachAt(t, p.primary.URL("postgres"), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
			database.ReplicaOptions{LagEvery: noMonitor, DownFor: time.Hour})
		readOn(t, db, fresh(p.marks), "primary", "checked.errors")
		readOn(t, db, nil, "primary", "bounded.down")
	})

	t.Run("no replica: the primary, in one read-only repeatable-read snapshot", func(t *testing.T) {
		db := open(t, p.primary.URL("postgres"))
		if db.Replica() != nil {
			t.Fatal("a replica without AttachReplica")
		}
		if _, err := p.db.Pool.Exec(ctx, `CREATE TABLE snap (n int PRIMARY KEY); INSERT INTO snap VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		var before, after int
		err := db.Read(ctx, fresh(1<<30), func(tx pgx.Tx) error { // a check is only for a replica
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM snap`).Scan(&before); err != nil {
				return err
			}
			if _, err := p.db.Pool.Exec(ctx, `INSERT INTO snap VALUES (2)`); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT count(*) FROM snap`).Scan(&after)
		})
		if err != nil || before != 1 || after != 1 {
			t.Errorf("Read: %v, counted %d then %d; want one snapshot (1, 1)", err, before, after)
		}
		err = db.Read(ctx, nil, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO snap VALUES (3)`)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
			t.Errorf("a write in Read = %v, want refused as read-only", err)
		}
		var first int
		err = db.ReadBatch(ctx, nil, func(b *pgx.Batch) {
			b.Queue(`SELECT count(*) FROM snap`).QueryRow(func(row pgx.Row) error { return row.Scan(&first) })
		}, func(tx pgx.Tx) error {
			if first != 2 {
				return fmt.Errorf("first's result is %d when fn starts, want 2", first)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})

	t.Run("the replica stopped and started again", func(t *testing.T) {
		db, log := p.attach(t, database.ReplicaOptions{LagEvery: 300 * time.Millisecond, DownFor: 500 * time.Millisecond})
		r := db.Replica()
		runs, _ := read(t, db, fresh(p.marks))
		wantRuns(t, runs, "replica")

		p.rep.Pool.Reset()
		if err := p.standby.Stop(ctx, "fast"); err != nil {
			t.Fatal(err)
		}
		n := p.mark(t)
		for range 5 {
			for _, f := range []*database.Fresh{fresh(n), nil} {
				runs, got := read(t, db, f)
				wantRuns(t, runs, "primary")
				if got != n {
					t.Errorf("read mark %d with the replica down, want %d", got, n)
				}
			}
		}
		c := countsOf(db)
		if c[database.Checked].Errors+c[database.Checked].Down+c[database.Bounded].Errors+c[database.Bounded].Down == 0 {
			t.Errorf("the stopped replica's reads were not counted as errors or down: %+v", c)
		}
		if !strings.Contains(log.String(), "replica unavailable") {
			t.Errorf("no warn line about the replica in:\n%s", log)
		}

		if err := p.standby.Start(ctx); err != nil {
			t.Fatal(err)
		}
		p.caughtUp(t)
		waitFor(t, "the replica to be used again", func() bool {
			runs, _ := read(t, db, fresh(n))
			return runs[0] == "replica"
		})
		waitFor(t, "bounded reads on the replica again", func() bool {
			runs, _ := read(t, db, nil)
			return runs[0] == "replica"
		})
		if !r.Up() || r.Lagging() {
			t.Errorf("after the restart: up %v, lagging %v", r.Up(), r.Lagging())
		}
	})
}

// waitFor polls cond every 50 ms for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond) // the poll's interval: replay on a standby signals nothing
	}
}

// syncBuffer is a log the lag monitor's goroutine may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
