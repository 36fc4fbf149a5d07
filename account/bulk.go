package account

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// BulkUser is one user for BulkLoad.
type BulkUser struct {
	Sub   string
	Email string // "" for none
	// Confirmed marks Email confirmed as of the load (as a verified token
	// claim confirms it).
	Confirmed bool
	Timezone  string // an IANA name; "" is UTC
}

// bulkBatch is how many users BulkLoad writes per COPY.
const bulkBatch = 50_000

// BulkLoad writes users, each with the feed row Ensure gives a new user
// (version 1, no token), with COPY, in tx: for generating datasets (the
// benchmark's), not for people. It returns the users' ids in the order of
// users (taken from the users sequence, ascending in that order: see
// database.NextIDs). It checks nothing a sign-in would: the rows are
// written as given, under the table's constraints only (a subject stored
// already fails the load on its unique key), and it runs no hook (no
// digest schedule for a confirmed address: notify's settings stay at
// their defaults, digests off).
func BulkLoad(ctx context.Context, tx pgx.Tx, users iter.Seq[BulkUser]) ([]int64, error) {
	var all []int64
	now := time.Now()
	err := database.Batches(users, bulkBatch, func(batch []BulkUser) error {
		ids, err := database.NextIDs(ctx, tx, "users", "id", len(batch))
		if err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"users"}, []string{"id", "sub", "email", "email_confirmed_at", "timezone"},
			pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
				u := &batch[i]
				var email, confirmed, tz any
				if u.Email != "" {
					email = u.Email
					if u.Confirmed {
						confirmed = now
					}
				}
				tz = u.Timezone
				if u.Timezone == "" {
					tz = "UTC"
				}
				return []any{ids[i], u.Sub, email, confirmed, tz}, nil
			})); err != nil {
			return fmt.Errorf("loading %d users: %w", len(batch), err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"user_feeds"}, []string{"user_id"},
			pgx.CopyFromSlice(len(ids), func(i int) ([]any, error) { return []any{ids[i]}, nil })); err != nil {
			return fmt.Errorf("loading the feed rows of %d users: %w", len(batch), err)
		}
		all = append(all, ids...)
		return nil
	})
	return all, err
}
