package account

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"followfeed/auth"
	"followfeed/database"
)

// User is a person known from the host's identity provider.
type User struct {
	ID             int64
	Sub            string
	Email          string // "" when unknown
	EmailConfirmed bool
	Timezone       string
	CreatedAt      time.Time
	// SessionEpoch is what a settings session must carry to be valid;
	// EndSessions moves it on.
	SessionEpoch int64
}

// Users creates and reads user rows: a user is created from a verified
// token's claims (auth verifies the token).
type Users struct {
	db        *database.DB
	confirmed ConfirmHook
	erasers   []EraseHook // OnErase, erase.go
}

// ConfirmHook runs in the transaction that confirms a user's address (see
// Ensure), so that what follows from a confirmation (the next digest's
// time, owned by notify) commits with it.
type ConfirmHook func(ctx context.Context, tx pgx.Tx, userID int64) error

// NewUsers returns the user store over db.
func NewUsers(db *database.DB) *Users { return &Users{db: db} }

// OnConfirm sets the hook run when Ensure confirms a stored address. Call it
// before the store is used.
func (us *Users) OnConfirm(h ConfirmHook) { us.confirmed = h }

const userColumns = `id, sub, coalesce(email, ''), email_confirmed_at IS NOT NULL, timezone, created_at, session_epoch`

func scanUser(row pgx.Row) (*User, error) {
	u := &User{}
	err := row.Scan(&u.ID, &u.Sub, &u.Email, &u.EmailConfirmed, &u.Timezone, &u.CreatedAt, &u.SessionEpoch)
	return u, err
}

// Ensure returns the user of a verified token, creating the row the first
// time its subject is seen. A verified email claim (email_verified: true)
// counts as confirmed: it is recorded when the user has no address yet, and
// it confirms the user's stored address when that is the same one (compared
// without regard to case) and not yet confirmed, unless the address is
// suppressed (bounced or unsubscribed: only the confirmation link lifts
// that). Concurrent first requests of the same subject are safe: exactly one
// row is created and every caller gets it.
func (us *Users) Ensure(ctx context.Context, c *auth.Claims) (*User, error) {
	if c == nil || c.Subject == "" {
		return nil, errors.New("ensuring user: no subject")
	}
	u, err := us.BySub(ctx, c.Subject)
	if err == nil {
		if c.EmailVerified && validEmail(c.Email) {
			switch {
			case u.Email == "":
				return us.adoptVerifiedEmail(ctx, u.ID, c.Email)
			case !u.EmailConfirmed && strings.EqualFold(u.Email, strings.TrimSpace(c.Email)):
				return us.confirmVerifiedEmail(ctx, u.ID, u.Email)
			}
		}
		return u, nil
	}
	if !errors.Is(err, database.ErrNotFound) {
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

// confirmVerifiedEmail marks the user's stored address confirmed, as the
// confirmation link does, and runs the confirm hook in the same
// transaction. It changes nothing when the address changed, was confirmed
// meanwhile or is suppressed: a suppressed address waits for its
// confirmation link, and confirming it here would also stop that link's
// mail from being sent.
func (us *Users) confirmVerifiedEmail(ctx context.Context, id int64, email string) (*User, error) {
	var u *User
	err := us.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRow(ctx, `
			UPDATE users u SET email_confirmed_at = now(), updated_at = now()
			WHERE u.id = $1 AND lower(u.email) = lower($2) AND u.email_confirmed_at IS NULL
			  AND NOT `+SuppressedSQL+`
			RETURNING `+userColumns, id, email))
		if errors.Is(err, pgx.ErrNoRows) {
			u = nil
			return nil
		}
		if err != nil || us.confirmed == nil {
			return err
		}
		return us.confirmed(ctx, tx, id)
	})
	if err != nil {
		return nil, fmt.Errorf("confirming verified email of user %d: %w", id, err)
	}
	if u == nil {
		return us.Get(ctx, id) // changed, confirmed or suppressed meanwhile
	}
	return u, nil
}

// BySub returns the user with the given subject, or an error wrapping
// database.ErrNotFound.
func (us *Users) BySub(ctx context.Context, sub string) (*User, error) {
	u, err := scanUser(us.db.Pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE sub = $1`, sub))
	return u, database.NotFound(err, "reading user by subject")
}

// FindBySub returns the user with the given subject, or nil (and no error)
// when no user has it yet: a first-time visitor is not an error.
func (us *Users) FindBySub(ctx context.Context, sub string) (*User, error) {
	u, err := us.BySub(ctx, sub)
	if errors.Is(err, database.ErrNotFound) {
		return nil, nil
	}
	return u, err
}

// Get returns the user with id, or an error wrapping database.ErrNotFound.
func (us *Users) Get(ctx context.Context, id int64) (*User, error) {
	u, err := scanUser(us.db.Pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	return u, database.NotFound(err, fmt.Sprintf("reading user %d", id))
}

// EndSessions ends every settings session of the user (logout): sessions
// carry the session epoch they were made with, and this moves it on.
func (us *Users) EndSessions(ctx context.Context, id int64) error {
	tag, err := us.db.Pool.Exec(ctx, `UPDATE users SET session_epoch = session_epoch + 1, updated_at = now() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("ending the sessions of user %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return database.NotFound(pgx.ErrNoRows, fmt.Sprintf("ending the sessions of user %d", id))
	}
	return nil
}

// validEmail is a light sanity check for addresses from identity tokens;
// addresses typed by people are validated by notify.
func validEmail(s string) bool {
	s = strings.TrimSpace(s)
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1 && len(s) <= 320 && !strings.ContainsAny(s, " <>") &&
		utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) // NUL would fail the write
}
