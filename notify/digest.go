package notify

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/auth"
	"followfeed/database"
	"followfeed/feeds"
	"followfeed/follow"
	"followfeed/mail"
	"followfeed/match"
)

// Caps of one digest.
const (
	MaxPerGroup  = 20
	MaxPerDigest = 100
	// candidates is how many of a window's newest papers are grouped; any
	// beyond count in the digest's "and N more".
	candidates = 250
)

// DigestEnqueuer queues digest jobs inside the caller's transaction.
type DigestEnqueuer interface {
	EnqueueDigests(ctx context.Context, tx pgx.Tx, digestIDs []int64) error
	EnqueueInstant(ctx context.Context, tx pgx.Tx, userIDs []int64, at time.Time) error
}

// InstantDelay is how long instant alerts wait to gather a burst of matches
// into one mail.
const InstantDelay = 10 * time.Minute

// Links builds the absolute URLs a mail carries.
type Links interface {
	// FeedURLs are the users' private Atom feeds.
	FeedURLs(ctx context.Context, userIDs []int64) (map[int64]string, error)
}

// Digester schedules, builds and sends digests, and keeps the delivery
// ledger (table digests): one row per (user, period), state pending →
// sending → sent | failed | skipped | unknown, with the SMTP reply.
//
// Delivery policy (at most once): a row is marked "sending" and committed
// right before the SMTP transaction. The transaction itself is never
// abandoned half-way by a cancelled job (see mail.SMTPSender). If the process
// dies between the server's reply and the ledger commit, or the connection
// breaks after the whole body was sent, the row ends "unknown" and the
// digest is not sent again: a duplicate is the worse failure for a digest
// people keep, and the papers stay in the user's feed. 4xx replies and
// network errors before the body put the row back to "pending" and the job
// retries with backoff; a 5xx on the recipient fails the row and suppresses
// the address.
type Digester struct {
	db      *database.DB
	matcher *match.Service
	follows *follow.Service
	sender  mail.Sender
	enq     DigestEnqueuer
	links   Links
	signer  *auth.LinkSigner
	from    *netmail.Address
	base    *url.URL
	mailto  string
	logger  *slog.Logger
	now     func() time.Time
}

// DigesterConfig assembles a Digester.
type DigesterConfig struct {
	DB       *database.DB
	Matcher  *match.Service
	Follows  *follow.Service
	Sender   mail.Sender
	Enqueuer DigestEnqueuer
	Links    Links
	Signer   *auth.LinkSigner
	From     *netmail.Address
	BaseURL  *url.URL // PUBLIC_URL
	Mailto   string   // MAIL_UNSUBSCRIBE_MAILTO
	Logger   *slog.Logger
	Now      func() time.Time
}

// NewDigester returns a Digester.
func NewDigester(c DigesterConfig) *Digester {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return &Digester{db: c.DB, matcher: c.Matcher, follows: c.Follows, sender: c.Sender, enq: c.Enqueuer, links: c.Links,
		signer: c.Signer, from: c.From, base: c.BaseURL, mailto: c.Mailto, logger: c.Logger, now: c.Now}
}

// ---- scheduling ----

// scheduleBatch bounds the users one scheduling transaction handles.
const scheduleBatch = 1000

