package identity_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/internal/testpaper"
)

// TestEraseUserTakesTheirDisputesOnly: a user's "not this person" list
// (DisputesBy, their export) holds their disputes alone; erasing the user
// (account's erasure with identity's hook) takes them off the person's
// public dispute list, and another user's dispute of the same paper stays.
func TestEraseUserTakesTheirDisputesOnly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.put(`{"ids": ["host:1", "openalex:A5023888391"], "name": "Mingzhi Wen"}`)
	ada, bob := e.user("ada"), e.user("bob")
	t1 := e.follow(ada, "researcher", "openalex:A5023888391")
	t2 := e.follow(bob, "researcher", "host:1")
	e.ingest(testpaper.New("2202.02327", byAuthor("M. Wen", "host:1")))
	for _, d := range []struct {
		user int64
		t    follow.Target
	}{{ada, t1}, {bob, t2}} {
		if err := e.reg.NotThisPerson(e.ctx, d.user, d.t, "2202.02327"); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := e.reg.DisputesBy(e.ctx, ada)
	if err != nil || len(mine) != 1 || mine[0].ArxivID != "2202.02327" || mine[0].ID != "openalex:A5023888391" || mine[0].Title == "" {
		t.Fatalf("DisputesBy: %+v %v", mine, err)
	}
	users := account.NewUsers(e.db)
	users.OnErase(identity.EraseUser)
	users.OnErase(func(ctx context.Context, tx pgx.Tx, userID int64) error {
		// Erased by the hook, not by the users row's cascade.
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM identity_disputes WHERE user_id = $1`, userID).Scan(&n); err != nil || n != 0 {
			t.Errorf("after identity's hook: %d disputes (%v)", n, err)
		}
		return nil
	})
	if erased, err := users.Erase(e.ctx, ada); err != nil || !erased {
		t.Fatalf("Erase: %v %v", erased, err)
	}
	ds, err := e.reg.Disputes(e.ctx, "host:1", 0)
	if err != nil || len(ds) != 1 || ds[0].ID != "host:1" {
		t.Errorf("the person's disputes after the erasure: %+v %v", ds, err)
	}
	if mine, err := e.reg.DisputesBy(e.ctx, ada); err != nil || len(mine) != 0 {
		t.Errorf("the erased user's disputes: %+v %v", mine, err)
	}
}
