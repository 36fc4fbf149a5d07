package account_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/database"
	"followfeed/internal/testdb"
)

// TestErasureKeepsSuppressionsOnlyAsHashes: erasing a user takes their
// row, feed row and confirmation records, runs every package's hook in the
// same transaction, and keeps the suppressions of their addresses (the
// current one and one a confirmation mail went to) only as hashes: no
// text of the addresses stays. The check still holds for those addresses
// (a new user with one, in another case, is not reachable; and the
// profile's join says why) until the address is confirmed again, which
// lifts the hash. Another user's plain suppression, and a row as the
// previous release wrote it (no hash), keep working. Erasing again, or a
// subject nobody has, erases nothing and is no error.
func TestErasureKeepsSuppressionsOnlyAsHashes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	base, _ := url.Parse("https://followfeed.test/")
	addrs := account.NewAddresses(db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, nil)
	users := account.NewUsers(db)
	var hooked []int64
	users.OnErase(func(ctx context.Context, tx pgx.Tx, userID int64) error {
		// The hook runs in the erasure's transaction, the user's row still there and locked.
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE id = $1`, userID).Scan(&n); err != nil || n != 1 {
			t.Errorf("hook: the user's row: %d %v", n, err)
		}
		hooked = append(hooked, userID)
		return nil
	})
	ensure := func(sub, email string) *account.User {
		t.Helper()
		u, err := users.Ensure(ctx, &auth.Claims{Subject: sub, Email: email, EmailVerified: email != ""})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	suppress := func(email, reason string) {
		t.Helper()
		if err := db.InTx(ctx, func(tx pgx.Tx) error { return addrs.Suppress(ctx, tx, email, reason, "said "+email) }); err != nil {
			t.Fatal(err)
		}
	}
	reachable := func(id int64) (bool, string) {
		t.Helper()
		var ok bool
		var reason string
		if err := db.Pool.QueryRow(ctx, `SELECT `+account.ReachableSQL+`, coalesce(s.reason, '') FROM `+account.UsersSuppressionsSQL+` WHERE u.id = $1`, id).
			Scan(&ok, &reason); err != nil {
			t.Fatal(err)
		}
		return ok, reason
	}

	ada := ensure("ada", "Ada.Lovelace@Example.org")
	bob := ensure("bob", "bob@example.org")
	// An earlier address of Ada's, which a confirmation mail went to and
	// which bounced.
	exec(`INSERT INTO confirmation_requests (user_id, email) VALUES ($1, 'ada.old@example.org')`, ada.ID)
	suppress("ada.old@example.org", "bounce")
	suppress("Ada.Lovelace@Example.org", "unsubscribe")
	suppress("bob@example.org", "unsubscribe")
	exec(`INSERT INTO suppressions (email, reason) VALUES ('legacy@example.org', 'bounce')`) // as the previous release writes
	exec(`UPDATE user_feeds SET token_hash = 'h', token_salt = 's' WHERE user_id = $1`, ada.ID)

	erased, err := users.Erase(ctx, ada.ID)
	if err != nil || !erased {
		t.Fatalf("Erase: %v %v", erased, err)
	}
	if len(hooked) != 1 || hooked[0] != ada.ID {
		t.Errorf("hooks ran for %v", hooked)
	}
	for _, q := range []string{
		`SELECT count(*) FROM users WHERE id = $1`,
		`SELECT count(*) FROM user_feeds WHERE user_id = $1`,
		`SELECT count(*) FROM confirmation_requests WHERE user_id = $1`,
	} {
		if n := countRows(t, db, q, ada.ID); n != 0 {
			t.Errorf("%s: %d rows after the erasure", q, n)
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM suppressions WHERE email ILIKE '%ada%' OR detail ILIKE '%ada%'`); n != 0 {
		t.Errorf("%d suppressions still hold Ada's addresses as text", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM suppressions WHERE email IS NULL AND detail IS NULL AND email_sha256 = ANY (ARRAY[
		sha256('ada.lovelace@example.org'), sha256('ada.old@example.org')])`); n != 2 {
		t.Errorf("%d hash-only suppressions of Ada's two addresses, want 2", n)
	}
	if ok, reason := reachable(bob.ID); ok || reason != "unsubscribe" {
		t.Errorf("Bob's own suppression after Ada's erasure: reachable %v, %q", ok, reason)
	}

	// A new user with Ada's address (another case), confirmed by a
	// verified token: still suppressed, through the hash.
	eve := ensure("eve", "ADA.LOVELACE@example.org")
	if ok, reason := reachable(eve.ID); ok || reason != "unsubscribe" {
		t.Errorf("a new user with an erased user's unsubscribed address: reachable %v, reason %q", ok, reason)
	}
	legacy := ensure("lee", "Legacy@Example.org")
	if ok, reason := reachable(legacy.ID); ok || reason != "bounce" {
		t.Errorf("a row without a hash (previous release): reachable %v, %q", ok, reason)
	}
	// Unsubscribing the address again makes it the address's own row:
	// one row, no hash-only twin.
	suppress("ADA.LOVELACE@example.org", "unsubscribe")
	if n := countRows(t, db, `SELECT count(*) FROM suppressions WHERE email = 'ada.lovelace@example.org' OR email_sha256 = sha256('ada.lovelace@example.org')`); n != 1 {
		t.Errorf("%d rows for the address after it was suppressed again, want 1", n)
	}
	// Confirming the address lifts its suppression, whatever its form.
	exec(`DELETE FROM suppressions WHERE email = 'ada.lovelace@example.org'`)
	exec(`INSERT INTO suppressions (email_sha256, reason) VALUES (sha256('ada.lovelace@example.org'), 'unsubscribe')`)
	var epoch int64
	if err := db.Pool.QueryRow(ctx, `SELECT link_epoch FROM users WHERE id = $1`, eve.ID).Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimPrefix(addrs.ConfirmURL(eve.ID, epoch, "ADA.LOVELACE@example.org"), "https://followfeed.test/confirm/")
	if _, err := addrs.Confirm(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if ok, reason := reachable(eve.ID); !ok || reason != "" {
		t.Errorf("after the confirmation link: reachable %v, %q", ok, reason)
	}

	if erased, err := users.Erase(ctx, ada.ID); err != nil || erased {
		t.Errorf("erasing again: %v %v", erased, err)
	}
	if erased, err := users.EraseSub(ctx, "nobody"); err != nil || erased {
		t.Errorf("erasing a subject nobody has: %v %v", erased, err)
	}
	if erased, err := users.EraseSub(ctx, "bob"); err != nil || !erased {
		t.Errorf("EraseSub(bob): %v %v", erased, err)
	}
	if _, err := users.BySub(ctx, "bob"); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("bob after EraseSub: %v", err)
	}
}

// TestErasureIsAllOrNothing: a hook that fails rolls the whole erasure
// back; the user and their rows stay.
func TestErasureIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	users := account.NewUsers(db)
	u, err := users.Ensure(ctx, &auth.Claims{Subject: "ada", Email: "ada@example.org", EmailVerified: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO suppressions (email, reason) VALUES ('ada@example.org', 'unsubscribe')`); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	users.OnErase(func(ctx context.Context, tx pgx.Tx, userID int64) error { return boom })
	if _, err := users.Erase(ctx, u.ID); !errors.Is(err, boom) {
		t.Fatalf("Erase with a failing hook: %v", err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM users WHERE id = $1`, u.ID); n != 1 {
		t.Error("the user is gone after a failed erasure")
	}
	if n := countRows(t, db, `SELECT count(*) FROM user_feeds WHERE user_id = $1`, u.ID); n != 1 {
		t.Error("the feed row is gone after a failed erasure")
	}
	if n := countRows(t, db, `SELECT count(*) FROM suppressions WHERE email = 'ada@example.org'`); n != 1 {
		t.Error("the suppression changed after a failed erasure")
	}
}

func countRows(t *testing.T, db *database.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
