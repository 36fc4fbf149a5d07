package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/catalog"
)

// State is where a digest stands in the ledger (column digests.state,
// whose CHECK constraint allows exactly these values).
type State string

// The ledger states. A row starts pending, is marked sending right before
// its SMTP transaction, and ends in one of the final states; a temporary
// failure puts it back to pending, and a River job always holds a pending
// row: the send job that carries it retries it, and a row sent outside any
// job (SendNow) gets a job of its own in the transaction that records the
// failure. Every outcome is logged once (see logOutcome).
const (
	StatePending State = "pending" // waiting for (another) send attempt
	StateSending State = "sending" // being handed to the SMTP server
	StateSent    State = "sent"    // the server accepted it
	StateFailed  State = "failed"  // refused, unbuildable or abandoned; not retried
	StateSkipped State = "skipped" // nothing to send, or no address to send to
	StateUnknown State = "unknown" // may have been delivered; never resent
)

// Final reports whether s is a state a row never leaves: sent, failed,
// skipped or unknown.
func (s State) Final() bool {
	switch s {
	case StateSent, StateFailed, StateSkipped, StateUnknown:
		return true
	}
	return false
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
// watermark did not move, so the next digest holds them. Each row closed is
// logged (logOutcome).
func (d *Digester) sweep(ctx context.Context) error {
	// digests_open_idx: only open rows are read; the WHERE spells out
	// StatePending and StateSending as literals because they must match the
	// partial index's predicate for the planner to use it. Ages are
	// measured with the database's clock, which wrote updated_at.
	rows, err := d.db.Pool.Query(ctx, `
		UPDATE digests SET
			state = CASE state WHEN $3 THEN $4 ELSE $5 END,
			smtp_reply = coalesce(smtp_reply || ' ', '') || CASE state
				WHEN $3 THEN '(abandoned while sending; not resent)'
				ELSE '(abandoned: no send attempt for 48 h)' END,
			updated_at = now()
		WHERE state IN ('pending', 'sending')
		  AND updated_at < now() - CASE state WHEN $3 THEN $1::interval ELSE $2::interval END
		RETURNING `+closedColumns,
		abandonedSending, abandonedPending, StateSending, StateUnknown, StateFailed)
	if err != nil {
		return fmt.Errorf("closing abandoned digests: %w", err)
	}
	if err := d.logClosed(ctx, rows); err != nil {
		return fmt.Errorf("closing abandoned digests: %w", err)
	}
	return nil
}

// closedColumns is what an UPDATE of digests returns for logClosed.
const closedColumns = `id, user_id, kind, period, papers, state, coalesce(smtp_reply, '')`

// logClosed logs the outcome of each row of rows (closedColumns), closing
// rows.
func (d *Digester) logClosed(ctx context.Context, rows pgx.Rows) error {
	defer rows.Close()
	for rows.Next() {
		var row digestRow
		var papers int
		var state State
		var reply string
		if err := rows.Scan(&row.id, &row.userID, &row.kind, &row.period, &papers, &state, &reply); err != nil {
			return err
		}
		d.logOutcome(ctx, row, state, papers, reply, time.Time{})
	}
	return rows.Err()
}

// upsertDigest creates (or finds) the ledger row of (user, period), created
// at at (the service's clock: windowStarts reads it back).
func upsertDigest(ctx context.Context, tx pgx.Tx, userID int64, period, kind string, at time.Time) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO digests (user_id, period, kind, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_id, period) DO NOTHING RETURNING id
		)
		SELECT id FROM ins UNION ALL SELECT id FROM digests WHERE user_id = $1 AND period = $2
		LIMIT 1`, userID, period, kind, at).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("creating digest %s of user %d: %w", period, userID, err)
	}
	return id, nil
}

// GiveUp marks the rows of ids that are still pending as failed, keeping
// the last SMTP reply and appending reason, and logs each. The send job
// calls it when River will not retry any more: without it those rows
// would stay pending for ever, since nothing else enqueues a scheduled
// digest twice. Rows in any other state are left alone. It returns how
// many rows it marked.
func (d *Digester) GiveUp(ctx context.Context, ids []int64, reason string) (int, error) {
	rows, err := d.db.Pool.Query(ctx, `
		UPDATE digests SET state = $3,
			smtp_reply = coalesce(smtp_reply || ' ', '') || '(' || $2 || ')', updated_at = now()
		WHERE id = ANY($1) AND state = $4
		RETURNING `+closedColumns, ids, reason, StateFailed, StatePending)
	if err != nil {
		return 0, fmt.Errorf("giving up on %d digests: %w", len(ids), err)
	}
	if err := d.logClosed(ctx, rows); err != nil {
		return 0, fmt.Errorf("giving up on %d digests: %w", len(ids), err)
	}
	return int(rows.CommandTag().RowsAffected()), nil
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
	// retry, when set, makes a temporary failure queue a send job of its
	// own for the row (Digester.RetryDelay later, in the transaction that
	// records it): no job carries the rows of SendNow.
	retry bool
}

type waitingOutcome struct {
	id    int64
	state State
	reply string
}

// record has out's state written, sets it on out and logs it. Only an
// outcome that a crash may leave at "sending" without harm waits for the
// next write: "sent" and "unknown" (a retry records "unknown" and resends
// nothing, the at-most-once policy) and "skipped" (never marked
// "sending"). "pending" (the message certainly did not go: a retry must
// resend it, with its retry job when l.retry) and "failed" are written at
// once, a bounce together with the address's suppression.
func (l *outcomes) record(ctx context.Context, out *Outcome, row digestRow, state State, reply string, suppress bool) error {
	if err := l.flush(ctx); err != nil {
		return err
	}
	reply = truncate(reply, 1000)
	var retryAt time.Time
	switch state {
	case StateSent, StateUnknown, StateSkipped:
		l.waiting = &waitingOutcome{id: row.id, state: state, reply: reply}
	default:
		if state == StatePending && l.retry {
			retryAt = l.d.now().Add(RetryDelay)
		}
		err := l.d.db.InTx(ctx, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, setOutcome+` WHERE id = $1`, row.id, state, reply)
			if err != nil {
				return fmt.Errorf("recording digest %d as %s: %w", row.id, state, err)
			}
			if tag.RowsAffected() == 0 {
				// The user was erased meanwhile (EraseUser): no retry,
				// and no suppression of an address nobody has now.
				return errGone
			}
			if !retryAt.IsZero() {
				if err := l.d.enq.EnqueueDigestRetry(ctx, tx, row.id, retryAt); err != nil {
					return fmt.Errorf("queueing the retry of digest %d: %w", row.id, err)
				}
			}
			if suppress {
				return l.d.addrs.Suppress(ctx, tx, row.email, "bounce", reply)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	out.State, out.Reply, out.RetryAt = state, reply, retryAt
	l.d.logOutcome(ctx, row, state, out.Papers, reply, retryAt)
	return nil
}

// RetryDelay is how long after a temporary failure the send job that
// SendNow queues for its digest first retries it; further retries back off
// as any send job's (worker's retry policy).
const RetryDelay = time.Minute

// logOutcome writes the one log line of a digest's outcome, with the user,
// the digest's id, kind and period, its papers and the SMTP reply (or the
// reason): INFO when it was sent or skipped, WARN when it failed, may have
// been delivered (unknown) or will be retried (pending; retryAt is when,
// zero when the job that carries it decides).
func (d *Digester) logOutcome(ctx context.Context, row digestRow, state State, papers int, reply string, retryAt time.Time) {
	level, msg := slog.LevelWarn, "digest "+string(state)
	switch state {
	case StateSent, StateSkipped:
		level = slog.LevelInfo
	case StateUnknown:
		msg = "digest may have been delivered; not resent"
	case StatePending:
		msg = "digest will be retried"
	}
	if !d.logger.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.Int64("user", row.userID), slog.Int64("digest", row.id), slog.String("kind", row.kind),
		slog.String("period", row.period), slog.Int("papers", papers), slog.String("reply", reply)}
	if !retryAt.IsZero() {
		attrs = append(attrs, slog.Time("retry_at", retryAt))
	}
	d.logger.LogAttrs(ctx, level, msg, attrs...)
}

// setOutcome is the UPDATE of a digest's final (or pending) state; $1 is
// the row, $2 the state, $3 the SMTP reply or reason.
const setOutcome = `UPDATE digests SET state = $2, smtp_reply = $3, updated_at = now(),
	sent_at = CASE WHEN $2 = '` + string(StateSent) + `' THEN now() END`

// sending marks row "sending" (committed before its SMTP transaction
// starts), with the window's papers and the papers the mail lists
// (shown: what a best-first instant alert counts against the day's
// budget), writing the waiting outcome in the same statement.
func (l *outcomes) sending(ctx context.Context, row digestRow, messageID string, papers, shown int) error {
	w := l.waiting
	if w == nil {
		w = &waitingOutcome{} // id 0: no row
	}
	tag, err := l.d.db.Pool.Exec(ctx, `
		WITH waiting AS (`+setOutcome+` WHERE id = $1 AND $1 <> 0)
		UPDATE digests SET state = $8, attempts = attempts + 1, email = $5, message_id = $6, papers = $7, shown = $9, updated_at = now()
		WHERE id = $4`, w.id, w.state, w.reply, row.id, row.email, messageID, papers, StateSending, shown)
	if err != nil {
		return fmt.Errorf("marking digest %d sending: %w", row.id, err)
	}
	l.waiting = nil
	if tag.RowsAffected() == 0 {
		// Erased since it was reserved (EraseUser deleted the row
		// under the user's lock): the message is not sent.
		return errGone
	}
	return nil
}

// errGone is a ledger row that is no longer there: its user was erased
// (EraseUser) while a job was building or sending it. The digest is not
// sent and not retried.
var errGone = errors.New("the digest's user was erased")

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
// each window starts where the previous one ends. One transaction of at
// most four statements: the users' schedule rows, the locked read, the
// final states (when any; each logged once committed) and the windows
// (when any are new).
func (d *Digester) reserve(ctx context.Context, ids []int64) (rows []digestRow, done map[int64]State, later []int64, err error) {
	var final finalStates // logged once committed
	err = d.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := ensureSchedules(ctx, tx, ids); err != nil {
			return err
		}
		byID, err := lockDigests(ctx, tx, ids, d.now())
		if err != nil {
			return err
		}
		var t triage
		if t, err = triageDigests(ids, byID); err != nil {
			return err
		}
		rows, done, later = t.rows, t.done, t.later
		if err := t.final.record(ctx, tx); err != nil {
			return err
		}
		final = t.final
		return reserveWindows(ctx, tx, t.reserve, rows)
	})
	if err == nil {
		for i, row := range final.rows {
			d.logOutcome(ctx, row, final.states[i], row.papers, final.reasons[i], time.Time{})
		}
	}
	return rows, done, later, err
}

// ensureSchedules gives every digest's user a schedule row (one made only
// by a by-hand digest may lack it), which the reservation locks and moves
// the watermark of.
func ensureSchedules(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO digest_schedules (user_id) SELECT DISTINCT user_id FROM digests WHERE id = ANY($1)
		ON CONFLICT (user_id) DO NOTHING`, ids); err != nil {
		return fmt.Errorf("creating the schedules of %d digests' users: %w", len(ids), err)
	}
	return nil
}