// Schedule finds every user whose daily or weekly digest is due, creates one
// ledger row per (user, period) and queues its job, in bulk, and moves each
// user's next digest time on. Periods already in the ledger are skipped, so
// running it twice (or on two workers) never doubles a digest. It returns
// how many digests it queued.
func (d *Digester) Schedule(ctx context.Context) (int, error) {
	if err := d.sweep(ctx); err != nil {
		return 0, err
	}
	total := 0
	for {
		n, more, err := d.scheduleOnce(ctx)
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// Abandoned digests: a row that no send job will ever touch again (its job
// was cancelled from the admin UI, or River discarded it after a worker died
// during the last attempt) would stay open for ever. Attempts touch
// updated_at at most JOB_RETRY_MAX (≤ 24 h) apart, and "sending" lasts one
// SMTP transaction, so these ages mean nobody is coming back for the row.
const (
	abandonedPending = 48 * time.Hour
	abandonedSending = 24 * time.Hour
)

// sweep closes abandoned digests: "sending" becomes "unknown" (it may have
// been delivered; at most once), "pending" becomes "failed". Papers of a
// pending digest whose window was never reserved are not lost: the user's
// watermark did not move, so the next digest holds them.
func (d *Digester) sweep(ctx context.Context) error {
	// digests_open_idx: only open rows are read. Ages are measured with
	// the database's clock, which wrote updated_at.
	_, err := d.db.Pool.Exec(ctx, `
		UPDATE digests SET
			state = CASE state WHEN 'sending' THEN 'unknown' ELSE 'failed' END,
			smtp_reply = coalesce(smtp_reply || ' ', '') || CASE state
				WHEN 'sending' THEN '(abandoned while sending; not resent)'
				ELSE '(abandoned: no send attempt for 48 h)' END,
			updated_at = now()
		WHERE state IN ('pending', 'sending')
		  AND updated_at < now() - CASE state WHEN 'sending' THEN $1::interval ELSE $2::interval END`,
		abandonedSending, abandonedPending)
	if err != nil {
		return fmt.Errorf("closing abandoned digests: %w", err)
	}
	return nil
}

func (d *Digester) scheduleOnce(ctx context.Context) (queued int, more bool, err error) {
	now := d.now()
	err = d.db.InTx(ctx, func(tx pgx.Tx) error {
		// users_digest_due_idx; SKIP LOCKED lets several schedulers (or a
		// user editing settings) proceed without waiting.
		rows, err := tx.Query(ctx, `
			SELECT id, timezone, digest_frequency, digest_hour, digest_weekday, digest_next_at
			FROM users WHERE digest_next_at <= $1
			ORDER BY digest_next_at LIMIT $2
			FOR UPDATE SKIP LOCKED`, now, scheduleBatch)
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
			var weekday int
			var due time.Time
			if err := rows.Scan(&id, &tz, &freq, &s.Hour, &weekday, &due); err != nil {
				return err
			}
			s.Frequency, s.Weekday = Frequency(freq), time.Weekday(weekday)
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
			INSERT INTO digests (user_id, period, kind)
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
			ON CONFLICT (user_id, period) DO NOTHING
			RETURNING id`, users, periods, kinds)
		if err != nil {
			return fmt.Errorf("creating %d digests: %w", len(users), err)
		}
		ids, err := pgx.CollectRows(idRows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("creating %d digests: %w", len(users), err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE users u SET digest_next_at = n.next
			FROM unnest($1::bigint[], $2::timestamptz[]) AS n(id, next) WHERE u.id = n.id`, users, nexts); err != nil {
			return fmt.Errorf("moving next digest times: %w", err)
		}
		queued = len(ids)
		return d.enq.EnqueueDigests(ctx, tx, ids)
	})
	return queued, more, err
}

// ScheduleInstant is the match job's hook: users among affected who chose
// instant alerts (with a confirmed, unsuppressed address) and have none
// waiting get an alert due InstantDelay from now. Matches while one waits
// join it, so a burst becomes one mail; a match after the alert reserved its
// papers starts the next one, so nothing waits for ever.
func (d *Digester) ScheduleInstant(ctx context.Context, tx pgx.Tx, affected []int64) error {
	if len(affected) == 0 {
		return nil
	}
	due := d.now().Add(InstantDelay)
	rows, err := tx.Query(ctx, `
		UPDATE users u SET instant_due_at = $2
		WHERE u.id = ANY($1) AND u.digest_frequency = 'instant' AND u.instant_due_at IS NULL
		  AND u.email_confirmed_at IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.email = lower(u.email))
		RETURNING u.id`, affected, due)
	if err != nil {
		return fmt.Errorf("scheduling instant alerts: %w", err)
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(users) == 0 {
		return err
	}
	return d.enq.EnqueueInstant(ctx, tx, users, due)
}

// SendInstant sends a user's waiting instant alert: everything matched since
// their last mail. It is a ledger row like any digest ("instant:<watermark>"),
// so a retried job never sends twice.
func (d *Digester) SendInstant(ctx context.Context, userID int64) error {
	var id int64
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		var freq string
		var watermark int64
		if err := tx.QueryRow(ctx, `
			UPDATE users SET instant_due_at = NULL WHERE id = $1
			RETURNING digest_frequency, digest_watermark`, userID).Scan(&freq, &watermark); err != nil {
			return database.NotFound(err, fmt.Sprintf("reading user %d", userID))
		}
		// A retry after a temporary failure resumes the alert it reserved.
		err := tx.QueryRow(ctx, `
			SELECT id FROM digests WHERE user_id = $1 AND kind = 'instant' AND state IN ('pending', 'sending')
			ORDER BY id LIMIT 1`, userID).Scan(&id)
		if err == nil || !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if Frequency(freq) != Instant {
			return nil // changed their mind meanwhile
		}
		id, err = upsertDigest(ctx, tx, userID, "instant:"+strconv.FormatInt(watermark, 10), "instant")
		return err
	})
	if err != nil || id == 0 {
		return err
	}
	_, err = d.Send(ctx, id)
	return err
}

