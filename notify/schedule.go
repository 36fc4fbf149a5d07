package notify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/catalog"
)

// scheduleBatch bounds the users one scheduling transaction handles.
const scheduleBatch = 1000

// Schedule ends the pauses that are over (one catch-up digest each, see
// scheduleCatchUps), then finds every user whose daily or weekly digest is
// due, creates one ledger row per (user, period) and queues its job, in
// bulk, and moves each user's next digest time on. Periods already in the
// ledger are skipped, so running it twice (or on two workers) never
// doubles a digest. It returns how many digests it queued.
func (d *Digester) Schedule(ctx context.Context) (int, error) {
	if err := d.sweep(ctx); err != nil {
		return 0, err
	}
	total, err := d.scheduleCatchUps(ctx)
	if err != nil {
		return total, err
	}
	n, err := inBatches(ctx, d.scheduleOnce)
	return total + n, err
}

// inBatches calls once until it says there is no more (or fails), and
// returns the sum of what the calls counted: the scheduler's scans, each
// batch its own transaction.
func inBatches(ctx context.Context, once func(context.Context) (n int, more bool, err error)) (int, error) {
	total := 0
	for {
		n, more, err := once(ctx)
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

func (d *Digester) scheduleOnce(ctx context.Context) (queued int, more bool, err error) {
	now := d.now()
	err = d.db.InTx(ctx, func(tx pgx.Tx) error {
		// digest_schedules_due_idx, then users by primary key; SKIP LOCKED
		// lets several schedulers (or a user editing settings, who holds
		// the users row) proceed without waiting.
		rows, err := tx.Query(ctx, `
			SELECT d.user_id, u.timezone, d.frequency, d.hour, d.weekday, d.weekdays, d.next_at
			FROM digest_schedules d JOIN `+account.UsersTable+` u ON u.id = d.user_id
			WHERE d.next_at <= $1
			ORDER BY d.next_at LIMIT $2
			FOR UPDATE OF d, u SKIP LOCKED`, now, scheduleBatch)
		if err != nil {
			return fmt.Errorf("finding due digests: %w", err)
		}
		var users []int64
		var periods, kinds []string
		var nexts []time.Time
		for rows.Next() {
			var id int64
			var tz, freq string
			var s DigestSettings
			var weekday, weekdays int
			var due time.Time
			if err := rows.Scan(&id, &tz, &freq, &s.Hour, &weekday, &weekdays, &due); err != nil {
				return err
			}
			s.Frequency, s.Weekday, s.Weekdays = Frequency(freq), time.Weekday(weekday), Weekdays(weekdays)
			loc := zone(tz)
			ref := due
			if now.After(ref) {
				ref = now // after downtime: one digest covers the gap
			}
			users = append(users, id)
			periods = append(periods, Period(s.Frequency, due, loc))
			kinds = append(kinds, freq)
			nexts = append(nexts, NextOccurrence(ref, loc, s))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		more = len(users) == scheduleBatch
		if len(users) == 0 {
			return nil
		}
		idRows, err := tx.Query(ctx, `
			INSERT INTO digests (user_id, period, kind, created_at)
			SELECT u, p, k, $4 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS n(u, p, k)
			ON CONFLICT (user_id, period) DO NOTHING
			RETURNING id`, users, periods, kinds, now)
		if err != nil {
			return fmt.Errorf("creating %d digests: %w", len(users), err)
		}
		ids, err := pgx.CollectRows(idRows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("creating %d digests: %w", len(users), err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE digest_schedules d SET next_at = n.next
			FROM unnest($1::bigint[], $2::timestamptz[]) AS n(id, next) WHERE d.user_id = n.id`, users, nexts); err != nil {
			return fmt.Errorf("moving next digest times: %w", err)
		}
		queued = len(ids)
		return d.enq.EnqueueDigests(ctx, tx, ids)
	})
	return queued, more, err
}

// instantDue says, of a digest_schedules row d and its users row u, that
// a new match should schedule an instant alert: the user chose instant
// alerts, has none waiting (or one whose job never came for it: $3 is the
// time before which a waiting alert counts as abandoned), and has a
// confirmed, unsuppressed address.
// The pause ($4 is now) schedules none: the catch-up holds what matched.
var instantDue = `d.frequency = 'instant' AND (d.instant_due_at IS NULL OR d.instant_due_at < $3) AND NOT ` +
	PausedSQL("$4") + ` AND ` + account.ReachableSQL

// InstantAbandoned is how long past its due time a waiting instant alert
// (digest_schedules.instant_due_at) may stay unclaimed before the next
// match schedules it again with a job of its own: its job was cancelled
// or lost, and the marker would otherwise keep every later match from
// scheduling one. A job merely late (a long mail queue) does no harm: the
// first of the two jobs to run sends the alert, the other finds nothing.
const InstantAbandoned = time.Hour

// ScheduleInstant is the match job's hook: users among affected who chose
// instant alerts (with a confirmed, unsuppressed address) and have none
// waiting get an alert due InstantDelay from now. Matches while one waits
// join it, so a burst becomes one mail; a match after the alert reserved its
// papers starts the next one, so nothing waits for ever, and so does a
// match after an alert left unclaimed for InstantAbandoned.
func (d *Digester) ScheduleInstant(ctx context.Context, tx pgx.Tx, affected []int64) error {
	if len(affected) == 0 {
		return nil
	}
	now := d.now()
	due := now.Add(InstantDelay)
	rows, err := tx.Query(ctx, `
		UPDATE digest_schedules d SET instant_due_at = $2
		FROM `+account.UsersTable+` u
		WHERE d.user_id = ANY($1) AND u.id = d.user_id AND `+instantDue+`
		RETURNING d.user_id`, affected, due, now.Add(-InstantAbandoned), now)
	if err != nil {
		return fmt.Errorf("scheduling instant alerts: %w", err)
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(users) == 0 {
		return err
	}
	return d.enq.EnqueueInstant(ctx, tx, users, due)
}

// SendInstant sends a user's waiting instant alert: SendInstants of one.
func (d *Digester) SendInstant(ctx context.Context, userID int64) error {
	_, err := d.SendInstants(ctx, []int64{userID})
	return err
}

// SendInstants sends the waiting instant alerts of users (one job's
// batch): each is everything matched since the user's last mail, a ledger
// row like any digest, and the alerts are built together and sent one SMTP
// transaction each (SendBatch). A job claims a user's alert by clearing
// the waiting marker (digest_schedules.instant_due_at) in the transaction
// that makes its row, named after the window it will hold
// ("instant:<watermark>-<high seq>"): an alert that moved no watermark
// (nothing new, as when `digest --now` took its papers, or skipped for the
// address) leaves the watermark where it was, but any later match raises
// the high seq, so the next alert never lands on that closed row. Alerts
// an earlier attempt left pending or sending are resumed: one whose window
// is not reserved yet takes the marker's papers too (the marker is
// cleared, no new row); one already reserved does not, so the marker gets
// a row of its own and a match during an alert's retries is not held back.
// A user with no alert waiting gets nothing, so a retried job never sends
// twice. The outcomes are SendBatch's; when some failed temporarily the
// error wraps ErrRetry.
func (d *Digester) SendInstants(ctx context.Context, userIDs []int64) ([]Outcome, error) {
	var ids []int64
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		ids = ids[:0]
		for _, userID := range userIDs {
			open, unreserved, err := openInstant(ctx, tx, userID)
			if err != nil {
				return err
			}
			ids = append(ids, open...)
			var freq string
			var watermark, high int64
			err = tx.QueryRow(ctx, `
				UPDATE digest_schedules SET instant_due_at = NULL WHERE user_id = $1 AND instant_due_at IS NOT NULL
				RETURNING frequency, watermark, `+catalog.HighSeqSQL, userID).Scan(&freq, &watermark, &high)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && (unreserved || Frequency(freq) != Instant)) {
				continue // nothing waiting, a resumed alert holds it, or they changed their mind meanwhile
			}
			if err != nil {
				return fmt.Errorf("claiming the instant alert of user %d: %w", userID, err)
			}
			period := "instant:" + strconv.FormatInt(watermark, 10) + "-" + strconv.FormatInt(high, 10)
			id, err := upsertDigest(ctx, tx, userID, period, "instant", d.now())
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return d.SendBatch(ctx, ids)
}

// openInstant returns, in tx, the user's instant alerts that an earlier
// attempt left pending or sending, oldest first, and whether one of them
// has no window reserved yet.
func openInstant(ctx context.Context, tx pgx.Tx, userID int64) (ids []int64, unreserved bool, err error) {
	// digests' (user_id, period) unique index, the user's rows only.
	rows, err := tx.Query(ctx, `
		SELECT id, to_seq IS NULL FROM digests WHERE user_id = $1 AND kind = 'instant' AND state IN ($2, $3)
		ORDER BY id`, userID, StatePending, StateSending)
	if err != nil {
		return nil, false, fmt.Errorf("reading the instant alerts of user %d: %w", userID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var none bool
		if err := rows.Scan(&id, &none); err != nil {
			return nil, false, err
		}
		ids, unreserved = append(ids, id), unreserved || none
	}
	return ids, unreserved, rows.Err()
}

// scheduleConfirmed gives a user whose address was just confirmed (in tx)
// a next digest time, when daily or weekly digests are chosen and none is
// set: an unconfirmed address has none.
func scheduleConfirmed(ctx context.Context, tx pgx.Tx, userID int64, now time.Time) error {
	s, loc, err := UserSchedule(ctx, tx, userID)
	if err != nil {
		return fmt.Errorf("reading digest settings of user %d: %w", userID, err)
	}
	if s.Frequency != Daily && s.Frequency != Weekly {
		return nil
	}
	_, err = tx.Exec(ctx, `UPDATE digest_schedules SET next_at = $2 WHERE user_id = $1 AND next_at IS NULL`,
		userID, NextOccurrence(now, loc, s))
	return err
}

// UserSchedule reads in tx the user's digest schedule (Frequency, Hour
// and Weekday; without a digest_schedules row, the columns' defaults: off,
// 7 o'clock, Monday) and time zone (UTC when it is unknown to this
// process): the times a digest or a daily or weekly channel window closes;
// and the budget (Order, MaxPapers, KeepFollowed; by default newest first,
// no budget, followed papers kept), which push channels take per day; and
// the quiet days (Weekdays; by default every day).
// An unknown user is pgx.ErrNoRows.
func UserSchedule(ctx context.Context, tx pgx.Tx, userID int64) (DigestSettings, *time.Location, error) {
	var tz, freq, order string
	var s DigestSettings
	var weekday, weekdays int
	if err := tx.QueryRow(ctx, `
		SELECT u.timezone, coalesce(d.frequency, 'off'), coalesce(d.hour, 7), coalesce(d.weekday, 1),
		       coalesce(d.paper_order, 'newest'), coalesce(d.max_papers, 0), coalesce(d.keep_followed, true),
		       coalesce(d.weekdays, 127)
		FROM `+account.UsersTable+` u LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.id = $1`, userID).
		Scan(&tz, &freq, &s.Hour, &weekday, &order, &s.MaxPapers, &s.KeepFollowed, &weekdays); err != nil {
		return DigestSettings{}, nil, err
	}
	s.Frequency, s.Weekday, s.Order = Frequency(freq), time.Weekday(weekday), Order(order)
	s.Weekdays = Weekdays(weekdays)
	return s, zone(tz), nil
}
