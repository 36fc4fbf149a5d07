package notify

import (
	"context"
	"fmt"
	netmail "net/mail"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones work on machines without /usr/share/zoneinfo

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/database"
)

// Frequency is how often a user gets digests.
type Frequency string

// The frequencies.
const (
	Off     Frequency = "off"
	Instant Frequency = "instant"
	Daily   Frequency = "daily"
	Weekly  Frequency = "weekly"
)

// DigestSettings say when digests go out.
type DigestSettings struct {
	Frequency Frequency
	Hour      int          // local hour, 0-23
	Weekday   time.Weekday // for weekly digests
	SendEmpty bool         // send a digest even when nothing matched
}

// Profile is what a user has set about how we reach them.
type Profile struct {
	Email          string
	EmailConfirmed bool
	// Suppressed is "bounce" or "unsubscribe" when the address gets nothing
	// until it is confirmed again, "" otherwise.
	Suppressed string
	Timezone   string
	Digest     DigestSettings
	// NextDigestAt is when the next daily or weekly digest is due (zero when
	// none is scheduled: digests off or instant, or no confirmed address).
	NextDigestAt time.Time
}

// DigestPatch changes DigestSettings; nil fields stay as they are.
type DigestPatch struct {
	Frequency *string
	Hour      *int
	Weekday   *string
	SendEmpty *bool
}

// ProfilePatch changes a Profile; nil fields stay as they are.
type ProfilePatch struct {
	Email    *string
	Timezone *string
	Digest   *DigestPatch
}

// ConfirmEnqueuer queues the confirmation mail of a new address inside the
// transaction that set it (worker.Enqueuer implements it).
type ConfirmEnqueuer interface {
	EnqueueConfirm(ctx context.Context, tx pgx.Tx, userID int64, email string) error
}

// Preferences reads and changes users' delivery settings.
type Preferences struct {
	db  *database.DB
	enq ConfirmEnqueuer
	now func() time.Time
}

// NewPreferences returns the preferences store. now may be nil (time.Now).
func NewPreferences(db *database.DB, enq ConfirmEnqueuer, now func() time.Time) *Preferences {
	if now == nil {
		now = time.Now
	}
	return &Preferences{db: db, enq: enq, now: now}
}

const profileColumns = `coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL, coalesce(s.reason, ''), u.timezone,
	u.digest_frequency, u.digest_hour, u.digest_weekday, u.digest_send_empty, coalesce(u.digest_next_at, 'epoch')`

const profileFrom = `users u LEFT JOIN suppressions s ON s.email = lower(u.email)`

func scanProfile(row pgx.Row) (Profile, error) {
	var p Profile
	var freq string
	var weekday int
	err := row.Scan(&p.Email, &p.EmailConfirmed, &p.Suppressed, &p.Timezone, &freq, &p.Digest.Hour, &weekday,
		&p.Digest.SendEmpty, &p.NextDigestAt)
	p.Digest.Frequency, p.Digest.Weekday = Frequency(freq), time.Weekday(weekday)
	if p.NextDigestAt.Unix() == 0 {
		p.NextDigestAt = time.Time{}
	}
	return p, err
}

// Get returns the user's profile, or an error wrapping database.ErrNotFound.
func (p *Preferences) Get(ctx context.Context, userID int64) (Profile, error) {
	pr, err := scanProfile(p.db.Pool.QueryRow(ctx, `SELECT `+profileColumns+` FROM `+profileFrom+` WHERE u.id = $1`, userID))
	return pr, database.NotFound(err, fmt.Sprintf("reading profile of user %d", userID))
}