// lockDigests reads the ledger rows ids with what deciding them needs (the
// user's address and its state, the schedule's settings, whether the
// user's pause is in effect at now), locking the
// digest, user and schedule rows until tx ends.
func lockDigests(ctx context.Context, tx pgx.Tx, ids []int64, now time.Time) (map[int64]digestRow, error) {
	r, err := tx.Query(ctx, `
		SELECT g.id, g.user_id, g.period, g.kind, g.state, g.from_seq, g.to_seq, g.attempts, g.papers,
		       coalesce(u.email, ''), u.email_confirmed_at IS NOT NULL,
		       `+account.SuppressedSQL+`,
		       u.timezone, d.frequency, d.send_empty, d.skip_no_announcement, u.link_epoch,
		       d.paper_order, d.max_papers, d.keep_followed, `+PausedSQL("$2")+`
		FROM digests g JOIN `+account.UsersTable+` u ON u.id = g.user_id JOIN digest_schedules d ON d.user_id = g.user_id
		WHERE g.id = ANY($1)
		ORDER BY g.id
		FOR UPDATE OF g, u, d`, ids, now)
	if err != nil {
		return nil, fmt.Errorf("reading %d digests: %w", len(ids), err)
	}
	byID := map[int64]digestRow{}
	for r.Next() {
		var row digestRow
		if err := r.Scan(&row.id, &row.userID, &row.period, &row.kind, &row.state, &row.from, &row.to,
			&row.attempts, &row.papers, &row.email, &row.confirmed, &row.suppressed, &row.tz, &row.freq, &row.sendEmpty, &row.skipNoAnn, &row.epoch,
			&row.order, &row.maxPapers, &row.keepFollowed, &row.paused); err != nil {
			r.Close()
			return nil, err
		}
		byID[row.id] = row
	}
	r.Close()
	if err := r.Err(); err != nil {
		return nil, err
	}
	return byID, nil
}

