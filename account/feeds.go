package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// BumpFeeds marks the users' feeds changed in tx (a new version, hence a
// new ETag and Last-Modified): something their feeds show changed without
// a new key row of their follows (follows edited, an identity link or
// dispute, a token rotated, a saved search's backfill). New key rows need
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

// FeedAtLeast is the freshness check of a private feed read on a replica
// (database.DB.Read): the snapshot is fresh when the user's feed version in
// it is at least version and its match watermark (match_state.high_seq) at
// least highSeq, the two the ETag was derived from on the primary. Both
// only grow; every change a feed can show either bumps the version (a
// follow edited, an identity link, a dispute, a token rotated) or writes
// key rows, which advance the watermark in the transaction that writes
// them (and rows at or below a watermark are all committed when it is), so
// such a snapshot holds everything that ETag promises. Two primary-key
// probes.
func FeedAtLeast(userID, version, highSeq int64) *database.Fresh {
	return &database.Fresh{SQL: `
		SELECT f.version >= $2 AND (SELECT high_seq FROM match_state) >= $3 FROM user_feeds f WHERE f.user_id = $1`,
		Args: []any{userID, version, highSeq}}
}

// FeedTokens stores what identifies a user's private feed token: its salt
// (to derive the token again) and the hash it is looked up by. The token
// itself is never stored; package feeds derives and hashes it.
type FeedTokens struct {
	db *database.DB
}

// NewFeedTokens returns the feed token storage over db.
func NewFeedTokens(db *database.DB) *FeedTokens { return &FeedTokens{db: db} }

// FeedState is what a feed token resolves to: the user's feed row and the
// match watermark, read in one snapshot.
type FeedState struct {
	UserID    int64
	Version   int64
	ChangedAt time.Time
	// HighSeq is match_state.high_seq: every key row with a seq at most
	// this is committed in the snapshot the row was read in.
	HighSeq int64
}

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

// Lookup resolves a token hash to its user's feed state and the match
// watermark in one statement: a probe of the token_hash index and
// match_state's one row. ok is false when no token has that hash.
func (t *FeedTokens) Lookup(ctx context.Context, hash []byte) (st FeedState, ok bool, err error) {
	err = t.db.Pool.QueryRow(ctx, `
		SELECT f.user_id, f.version, f.changed_at, m.high_seq
		FROM user_feeds f, match_state m WHERE f.token_hash = $1`, hash).Scan(&st.UserID, &st.Version, &st.ChangedAt, &st.HighSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return FeedState{}, false, nil
	}
	if err != nil {
		return FeedState{}, false, fmt.Errorf("looking up feed token: %w", err)
	}
	return st, true, nil
}
