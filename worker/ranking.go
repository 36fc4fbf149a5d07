package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"followfeed/ranking"
)

var _ ranking.Enqueuer = (*Enqueuer)(nil)

// EnqueueTrain inserts a retraining job per user (ranking.Enqueuer). With
// after 0 the jobs are not unique: a job that finds its user's model
// already trained past the change that queued it does nothing
// (ranking.Service.Train). With after > 0 the job is scheduled that much
// later and unique per user while waiting or running (Coalesced): a
// waiting job learns the change when it runs. A running one may have read
// its inputs before the change: it trains again when its model is still
// behind once it has trained (ranking.Service.Behind waits for a change
// being committed), and a change it cannot have seen then, one queued
// while it is running, gets a job of its own (not unique, as late), so
// none is lost.
func (e *Enqueuer) EnqueueTrain(ctx context.Context, tx pgx.Tx, userIDs []int64, after time.Duration) error {
	params := make([]river.InsertManyParams, len(userIDs))
	for i, id := range userIDs {
		params[i] = river.InsertManyParams{Args: RankTrainArgs{UserID: id}}
		if after > 0 {
			params[i] = river.InsertManyParams{Args: RankTrainArgs{UserID: id, Coalesced: true},
				InsertOpts: &river.InsertOpts{ScheduledAt: time.Now().Add(after), UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: oneAtATime}}}
		}
	}
	res, err := e.client.InsertManyTx(ctx, tx, params)
	if err != nil || after <= 0 {
		return err
	}
	var again []river.InsertManyParams
	for i, r := range res {
		if r.UniqueSkippedAsDuplicate && r.Job != nil && r.Job.State == rivertype.JobStateRunning {
			again = append(again, river.InsertManyParams{Args: RankTrainArgs{UserID: userIDs[i]},
				InsertOpts: &river.InsertOpts{ScheduledAt: time.Now().Add(after)}})
		}
	}
	if len(again) > 0 {
		_, err = e.client.InsertManyTx(ctx, tx, again)
	}
	return err
}

// RankTrainArgs retrains one user's ranking model.
type RankTrainArgs struct {
	UserID int64 `json:"user_id"`
	// Coalesced: a follow change's job, scheduled later and one per user
	// (EnqueueTrain); it trains again when changes came while it ran.
	Coalesced bool `json:"coalesced,omitempty"`
}

// Kind implements river.JobArgs.
func (RankTrainArgs) Kind() string { return "rank_train" }

// InsertOpts: the default queue; training is idempotent, so a failure is
// retried a few times and a model that stays stale serves meanwhile.
func (RankTrainArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDefault, MaxAttempts: 5}
}

// RankTrainWorker runs ranking.Service.Train.
type RankTrainWorker struct {
	river.WorkerDefaults[RankTrainArgs]
	Ranking *ranking.Service
	Logger  *slog.Logger
}

// Work implements river.Worker.
func (w *RankTrainWorker) Work(ctx context.Context, job *river.Job[RankTrainArgs]) error {
	trained, err := w.Ranking.Train(ctx, job.Args.UserID)
	if err != nil {
		return failed(err, "user_id", job.Args.UserID)
	}
	if trained && w.Logger != nil {
		w.Logger.DebugContext(ctx, "ranking model trained", "user_id", job.Args.UserID)
	}
	if job.Args.Coalesced {
		// A change whose insert found this job still waiting, but which
		// committed after the training read its inputs: learn it too (a
		// change queued while this runs has a job of its own).
		behind, err := w.Ranking.Behind(ctx, job.Args.UserID)
		if err != nil {
			return failed(err, "user_id", job.Args.UserID)
		}
		if behind {
			return river.JobSnooze(ranking.FollowRetrainDelay)
		}
	}
	return nil
}
