package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
)

// EraseUser erases user userID's digest ledger and schedule in tx (the
// erasure's transaction, account.Users.Erase, whose hook it is). A send
// job that carries one of their rows then finds none and sends nothing
// (triageDigests); one already building a digest of theirs finds its row
// gone when it marks it sending, and sends nothing (errGone). Deleting the
// schedule ends their instant delivery (instant_follows, migration 00020).
// The ledger recorded every address a digest went to: their
// suppressions are kept only as hashes (account.HashSuppressions), like
// those of the user's current address.
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	rows, err := tx.Query(ctx, `
		WITH ledger AS (DELETE FROM digests WHERE user_id = $1 RETURNING email),
		schedule AS (DELETE FROM digest_schedules WHERE user_id = $1)
		SELECT DISTINCT email FROM ledger WHERE email IS NOT NULL`, userID)
	if err != nil {
		return fmt.Errorf("erasing the digests of user %d: %w", userID, err)
	}
	emails, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("erasing the digests of user %d: %w", userID, err)
	}
	return account.HashSuppressions(ctx, tx, emails)
}

// LedgerEntry is one row of a user's digest ledger as the user may see it
// (their data export): what kind of digest, which period or window, its
// state, how many papers it held and when. Not the address, the SMTP
// reply or the Message-ID.
type LedgerEntry struct {
	Kind      string
	Period    string
	State     State
	Papers    int
	CreatedAt time.Time
	UpdatedAt time.Time
	SentAt    time.Time // zero unless sent
}

// Ledger returns user userID's digest ledger, newest first
// (digests_user_created_idx).
func (d *Digester) Ledger(ctx context.Context, userID int64) ([]LedgerEntry, error) {
	rows, err := d.db.Pool.Query(ctx, `
		SELECT kind, period, state, papers, created_at, updated_at, coalesce(sent_at, 'epoch')
		FROM digests WHERE user_id = $1 ORDER BY created_at DESC, id DESC`, userID)
	if err != nil {
		return nil, fmt.Errorf("reading the digests of user %d: %w", userID, err)
	}
	defer rows.Close()
	out := []LedgerEntry{}
	for rows.Next() {
		var e LedgerEntry
		if err := rows.Scan(&e.Kind, &e.Period, &e.State, &e.Papers, &e.CreatedAt, &e.UpdatedAt, &e.SentAt); err != nil {
			return nil, err
		}
		if e.SentAt.Unix() == 0 {
			e.SentAt = time.Time{}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
