package fediverse

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/follow"
	"followfeed/match"
	"followfeed/paper"
)

// fanoutLock is the advisory lock between the match hook (shared: it marks
// actors due and queues the fan-out) and the fan-out's last check
// (exclusive: no actor due, then the job completes), so that an actor
// marked due while the job runs is never left without a job.
const fanoutLock = 0x6170_6661 // "apfa"

// MaxNotesPerFanout caps the notes one actor publishes per fan-out: the
// newest papers of its window (a batch rarely brings a researcher more).
const MaxNotesPerFanout = 50

// fanoutChunk is how many actors one fan-out transaction handles.
const fanoutChunk = 100

// MatchHook is the match job's OnAffected hook: in the match job's
// transaction it marks due the actors with followers whose public feed the
// batch changed (keys: match.BatchResult's NewKeys and ReplacedKeys; a
// researcher's or institution's actor speaks for every id of its
// identity) and queues the fan-out job. It sends nothing: its cost is one
// statement over the actors with followers, whatever their followers.
// Category and archive actors are left alone without CategoryNotes (their
// daily summary reads their window).
func (s *Service) MatchHook(ctx context.Context, tx pgx.Tx, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, fanoutLock); err != nil {
		return err
	}
	// Driven by the actors (a few thousand at most), each expanded
	// through the registry (a primary-key probe and an index-only scan of
	// identity_keys), against the batch's keys hashed once.
	tag, err := tx.Exec(ctx, `
		WITH b AS (SELECT DISTINCT key FROM unnest($1::text[]) AS b(key))
		UPDATE ap_actors a SET due_at = $2
		WHERE a.due_at IS NULL
		  AND ($3 OR NOT (a.key LIKE 'category:%' OR a.key LIKE 'archive:%'))
		  AND EXISTS (SELECT 1 FROM ap_followers f WHERE f.actor_key = a.key)
		  AND EXISTS (
			SELECT 1 FROM (
				SELECT a.key AS key
				UNION ALL
				SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
				WHERE k1.key = a.key) x
			JOIN b ON b.key = x.key)`, keys, s.now(), s.catNotes)
	if err != nil {
		return fmt.Errorf("marking ActivityPub actors due: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return s.enq.EnqueueFanout(ctx, tx)
}

// dueActor is an actor the fan-out handles.
type dueActor struct {
	key       string
	watermark int64
}

// Fanout is the fan-out job: every due actor's window (watermark,
// high_seq] of its public feed becomes notes (one per paper and actor:
// Create for a paper new to it, Update for a new version of a paper it
// posted), each delivered to the distinct inboxes of its followers
// through the ledger; the watermark moves in the same transaction. A
// category or archive actor publishes per paper only with CategoryNotes
// (else its daily summary covers the window: Summaries). When no actor is
// due, finish completes the job (under the exclusive fanout lock). It
// returns the notes published.
func (s *Service) Fanout(ctx context.Context, finish func(pgx.Tx) error) (int, error) {
	total := 0
	for {
		high, err := s.highSeq(ctx)
		if err != nil {
			return total, err
		}
		n, handled := 0, 0
		err = s.db.InTx(ctx, func(tx pgx.Tx) error {
			n, handled = 0, 0
			// ap_actors_due_idx; SKIP LOCKED lets a second fan-out work on.
			rows, err := tx.Query(ctx, `
				SELECT key, watermark FROM ap_actors WHERE due_at IS NOT NULL
				ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED`, fanoutChunk)
			if err != nil {
				return fmt.Errorf("reading due actors: %w", err)
			}
			var due []dueActor
			var a dueActor
			if _, err := pgx.ForEachRow(rows, []any{&a.key, &a.watermark}, func() error {
				due = append(due, a)
				return nil
			}); err != nil {
				return err
			}
			handled = len(due)
			for _, a := range due {
				k, err := s.publishWindow(ctx, tx, a, high)
				if err != nil {
					return err
				}
				n += k
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if handled > 0 {
			continue
		}
		done := false
		err = s.db.InTx(ctx, func(tx pgx.Tx) error {
			done = false
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, fanoutLock); err != nil {
				return err
			}
			var more bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ap_actors WHERE due_at IS NOT NULL)`).Scan(&more); err != nil {
				return err
			}
			if more {
				return nil
			}
			done = true
			if finish != nil {
				return finish(tx)
			}
			return nil
		})
		if err != nil || done {
			return total, err
		}
	}
}

// perPaper reports whether the actor of key publishes a note per paper.
func (s *Service) perPaper(key string) bool {
	return s.catNotes || !(strings.HasPrefix(key, "category:") || strings.HasPrefix(key, "archive:"))
}

// publishWindow publishes one due actor's window and moves its watermark.
func (s *Service) publishWindow(ctx context.Context, tx pgx.Tx, a dueActor, high int64) (int, error) {
	if !s.perPaper(a.key) || high <= a.watermark {
		_, err := tx.Exec(ctx, `UPDATE ap_actors SET due_at = NULL WHERE key = $1`, a.key)
		return 0, err
	}
	papers, err := match.PublicWindowIn(ctx, tx, a.key, a.watermark, high, MaxNotesPerFanout)
	if err != nil {
		return 0, err
	}
	n, err := s.publishPapers(ctx, tx, a.key, papers)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `UPDATE ap_actors SET watermark = $2, due_at = NULL WHERE key = $1`, a.key, high)
	return n, err
}

// followerInboxes are the distinct delivery inboxes of an actor's
// followers (ap_followers_actor_inbox_idx, index-only).
func (s *Service) followerInboxes(ctx context.Context, tx pgx.Tx, key string) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT inbox_id FROM ap_followers WHERE actor_key = $1 ORDER BY 1`, key)
	if err != nil {
		return nil, fmt.Errorf("reading the inboxes of %s: %w", key, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// publishPapers turns papers (newest first) into notes of the actor of
// key, oldest first: a Create per paper the actor never posted (at most one
// note per paper and actor: ap_notes_actor_paper_idx), an Update per new
// version of one it did. It returns the activities written.
func (s *Service) publishPapers(ctx context.Context, tx pgx.Tx, key string, papers []match.Paper) (int, error) {
	if len(papers) == 0 {
		return 0, nil
	}
	t, err := follow.TargetFromKey(key)
	if err != nil {
		return 0, err
	}
	actor := s.ActorURL(t)
	inboxes, err := s.followerInboxes(ctx, tx, key)
	if err != nil {
		return 0, err
	}
	var activities []int64
	for i := len(papers) - 1; i >= 0; i-- {
		p := papers[i]
		if p.ArxivID == "" {
			continue // not loaded: gone meanwhile
		}
		var noteID int64
		typ := "Create"
		if !p.Replaced {
			err := tx.QueryRow(ctx, `
				INSERT INTO ap_notes (actor_key, paper_id, version, object, published_at) VALUES ($1, $2, $3, '', $4)
				ON CONFLICT (actor_key, paper_id) WHERE paper_id IS NOT NULL DO NOTHING RETURNING id`,
				key, p.ID, max(p.Version, 1), s.now()).Scan(&noteID)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // posted before
			}
			if err != nil {
				return 0, fmt.Errorf("writing the note of %s for %s: %w", p.ArxivID, key, err)
			}
		} else {
			typ = "Update"
			err := tx.QueryRow(ctx, `
				UPDATE ap_notes SET version = $3 WHERE actor_key = $1 AND paper_id = $2 AND version < $3 AND deleted_at IS NULL
				RETURNING id`, key, p.ID, p.Version).Scan(&noteID)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // a new version of a paper this actor never posted
			}
			if err != nil {
				return 0, err
			}
		}
		var published time.Time
		if err := tx.QueryRow(ctx, `SELECT published_at FROM ap_notes WHERE id = $1`, noteID).Scan(&published); err != nil {
			return 0, err
		}
		note := s.paperNote(noteID, actor, p.Paper, published, typ == "Update")
		if _, err := tx.Exec(ctx, `UPDATE ap_notes SET object = $2 WHERE id = $1`, noteID, string(jsonBytes(note))); err != nil {
			return 0, err
		}
		id, err := s.writeActivity(ctx, tx, key, typ, &noteID, func(id string) any {
			return Activity{Context: asContext, ID: id, Type: typ, Actor: actor, Published: note.Published,
				To: note.To, Cc: note.Cc, Object: noteWithoutContext(note)}
		})
		if err != nil {
			return 0, err
		}
		activities = append(activities, id)
	}
	return len(activities), s.deliver(ctx, tx, activities, inboxes)
}

// writeActivity is publish without deliveries (the caller delivers a
// batch's activities together).
func (s *Service) writeActivity(ctx context.Context, tx pgx.Tx, actorKey, typ string, noteID *int64, build func(id string) any) (int64, error) {
	var id int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO ap_activities (actor_key, type, note_id, body, created_at) VALUES ($1, $2, $3, '', $4) RETURNING id`,
		actorKey, typ, noteID, s.now()).Scan(&id); err != nil {
		return 0, fmt.Errorf("writing a %s of %s: %w", typ, actorKey, err)
	}
	body := jsonBytes(build(s.activityURL(id)))
	_, err := tx.Exec(ctx, `UPDATE ap_activities SET body = $2 WHERE id = $1`, id, string(body))
	return id, err
}

func noteWithoutContext(n *Note) *Note {
	c := *n
	c.Context = nil
	return &c
}

// maxNoteAuthors is how many authors a note names before "et al.".
const maxNoteAuthors = 10

// paperNote is the Note of paper p by actor: the title linked to the
// abstract page, the authors, the PDF link and a hashtag per category
// (cs.LG is #cs_LG: a hashtag has no dots); to Public, cc the actor's
// followers.
func (s *Service) paperNote(id int64, actor string, p paper.Paper, published time.Time, updated bool) *Note {
	var b strings.Builder
	title := p.Title
	if updated {
		title = fmt.Sprintf("%s (v%d)", p.Title, p.Version)
	}
	fmt.Fprintf(&b, `<p><a href="%s">%s</a></p>`, html.EscapeString(p.AbsURL), html.EscapeString(title))
	var names []string
	for i, a := range p.Authors {
		if i == maxNoteAuthors {
			names = append(names, "et al.")
			break
		}
		names = append(names, a.Name)
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, `<p>%s</p>`, html.EscapeString(strings.Join(names, ", ")))
	}
	b.WriteString("<p>")
	if p.PDFURL != "" {
		fmt.Fprintf(&b, `<a href="%s">PDF</a> · `, html.EscapeString(p.PDFURL))
	}
	fmt.Fprintf(&b, `arXiv:%s`, html.EscapeString(p.ArxivID))
	b.WriteString("</p>")
	tags := hashtags(p.Categories, p.PrimaryCategory)
	writeTags(&b, tags)
	n := &Note{
		Context: asContext, ID: s.noteURL(id), Type: "Note", AttributedTo: actor,
		Published: published.UTC().Format(time.RFC3339), URL: p.AbsURL,
		To: []string{Public}, Cc: []string{actor + "/followers"}, Content: b.String(), Tag: tags,
	}
	if updated {
		n.Updated = s.now().UTC().Format(time.RFC3339)
	}
	return n
}

// hashtags are the tags of categories, the primary first.
func hashtags(categories []string, primary string) []Tag {
	seen := map[string]bool{}
	var out []Tag
	add := func(c string) {
		if c == "" || seen[c] {
			return
		}
		seen[c] = true
		name := strings.NewReplacer(".", "_", "-", "_").Replace(c)
		out = append(out, Tag{Type: "Hashtag", Href: "https://arxiv.org/list/" + c + "/new", Name: "#" + name})
	}
	add(primary)
	for _, c := range categories {
		add(c)
	}
	return out
}

func writeTags(b *strings.Builder, tags []Tag) {
	if len(tags) == 0 {
		return
	}
	b.WriteString("<p>")
	for i, t := range tags {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(b, `<a href="%s" class="mention hashtag" rel="tag">#<span>%s</span></a>`,
			html.EscapeString(t.Href), html.EscapeString(strings.TrimPrefix(t.Name, "#")))
	}
	b.WriteString("</p>")
}

// actorURLOfKey is the actor URL of an actor key.
func (s *Service) actorURLOfKey(key string) string {
	t, err := follow.TargetFromKey(key)
	if err != nil {
		return s.abs(ActorPrefix + key)
	}
	return s.ActorURL(t)
}

// highSeq is the newest committed seq (every row up to it is committed).
func (s *Service) highSeq(ctx context.Context) (int64, error) {
	if s.high == nil {
		return 0, errors.New("fediverse: no HighSeq configured")
	}
	return s.high(ctx)
}
