package database

import (
	"context"
	"fmt"
)

// PruneBatch is how many rows one statement of a retention prune deletes:
// each batch is its own short transaction, so a prune never holds many
// row locks, or one lock for long, and the writers it shares the table
// with wait at most one batch.
const PruneBatch = 5000

// DeleteBatches runs stmt, a DELETE of at most $1 rows (its other
// parameters are args, from $2), as its own transaction again and again
// until a run deletes fewer than PruneBatch rows, and returns how many
// rows it deleted in all. what names the rows in an error. stmt must pick
// only rows past their retention (so a run that finds none deletes none,
// and a prune interrupted between batches is finished by the next:
// idempotent), and find them through an index or an ordered, bounded scan
// (so that the last, short run costs little).
func (db *DB) DeleteBatches(ctx context.Context, what, stmt string, args ...any) (int64, error) {
	params := append([]any{PruneBatch}, args...)
	var total int64
	for {
		tag, err := db.Pool.Exec(ctx, stmt, params...)
		if err != nil {
			return total, fmt.Errorf("pruning %s: %w", what, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < PruneBatch {
			return total, nil
		}
	}
}
