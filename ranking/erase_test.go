package ranking_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/account"
	"followfeed/internal/testjobs"
	"followfeed/ranking"
	"followfeed/worker"
)

// TestEraseUserLeavesTrainingNothingToDo: erasing a user (account's
// erasure with ranking's hook) takes their feedback and model; their
// queued training job then completes without training or error, and a
// training already under way for them (a first model, Models) stores
// nothing and fails nothing. Another user's feedback and model stay.
func TestEraseUserLeavesTrainingNothingToDo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ada, bo := e.user("ada"), e.user("bob")
	ids := e.store(e.paper("lensing", ann), e.paper("pulsar", ann))
	for _, u := range []int64{ada, bo} {
		if _, err := e.rank.Set(e.ctx, u, ids[0], ranking.More); err != nil {
			t.Fatal(err)
		}
	}
	users := account.NewUsers(e.db)
	users.OnErase(ranking.EraseUser)
	users.OnErase(func(ctx context.Context, tx pgx.Tx, userID int64) error {
		// Erased by the hook, not by the users row's cascade.
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM feedback WHERE user_id = $1) + (SELECT count(*) FROM ranking_models WHERE user_id = $1)`,
			userID).Scan(&n); err != nil || n != 0 {
			t.Errorf("after ranking's hook: %d rows (%v)", n, err)
		}
		return nil
	})
	if erased, err := users.Erase(e.ctx, ada); err != nil || !erased {
		t.Fatalf("Erase: %v %v", erased, err)
	}

	job := testjobs.NewAttempts(t, e.db.Pool, nil, &worker.RankTrainWorker{Ranking: e.rank}, worker.RankTrainArgs{UserID: ada})
	if res, err := job.Work(1); err != nil || res.EventKind != river.EventKindJobCompleted {
		t.Errorf("the erased user's training job: %v %v", res, err)
	}
	if trained, err := e.rank.Train(e.ctx, ada); err != nil || trained {
		t.Errorf("training the erased user: trained %v, %v", trained, err)
	}
	if _, err := e.rank.Models(e.ctx, []int64{ada}); err != nil {
		t.Errorf("a first model for a user erased meanwhile: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM ranking_models WHERE user_id = $1`, ada); n != 0 {
		t.Errorf("the erased user has %d ranking_models rows again", n)
	}
	if trained, err := e.rank.Train(e.ctx, bo); err != nil || !trained {
		t.Errorf("the other user's training: %v %v", trained, err)
	}
	if fb, err := e.rank.List(e.ctx, bo, "", 0); err != nil || len(fb.Items) != 1 {
		t.Errorf("the other user's feedback: %+v %v", fb, err)
	}
}
