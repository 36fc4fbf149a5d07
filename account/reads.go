package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// The SQL other packages read account's tables with, in statements that
// must stay one statement (a snapshot, a round trip, a lock over both
// packages' rows): account writes these tables, the users only read them
// through the names below (docs/ARCHITECTURE.md, Rules).

// UsersTable is the users table, for a statement that joins a user's row
// (conventionally aliased u, by id, its primary key) or locks it (FOR
// UPDATE OF u: the user's row lock, which serialises a user's changes
// across packages). Users may use id, email, email_confirmed_at,
// timezone and link_epoch; account alone writes them.
const UsersTable = "users"

// FeedsTable is user_feeds, one row per user with a private feed: user_id
// (its primary key), version and changed_at (bumped by BumpFeeds), and
// token_hash (user_feeds_token_hash_idx): what a private feed's validator
// and the token lookup read.
const FeedsTable = "user_feeds"

// linkEpochSQL reads user $1's link epoch: what every signed link of
// theirs carries (manage, unsubscribe, confirm, dispute, feedback), moved
// on by RevokeLinks, Reconfirm and a new address (SetContact), each of
// which bumps the user's feed version in the same transaction (BumpFeeds),
// so a private feed's ETag changes whenever the links its items carry do.
// A primary-key probe.
const linkEpochSQL = `SELECT link_epoch FROM users WHERE id = $1`

// QueueLinkEpochIn queues on b the read of user userID's link epoch;
// set receives it when b's results are read (a user that does not exist
// is an error wrapping database.ErrNotFound). A private feed reads it
// with its follows, in the render's first round trip: a snapshot whose
// feed version is at least a validator's has the epoch of that version
// or a later one.
func QueueLinkEpochIn(b *pgx.Batch, userID int64, set func(epoch int64)) {
	b.Queue(linkEpochSQL, userID).QueryRow(func(row pgx.Row) error {
		var epoch int64
		if err := row.Scan(&epoch); err != nil {
			return database.NotFound(err, fmt.Sprintf("reading the link epoch of user %d", userID))
		}
		set(epoch)
		return nil
	})
}

// LinkEpoch reads user userID's link epoch in tx (an error wrapping
// database.ErrNotFound for a user that does not exist).
func LinkEpoch(ctx context.Context, tx pgx.Tx, userID int64) (int64, error) {
	var epoch int64
	if err := tx.QueryRow(ctx, linkEpochSQL, userID).Scan(&epoch); err != nil {
		return 0, database.NotFound(err, fmt.Sprintf("reading the link epoch of user %d", userID))
	}
	return epoch, nil
}

// SuppressedSQL is true when the address of users row u is suppressed (it
// bounced or unsubscribed): a probe of suppressions by the address
// (suppressions_email_key) and one by its hash (suppressions_email_sha256_idx:
// the suppressions of erased users are kept only as the hash, emailSHA256).
const SuppressedSQL = `(EXISTS (SELECT 1 FROM suppressions s WHERE s.email = lower(u.email))
	OR EXISTS (SELECT 1 FROM suppressions s WHERE s.email IS NULL AND s.email_sha256 = ` + emailSHA256SQL + `))`

// emailSHA256SQL is the hash a suppression of an erased user's address
// is kept as: sha256 of the lower-cased address of users row u, in UTF-8
// (migration 00032). It is computed in SQL only, so that every hash is
// lower() of the same collation.
const emailSHA256SQL = `sha256(convert_to(lower(u.email), 'UTF8'))`

// ReachableSQL is true when users row u has a confirmed, unsuppressed
// address: the only kind anything is mailed to.
const ReachableSQL = `u.email_confirmed_at IS NOT NULL AND NOT ` + SuppressedSQL

// UsersSuppressionsSQL is users u, each with the suppression s of its
// address, kept as the address or as its hash (a LEFT JOIN: s.reason is
// NULL when it is not suppressed). An address has one suppression row at
// most (Addresses.Suppress replaces a hash-only row with the address).
const UsersSuppressionsSQL = UsersTable + ` u LEFT JOIN suppressions s ON s.email = lower(u.email)
	OR (s.email IS NULL AND s.email_sha256 = ` + emailSHA256SQL + `)`

// LockUser takes user id's row lock in tx, serialising that user's
// changes (follows, channels) with each other and with whatever else holds
// it. An unknown user is an error wrapping database.ErrNotFound.
func LockUser(ctx context.Context, tx pgx.Tx, id int64) error {
	err := tx.QueryRow(ctx, `SELECT id FROM users WHERE id = $1 FOR UPDATE`, id).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("user %d: %w", id, database.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("locking user %d: %w", id, err)
	}
	return nil
}
