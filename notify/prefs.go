package notify

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"
	_ "time/tzdata" // time zones work on machines without /usr/share/zoneinfo

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/store"
)

// Profile is what a user has set about how we reach them.
type Profile struct {
	Email          string
	EmailConfirmed bool
	Timezone       string
}

// ProfilePatch changes a Profile; nil fields stay as they are.
type ProfilePatch struct {
	Email    *string
	Timezone *string
}

// Preferences reads and changes users' delivery settings.
type Preferences struct {
	db *store.DB
}

// NewPreferences returns the preferences store over db.
func NewPreferences(db *store.DB) *Preferences { return &Preferences{db: db} }

// Get returns the user's profile, or an error wrapping store.ErrNotFound.
func (p *Preferences) Get(ctx context.Context, userID int64) (Profile, error) {
	var pr Profile
	err := p.db.Pool.QueryRow(ctx, `
		SELECT coalesce(email, ''), email_confirmed_at IS NOT NULL, timezone FROM users WHERE id = $1`,
		userID).Scan(&pr.Email, &pr.EmailConfirmed, &pr.Timezone)
	return pr, store.NotFound(err, fmt.Sprintf("reading profile of user %d", userID))
}

// Update validates and applies patch. A changed address starts unconfirmed;
// setting the same address again changes nothing. An empty email removes
// the address. Errors for bad input are *apperr.Error naming the field.
func (p *Preferences) Update(ctx context.Context, userID int64, patch ProfilePatch) (Profile, error) {
	if patch.Email != nil {
		e, err := NormalizeEmail(*patch.Email)
		if err != nil {
			return Profile{}, err
		}
		patch.Email = &e
	}
	if patch.Timezone != nil {
		tz, err := NormalizeTimezone(*patch.Timezone)
		if err != nil {
			return Profile{}, err
		}
		patch.Timezone = &tz
	}
	var pr Profile
	err := p.db.InTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			UPDATE users SET
				email = CASE WHEN $2::text IS NULL THEN email ELSE nullif($2, '') END,
				email_confirmed_at = CASE
					WHEN $2::text IS NULL OR lower($2) = lower(coalesce(email, '')) THEN email_confirmed_at
					ELSE NULL END,
				timezone = coalesce($3, timezone),
				updated_at = now()
			WHERE id = $1
			RETURNING coalesce(email, ''), email_confirmed_at IS NOT NULL, timezone`,
			userID, patch.Email, patch.Timezone).Scan(&pr.Email, &pr.EmailConfirmed, &pr.Timezone)
		return store.NotFound(err, fmt.Sprintf("updating profile of user %d", userID))
	})
	return pr, err
}

// NormalizeEmail checks an address a person typed and returns it trimmed;
// "" (remove the address) is allowed.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || len(s) > 320 || !strings.Contains(s[strings.LastIndexByte(s, '@'):], ".") {
		return "", apperr.InvalidField("email", "%q is not an email address like reader@example.org", truncate(s, 80))
	}
	return s, nil
}

// NormalizeTimezone checks an IANA time zone name ("Europe/Amsterdam").
func NormalizeTimezone(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 || strings.EqualFold(s, "local") {
		return "", apperr.InvalidField("timezone", "must be an IANA time zone like Europe/Amsterdam or UTC")
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return "", apperr.InvalidField("timezone", "%q is not an IANA time zone; use a name like Europe/Amsterdam, America/New_York or UTC", truncate(s, 64))
	}
	return loc.String(), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