// triage is what reserve decided about each row: rows to build now (in
// the order of ids), those of them whose window is still to be reserved,
// rows with nothing left to do (done; final holds those whose new state
// is to be written) and rows of a user already in this round (later).
type triage struct {
	rows    []digestRow
	reserve []int64
	done    map[int64]State
	final   finalStates
	later   []int64
}

// triageDigests decides each of ids (read into byID): a row in a final
// state is done; one left "sending" by a process that died is unknown (it
// may have been delivered: at most once); one whose address or settings
// rule mail out, or whose user is paused, is skipped; of a user's rows,
// one per round is built.
func triageDigests(ids []int64, byID map[int64]digestRow) (triage, error) {
	t := triage{done: map[int64]State{}}
	users := map[int64]bool{}
	for _, id := range ids {
		row, ok := byID[id]
		if !ok {
			// No row (or no user): the user was erased (EraseUser), and
			// their rows with them. Nothing to send or retry: the id
			// gets no outcome.
			continue
		}
		final := func(state State, reason string) {
			t.done[id] = state
			t.final.add(row, state, reason)
		}
		switch {
		case row.state.Final():
			t.done[id] = row.state
		case row.state == StateSending:
			// The process died while this digest was being handed to
			// the SMTP server: it may have been delivered. At most once.
			final(StateUnknown, "interrupted while sending; not resent")
		case row.email == "":
			final(StateSkipped, "no email address")
		case !row.confirmed:
			final(StateSkipped, "email address not confirmed")
		case row.suppressed:
			final(StateSkipped, "address suppressed (bounced or unsubscribed)")
		case row.freq == Off:
			final(StateSkipped, "digests turned off")
		case row.paused && row.to == nil:
			// The vacation: nothing goes out and the window is not
			// reserved, so the watermark stays and the catch-up digest
			// after the pause holds these papers. (A window reserved
			// before the pause began is sent: its papers are no
			// longer anyone else's.)
			final(StateSkipped, "paused (vacation): the catch-up digest after the pause holds these papers")
		case users[row.userID]:
			t.later = append(t.later, id)
		default:
			users[row.userID] = true
			if row.to == nil {
				t.reserve = append(t.reserve, id)
			}
			t.rows = append(t.rows, row)
		}
	}
	return t, nil
}

