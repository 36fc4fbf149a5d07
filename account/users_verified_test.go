package account_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/internal/testdb"
	"followfeed/notify"
)

// TestEnsureConfirmsTheStoredAddressOfAVerifiedClaim: a token whose email
// claim is verified confirms the user's stored, unconfirmed address when it
// is the same address (whatever its case), and schedules the next daily or
// weekly digest as the confirmation link does; an unverified claim, another
// address or a suppressed address confirm nothing.
func TestEnsureConfirmsTheStoredAddressOfAVerifiedClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	// Sunday 29 November 2026, 11:00 in Amsterdam.
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// Wired as in the service: confirming schedules through notify.
	us := account.NewUsers(db)
	us.OnConfirm(notify.NewPreferences(db, nil, clock).AddressConfirmed)

	// user is created by a token without an address; then it stores an
	// unconfirmed address with digest settings, as PATCH /v1/me leaves them
	// (no digest scheduled for an unconfirmed address).
	user := func(sub, email, freq string, weekday int, suppressed bool) int64 {
		t.Helper()
		u, err := us.Ensure(ctx, &auth.Claims{Subject: sub})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `UPDATE users SET email = $2, timezone = 'Europe/Amsterdam' WHERE id = $1`, u.ID, email); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO digest_schedules (user_id, frequency, hour, weekday) VALUES ($1, $2, 7, $3)`,
			u.ID, freq, weekday); err != nil {
			t.Fatal(err)
		}
		if suppressed {
			if _, err := db.Pool.Exec(ctx, `INSERT INTO suppressions (email, reason) VALUES (lower($1), 'bounce')`, email); err != nil {
				t.Fatal(err)
			}
		}
		return u.ID
	}
	type state struct {
		email     string
		confirmed bool
		next      *time.Time
	}
	read := func(id int64) state {
		t.Helper()
		var s state
		if err := db.Pool.QueryRow(ctx, `SELECT u.email, u.email_confirmed_at IS NOT NULL, d.next_at
			FROM users u LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.id = $1`, id).
			Scan(&s.email, &s.confirmed, &s.next); err != nil {
			t.Fatal(err)
		}
		return s
	}
	ensure := func(sub, email string, verified bool) *account.User {
		t.Helper()
		u, err := us.Ensure(ctx, &auth.Claims{Subject: sub, Email: email, EmailVerified: verified})
		if err != nil {
			t.Fatalf("Ensure(%s, %s, verified=%v): %v", sub, email, verified, err)
		}
		return u
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("same address, daily", func(t *testing.T) {
		id := user("daily-reader", "Reader@Example.org", "daily", 1, false)
		// Neither an unverified claim nor a verified other address confirms it.
		for _, c := range []struct {
			email    string
			verified bool
		}{{"reader@example.org", false}, {"someone.else@example.org", true}} {
			if u := ensure("daily-reader", c.email, c.verified); u.EmailConfirmed || u.Email != "Reader@Example.org" {
				t.Fatalf("claim %+v: user %+v", c, u)
			}
			if s := read(id); s.confirmed || s.next != nil || s.email != "Reader@Example.org" {
				t.Fatalf("claim %+v changed the row: %+v", c, s)
			}
		}
		u := ensure("daily-reader", " reader@EXAMPLE.org", true)
		if !u.EmailConfirmed || u.Email != "Reader@Example.org" {
			t.Fatalf("verified claim of the stored address: user %+v, want it confirmed and the address kept as stored", u)
		}
		s := read(id)
		if !s.confirmed || s.email != "Reader@Example.org" {
			t.Fatalf("row after the verified claim: %+v", s)
		}
		// The next 07:00 in Amsterdam after Sunday 11:00: Monday.
		if want := at("2026-11-30T06:00:00Z"); s.next == nil || !s.next.Equal(want) {
			t.Errorf("next digest %v, want %v", s.next, want)
		}
		// Later requests change nothing more.
		setNow(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
		defer setNow(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
		if u := ensure("daily-reader", "reader@example.org", true); !u.EmailConfirmed {
			t.Errorf("second request: %+v", u)
		}
		if s2 := read(id); s2.next == nil || !s2.next.Equal(*s.next) {
			t.Errorf("a later request moved the next digest: %v, was %v", s2.next, s.next)
		}
	})

	t.Run("weekly", func(t *testing.T) {
		id := user("weekly-reader", "weekly@example.org", "weekly", 3, false) // Wednesday
		if u := ensure("weekly-reader", "weekly@example.org", true); !u.EmailConfirmed {
			t.Fatalf("user %+v", u)
		}
		if s, want := read(id), at("2026-12-02T06:00:00Z"); s.next == nil || !s.next.Equal(want) {
			t.Errorf("next weekly digest %v, want %v", s.next, want)
		}
	})

	t.Run("digests off", func(t *testing.T) {
		id := user("quiet-reader", "quiet@example.org", "off", 1, false)
		if u := ensure("quiet-reader", "quiet@example.org", true); !u.EmailConfirmed {
			t.Fatalf("user %+v", u)
		}
		if s := read(id); !s.confirmed || s.next != nil {
			t.Errorf("row %+v: confirmed, and no digest scheduled while digests are off", s)
		}
	})

	t.Run("suppressed address waits for its confirmation link", func(t *testing.T) {
		id := user("bounced-reader", "bounced@example.org", "daily", 1, true)
		if u := ensure("bounced-reader", "bounced@example.org", true); u.EmailConfirmed {
			t.Fatalf("a verified claim confirmed a suppressed address: %+v", u)
		}
		if s := read(id); s.confirmed || s.next != nil {
			t.Errorf("row %+v", s)
		}
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM suppressions WHERE email = 'bounced@example.org'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("suppression lifted: %d %v", n, err)
		}
	})

	t.Run("no address yet: the verified one is adopted", func(t *testing.T) {
		if _, err := us.Ensure(ctx, &auth.Claims{Subject: "new-reader"}); err != nil {
			t.Fatal(err)
		}
		if u := ensure("new-reader", "new@example.org", true); !u.EmailConfirmed || u.Email != "new@example.org" {
			t.Errorf("user %+v", u)
		}
	})
}
