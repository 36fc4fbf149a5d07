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

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/internal/text"
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
	// SkipNoAnnouncement skips an empty digest whose window holds no arXiv
	// announcement (weekends, holidays) even with SendEmpty; default true.
	SkipNoAnnouncement bool
	// Order is how a digest lists its papers: OrderNewest (grouped by
	// follow, newest first, at most MaxPerGroup per follow and
	// MaxPerDigest in all) or OrderBest (one list, best first for the
	// user: package ranking).
	Order Order
	// MaxPapers is the budget of a best-first digest (0: MaxPapersLimit,
	// as many as a mail lists), and per day of best-first instant alerts
	// and push channels; it does not apply to OrderNewest.
	MaxPapers int
	// KeepFollowed lets new papers of followed persons and followed
	// papers' events pass the budget (default true).
	KeepFollowed bool
	// Weekdays are the days a daily digest goes out (quiet days: the
	// others fold into the next one sent, whose window spans them); the
	// zero value is every day.
	Weekdays Weekdays
}

// Order is the order of a digest's papers.
type Order string

// The orders.
const (
	OrderNewest Order = "newest"
	OrderBest   Order = "best"
)

// MaxPapersLimit is the most papers a best-first digest lists, its
// budget's upper bound (a budget of 0 means this many): with every
// paper's Why line and three feedback links, a mail of more would pass
// the 102 KB at which Gmail clips it (TestDigestSizeWithFeedbackLinks: 81
// papers of real titles fit). Papers of followed persons pass a smaller
// budget, never this bound. A best-first digest ranks more: its window's
// newest 250 candidates.
const MaxPapersLimit = 75

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
	// Pause is the user's vacation, nil when none is set (see Pause).
	Pause *Pause
}

// DigestPatch changes DigestSettings; nil fields stay as they are.
type DigestPatch struct {
	Frequency *string
	Hour      *int
	Weekday   *string
	SendEmpty *bool
	// SkipNoAnnouncement sets DigestSettings.SkipNoAnnouncement.
	SkipNoAnnouncement *bool
	// Order, MaxPapers and KeepFollowed set the budget's fields of
	// DigestSettings.
	Order        *string
	MaxPapers    *int
	KeepFollowed *bool
	// Weekdays sets DigestSettings.Weekdays from day names ("mon",
	// "tuesday"); an empty list is an error naming digest.weekdays.
	Weekdays *[]string
}

// ProfilePatch changes a Profile; nil fields stay as they are.
type ProfilePatch struct {
	Email    *string
	Timezone *string
	Digest   *DigestPatch
	// Pause sets or ends the user's vacation (see PausePatch).
	Pause *PausePatch
}

// Preferences reads and changes users' delivery settings: the digest
// settings and schedule are notify's, the address and time zone are
// written through account.Addresses. It is also account's DigestHooks.
type Preferences struct {
	db    *database.DB
	addrs *account.Addresses
	now   func() time.Time
}

var _ account.DigestHooks = (*Preferences)(nil)

// NewPreferences returns the preferences store; addrs writes the address
// and time zone. now may be nil (time.Now).
func NewPreferences(db *database.DB, addrs *account.Addresses, now func() time.Time) *Preferences {
	if now == nil {
		now = time.Now
	}
	return &Preferences{db: db, addrs: addrs, now: now}
}

// A user without a digest_schedules row reads as the table's column defaults
// (migrations 00005 and 00029): off, 7 o'clock, Monday, no empty digests,
// none due, newest first with no budget, followed persons kept.
const profileColumns = `coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL, coalesce(s.reason, ''), u.timezone,
	coalesce(d.frequency, 'off'), coalesce(d.hour, 7), coalesce(d.weekday, 1), coalesce(d.send_empty, false),
	coalesce(d.next_at, 'epoch'), coalesce(d.skip_no_announcement, true),
	coalesce(d.paper_order, 'newest'), coalesce(d.max_papers, 0), coalesce(d.keep_followed, true),
	coalesce(d.weekdays, 127), d.pause_from, d.pause_until, d.pause_starts_at, d.pause_ends_at`

const profileFrom = account.UsersSuppressionsSQL + `
	LEFT JOIN digest_schedules d ON d.user_id = u.id`

