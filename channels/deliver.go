package channels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/database"
	"followfeed/internal/httpclient"
	"followfeed/internal/text"
	"followfeed/mail"
)

// State is where an event stands in the ledger (channel_events.state).
type State string

// The ledger states: pending until every message of the event was
// accepted (delivered) or it failed for good.
const (
	StatePending   State = "pending"
	StateDelivered State = "delivered"
	StateFailed    State = "failed"
)

// DisableAfter is how long a channel may fail (no successful attempt)
// before it is disabled and its owner mailed.
const DisableAfter = 24 * time.Hour

// Retry-After bounds.
const (
	defaultRetryAfter = 30 * time.Second
	maxRetryAfter     = time.Hour
)

// RetryError is returned by Deliver when the event should be tried again:
// After > 0 when the receiver asked for that wait (429 Retry-After), 0 for
// the caller's back-off (5xx, timeouts, network errors).
type RetryError struct {
	After time.Duration
	Err   error
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// attempt is one request's result.
type attempt struct {
	status     int // 0: no response
	response   string
	err        error
	retryAfter time.Duration
	dur        time.Duration
}

type verdict int

const (
	ok verdict = iota
	retry
	fail
)

func (a attempt) verdict() verdict {
	switch {
	case a.err != nil && errors.Is(a.err, ErrInternalAddress):
		return fail
	case a.err != nil:
		return retry
	case a.status >= 200 && a.status < 300:
		return ok
	case a.status == http.StatusTooManyRequests || a.status == http.StatusRequestTimeout || a.status >= 500:
		return retry
	}
	return fail // 3xx (redirects are not followed) and other 4xx
}

func (v verdict) String() string {
	return [...]string{"delivered", "retry", "failed"}[v]
}

// Deliver sends one event (Standard Webhooks POST, or the chat messages
// rendered from it) and records each attempt in the ledger. It returns nil
// when the event is final (delivered, failed, or its channel gone or
// disabled), and a *RetryError when it should be tried again. Messages of
// a split event already accepted are not resent.
//
// Policy: at least once. An event is marked delivered only after the
// receiver accepted it, so a crash in between resends it under the same
// webhook-id (Matrix: the same transaction id, which the homeserver
// deduplicates); receivers deduplicate on webhook-id.
func (s *Service) Deliver(ctx context.Context, eventID int64) error {
	var (
		channelID      int64
		wid, typ, body string
		state          State
		partsDone      int
	)
	err := s.db.Pool.QueryRow(ctx, `
		SELECT channel_id, webhook_id, type, body, state, parts_done FROM channel_events WHERE id = $1`, eventID).
		Scan(&channelID, &wid, &typ, &body, &state, &partsDone)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // the channel was deleted
	}
	if err != nil {
		return fmt.Errorf("reading event %d: %w", eventID, err)
	}
	c, err := s.scanChannel(s.db.Pool.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels WHERE id = $1`, channelID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading channel %d: %w", channelID, err)
	}
	s.expireRotation(c)
	if state != StatePending {
		return nil
	}
	if !c.Enabled {
		return s.finish(ctx, eventID, StateFailed, 0, "channel disabled: "+c.DisabledReason)
	}
	if c.CredentialsUnreadable {
		return s.finish(ctx, eventID, StateFailed, 0, errUnsealable.Error()+"; rotate the webhook's secret, or enter the channel's URL or access token again")
	}
	parts, err := messages(c.Type, []byte(body))
	if err != nil {
		return s.finish(ctx, eventID, StateFailed, 0, err.Error())
	}
	for i := partsDone; i < len(parts); i++ {
		a := s.send(ctx, c, wid, i, parts[i])
		v := a.verdict()
		final, err := s.record(ctx, c, eventID, a, v, i+1, len(parts))
		if errors.Is(err, errChannelGone) {
			return nil
		}
		if err != nil {
			return err
		}
		if v == ok {
			continue
		}
		if final {
			return nil
		}
		cause := a.err
		if cause == nil {
			cause = fmt.Errorf("%s answered %d", c.Type, a.status)
		}
		return &RetryError{After: a.retryAfter, Err: cause}
	}
	return nil
}

// send makes one request. part is the message's index in a split event.
func (s *Service) send(ctx context.Context, c *Channel, wid string, part int, body []byte) attempt {
	start := time.Now()
	req, err := s.request(ctx, c, wid, part, body)
	if err != nil {
		err = c.redactErr(err)
		return attempt{err: err, response: err.Error()}
	}
	resp, err := s.client.Do(req)
	a := attempt{dur: time.Since(start)}
	if err != nil {
		// The error names the request's URL, which for Slack and Discord
		// is the credential: it is redacted before anything records it.
		a.err = c.redactErr(err)
		a.response = a.err.Error()
		if errors.Is(err, ErrInternalAddress) {
			a.response = "refused: the host resolves to an internal address"
		}
		return a
	}
	defer resp.Body.Close()
	data := readCapped(resp.Body)
	a.dur = time.Since(start)
	a.status = resp.StatusCode
	a.response = excerpt(c.redact(string(data)))
	if resp.StatusCode == http.StatusTooManyRequests {
		a.retryAfter = retryAfter(resp.Header.Get("Retry-After"), data, s.now())
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		a.response = "redirect to " + text.Truncate(c.redact(resp.Header.Get("Location")), 200) + " not followed; give the final URL"
	}
	return a
}

// request builds the HTTP request of one message.
func (s *Service) request(ctx context.Context, c *Channel, wid string, part int, body []byte) (*http.Request, error) {
	switch c.Type {
	case Matrix:
		txn := wid
		if part > 0 {
			txn = wid + "." + strconv.Itoa(part)
		}
		u := c.URL + "/_matrix/client/v3/rooms/" + url.PathEscape(c.RoomID) + "/send/m.room.message/" + url.PathEscape(txn)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.accessToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", httpclient.UserAgent)
		return req, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", httpclient.UserAgent)
	if c.Type == Webhook {
		ts := s.now()
		sig, err := Sign(c.signingSecrets(), wid, ts, body)
		if err != nil {
			return nil, err
		}
		req.Header.Set("webhook-id", wid)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set("webhook-signature", sig)
	}
	return req, nil
}

// retryAfter reads a 429's wait: the Retry-After header (seconds or an
// HTTP date), else Discord's "retry_after" (seconds) or Matrix's
// "retry_after_ms" in the body; at least a second, at most an hour.
func retryAfter(h string, body []byte, now time.Time) time.Duration {
	d := time.Duration(0)
	if h = strings.TrimSpace(h); h != "" {
		if n, err := strconv.ParseFloat(h, 64); err == nil && n >= 0 {
			d = time.Duration(n * float64(time.Second))
		} else if t, err := http.ParseTime(h); err == nil {
			d = t.Sub(now)
		}
	}
	if d == 0 {
		var b struct {
			RetryAfter   *float64 `json:"retry_after"`
			RetryAfterMS *int64   `json:"retry_after_ms"`
		}
		if json.Unmarshal(body, &b) == nil {
			switch {
			case b.RetryAfterMS != nil:
				d = time.Duration(*b.RetryAfterMS) * time.Millisecond
			case b.RetryAfter != nil:
				d = time.Duration(*b.RetryAfter * float64(time.Second))
			}
		}
	}
	if d <= 0 {
		d = defaultRetryAfter
	}
	return min(max(d, time.Second), maxRetryAfter)
}

// excerpt is the start of a response body as ledger text.
func excerpt(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return ""
	}
	return text.Truncate(s, 500)
}

// record writes one attempt: the attempts row (keeping the channel's last
// 100), the event's counters and, by verdict, its state and the channel's
// health. A failure while the channel has been failing for DisableAfter
// disables it and queues the owner's mail. final reports whether the
// event is now closed (failed) rather than waiting for a retry.
func (s *Service) record(ctx context.Context, c *Channel, eventID int64, a attempt, v verdict, partsDone, parts int) (final bool, err error) {
	now := s.now()
	var status *int
	if a.status != 0 {
		status = &a.status
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		final = false
		// channel_attempts_channel_idx: the 101st newest row bounds the prune.
		if _, err := tx.Exec(ctx, `
			WITH ins AS (
				INSERT INTO channel_attempts (channel_id, event_id, at, status, outcome, response, duration_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7)
			)
			DELETE FROM channel_attempts WHERE channel_id = $1 AND id <= (
				SELECT id FROM channel_attempts WHERE channel_id = $1 ORDER BY id DESC OFFSET 99 LIMIT 1)`,
			c.ID, eventID, now, status, v.String(), a.response, a.dur.Milliseconds()); err != nil {
			return fmt.Errorf("recording an attempt of event %d: %w", eventID, err)
		}
		if v == ok {
			if _, err := tx.Exec(ctx, `
				UPDATE channel_events SET attempts = attempts + 1, parts_done = $2, last_status = $3, last_response = $4,
					state = CASE WHEN $5 THEN 'delivered' ELSE state END,
					delivered_at = CASE WHEN $5 THEN $6::timestamptz END, updated_at = $6
				WHERE id = $1`, eventID, partsDone, status, a.response, partsDone >= parts, now); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE channels SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, c.ID)
			return err
		}
		var since time.Time
		var enabled bool
		if err := tx.QueryRow(ctx, `
			UPDATE channels SET failing_since = coalesce(failing_since, $2) WHERE id = $1
			RETURNING failing_since, enabled`, c.ID, now).Scan(&since, &enabled); err != nil {
			return err
		}
		final = v == fail
		disable := enabled && !since.After(now.Add(-DisableAfter))
		if disable {
			final = true
			reason := fmt.Sprintf("no successful delivery since %s; last: %s", since.UTC().Format(time.RFC3339), lastWords(a))
			if _, err := tx.Exec(ctx, `
				UPDATE channels SET enabled = false, disabled_reason = $2, due_at = NULL, updated_at = $3 WHERE id = $1`,
				c.ID, text.Truncate(reason, 500), now); err != nil {
				return err
			}
			if err := s.enq.EnqueueChannelDisabled(ctx, tx, c.ID); err != nil {
				return err
			}
			s.logger.WarnContext(ctx, "channel disabled", "channel", c.ID, "failing_since", since, "last", lastWords(a))
		}
		st := StatePending
		if final {
			st = StateFailed
		}
		_, err := tx.Exec(ctx, `
			UPDATE channel_events SET attempts = attempts + 1, last_status = $2, last_response = $3, state = $4, updated_at = $5
			WHERE id = $1`, eventID, status, a.response, st, now)
		return err
	})
	if database.IsForeignKeyViolation(err, "") {
		return true, errChannelGone
	}
	return final, err
}

// errChannelGone: the channel (and its event) went while a request was
// under way, deleted by its user or with the user (EraseUser). Nothing
// is left to record, send or retry.
var errChannelGone = errors.New("the channel was deleted")

func lastWords(a attempt) string {
	if a.status != 0 {
		return fmt.Sprintf("HTTP %d %s", a.status, text.Truncate(a.response, 200))
	}
	return text.Truncate(a.response, 200)
}

// finish puts an event in a final state without an attempt.
func (s *Service) finish(ctx context.Context, eventID int64, st State, status int, reason string) error {
	_, err := s.db.Pool.Exec(ctx, `
		UPDATE channel_events SET state = $2, last_response = $3, updated_at = $4 WHERE id = $1 AND state = 'pending'`,
		eventID, st, text.Truncate(reason, 500), s.now())
	if err != nil {
		return fmt.Errorf("closing event %d: %w", eventID, err)
	}
	return nil
}

// GiveUp fails an event still pending after its job's last attempt.
func (s *Service) GiveUp(ctx context.Context, eventID int64, reason string) error {
	return s.finish(ctx, eventID, StateFailed, 0, reason)
}

// MailDisabled tells a disabled channel's owner, at their confirmed and
// unsuppressed address (nobody else is mailed), what happened and where to
// enable it again.
func (s *Service) MailDisabled(ctx context.Context, channelID int64) error {
	if s.sender == nil || s.from == nil {
		return nil
	}
	c, err := s.scanChannel(s.db.Pool.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels WHERE id = $1`, channelID))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && c.Enabled {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading disabled channel %d: %w", channelID, err)
	}
	var email string
	err = s.db.Pool.QueryRow(ctx, `SELECT coalesce(u.email, '') FROM `+account.UsersTable+` u WHERE u.id = $1 AND `+account.ReachableSQL, c.UserID).
		Scan(&email)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && email == "" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the owner of disabled channel %d: %w", channelID, err)
	}
	host := "" // a URL sealed under another SECRET_KEY: the mail names no host
	if u, err := url.Parse(c.URL); err == nil {
		host = u.Host
	}
	now := s.now()
	msg := &mail.Message{
		From: s.from, To: email, Date: now, AutoSubmitted: true,
		Subject: fmt.Sprintf("followfeed: your %s channel to %s was disabled", c.Type, host),
		Text: fmt.Appendf(nil, "Deliveries to your %s channel (%s) have failed for more than 24 hours, so it was disabled.\n\n"+
			"Last error: %s\n\nFix the receiver, enable the channel again at %s/settings/channels "+
			"(or PATCH /v1/me/channels/%d with {\"enabled\": true}), then send a test event from there. Papers matched meanwhile are in your feed.\n",
			c.Type, host, c.DisabledReason, s.base, channelID),
		MessageID: fmt.Sprintf("channel-disabled.%d.%d@followfeed", channelID, now.Unix()),
	}
	if _, err := s.sender.Send(ctx, msg); err != nil {
		return fmt.Errorf("mailing the owner of channel %d: %w", channelID, err)
	}
	return nil
}

