package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"followfeed/account"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/mail"
)

// Outcome is what became of one digest.
type Outcome struct {
	DigestID int64
	State    State // final, or StatePending when a job will retry
	// Papers are the papers the digest covers (new since the last one);
	// Shown how many of them it lists (a budget or the caps count the
	// rest, with a link to the feed). Shown is 0 when nothing was built.
	Papers, Shown int
	Reply         string
	// RetryAt is when the send job queued for this pending digest retries
	// it (SendNow's digests); zero when the job that carries the row
	// retries it, or the digest is not pending.
	RetryAt time.Time
}

// ErrRetry wraps a temporary delivery failure: the caller (the job) should
// retry later with backoff.
var ErrRetry = errors.New("temporary delivery failure")

type digestRow struct {
	id, userID   int64
	period, kind string
	state        State
	from, to     *int64
	email        string
	confirmed    bool
	suppressed   bool
	tz           string
	freq         Frequency
	sendEmpty    bool
	skipNoAnn    bool // digest_schedules.skip_no_announcement
	epoch        int64
	attempts     int
	papers       int // digests.papers: set when the row was marked sending
	// The budget's settings (digest_schedules.paper_order, max_papers,
	// keep_followed).
	order        Order
	maxPapers    int
	keepFollowed bool
	// paused: the user's pause holds their deliveries (PausedSQL: from
	// its start until its catch-up).
	paused bool
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
	return d.sendBatch(ctx, ids, sendOptions{})
}

// sendOptions are what SendNow changes in sendBatch.
type sendOptions struct {
	// forceEmpty sends an empty digest even to a user whose send_empty is
	// off (digest --now --force).
	forceEmpty bool
	// ownRetry: no job carries these rows, so a temporary failure queues a
	// send job for the row (Outcome.RetryAt) instead of an ErrRetry error.
	ownRetry bool
}