func upsertDigest(ctx context.Context, tx pgx.Tx, userID int64, period, kind string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO digests (user_id, period, kind) VALUES ($1, $2, $3)
			ON CONFLICT (user_id, period) DO NOTHING RETURNING id
		)
		SELECT id FROM ins UNION ALL SELECT id FROM digests WHERE user_id = $1 AND period = $2
		LIMIT 1`, userID, period, kind).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("creating digest %s of user %d: %w", period, userID, err)
	}
	return id, nil
}

// ---- sending ----

// Outcome is what became of one digest.
type Outcome struct {
	DigestID int64
	State    string // sent, skipped, failed, unknown, pending (will retry)
	Papers   int
	Reply    string
}

// ErrRetry wraps a temporary delivery failure: the caller (the job) should
// retry later with backoff.
var ErrRetry = errors.New("temporary delivery failure")

type digestRow struct {
	id, userID   int64
	period, kind string
	state        string
	from, to     *int64
	email        string
	confirmed    bool
	suppressed   bool
	tz           string
	freq         Frequency
	sendEmpty    bool
	epoch        int64
	attempts     int
}

// Send delivers the ledger row id (see Digester for the policy). It is
// SendBatch of one.
func (d *Digester) Send(ctx context.Context, id int64) (Outcome, error) {
	outs, err := d.SendBatch(ctx, []int64{id})
	if len(outs) == 0 {
		return Outcome{DigestID: id}, err
	}
	return outs[0], err
}

// SendBatch delivers ledger rows (see Digester for the policy), building
// them together: one statement reserves every window, one selects every
// user's papers, and the papers' details and renderings are shared by all
// the digests that show them; each digest then goes out on its own SMTP
// transaction with its own ledger updates. It is idempotent: rows already
// sent, skipped, failed or unknown are left alone. When some rows failed
// temporarily the error wraps ErrRetry (the job retries; the rest is final).
func (d *Digester) SendBatch(ctx context.Context, ids []int64) (outs []Outcome, err error) {
	outs = make([]Outcome, 0, len(ids))
	ledger := &outcomes{d: d}
	defer func() {
		// Outcomes are recorded even when the job's context is cancelled:
		// the mail has left (or not) whatever happens to the job.
		if ferr := ledger.flush(context.WithoutCancel(ctx)); ferr != nil {
			err = errors.Join(err, ferr)
		}
	}()
	var retry []error
	// Rounds: a user with several rows in ids gets one per round, since each
	// window starts where the previous one ends.
	for len(ids) > 0 {
		rows, done, later, err := d.reserve(ctx, ids)
		if err != nil {
			return outs, err
		}
		for _, id := range ids {
			if st, ok := done[id]; ok {
				outs = append(outs, Outcome{DigestID: id, State: st})
			}
		}
		if len(rows) > 0 {
			contents, err := d.build(ctx, rows)
			if err != nil {
				return outs, err
			}
			var r Renderer // shares the papers' renderings in this round
			for i, row := range rows {
				out, err := d.deliver(ctx, row, contents[i], &r, ledger)
				outs = append(outs, out)
				if err != nil {
					if !errors.Is(err, ErrRetry) {
						return outs, err
					}
					retry = append(retry, err)
				}
			}
		}
		ids = later
	}
	if len(retry) > 0 {
		return outs, fmt.Errorf("%d digests will be retried: %w", len(retry), errors.Join(retry...))
	}
	return outs, nil
}

// GiveUp marks the rows of ids that are still pending as failed, keeping
// the last SMTP reply and appending reason. The send job calls it when River
// will not retry any more: without it those rows would stay pending for
// ever, since nothing else enqueues a scheduled digest twice. Rows in any
// other state are left alone. It returns how many rows it marked.
func (d *Digester) GiveUp(ctx context.Context, ids []int64, reason string) (int, error) {
	tag, err := d.db.Pool.Exec(ctx, `
		UPDATE digests SET state = 'failed',
			smtp_reply = coalesce(smtp_reply || ' ', '') || '(' || $2 || ')', updated_at = now()
		WHERE id = ANY($1) AND state = 'pending'`, ids, reason)
	if err != nil {
		return 0, fmt.Errorf("giving up on %d digests: %w", len(ids), err)
	}
	return int(tag.RowsAffected()), nil
}

// deliver sends one built digest and records its fate in ledger.
func (d *Digester) deliver(ctx context.Context, row digestRow, content DigestContent, r *Renderer, ledger *outcomes) (Outcome, error) {
	out := Outcome{DigestID: row.id, Papers: content.Total}
	if content.Total == 0 && !row.sendEmpty && row.kind != "manual" {
		return out, ledger.record(ctx, &out, row, "skipped", "nothing new", false)
	}
	msg, err := d.message(row, content, r)
	if err != nil {
		// This digest cannot be rendered: it fails alone (the reason in
		// the ledger), and the rest of the batch goes on.
		return out, ledger.record(ctx, &out, row, "failed", "could not build the message: "+err.Error(), false)
	}
	if err := ledger.sending(ctx, row, msg.MessageID, content.Total); err != nil {
		return out, err
	}
	reply, sendErr := d.sender.Send(ctx, msg)
	rec := context.WithoutCancel(ctx) // see SendBatch
	if sendErr == nil {
		return out, ledger.record(rec, &out, row, "sent", reply, false)
	}
	var se *mail.SendError
	if !errors.As(sendErr, &se) {
		se = &mail.SendError{Kind: mail.Temporary, Err: sendErr}
	}
	msgText := se.Error()
	switch se.Kind {
	case mail.Permanent:
		return out, ledger.record(rec, &out, row, "failed", msgText, se.Recipient)
	case mail.Ambiguous:
		return out, ledger.record(rec, &out, row, "unknown", msgText, false)
	default:
		if err := ledger.record(rec, &out, row, "pending", msgText, false); err != nil {
			return out, err
		}
		return out, fmt.Errorf("sending digest %d: %w: %v", row.id, ErrRetry, sendErr)
	}
}

// outcomes writes digests' states to the ledger. To save a statement and a
// commit per digest, an outcome that needs nothing else waits and is
// written in the same statement as the next digest's "sending" mark, or by
// flush at the end of the batch. At most one outcome ever waits: a crash
// leaves that one digest "sending", which a retry records as "unknown",
// the same as a crash between the server's reply and any ledger write.
type outcomes struct {
	d       *Digester
	waiting *waitingOutcome
}

type waitingOutcome struct {
	id           int64
	state, reply string
}

// record has out's state written and then sets it on out. Only an outcome
// that a crash may leave at "sending" without harm waits for the next write:
// "sent" and "unknown" (a retry records "unknown" and resends nothing, the
// at-most-once policy) and "skipped" (never marked "sending"). "pending"
// (the message certainly did not go: a retry must resend it) and "failed"
// are written at once, a bounce together with the address's suppression.
func (l *outcomes) record(ctx context.Context, out *Outcome, row digestRow, state, reply string, suppress bool) error {
	if err := l.flush(ctx); err != nil {
		return err
	}
	reply = truncate(reply, 1000)
	switch state {
	case "sent", "unknown", "skipped":
		l.waiting = &waitingOutcome{id: row.id, state: state, reply: reply}
	default:
		err := l.d.db.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, setOutcome+` WHERE id = $1`, row.id, state, reply); err != nil {
				return fmt.Errorf("recording digest %d as %s: %w", row.id, state, err)
			}
			if suppress {
				return suppressAddress(ctx, tx, row.email, "bounce", reply)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	out.State, out.Reply = state, reply
	return nil
}

// setOutcome is the UPDATE of a digest's final (or pending) state; $1 is
// the row, $2 the state, $3 the SMTP reply or reason.
const setOutcome = `UPDATE digests SET state = $2, smtp_reply = $3, updated_at = now(),
	sent_at = CASE WHEN $2 = 'sent' THEN now() END`

// sending marks row "sending" (committed before its SMTP transaction
// starts), writing the waiting outcome in the same statement.
func (l *outcomes) sending(ctx context.Context, row digestRow, messageID string, papers int) error {
	w := l.waiting
	if w == nil {
		w = &waitingOutcome{} // id 0: no row
	}
	if _, err := l.d.db.Pool.Exec(ctx, `
		WITH waiting AS (`+setOutcome+` WHERE id = $1 AND $1 <> 0)
		UPDATE digests SET state = 'sending', attempts = attempts + 1, email = $5, message_id = $6, papers = $7, updated_at = now()
		WHERE id = $4`, w.id, w.state, w.reply, row.id, row.email, messageID, papers); err != nil {
		return fmt.Errorf("marking digest %d sending: %w", row.id, err)
	}
	l.waiting = nil
	return nil
}

// flush writes the waiting outcome, if any.
func (l *outcomes) flush(ctx context.Context) error {
	w := l.waiting
	if w == nil {
		return nil
	}
	if _, err := l.d.db.Pool.Exec(ctx, setOutcome+` WHERE id = $1`, w.id, w.state, w.reply); err != nil {
		return fmt.Errorf("recording digest %d as %s: %w", w.id, w.state, err)
	}
	l.waiting = nil
	return nil
}

// reserve loads the rows and, the first time, reserves their windows under
// their users' locks, in bulk. It returns the rows to build, in the order
// of ids, the final state of those with nothing left to do, and the ids
// left for a later round: a user's rows are reserved one at a time, since
// each window starts where the previous one ends.
func (d *Digester) reserve(ctx context.Context, ids []int64) (rows []digestRow, done map[int64]string, later []int64, err error) {
	err = d.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, done, later = nil, map[int64]string{}, nil
		r, err := tx.Query(ctx, `
			SELECT g.id, g.user_id, g.period, g.kind, g.state, g.from_seq, g.to_seq, g.attempts,
			       coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL,
			       EXISTS (SELECT 1 FROM suppressions s WHERE s.email = lower(u.email)),
			       u.timezone, u.digest_frequency, u.digest_send_empty, u.link_epoch
			FROM digests g JOIN users u ON u.id = g.user_id
			WHERE g.id = ANY($1)
			ORDER BY g.id
			FOR UPDATE OF g, u`, ids)
		if err != nil {
			return fmt.Errorf("reading %d digests: %w", len(ids), err)
		}
		byID := map[int64]digestRow{}
		for r.Next() {
			var row digestRow
			if err := r.Scan(&row.id, &row.userID, &row.period, &row.kind, &row.state, &row.from, &row.to,
				&row.attempts, &row.email, &row.confirmed, &row.suppressed, &row.tz, &row.freq, &row.sendEmpty, &row.epoch); err != nil {
				r.Close()
				return err
			}
			byID[row.id] = row
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		var finalIDs, reserveIDs []int64
		var finalStates, finalReasons []string
		users := map[int64]bool{}
		for _, id := range ids {
			row, ok := byID[id]
			if !ok {
				return fmt.Errorf("digest %d: %w", id, database.ErrNotFound)
			}
			final := func(state, reason string) {
				done[id] = state
				finalIDs, finalStates, finalReasons = append(finalIDs, id), append(finalStates, state), append(finalReasons, reason)
			}
			switch {
			case row.state == "sent" || row.state == "skipped" || row.state == "failed" || row.state == "unknown":
				done[id] = row.state
			case row.state == "sending":
				// The process died while this digest was being handed to
				// the SMTP server: it may have been delivered. At most once.
				final("unknown", "interrupted while sending; not resent")
			case row.email == "":
				final("skipped", "no email address")
			case !row.confirmed:
				final("skipped", "email address not confirmed")
			case row.suppressed:
				final("skipped", "address suppressed (bounced or unsubscribed)")
			case row.freq == Off && row.kind != "manual":
				final("skipped", "digests turned off")
			case users[row.userID]:
				later = append(later, id)
			default:
				users[row.userID] = true
				if row.to == nil {
					reserveIDs = append(reserveIDs, id)
				}
				rows = append(rows, row)
			}
		}
		if len(finalIDs) > 0 {
			if _, err := tx.Exec(ctx, `
				UPDATE digests g SET state = f.state,
					smtp_reply = CASE WHEN f.state = 'unknown' THEN coalesce(g.smtp_reply || ' ', '') || '(' || f.reason || ')' ELSE f.reason END,
					updated_at = now()
				FROM unnest($1::bigint[], $2::text[], $3::text[]) AS f(id, state, reason) WHERE g.id = f.id`,
				finalIDs, finalStates, finalReasons); err != nil {
				return fmt.Errorf("recording %d digests: %w", len(finalIDs), err)
			}
		}
		if len(reserveIDs) == 0 {
			return nil
		}
		// Reserve (watermark, high_seq] and move each watermark past it now,
		// so no other digest of the user can include these papers.
		rr, err := tx.Query(ctx, `
			WITH w AS (
				UPDATE digests g SET from_seq = u.digest_watermark,
					to_seq = greatest((SELECT high_seq FROM match_state), u.digest_watermark)
				FROM users u WHERE g.id = ANY($1) AND u.id = g.user_id
				RETURNING g.id, g.user_id, g.from_seq, g.to_seq
			), moved AS (
				UPDATE users u SET digest_watermark = w.to_seq FROM w
				WHERE u.id = w.user_id AND u.digest_watermark < w.to_seq
			)
			SELECT id, from_seq, to_seq FROM w`, reserveIDs)
		if err != nil {
			return fmt.Errorf("reserving the windows of %d digests: %w", len(reserveIDs), err)
		}
		windows := map[int64][2]int64{}
		for rr.Next() {
			var id, from, to int64
			if err := rr.Scan(&id, &from, &to); err != nil {
				rr.Close()
				return err
			}
			windows[id] = [2]int64{from, to}
		}
		rr.Close()
		if err := rr.Err(); err != nil {
			return err
		}
		for i := range rows {
			if w, ok := windows[rows[i].id]; ok {
				from, to := w[0], w[1]
				rows[i].from, rows[i].to = &from, &to
			}
		}
		return nil
	})
	return rows, done, later, err
}

// suppressAddress stops all mail to email until its owner confirms it again.
func suppressAddress(ctx context.Context, tx pgx.Tx, email, reason, detail string) error {
	if email == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO suppressions (email, reason, detail) VALUES (lower($1), $2, $3)
		ON CONFLICT (email) DO UPDATE SET reason = $2, detail = $3, created_at = now()`,
		email, reason, truncate(detail, 500)); err != nil {
		return fmt.Errorf("suppressing an address: %w", err)
	}
	_, err := tx.Exec(ctx, `UPDATE users SET digest_next_at = NULL WHERE lower(email) = lower($1)`, email)
	return err
}