// finalStates are ledger rows to close, with the reason each is closed
// for (appended to the SMTP reply of an unknown one, the reply otherwise).
type finalStates struct {
	rows    []digestRow
	states  []State
	reasons []string
}

func (f *finalStates) add(row digestRow, state State, reason string) {
	f.rows, f.states, f.reasons = append(f.rows, row), append(f.states, state), append(f.reasons, reason)
}

// record writes the final states in one statement (none when there are
// none).
func (f *finalStates) record(ctx context.Context, tx pgx.Tx) error {
	if len(f.rows) == 0 {
		return nil
	}
	ids := make([]int64, len(f.rows))
	for i, row := range f.rows {
		ids[i] = row.id
	}
	if _, err := tx.Exec(ctx, `
		UPDATE digests g SET state = f.state,
			smtp_reply = CASE WHEN f.state = $4 THEN coalesce(g.smtp_reply || ' ', '') || '(' || f.reason || ')' ELSE f.reason END,
			updated_at = now()
		FROM unnest($1::bigint[], $2::text[], $3::text[]) AS f(id, state, reason) WHERE g.id = f.id`,
		ids, f.states, f.reasons, StateUnknown); err != nil {
		return fmt.Errorf("recording %d digests: %w", len(ids), err)
	}
	return nil
}

// reserveWindows reserves (watermark, high_seq] for the rows ids (none:
// no statement) and moves each watermark past it, so no other digest of
// the user can include these papers, then sets the windows on rows.
func reserveWindows(ctx context.Context, tx pgx.Tx, ids []int64, rows []digestRow) error {
	if len(ids) == 0 {
		return nil
	}
	rr, err := tx.Query(ctx, `
		WITH w AS (
			UPDATE digests g SET from_seq = d.watermark,
				to_seq = greatest(`+catalog.HighSeqSQL+`, d.watermark)
			FROM digest_schedules d WHERE g.id = ANY($1) AND d.user_id = g.user_id
			RETURNING g.id, g.user_id, g.from_seq, g.to_seq
		), moved AS (
			UPDATE digest_schedules d SET watermark = w.to_seq FROM w
			WHERE d.user_id = w.user_id AND d.watermark < w.to_seq
		)
		SELECT id, from_seq, to_seq FROM w`, ids)
	if err != nil {
		return fmt.Errorf("reserving the windows of %d digests: %w", len(ids), err)
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
}
