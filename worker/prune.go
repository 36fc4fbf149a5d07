package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// The retention prunes: one periodic job per owner of tables that grow
// with time, each calling its owner's prune (README, Operations:
// Retention). channel_prune (ChannelPruneArgs) and
// activitypub_housekeeping (APHousekeepingArgs) are the channels' and the
// fediverse's; River's own finished jobs are deleted by River's cleaner
// (CompletedRetention and the others, in Config).

// PruneInterval is how often each prune job runs (and once at a working
// process's start).
const PruneInterval = time.Hour

// pruneArgs are the args of a prune job: a kind of its own, one at a time.
type pruneArgs interface {
	river.JobArgs
	// what names the rows pruned, for the log line.
	what() string
}

// pruneOpts: the default queue, one of a kind at a time (a periodic run
// finding one queued or running is skipped).
var pruneOpts = river.InsertOpts{Queue: QueueDefault, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}

// SeqTimesPruneArgs runs catalog.Store.PruneSeqTimes (key_seq_times).
type SeqTimesPruneArgs struct{}

// Kind implements river.JobArgs.
func (SeqTimesPruneArgs) Kind() string { return "seq_times_prune" }

// InsertOpts: one at a time.
func (SeqTimesPruneArgs) InsertOpts() river.InsertOpts { return pruneOpts }
func (SeqTimesPruneArgs) what() string                 { return "key_seq_times" }

// DigestPruneArgs runs notify.Digester.PruneLedger (digests).
type DigestPruneArgs struct{}

// Kind implements river.JobArgs.
func (DigestPruneArgs) Kind() string { return "digest_prune" }

// InsertOpts: one at a time.
func (DigestPruneArgs) InsertOpts() river.InsertOpts { return pruneOpts }
func (DigestPruneArgs) what() string                 { return "digests" }

// HarvestPruneArgs runs harvest.Health.Prune (harvest_days,
// harvest_checks).
type HarvestPruneArgs struct{}

// Kind implements river.JobArgs.
func (HarvestPruneArgs) Kind() string { return "harvest_prune" }

// InsertOpts: one at a time.
func (HarvestPruneArgs) InsertOpts() river.InsertOpts { return pruneOpts }
func (HarvestPruneArgs) what() string                 { return "harvest_days, harvest_checks" }

// ConfirmationPruneArgs runs account.Addresses.PruneConfirmations
// (confirmation_requests).
type ConfirmationPruneArgs struct{}

// Kind implements river.JobArgs.
func (ConfirmationPruneArgs) Kind() string { return "confirmation_prune" }

// InsertOpts: one at a time.
func (ConfirmationPruneArgs) InsertOpts() river.InsertOpts { return pruneOpts }
func (ConfirmationPruneArgs) what() string                 { return "confirmation_requests" }

// PruneWorker runs one owner's prune (Prune: delete what is past its
// retention, in batches, and say how many rows) and logs what it deleted.
// A failed prune is retried by River and, at the latest, done by the next
// periodic run: every prune is idempotent.
type PruneWorker[A pruneArgs] struct {
	river.WorkerDefaults[A]
	Prune  func(context.Context) (int64, error)
	Logger *slog.Logger
}

// Work implements river.Worker.
func (w *PruneWorker[A]) Work(ctx context.Context, job *river.Job[A]) error {
	n, err := w.Prune(ctx)
	if err != nil {
		return failed(err, "deleted", n)
	}
	if n > 0 {
		w.Logger.InfoContext(ctx, "pruned", "rows", job.Args.what(), "deleted", n)
	}
	return nil
}

// Pruners are the owners' prunes the prune jobs call.
type Pruners struct {
	SeqTimes      func(context.Context) (int64, error) // catalog.Store.PruneSeqTimes
	Digests       func(context.Context) (int64, error) // notify.Digester.PruneLedger
	Harvest       func(context.Context) (int64, error) // harvest.Health.Prune
	Confirmations func(context.Context) (int64, error) // account.Addresses.PruneConfirmations
}

// Registrations returns the prune jobs' registrations, each every
// PruneInterval and at a working process's start.
func (p Pruners) Registrations(logger *slog.Logger) []Registration {
	return []Registration{
		Register(&PruneWorker[SeqTimesPruneArgs]{Prune: p.SeqTimes, Logger: logger}).
			Every(PruneInterval, func() river.JobArgs { return SeqTimesPruneArgs{} }, true),
		Register(&PruneWorker[DigestPruneArgs]{Prune: p.Digests, Logger: logger}).
			Every(PruneInterval, func() river.JobArgs { return DigestPruneArgs{} }, true),
		Register(&PruneWorker[HarvestPruneArgs]{Prune: p.Harvest, Logger: logger}).
			Every(PruneInterval, func() river.JobArgs { return HarvestPruneArgs{} }, true),
		Register(&PruneWorker[ConfirmationPruneArgs]{Prune: p.Confirmations, Logger: logger}).
			Every(PruneInterval, func() river.JobArgs { return ConfirmationPruneArgs{} }, true),
	}
}