// ---- content ----

// build selects and groups the papers of each row's window, with one
// statement for all rows, and loads the details of the papers shown once.
func (d *Digester) build(ctx context.Context, rows []digestRow) ([]DigestContent, error) {
	var qs []match.Query
	var qRow []int
	users := make([]int64, 0, len(rows))
	for i, row := range rows {
		users = append(users, row.userID)
		if *row.to > *row.from {
			qs = append(qs, match.Query{UserID: row.userID, AfterSeq: *row.from, UpToSeq: *row.to, Limit: candidates, Light: true})
			qRow = append(qRow, i)
		}
	}
	results := make([]match.Result, len(rows))
	if len(qs) > 0 {
		rs, err := d.matcher.MatchedMany(ctx, qs)
		if err != nil {
			return nil, err
		}
		for j, r := range rs {
			results[qRow[j]] = r
		}
	}
	follows, err := d.follows.AllMany(ctx, users)
	if err != nil {
		return nil, err
	}
	plans := make([]digestPlan, len(rows))
	var shown []int64
	seen := map[int64]bool{}
	for i, row := range rows {
		plans[i] = planGroups(results[i], follows[row.userID])
		for _, id := range plans[i].shownIDs() {
			if !seen[id] {
				seen[id] = true
				shown = append(shown, id)
			}
		}
	}
	papers, err := d.matcher.LoadPapers(ctx, shown, true)
	if err != nil {
		return nil, err
	}
	details := make(map[int64]match.Paper, len(papers))
	for _, p := range papers {
		details[p.ID] = p
	}
	feedURLs := map[int64]string{}
	if d.links != nil {
		if feedURLs, err = d.links.FeedURLs(ctx, users); err != nil {
			return nil, err
		}
	}
	out := make([]DigestContent, len(rows))
	for i, row := range rows {
		c := plans[i].fill(details)
		loc := zone(row.tz)
		c.Heading = heading(row, d.now().In(loc))
		c.FeedURL = feedURLs[row.userID]
		c.ManageURL = d.abs("/settings", "token", d.signer.Sign(auth.Link{Action: auth.ActionManage, UserID: row.userID, Epoch: row.epoch})) + "#email"
		c.UnsubscribeURL = d.unsubscribeURL(row.userID, row.epoch)
		out[i] = c
	}
	return out, nil
}

