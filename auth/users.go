package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/store"
)

// User is a person known from the host's identity provider.
type User struct {
	ID             int64
	Sub            string
	Email          string // "" when unknown
	EmailConfirmed bool
	Timezone       string
	CreatedAt      time.Time
}

// Users creates and reads user rows.
type Users struct {
	db *store.DB
}

// NewUsers returns the user store over db.
func NewUsers(db *store.DB) *Users { return &Users{db: db} }

const userColumns = `id, sub, coalesce(email, ''), email_confirmed_at IS NOT NULL, timezone, created_at`

func scanUser(row pgx.Row) (*User, error) {
	u := &User{}
	err := row.Scan(&u.ID, &u.Sub, &u.Email, &u.EmailConfirmed, &u.Timezone, &u.CreatedAt)
	return u, err
}

// Ensure returns the user of a verified token, creating the row the first
// time its subject is seen. A verified email claim is recorded (as
// confirmed) when the user has no address yet. Concurrent first requests of
// the same subject are safe: exactly one row is created and every caller
// gets it.
func (us *Users) Ensure(ctx context.Context, c *Claims) (*User, error) {
	if c == nil || c.Subject == "" {
		return nil, errors.New("ensuring user: no subject")
	}
	u, err := us.BySub(ctx, c.Subject)
	if err == nil {
		if u.Email == "" && c.EmailVerified && validEmail(c.Email) {
			return us.adoptVerifiedEmail(ctx, u.ID, c.Email)
		}
		return u, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	var email any
	var confirmed any
	if c.EmailVerified && validEmail(c.Email) {
		email, confirmed = strings.TrimSpace(c.Email), time.Now()
	}
	// ON CONFLICT DO NOTHING: a concurrent request may have created the row
	// between our read and this insert; then we read theirs.
	// The user's feed state row is created in the same statement.
	u, err = scanUser(us.db.Pool.QueryRow(ctx, `
		WITH u AS (
			INSERT INTO users (sub, email, email_confirmed_at) VALUES ($1, $2, $3)
			ON CONFLICT (sub) DO NOTHING
			RETURNING *
		), f AS (
			INSERT INTO user_feeds (user_id) SELECT id FROM u
		)
		SELECT `+userColumns+` FROM u`, c.Subject, email, confirmed))
	if errors.Is(err, pgx.ErrNoRows) {
		return us.BySub(ctx, c.Subject)
	}
	if err != nil {
		return nil, fmt.Errorf("creating user: %w", err)
	}
	return u, nil
}

func (us *Users) adoptVerifiedEmail(ctx context.Context, id int64, email string) (*User, error) {
	u, err := scanUser(us.db.Pool.QueryRow(ctx, `
		UPDATE users SET email = $2, email_confirmed_at = now(), updated_at = now()
		WHERE id = $1 AND email IS NULL
		RETURNING `+userColumns, id, strings.TrimSpace(email)))
	if errors.Is(err, pgx.ErrNoRows) {
		return us.Get(ctx, id) // someone set an address meanwhile: keep theirs
	}
	if err != nil {
		return nil, fmt.Errorf("recording verified email of user %d: %w", id, err)
	}
	return u, nil
}

// BySub returns the user with the given subject, or an error wrapping
// store.ErrNotFound.
func (us *Users) BySub(ctx context.Context, sub string) (*User, error) {
	u, err := scanUser(us.db.Pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE sub = $1`, sub))
	return u, store.NotFound(err, "reading user by subject")
}

// Get returns the user with id, or an error wrapping store.ErrNotFound.
func (us *Users) Get(ctx context.Context, id int64) (*User, error) {
	u, err := scanUser(us.db.Pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	return u, store.NotFound(err, fmt.Sprintf("reading user %d", id))
}

// validEmail is a light sanity check for addresses from identity tokens;
// addresses typed by people are validated by notify.
func validEmail(s string) bool {
	s = strings.TrimSpace(s)
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1 && len(s) <= 320 && !strings.ContainsAny(s, " \r\n<>")
}
