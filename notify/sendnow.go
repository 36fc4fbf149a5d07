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
	"followfeed/database"
)

// NowStatus says what SendNow did.
type NowStatus string

// The results of SendNow.
const (
	// NowSent: the digest went out (Outcome.Papers papers, possibly none
	// when send_empty or force asked for an empty one).
	NowSent NowStatus = "sent"
	// NowNothingNew: nothing matched since the last digest and the user
	// does not want empty digests; nothing was written or sent.
	NowNothingNew NowStatus = "nothing new"
	// NowAlreadySent: the digest of this period is in the ledger in a final
	// state already (NowResult.At, Outcome.State); it is never sent twice.
	NowAlreadySent NowStatus = "already sent"
	// NowRuledOut: the user's settings rule mail out (digests off, no
	// confirmed address, address suppressed); NowResult.Reason says which.
	NowRuledOut NowStatus = "not sent"
	// NowRetrying: the digest met a temporary failure (an SMTP 4xx, the
	// server unreachable) and is pending; a send job queued for it in the
	// mail queue retries it at Outcome.RetryAt, the same ledger row and
	// Message-ID (never a second message), backing off like any send job
	// and failing the row after its last attempt.
	NowRetrying NowStatus = "will be retried"
	// NowNotDelivered: the digest was built but not delivered: skipped,
	// failed or unknown (Outcome).
	NowNotDelivered NowStatus = "not delivered"
)

// NowResult is what SendNow did, with what a person needs to know next.
type NowResult struct {
	Outcome
	Status NowStatus
	// Period is the ledger period used ("daily:2026-11-30",
	// "manual:<watermark>-<high seq>"); "" when no row was written.
	Period string
	// Reason says why nothing was sent (NowRuledOut), or the ledger reply.
	Reason string
	// At is when the period's digest reached its final state
	// (NowAlreadySent).
	At time.Time
	// NextAt is when the next scheduled digest is due (zero: none).
	NextAt time.Time
	// Waiting is how many papers wait for the next digest afterwards.
	Waiting int
}