// GroupPapers arranges matched papers (with their details) into a digest:
// see planGroups for the rules.
func GroupPapers(res match.Result, follows []follow.Follow) DigestContent {
	plan := planGroups(res, follows)
	byID := make(map[int64]match.Paper, len(res.Papers))
	for _, p := range res.Papers {
		byID[p.ID] = p
	}
	return plan.fill(byID)
}

// digestPlan is which papers a digest shows, by group, before their details
// are loaded.
type digestPlan struct {
	total, omitted int
	groups         []plannedGroup
	labels         map[string]string
}

type plannedGroup struct {
	first   follow.Target // the follow the group is named after
	key     string        // first.Key()
	label   string
	papers  []match.Paper // ids and reasons only
	omitted int
}

// planGroups assigns each paper to the group of its most specific reason (a
// researcher before an institution before a category before a whole archive;
// among equals, the follow made first), with every reason kept; at most
// MaxPerGroup per group and MaxPerDigest in all are shown, the rest counted
// as "more". Groups come in the same order of specificity.
func planGroups(res match.Result, follows []follow.Follow) digestPlan {
	plan := digestPlan{total: res.Total, labels: map[string]string{}}
	made := map[string]time.Time{}
	for _, f := range follows {
		plan.labels[f.Key()] = f.Label
		made[f.Key()] = f.CreatedAt
	}
	before := func(a, b follow.Target, ka, kb string) bool {
		if pa, pb := specificity(a), specificity(b); pa != pb {
			return pa < pb
		}
		return made[ka].Before(made[kb])
	}
	index := map[string]int{}
	shown, listed := 0, 0
	for _, p := range res.Papers {
		if len(p.Reasons) == 0 {
			continue
		}
		first, firstKey := p.Reasons[0], p.Reasons[0].Key()
		for _, r := range p.Reasons[1:] {
			if k := r.Key(); before(r, first, k, firstKey) {
				first, firstKey = r, k
			}
		}
		i, ok := index[firstKey]
		if !ok {
			i = len(plan.groups)
			index[firstKey] = i
			plan.groups = append(plan.groups, plannedGroup{first: first, key: firstKey, label: plan.labels[firstKey]})
		}
		g := &plan.groups[i]
		listed++
		if len(g.papers) >= MaxPerGroup || shown >= MaxPerDigest {
			g.omitted++
			plan.omitted++
			continue
		}
		if g.papers == nil {
			g.papers = make([]match.Paper, 0, MaxPerGroup)
		}
		g.papers = append(g.papers, p)
		shown++
	}
	slices.SortStableFunc(plan.groups, func(a, b plannedGroup) int {
		switch {
		case before(a.first, b.first, a.key, b.key):
			return -1
		case before(b.first, a.first, b.key, a.key):
			return 1
		}
		return 0
	})
	// Papers beyond the candidates read count overall.
	plan.omitted += max(res.Total-listed, 0)
	return plan
}

