package fediverse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/match"
)

// OutboxPageSize is how many activities an outbox page holds.
const OutboxPageSize = 20

// Outbox is the outbox collection of info: its size and its first page.
func (s *Service) Outbox(ctx context.Context, info ActorInfo) (*OrderedCollection, error) {
	var n int64
	if err := s.db.Pool.QueryRow(ctx, `
		SELECT count(*) FROM ap_activities WHERE actor_key = $1 AND type <> 'Accept'`, info.Target.Key()).Scan(&n); err != nil {
		return nil, fmt.Errorf("counting the outbox of %s: %w", info.Target, err)
	}
	out := info.ID + "/outbox"
	return &OrderedCollection{Context: asContext, ID: out, Type: "OrderedCollection", TotalItems: n, First: out + "?page=true"}, nil
}

// OutboxPage is a page of info's outbox, newest first: the activities
// older than maxID (0: the newest), with a next link while there are more.
func (s *Service) OutboxPage(ctx context.Context, info ActorInfo, maxID int64) (*OrderedCollectionPage, error) {
	// ap_activities_outbox_idx backwards from maxID.
	rows, err := s.db.Pool.Query(ctx, `
		SELECT id, body FROM ap_activities
		WHERE actor_key = $1 AND type <> 'Accept' AND ($2 = 0 OR id < $2)
		ORDER BY id DESC LIMIT $3`, info.Target.Key(), maxID, OutboxPageSize+1)
	if err != nil {
		return nil, fmt.Errorf("reading the outbox of %s: %w", info.Target, err)
	}
	out := info.ID + "/outbox"
	self := out + "?page=true"
	if maxID > 0 {
		self = fmt.Sprintf("%s?max_id=%d", out, maxID)
	}
	page := &OrderedCollectionPage{Context: asContext, ID: self, Type: "OrderedCollectionPage", PartOf: out, OrderedItems: []json.RawMessage{}}
	var id int64
	var body string
	var last int64
	_, err = pgx.ForEachRow(rows, []any{&id, &body}, func() error {
		if len(page.OrderedItems) == OutboxPageSize {
			page.Next = fmt.Sprintf("%s?max_id=%d", out, last)
			return nil
		}
		page.OrderedItems = append(page.OrderedItems, json.RawMessage(body))
		last = id
		return nil
	})
	return page, err
}

// NoteDocument is a note by its number: its JSON, or gone (a Tombstone's)
// when the note was deleted.
func (s *Service) NoteDocument(ctx context.Context, id int64) (doc []byte, deleted bool, err error) {
	var object string
	var del *time.Time
	err = s.db.Pool.QueryRow(ctx, `SELECT object, deleted_at FROM ap_notes WHERE id = $1`, id).Scan(&object, &del)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && object == "" {
		return nil, false, database.Missing("no note %d here", id)
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading note %d: %w", id, err)
	}
	if del != nil {
		return jsonBytes(map[string]any{"@context": asContext, "id": s.noteURL(id), "type": "Tombstone"}), true, nil
	}
	return []byte(object), false, nil
}

