package worker

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/ranking"
)

var _ ranking.Enqueuer = (*Enqueuer)(nil)

// EnqueueTrain inserts a retraining job per user (ranking.Enqueuer). The
// jobs are not unique: a job that finds its user's model already trained
// past the change that queued it does nothing (ranking.Service.Train), and
// a uniqueness that counted running jobs would drop a change made while
// one runs.
func (e *Enqueuer) EnqueueTrain(ctx context.Context, tx pgx.Tx, userIDs []int64) error {
	params := make([]river.InsertManyParams, len(userIDs))
	for i, id := range userIDs {
		params[i] = river.InsertManyParams{Args: RankTrainArgs{UserID: id}}
	}
	_, err := e.client.InsertManyTx(ctx, tx, params)
	return err
}

// RankTrainArgs retrains one user's ranking model.
type RankTrainArgs struct {
	UserID int64 `json:"user_id"`
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
	return nil
}
