package worker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"followfeed/internal/testdb"
	"followfeed/internal/testwait"
)

// TestRiverKeepsFinishedJobsForTheirRetention: the working client's
// configuration carries the retentions (defaults, or Settings'), and
// River's cleaner, once the client leads, deletes exactly the finished
// jobs older than theirs: a completed job a day and an hour old and a
// cancelled one eight days old go; a completed job 23 hours old, a
// cancelled one two days old (River's own default keeps a day), a
// discarded one six days old and a job still waiting stay.
func TestRiverKeepsFinishedJobsForTheirRetention(t *testing.T) {
	t.Parallel()
	if c := Config(nil, Settings{}); c.CompletedJobRetentionPeriod != CompletedRetention ||
		c.CancelledJobRetentionPeriod != CancelledRetention || c.DiscardedJobRetentionPeriod != DiscardedRetention {
		t.Errorf("default retentions %s, %s, %s", c.CompletedJobRetentionPeriod, c.CancelledJobRetentionPeriod, c.DiscardedJobRetentionPeriod)
	}
	if c := Config(nil, Settings{CompletedRetention: time.Hour, CancelledRetention: 2 * time.Hour, DiscardedRetention: 3 * time.Hour}); c.CompletedJobRetentionPeriod != time.Hour ||
		c.CancelledJobRetentionPeriod != 2*time.Hour || c.DiscardedJobRetentionPeriod != 3*time.Hour {
		t.Errorf("set retentions %s, %s, %s", c.CompletedJobRetentionPeriod, c.CancelledJobRetentionPeriod, c.DiscardedJobRetentionPeriod)
	}

	db := testdb.New(t)
	ctx := context.Background()
	ins, err := NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []struct {
		state rivertype.JobState
		age   time.Duration
		kept  bool
	}{
		{rivertype.JobStateCompleted, 25 * time.Hour, false},
		{rivertype.JobStateCompleted, 23 * time.Hour, true},
		{rivertype.JobStateCancelled, 8 * 24 * time.Hour, false},
		{rivertype.JobStateCancelled, 2 * 24 * time.Hour, true}, // River's own default would delete it
		{rivertype.JobStateDiscarded, 6 * 24 * time.Hour, true},
		{rivertype.JobStateScheduled, 30 * 24 * time.Hour, true},
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		res, err := ins.Insert(ctx, probeArgs{}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Job.ID
		// Finished on purpose, long ago: only River's cleaner deletes a
		// job, and only once its retention has passed.
		if j.state != rivertype.JobStateScheduled {
			if _, err := db.Pool.Exec(ctx, `UPDATE river.river_job SET state = $2, finalized_at = now() - $3::interval WHERE id = $1`,
				res.Job.ID, string(j.state), j.age.String()); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := NewClient(Deps{Pool: db.Pool, Logger: slog.New(slog.DiscardHandler), Jobs: []Registration{
		Register(&probeWorker{work: func(*river.Job[probeArgs]) error { return nil }})}},
		Settings{TestOnly: true, FetchPollInterval: 200 * time.Millisecond, SoftStop: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Stop(context.Background(), c) })
	left := func() map[int64]bool {
		rows, err := db.Pool.Query(ctx, `SELECT id FROM river.river_job WHERE id = ANY($1)`, ids)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out[id] = true
		}
		return out
	}
	testwait.For(t, 60*time.Second, "River's cleaner to delete the expired jobs", func() bool {
		l := left()
		return !l[ids[0]] && !l[ids[2]]
	})
	l := left()
	for i, j := range jobs {
		if l[ids[i]] != j.kept {
			t.Errorf("%s job %s old: kept %v, want %v", j.state, j.age, l[ids[i]], j.kept)
		}
	}
}

// TestPruneWorkerRunsItsOwnersPrune: a prune job calls its owner's prune
// and logs how many rows went (nothing when none did); a failed prune
// fails the attempt, for River to retry.
func TestPruneWorkerRunsItsOwnersPrune(t *testing.T) {
	t.Parallel()
	log := &lines{}
	calls, n, fail := 0, int64(3), error(nil)
	w := &PruneWorker[SeqTimesPruneArgs]{Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})), Prune: func(context.Context) (int64, error) {
		calls++
		return n, fail
	}}
	job := &river.Job[SeqTimesPruneArgs]{JobRow: &rivertype.JobRow{Kind: SeqTimesPruneArgs{}.Kind()}}
	if err := w.Work(context.Background(), job); err != nil || calls != 1 {
		t.Fatalf("Work = %v after %d calls", err, calls)
	}
	if got := log.take(); len(got) != 1 || got[0] != "level=INFO msg=pruned rows=key_seq_times deleted=3" {
		t.Errorf("logged %q", got)
	}
	n = 0
	if err := w.Work(context.Background(), job); err != nil || len(log.take()) != 0 {
		t.Errorf("nothing to prune: %v, or a line logged", err)
	}
	fail = errors.New("database gone")
	if err := w.Work(context.Background(), job); !errors.Is(err, fail) {
		t.Errorf("a failed prune: %v", err)
	}
	for _, a := range []pruneArgs{SeqTimesPruneArgs{}, DigestPruneArgs{}, HarvestPruneArgs{}, ConfirmationPruneArgs{}} {
		if o := a.(interface{ InsertOpts() river.InsertOpts }).InsertOpts(); o.UniqueOpts.ByState == nil || o.Queue != QueueDefault {
			t.Errorf("%s: %+v, want one at a time on the default queue", a.Kind(), o)
		}
	}
}
