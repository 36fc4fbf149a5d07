package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// The lab's loader: what the soak writes to channel_events,
// channel_attempts and channel_papers goes through it. People's channels
// go through Service (Create, Collect, Deliver).

// BulkEvent is one delivered event for BulkLoadLedger: channel ChannelID
// was sent Papers (whose ids are PaperIDs, in the same order) at At, and
// the receiver took it at the first attempt.
type BulkEvent struct {
	ChannelID int64
	At        time.Time
	Papers    []PaperJSON
	PaperIDs  []int64
}

// bulkEvents is how many events BulkLoadLedger writes per statement.
const bulkEvents = 1000

// BulkLoadLedger writes delivered events in tx as Collect and Deliver
// leave them, each at its At: the event (type papers.matched, its body the
// JSON a webhook receives, a new webhook-id, delivered at the first
// attempt with status 200), its attempt, and the channel's record of its
// papers (channel_papers; a paper recorded already keeps its first
// record). As Deliver does, only each channel's newest 100 attempts stay.
// It is for lab datasets (the soak's year of deliveries), not for
// channels: nothing is sent, no job is queued, no watermark moves, and the
// channels must exist. It returns how many events it wrote.
func BulkLoadLedger(ctx context.Context, tx pgx.Tx, events iter.Seq[BulkEvent]) (int, error) {
	n := 0
	channels := map[int64]bool{}
	err := database.Batches(events, bulkEvents, func(batch []BulkEvent) error {
		chans, ats, bodies, hooks, counts := make([]int64, len(batch)), make([]time.Time, len(batch)), make([]string, len(batch)),
			make([]string, len(batch)), make([]int, len(batch))
		var pChans, pIDs []int64
		var pAts []time.Time
		for i, e := range batch {
			if len(e.Papers) != len(e.PaperIDs) {
				return fmt.Errorf("event %d of channel %d: %d papers, %d ids", n+i, e.ChannelID, len(e.Papers), len(e.PaperIDs))
			}
			body, err := json.Marshal(Event{Type: TypeMatched, Timestamp: e.At.UTC().Truncate(time.Second), Data: EventData{Papers: e.Papers}})
			if err != nil {
				return err
			}
			chans[i], ats[i], bodies[i], hooks[i], counts[i] = e.ChannelID, e.At, string(body), newWebhookID(), len(e.Papers)
			channels[e.ChannelID] = true
			for _, id := range e.PaperIDs {
				pChans, pIDs, pAts = append(pChans, e.ChannelID), append(pIDs, id), append(pAts, e.At)
			}
		}
		// One statement per batch: the events, then an attempt each.
		if _, err := tx.Exec(ctx, `
			WITH ev AS (
				INSERT INTO channel_events (channel_id, webhook_id, type, body, papers, state, attempts, parts_done,
				                            last_status, created_at, updated_at, delivered_at)
				SELECT c, h, $6, b, p, 'delivered', 1, 1, 200, a, a, a
				FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::timestamptz[]) AS x(c, h, b, p, a)
				RETURNING id, channel_id, delivered_at)
			INSERT INTO channel_attempts (channel_id, event_id, at, status, outcome, duration_ms)
			SELECT channel_id, id, delivered_at, 200, $7, 120 FROM ev ORDER BY id`,
			chans, hooks, bodies, counts, ats, TypeMatched, ok.String()); err != nil {
			return fmt.Errorf("loading %d channel events: %w", len(batch), err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO channel_papers (channel_id, paper_id, sent_at)
			SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[])
			ON CONFLICT DO NOTHING`, pChans, pIDs, pAts); err != nil {
			return fmt.Errorf("loading the papers of %d channel events: %w", len(batch), err)
		}
		n += len(batch)
		return nil
	})
	if err != nil {
		return n, err
	}
	ids := make([]int64, 0, len(channels))
	for id := range channels {
		ids = append(ids, id)
	}
	// Deliver's cap: a channel's newest 100 attempts.
	if _, err := tx.Exec(ctx, `
		DELETE FROM channel_attempts a USING (
			SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY channel_id ORDER BY id DESC) AS r
			                FROM channel_attempts WHERE channel_id = ANY($1)) x WHERE r > 100) old
		WHERE a.id = old.id`, ids); err != nil {
		return n, fmt.Errorf("keeping the channels' newest attempts: %w", err)
	}
	return n, nil
}
