package fediverse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/channels"
	"followfeed/internal/text"
)

// The delivery ledger: every activity is a row of ap_activities with its
// exact JSON, and one ap_deliveries row per inbox it goes to. One delivery
// job per inbox (ap_inboxes.queued says one is queued or running) sends the
// inbox's pending rows oldest first. At least once: a row is delivered only
// after the inbox answered 2xx, so a retry, or a job rescued after its
// worker died, sends the same bytes under the same activity id.

// DeadAfter is how long an inbox may fail (no 2xx) before it is disabled
// and its pending deliveries failed.
const DeadAfter = 3 * 24 * time.Hour

// DeliverAttempts covers DeadAfter: backing off from 5 s to JOB_RETRY_MAX
// (1 h by default), 90 attempts span more than three days, so the inbox is
// disabled before River gives up on its job.
const DeliverAttempts = 90

// UnauthorizedAttempts is how many times a delivery is sent while the
// inbox answers it 401 before it fails. A 401 is what a peer answers a
// signature it cannot verify with the key it fetched: after a key rotation
// it may have read the actor document from a cache (it is served with
// max-age 300) or just before the switch, and fetches it again on a later
// failure, as Mastodon does. With the default back-off (from 5 s,
// doubling, ±10%), eight attempts span nine and a half minutes or more.
const UnauthorizedAttempts = 8

// deliverBatch is how many pending deliveries one job reads at a time.
const deliverBatch = 50

// inboxes returns the ids of the inbox URLs (created when new), in order.
func (s *Service) inboxes(ctx context.Context, tx pgx.Tx, urls []string) ([]int64, error) {
	ids := make([]int64, len(urls))
	for i, u := range urls {
		if err := tx.QueryRow(ctx, `
			INSERT INTO ap_inboxes (url, host) VALUES ($1, $2)
			ON CONFLICT (url) DO UPDATE SET url = EXCLUDED.url
			RETURNING id`, u, hostOf(u)).Scan(&ids[i]); err != nil {
			return nil, fmt.Errorf("storing the inbox %s: %w", u, err)
		}
	}
	return ids, nil
}

// publish writes an activity of actorKey (build makes it from its id URL)
// and its deliveries to inboxIDs (disabled and blocked ones skipped), and
// queues a delivery job for each inbox that has none, in tx. It returns the
// activity's row id.
func (s *Service) publish(ctx context.Context, tx pgx.Tx, actorKey, typ string, noteID *int64, build func(id string) any, inboxIDs []int64) (int64, error) {
	id, err := s.writeActivity(ctx, tx, actorKey, typ, noteID, build)
	if err != nil {
		return 0, err
	}
	return id, s.deliver(ctx, tx, []int64{id}, inboxIDs)
}

