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

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/notify"
	"followfeed/ranking"
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
	st.Weekdays = notify.AllWeekdays // quiet days are the email digest's
	if mode == Weekly {
		st.Frequency = notify.Weekly
	}
	next := notify.NextOccurrence(s.now(), loc, st)
	return &next, nil
}

// PauseEnded is notify's PauseHook: when a user's pause ends (at
// endedAt, in the scheduler's transaction), each of their enabled
// channels set to catch up (PauseCatchUp) gets a collection now, one
// batch of what it missed within the budget (a window is at most
// MaxPapersPerWindow papers); each set to skip has its watermark moved
// to the present, so what matched while the user was away is never
// sent (it is in their feed).
func (s *Service) PauseEnded(ctx context.Context, tx pgx.Tx, userIDs []int64, _ []time.Time) error {
	if len(userIDs) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `
		UPDATE channels SET watermark = greatest(watermark, `+catalog.HighSeqSQL+`)
		WHERE user_id = ANY($1) AND NOT pause_catch_up`, userIDs); err != nil {
		return fmt.Errorf("skipping what paused channels missed: %w", err)
	}
	// channels' user_id index: the users' channels only.
	rows, err := tx.Query(ctx, `
		UPDATE channels SET due_at = $2
		WHERE user_id = ANY($1) AND pause_catch_up AND enabled AND due_at IS NULL
		RETURNING id`, userIDs, s.now())
	if err != nil {
		return fmt.Errorf("catching paused channels up: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return err
	}
	return s.enq.EnqueueChannelCollect(ctx, tx, ids, s.now())
}

