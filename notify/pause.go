package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
)

// Vacation (pause) and quiet days.
//
// A pause is two dates in the user's time zone: From (the first day
// nothing goes out; it starts at that day's local midnight) and Until
// (the day they are back: delivery resumes at their digest hour that
// day), or no Until: "until I'm back", ended by clearing the pause.
// While it is in effect no digest, instant alert or push delivery goes
// out: the one check is PausedSQL, which the ledger's triage applies to
// every digest and alert before its window is reserved (so the user's
// watermark stays where it was) and package channels applies to every
// collection (Paused). When it ends, Schedule queues exactly one catch-up
// digest (kind "catchup") covering everything since the last digest
// before the pause, best first within the user's budget with the
// budget shared out per follow (planBest), and tells the OnPauseEnd hook
// (push channels catch up or skip, each as it is set).

// DateLayout is how a pause's and a snooze's dates are written: ISO
// YYYY-MM-DD, a day in the user's time zone.
const DateLayout = "2006-01-02"

// KindCatchUp is the ledger kind (digests.kind) of the one digest sent
// when a pause ends.
const KindCatchUp = "catchup"

// Pause is a user's vacation as stored.
type Pause struct {
	// From is the first local day of the pause (a date: UTC midnight).
	From time.Time
	// Until is the local day the user is back; nil: until they end it.
	Until *time.Time
	// StartsAt and EndsAt are the instants the dates stand for in the
	// user's time zone: From's midnight, Until at the digest hour (or
	// the moment an open or running pause was ended); EndsAt is nil for
	// "until I'm back".
	StartsAt *time.Time
	EndsAt   *time.Time
}

// Over says whether the pause has ended by t (its catch-up may still be
// waiting for the scheduler, which clears it): users are shown no pause
// then.
func (p *Pause) Over(t time.Time) bool {
	return p != nil && p.EndsAt != nil && !t.Before(*p.EndsAt)
}

// Active says whether the pause is in effect at t.
func (p *Pause) Active(t time.Time) bool {
	return p != nil && p.StartsAt != nil && !t.Before(*p.StartsAt) && (p.EndsAt == nil || t.Before(*p.EndsAt))
}

// HoldsNextDigest says whether pr's pause holds its next scheduled digest
// (NextDigestAt at or after the pause's start, before its end), and if
// so when the catch-up that replaces it is due: the pause's end, nil for
// a pause until the user ends it.
func (pr Profile) HoldsNextDigest() (held bool, catchUp *time.Time) {
	p := pr.Pause
	if p == nil || p.StartsAt == nil || pr.NextDigestAt.IsZero() || pr.NextDigestAt.Before(*p.StartsAt) {
		return false, nil
	}
	if p.EndsAt == nil {
		return true, nil
	}
	return pr.NextDigestAt.Before(*p.EndsAt), p.EndsAt
}

// columns are p's digest_schedules values (all nil without a pause).
func (p *Pause) columns() (from, until, startsAt, endsAt any) {
	if p == nil {
		return nil, nil, nil, nil
	}
	from = p.From
	if p.Until != nil {
		until = *p.Until
	}
	if p.StartsAt != nil {
		startsAt = *p.StartsAt
	}
	if p.EndsAt != nil {
		endsAt = *p.EndsAt
	}
	return from, until, startsAt, endsAt
}

// PausePatch sets or ends a pause. Clear ends it: a pause in effect ends
// now (the catch-up follows at the scheduler's next run), one not begun
// is dropped. Otherwise From is required and Until may be nil ("until
// I'm back"); both are DateLayout dates in the user's time zone. From is
// today or later, or the start of the pause in effect sent back; a pause
// that has ended is over, and until the scheduler has queued its
// catch-up the next one starts today (continuing the hold: one catch-up
// on return covers both).
type PausePatch struct {
	Clear bool
	From  string
	Until *string
}

// PausedSQL is true, for the digest_schedules row d, while its user's
// pause holds their deliveries at the timestamptz the SQL expression at
// stands for: from the pause's start until the scheduler's catch-up
// (catchUpOnce) has cleared it, which is after its end — not only until
// its end, since the catch-up is what delivers (or, for a channel set to
// skip, passes over) what matched while the user was away: an instant
// alert or a channel's collection in between sent the pause's papers
// newest first and left the catch-up empty. The one pause check of every
// delivery: the ledger's triage, the instant alerts' scheduling, and push
// channels through HoldsChannels.
func PausedSQL(at string) string {
	return `coalesce(d.pause_starts_at <= ` + at + `, false)`
}

