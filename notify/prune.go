package notify

import (
	"context"
	"fmt"
	"time"
)

// DefaultLedgerRetention is how long the digest ledger keeps a row after
// it was made, unless DIGEST_RETENTION says otherwise: long enough to
// answer "did I get my digest on …" for a season.
const DefaultLedgerRetention = 90 * 24 * time.Hour

// MinLedgerRetention is the shortest retention the ledger accepts: more
// than the longest period (a week) and the time after which an open row
// is closed as abandoned (48 h), so no row a send, a retry or the sweep
// can still touch is ever old enough.
const MinLedgerRetention = 14 * 24 * time.Hour

// PruneLedger deletes the digest ledger's rows made more than the
// retention ago (DigesterConfig.LedgerRetention) and returns how many. It
// keeps, whatever their age:
//
//   - rows not final yet (pending, sending): a send job or the sweep still
//     needs them;
//   - each user's newest instant row and newest other row. A row's name is
//     what stops a second digest of the same window ((user, period) is
//     unique): a scheduled period never comes back once the schedule has
//     moved past it, and a by-hand or instant row's name is its window
//     (watermark–high seq), which only the newest row of its kind can
//     still share with a digest to come (when nothing moved since, a
//     second SendNow finds it and sends nothing). The newest other row is
//     also where the next digest's window starts (windowStarts: "since
//     your last digest").
//
// So a pruned row's absence can never make a digest go out twice. It
// walks digests_pkey from the oldest row and deletes in batches of
// database.PruneBatch, each its own transaction; the rows it keeps are at
// most two per user. Run again, it deletes nothing more (idempotent).
func (d *Digester) PruneLedger(ctx context.Context) (int64, error) {
	cutoff := d.now().Add(-d.retention)
	// The first row young enough to keep: ids grow with created_at, so
	// the prune reads the old rows only (digests_pkey from the start).
	var below int64
	if err := d.db.Pool.QueryRow(ctx, `
		SELECT coalesce((SELECT id FROM digests WHERE created_at >= $1 ORDER BY id LIMIT 1),
		                (SELECT max(id) + 1 FROM digests), 0)`, cutoff).Scan(&below); err != nil {
		return 0, fmt.Errorf("pruning the digest ledger: %w", err)
	}
	final := []string{string(StateSent), string(StateFailed), string(StateSkipped), string(StateUnknown)}
	// The newer row of the same class, if any, through
	// digests_user_created_idx.
	return d.db.DeleteBatches(ctx, "the digest ledger", `
		DELETE FROM digests WHERE id IN (
			SELECT g.id FROM digests g
			WHERE g.id < $3 AND g.created_at < $2 AND g.state = ANY($4)
			  AND EXISTS (SELECT 1 FROM digests n
			              WHERE n.user_id = g.user_id AND n.created_at >= g.created_at AND n.id > g.id
			                AND (n.kind = 'instant') = (g.kind = 'instant'))
			ORDER BY g.id LIMIT $1)`, cutoff, below, final)
}
