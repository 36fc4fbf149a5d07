package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// SeqTimesRetention is how long key_seq_times keeps a row for every write
// of key rows. A row says when the writes up to its seq committed, and is
// read for one thing: a private feed's Last-Modified, the time of the
// first row at or after the feed's newest seq H (SeqTimeSQL). The rows
// older than this are merged into one floor row (PruneSeqTimes), so the
// table holds this much time's writes and one row more, whatever the
// service's age.
const SeqTimesRetention = 30 * 24 * time.Hour

// PruneSeqTimes merges the key_seq_times rows older than
// SeqTimesRetention into the table's oldest row, the floor: its seq
// becomes the newest merged row's, its time the oldest's. It returns how
// many rows it removed. The newest row (the high seq's write) is never
// merged, so every seq up to the high seq still finds a row.
//
// What feed readers see: a feed whose H is newer than the retention gets the
// same Last-Modified as before; one whose H is older gets the floor's
// time, which is no later than the truth, so a prune never makes a feed
// look modified (no If-Modified-Since poll that was a 304 becomes a 200)
// and never hides a change: whatever changes a feed either writes key rows
// (a new H with its own exact row) or bumps the feed's version (its
// changed_at is now), and Last-Modified is the later of the two
// (feeds.Validators). ETags do not use the time at all.
//
// It runs in batches of database.PruneBatch rows, each its own short
// transaction (the floor moves up batch by batch), and takes no writers'
// lock: an ingest only ever adds a row above every existing one; a second
// prune at once waits for the floor's row lock and stops. Run again, it
// merges nothing more (idempotent).
func (st *Store) PruneSeqTimes(ctx context.Context) (int64, error) {
	// The first row young enough to keep, else the newest (kept anyway):
	// key_seq_times_pkey from the oldest row, through the old rows only.
	// The floor is the oldest row.
	var cut, floor int64
	err := st.db.Pool.QueryRow(ctx, `
		SELECT coalesce((SELECT to_seq FROM key_seq_times WHERE at >= now() - $1::interval ORDER BY to_seq LIMIT 1),
		                (SELECT max(to_seq) FROM key_seq_times), 0),
		       coalesce((SELECT min(to_seq) FROM key_seq_times), 0)`,
		SeqTimesRetention.String()).Scan(&cut, &floor)
	if err != nil {
		return 0, fmt.Errorf("pruning key_seq_times: %w", err)
	}
	var total int64
	for floor < cut {
		var n, top int64
		moved := false
		err := st.db.InTx(ctx, func(tx pgx.Tx) error {
			// The floor's row lock: a second prune running at once (two
			// processes) waits here, then finds the floor moved and
			// stops, so no merged row is left without the floor standing
			// for it.
			var locked int64
			err := tx.QueryRow(ctx, `SELECT to_seq FROM key_seq_times WHERE to_seq = $1 FOR UPDATE`, floor).Scan(&locked)
			if errors.Is(err, pgx.ErrNoRows) {
				moved = true
				return nil
			}
			if err != nil {
				return err
			}
			var first *time.Time
			if err := tx.QueryRow(ctx, `
				WITH d AS (
					DELETE FROM key_seq_times WHERE to_seq IN (
						SELECT to_seq FROM key_seq_times WHERE to_seq > $1 AND to_seq < $2 ORDER BY to_seq LIMIT $3)
					RETURNING to_seq, at)
				SELECT count(*), coalesce(max(to_seq), 0), min(at) FROM d`, floor, cut, database.PruneBatch).Scan(&n, &top, &first); err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			// The floor now stands for every merged write: the newest
			// merged seq, at the earliest time any of them had.
			_, err = tx.Exec(ctx, `UPDATE key_seq_times SET to_seq = $2, at = least(at, $3) WHERE to_seq = $1`, floor, top, *first)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("pruning key_seq_times: %w", err)
		}
		total += n
		if moved || n < database.PruneBatch {
			break
		}
		floor = top
	}
	return total, nil
}