// shownIDs are the papers whose details the plan needs.
func (plan digestPlan) shownIDs() []int64 {
	var ids []int64
	for _, g := range plan.groups {
		for _, p := range g.papers {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// fill builds the content from the plan and the shown papers' details.
func (plan digestPlan) fill(details map[int64]match.Paper) DigestContent {
	c := DigestContent{Total: plan.total, Omitted: plan.omitted}
	for _, g := range plan.groups {
		dg := DigestGroup{Name: g.label, Omitted: g.omitted, Papers: make([]DigestPaper, 0, len(g.papers))}
		for _, p := range g.papers {
			d, ok := details[p.ID]
			if !ok {
				dg.Omitted++ // withdrawn meanwhile
				continue
			}
			if dg.Name == "" {
				dg.Name = groupName(g.first, d)
			}
			reasons := make([]string, 0, len(p.Reasons))
			for _, r := range p.Reasons {
				reasons = append(reasons, feeds.ReasonName(r, plan.labels[r.Key()], d.Authors))
			}
			authors := make([]string, 0, len(d.Authors))
			for _, a := range d.Authors {
				authors = append(authors, a.Name)
			}
			dg.Papers = append(dg.Papers, DigestPaper{ID: d.ID, Title: d.Title, Authors: authors, AbsURL: d.AbsURL, PDFURL: d.PDFURL,
				Reasons: reasons, Categories: d.Categories, Published: d.SubmittedAt})
		}
		if dg.Name == "" {
			dg.Name = groupName(g.first, match.Paper{})
		}
		c.Groups = append(c.Groups, dg)
	}
	return c
}

// specificity ranks reasons for grouping: lower is more specific.
func specificity(t follow.Target) int {
	switch {
	case t.Kind == follow.Researcher:
		return 0
	case t.Kind == follow.Institution:
		return 1
	case t.IsArchive():
		return 3
	}
	return 2
}

func groupName(t follow.Target, p match.Paper) string {
	if t.Kind == follow.Researcher {
		return feeds.ReasonName(t, "", p.Authors)
	}
	if t.Kind == follow.Category && !t.IsArchive() {
		return t.DisplayName()
	}
	return feeds.ReasonName(t, "", nil)
}

func heading(row digestRow, localNow time.Time) string {
	day := localNow.Format("Monday 2 January")
	switch row.kind {
	case "weekly":
		return "Your weekly papers — week of " + day
	case "instant":
		return "New papers just matched your follows"
	}
	return "Your daily papers — " + day
}

func (d *Digester) abs(path, key, value string) string {
	u := *d.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	if key != "" {
		u.RawQuery = url.Values{key: {value}}.Encode()
	}
	return u.String()
}

func (d *Digester) unsubscribeURL(userID, epoch int64) string {
	return d.abs("/unsubscribe/"+d.signer.Sign(auth.Link{Action: auth.ActionUnsubscribe, UserID: userID, Epoch: epoch}), "", "")
}

func (d *Digester) message(row digestRow, c DigestContent, r *Renderer) (*mail.Message, error) {
	text, html, err := r.Digest(c)
	if err != nil {
		return nil, err
	}
	host := d.base.Hostname()
	return &mail.Message{
		From:              d.from,
		To:                row.email,
		Subject:           DigestSubject(c),
		Text:              text,
		HTML:              html,
		MessageID:         fmt.Sprintf("digest.%d.%s@%s", row.userID, strings.ReplaceAll(row.period, ":", "."), host),
		Date:              d.now(),
		ListID:            fmt.Sprintf("followfeed digests <digests.%s>", host),
		UnsubscribeURL:    c.UnsubscribeURL,
		UnsubscribeMailto: d.mailto,
		AutoSubmitted:     true,
	}, nil
}

// ---- previews and by-hand digests ----

// Preview builds what the user's next digest would hold now, without
// reserving anything.
func (d *Digester) Preview(ctx context.Context, userID int64) (DigestContent, error) {
	row := digestRow{userID: userID, kind: "manual"}
	var from, to int64
	err := d.db.Pool.QueryRow(ctx, `
		SELECT u.digest_watermark, (SELECT high_seq FROM match_state), u.timezone, u.digest_frequency, u.link_epoch, coalesce(u.email, '')
		FROM users u WHERE u.id = $1`, userID).Scan(&from, &to, &row.tz, &row.freq, &row.epoch, &row.email)
	if err != nil {
		return DigestContent{}, database.NotFound(err, fmt.Sprintf("reading user %d", userID))
	}
	if row.freq == Daily || row.freq == Weekly {
		row.kind = string(row.freq)
	}
	row.from, row.to = &from, &to
	cs, err := d.build(ctx, []digestRow{row})
	if err != nil {
		return DigestContent{}, err
	}
	return cs[0], nil
}

// SendNow creates (or finds) the ledger row of the user's next digest and
// sends it at once, through the same ledger as scheduled digests: it uses
// the period of the next scheduled digest when there is one, so that digest
// is not sent again later.
func (d *Digester) SendNow(ctx context.Context, userID int64) (Outcome, error) {
	var id int64
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		var tz, freq string
		var next *time.Time
		var watermark int64
		if err := tx.QueryRow(ctx, `SELECT timezone, digest_frequency, digest_next_at, digest_watermark FROM users WHERE id = $1 FOR UPDATE`,
			userID).Scan(&tz, &freq, &next, &watermark); err != nil {
			return database.NotFound(err, fmt.Sprintf("reading user %d", userID))
		}
		period, kind := "manual:"+strconv.FormatInt(watermark, 10), "manual"
		if next != nil && (Frequency(freq) == Daily || Frequency(freq) == Weekly) {
			loc := zone(tz)
			period, kind = Period(Frequency(freq), *next, loc), freq
		}
		var err error
		id, err = upsertDigest(ctx, tx, userID, period, kind)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return d.Send(ctx, id)
}

// ---- unsubscribe and confirmation ----

// checkLink verifies a signed link against the user's current epoch.
func (d *Digester) checkLink(ctx context.Context, tx pgx.Tx, tok string, action auth.Action) (auth.Link, string, error) {
	l, err := d.signer.Verify(tok, action)
	if err != nil {
		return l, "", err
	}
	var epoch int64
	var email string
	err = tx.QueryRow(ctx, `SELECT link_epoch, coalesce(email, '') FROM users WHERE id = $1 FOR UPDATE`, l.UserID).Scan(&epoch, &email)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && epoch != l.Epoch) {
		return l, "", auth.ErrBadLink
	}
	return l, email, err
}

// Unsubscribe (RFC 8058 one-click) turns the user's digests off and
// suppresses their address until they confirm it again. It is idempotent
// and needs no session: the signed token is the authority. It returns the
// address that was unsubscribed.
func (d *Digester) Unsubscribe(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := d.checkLink(ctx, tx, tok, auth.ActionUnsubscribe)
		if err != nil {
			return err
		}
		email = addr
		if _, err := tx.Exec(ctx, `UPDATE users SET digest_frequency = 'off', digest_next_at = NULL, updated_at = now() WHERE id = $1`, l.UserID); err != nil {
			return err
		}
		return suppressAddress(ctx, tx, addr, "unsubscribe", "one-click unsubscribe")
	})
	return email, err
}

