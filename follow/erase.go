package follow

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// lockCountsSQL locks the follower counts of user $1's follows in key
// order, before eraseFollowsSQL changes them: two erasures (or an
// erasure and a recount) then never wait for each other's rows
// crosswise. A follow or unfollow locks one count row after its user's
// row, which the erasure already holds.
const lockCountsSQL = `
	SELECT c.key FROM follow_counts c
	WHERE c.key IN (SELECT key FROM follows WHERE user_id = $1)
	ORDER BY c.key FOR UPDATE`

// eraseFollowsSQL removes user $1's follows and takes them off their
// keys' follower counts in the same statement. Deleting the follows also
// deletes their instant_follows rows (the triggers of migration 00020).
const eraseFollowsSQL = `
	WITH gone AS (
		DELETE FROM follows WHERE user_id = $1 RETURNING key
	)
	UPDATE follow_counts c SET followers = c.followers - 1 FROM gone WHERE c.key = gone.key`

// EraseUser erases user userID's follows in tx (the erasure's
// transaction, account.Users.Erase, whose hook it is): their follow rows
// and their share of every follower count, so counts drop at the commit.
// No follow hook runs (nothing is retrained or backfilled for a user who
// is going) and no feed is bumped (the feed goes too).
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, lockCountsSQL, userID); err != nil {
		return fmt.Errorf("locking the follower counts of user %d: %w", userID, err)
	}
	if _, err := tx.Exec(ctx, eraseFollowsSQL, userID); err != nil {
		return fmt.Errorf("erasing the follows of user %d: %w", userID, err)
	}
	return nil
}
