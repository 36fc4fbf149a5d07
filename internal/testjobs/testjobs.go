// Package testjobs is River's API as tests use it: its job list (an
// insert-only client's JobList) instead of SQL on its tables, its event
// subscription (Client.Subscribe) to wait for a test's own client's jobs,
// and rivertest.Worker to work one job as the service does (Attempts).
package testjobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"followfeed/internal/testwait"
	"followfeed/migrations"
	"followfeed/worker"
)

// Timeout bounds every wait of this package.
const Timeout = 30 * time.Second

// List returns the jobs of kind in any of states (all states when none is
// given), oldest first. It fails the test when River cannot be asked.
func List(t testing.TB, pool *pgxpool.Pool, kind string, states ...rivertype.JobState) []*rivertype.JobRow {
	t.Helper()
	client, err := river.NewClient[pgx.Tx](riverpgxv5.New(pool), &river.Config{Schema: migrations.RiverSchema})
	if err != nil {
		t.Fatalf("testjobs: River client: %v", err)
	}
	params := river.NewJobListParams().Kinds(kind).First(10000).OrderBy(river.JobListOrderByID, river.SortOrderAsc)
	if len(states) > 0 {
		params = params.States(states...)
	}
	res, err := client.JobList(context.Background(), params)
	if err != nil {
		t.Fatalf("testjobs: listing %s jobs: %v", kind, err)
	}
	return res.Jobs
}

// Count is len(List(...)).
func Count(t testing.TB, pool *pgxpool.Pool, kind string, states ...rivertype.JobState) int {
	t.Helper()
	return len(List(t, pool, kind, states...))
}

// WaitCompleted waits up to Timeout until n jobs of kind have completed and
// fails the test otherwise. It polls River's job list: it serves jobs a
// process other than the test's own client works (testapp); a test with a
// working client of its own waits on Subscribe.
func WaitCompleted(t testing.TB, pool *pgxpool.Pool, kind string, n int) {
	t.Helper()
	testwait.For(t, Timeout, fmt.Sprintf("%d completed %s jobs", n, kind), func() bool {
		return Count(t, pool, kind, rivertype.JobStateCompleted) == n
	})
}

// WaitIdle waits up to Timeout until no job of kinds is queued, running or
// waiting for a retry, and fails the test otherwise. Jobs scheduled for
// later (an instant alert's) are not waited for.
func WaitIdle(t testing.TB, pool *pgxpool.Pool, kinds ...string) {
	t.Helper()
	testwait.For(t, Timeout, fmt.Sprintf("the %v jobs to finish", kinds), func() bool {
		for _, k := range kinds {
			if Count(t, pool, k, rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
				rivertype.JobStateRunning) != 0 {
				return false
			}
		}
		return true
	})
}

// WaitRan waits up to Timeout until a job of kind that started after since
// has finished (completed, discarded or cancelled), and fails the test
// otherwise: a periodic job (a scheduler) has run once after the change a
// test made at since.
func WaitRan(t testing.TB, pool *pgxpool.Pool, kind string, since time.Time) {
	t.Helper()
	testwait.For(t, Timeout, fmt.Sprintf("a %s job started after %s to finish", kind, since.Format(time.StampMilli)), func() bool {
		for _, j := range List(t, pool, kind, rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled) {
			if j.AttemptedAt != nil && j.AttemptedAt.After(since) {
				return true
			}
		}
		return false
	})
}

// Events records what a test's own working client does with its jobs
// (River's Client.Subscribe), for a test to wait on.
type Events struct {
	ch   <-chan *river.Event
	mu   sync.Mutex
	seen []*river.Event
}

// Subscribe subscribes to c's finished jobs (completed, failed, cancelled,
// snoozed) until c stops or the test ends. Call it before c works the jobs
// the test waits for.
func Subscribe(t testing.TB, c *river.Client[pgx.Tx]) *Events {
	t.Helper()
	ch, cancel := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: 10_000, Kinds: []river.EventKind{
		river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled, river.EventKindJobSnoozed}})
	t.Cleanup(cancel)
	return &Events{ch: ch}
}

// Wait waits up to Timeout until the client reported n events of kind for
// jobs of jobKind since Subscribe, failing the test otherwise, and returns
// those events' job rows (each as it was when the event happened).
func (e *Events) Wait(t testing.TB, kind river.EventKind, jobKind string, n int) []*rivertype.JobRow {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	timeout := time.NewTimer(Timeout)
	defer timeout.Stop()
	for {
		var rows []*rivertype.JobRow
		for _, ev := range e.seen {
			if ev.Kind == kind && ev.Job.Kind == jobKind {
				rows = append(rows, ev.Job)
			}
		}
		if len(rows) >= n {
			return rows[:n]
		}
		select {
		case ev, ok := <-e.ch:
			if !ok {
				t.Fatalf("testjobs: the client stopped before %d %s events of %s jobs (had %d)", n, kind, jobKind, len(rows))
			}
			e.seen = append(e.seen, ev)
		case <-timeout.C:
			t.Fatalf("testjobs: %d %s events of %s jobs after %s, want %d", len(rows), kind, jobKind, Timeout, n)
		}
	}
}

// Attempts is one job of a worker, worked attempt by attempt through
// River's test worker (rivertest.Worker) configured as the service's working
// clients are (worker.Config: its middleware logs the failures and runs the
// give-up actions), in a transaction of its own that the end of the test
// rolls back. The worker's own database work commits as it always does.
type Attempts[T river.JobArgs] struct {
	t   testing.TB
	tw  *rivertest.Worker[T, pgx.Tx]
	tx  pgx.Tx
	job *rivertype.JobRow
}

// NewAttempts inserts a job of args for w (with its kind's InsertOpts).
func NewAttempts[T river.JobArgs](t testing.TB, pool *pgxpool.Pool, logger *slog.Logger, w river.Worker[T], args T) *Attempts[T] {
	t.Helper()
	ctx := context.Background()
	cfg := worker.Config(logger, worker.Settings{})
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatalf("testjobs: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	ins, err := river.NewClient(riverpgxv5.New(nil), cfg)
	if err != nil {
		t.Fatalf("testjobs: River client: %v", err)
	}
	res, err := ins.InsertTx(ctx, tx, args, nil)
	if err != nil {
		t.Fatalf("testjobs: inserting a %s job: %v", args.Kind(), err)
	}
	return &Attempts[T]{t: t, tw: rivertest.NewWorker(t, riverpgxv5.New(nil), cfg, w), tx: tx, job: res.Job}
}

// Work works the job's attempt n, as if n-1 had failed before, and returns
// River's result (the job as River left it) and the worker's error.
func (a *Attempts[T]) Work(n int) (*rivertest.WorkResult, error) {
	a.t.Helper()
	row := *a.job
	row.Attempt = n - 1
	res, err := a.tw.WorkJob(context.Background(), a.t, a.tx, &row)
	if res != nil {
		a.job = res.Job
	}
	return res, err
}