// Update validates and applies patch in one transaction. A new address
// starts unconfirmed, revokes earlier email links and gets a confirmation
// mail; turning digests on starts them from now (no backlog); the next
// digest time follows every change of frequency, hour, weekday or time zone.
// Bad input is an *apperr.Error naming the field.
func (p *Preferences) Update(ctx context.Context, userID int64, patch ProfilePatch) (Profile, error) {
	var pr Profile
	err := p.db.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := scanProfile(tx.QueryRow(ctx, `SELECT `+profileColumns+` FROM `+profileFrom+` WHERE u.id = $1 FOR UPDATE OF u`, userID))
		if err != nil {
			return database.NotFound(err, fmt.Sprintf("reading profile of user %d", userID))
		}
		next := cur
		if err := applyPatch(&next, patch); err != nil {
			return err
		}
		emailChanged := !strings.EqualFold(next.Email, cur.Email)
		if emailChanged {
			next.EmailConfirmed = false
		}
		wasOn := cur.Digest.Frequency != Off
		next.NextDigestAt = p.nextDigest(next)
		_, err = tx.Exec(ctx, `
			UPDATE users SET
				email = nullif($2, ''),
				email_confirmed_at = CASE WHEN $3 THEN NULL ELSE email_confirmed_at END,
				link_epoch = link_epoch + CASE WHEN $3 THEN 1 ELSE 0 END,
				timezone = $4, digest_frequency = $5, digest_hour = $6, digest_weekday = $7, digest_send_empty = $8,
				digest_next_at = $9,
				digest_watermark = CASE WHEN $10 THEN (SELECT high_seq FROM match_state) ELSE digest_watermark END,
				updated_at = now()
			WHERE id = $1`,
			userID, next.Email, emailChanged, next.Timezone, string(next.Digest.Frequency), next.Digest.Hour,
			int(next.Digest.Weekday), next.Digest.SendEmpty, nullTime(next.NextDigestAt), !wasOn && next.Digest.Frequency != Off)
		if err != nil {
			return fmt.Errorf("updating profile of user %d: %w", userID, err)
		}
		if emailChanged && next.Email != "" && p.enq != nil {
			if err := p.enq.EnqueueConfirm(ctx, tx, userID, next.Email); err != nil {
				return fmt.Errorf("queueing the confirmation mail: %w", err)
			}
		}
		pr, err = scanProfile(tx.QueryRow(ctx, `SELECT `+profileColumns+` FROM `+profileFrom+` WHERE u.id = $1`, userID))
		return err
	})
	return pr, err
}

func applyPatch(pr *Profile, patch ProfilePatch) error {
	if patch.Email != nil {
		e, err := NormalizeEmail(*patch.Email)
		if err != nil {
			return err
		}
		pr.Email = e
	}
	if patch.Timezone != nil {
		tz, err := NormalizeTimezone(*patch.Timezone)
		if err != nil {
			return err
		}
		pr.Timezone = tz
	}
	if d := patch.Digest; d != nil {
		if d.Frequency != nil {
			f := Frequency(strings.ToLower(strings.TrimSpace(*d.Frequency)))
			switch f {
			case Off, Instant, Daily, Weekly:
				pr.Digest.Frequency = f
			default:
				return apperr.InvalidField("digest.frequency", "%q is not one of off, instant, daily, weekly", truncate(*d.Frequency, 40))
			}
		}
		if d.Hour != nil {
			if *d.Hour < 0 || *d.Hour > 23 {
				return apperr.InvalidField("digest.hour", "must be a local hour from 0 to 23")
			}
			pr.Digest.Hour = *d.Hour
		}
		if d.Weekday != nil {
			w, ok := ParseWeekday(*d.Weekday)
			if !ok {
				return apperr.InvalidField("digest.weekday", "%q is not a weekday like monday", truncate(*d.Weekday, 40))
			}
			pr.Digest.Weekday = w
		}
		if d.SendEmpty != nil {
			pr.Digest.SendEmpty = *d.SendEmpty
		}
	}
	if pr.Digest.Frequency != Off && pr.Email == "" {
		return apperr.InvalidField("email", "set an email address to receive digests")
	}
	return nil
}

// nextDigest is when pr's next scheduled digest is due, or zero when none
// is (digests off or instant, or no confirmed, unsuppressed address).
// AfterConfirm is the auth.ConfirmHook of the user store: an address
// confirmed by a verified token claim gets its next digest time in the same
// transaction, as one confirmed by the confirmation link does.
func (p *Preferences) AfterConfirm(ctx context.Context, tx pgx.Tx, userID int64) error {
	return scheduleConfirmed(ctx, tx, userID, p.now())
}

