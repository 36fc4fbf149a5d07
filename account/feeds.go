package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// BumpFeeds marks the users' feeds changed in tx (a new version, hence a
// new ETag and Last-Modified): something their feeds show changed without
// a new key row of their follows (follows edited, an identity link or
// dispute, a token rotated, a query's backfill). New key rows need
// no bump: a private feed's validator also holds the newest seq of its
// keys (feeds.Validators). Users without a feed row are ignored.
func BumpFeeds(ctx context.Context, tx pgx.Tx, userIDs ...int64) error {
	if len(userIDs) == 0 {
		return nil
	}
	// A HOT update (user_feeds' fillfactor) per user: a primary-key probe
	// each for a few users, a sequential scan with a hashed = ANY for
	// thousands. Callers with many users pass them sorted: the pages are
	// then visited in order.
	if _, err := tx.Exec(ctx, `
		UPDATE user_feeds SET version = version + 1, changed_at = now() WHERE user_id = ANY($1)`, userIDs); err != nil {
		return fmt.Errorf("bumping the feed versions of %d users: %w", len(userIDs), err)
	}
	return nil
}

// FeedTokens stores what identifies a user's private feed token: its salt
// (to derive the token again) and the hash it is looked up by. The token
// itself is never stored; package feeds derives and hashes it.
type FeedTokens struct {
	db *database.DB
}

// NewFeedTokens returns the feed token storage over db.
func NewFeedTokens(db *database.DB) *FeedTokens { return &FeedTokens{db: db} }

// Salt returns the user's token salt, nil when no token was issued yet, or
// an error wrapping database.ErrNotFound for an unknown user.
func (t *FeedTokens) Salt(ctx context.Context, userID int64) ([]byte, error) {
	var salt []byte
	err := t.db.Pool.QueryRow(ctx, `SELECT token_salt FROM user_feeds WHERE user_id = $1`, userID).Scan(&salt)
	if err != nil {
		return nil, database.NotFound(err, fmt.Sprintf("reading feed token of user %d", userID))
	}
	return salt, nil
}

// Salts returns the token salts of those users that have one.
func (t *FeedTokens) Salts(ctx context.Context, userIDs []int64) (map[int64][]byte, error) {
	rows, err := t.db.Pool.Query(ctx, `SELECT user_id, token_salt FROM user_feeds WHERE user_id = ANY($1) AND token_salt IS NOT NULL`, userIDs)
	if err != nil {
		return nil, fmt.Errorf("reading feed tokens of %d users: %w", len(userIDs), err)
	}
	out := make(map[int64][]byte, len(userIDs))
	for rows.Next() {
		var id int64
		var salt []byte
		if err := rows.Scan(&id, &salt); err != nil {
			rows.Close()
			return nil, err
		}
		out[id] = salt
	}
	rows.Close()
	return out, rows.Err()
}

// Store records a new token's salt and hash, replacing the old token (which
// stops working at once) and bumping the feed version. With onlyIfMissing
// it stores nothing when the user has a token already and reports false:
// two first requests racing then keep the same token. An unknown user is an
// error wrapping database.ErrNotFound.
func (t *FeedTokens) Store(ctx context.Context, userID int64, salt, hash []byte, onlyIfMissing bool) (stored bool, err error) {
	err = t.db.InTx(ctx, func(tx pgx.Tx) error {
		var got []byte
		err := tx.QueryRow(ctx, `
			UPDATE user_feeds SET token_salt = $2, token_hash = $3
			WHERE user_id = $1 AND ($4 = false OR token_salt IS NULL)
			RETURNING token_salt`, userID, salt, hash, onlyIfMissing).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) && onlyIfMissing {
			return nil
		}
		if err != nil {
			return database.NotFound(err, fmt.Sprintf("issuing feed token of user %d", userID))
		}
		stored = true
		return BumpFeeds(ctx, tx, userID)
	})
	return stored && err == nil, err
}