// HoldsChannels says whether userID's pause holds their push channels at
// at (PausedSQL), read in tx (false for a user without a schedule row).
func HoldsChannels(ctx context.Context, tx pgx.Tx, userID int64, at time.Time) (bool, error) {
	var held bool
	err := tx.QueryRow(ctx, `SELECT `+PausedSQL("$2")+` FROM digest_schedules d WHERE d.user_id = $1`, userID, at).Scan(&held)
	if err == pgx.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the pause of user %d: %w", userID, err)
	}
	return held, nil
}

// maxPauseYears bounds how far ahead a pause may start or end: the same
// date that many years from the user's today, at the latest.
const maxPauseYears = 2

// parseDate reads a DateLayout date for field.
func parseDate(field, s string) (time.Time, error) {
	t, err := time.Parse(DateLayout, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, apperr.InvalidField(field, "%q is not a date like 2026-12-24 (YYYY-MM-DD, in your time zone)", truncate(s, 40))
	}
	return t, nil
}

// localDate is t's date in loc, as a date (UTC midnight).
func localDate(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// at is date (a DateLayout date) at hour in loc.
func at(date time.Time, hour int, loc *time.Location) time.Time {
	return time.Date(date.Year(), date.Month(), date.Day(), hour, 0, 0, 0, loc)
}

// applyPause applies patch to next (whose time zone and digest hour are
// already the new ones; cur is the stored profile) at now, and refreshes
// the pause's instants from its dates: bad dates are an *apperr.Error
// naming pause.from or pause.until.
func applyPause(next *Profile, cur Profile, patch *PausePatch, now time.Time) error {
	loc := zone(next.Timezone)
	today := localDate(now, loc)
	if next.Pause != nil {
		c := *next.Pause // next shares cur's; cur stays as read
		next.Pause = &c
	}
	switch {
	case patch == nil:
	case patch.Clear:
		if cur.Pause == nil || cur.Pause.StartsAt == nil || now.Before(*cur.Pause.StartsAt) {
			next.Pause = nil // not begun: nothing to catch up
			break
		}
		p := *cur.Pause
		if p.EndsAt == nil || now.Before(*p.EndsAt) {
			end := now
			p.Until, p.EndsAt = &today, &end
		}
		next.Pause = &p
		return nil // ends now (or has ended), whatever the dates say; the scheduler catches up
	default:
		from, err := parseDate("pause.from", patch.From)
		if err != nil {
			return err
		}
		// An ongoing pause sent back with its own start keeps it. One that
		// has ended is over even while its catch-up waits for the
		// scheduler (still stored, shown to nobody): a pause set then is
		// a new one, whose start is today or later like anyone's.
		ended := cur.Pause.Over(now)
		kept := cur.Pause != nil && !ended && cur.Pause.From.Equal(from)
		latest := today.AddDate(maxPauseYears, 0, 0)
		switch {
		case from.Before(today) && !kept:
			return apperr.InvalidField("pause.from", "%s is in the past; a pause starts today (%s) or later", patch.From, today.Format(DateLayout))
		case from.After(latest):
			return apperr.InvalidField("pause.from", "must be within two years: %s at the latest", latest.Format(DateLayout))
		}
		p := Pause{From: from}
		if kept && cur.Pause.StartsAt != nil && !now.Before(*cur.Pause.StartsAt) {
			// A pause in effect sent back with its own start (to change
			// its end) keeps the instant it began at: made again in a
			// zone changed since, it moved, and a start moved earlier
			// widened the catch-up to papers already delivered.
			p.StartsAt = cur.Pause.StartsAt
		}
		if patch.Until != nil {
			until, err := parseDate("pause.until", *patch.Until)
			if err != nil {
				return err
			}
			switch {
			case !until.After(from):
				return apperr.InvalidField("pause.until", "must be after pause.from (%s): it is the day you are back", from.Format(DateLayout))
			case until.Before(today):
				return apperr.InvalidField("pause.until", "%s is in the past", until.Format(DateLayout))
			case until.After(latest):
				return apperr.InvalidField("pause.until", "must be within two years: %s at the latest", latest.Format(DateLayout))
			}
			p.Until = &until
		}
		if ended && from.After(today) {
			// The row holds one pause: a later one stored now would drop
			// the ended pause's catch-up, and the days in between would
			// deliver what matched while away as a regular digest, alert
			// or push delivery (a channel set to skip included). A pause
			// from today continues the hold without a break, so its one
			// catch-up covers both (everything since the last digest
			// before the first).
			return apperr.InvalidField("pause.from", "your last pause has just ended and its catch-up digest is on its way: a new pause can start today (%s), or on a later day in a few minutes", today.Format(DateLayout))
		}
		next.Pause = &p
	}
	if p := next.Pause; p != nil {
		if patch == nil && p.StartsAt != nil {
			// Not this patch's business: the instants were fixed when the
			// pause was set (as a snooze's), so a later change of time zone
			// or digest hour moves neither a pause in effect nor one that
			// is over with its catch-up waiting for the scheduler.
			return nil
		}
		if p.StartsAt == nil { // set by this patch (or stored without its instants)
			start := at(p.From, 0, loc)
			p.StartsAt = &start
		}
		p.EndsAt = nil
		if p.Until != nil {
			end := at(*p.Until, next.Digest.Hour, loc)
			p.EndsAt = &end
		}
	}
	return nil
}

// Weekdays is a set of weekdays: bit d for time.Weekday d. The zero value
// means every day.
type Weekdays uint8

// AllWeekdays is every day of the week.
const AllWeekdays Weekdays = 0x7f

// Has says whether d is in w (every day when w is zero).
func (w Weekdays) Has(d time.Weekday) bool {
	return w == 0 || w&(1<<uint(d)) != 0
}

// orAll is w, with the zero value spelt AllWeekdays.
func (w Weekdays) orAll() Weekdays {
	if w == 0 {
		return AllWeekdays
	}
	return w & AllWeekdays
}

// Names are w's days, Monday first, as three-letter lower-case names
// ("mon"), the form the API writes.
func (w Weekdays) Names() []string {
	out := []string{}
	for i := 1; i <= 7; i++ {
		d := time.Weekday(i % 7)
		if w.Has(d) {
			out = append(out, strings.ToLower(d.String()[:3]))
		}
	}
	return out
}

// ParseWeekdays reads day names ("mon", "Tuesday", see ParseWeekday). An
// empty list, or a name that is no day, is an *apperr.Error naming
// digest.weekdays.
func ParseWeekdays(names []string) (Weekdays, error) {
	if len(names) == 0 {
		return 0, apperr.InvalidField("digest.weekdays", "choose at least one day; to get no digests set digest.frequency to off")
	}
	if len(names) > 14 {
		return 0, apperr.InvalidField("digest.weekdays", "lists at most the seven days")
	}
	var w Weekdays
	for _, n := range names {
		d, ok := ParseWeekday(n)
		if !ok || strings.TrimSpace(n) == "" || len(strings.TrimSpace(n)) == 1 {
			return 0, apperr.InvalidField("digest.weekdays", "%q is not a weekday; use mon, tue, wed, thu, fri, sat, sun", truncate(n, 40))
		}
		w |= 1 << uint(d)
	}
	return w, nil
}

// PauseHook is told, in the scheduler's transaction, of users whose
// pause just ended (package channels catches their push channels up, or
// skips what they missed, each as it is set).
type PauseHook interface {
	// PauseEnded handles userIDs, whose pauses ended at endedAt (each
	// its own), in tx.
	PauseEnded(ctx context.Context, tx pgx.Tx, userIDs []int64, endedAt []time.Time) error
}

// scheduleCatchUps ends the pauses that are over at now: a user whose
// pause was in effect and who gets digests (daily, weekly or instant)
// gets one catch-up digest queued, named after the pause
// ("catchup:<from>..<back>"), so it is never queued twice; their next
// regular digest moves past now (the catch-up is that day's digest); the
// OnPauseEnd hook is told; the pause columns are cleared. In batches of
// scheduleBatch, each one transaction.
func (d *Digester) scheduleCatchUps(ctx context.Context) (int, error) {
	return inBatches(ctx, d.catchUpOnce)
}

func (d *Digester) catchUpOnce(ctx context.Context) (queued int, more bool, err error) {
	now := d.now()
	err = d.db.InTx(ctx, func(tx pgx.Tx) error {
		// digest_schedules_pause_end_idx; SKIP LOCKED as the scheduler's
		// other scan.
		rows, err := tx.Query(ctx, `
			SELECT d.user_id, u.timezone, d.frequency, d.hour, d.weekday, d.weekdays, d.next_at,
			       d.pause_from, d.pause_starts_at, d.pause_ends_at
			FROM digest_schedules d JOIN `+account.UsersTable+` u ON u.id = d.user_id
			WHERE d.pause_ends_at <= $1
			ORDER BY d.pause_ends_at LIMIT $2
			FOR UPDATE OF d, u SKIP LOCKED`, now, scheduleBatch)
		if err != nil {
			return fmt.Errorf("finding ended pauses: %w", err)
		}
		var ended, users []int64
		var endedAt []time.Time
		var periods []string
		var moved []int64
		var nexts []time.Time
		for rows.Next() {
			var id int64
			var tz, freq string
			var s DigestSettings
			var weekday, weekdays int
			var next *time.Time
			var from, starts, ends time.Time
			if err := rows.Scan(&id, &tz, &freq, &s.Hour, &weekday, &weekdays, &next, &from, &starts, &ends); err != nil {
				rows.Close()
				return err
			}
			s.Frequency, s.Weekday, s.Weekdays = Frequency(freq), time.Weekday(weekday), Weekdays(weekdays)
			ended, endedAt = append(ended, id), append(endedAt, ends)
			if !starts.Before(ends) || s.Frequency == Off {
				continue // never in effect, or no digests: nothing to catch up by mail
			}
			loc := zone(tz)
			users = append(users, id)
			periods = append(periods, KindCatchUp+":"+from.Format(DateLayout)+".."+ends.In(loc).Format(DateLayout))
			if next != nil && !next.After(now) {
				moved, nexts = append(moved, id), append(nexts, NextOccurrence(now, loc, s))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		more = len(ended) == scheduleBatch
		if len(ended) == 0 {
			return nil
		}
		if len(users) > 0 {
			idRows, err := tx.Query(ctx, `
				INSERT INTO digests (user_id, period, kind, created_at)
				SELECT u, p, $3, $4 FROM unnest($1::bigint[], $2::text[]) AS n(u, p)
				ON CONFLICT (user_id, period) DO NOTHING
				RETURNING id`, users, periods, KindCatchUp, now)
			if err != nil {
				return fmt.Errorf("creating %d catch-up digests: %w", len(users), err)
			}
			ids, err := pgx.CollectRows(idRows, pgx.RowTo[int64])
			if err != nil {
				return fmt.Errorf("creating %d catch-up digests: %w", len(users), err)
			}
			queued = len(ids)
			if err := d.enq.EnqueueDigests(ctx, tx, ids); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `
			UPDATE digest_schedules d SET next_at = n.next
			FROM unnest($1::bigint[], $2::timestamptz[]) AS n(id, next) WHERE d.user_id = n.id`, moved, nexts); err != nil {
			return fmt.Errorf("moving next digest times after pauses: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE digest_schedules SET pause_from = NULL, pause_until = NULL, pause_starts_at = NULL, pause_ends_at = NULL
			WHERE user_id = ANY($1)`, ended); err != nil {
			return fmt.Errorf("clearing %d ended pauses: %w", len(ended), err)
		}
		if d.onPauseEnd != nil {
			return d.onPauseEnd.PauseEnded(ctx, tx, ended, endedAt)
		}
		return nil
	})
	return queued, more, err
}

// catchUpHeading is a catch-up digest's heading, from its period
// ("catchup:2026-12-10..2026-12-15").
func catchUpHeading(period string) string {
	from, back, ok := strings.Cut(strings.TrimPrefix(period, KindCatchUp+":"), "..")
	f, err1 := time.Parse(DateLayout, from)
	b, err2 := time.Parse(DateLayout, back)
	if !ok || err1 != nil || err2 != nil {
		return "While you were away: the best of your papers"
	}
	return "While you were away (" + f.Format("2 January") + " to " + b.Format("2 January") + "): the best of your papers"
}