// deliver adds the deliveries of activities to inboxIDs (disabled and
// blocked ones skipped) and queues a delivery job for each inbox that has
// none, in tx. The inboxes' rows are locked first, in id order, and held
// until commit: DeliverInbox's last check (idle) takes the same lock, so
// either it sees these deliveries and goes on, or it has marked the inbox
// idle before and this queues a new job. (The deliveries' foreign key
// takes a weaker lock on the inbox row that idle's FOR UPDATE would also
// wait for; the explicit lock does not depend on it.)
func (s *Service) deliver(ctx context.Context, tx pgx.Tx, activities, inboxIDs []int64) error {
	if len(activities) == 0 || len(inboxIDs) == 0 {
		return nil
	}
	// FOR UPDATE waits for a concurrent idle() and reads the row as it
	// committed it.
	rows, err := tx.Query(ctx, `
		SELECT id, host, queued FROM ap_inboxes WHERE id = ANY($1) AND disabled_at IS NULL ORDER BY id FOR UPDATE`, inboxIDs)
	if err != nil {
		return fmt.Errorf("locking inboxes: %w", err)
	}
	var live, queue []int64
	var id int64
	var host string
	var queued bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &host, &queued}, func() error {
		if !s.BlockedHost(host) {
			live = append(live, id)
			if !queued {
				queue = append(queue, id)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if len(live) == 0 {
		return nil
	}
	// One statement for every (activity, inbox): a batch's notes to 1,000
	// inboxes are a few thousand rows, written set-wise.
	if _, err := tx.Exec(ctx, `
		INSERT INTO ap_deliveries (inbox_id, activity_id, created_at, updated_at)
		SELECT i, a, $3, $3 FROM unnest($1::bigint[]) AS i CROSS JOIN unnest($2::bigint[]) AS a
		ON CONFLICT DO NOTHING`, live, activities, s.now()); err != nil {
		return fmt.Errorf("writing deliveries: %w", err)
	}
	if len(queue) == 0 {
		return nil // their jobs, queued or running, read pending rows until none is left
	}
	if _, err := tx.Exec(ctx, `UPDATE ap_inboxes SET queued = true WHERE id = ANY($1)`, queue); err != nil {
		return fmt.Errorf("queueing inboxes: %w", err)
	}
	return s.enq.EnqueueDeliveries(ctx, tx, queue)
}

func (s *Service) activityURL(id int64) string { return s.abs(fmt.Sprintf("%s%d", ActivityPrefix, id)) }
func (s *Service) noteURL(id int64) string     { return s.abs(fmt.Sprintf("%s%d", NotePrefix, id)) }

// RetryError is returned by DeliverInbox when the inbox should be tried
// again later (River's back-off).
type RetryError struct{ Err error }

// Error is the cause's message.
func (e *RetryError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *RetryError) Unwrap() error { return e.Err }

// pending is one delivery to make.
type pending struct {
	activity int64
	actorKey string
	body     string
}

// DeliverInbox is an inbox's delivery job: it POSTs the inbox's pending
// activities oldest first, each signed by its actor's key (the instance
// key under the actor's key id), and records each answer:
//
//   - 2xx: delivered (the inbox is healthy again);
//   - 410 Gone: the inbox and its followers are removed, its pending
//     deliveries failed;
//   - 408, 429, 5xx, a timeout or a network error: the job returns a
//     *RetryError and is tried again with back-off, resending the same
//     activity (same id, same bytes); after DeadAfter of failures the
//     inbox is disabled and its pending deliveries failed;
//   - 401: retried as a 5xx is (the peer may not have fetched the
//     actor's current key yet), up to UnauthorizedAttempts 401s for that
//     delivery, after which it failed for good;
//   - another 4xx, a redirect, or an address the guard refuses: that
//     delivery failed for good (the next is tried).
//
// When no pending row is left, finish is called in the transaction that
// marks the inbox idle (the worker completes its job there): a delivery
// added meanwhile either sees the inbox still queued and is read by the
// loop, or sees it idle and queues a new job.
func (s *Service) DeliverInbox(ctx context.Context, inboxID int64, finish func(pgx.Tx) error) error {
	for {
		var url string
		var disabled *time.Time
		err := s.db.Pool.QueryRow(ctx, `SELECT url, disabled_at FROM ap_inboxes WHERE id = $1`, inboxID).Scan(&url, &disabled)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading inbox %d: %w", inboxID, err)
		}
		var batch []pending
		if disabled == nil {
			// ap_deliveries_pending_idx, in activity order.
			rows, err := s.db.Pool.Query(ctx, `
				SELECT d.activity_id, a.actor_key, a.body FROM ap_deliveries d JOIN ap_activities a ON a.id = d.activity_id
				WHERE d.inbox_id = $1 AND d.state = 'pending' ORDER BY d.activity_id LIMIT $2`, inboxID, deliverBatch)
			if err != nil {
				return fmt.Errorf("reading deliveries of inbox %d: %w", inboxID, err)
			}
			var p pending
			_, err = pgx.ForEachRow(rows, []any{&p.activity, &p.actorKey, &p.body}, func() error {
				batch = append(batch, p)
				return nil
			})
			if err != nil {
				return err
			}
		}
		if len(batch) == 0 {
			done, err := s.idle(ctx, inboxID, finish)
			if err != nil || done {
				return err
			}
			continue
		}
		for _, p := range batch {
			a := s.post(ctx, url, p)
			disabled, err := s.record(ctx, inboxID, p.activity, a)
			if err != nil {
				return err // a *RetryError: River backs off and runs the job again
			}
			if disabled {
				break // the loop's next read finds it disabled and ends the job
			}
		}
	}
}

// idle marks the inbox idle and finishes the job when no delivery is
// pending (under the inbox's row lock, which deliver's UPDATE also takes).
func (s *Service) idle(ctx context.Context, inboxID int64, finish func(pgx.Tx) error) (bool, error) {
	done := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var disabled bool
		if err := tx.QueryRow(ctx, `SELECT disabled_at IS NOT NULL FROM ap_inboxes WHERE id = $1 FOR UPDATE`, inboxID).Scan(&disabled); err != nil {
			return err
		}
		var more bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM ap_deliveries WHERE inbox_id = $1 AND state = 'pending')`, inboxID).Scan(&more); err != nil {
			return err
		}
		if more && !disabled {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE ap_inboxes SET queued = false WHERE id = $1`, inboxID); err != nil {
			return err
		}
		done = true
		if finish != nil {
			return finish(tx)
		}
		return nil
	})
	return done, err
}

