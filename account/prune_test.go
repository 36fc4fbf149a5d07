package account_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/internal/testdb"
	"followfeed/worker"
)

// TestPruneConfirmationsKeepsTheCapsWindow: two users ask for
// confirmation mails; one's are aged past the caps' day (on purpose, in
// SQL), the other's are an hour old. The prune deletes the old ones only,
// and the caps still count exactly the day's: the user with recent mails
// is still capped, the other may ask again.
func TestPruneConfirmationsKeepsTheCapsWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://followfeed.test")
	addrs := account.NewAddresses(db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, worker.NewEnqueuer(ins))
	setEmail := func(sub, email string) error {
		u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: sub})
		if err != nil {
			t.Fatal(err)
		}
		return db.InTx(ctx, func(tx pgx.Tx) error {
			if err := account.LockUser(ctx, tx, u.ID); err != nil {
				return err
			}
			_, err := addrs.SetContact(ctx, tx, u.ID, email, "UTC")
			return err
		})
	}
	for i := range account.MaxConfirmationsPerUser {
		for _, who := range []string{"old", "new"} {
			if err := setEmail(who, fmt.Sprintf("%s%d@example.org", who, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{
		`UPDATE confirmation_requests SET created_at = now() - interval '25 hours' WHERE email LIKE 'old%'`,
		`UPDATE confirmation_requests SET created_at = now() - interval '1 hour' WHERE email LIKE 'new%'`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	n, err := addrs.PruneConfirmations(ctx)
	if err != nil || n != int64(account.MaxConfirmationsPerUser) {
		t.Fatalf("PruneConfirmations = %d, %v; want %d", n, err, account.MaxConfirmationsPerUser)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM confirmation_requests WHERE email LIKE 'new%'`).Scan(&left); err != nil || left != account.MaxConfirmationsPerUser {
		t.Errorf("%d of the day's rows left (%v), want %d", left, err, account.MaxConfirmationsPerUser)
	}
	if err := setEmail("new", "new-more@example.org"); apperr.CodeOf(err) != apperr.RateLimited {
		t.Errorf("the capped user after the prune: %v, want still capped", err)
	}
	if err := setEmail("old", "old-more@example.org"); err != nil {
		t.Errorf("the user whose mails are a day old: %v", err)
	}
	if n, err := addrs.PruneConfirmations(ctx); err != nil || n != 0 {
		t.Errorf("a second prune deleted %d (%v)", n, err)
	}
}