// ActivityDocument is an activity by its number, as it was sent.
func (s *Service) ActivityDocument(ctx context.Context, id int64) ([]byte, error) {
	var body string
	err := s.db.Pool.QueryRow(ctx, `SELECT body FROM ap_activities WHERE id = $1`, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && body == "" {
		return nil, database.Missing("no activity %d here", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading activity %d: %w", id, err)
	}
	return []byte(body), nil
}

// InstanceDocument is the instance actor (an Application), whose key signs
// followfeed's fetches of remote keys.
func (s *Service) InstanceDocument(ctx context.Context) (*Actor, error) {
	k, err := s.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	id := s.abs(InstanceActor)
	return &Actor{
		Context: actorContext, ID: id, Type: "Application", PreferredUsername: s.base.Hostname(),
		Name: "followfeed", Summary: "<p>The followfeed instance actor. It signs requests; follow the feeds' actors instead.</p>",
		URL: s.abs("/about"), Inbox: s.abs(SharedInbox), Outbox: id + "/outbox", Followers: id + "/followers", Following: id + "/following",
		PublicKey:                 PublicKey{ID: id + "#main-key", Owner: id, PublicKeyPem: k.public},
		ManuallyApprovesFollowers: true,
	}, nil
}

// Recent is the newest papers of info's public feed (its HTML page).
func (s *Service) Recent(ctx context.Context, info ActorInfo, limit int) ([]match.Paper, error) {
	return s.matcher.Public(ctx, info.Target.Key(), limit)
}

// SummaryEvery is how often a category actor without per-paper notes
// posts its summary.
const SummaryEvery = 24 * time.Hour

// maxSummaryPapers bounds a summary's window read; summaryShown is how
// many of its papers the summary names.
const (
	maxSummaryPapers = 1000
	summaryShown     = 20
)

// Summaries posts the daily summary note of every category and archive
// actor with followers whose last summary is SummaryEvery old (without
// CategoryNotes; with it, they post per paper and this does nothing): the
// papers of its window (watermark, high_seq], newest first, the first
// summaryShown linked, and how many there were. A window without papers
// posts nothing. It returns the summaries posted.
func (s *Service) Summaries(ctx context.Context) (int, error) {
	if s.catNotes {
		return 0, nil
	}
	high, err := s.highSeq(ctx)
	if err != nil {
		return 0, err
	}
	posted := 0
	for {
		var handled int
		err := s.db.InTx(ctx, func(tx pgx.Tx) error {
			handled = 0
			due, err := lockActors(ctx, tx, `
				SELECT a.key, a.watermark FROM ap_actors a
				WHERE (a.key LIKE 'category:%' OR a.key LIKE 'archive:%')
				  AND (a.summary_at IS NULL OR a.summary_at <= $1)
				  AND EXISTS (SELECT 1 FROM ap_followers f WHERE f.actor_key = a.key)
				ORDER BY a.key LIMIT $2 FOR UPDATE SKIP LOCKED`, s.now().Add(-SummaryEvery), fanoutChunk)
			if err != nil {
				return fmt.Errorf("reading category actors: %w", err)
			}
			handled = len(due)
			for _, a := range due {
				ok, err := s.summary(ctx, tx, a, high)
				if err != nil {
					return err
				}
				if ok {
					posted++
				}
			}
			return nil
		})
		if err != nil || handled < fanoutChunk {
			return posted, err
		}
	}
}

// summary posts one category actor's summary and moves its watermark.
func (s *Service) summary(ctx context.Context, tx pgx.Tx, a dueActor, high int64) (bool, error) {
	papers, err := match.PublicWindowIn(ctx, tx, a.key, a.watermark, high, maxSummaryPapers)
	if err != nil {
		return false, err
	}
	var fresh []match.Paper
	for _, p := range papers {
		if !p.Replaced && p.ArxivID != "" {
			fresh = append(fresh, p)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE ap_actors SET watermark = $2, summary_at = $3, due_at = NULL WHERE key = $1`,
		a.key, max(high, a.watermark), s.now()); err != nil {
		return false, err
	}
	if len(fresh) == 0 {
		return false, nil
	}
	t, err := follow.TargetFromKey(a.key)
	if err != nil {
		return false, err
	}
	actor := s.ActorURL(t)
	var noteID int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO ap_notes (actor_key, paper_id, object, published_at) VALUES ($1, NULL, '', $2) RETURNING id`,
		a.key, s.now()).Scan(&noteID); err != nil {
		return false, err
	}
	note := s.summaryNote(noteID, actor, t, fresh)
	if _, err := tx.Exec(ctx, `UPDATE ap_notes SET object = $2 WHERE id = $1`, noteID, string(jsonBytes(note))); err != nil {
		return false, err
	}
	inboxes, err := s.followerInboxes(ctx, tx, a.key)
	if err != nil {
		return false, err
	}
	_, err = s.publish(ctx, tx, a.key, "Create", &noteID, func(id string) any {
		return Activity{Context: asContext, ID: id, Type: "Create", Actor: actor, Published: note.Published,
			To: note.To, Cc: note.Cc, Object: noteWithoutContext(note)}
	}, inboxes)
	return err == nil, err
}

// summaryNote lists a window's papers of a category.
func (s *Service) summaryNote(id int64, actor string, t follow.Target, papers []match.Paper) *Note {
	var b strings.Builder
	word := "papers"
	if len(papers) == 1 {
		word = "paper"
	}
	more := ""
	if len(papers) >= maxSummaryPapers {
		more = " or more"
	}
	fmt.Fprintf(&b, "<p>%d%s new arXiv %s in %s since the last summary:</p><ul>", len(papers), more, word, html.EscapeString(t.DisplayName()))
	for i, p := range papers {
		if i == summaryShown {
			break
		}
		fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, html.EscapeString(p.AbsURL), html.EscapeString(p.Title))
	}
	b.WriteString("</ul>")
	if len(papers) > summaryShown {
		fmt.Fprintf(&b, "<p>…and %d more in the feed: %s</p>", len(papers)-summaryShown, html.EscapeString(actor))
	}
	tags := hashtags(nil, t.ID)
	writeTags(&b, tags)
	return &Note{
		Context: asContext, ID: s.noteURL(id), Type: "Note", AttributedTo: actor,
		Published: s.now().UTC().Format(time.RFC3339), URL: actor,
		To: []string{Public}, Cc: []string{actor + "/followers"}, Content: b.String(), Tag: tags,
	}
}

// WithdrawalWindow is how far back notes are checked for withdrawn papers.
const WithdrawalWindow = 30 * 24 * time.Hour

// SummaryRetention is how long a category or archive actor's daily
// summary stays in its outbox: one note a day per actor would grow with
// time, not with papers (a per-paper note stays as long as its paper).
// Older summaries are deleted without a Delete activity: followers'
// servers keep the copy they were sent; the note's id answers 404.
const SummaryRetention = 90 * 24 * time.Hour

// Housekeeping deletes the notes of withdrawn papers (a Delete to the
// actor's followers; the note's id then answers a Tombstone), and prunes
// signatures older than the clock skew allows, final deliveries after
// 30 days, remote keys unused for 30 days and summaries older than
// SummaryRetention. It returns the notes of withdrawn papers deleted.
// Run again, it deletes nothing more.
func (s *Service) Housekeeping(ctx context.Context) (int, error) {
	deleted := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		deleted = 0
		// ap_notes_live_idx: the live notes of the last 30 days.
		rows, err := tx.Query(ctx, `
			SELECT DISTINCT paper_id FROM ap_notes
			WHERE deleted_at IS NULL AND paper_id IS NOT NULL AND published_at > $1`, s.now().Add(-WithdrawalWindow))
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		gone, err := catalog.Withdrawn(ctx, tx, ids)
		if err != nil || len(gone) == 0 {
			return err
		}
		rows, err = tx.Query(ctx, `
			UPDATE ap_notes SET deleted_at = $2 WHERE paper_id = ANY($1) AND deleted_at IS NULL
			RETURNING id, actor_key`, gone, s.now())
		if err != nil {
			return err
		}
		type note struct {
			id  int64
			key string
		}
		var notes []note
		var n note
		if _, err := pgx.ForEachRow(rows, []any{&n.id, &n.key}, func() error {
			notes = append(notes, n)
			return nil
		}); err != nil {
			return err
		}
		for _, n := range notes {
			inboxes, err := s.followerInboxes(ctx, tx, n.key)
			if err != nil {
				return err
			}
			actor := s.actorURLOfKey(n.key)
			noteID := n.id
			if _, err := s.publish(ctx, tx, n.key, "Delete", &noteID, func(id string) any {
				return Activity{Context: asContext, ID: id, Type: "Delete", Actor: actor, To: []string{Public},
					Object: Tombstone{ID: s.noteURL(noteID), Type: "Tombstone"}}
			}, inboxes); err != nil {
				return err
			}
			deleted++
		}
		return nil
	})
	if err != nil {
		return deleted, fmt.Errorf("deleting the notes of withdrawn papers: %w", err)
	}
	// Each in batches (database.DeleteBatches), through the index named.
	month := s.now().Add(-30 * 24 * time.Hour)
	for _, q := range []struct {
		what, sql string
		before    time.Time
	}{
		// ap_seen_signatures_seen_idx: a signature older than the clock
		// skew allows is refused by its Date before it is looked up.
		{"signatures", `DELETE FROM ap_seen_signatures WHERE hash IN (
			SELECT hash FROM ap_seen_signatures WHERE seen_at < $2 ORDER BY seen_at LIMIT $1)`, s.now().Add(-MaxClockSkew - time.Hour)},
		// ap_deliveries_updated_idx: final rows; a pending one is a
		// delivery still owed.
		{"deliveries", `DELETE FROM ap_deliveries WHERE (inbox_id, activity_id) IN (
			SELECT inbox_id, activity_id FROM ap_deliveries WHERE state <> 'pending' AND updated_at < $2
			ORDER BY updated_at LIMIT $1)`, month},
		// A few rows per remote server: read whole.
		{"remote keys", `DELETE FROM ap_remote_keys WHERE key_id IN (
			SELECT key_id FROM ap_remote_keys WHERE fetched_at < $2 LIMIT $1)`, month},
		// ap_notes_summary_idx: daily summaries (and notes whose paper
		// row is gone) older than SummaryRetention, with their Create
		// and its deliveries (ON DELETE CASCADE).
		{"summaries", `DELETE FROM ap_notes WHERE id IN (
			SELECT id FROM ap_notes WHERE paper_id IS NULL AND published_at < $2 ORDER BY published_at LIMIT $1)`,
			s.now().Add(-SummaryRetention)},
	} {
		if _, err := s.db.DeleteBatches(ctx, q.what, q.sql, q.before); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