func scanProfile(row pgx.Row) (Profile, error) {
	var p Profile
	var freq, order string
	var weekday, weekdays int
	var pause Pause
	var from *time.Time
	err := row.Scan(&p.Email, &p.EmailConfirmed, &p.Suppressed, &p.Timezone, &freq, &p.Digest.Hour, &weekday,
		&p.Digest.SendEmpty, &p.NextDigestAt, &p.Digest.SkipNoAnnouncement,
		&order, &p.Digest.MaxPapers, &p.Digest.KeepFollowed,
		&weekdays, &from, &pause.Until, &pause.StartsAt, &pause.EndsAt)
	p.Digest.Frequency, p.Digest.Weekday, p.Digest.Order = Frequency(freq), time.Weekday(weekday), Order(order)
	p.Digest.Weekdays = Weekdays(weekdays)
	if from != nil && pause.StartsAt != nil {
		pause.From = *from
		p.Pause = &pause
	}
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
// digest time follows every change of frequency, hour, weekday, quiet days,
// time zone or address, to a period with no digest yet, and stays as the
// schedule left it otherwise (a change of order or budget does not move
// it back to a period `digest --now` sent already). Bad input is an
// *apperr.Error naming the field.
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
		if err := applyPause(&next, cur, patch.Pause, p.now()); err != nil {
			return err
		}
		emailChanged := !strings.EqualFold(next.Email, cur.Email)
		if emailChanged {
			next.EmailConfirmed = false
		}
		wasOn := cur.Digest.Frequency != Off
		if reschedules(cur, next) {
			if next.NextDigestAt, err = p.nextUnsent(ctx, tx, userID, next); err != nil {
				return err
			}
		}
		pf, pu, ps, pe := next.Pause.columns()
		if _, err := p.addrs.SetContact(ctx, tx, userID, next.Email, next.Timezone); err != nil {
			return err
		}
		// The user's row lock (above) serialises this with other updates;
		// the schedule row is created the first time settings are saved.
		_, err = tx.Exec(ctx, `
			INSERT INTO digest_schedules AS d (user_id, frequency, hour, weekday, send_empty, next_at, watermark, skip_no_announcement,
				paper_order, max_papers, keep_followed, weekdays, pause_from, pause_until, pause_starts_at, pause_ends_at)
			VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN `+catalog.HighSeqSQL+` ELSE 0 END, $8, $9, $10, $11,
				$12, $13, $14, $15, $16)
			ON CONFLICT (user_id) DO UPDATE SET
				frequency = $2, hour = $3, weekday = $4, send_empty = $5, next_at = $6, skip_no_announcement = $8,
				paper_order = $9, max_papers = $10, keep_followed = $11,
				weekdays = $12, pause_from = $13, pause_until = $14, pause_starts_at = $15, pause_ends_at = $16,
				watermark = CASE WHEN $7 THEN `+catalog.HighSeqSQL+` ELSE d.watermark END`,
			userID, string(next.Digest.Frequency), next.Digest.Hour,
			int(next.Digest.Weekday), next.Digest.SendEmpty, nullTime(next.NextDigestAt), !wasOn && next.Digest.Frequency != Off,
			next.Digest.SkipNoAnnouncement, string(next.Digest.Order), next.Digest.MaxPapers, next.Digest.KeepFollowed,
			int(next.Digest.Weekdays.orAll()), pf, pu, ps, pe)
		if err != nil {
			return fmt.Errorf("updating profile of user %d: %w", userID, err)
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
		if d.SkipNoAnnouncement != nil {
			pr.Digest.SkipNoAnnouncement = *d.SkipNoAnnouncement
		}
		if d.Order != nil {
			switch o := Order(strings.ToLower(strings.TrimSpace(*d.Order))); o {
			case OrderNewest, OrderBest:
				pr.Digest.Order = o
			default:
				return apperr.InvalidField("digest.order", "%q is not one of newest, best", truncate(*d.Order, 40))
			}
		}
		if d.MaxPapers != nil {
			if *d.MaxPapers < 0 || *d.MaxPapers > MaxPapersLimit {
				return apperr.InvalidField("digest.max_papers", "must be from 1 to %d papers, or 0 for as many as a mail lists (%d)", MaxPapersLimit, MaxPapersLimit)
			}
			pr.Digest.MaxPapers = *d.MaxPapers
		}
		if d.KeepFollowed != nil {
			pr.Digest.KeepFollowed = *d.KeepFollowed
		}
		if d.Weekdays != nil {
			w, err := ParseWeekdays(*d.Weekdays)
			if err != nil {
				return err
			}
			pr.Digest.Weekdays = w
		}
	}
	if pr.Digest.Frequency != Off && pr.Email == "" {
		return apperr.InvalidField("email", "set an email address to receive digests")
	}
	return nil
}

