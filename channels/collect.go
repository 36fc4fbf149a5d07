package channels

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	_ "time/tzdata" // users' time zones on machines without zoneinfo

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/notify"
)

// Window limits.
const (
	// MaxPapersPerWindow is how many of a window's newest papers one
	// collection sends; older ones beyond it stay in the user's feed.
	MaxPapersPerWindow = 500
	// PapersPerEvent splits a window into events (webhook bodies) of at
	// most this many papers.
	PapersPerEvent = 50
	// scheduleBatch bounds the channels one scheduling transaction handles.
	scheduleBatch = 1000
)

// ScheduleInstant is the match job's OnAffected hook: every enabled
// instant channel of the affected users without a collection waiting gets
// one, due now, in the match job's transaction. Matches while one waits
// join it.
func (s *Service) ScheduleInstant(ctx context.Context, tx pgx.Tx, affected []int64) error {
	if len(affected) == 0 {
		return nil
	}
	// channels_instant_idx: a probe per affected user, and most have none.
	rows, err := tx.Query(ctx, `
		UPDATE channels SET due_at = $2
		WHERE user_id = ANY($1) AND mode = 'instant' AND enabled AND due_at IS NULL
		RETURNING id`, affected, s.now())
	if err != nil {
		return fmt.Errorf("scheduling instant channels: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return err
	}
	return s.enq.EnqueueChannelCollect(ctx, tx, ids, s.now())
}

// ScheduleWindows is the periodic job of daily and weekly channels: those
// whose window has closed get a collection and their next window time. It
// returns how many it queued. Running it twice never doubles a window:
// collections start at the channel's watermark.
func (s *Service) ScheduleWindows(ctx context.Context) (int, error) {
	total := 0
	for {
		var n int
		err := s.db.InTx(ctx, func(tx pgx.Tx) error {
			// channels_next_idx; SKIP LOCKED lets a second scheduler or an
			// edit proceed.
			rows, err := tx.Query(ctx, `
				SELECT id, user_id, mode FROM channels
				WHERE next_at <= $1 AND next_at IS NOT NULL AND enabled
				ORDER BY next_at LIMIT $2 FOR UPDATE SKIP LOCKED`, s.now(), scheduleBatch)
			if err != nil {
				return fmt.Errorf("finding due channels: %w", err)
			}
			var ids []int64
			var nexts []time.Time
			type row struct {
				id, user int64
				mode     Mode
			}
			var due []row
			for rows.Next() {
				var r row
				if err := rows.Scan(&r.id, &r.user, &r.mode); err != nil {
					rows.Close()
					return err
				}
				due = append(due, r)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, r := range due {
				next, err := s.nextWindow(ctx, tx, r.user, r.mode)
				if err != nil {
					return err
				}
				ids, nexts = append(ids, r.id), append(nexts, *next)
			}
			n = len(ids)
			if n == 0 {
				return nil
			}
			if _, err := tx.Exec(ctx, `
				UPDATE channels c SET next_at = n.next FROM unnest($1::bigint[], $2::timestamptz[]) AS n(id, next)
				WHERE c.id = n.id`, ids, nexts); err != nil {
				return fmt.Errorf("moving channel windows: %w", err)
			}
			return s.enq.EnqueueChannelCollect(ctx, tx, ids, s.now())
		})
		total += n
		if err != nil || n < scheduleBatch {
			return total, err
		}
	}
}

// nextWindow is when a daily or weekly channel's next window closes: the
// user's digest hour (and weekday) in their time zone, the same times as
// their digests; nil for an instant channel.
func (s *Service) nextWindow(ctx context.Context, tx pgx.Tx, userID int64, mode Mode) (*time.Time, error) {
	if mode == Instant {
		return nil, nil
	}
	st, loc, err := notify.UserSchedule(ctx, tx, userID)
	if err != nil {
		return nil, database.NotFound(err, fmt.Sprintf("reading the digest time of user %d", userID))
	}
	st.Frequency = notify.Daily
	if mode == Weekly {
		st.Frequency = notify.Weekly
	}
	next := notify.NextOccurrence(s.now(), loc, st)
	return &next, nil
}

// Collect turns a channel's new matches into events: under the channel's
// row lock it takes the window (watermark, high_seq] and the papers new to
// the channel in it, writes them as events of at most PapersPerEvent
// papers, records them in the channel's ledger (channel_papers), moves the
// watermark and queues one delivery job per event, all in one transaction.
// A channel for all follows gets the papers the user's follows first
// matched in the window, as their feed and digest do. A channel limited to
// some follows gets a paper the first time one of those follows matches
// it, whatever the user's other follows matched before (a cs.LG paper
// reaches a researcher's channel when enrichment finds the researcher),
// and the ledger keeps it to once per channel when two of its follows
// match in different windows. New versions a follow opted into pass the
// ledger, as they reach the feed. A crash before the commit leaves the
// window for the retry. A channel that is gone or disabled collects
// nothing.
func (s *Service) Collect(ctx context.Context, channelID int64) (events int, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		var userID, watermark int64
		var enabled bool
		var keys []string
		err := tx.QueryRow(ctx, `
			UPDATE channels SET due_at = NULL WHERE id = $1
			RETURNING user_id, enabled, follows, watermark`, channelID).Scan(&userID, &enabled, &keys, &watermark)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("locking channel %d: %w", channelID, err)
		}
		if !enabled {
			return nil
		}
		high, err := catalog.HighSeqIn(ctx, tx)
		if err != nil {
			return err
		}
		if high <= watermark {
			return nil
		}
		// Seq order is commit order (catalog.Store), so nothing can later
		// appear at or below high: the window is complete.
		found, err := s.windowPapers(ctx, userID, keys, watermark, high)
		if err != nil {
			return err
		}
		found, err = unsent(ctx, tx, channelID, found)
		if err != nil {
			return err
		}
		// Reasons read as in the user's feeds and digests: their label,
		// else the registry's name (follow.ReasonLabels).
		var labels map[string]string
		if len(found) > 0 {
			follows, err := s.follows.All(ctx, userID)
			if err != nil {
				return err
			}
			labels = follow.ReasonLabels(follows)
		}
		papers := make([]PaperJSON, 0, len(found))
		ids := make([]int64, 0, len(found))
		for _, p := range found {
			papers = append(papers, toPaperJSON(p, labels))
			ids = append(ids, p.ID)
		}
		// The ledger: channel_papers_pkey; a replacement already there
		// keeps its row.
		if _, err := tx.Exec(ctx, `
			INSERT INTO channel_papers (channel_id, paper_id, sent_at) SELECT $1, unnest($2::bigint[]), $3
			ON CONFLICT DO NOTHING`, channelID, ids, s.now()); err != nil {
			return fmt.Errorf("recording the papers of channel %d: %w", channelID, err)
		}
		var eventIDs []int64
		for chunk := range slices.Chunk(papers, PapersPerEvent) {
			id, err := s.insertEvent(ctx, tx, channelID, TypeMatched, chunk)
			if err != nil {
				return err
			}
			eventIDs = append(eventIDs, id)
		}
		if _, err := tx.Exec(ctx, `UPDATE channels SET watermark = $2 WHERE id = $1`, channelID, high); err != nil {
			return fmt.Errorf("moving the watermark of channel %d: %w", channelID, err)
		}
		events = len(eventIDs)
		if len(eventIDs) == 0 {
			return nil
		}
		return s.enq.EnqueueChannelDeliveries(ctx, tx, eventIDs)
	})
	return events, err
}