// Delivery is one attempt as GET /v1/me/channels/{id}/deliveries shows it.
type Delivery struct {
	WebhookID  string
	EventType  string
	EventState State
	Papers     int
	At         time.Time
	Status     *int // nil: no HTTP response
	Outcome    string
	Response   string
	DurationMS int64
}

// Deliveries returns the last 100 attempts on the user's channel, newest
// first, or an error wrapping database.ErrNotFound.
func (s *Service) Deliveries(ctx context.Context, userID, id int64) ([]Delivery, error) {
	c, err := s.Get(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	// channel_attempts_channel_idx backwards, then events by primary key.
	rows, err := s.db.Pool.Query(ctx, `
		SELECT e.webhook_id, e.type, e.state, e.papers, a.at, a.status, a.outcome, a.response, a.duration_ms
		FROM channel_attempts a JOIN channel_events e ON e.id = a.event_id
		WHERE a.channel_id = $1 ORDER BY a.id DESC LIMIT 100`, id)
	if err != nil {
		return nil, fmt.Errorf("reading deliveries of channel %d: %w", id, err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.WebhookID, &d.EventType, &d.EventState, &d.Papers, &d.At, &d.Status, &d.Outcome,
			&d.Response, &d.DurationMS); err != nil {
			return nil, err
		}
		d.Response = c.redact(d.Response) // rows written before responses were redacted
		out = append(out, d)
	}
	return out, rows.Err()
}

// EventRetention is how long final (delivered or failed) events stay in
// the ledger; Prune removes older ones with their attempts.
const EventRetention = 30 * 24 * time.Hour

// LedgerRetention is how long a channel remembers a paper it was sent
// (channel_papers): enrichment and late matches come within days, so a
// paper older than this is not matched again in practice.
const LedgerRetention = 90 * 24 * time.Hour

// Prune deletes final events whose last change is older than
// EventRetention (their attempts go with them, ON DELETE CASCADE) and
// returns how many. Pending events are never pruned: a delivery may still
// need them. It runs hourly (channel_prune). There is no index on
// updated_at: each statement walks channel_events_pkey in id (creation)
// order, so old rows come first and a full batch stops early; the last,
// short batch reads the table once, which 30 days of events bound. It
// also deletes ledger rows older than LedgerRetention and secret pages
// past their expiry (channel_papers_sent_idx, channel_reveals_expires_idx),
// which it does not count. Every delete runs in batches of
// database.PruneBatch rows, each its own transaction
// (database.DeleteBatches); run again, it deletes nothing more.
func (s *Service) Prune(ctx context.Context) (int, error) {
	if _, err := s.db.DeleteBatches(ctx, "channel ledgers", `
		DELETE FROM channel_papers WHERE (channel_id, paper_id) IN (
			SELECT channel_id, paper_id FROM channel_papers WHERE sent_at < $2 ORDER BY sent_at LIMIT $1)`,
		s.now().Add(-LedgerRetention)); err != nil {
		return 0, err
	}
	if _, err := s.db.DeleteBatches(ctx, "secret pages", `
		DELETE FROM channel_reveals WHERE nonce IN (
			SELECT nonce FROM channel_reveals WHERE expires_at < $2 ORDER BY expires_at LIMIT $1)`, s.now()); err != nil {
		return 0, err
	}
	n, err := s.db.DeleteBatches(ctx, "channel events", `
		DELETE FROM channel_events WHERE id IN (
			SELECT id FROM channel_events
			WHERE state <> 'pending' AND updated_at < $2
			ORDER BY id LIMIT $1)`, s.now().Add(-EventRetention))
	return int(n), err
}