// AddressConfirmed gives a user whose address was just confirmed (in tx) a
// next digest time, when daily or weekly digests are chosen and none is
// set. It is the account.ConfirmHook of the user store too: an address
// confirmed by a verified token claim gets its next digest time in the same
// transaction, as one confirmed by the confirmation link does.
func (p *Preferences) AddressConfirmed(ctx context.Context, tx pgx.Tx, userID int64) error {
	return scheduleConfirmed(ctx, tx, userID, p.now())
}

// AddressPaused clears the next digest time of users whose address was
// suppressed or unconfirmed (in tx): no digest is scheduled for them until
// the address is confirmed again.
func (p *Preferences) AddressPaused(ctx context.Context, tx pgx.Tx, userIDs []int64) error {
	if _, err := tx.Exec(ctx, `UPDATE digest_schedules SET next_at = NULL WHERE user_id = ANY($1) AND next_at IS NOT NULL`, userIDs); err != nil {
		return fmt.Errorf("pausing the digests of %d users: %w", len(userIDs), err)
	}
	return nil
}

// DigestsOff turns the user's digests off (in tx): the one-click
// unsubscribe.
func (p *Preferences) DigestsOff(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `UPDATE digest_schedules SET frequency = 'off', next_at = NULL WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("turning off the digests of user %d: %w", userID, err)
	}
	return nil
}

// reschedules says whether going from cur to next moves the next digest
// time: a change of what it is computed from (nextDigest), or none set.
func reschedules(cur, next Profile) bool {
	c, n := cur.Digest, next.Digest
	return cur.NextDigestAt.IsZero() || c.Frequency != n.Frequency || c.Hour != n.Hour || c.Weekday != n.Weekday ||
		c.Weekdays != n.Weekdays || cur.Timezone != next.Timezone || cur.EmailConfirmed != next.EmailConfirmed ||
		cur.Suppressed != next.Suppressed
}

// nextUnsent is nextDigest of pr, past the periods the ledger already
// holds a digest of (a period `digest --now` sent early, before an hour
// was moved later the same day): the scheduler would find that period
// taken and send nothing at the time announced.
func (p *Preferences) nextUnsent(ctx context.Context, tx pgx.Tx, userID int64, pr Profile) (time.Time, error) {
	n := p.nextDigest(pr)
	loc := zone(pr.Timezone)
	for i := 0; i < 2 && !n.IsZero(); i++ { // two periods at most: --now sends one
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM digests WHERE user_id = $1 AND period = $2)`,
			userID, Period(pr.Digest.Frequency, n, loc)).Scan(&taken); err != nil {
			return time.Time{}, fmt.Errorf("reading the digests of user %d: %w", userID, err)
		}
		if !taken {
			break
		}
		n = NextOccurrence(n, loc, pr.Digest)
	}
	return n, nil
}

// nextDigest is when pr's next scheduled digest is due, or zero when none
// is (digests off or instant, or no confirmed, unsuppressed address).

func (p *Preferences) nextDigest(pr Profile) time.Time {
	if !pr.EmailConfirmed || pr.Suppressed != "" || (pr.Digest.Frequency != Daily && pr.Digest.Frequency != Weekly) {
		return time.Time{}
	}
	loc := zone(pr.Timezone)
	return NextOccurrence(p.now(), loc, pr.Digest)
}

// NextOccurrence is the first digest time of s strictly after t: hour s.Hour
// of the next local day among s.Weekdays (daily) or of the next s.Weekday
// (weekly) in loc.
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
		if s.Frequency == Daily && !s.Weekdays.Has(c.Weekday()) {
			continue // a quiet day: the next digest's window spans it
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

// NormalizeEmail checks an address a person typed and returns it trimmed
// (plain ASCII, within RFC 5321's lengths);
// "" (remove the address) is allowed.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	for _, r := range s {
		// What a mail header cannot carry as it is (a control, a
		// bidirectional override that shows "gro.elpmaxe@live" reversed),
		// or what needs SMTPUTF8, which relays may lack: an
		// internationalised domain goes in its ASCII form.
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return "", apperr.InvalidField("email", "an email address here is plain ASCII: no spaces, control or formatting characters, and an internationalised domain in its xn-- form (reader@xn--bcher-kva.example)")
		}
	}
	a, err := netmail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || !strings.Contains(s[strings.LastIndexByte(s, '@'):], ".") {
		return "", apperr.InvalidField("email", "%q is not an email address like reader@example.org", truncate(s, 80))
	}
	// RFC 5321's limits: a mail server refuses longer ones.
	if at := strings.LastIndexByte(s, '@'); at > 64 || len(s) > 254 {
		return "", apperr.InvalidField("email", "is too long: at most 64 characters before the @ and 254 in all")
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

// truncate cuts s to n characters for quoting and storing (see text.Truncate).
var truncate = text.Truncate

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
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