// windowPapers is the window (after, upTo] of a channel of user carrying
// keys (nil: every follow), newest first, at most MaxPapersPerWindow, no
// deleted papers. For all follows it is the user's own window (one
// query, as digests run it). For some, one query per key (match.Query.Only,
// all in one statement), so that each follow's first match counts rather
// than the user's; a paper two keys matched comes once, with the newest
// seq. Each per-key query costs what a per-follow feed's does.
func (s *Service) windowPapers(ctx context.Context, userID int64, keys []string, after, upTo int64) ([]match.Paper, error) {
	var qs []match.Query
	if keys == nil {
		qs = []match.Query{{UserID: userID, AfterSeq: after, UpToSeq: upTo, Limit: MaxPapersPerWindow}}
	}
	for _, k := range keys {
		t, err := follow.TargetFromKey(k)
		if err != nil {
			continue // not a key a follow can have: matches nothing
		}
		qs = append(qs, match.Query{UserID: userID, Only: &t, AfterSeq: after, UpToSeq: upTo, Limit: MaxPapersPerWindow})
	}
	if len(qs) == 0 {
		return nil, nil
	}
	rs, err := s.matcher.MatchedMany(ctx, qs)
	if err != nil {
		return nil, err
	}
	var out []match.Paper
	at := map[int64]int{} // paper id → index in out
	for _, r := range rs {
		for _, p := range r.Papers {
			if p.Deleted {
				continue
			}
			i, ok := at[p.ID]
			if !ok {
				at[p.ID] = len(out)
				out = append(out, p)
				continue
			}
			// Matched by several keys: a first match wins over a new
			// version (the ledger lets the latter through).
			if !p.Replaced {
				out[i].Replaced = false
			}
			out[i].Seq = max(out[i].Seq, p.Seq)
		}
	}
	slices.SortStableFunc(out, func(a, b match.Paper) int { return cmp.Compare(b.Seq, a.Seq) })
	if len(out) > MaxPapersPerWindow {
		out = out[:MaxPapersPerWindow]
	}
	return out, nil
}

// unsent drops from ps the papers channelID was already sent, except new
// versions (Replaced), which a follow that opted in gets again. One probe
// of channel_papers_pkey per candidate.
func unsent(ctx context.Context, tx pgx.Tx, channelID int64, ps []match.Paper) ([]match.Paper, error) {
	var ids []int64
	for _, p := range ps {
		if !p.Replaced {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return ps, nil
	}
	rows, err := tx.Query(ctx, `SELECT paper_id FROM channel_papers WHERE channel_id = $1 AND paper_id = ANY($2)`, channelID, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger of channel %d: %w", channelID, err)
	}
	sent, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading the ledger of channel %d: %w", channelID, err)
	}
	if len(sent) == 0 {
		return ps, nil
	}
	done := make(map[int64]bool, len(sent))
	for _, id := range sent {
		done[id] = true
	}
	return slices.DeleteFunc(ps, func(p match.Paper) bool { return !p.Replaced && done[p.ID] }), nil
}