// sendBatch is SendBatch with opts.
func (d *Digester) sendBatch(ctx context.Context, ids []int64, opts sendOptions) (outs []Outcome, err error) {
	outs = make([]Outcome, 0, len(ids))
	ledger := &outcomes{d: d, retry: opts.ownRetry}
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
		if database.IsUserGone(err) {
			// A user erased while the round was reserved (a schedule
			// row made for them failed): their rows are gone now.
			rows, done, later, err = d.reserve(ctx, ids)
		}
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
			// r shares the papers' renderings in this round, and through
			// d.parts with the other batches.
			r := Renderer{shared: d.parts}
			for i, row := range rows {
				out, err := d.deliver(ctx, row, contents[i], &r, ledger, opts.forceEmpty)
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

// deliver sends one built digest and records its fate in ledger.
// An empty digest is skipped unless the user asked for empty digests
// (send_empty) or forceEmpty is set; a by-hand digest is no exception.
// forceEmpty (digest --now --force) also overrides the skip of an empty
// digest whose window held no arXiv announcement.
func (d *Digester) deliver(ctx context.Context, row digestRow, content DigestContent, r *Renderer, ledger *outcomes, forceEmpty bool) (Outcome, error) {
	out := Outcome{DigestID: row.id, Papers: content.Total}
	if content.Total == 0 && !row.sendEmpty && !forceEmpty {
		return out, ledger.record(ctx, &out, row, StateSkipped, "nothing new", false)
	}
	if content.Total == 0 && content.NoAnnouncement && content.HarvestBehind == "" && row.skipNoAnn && row.kind != "manual" && !forceEmpty {
		return out, ledger.record(ctx, &out, row, StateSkipped, "nothing new: "+NoAnnouncementLine, false)
	}
	if content.spent {
		// A best-first instant alert after the day's budget went on earlier
		// alerts, with nothing that passes it: no mail; the papers are in
		// the feed.
		return out, ledger.record(ctx, &out, row, StateSkipped,
			fmt.Sprintf("the day's budget of %d papers is spent; the papers are in the feed", row.maxPapers), false)
	}
	out.Shown = content.shown()
	msg, err := d.message(row, content, r)
	if err != nil {
		// This digest cannot be rendered: it fails alone (the reason in
		// the ledger), and the rest of the batch goes on.
		return out, ledger.record(ctx, &out, row, StateFailed, "could not build the message: "+err.Error(), false)
	}
	if err := ledger.sending(ctx, row, msg.MessageID, content.Total, out.Shown); err != nil {
		return out, d.gone(ctx, row, err)
	}
	reply, sendErr := d.sender.Send(ctx, msg)
	rec := context.WithoutCancel(ctx) // see SendBatch
	if sendErr == nil {
		return out, ledger.record(rec, &out, row, StateSent, reply, false)
	}
	var se *mail.SendError
	if !errors.As(sendErr, &se) {
		se = &mail.SendError{Kind: mail.Temporary, Err: sendErr}
	}
	msgText := se.Error()
	switch se.Kind {
	case mail.Permanent:
		return out, d.gone(ctx, row, ledger.record(rec, &out, row, StateFailed, msgText, se.Recipient))
	case mail.Ambiguous:
		return out, ledger.record(rec, &out, row, StateUnknown, msgText, false)
	default:
		if err := ledger.record(rec, &out, row, StatePending, msgText, false); err != nil {
			return out, d.gone(ctx, row, err)
		}
		if !out.RetryAt.IsZero() {
			return out, nil // its own send job retries it
		}
		return out, fmt.Errorf("sending digest %d: %w: %v", row.id, ErrRetry, sendErr)
	}
}

// gone is err, or nil when err says the row's user was erased while the
// digest was built or sent (errGone): that digest is done, unsent or
// sent, and logged so.
func (d *Digester) gone(ctx context.Context, row digestRow, err error) error {
	if !errors.Is(err, errGone) {
		return err
	}
	d.logger.InfoContext(ctx, "digest dropped: its user was erased", "user", row.userID, "digest", row.id,
		"kind", row.kind, "period", row.period)
	return nil
}

// message renders c for row's user. Its bodies are r's buffers
// (Renderer.DigestReused): the message is sent, and forgotten, before r
// renders the next.
func (d *Digester) message(row digestRow, c DigestContent, r *Renderer) (*mail.Message, error) {
	text, html, err := r.DigestReused(c)
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

// Preview builds what the user's next digest would hold now, without
// reserving anything.
func (d *Digester) Preview(ctx context.Context, userID int64) (DigestContent, error) {
	return d.preview(ctx, userID, true)
}

// preview is Preview; without rank the papers are not ranked (newest
// first), for a caller that wants the counts only.
func (d *Digester) preview(ctx context.Context, userID int64, rank bool) (DigestContent, error) {
	row := digestRow{userID: userID, kind: "manual"}
	var from, to int64
	err := d.db.Pool.QueryRow(ctx, `
		SELECT coalesce(d.watermark, 0), `+catalog.HighSeqSQL+`, u.timezone, coalesce(d.frequency, 'off'),
		       u.link_epoch, coalesce(u.email, ''),
		       coalesce(d.paper_order, 'newest'), coalesce(d.max_papers, 0), coalesce(d.keep_followed, true)
		FROM `+account.UsersTable+` u LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.id = $1`, userID).Scan(&from, &to, &row.tz, &row.freq, &row.epoch, &row.email,
		&row.order, &row.maxPapers, &row.keepFollowed)
	if err != nil {
		return DigestContent{}, database.NotFound(err, fmt.Sprintf("reading user %d", userID))
	}
	if row.freq == Daily || row.freq == Weekly {
		row.kind = string(row.freq)
	}
	row.from, row.to = &from, &to
	if !rank {
		row.order = OrderNewest
	}
	cs, err := d.build(ctx, []digestRow{row})
	if err != nil {
		return DigestContent{}, err
	}
	return cs[0], nil
}
