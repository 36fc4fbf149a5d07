package worker_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/ranking"
	"followfeed/worker"
)

// TestCoalescedTrainingLearnsAChangeMadeWhileItRan: a coalesced training
// job (a follow change's) whose model is still behind once it has trained
// (a change counted while it ran, which its inputs may not have seen)
// snoozes to train again, rather than completing with that change unlearnt;
// once the model has caught up it completes. A job of one click (not
// coalesced) never snoozes: a change made while it ran has a job of its
// own. The change during the training is made by a trigger that counts
// one more change when the model is stored, as a follow committed between
// the job's read of its inputs and its write would have.
func TestCoalescedTrainingLearnsAChangeMadeWhileItRan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, enq := newEnqueuer(t)
	follows := follow.NewService(db)
	rank := ranking.New(ranking.Config{DB: db, Enqueuer: enq, Matcher: match.NewService(db)})
	follows.OnFollow(rank.FollowChanged)
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	// The first model (cold start, as the first surface that ranks for
	// the user makes it); the follow below is then a change to learn.
	if _, err := rank.Models(ctx, []int64{u.ID}); err != nil {
		t.Fatal(err)
	}
	target, err := follow.ParseTarget("category", "astro-ph.CO")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := follows.Follow(ctx, u.ID, target, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	behind := func() bool {
		t.Helper()
		b, err := rank.Behind(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !behind() {
		t.Fatal("after a follow the model is not behind; the test needs a change to learn")
	}
	// While on, storing a model counts one change more.
	setRacing := func(on bool) {
		t.Helper()
		sql := `DROP TRIGGER IF EXISTS racing ON ranking_models`
		if on {
			sql = `CREATE OR REPLACE FUNCTION racing_change() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN IF NEW.trained IS DISTINCT FROM OLD.trained THEN NEW.changes := NEW.changes + 1; END IF; RETURN NEW; END $$;
				CREATE TRIGGER racing BEFORE UPDATE ON ranking_models FOR EACH ROW EXECUTE FUNCTION racing_change()`
		}
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	tw := rivertest.NewWorker(t, riverpgxv5.New(db.Pool), worker.Config(slog.New(slog.DiscardHandler), worker.Settings{}),
		&worker.RankTrainWorker{Ranking: rank})
	work := func(args worker.RankTrainArgs) river.EventKind {
		t.Helper()
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		res, err := tw.Work(ctx, t, tx, args, nil)
		if err != nil && res == nil {
			t.Fatal(err)
		}
		return res.EventKind
	}

	setRacing(true)
	if got := work(worker.RankTrainArgs{UserID: u.ID}); got != river.EventKindJobCompleted {
		t.Errorf("a click's job with a change made while it ran: %s, want completed (the change has its own job)", got)
	}
	if !behind() {
		t.Fatal("the racing change was not counted")
	}
	if got := work(worker.RankTrainArgs{UserID: u.ID, Coalesced: true}); got != river.EventKindJobSnoozed {
		t.Errorf("a coalesced job with a change made while it ran: %s, want snoozed to train again", got)
	}
	setRacing(false)
	if got := work(worker.RankTrainArgs{UserID: u.ID, Coalesced: true}); got != river.EventKindJobCompleted {
		t.Errorf("the coalesced job again, nothing changed meanwhile: %s, want completed", got)
	}
	if behind() {
		t.Error("after the second training the model is still behind")
	}
}