func toPaperJSON(p match.Paper, labels map[string]string) PaperJSON {
	out := PaperJSON{ArxivID: p.ArxivID, Title: p.Title, Abstract: p.Abstract, Authors: []string{},
		Categories: p.Categories, Links: LinksJSON{Abs: p.AbsURL, PDF: p.PDFURL}, Reasons: []Reason{}}
	if out.Categories == nil {
		out.Categories = []string{}
	}
	if out.Links.Abs == "" {
		out.Links.Abs = "https://arxiv.org/abs/" + p.ArxivID
	}
	for _, a := range p.Authors {
		out.Authors = append(out.Authors, a.Name)
	}
	for _, t := range p.Reasons {
		out.Reasons = append(out.Reasons, Reason{Kind: string(t.Kind), ID: t.ID, Name: p.ReasonName(t, labels[t.Key()])})
	}
	return out
}

// insertEvent writes one pending event with its body.
func (s *Service) insertEvent(ctx context.Context, tx pgx.Tx, channelID int64, typ string, papers []PaperJSON) (int64, error) {
	if papers == nil {
		papers = []PaperJSON{}
	}
	body, err := json.Marshal(Event{Type: typ, Timestamp: s.now().UTC().Truncate(time.Second), Data: EventData{Papers: papers}})
	if err != nil {
		return 0, err
	}
	var id int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO channel_events (channel_id, webhook_id, type, body, papers) VALUES ($1, $2, $3, $4, $5)
		RETURNING id`, channelID, newWebhookID(), typ, body, len(papers)).Scan(&id); err != nil {
		return 0, fmt.Errorf("writing an event of channel %d: %w", channelID, err)
	}
	return id, nil
}

// samplePaper is the paper of a test event.
var samplePaper = PaperJSON{
	ArxivID: "1706.03762", Title: "Attention Is All You Need (followfeed test event)",
	Authors:    []string{"Ashish Vaswani", "Noam Shazeer", "Niki Parmar"},
	Abstract:   "A test event: your channel receives papers like this one when your follows match.",
	Categories: []string{"cs.CL", "cs.LG"},
	Links:      LinksJSON{Abs: "https://arxiv.org/abs/1706.03762", PDF: "https://arxiv.org/pdf/1706.03762"},
	Reasons:    []Reason{{Kind: "category", ID: "cs.CL", Name: "cs.CL"}}, // as follow.Target.ReasonName names a category
}

// Test events are limited per channel: at most TestsPerWindow in any
// TestWindow, so a burst of clicks or requests reaches the receiver a few
// times at most.
const (
	TestsPerWindow = 5
	TestWindow     = 10 * time.Minute
)

// Test queues a test event (type channel.test, one sample paper) on the
// user's enabled channel and returns its webhook id. A disabled channel is
// an apperr.Conflict (enable it again first: a test of a disabled channel
// would not be delivered), a channel that had TestsPerWindow tests in the
// last TestWindow an apperr.RateLimited saying when the next is allowed.
// The channel's row lock serialises concurrent tests, so a burst cannot
// pass the limit.
func (s *Service) Test(ctx context.Context, userID, id int64) (string, error) {
	var wid string
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var enabled bool
		if err := tx.QueryRow(ctx, `SELECT enabled FROM channels WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID).Scan(&enabled); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return database.Missing("channel %d does not exist", id)
			}
			return err
		}
		if !enabled {
			return apperr.New(apperr.Conflict, "channel %d is disabled, so a test would not be delivered; fix the receiver, enable the channel again, then send the test", id)
		}
		// channel_events_channel_idx backwards: the channel's newest test
		// events; the TestsPerWindow-th newest says whether the window is full.
		var wait float64
		err := tx.QueryRow(ctx, `
			SELECT extract(epoch FROM created_at + $3::interval - now()) FROM channel_events
			WHERE channel_id = $1 AND type = $2 ORDER BY id DESC OFFSET $4 - 1 LIMIT 1`,
			id, TypeTest, TestWindow.String(), TestsPerWindow).Scan(&wait)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("counting the test events of channel %d: %w", id, err)
		}
		if err == nil && wait > 0 {
			after := time.Duration(wait * float64(time.Second))
			e := apperr.New(apperr.RateLimited, "channel %d had %d test events in the last %d minutes, the most allowed; try again in %s",
				id, TestsPerWindow, int(TestWindow.Minutes()), after.Round(time.Second))
			e.RetryAfter = after
			return e
		}
		eid, err := s.insertEvent(ctx, tx, id, TypeTest, []PaperJSON{samplePaper})
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT webhook_id FROM channel_events WHERE id = $1`, eid).Scan(&wid); err != nil {
			return err
		}
		return s.enq.EnqueueChannelDeliveries(ctx, tx, []int64{eid})
	})
	return wid, err
}
