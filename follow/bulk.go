package follow

import (
	"context"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/database"
)

// BulkFollow is one follow for BulkLoad: userID follows Target with the
// options a new follow gets by default (cross-lists included, replacements
// only for a paper, no label).
type BulkFollow struct {
	UserID int64
	Target Target
}

// bulkBatch is how many follows BulkLoad writes per COPY.
const bulkBatch = 100_000

// BulkLoad writes follows with COPY, in tx, in the order of follows, with
// the key, kind and target Follow writes for each Target: for generating
// datasets (the benchmark's), not for people. It returns how many it
// wrote. Targets must be normalised (ParseTarget's form); a follow stored
// already fails the load on the primary key. It skips what Follow does
// beyond the row: it takes no user's lock and checks no MaxFollows, keeps
// no follower counts (RecountAll or Recount afterwards), bumps no feed
// (account.BumpFeeds, for users who had one) and runs no FollowHook (no
// query backfill). Users with instant delivery get the follows in
// instant_follows too (its triggers, one statement per COPY).
func BulkLoad(ctx context.Context, tx pgx.Tx, follows iter.Seq[BulkFollow]) (int64, error) {
	var n int64
	err := database.Batches(follows, bulkBatch, func(batch []BulkFollow) error {
		wrote, err := tx.CopyFrom(ctx, pgx.Identifier{"follows"},
			[]string{"user_id", "key", "kind", "target", "include_cross_lists", "include_replacements"},
			pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
				f := &batch[i]
				key := f.Target.Key()
				if key == "" {
					return nil, fmt.Errorf("follow of user %d: unknown kind %q", f.UserID, f.Target.Kind)
				}
				return []any{f.UserID, key, string(f.Target.Kind), f.Target.ID, true, f.Target.Kind == Paper}, nil
			}))
		n += wrote
		if err != nil {
			return fmt.Errorf("loading %d follows: %w", len(batch), err)
		}
		return nil
	})
	return n, err
}

// RecountAll sets every key's follower count (follow_counts) to the number
// of its follows, in one pass over follows: after BulkLoad. A key counted
// before that has no follows any more keeps its row, at 0, as Unfollow
// leaves it. Rows whose count is right are not written. It returns how
// many counts it wrote.
func RecountAll(ctx context.Context, tx pgx.Tx) (int64, error) {
	// Zeros first (nothing to do after a load into an empty table), so
	// that the counts are one grouping of follows.
	zeroed, err := tx.Exec(ctx, `
		UPDATE follow_counts c SET followers = 0
		WHERE c.followers <> 0 AND NOT EXISTS (SELECT 1 FROM follows f WHERE f.key = c.key)`)
	if err != nil {
		return 0, fmt.Errorf("recounting the followers of keys nobody follows: %w", err)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO follow_counts (key, followers) SELECT key, count(*) FROM follows GROUP BY key
		ON CONFLICT (key) DO UPDATE SET followers = excluded.followers
		WHERE follow_counts.followers <> excluded.followers`)
	if err != nil {
		return 0, fmt.Errorf("recounting the followers of every key: %w", err)
	}
	return zeroed.RowsAffected() + tag.RowsAffected(), nil
}

// Recount is RecountAll for keys only: each key's count is read from
// follows_key_idx, so its cost grows with the keys' follows, not with
// the table.
func Recount(ctx context.Context, tx pgx.Tx, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO follow_counts (key, followers)
		SELECT k.key, (SELECT count(*) FROM follows f WHERE f.key = k.key)
		FROM (SELECT DISTINCT unnest($1::text[]) AS key) k
		ON CONFLICT (key) DO UPDATE SET followers = excluded.followers
		WHERE follow_counts.followers <> excluded.followers`, keys); err != nil {
		return fmt.Errorf("recounting the followers of %d keys: %w", len(keys), err)
	}
	return nil
}

// RemoveKind deletes every follow of kind, in tx, with the follower
// counts of their keys (rows, not decrements: nobody follows those keys
// afterwards), and bumps the feeds of the users who had one, as Unfollow
// does for each: for taking generated follows off a dataset again (the
// benchmark's queries). It returns how many follows it deleted.
func RemoveKind(ctx context.Context, tx pgx.Tx, kind Kind) (int, error) {
	rows, err := tx.Query(ctx, `
		WITH gone AS (DELETE FROM follows WHERE kind = $1 RETURNING user_id, key),
		counts AS (DELETE FROM follow_counts WHERE key IN (SELECT key FROM gone))
		SELECT user_id, count(*) FROM gone GROUP BY user_id ORDER BY user_id`, string(kind))
	if err != nil {
		return 0, fmt.Errorf("removing the %s follows: %w", kind, err)
	}
	var users []int64
	n := 0
	for rows.Next() {
		var u int64
		var c int
		if err := rows.Scan(&u, &c); err != nil {
			rows.Close()
			return 0, err
		}
		users, n = append(users, u), n+c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("removing the %s follows: %w", kind, err)
	}
	return n, account.BumpFeeds(ctx, tx, users...)
}
