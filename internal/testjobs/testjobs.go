// Package testjobs is River's API as tests use it: its job list (an
// insert-only client's JobList) instead of SQL on its tables, its event
// subscription (Client.Subscribe) to wait on the jobs the test process's
// own working clients work (Events: a test's own client, or the service
// testapp boots in the test process), and rivertest.Worker to work one job
// as the service does (Attempts). Nothing here polls: a job worked by
// another process signals nothing a test could wait on.
package testjobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

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

// Events is what the working River clients of this test process do with
// their jobs (River's Client.Subscribe): a record to count (Wait) and the
// signal the waits below wake on. A River subscription tells only of the
// jobs its own client works, so an Events holds every client of the test
// process that may work the jobs a test waits for (Add): testapp's Jobs
// holds every working process a test started on its database.
type Events struct {
	mu      sync.Mutex
	seen    []*river.Event
	changed chan struct{} // closed, and replaced, at every event and every client's stop
	live    int           // clients whose subscription is open
}

// eventKinds are the events of an attempt's end: every change a working
// client makes to a job's state.
var eventKinds = []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled,
	river.EventKindJobSnoozed, river.EventKindJobInterrupted}

// NewEvents returns an Events of no client yet (Add adds them).
func NewEvents() *Events { return &Events{changed: make(chan struct{})} }

// Subscribe returns an Events of c's finished jobs (completed, failed,
// cancelled, snoozed, interrupted) until c stops or the test ends. Call it
// before c starts, so that Wait counts every event.
func Subscribe(t testing.TB, c *river.Client[pgx.Tx]) *Events {
	t.Helper()
	e := NewEvents()
	t.Cleanup(e.Add(c))
	return e
}

// Add subscribes e to c's finished jobs too, until c stops or cancel is
// called. Call it before c starts, so that no event of c is missed; it
// may be called from any goroutine.
func (e *Events) Add(c *river.Client[pgx.Tx]) (cancel func()) {
	ch, cancel := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: 10_000, Kinds: eventKinds})
	e.mu.Lock()
	e.live++
	e.mu.Unlock()
	// Drained at once: River drops the events of a full channel, and a
	// test may leave e unread for long.
	go func() {
		for ev := range ch {
			e.mu.Lock()
			e.seen = append(e.seen, ev)
			e.signal()
			e.mu.Unlock()
		}
		e.mu.Lock()
		e.live--
		e.signal()
		e.mu.Unlock()
	}()
	return cancel
}

// signal wakes every wait. e.mu must be held.
func (e *Events) signal() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// Wait waits up to Timeout until the clients reported n events of kind
// for jobs of jobKind since they were added, failing the test otherwise,
// and returns those events' job rows (each as it was when the event
// happened).
func (e *Events) Wait(t testing.TB, kind river.EventKind, jobKind string, n int) []*rivertype.JobRow {
	t.Helper()
	var rows []*rivertype.JobRow
	err := e.wait(nil, func() bool {
		rows = rows[:0]
		e.mu.Lock()
		for _, ev := range e.seen {
			if ev.Kind == kind && ev.Job.Kind == jobKind {
				rows = append(rows, ev.Job)
			}
		}
		e.mu.Unlock()
		return len(rows) >= n
	})
	if err != nil {
		t.Fatalf("testjobs: %d %s events of %s jobs, want %d: %v", len(rows), kind, jobKind, n, err)
	}
	return rows[:n]
}

// Until waits up to Timeout until cond holds, failing the test otherwise
// with what it waited for. cond is looked at once, then again after every
// event of a job of kinds (of any kind when kinds is empty): it is a
// condition that only the subscribed clients' working jobs of kinds can
// make true. The clients are subscribed before cond is first looked at,
// so a job that finishes in between wakes the wait.
func (e *Events) Until(t testing.TB, what string, kinds []string, cond func() bool) {
	t.Helper()
	if err := e.wait(kinds, cond); err != nil {
		t.Fatalf("testjobs: waiting for %s: %v", what, err)
	}
}

// wait is Until, returning why it gave up.
func (e *Events) wait(kinds []string, cond func() bool) error {
	timeout := time.NewTimer(Timeout)
	defer timeout.Stop()
	e.mu.Lock()
	next := len(e.seen) // the events from here on are news to cond
	e.mu.Unlock()
	for !cond() {
		// Until an event of kinds after next: one that came while cond
		// was looked at is in seen, one after it closes changed.
		for woke := false; !woke; {
			e.mu.Lock()
			for _, ev := range e.seen[next:] {
				woke = woke || len(kinds) == 0 || slices.Contains(kinds, ev.Job.Kind)
			}
			live, changed := e.live, e.changed
			next = len(e.seen)
			e.mu.Unlock()
			if woke {
				break
			}
			if live == 0 {
				return fmt.Errorf("no working River client of this process is subscribed (any more), so nothing would signal")
			}
			select {
			case <-changed:
			case <-timeout.C:
				return fmt.Errorf("timed out after %s", Timeout)
			}
		}
	}
	return nil
}

// WaitCompleted waits up to Timeout until n jobs of kind have completed
// (River's job list on pool) and fails the test otherwise.
func (e *Events) WaitCompleted(t testing.TB, pool *pgxpool.Pool, kind string, n int) {
	t.Helper()
	got := 0
	err := e.wait([]string{kind}, func() bool {
		got = Count(t, pool, kind, rivertype.JobStateCompleted)
		return got == n
	})
	if err != nil {
		t.Fatalf("testjobs: %d completed %s jobs, want %d: %v", got, kind, n, err)
	}
}

// WaitIdle waits up to Timeout until no job of kinds is queued, running or
// waiting for a retry (River's job list on pool), and fails the test
// otherwise. Jobs scheduled for later (an instant alert's) are not waited
// for.
func (e *Events) WaitIdle(t testing.TB, pool *pgxpool.Pool, kinds ...string) {
	t.Helper()
	e.Until(t, fmt.Sprintf("the %v jobs to finish", kinds), kinds, func() bool {
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
// has finished (completed, discarded or cancelled; River's job list on
// pool), and fails the test otherwise: a periodic job (a scheduler) has
// run once after the change a test made at since.
func (e *Events) WaitRan(t testing.TB, pool *pgxpool.Pool, kind string, since time.Time) {
	t.Helper()
	e.Until(t, fmt.Sprintf("a %s job started after %s to finish", kind, since.Format(time.StampMilli)), []string{kind}, func() bool {
		for _, j := range List(t, pool, kind, rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled) {
			if j.AttemptedAt != nil && j.AttemptedAt.After(since) {
				return true
			}
		}
		return false
	})
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
