package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"followfeed/database"
	"followfeed/internal/testdb"
	"followfeed/migrations"
	"followfeed/worker"
)

// The Enqueuer inserts its jobs in the caller's transaction, with each
// kind's queue and attempts: they are there inside it, invisible outside
// until it commits, and gone with it when it rolls back. Digest ids go 50 to
// a job; instant alerts are scheduled; an empty WebSub ping is no job.
func TestEnqueuerInsertsInTheCallersTransaction(t *testing.T) {
	t.Parallel()
	db, e := newEnqueuer(t)
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	digests := make([]int64, worker.DigestBatch+1)
	for i := range digests {
		digests[i] = int64(i + 1)
	}
	due := time.Now().Add(time.Hour).UTC()
	for _, err := range []error{
		e.EnqueueMatch(ctx, tx, 10, 20),
		e.EnqueueDigests(ctx, tx, digests),
		e.EnqueueInstant(ctx, tx, []int64{7, 8, 9}, due),
		e.EnqueueWebSub(ctx, tx, nil),
		e.EnqueueChannelDeliveries(ctx, tx, []int64{31, 32}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	opts := func(queue string, attempts int, state rivertype.JobState) *rivertest.RequireInsertedOpts {
		return &rivertest.RequireInsertedOpts{Schema: migrations.RiverSchema, Queue: queue, MaxAttempts: attempts, State: state}
	}
	m := rivertest.RequireInsertedTx[*riverpgxv5.Driver](ctx, t, tx, worker.MatchArgs{}, opts(worker.QueueMatch, 25, rivertype.JobStateAvailable))
	if m.Args != (worker.MatchArgs{FromSeq: 10, ToSeq: 20}) {
		t.Errorf("match job args %+v, want seq 10..20", m.Args)
	}
	sends := rivertest.RequireManyInsertedTx[*riverpgxv5.Driver](ctx, t, tx, []rivertest.ExpectedJob{
		{Args: worker.DigestArgs{}, Opts: opts(worker.QueueMail, 12, rivertype.JobStateAvailable)},
		{Args: worker.DigestArgs{}, Opts: opts(worker.QueueMail, 12, rivertype.JobStateAvailable)},
	})
	for i, want := range []int{worker.DigestBatch, 1} {
		var args worker.DigestArgs
		if err := json.Unmarshal(sends[i].EncodedArgs, &args); err != nil || len(args.DigestIDs) != want {
			t.Errorf("send job %d: %s (%v), want %d digests", i, sends[i].EncodedArgs, err, want)
		}
	}
	instant := opts(worker.QueueMail, 12, rivertype.JobStateScheduled)
	instant.ScheduledAt = due
	if a := rivertest.RequireInsertedTx[*riverpgxv5.Driver](ctx, t, tx, worker.InstantArgs{}, instant).Args; len(a.UserIDs) != 3 {
		t.Errorf("instant job args %+v, want the three users", a)
	}
	rivertest.RequireNotInsertedTx[*riverpgxv5.Driver](ctx, t, tx, worker.WebSubArgs{}, &rivertest.RequireInsertedOpts{Schema: migrations.RiverSchema})
	rivertest.RequireManyInsertedTx[*riverpgxv5.Driver](ctx, t, tx, []rivertest.ExpectedJob{
		{Args: worker.ChannelDeliverArgs{}, Opts: opts(worker.QueuePush, worker.ChannelDeliverAttempts, rivertype.JobStateAvailable)},
		{Args: worker.ChannelDeliverArgs{}},
	})

	pool := riverpgxv5.New(db.Pool)
	outside := &rivertest.RequireInsertedOpts{Schema: migrations.RiverSchema}
	rivertest.RequireNotInserted(ctx, t, pool, worker.MatchArgs{}, outside)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	rivertest.RequireNotInserted(ctx, t, pool, worker.MatchArgs{}, outside)
	rivertest.RequireNotInserted(ctx, t, pool, worker.DigestArgs{}, outside)
}

// newEnqueuer returns a test database and an Enqueuer inserting into it.
func newEnqueuer(t *testing.T) (*database.DB, *worker.Enqueuer) {
	t.Helper()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db, worker.NewEnqueuer(ins)
}

// TestCoalescedTrainingLosesNoChange: a follow change's retraining waits
// (scheduled) and a second change while it waits adds no job; a change
// while that job runs, which it may not have read, gets a plain job of its
// own, as late.
func TestCoalescedTrainingLosesNoChange(t *testing.T) {
	t.Parallel()
	db, e := newEnqueuer(t)
	ctx := context.Background()
	enqueue := func() {
		t.Helper()
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := e.EnqueueTrain(ctx, tx, []int64{42}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	jobs := func() (n int, coalesced int) {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `SELECT args FROM `+migrations.RiverSchema+`.river_job WHERE kind = 'rank_train' AND scheduled_at > now()`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var a worker.RankTrainArgs
			var raw []byte
			if err := rows.Scan(&raw); err != nil || json.Unmarshal(raw, &a) != nil {
				t.Fatal(err)
			}
			n++
			if a.Coalesced {
				coalesced++
			}
		}
		return n, coalesced
	}
	enqueue()
	enqueue()
	if n, c := jobs(); n != 1 || c != 1 {
		t.Fatalf("two changes while waiting: %d jobs (%d coalesced), want one coalesced", n, c)
	}
	// The job runs (as River marks it when a worker takes it).
	if _, err := db.Pool.Exec(ctx, `UPDATE `+migrations.RiverSchema+`.river_job SET state = 'running', scheduled_at = now() - interval '1 second', attempted_at = now(), attempt = 1 WHERE kind = 'rank_train'`); err != nil {
		t.Fatal(err)
	}
	enqueue()
	if n, c := jobs(); n != 1 || c != 0 {
		t.Errorf("a change while the job runs: %d later jobs (%d coalesced), want one plain job", n, c)
	}
}