var _ notify.PauseHook = (*Service)(nil)

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
// ledger, as they reach the feed. For a user whose digest settings say
// order best, the papers go best first and, with a budget, at most
// max_papers a day, the rest held back (choose); each paper carries the
// user's feedback links, signed with their link epoch. A crash before the
// commit leaves the window for the retry. A channel that is gone or
// disabled, or whose user is paused (notify.HoldsChannels: also after the
// pause's end until the scheduler's catch-up ran PauseEnded), collects
// nothing and keeps its window.
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
		// The user's vacation (notify's pause): nothing goes out and the
		// watermark stays; PauseEnded catches up or skips when it ends,
		// and until it ran (the scheduler's next pass) the pause holds.
		if held, err := notify.HoldsChannels(ctx, tx, userID, s.now()); err != nil || held {
			return err
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
		sel, err := s.choose(ctx, tx, channelID, userID, found)
		if err != nil {
			return err
		}
		// Reasons read as in the user's feeds and digests: their label,
		// else the registry's name (follow.ReasonLabels).
		var labels map[string]string
		var epoch int64
		if len(sel.send) > 0 {
			follows, err := s.follows.All(ctx, userID)
			if err != nil {
				return err
			}
			labels = follow.ReasonLabels(follows)
			if s.links != nil {
				if epoch, err = account.LinkEpoch(ctx, tx, userID); err != nil {
					return err
				}
			}
		}
		papers := make([]PaperJSON, 0, len(sel.send))
		ids := make([]int64, 0, len(found))
		for _, p := range sel.send {
			pj := toPaperJSON(p, labels)
			if s.links != nil {
				pj.Feedback = &FeedbackJSON{
					More: s.links.FeedbackURL(userID, epoch, p.ID, string(ranking.More)),
					Less: s.links.FeedbackURL(userID, epoch, p.ID, string(ranking.Less)),
					Save: s.links.FeedbackURL(userID, epoch, p.ID, string(ranking.Saved)),
				}
			}
			papers = append(papers, pj)
			ids = append(ids, p.ID)
		}
		// The ledger: channel_papers_pkey; a replacement already there
		// keeps its row. The papers the budget held back are recorded
		// too: the channel has had them (they are in the user's feed,
		// counted in the message), so no later window sends them.
		for _, p := range sel.held {
			ids = append(ids, p.ID)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO channel_papers (channel_id, paper_id, sent_at) SELECT $1, unnest($2::bigint[]), $3
			ON CONFLICT DO NOTHING`, channelID, ids, s.now()); err != nil {
			return fmt.Errorf("recording the papers of channel %d: %w", channelID, err)
		}
		// Nothing sent, nothing said: a budget spent for the day sends no
		// message just to count what it held back.
		var eventIDs []int64
		for chunk := range slices.Chunk(papers, PapersPerEvent) {
			data := EventData{Papers: chunk, Order: sel.order}
			if len(eventIDs) == (len(papers)-1)/PapersPerEvent {
				data.MoreInFeed = len(sel.held) // the collection's last event
			}
			id, err := s.insertEvent(ctx, tx, channelID, TypeMatched, data)
			if err != nil {
				return err
			}
			eventIDs = append(eventIDs, id)
		}
		if len(sel.held) > 0 {
			s.logger.InfoContext(ctx, "channel budget held papers back", "channel_id", channelID, "user_id", userID,
				"sent", len(sel.send), "held", len(sel.held))
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
// seq. Each per-key query costs what a per-follow feed's does. Papers the
// user marked read or done are left out (match.Query.Unread).
func (s *Service) windowPapers(ctx context.Context, userID int64, keys []string, after, upTo int64) ([]match.Paper, error) {
	var qs []match.Query
	if keys == nil {
		qs = []match.Query{{UserID: userID, AfterSeq: after, UpToSeq: upTo, Limit: MaxPapersPerWindow, At: s.now(), Unread: true}}
	}
	for _, k := range keys {
		t, err := follow.TargetFromKey(k)
		if err != nil {
			continue // not a key a follow can have: matches nothing
		}
		qs = append(qs, match.Query{UserID: userID, Only: &t, AfterSeq: after, UpToSeq: upTo, Limit: MaxPapersPerWindow, At: s.now(), Unread: true})
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

// selection is what a collection does with the unsent papers of its
// window: send some (in that order), hold the others back.
type selection struct {
	send, held []match.Paper
	order      string // OrderBest, or "" for newest first
}

// choose applies the user's order and budget (their digest settings,
// notify.UserSchedule) to papers, the window's unsent papers newest
// first. Order newest (or no Ranker): all of them, as they are. Order
// best: ranked best first (Ranker.RankPapers); with a budget (max_papers
// > 0) the channel sends at most max_papers papers a day, the day being
// the user's (their time zone), counted over the channel's events since
// it began (sentSince), so an instant channel shares it across the day's
// collections: the papers that pass the budget (keep_followed: a followed
// person's new paper, a followed paper's event) always, then the best of
// the rest while the day's budget lasts; the others are held back.
// Papers held back are never sent later: Collect records them in the
// ledger and the watermark moves past them, so nothing is retried or
// sent as a flood when a new day's budget opens; the event says how many
// ("and N more in your feed").
func (s *Service) choose(ctx context.Context, tx pgx.Tx, channelID, userID int64, papers []match.Paper) (selection, error) {
	if len(papers) == 0 || s.ranker == nil {
		return selection{send: papers}, nil
	}
	st, loc, err := notify.UserSchedule(ctx, tx, userID)
	if err != nil {
		return selection{}, database.NotFound(err, fmt.Sprintf("reading the digest settings of user %d", userID))
	}
	if st.Order != notify.OrderBest {
		return selection{send: papers}, nil
	}
	if _, err := s.ranker.RankPapers(ctx, userID, papers); err != nil {
		return selection{}, fmt.Errorf("ranking the papers of channel %d: %w", channelID, err)
	}
	sel := selection{order: OrderBest}
	if st.MaxPapers <= 0 {
		sel.send = papers
		return sel, nil
	}
	now := s.now().In(loc)
	sent, err := sentSince(ctx, tx, channelID, time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc))
	if err != nil {
		return selection{}, err
	}
	sel.send, sel.held = budget(papers, st.MaxPapers-sent, st.KeepFollowed)
	return sel, nil
}

// budget splits papers (best first) into those sent and those held back:
// with keep, the papers that pass the budget (PassesBudget) are sent
// whatever it says and count against it; then the others are sent while
// left, the papers the day's budget has left, lasts. Both keep the order
// of papers.
func budget(papers []match.Paper, left int, keep bool) (send, held []match.Paper) {
	if keep {
		for _, p := range papers {
			if PassesBudget(p) {
				left--
			}
		}
	}
	for _, p := range papers {
		switch {
		case keep && PassesBudget(p):
			send = append(send, p)
		case left > 0:
			send = append(send, p)
			left--
		default:
			held = append(held, p)
		}
	}
	return send, held
}

// PassesBudget reports whether a matched paper is one a user never wants
// cut by their budget (digest settings' keep_followed): an event of a
// followed paper (a new version, its publication or withdrawal, a
// citation of it) or a new paper of a followed person (a reason of kind
// researcher, not a new version).
func PassesBudget(p match.Paper) bool {
	if len(p.Events) > 0 {
		return true
	}
	return !p.Replaced && slices.ContainsFunc(p.Reasons, func(t follow.Target) bool { return t.Kind == follow.Researcher })
}

// sentSince counts the papers of the channel's papers.matched events
// written since since: channel_events_channel_idx, the channel's events
// (at most EventRetention's of them) filtered by created_at, which is the
// database's clock where since is the service's (the same clock in
// production).
func sentSince(ctx context.Context, tx pgx.Tx, channelID int64, since time.Time) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `
		SELECT coalesce(sum(papers), 0) FROM channel_events WHERE channel_id = $1 AND type = $2 AND created_at >= $3`,
		channelID, TypeMatched, since).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting the papers channel %d sent today: %w", channelID, err)
	}
	return n, nil
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
func (s *Service) insertEvent(ctx context.Context, tx pgx.Tx, channelID int64, typ string, data EventData) (int64, error) {
	if data.Papers == nil {
		data.Papers = []PaperJSON{}
	}
	body, err := json.Marshal(Event{Type: typ, Timestamp: s.now().UTC().Truncate(time.Second), Data: data})
	if err != nil {
		return 0, err
	}
	var id int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO channel_events (channel_id, webhook_id, type, body, papers) VALUES ($1, $2, $3, $4, $5)
		RETURNING id`, channelID, newWebhookID(), typ, body, len(data.Papers)).Scan(&id); err != nil {
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
		// The clock, not now(): this transaction may have begun before the
		// test it waited for (the row lock) was made, and now() would then
		// put the next allowed test more than TestWindow ahead.
		var wait float64
		err := tx.QueryRow(ctx, `
			SELECT extract(epoch FROM created_at + $3::interval - clock_timestamp()) FROM channel_events
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
		eid, err := s.insertEvent(ctx, tx, id, TypeTest, EventData{Papers: []PaperJSON{samplePaper}})
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