// SendNow sends the user's next digest at once, through the same ledger as
// scheduled digests, so it is never sent twice:
//
//   - Settings that rule mail out (digests off, no or an unconfirmed
//     address, a suppressed one) send nothing (NowRuledOut).
//   - With nothing new since the last digest, nothing is sent
//     (NowNothingNew) unless the user asked for empty digests or force is
//     set.
//   - A daily or weekly user's scheduled digest, when it is due within
//     one period (the one being gathered), is sent early under the
//     scheduled period, and the schedule moves on to the following one,
//     so the scheduler never repeats it. A user's schedule moves at most
//     that one period however often SendNow runs.
//   - Any other digest (a later SendNow of the same period, instant or
//     off-schedule users) is a by-hand row named after its window
//     ("manual:<watermark>-<high seq>"): a new window, a new digest. The
//     next scheduled digest then holds what came after it.
//
// A period found already final is reported (NowAlreadySent) and not sent.
// A temporary failure is not an error: the digest stays pending and its
// own send job retries it (NowRetrying).
func (d *Digester) SendNow(ctx context.Context, userID int64, force bool) (NowResult, error) {
	var res NowResult
	preview, err := d.preview(ctx, userID, false) // the count only
	if err != nil {
		return res, err
	}
	res.Waiting = preview.Total
	var id int64
	err = d.db.InTx(ctx, func(tx pgx.Tx) error {
		var tz, freq, email string
		var next *time.Time
		var watermark, high int64
		var hour, weekday, weekdays int
		var sendEmpty, confirmed, suppressed bool
		if err := tx.QueryRow(ctx, `
			SELECT u.timezone, coalesce(d.frequency, 'off'), d.next_at, coalesce(d.watermark, 0),
			       coalesce(d.hour, 7), coalesce(d.weekday, 1), coalesce(d.send_empty, false),
			       coalesce(d.weekdays, 127),
			       coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL,
			       `+account.SuppressedSQL+`,
			       `+catalog.HighSeqSQL+`
			FROM `+account.UsersTable+` u LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.id = $1
			FOR UPDATE OF u`,
			userID).Scan(&tz, &freq, &next, &watermark, &hour, &weekday, &sendEmpty, &weekdays, &email, &confirmed, &suppressed, &high); err != nil {
			return database.NotFound(err, fmt.Sprintf("reading user %d", userID))
		}
		if next != nil {
			res.NextAt = *next
		}
		switch {
		case Frequency(freq) == Off:
			res.Status, res.Reason = NowRuledOut, "digests are off for this user"
		case email == "":
			res.Status, res.Reason = NowRuledOut, "the user has no email address"
		case !confirmed:
			res.Status, res.Reason = NowRuledOut, "the email address is not confirmed yet"
		case suppressed:
			res.Status, res.Reason = NowRuledOut, "the address is suppressed (it bounced or unsubscribed) until it is confirmed again"
		case res.Waiting == 0 && !sendEmpty && !force:
			res.Status = NowNothingNew
		}
		if res.Status != "" {
			return nil
		}
		period, kind := "manual:"+strconv.FormatInt(watermark, 10)+"-"+strconv.FormatInt(high, 10), "manual"
		// The scheduled digest goes early only while it is the one being
		// gathered (due within one period from now): a second early send
		// would take the period after it, and each further one the next,
		// until the user's scheduled digests stopped for days. Beyond
		// that, a by-hand row; the schedule stays.
		scheduled := next != nil && (Frequency(freq) == Daily || Frequency(freq) == Weekly) &&
			!next.After(d.now().Add(periodLength(Frequency(freq))))
		if scheduled {
			period, kind = Period(Frequency(freq), *next, zone(tz)), freq
		}
		res.Period = period
		var state State
		var updated time.Time
		err := tx.QueryRow(ctx, `
			WITH ins AS (
				INSERT INTO digests (user_id, period, kind) VALUES ($1, $2, $3)
				ON CONFLICT (user_id, period) DO NOTHING RETURNING id, state, updated_at
			)
			SELECT id, state, updated_at FROM ins
			UNION ALL SELECT id, state, updated_at FROM digests WHERE user_id = $1 AND period = $2
			LIMIT 1`, userID, period, kind).Scan(&id, &state, &updated)
		if err != nil {
			return fmt.Errorf("creating digest %s of user %d: %w", period, userID, err)
		}
		if state.Final() {
			res.Status, res.At = NowAlreadySent, updated
			res.DigestID, res.State = id, state
			id = 0
			return nil
		}
		if scheduled {
			// This period's digest is sent now: the schedule moves on.
			s := DigestSettings{Frequency: Frequency(freq), Hour: hour, Weekday: time.Weekday(weekday), Weekdays: Weekdays(weekdays)}
			n := NextOccurrence(*next, zone(tz), s)
			if _, err := tx.Exec(ctx, `UPDATE digest_schedules SET next_at = $2 WHERE user_id = $1`, userID, n); err != nil {
				return fmt.Errorf("moving the next digest of user %d: %w", userID, err)
			}
			res.NextAt = n
		}
		return nil
	})
	if err != nil || id == 0 {
		return res, err
	}
	outs, sendErr := d.sendBatch(ctx, []int64{id}, sendOptions{forceEmpty: force, ownRetry: true})
	if len(outs) > 0 {
		res.Outcome = outs[0]
	}
	res.Reason = res.Reply
	switch {
	case res.State == StateSent:
		res.Status = NowSent
	case res.State == StatePending && !res.RetryAt.IsZero():
		res.Status = NowRetrying
	default:
		res.Status = NowNotDelivered
	}
	if after, err := d.Preview(ctx, userID); err == nil {
		res.Waiting = after.Total
	} else if sendErr == nil && !errors.Is(err, context.Canceled) {
		sendErr = err
	}
	return res, sendErr
}

// periodLength is how long a scheduled frequency's period lasts.
func periodLength(f Frequency) time.Duration {
	if f == Weekly {
		return 7 * 24 * time.Hour
	}
	return 24 * time.Hour
}
