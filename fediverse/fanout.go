package fediverse

import (
	"context"
	"errors"
	"fmt"
	"html"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/follow"
	"followfeed/identity/registrysql"
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
	tag, err := tx.Exec(ctx, hookSQL, keys, s.now(), s.catNotes)
	if err != nil {
		return fmt.Errorf("marking ActivityPub actors due: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return s.enq.EnqueueFanout(ctx, tx)
}

// hookSQL marks due the actors with followers ($3: category and archive
// actors too) whose identity has a key among $1 (MatchHook). Set-based:
// the candidate actors (a few thousand at most) are expanded through the
// registry (a primary-key probe and an index-only scan of identity_keys
// each) and hash-joined with the batch's keys once. A correlated EXISTS
// per actor, as first written, scanned the batch's 17,000 keys once per
// actor: 37 s for 1,000 actors (EXPLAIN ANALYZE). An actor already due is
// updated too: its row lock makes the hook wait for a fan-out that holds
// the actor (and is about to clear due_at with a window that may end
// before this batch), and mark it due again after that commits.
var hookSQL = `
		WITH cand AS (
			SELECT a.key FROM ap_actors a
			WHERE ($3 OR NOT (a.key LIKE 'category:%' OR a.key LIKE 'archive:%'))
			  AND EXISTS (SELECT 1 FROM ap_followers f WHERE f.actor_key = a.key)
		), x AS (
			SELECT key AS actor, key FROM cand
			UNION ALL
			SELECT c.key, k2.key FROM cand c
			` + registrysql.Joined("c.key") + `
		), hit AS (
			SELECT DISTINCT x.actor FROM x JOIN (SELECT DISTINCT key FROM unnest($1::text[]) AS b(key)) b ON b.key = x.key
		)
		UPDATE ap_actors a SET due_at = coalesce(a.due_at, $2) FROM hit WHERE a.key = hit.actor`

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
		n, handled := 0, 0
		err := s.db.InTx(ctx, func(tx pgx.Tx) error {
			n, handled = 0, 0
			// ap_actors_due_idx; SKIP LOCKED lets a second fan-out work on.
			due, err := lockActors(ctx, tx, `
				SELECT key, watermark FROM ap_actors WHERE due_at IS NOT NULL
				ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED`, fanoutChunk)
			if err != nil {
				return fmt.Errorf("reading due actors: %w", err)
			}
			handled = len(due)
			if handled == 0 {
				return nil
			}
			// The window ends at the high seq read after the actors were
			// locked: a batch whose hook ran before that committed its rows
			// before, and a later one's hook waits for these locks and marks
			// the actor due again (hookSQL).
			high, err := s.highSeq(ctx)
			if err != nil {
				return err
			}
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

// lockActors reads (and, by the statement's FOR UPDATE, locks) actors.
func lockActors(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]dueActor, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var due []dueActor
	var a dueActor
	_, err = pgx.ForEachRow(rows, []any{&a.key, &a.watermark}, func() error {
		due = append(due, a)
		return nil
	})
	return due, err
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
// version of one it did. It returns the activities written. The statements
// are set-wise (ids reserved from the sequences, rows written through
// unnest): a handful per actor, whatever its papers.
func (s *Service) publishPapers(ctx context.Context, tx pgx.Tx, key string, papers []match.Paper) (int, error) {
	var fresh, replaced []match.Paper
	for i := len(papers) - 1; i >= 0; i-- {
		switch p := papers[i]; {
		case p.ArxivID == "": // not loaded: gone meanwhile
		case p.Replaced:
			replaced = append(replaced, p)
		default:
			fresh = append(fresh, p)
		}
	}
	if len(fresh)+len(replaced) == 0 {
		return 0, nil
	}
	t, err := follow.TargetFromKey(key)
	if err != nil {
		return 0, err
	}
	actor := s.ActorURL(t)
	type posted struct {
		note *Note
		id   int64
		typ  string
	}
	var out []posted
	now := s.now()
	if len(fresh) > 0 {
		ids, err := reserve(ctx, tx, "ap_notes", len(fresh))
		if err != nil {
			return 0, err
		}
		byID := map[int64]*Note{}
		objects, paperIDs, versions := make([]string, len(fresh)), make([]int64, len(fresh)), make([]int32, len(fresh))
		for i, p := range fresh {
			n := s.paperNote(ids[i], actor, p.Paper, now, false)
			byID[ids[i]] = n
			objects[i], paperIDs[i], versions[i] = string(jsonBytes(n)), p.ID, int32(max(p.Version, 1))
		}
		rows, err := tx.Query(ctx, `
			INSERT INTO ap_notes (id, actor_key, paper_id, version, object, published_at)
			SELECT i, $2, p, v, o, $6 FROM unnest($1::bigint[], $3::bigint[], $4::int[], $5::text[]) AS x(i, p, v, o)
			ON CONFLICT (actor_key, paper_id) WHERE paper_id IS NOT NULL DO NOTHING
			RETURNING id`, ids, key, paperIDs, versions, objects, now)
		if err != nil {
			return 0, fmt.Errorf("writing the notes of %s: %w", key, err)
		}
		written, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return 0, err
		}
		slices.Sort(written)
		for _, id := range written {
			out = append(out, posted{note: byID[id], id: id, typ: "Create"})
		}
	}
	if len(replaced) > 0 {
		paperIDs, versions := make([]int64, len(replaced)), make([]int32, len(replaced))
		byPaper := map[int64]match.Paper{}
		for i, p := range replaced {
			paperIDs[i], versions[i] = p.ID, int32(p.Version)
			byPaper[p.ID] = p
		}
		// A new version of a paper this actor never posted updates nothing.
		rows, err := tx.Query(ctx, `
			UPDATE ap_notes n SET version = x.v FROM unnest($2::bigint[], $3::int[]) AS x(p, v)
			WHERE n.actor_key = $1 AND n.paper_id = x.p AND n.version < x.v AND n.deleted_at IS NULL
			RETURNING n.id, n.paper_id, n.published_at`, key, paperIDs, versions)
		if err != nil {
			return 0, fmt.Errorf("updating the notes of %s: %w", key, err)
		}
		var ids []int64
		var objects []string
		var id, pid int64
		var published time.Time
		if _, err := pgx.ForEachRow(rows, []any{&id, &pid, &published}, func() error {
			n := s.paperNote(id, actor, byPaper[pid].Paper, published, true)
			out = append(out, posted{note: n, id: id, typ: "Update"})
			ids, objects = append(ids, id), append(objects, string(jsonBytes(n)))
			return nil
		}); err != nil {
			return 0, err
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE ap_notes n SET object = x.o FROM unnest($1::bigint[], $2::text[]) AS x(i, o) WHERE n.id = x.i`,
				ids, objects); err != nil {
				return 0, err
			}
		}
	}
	if len(out) == 0 {
		return 0, nil
	}
	ids, err := reserve(ctx, tx, "ap_activities", len(out))
	if err != nil {
		return 0, err
	}
	types, noteIDs, bodies := make([]string, len(out)), make([]int64, len(out)), make([]string, len(out))
	for i, p := range out {
		a := Activity{Context: asContext, ID: s.activityURL(ids[i]), Type: p.typ, Actor: actor, Published: p.note.Published,
			To: p.note.To, Cc: p.note.Cc, Object: noteWithoutContext(p.note)}
		types[i], noteIDs[i], bodies[i] = p.typ, p.id, string(jsonBytes(a))
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO ap_activities (id, actor_key, type, note_id, body, created_at)
		SELECT i, $2, t, n, b, $6 FROM unnest($1::bigint[], $3::text[], $4::bigint[], $5::text[]) AS x(i, t, n, b)`,
		ids, key, types, noteIDs, bodies, now); err != nil {
		return 0, fmt.Errorf("writing the activities of %s: %w", key, err)
	}
	inboxes, err := s.followerInboxes(ctx, tx, key)
	if err != nil {
		return 0, err
	}
	return len(out), s.deliver(ctx, tx, ids, inboxes)
}

// reserve takes n ids of table's serial id column at once.
func reserve(ctx context.Context, tx pgx.Tx, table string, n int) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id')) FROM generate_series(1, $2)`, table, n)
	if err != nil {
		return nil, fmt.Errorf("reserving %d ids of %s: %w", n, table, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
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
