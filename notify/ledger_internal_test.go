package notify

import (
	"context"
	"log/slog"
	"testing"

	"followfeed/account"
	"followfeed/internal/testdb"
)

// TestLedgerWritesWhatACrashMustNotLoseAtOnce: the ledger helper may keep
// an outcome in memory until the next write only when a crash in between
// is harmless (the row stays "sending", which a retry records as "unknown"
// and does not resend). "pending" (a 4xx: the message certainly did not go,
// a retry must resend it) and "failed" must be in the database as soon as
// record returns.
func TestLedgerWritesWhatACrashMustNotLoseAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	var user int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO users (sub, email) VALUES ('ledger', 'l@example.org') RETURNING id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	d := &Digester{db: db, addrs: account.NewAddresses(db, nil, nil, nil), logger: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		state    State
		atOnce   bool
		suppress bool
	}{
		{StatePending, true, false}, {StateFailed, true, false}, {StateFailed, true, true},
		{StateSent, false, false}, {StateUnknown, false, false}, {StateSkipped, false, false},
	} {
		var id int64
		if err := db.Pool.QueryRow(ctx, `INSERT INTO digests (user_id, period, kind, state, from_seq, to_seq)
			VALUES ($1, $2, 'daily', 'sending', 0, 1) RETURNING id`, user, string(tc.state)+"-"+map[bool]string{true: "s", false: "n"}[tc.suppress]).Scan(&id); err != nil {
			t.Fatal(err)
		}
		l := &outcomes{d: d}
		var out Outcome
		if err := l.record(ctx, &out, digestRow{id: id, email: "l@example.org"}, tc.state, "reply", tc.suppress); err != nil {
			t.Fatal(err)
		}
		if out.State != tc.state {
			t.Errorf("%s: outcome says %q", tc.state, out.State)
		}
		var got State
		if err := db.Pool.QueryRow(ctx, `SELECT state FROM digests WHERE id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]State{true: tc.state, false: StateSending}[tc.atOnce]; got != want {
			t.Errorf("%s (suppress %v): ledger says %q right after record, want %q", tc.state, tc.suppress, got, want)
		}
		if err := l.flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.Pool.QueryRow(ctx, `SELECT state FROM digests WHERE id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.state {
			t.Errorf("%s: ledger says %q after flush", tc.state, got)
		}
	}
}
