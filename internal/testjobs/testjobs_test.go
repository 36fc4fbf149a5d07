package testjobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/internal/testdb"
	"followfeed/migrations"
)

// heldArgs is a job whose worker returns once the test closes release.
type heldArgs struct{}

func (heldArgs) Kind() string { return "testjobs_held" }

type heldWorker struct {
	river.WorkerDefaults[heldArgs]
	release chan struct{}
}

func (w *heldWorker) Work(ctx context.Context, _ *river.Job[heldArgs]) error {
	select {
	case <-w.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// heldClient starts a working client of heldArgs jobs, subscribed to by an
// Events before it starts, and inserts one job.
func heldClient(t *testing.T) (*river.Client[pgx.Tx], *Events, chan struct{}, *pgxpool.Pool) {
	t.Helper()
	db := testdb.New(t)
	release := make(chan struct{})
	workers := river.NewWorkers()
	river.AddWorker(workers, &heldWorker{release: release})
	c, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Schema: migrations.RiverSchema, TestOnly: true,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}}, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEvents()
	t.Cleanup(e.Add(c))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	if _, err := c.Insert(context.Background(), heldArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	return c, e, release, db.Pool
}

// TestAJobEndingBetweenTheLookAndTheWaitWakesIt: the job completes after
// the wait's first look at the job list found none completed and before
// the wait blocks: the event, recorded since the subscription, wakes it.
func TestAJobEndingBetweenTheLookAndTheWaitWakesIt(t *testing.T) {
	t.Parallel()
	_, e, release, pool := heldClient(t)
	kind := heldArgs{}.Kind()
	looks := 0
	start := time.Now()
	err := e.wait([]string{kind}, func() bool {
		looks++
		done := Count(t, pool, kind, rivertype.JobStateCompleted) == 1
		if looks == 1 {
			if done {
				t.Fatal("the held job completed before it was released")
			}
			// The job completes now, and its event is recorded, before
			// the wait gets to block.
			e.mu.Lock()
			changed := e.changed
			e.mu.Unlock()
			close(release)
			select {
			case <-changed:
			case <-time.After(Timeout):
				t.Fatal("the released job's event never came")
			}
		}
		return done
	})
	if err != nil || looks != 2 {
		t.Fatalf("wait: %v after %d looks, want done at the second", err, looks)
	}
	if d := time.Since(start); d > Timeout/2 {
		t.Errorf("the wait took %s: it was not woken by the event", d)
	}
}

// TestAWaitWithNoWorkingClientFailsAtOnce: once its clients have stopped,
// a wait says that nothing would signal rather than waiting out Timeout.
func TestAWaitWithNoWorkingClientFailsAtOnce(t *testing.T) {
	t.Parallel()
	c, e, _, pool := heldClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.StopAndCancel(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := e.wait([]string{heldArgs{}.Kind()}, func() bool {
		return Count(t, pool, heldArgs{}.Kind(), rivertype.JobStateCompleted) == 1
	})
	if err == nil || !strings.Contains(err.Error(), "nothing would signal") || time.Since(start) > Timeout/2 {
		t.Fatalf("wait with the client stopped: %v after %s", err, time.Since(start))
	}
}
