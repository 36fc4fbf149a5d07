package follow

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The SQL other packages read follow's tables with (follows,
// follow_counts): follow writes them, users (match's feed, head and
// match-job statements, the registry, feeds' WebSub pings) read them only
// through the names below (docs/ARCHITECTURE.md, Rules).

// FollowsTable is follows, one row per (user_id, key): the follow's
// include_cross_lists, include_replacements, created_at (the order of a
// user's follows list, oldest first by (created_at, key)) and target (the
// id as followed). Users may rely on its primary key (user_id, key: a
// user's follows), follows_key_idx (key, including user_id and the
// options: a key's followers) and follows_user_created_idx.
const FollowsTable = "follows"

// FollowedSQL is true when somebody follows key (an expression of the
// caller's statement): a primary-key probe of follow_counts.
func FollowedSQL(key string) string {
	return `EXISTS (SELECT 1 FROM follow_counts c WHERE c.key = ` + key + ` AND c.followers > 0)`
}

// Follows says whether user follows key, in tx.
func Follows(ctx context.Context, tx pgx.Tx, userID int64, key string) (bool, error) {
	var yes bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM follows WHERE user_id = $1 AND key = $2)`, userID, key).Scan(&yes)
	if err != nil {
		return false, fmt.Errorf("reading follow %s of user %d: %w", key, userID, err)
	}
	return yes, nil
}

// FollowersOf returns the users who follow one of keys, each once, in tx
// (follows_key_idx).
func FollowersOf(ctx context.Context, tx pgx.Tx, keys []string) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT user_id FROM follows WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("finding followers of %d keys: %w", len(keys), err)
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("finding followers of %d keys: %w", len(keys), err)
	}
	return users, nil
}