// CheckUnsubscribe says whose link tok is, without changing anything (the
// page a GET shows).
func (d *Digester) CheckUnsubscribe(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		_, email, err = d.checkLink(ctx, tx, tok, auth.ActionUnsubscribe)
		return err
	})
	return email, err
}

// ManageUser resolves a "manage preferences" link to its user.
func (d *Digester) ManageUser(ctx context.Context, tok string) (int64, error) {
	var uid int64
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, _, err := d.checkLink(ctx, tx, tok, auth.ActionManage)
		uid = l.UserID
		return err
	})
	return uid, err
}

// emailHash binds a confirmation link to one address.
func emailHash(email string) []byte {
	h := sha256.Sum256([]byte(strings.ToLower(email)))
	return h[:8]
}

// ConfirmURL is the double opt-in link for the user's current address.
func (d *Digester) ConfirmURL(userID, epoch int64, email string) string {
	return d.abs("/confirm/"+d.signer.Sign(auth.Link{Action: auth.ActionConfirm, UserID: userID, Epoch: epoch, Data: emailHash(email)}), "", "")
}

// SendConfirmation mails the double opt-in link to the user's address, if
// it is still the unconfirmed address asked about.
func (d *Digester) SendConfirmation(ctx context.Context, userID int64, email string) error {
	var current string
	var confirmed bool
	var epoch int64
	err := d.db.Pool.QueryRow(ctx, `SELECT coalesce(email, ''), email_confirmed_at IS NOT NULL, link_epoch FROM users WHERE id = $1`, userID).
		Scan(&current, &confirmed, &epoch)
	if err != nil {
		return database.NotFound(err, fmt.Sprintf("reading user %d", userID))
	}
	if !strings.EqualFold(current, email) || confirmed {
		return nil // changed again, or confirmed meanwhile: nothing to ask
	}
	subject, text, html, err := RenderConfirm(ConfirmContent{Email: email, ConfirmURL: d.ConfirmURL(userID, epoch, email),
		ManageURL: d.abs("/settings", "token", d.signer.Sign(auth.Link{Action: auth.ActionManage, UserID: userID, Epoch: epoch})) + "#email"})
	if err != nil {
		return err
	}
	h := emailHash(email)
	_, err = d.sender.Send(ctx, &mail.Message{From: d.from, To: email, Subject: subject, Text: text, HTML: html,
		MessageID: fmt.Sprintf("confirm.%d.%d.%x@%s", userID, epoch, h, d.base.Hostname()), Date: d.now(), AutoSubmitted: true})
	return err
}