func (p *Preferences) nextDigest(pr Profile) time.Time {
	if !pr.EmailConfirmed || pr.Suppressed != "" || (pr.Digest.Frequency != Daily && pr.Digest.Frequency != Weekly) {
		return time.Time{}
	}
	loc := zone(pr.Timezone)
	return NextOccurrence(p.now(), loc, pr.Digest)
}

// NextOccurrence is the first digest time of s strictly after t: hour s.Hour
// of the next local day (daily) or of the next s.Weekday (weekly) in loc.
// Local-date arithmetic makes every local day (or week) get exactly one
// occurrence across DST changes: on a day whose s.Hour does not exist the
// occurrence shifts by the gap, on a day where it exists twice it happens
// once.
func NextOccurrence(t time.Time, loc *time.Location, s DigestSettings) time.Time {
	lt := t.In(loc)
	y, m, d := lt.Date()
	for i := 0; i < 8; i++ {
		c := time.Date(y, m, d+i, s.Hour, 0, 0, 0, loc)
		if s.Frequency == Weekly && c.Weekday() != s.Weekday {
			continue
		}
		if c.After(t) {
			return c
		}
	}
	return time.Date(y, m, d+7, s.Hour, 0, 0, 0, loc) // unreachable for valid settings
}

// Period names the digest a due time belongs to: "daily:2026-11-29" (the
// local date) or "weekly:2026-W48" (the local ISO week). It is the ledger's
// uniqueness key, so one period never gets two digests.
func Period(f Frequency, due time.Time, loc *time.Location) string {
	lt := due.In(loc)
	if f == Weekly {
		y, w := lt.ISOWeek()
		return fmt.Sprintf("weekly:%d-W%02d", y, w)
	}
	return "daily:" + lt.Format("2006-01-02")
}

// ParseWeekday reads "monday", "Mon", "1" (Sunday is 0 or 7).
func ParseWeekday(s string) (time.Weekday, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		if s == name || s == name[:3] {
			return d, true
		}
	}
	if len(s) == 1 && s[0] >= '0' && s[0] <= '7' {
		return time.Weekday(int(s[0]-'0') % 7), true
	}
	return 0, false
}

// NormalizeEmail checks an address a person typed and returns it trimmed;
// "" (remove the address) is allowed.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	a, err := netmail.ParseAddress(s)
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

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// RevokeLinks invalidates every signed link of the user's earlier emails
// (manage preferences, unsubscribe, confirm): links carry the user's link
// epoch, which this moves on. Later emails carry working links.
func (p *Preferences) RevokeLinks(ctx context.Context, userID int64) error {
	tag, err := p.db.Pool.Exec(ctx, `UPDATE users SET link_epoch = link_epoch + 1, updated_at = now() WHERE id = $1`, userID)
	if err != nil {
		return fmt.Errorf("revoking the email links of user %d: %w", userID, err)
	}
	if tag.RowsAffected() == 0 {
		return database.NotFound(pgx.ErrNoRows, fmt.Sprintf("revoking the email links of user %d", userID))
	}
	return nil
}

// Reconfirm asks the owner of a paused (bounced or unsubscribed) address to
// confirm it again: the address becomes unconfirmed, earlier links are
// revoked, and a confirmation mail is queued. Confirming lifts the pause.
func (p *Preferences) Reconfirm(ctx context.Context, userID int64) error {
	return p.db.InTx(ctx, func(tx pgx.Tx) error {
		var email string
		err := tx.QueryRow(ctx, `
			UPDATE users SET email_confirmed_at = NULL, link_epoch = link_epoch + 1, digest_next_at = NULL, updated_at = now()
			WHERE id = $1 AND email IS NOT NULL RETURNING email`, userID).Scan(&email)
		if err != nil {
			return database.NotFound(err, fmt.Sprintf("asking user %d to reconfirm", userID))
		}
		if p.enq == nil {
			return nil
		}
		return p.enq.EnqueueConfirm(ctx, tx, userID, email)
	})
}

// zones caches loaded time zones: time.LoadLocation reads the zoneinfo file
// on every call, and the scheduler and digests ask for the same few.
var zones sync.Map // name → *time.Location

// zone returns the named IANA time zone, or UTC when the name is unknown
// (names are validated when stored).
func zone(name string) *time.Location {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	zones.Store(name, loc)
	return loc
}