// outcome is one POST's result.
type outcome struct {
	status   int // 0: no response
	response string
	err      error
	// refused: the guard refused the inbox (not https, an internal
	// address): never retried.
	refused bool
}

// verdicts of an outcome.
const (
	delivered = "delivered"
	retry     = "retry"
	failed    = "failed"
	gone      = "gone"
)

func (o outcome) verdict() string {
	switch {
	case o.refused || o.err != nil && errors.Is(o.err, channels.ErrInternalAddress):
		return failed
	case o.err != nil:
		return retry
	case o.status >= 200 && o.status < 300:
		return delivered
	case o.status == http.StatusGone:
		return gone
	case o.status == http.StatusTooManyRequests || o.status == http.StatusRequestTimeout || o.status >= 500:
		return retry
	case o.status == http.StatusUnauthorized:
		return retry // record fails it after UnauthorizedAttempts
	}
	return failed
}

// post sends one signed activity.
func (s *Service) post(ctx context.Context, inbox string, p pending) outcome {
	if s.BlockedHost(hostOf(inbox)) {
		msg := "refused: " + hostOf(inbox) + " is in ACTIVITYPUB_BLOCKED_DOMAINS"
		return outcome{err: errors.New(msg), response: msg, refused: true}
	}
	if _, err := s.guard.CheckURL("inbox", inbox); err != nil {
		msg := "refused by the guard (internal address or plain http): " + err.Error()
		return outcome{err: errors.New(msg), response: text.Truncate(msg, 500), refused: true}
	}
	k, err := s.signingKey(ctx)
	if err != nil {
		return outcome{err: err, response: err.Error()}
	}
	keyID := s.actorURLOfKey(p.actorKey) + "#main-key"
	req, err := SignPost(ctx, k.private, keyID, inbox, []byte(p.body), s.now().UTC().Format(http.TimeFormat))
	if err != nil {
		return outcome{err: err, response: err.Error()}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		o := outcome{err: err, response: text.Truncate(err.Error(), 500)}
		if errors.Is(err, channels.ErrInternalAddress) {
			o.response = "refused: the host resolves to an internal address"
		}
		return o
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	return outcome{status: resp.StatusCode, response: text.Truncate(strings.ToValidUTF8(string(buf[:n]), "\uFFFD"), 500)}
}

// record writes one attempt's outcome. It returns a *RetryError when the
// inbox should be tried again later, and disabled when the inbox was just
// disabled (410 Gone, or failing for DeadAfter).
func (s *Service) record(ctx context.Context, inboxID, activity int64, o outcome) (disabled bool, err error) {
	now := s.now()
	var status *int
	if o.status != 0 {
		status = &o.status
	}
	var again error
	var v string
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		o := o // a copy per try of the transaction
		disabled, again, v = false, nil, o.verdict()
		if o.status == http.StatusUnauthorized {
			var n int
			if err := tx.QueryRow(ctx, `
				UPDATE ap_deliveries SET unauthorized = unauthorized + 1 WHERE inbox_id = $1 AND activity_id = $2
				RETURNING unauthorized`, inboxID, activity).Scan(&n); err != nil {
				return err
			}
			if n >= UnauthorizedAttempts {
				v = failed
				o.response = text.Truncate(fmt.Sprintf("401 %d times: %s", n, o.response), 500)
			}
		}
		state := "pending"
		switch v {
		case delivered:
			state = "delivered"
		case failed:
			state = "failed"
		}
		if _, err := tx.Exec(ctx, `
			UPDATE ap_deliveries SET attempts = attempts + 1, state = $3, last_status = $4, last_response = $5, updated_at = $6
			WHERE inbox_id = $1 AND activity_id = $2`, inboxID, activity, state, status, o.response, now); err != nil {
			return err
		}
		switch v {
		case delivered:
			_, err := tx.Exec(ctx, `
				UPDATE ap_inboxes SET failing_since = NULL, delivered_at = $2, last_status = $3, last_response = ''
				WHERE id = $1`, inboxID, now, status)
			return err
		case failed:
			_, err := tx.Exec(ctx, `UPDATE ap_inboxes SET last_status = $2, last_response = $3 WHERE id = $1`, inboxID, status, o.response)
			return err
		case gone:
			// The inbox is gone: its followers with it.
			if _, err := tx.Exec(ctx, `DELETE FROM ap_followers WHERE inbox_id = $1 OR personal_id = $1`, inboxID); err != nil {
				return err
			}
			disabled = true
			return s.disable(ctx, tx, inboxID, "410 Gone: the inbox and its followers were removed", status, o.response)
		}
		var since time.Time
		if err := tx.QueryRow(ctx, `
			UPDATE ap_inboxes SET failing_since = coalesce(failing_since, $2), last_status = $3, last_response = $4
			WHERE id = $1 RETURNING failing_since`, inboxID, now, status, o.response).Scan(&since); err != nil {
			return err
		}
		if !since.After(now.Add(-DeadAfter)) {
			disabled = true
			s.logger.WarnContext(ctx, "ActivityPub inbox disabled", "inbox", inboxID, "failing_since", since, "last", o.response)
			return s.disable(ctx, tx, inboxID, fmt.Sprintf("no successful delivery since %s; last: %s",
				since.UTC().Format(time.RFC3339), text.Truncate(o.response, 200)), status, o.response)
		}
		cause := o.err
		if cause == nil {
			cause = fmt.Errorf("the inbox answered %d", o.status)
		}
		again = &RetryError{Err: cause}
		return nil
	})
	if err != nil {
		return false, err
	}
	s.metrics.add(v)
	return disabled, again
}

// disable stops deliveries to an inbox and fails its pending rows.
func (s *Service) disable(ctx context.Context, tx pgx.Tx, inboxID int64, reason string, status *int, response string) error {
	if _, err := tx.Exec(ctx, `
		UPDATE ap_inboxes SET disabled_at = $2, disabled_reason = $3, last_status = $4, last_response = $5 WHERE id = $1`,
		inboxID, s.now(), text.Truncate(reason, 500), status, response); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
		UPDATE ap_deliveries SET state = 'failed', last_response = $2, updated_at = $3 WHERE inbox_id = $1 AND state = 'pending'`,
		inboxID, text.Truncate(reason, 500), s.now())
	return err
}

// GiveUp disables an inbox whose job used its last attempt.
func (s *Service) GiveUp(ctx context.Context, inboxID int64, reason string) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := s.disable(ctx, tx, inboxID, reason, nil, ""); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE ap_inboxes SET queued = false WHERE id = $1`, inboxID)
		return err
	})
}
