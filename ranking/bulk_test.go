package ranking_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/ranking"
)

// TestRemoveAllTakesTheLabsRankingOff: what a measurement gave users
// (feedback through Set, models through Models and Train) is gone after
// RemoveAll, which counts it; the users then read as users who never said
// anything (no feedback, no model, a late job trains nothing), and a new
// click starts afresh.
func TestRemoveAllTakesTheLabsRankingOff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.background(40)
	alice, bob := e.user("alice"), e.user("bob")
	ids := e.store(e.paper("lensing", ann), e.paper("pulsar"), e.paper("solar"))
	for _, id := range ids {
		if _, err := e.rank.Set(e.ctx, alice, id, ranking.More); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.rank.Set(e.ctx, bob, ids[0], ranking.Less); err != nil {
		t.Fatal(err)
	}
	if trained, err := e.rank.Train(e.ctx, alice); err != nil || !trained {
		t.Fatalf("Train: %v %v", trained, err)
	}
	carol := e.user("carol") // a first model only (a surface ranked for her)
	if _, err := e.rank.Models(e.ctx, []int64{carol}); err != nil {
		t.Fatal(err)
	}
	var fb, models int
	err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		fb, models, err = ranking.RemoveAll(e.ctx, tx)
		return err
	})
	if err != nil || fb != 4 || models != 3 {
		t.Fatalf("RemoveAll: %d feedback rows, %d models, %v; want 4, 3", fb, models, err)
	}
	if n := e.count(`SELECT (SELECT count(*) FROM feedback) + (SELECT count(*) FROM ranking_models)`); n != 0 {
		t.Errorf("%d rows left", n)
	}
	if page, err := e.rank.List(e.ctx, alice, "", 0); err != nil || len(page.Items) != 0 {
		t.Errorf("alice's feedback after: %+v %v", page, err)
	}
	// The jobs Set queued run late: they find no row and train nothing.
	if trained, err := e.rank.Train(e.ctx, bob); err != nil || trained || e.count(`SELECT count(*) FROM ranking_models`) != 0 {
		t.Errorf("a late job after RemoveAll: trained %v, %v", trained, err)
	}
	if _, err := e.rank.Set(e.ctx, bob, ids[1], ranking.Saved); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT changes FROM ranking_models WHERE user_id = $1`, bob); n != 1 {
		t.Errorf("a click after RemoveAll counted to %d changes, want 1", n)
	}
}
