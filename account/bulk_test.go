package account_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/internal/testdb"
)

// BulkLoad writes the users as given, each with a new user's feed row, in
// the order given with ascending ids from the table's sequence (a user
// created afterwards gets the next), runs no hook (no digest schedule),
// and a subject stored already fails the load.
func TestBulkLoad(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	users := []account.BulkUser{
		{Sub: "bulk-1", Email: "one@example.org", Confirmed: true, Timezone: "Asia/Tokyo"},
		{Sub: "bulk-2", Email: "two@example.org"},
		{Sub: "bulk-3", Confirmed: true}, // no address: nothing to confirm
	}
	var ids []int64
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		ids, err = account.BulkLoad(ctx, tx, slices.Values(users))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(users) || !slices.IsSorted(ids) {
		t.Fatalf("ids %v", ids)
	}
	us := account.NewUsers(db)
	for i, want := range users {
		u, err := us.Get(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		tz := want.Timezone
		if tz == "" {
			tz = "UTC"
		}
		if u.Sub != want.Sub || u.Email != want.Email || u.EmailConfirmed != (want.Confirmed && want.Email != "") || u.Timezone != tz {
			t.Errorf("user %d: %+v, want %+v", i, u, want)
		}
		var version int64
		var token bool
		if err := db.Pool.QueryRow(ctx, `SELECT version, token_hash IS NOT NULL FROM user_feeds WHERE user_id = $1`, ids[i]).Scan(&version, &token); err != nil {
			t.Fatalf("feed row of user %d: %v", i, err)
		}
		if version != 1 || token {
			t.Errorf("feed row of user %d: version %d, token %v", i, version, token)
		}
	}
	var schedules int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM digest_schedules`).Scan(&schedules); err != nil || schedules != 0 {
		t.Errorf("%d digest schedules (%v)", schedules, err)
	}
	u, err := us.Ensure(ctx, &auth.Claims{Subject: "signed-in"})
	if err != nil || u.ID <= ids[len(ids)-1] {
		t.Errorf("a user signing in afterwards got id %d (%v) after %v", u.ID, err, ids)
	}
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := account.BulkLoad(ctx, tx, slices.Values([]account.BulkUser{{Sub: "bulk-2"}}))
		return err
	})
	if err == nil {
		t.Error("a subject stored already was loaded again")
	}
}