// CheckConfirm says which address tok would confirm, changing nothing.
func (d *Digester) CheckConfirm(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := d.checkLink(ctx, tx, tok, auth.ActionConfirm)
		if err != nil {
			return err
		}
		if addr == "" || string(l.Data) != string(emailHash(addr)) {
			return auth.ErrBadLink
		}
		email = addr
		return nil
	})
	return email, err
}

// Confirm confirms the address a confirmation link was made for: digests may
// go to it (its suppression, if any, is lifted) and the next digest is
// scheduled. It returns the confirmed address.
func (d *Digester) Confirm(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := d.checkLink(ctx, tx, tok, auth.ActionConfirm)
		if err != nil {
			return err
		}
		if addr == "" || string(l.Data) != string(emailHash(addr)) {
			return auth.ErrBadLink // the address changed since the link was made
		}
		email = addr
		if _, err := tx.Exec(ctx, `DELETE FROM suppressions WHERE email = lower($1)`, addr); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE users SET email_confirmed_at = coalesce(email_confirmed_at, now()), updated_at = now() WHERE id = $1`, l.UserID); err != nil {
			return err
		}
		return scheduleConfirmed(ctx, tx, l.UserID, d.now())
	})
	return email, err
}

// scheduleConfirmed gives a user whose address was just confirmed (in tx)
// a next digest time, when daily or weekly digests are chosen and none is
// set: an unconfirmed address has none.
func scheduleConfirmed(ctx context.Context, tx pgx.Tx, userID int64, now time.Time) error {
	var tz, freq string
	var s DigestSettings
	var weekday int
	if err := tx.QueryRow(ctx, `SELECT timezone, digest_frequency, digest_hour, digest_weekday FROM users WHERE id = $1`, userID).
		Scan(&tz, &freq, &s.Hour, &weekday); err != nil {
		return fmt.Errorf("reading digest settings of user %d: %w", userID, err)
	}
	s.Frequency, s.Weekday = Frequency(freq), time.Weekday(weekday)
	if s.Frequency != Daily && s.Frequency != Weekly {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE users SET digest_next_at = $2 WHERE id = $1 AND digest_next_at IS NULL`,
		userID, NextOccurrence(now, zone(tz), s))
	return err
}
