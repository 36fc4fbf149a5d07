// Package catalog owns the stored papers: the one writer of tables papers,
// paper_keys, match_state, key_seq_times, search_hits and
// paper_search_hits. Sources (package harvest, the push endpoint) hand
// papers (package paper) to Store.Ingest, which stores them with their
// match keys and query hits under a seq and enqueues the match job
// in the same transaction; OpenAlex enrichment goes through Store.Enrich, a
// newly followed query's first matches through Store.BackfillSearch.
// Package match reads papers back with Load and the seqs up to HighSeq.
package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/paper"
)

// MatchEnqueuer inserts the match job of newly written keys, inside the
// transaction that wrote them, so the job exists exactly when the keys do.
// Package worker implements it with River's InsertTx.
type MatchEnqueuer interface {
	EnqueueMatch(ctx context.Context, tx pgx.Tx, fromSeq, toSeq int64) error
}

// BackfillEnqueuer inserts the backfill job of a newly followed
// query (normal form normalized, over the papers announced since since)
// inside the follow's transaction, so the job exists exactly when the
// follow does. A follow of a search whose job is still waiting or running
// adds no second job. Package worker implements it with River's InsertTx,
// unique per search; the job calls Store.BackfillSearch.
type BackfillEnqueuer interface {
	EnqueueBackfill(ctx context.Context, tx pgx.Tx, normalized string, since time.Time) error
}

// Enqueuer is every job a Store causes: match jobs of the keys it writes
// and backfills of newly followed queries. Package worker's Enqueuer
// implements it.
type Enqueuer interface {
	MatchEnqueuer
	BackfillEnqueuer
}

// IdentityObserver learns from stored papers which researcher ids name the
// same person: the ids listed on one author. It runs inside the ingest
// transaction, after the papers are written, with the papers whose author
// ids are new. Package identity implements it.
type IdentityObserver interface {
	ObservePapers(ctx context.Context, tx pgx.Tx, papers []paper.Paper) error
}

// Source says where papers came from; pushed papers are validated strictly.
type Source string

// The sources.
const (
	SourceOAI  Source = "oai"
	SourcePush Source = "push"
)

// MaxBatch is the most papers one Ingest call accepts.
const MaxBatch = 10_000

// keyWritersLock is the transaction-level advisory lock every ingest holds
// from its first read of stored papers to its commit. It serialises writers
// of papers and paper_keys, which gives two guarantees:
//
//   - seq order equals commit order: seq values are taken under the lock and
//     the lock is released at commit, so a user that has seen every row up
//     to seq W never later finds a committed row with seq <= W;
//   - concurrent batches sharing papers cannot deadlock or race on the
//     read-merge-write of a paper.
//
// The price is one writer at a time. A 5,000-paper batch commits in about a
// second (see BENCHMARKS.md), far above arXiv's few thousand papers a day;
// validation and decoding happen before the lock is taken, and a query's
// backfill takes it only for its writes, after its scan (BackfillSearch).
const keyWritersLock int64 = 0x6b657973 // "keys"

// WritersLock is keyWritersLock's id as pg_locks shows it (locktype
// advisory, objid 1801812339, classid 0): an operator looking for who
// holds up an ingest, and tests that hold it on purpose, use it. Holding
// it stops every writer of papers and paper_keys until the holder's
// transaction ends.
const WritersLock = keyWritersLock

// lockWriters takes keyWritersLock until tx ends.
func lockWriters(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, keyWritersLock); err != nil {
		return fmt.Errorf("taking the writers' lock: %w", err)
	}
	return nil
}

// IngestResult reports what an Ingest did.
type IngestResult struct {
	Received  int `json:"received"`
	New       int `json:"new"`       // papers not seen before
	Replaced  int `json:"replaced"`  // a newer version of a known paper
	Updated   int `json:"updated"`   // same version, new metadata or keys (enrichment)
	Unchanged int `json:"unchanged"` // nothing new (including older versions)
	Deleted   int `json:"deleted"`   // withdrawn by the source
	// Skipped lists records a lenient source sent that could not be used.
	Skipped []apperr.Detail `json:"skipped,omitempty"`
	Keys    int             `json:"keys"` // match-key rows written
	// Hits counts the query matches written (papers in search_hits
	// rows; not in Keys).
	Hits    int   `json:"-"`
	FromSeq int64 `json:"-"`
	ToSeq   int64 `json:"-"`
}

// Store is the one writer of tables papers, paper_keys, match_state,
// key_seq_times, search_hits and paper_search_hits: it stores papers with
// their match keys and query hits (Ingest, Enrich, BackfillSearch),
// keeps the enrichment schedule in papers (DueForEnrichment,
// PostponeEnrichment), and reads the high seq (HighSeq). Every write of
// keys or hits takes keyWritersLock.
type Store struct {
	db        *database.DB
	enq       Enqueuer
	searches  searchCache
	observers []IdentityObserver
	// backfillScanned, when set (tests), is called by BackfillSearch
	// after each chunk of its scan, before the writers' lock is taken,
	// with the search and how many papers it has scanned.
	backfillScanned func(normalized string, scanned int)
}

// ObserveIdentities registers o to see the papers every write stores with
// new author ids. Register before any write; not safe concurrently with
// writes.
func (st *Store) ObserveIdentities(o IdentityObserver) { st.observers = append(st.observers, o) }

// NewStore returns a Store writing to db and enqueuing its match and
// backfill jobs through enq.
func NewStore(db *database.DB, enq Enqueuer) *Store {
	return &Store{db: db, enq: enq}
}

// Ingest validates and stores papers in one transaction, together with the
// match job of the keys it wrote. From a push source, any invalid paper
// fails the whole batch with an *apperr.Error listing every problem (index,
// field, reason) and nothing is written; from a harvest source, invalid
// records are skipped and listed in the result. Ingesting the same records
// twice changes nothing the second time and enqueues no job.
func (st *Store) Ingest(ctx context.Context, papers []paper.Paper, src Source) (*IngestResult, error) {
	if len(papers) > MaxBatch {
		return nil, apperr.New(apperr.TooLarge, "at most %d papers per request; got %d", MaxBatch, len(papers))
	}
	res := &IngestResult{Received: len(papers)}
	strict := src == SourcePush
	var problems []apperr.Detail
	byID := map[string]int{}
	var batch []paper.Paper
	for i := range papers {
		p := papers[i]
		if fe := p.Normalize(strict); fe != nil {
			problems = append(problems, apperr.Detail{Index: i, Field: fe.Field, Reason: fe.Reason})
			continue
		}
		// The same paper twice in one batch: the newer version wins, and
		// the later record among equals.
		if j, dup := byID[p.ArxivID]; dup {
			if p.Version >= batch[j].Version {
				batch[j] = p
			}
			continue
		}
		byID[p.ArxivID] = len(batch)
		batch = append(batch, p)
	}
	if len(problems) > 0 {
		if strict {
			return nil, &apperr.Error{Code: apperr.Invalid, Details: problems,
				Message: fmt.Sprintf("%d of %d papers are invalid; nothing was stored (see errors)", len(problems), len(papers))}
		}
		res.Skipped = problems
	}
	if len(batch) == 0 {
		return res, nil
	}
	// Rows are locked and written in arxiv_id order.
	slices.SortFunc(batch, func(a, b paper.Paper) int { return strings.Compare(a.ArxivID, b.ArxivID) })
	err := st.db.InTx(ctx, func(tx pgx.Tx) error {
		return st.apply(ctx, tx, batch, src, res)
	})
	if err != nil {
		return nil, fmt.Errorf("ingesting %d papers: %w", len(batch), err)
	}
	return res, nil
}

// stored is what the database holds of a paper.
type stored struct {
	id      int64
	paper   paper.Paper
	deleted bool
	keys    map[string]bool
	// searches are the query keys with a search_hits row of the
	// paper (kept apart from keys: they are not paper_keys rows).
	searches map[string]bool
}

// keyRow is one paper_keys row to write.
type keyRow struct {
	PaperID     int64  `json:"paper_id"`
	Key         string `json:"key"`
	Version     int    `json:"version"`
	Cross       bool   `json:"cross_list"`
	Replacement bool   `json:"replacement"`
	NewPaper    bool   `json:"new_paper"`        // written with the paper's first insert
	Event       string `json:"event"`            // a followed paper's event (events.go), "" otherwise
	Detail      string `json:"detail,omitempty"` // what the event's user is told
}

func (st *Store) apply(ctx context.Context, tx pgx.Tx, batch []paper.Paper, src Source, res *IngestResult) error {
	if err := lockWriters(ctx, tx); err != nil {
		return err
	}
	ids := make([]string, len(batch))
	for i, p := range batch {
		ids[i] = p.ArxivID
	}
	existing, err := loadForUpdate(ctx, tx, ids)
	if err != nil {
		return err
	}
	var fresh []paper.Paper
	for _, p := range batch {
		if _, ok := existing[p.ArxivID]; !ok && !p.Deleted {
			if p.Version == 0 {
				p.Version = 1
			}
			fresh = append(fresh, p)
		}
	}
	inserted, err := insertPapers(ctx, tx, fresh, src)
	if err != nil {
		return err
	}
	// Papers a writer outside this package inserted meanwhile (ON CONFLICT
	// DO NOTHING skipped them) are committed now: treat them as existing.
	var raced []string
	for _, p := range fresh {
		if _, ok := inserted[p.ArxivID]; !ok {
			raced = append(raced, p.ArxivID)
		}
	}
	if len(raced) > 0 {
		more, err := loadForUpdate(ctx, tx, raced)
		if err != nil {
			return err
		}
		for k, v := range more {
			existing[k] = v
		}
	}

	return st.write(ctx, tx, batch, existing, inserted, res)
}

// write stores batch against what is stored (existing, locked by the
// caller; inserted are the papers this transaction just created): merged
// papers, new key rows, withdrawals, and the match job of the keys written.
// The caller holds keyWritersLock.
func (st *Store) write(ctx context.Context, tx pgx.Tx, batch []paper.Paper, existing map[string]*stored, inserted map[string]int64, res *IngestResult) error {
	c, err := st.collectChanges(ctx, tx, batch, existing, inserted, res)
	if err != nil {
		return err
	}
	if err := updatePapers(ctx, tx, c.updateIDs, c.updates); err != nil {
		return err
	}
	if err := withdraw(ctx, tx, c.deletes); err != nil {
		return err
	}
	if err := st.observe(ctx, tx, c.observed); err != nil {
		return err
	}
	return st.writeMatches(ctx, tx, c.keys, c.hits, res)
}

// changes is what one write stores, sorted out of its batch before any of
// it is written.
type changes struct {
	keys      []keyRow // in the order they take their seqs
	hits      hitSet
	freshHits [][]int64     // new papers' hits, by search number (searchMatches.set)
	observed  []paper.Paper // papers with author ids new to them
	updates   []paper.Paper // merged records that changed a stored paper
	updateIDs []int64       // their papers.id
	deletes   []int64       // stored papers the source withdrew
}

// collectChanges reads what the batch's changes depend on (which of its
// stored papers somebody follows, the followed papers its references cite,
// the queries its papers match) and sorts every record of the batch
// into changes, counting it in res.
func (st *Store) collectChanges(ctx context.Context, tx pgx.Tx, batch []paper.Paper, existing map[string]*stored, inserted map[string]int64, res *IngestResult) (changes, error) {
	// Followed papers (kind paper) get event rows (events.go).
	storedIDs := make([]string, 0, len(existing))
	ids := make(map[string]int64, len(existing)+len(inserted))
	for aid, s := range existing {
		storedIDs = append(storedIDs, aid)
		ids[aid] = s.id
	}
	for aid, id := range inserted {
		ids[aid] = id
	}
	followed, err := follow.FollowedPapers(ctx, tx, storedIDs)
	if err != nil {
		return changes{}, err
	}
	cites, err := citeEvents(ctx, tx, batch, ids)
	if err != nil {
		return changes{}, err
	}
	// Queries: only records from a source (inserted != nil); an
	// enrichment adds ids, never text.
	var matched searchMatches
	if inserted != nil {
		if matched, err = st.searchKeys(ctx, tx, batch, existing, inserted); err != nil {
			return changes{}, err
		}
	}
	c := changes{keys: cites, hits: hitSet{}, freshHits: make([][]int64, matched.len())}
	for _, p := range batch {
		if id, ok := inserted[p.ArxivID]; ok {
			c.addNew(p, id, matched, res)
			continue
		}
		old, ok := existing[p.ArxivID]
		switch {
		case !ok: // a deleted record of a paper we never had
			res.Unchanged++
		case p.Deleted:
			c.addWithdrawal(old, followed[p.ArxivID], res)
		default:
			c.addRecord(p, old, matched, followed[p.ArxivID], res)
		}
	}
	for qi, ids := range c.freshHits {
		if len(ids) > 0 {
			c.hits[hitKind{key: matched.key(qi), newPaper: true}] = ids
		}
	}
	return c, nil
}

// addNew adds paper p, which this write inserted as id: every key row of
// it (all new) and its search hits. The hits go by search number, one row
// per search with a match, without a map operation per (search, paper).
func (c *changes) addNew(p paper.Paper, id int64, matched searchMatches, res *IngestResult) {
	res.New++
	if hasResearcherIDs(&p) {
		c.observed = append(c.observed, p)
	}
	for _, k := range p.Keys() {
		c.keys = append(c.keys, keyRow{PaperID: id, Key: k.Key, Version: max(p.Version, 1), Cross: k.Cross, NewPaper: true})
	}
	for _, qi := range matched.byPaper[p.ArxivID] {
		c.freshHits[qi] = append(c.freshHits[qi], id)
	}
}

// addWithdrawal adds the source's withdrawal of the stored paper old
// (withdraw removes its keys and hits) and, when somebody follows it
// (followed), its withdrawn event, written after its keys are removed. A
// paper withdrawn already is unchanged.
func (c *changes) addWithdrawal(old *stored, followed bool, res *IngestResult) {
	if old.deleted {
		res.Unchanged++
		return
	}
	res.Deleted++
	c.deletes = append(c.deletes, old.id)
	if followed {
		c.keys = append(c.keys, withdrawnEvent(old.id, old.paper))
	}
}

// addRecord adds record p of the stored paper old (from a source or an
// enrichment): the merged paper when it differs from old, its new key rows
// and search hits (replacements too when p is a new version), the events
// of a followed paper, and the merged paper for the identity observers
// when it brings researcher ids new to it. An older version than old's is
// unchanged.
func (c *changes) addRecord(p paper.Paper, old *stored, matched searchMatches, followed bool, res *IngestResult) {
	merged := merge(old.paper, p)
	replacing := merged.Version > old.paper.Version
	if p.Version != 0 && p.Version < old.paper.Version {
		res.Unchanged++ // an older version arriving late
		return
	}
	newHits := c.hits.addStored(old, matched.of(p.ArxivID), replacing)
	newKeys := storedKeyRows(old, merged, replacing)
	if followed && !old.deleted {
		newKeys = append(newKeys, paperEvents(old.id, old.paper, merged)...)
	}
	changed := !samePaper(old.paper, merged) || old.deleted
	switch {
	case replacing:
		res.Replaced++
	case changed || len(newKeys) > 0 || newHits:
		res.Updated++
	default:
		res.Unchanged++
	}
	if changed {
		c.updates = append(c.updates, merged)
		c.updateIDs = append(c.updateIDs, old.id)
	}
	c.keys = append(c.keys, newKeys...)
	if slices.ContainsFunc(newKeys, func(r keyRow) bool { return !r.Replacement && strings.HasPrefix(r.Key, "researcher:") }) {
		c.observed = append(c.observed, merged)
	}
}

// storedKeyRows returns the key rows merged, the new record of the stored
// paper old, adds: a row of each key old lacks and, with a new version
// (replacing), a replacement row of each key it keeps.
func storedKeyRows(old *stored, merged paper.Paper, replacing bool) []keyRow {
	var rows []keyRow
	for _, k := range merged.Keys() {
		switch {
		case !old.keys[k.Key]:
			rows = append(rows, keyRow{PaperID: old.id, Key: k.Key, Version: merged.Version, Cross: k.Cross, Replacement: false, NewPaper: false})
		case replacing:
			rows = append(rows, keyRow{PaperID: old.id, Key: k.Key, Version: merged.Version, Cross: k.Cross, Replacement: true, NewPaper: false})
		}
	}
	if replacing {
		// Keys the new version no longer has still get a replacement
		// row: followers who opted in hear about the new version.
		for k := range old.keys {
			if isEventKey(k) {
				continue // a paper follow hears of events only
			}
			if !slices.ContainsFunc(rows, func(r keyRow) bool { return r.Key == k }) {
				rows = append(rows, keyRow{PaperID: old.id, Key: k, Version: merged.Version, Cross: false, Replacement: true, NewPaper: false})
			}
		}
	}
	return rows
}

// withdraw marks the papers ids withdrawn and removes their keys and search
// hits, so no feed or digest query needs to look at papers to leave them
// out. Should one ever come back, its keys are new again and its followers
// hear of it once more.
func withdraw(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE papers SET deleted_at = now(), modified_at = now() WHERE id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("marking %d papers deleted: %w", len(ids), err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM paper_keys WHERE paper_id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("removing the keys of %d deleted papers: %w", len(ids), err)
	}
	if err := removeHits(ctx, tx, ids); err != nil {
		return err
	}
	// Removed rows change what a snapshot holds below the high seq,
	// so the high seq moves (a seq of its own, with no row): a
	// private feed's validator, cached per high seq (feeds.Validators),
	// is computed again, and two processes never hold different
	// validators for the same high seq.
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT nextval('paper_key_seq')`).Scan(&seq); err != nil {
		return fmt.Errorf("taking a seq for %d withdrawals: %w", len(ids), err)
	}
	return advanceHighSeq(ctx, tx, seq)
}

// observe shows every identity observer the papers with author ids new to
// them.
func (st *Store) observe(ctx context.Context, tx pgx.Tx, papers []paper.Paper) error {
	if len(papers) == 0 {
		return nil
	}
	for _, o := range st.observers {
		if err := o.ObservePapers(ctx, tx, papers); err != nil {
			return fmt.Errorf("linking the author ids of %d papers: %w", len(papers), err)
		}
	}
	return nil
}

// writeMatches writes the key rows and search hits (writeKeys), records
// them in res and enqueues the match job of their seqs; with neither it
// does nothing.
func (st *Store) writeMatches(ctx context.Context, tx pgx.Tx, keys []keyRow, hits hitSet, res *IngestResult) error {
	if len(keys) == 0 && len(hits) == 0 {
		return nil
	}
	from, to, err := writeKeys(ctx, tx, keys, hits)
	if err != nil {
		return err
	}
	res.Keys, res.Hits, res.FromSeq, res.ToSeq = len(keys), hits.matches(), from, to
	if err := st.enq.EnqueueMatch(ctx, tx, from, to); err != nil {
		return fmt.Errorf("enqueuing match job for seq %d..%d: %w", from, to, err)
	}
	return nil
}

// writeKeys inserts key rows and query hits and returns their seq
// range (hits.write). The caller holds keyWritersLock (see there for why).
//
// The rows of papers this transaction inserted (NewPaper, not an event:
// nothing else can have written a key for such a paper) are most of a
// batch's: they go in with COPY, under a block of seqs reserved at once,
// sorted by key so that paper_keys_key_seq_idx is written leaf after leaf.
// The others go through INSERT … ON CONFLICT DO NOTHING.
func writeKeys(ctx context.Context, tx pgx.Tx, keys []keyRow, hits hitSet) (from, to int64, err error) {
	var fresh, rest []keyRow
	for _, k := range keys {
		if k.NewPaper && k.Event == "" {
			fresh = append(fresh, k)
		} else {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		if from, to, err = insertKeys(ctx, tx, rest); err != nil {
			return 0, 0, err
		}
	}
	if len(fresh) > 0 {
		f, t, err := copyKeys(ctx, tx, fresh)
		if err != nil {
			return 0, 0, err
		}
		if from == 0 || f < from {
			from = f
		}
		to = max(to, t)
	}
	if len(hits) > 0 {
		f, t, err := hits.write(ctx, tx)
		if err != nil {
			return 0, 0, err
		}
		if from == 0 || f < from {
			from = f
		}
		to = max(to, t)
	}
	if to == 0 {
		return 0, 0, nil
	}
	if err := advanceHighSeq(ctx, tx, to); err != nil {
		return 0, 0, err
	}
	return from, to, nil
}

// advanceHighSeq moves match_state.high_seq to to (a seq this transaction
// took under keyWritersLock) and records when (key_seq_times: a private
// feed's Last-Modified is when its newest row arrived). clock_timestamp,
// not now(): the transaction may have started well before its rows were
// written, and a time earlier than a change the user already saw would
// hide this one from If-Modified-Since.
func advanceHighSeq(ctx context.Context, tx pgx.Tx, to int64) error {
	if _, err := tx.Exec(ctx, `
		WITH m AS (UPDATE match_state SET high_seq = $1 WHERE high_seq < $1)
		INSERT INTO key_seq_times (to_seq, at) VALUES ($1, clock_timestamp()) ON CONFLICT DO NOTHING`, to); err != nil {
		return fmt.Errorf("advancing the high seq: %w", err)
	}
	return nil
}

// insertKeys writes rows that may exist already and returns the seq range
// of those written (0, 0 when none).
func insertKeys(ctx context.Context, tx pgx.Tx, keys []keyRow) (from, to int64, err error) {
	payload, err := json.Marshal(keys)
	if err != nil {
		return 0, 0, err
	}
	// ON CONFLICT DO NOTHING: a key already written for this version (a
	// concurrent enrichment of the same paper) keeps its first seq, and an
	// event already told (the same citing paper enriched again) is not told
	// twice.
	err = tx.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO paper_keys (paper_id, key, version, cross_list, replacement, new_paper, event, detail, seq)
			SELECT r.paper_id, r.key, r.version, r.cross_list, r.replacement, r.new_paper, r.event, nullif(r.detail, ''),
			       nextval('paper_key_seq')
			FROM jsonb_to_recordset($1::jsonb) AS r(paper_id bigint, key text, version int, cross_list boolean,
			                                        replacement boolean, new_paper boolean, event text, detail text)
			ON CONFLICT (paper_id, key, version, event) DO NOTHING
			RETURNING seq
		)
		SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) FROM ins`, payload).Scan(&from, &to)
	if err != nil {
		return 0, 0, fmt.Errorf("writing %d match keys: %w", len(keys), err)
	}
	return from, to, nil
}

// copyKeys writes the key rows of papers this transaction inserted, which
// no other row can conflict with (a repeated row is written once), and
// returns their seq range. Seqs follow the rows' order.
func copyKeys(ctx context.Context, tx pgx.Tx, keys []keyRow) (from, to int64, err error) {
	type seqRow struct {
		keyRow
		seq int64
	}
	rows := make([]seqRow, 0, len(keys))
	seen := make(map[keyRow]bool, len(keys))
	for _, k := range keys {
		id := keyRow{PaperID: k.PaperID, Key: k.Key, Version: k.Version}
		if !seen[id] {
			seen[id] = true
			rows = append(rows, seqRow{keyRow: k})
		}
	}
	// A block of seqs, taken at once: every writer of paper_keys takes its
	// seqs under keyWritersLock, so nothing can take one in between.
	if err := tx.QueryRow(ctx, `SELECT setval('paper_key_seq', nextval('paper_key_seq') + $1 - 1)`, len(rows)).Scan(&to); err != nil {
		return 0, 0, fmt.Errorf("reserving %d seqs: %w", len(rows), err)
	}
	from = to - int64(len(rows)) + 1
	for i := range rows {
		rows[i].seq = from + int64(i)
	}
	slices.SortFunc(rows, func(a, b seqRow) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"paper_keys"},
		[]string{"paper_id", "key", "version", "cross_list", "replacement", "new_paper", "event", "detail", "seq"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := &rows[i]
			return []any{r.PaperID, r.Key, r.Version, r.Cross, r.Replacement, r.NewPaper, r.Event, nullStr(r.Detail), r.seq}, nil
		}))
	if err != nil {
		return 0, 0, fmt.Errorf("writing %d match keys of new papers: %w", len(rows), err)
	}
	if n != int64(len(rows)) {
		return 0, 0, fmt.Errorf("wrote %d of %d match keys of new papers", n, len(rows))
	}
	return from, to, nil
}

// paperRow is the JSON shape papers are written in (jsonb_to_recordset).
type paperRow struct {
	ID              int64          `json:"id,omitempty"`
	ArxivID         string         `json:"arxiv_id"`
	Version         int            `json:"version"`
	Title           string         `json:"title"`
	Abstract        string         `json:"abstract"`
	Authors         []paper.Author `json:"authors"`
	PrimaryCategory string         `json:"primary_category"`
	Categories      []string       `json:"categories"`
	Institutions    []string       `json:"institutions"`
	DOI             *string        `json:"doi"`
	JournalRef      *string        `json:"journal_ref"`
	Comments        *string        `json:"comments"`
	SubmittedAt     *time.Time     `json:"submitted_at"`
	UpdatedAt       *time.Time     `json:"updated_at"`
	AnnouncedAt     *time.Time     `json:"announced_at"`
	AbsURL          string         `json:"abs_url"`
	PDFURL          string         `json:"pdf_url"`
	Source          string         `json:"source"`
	EnrichAfter     *time.Time     `json:"enrich_after"`
}

func toRow(p paper.Paper, src Source) paperRow {
	r := paperRow{ArxivID: p.ArxivID, Version: p.Version, Title: p.Title, Abstract: p.Abstract, Authors: p.Authors,
		PrimaryCategory: p.PrimaryCategory, Categories: p.Categories, Institutions: p.Institutions,
		DOI: nullStr(p.DOI), JournalRef: nullStr(p.JournalRef), Comments: nullStr(p.Comments),
		SubmittedAt: nullTime(p.SubmittedAt), UpdatedAt: nullTime(p.UpdatedAt), AnnouncedAt: nullTime(p.AnnouncedAt),
		AbsURL: p.AbsURL, PDFURL: p.PDFURL, Source: string(src)}
	if r.Authors == nil {
		r.Authors = []paper.Author{}
	}
	if r.Institutions == nil {
		r.Institutions = []string{}
	}
	if src != "" && !hasResearcherIDs(&p) {
		// A new paper whose authors come without ids (OAI-PMH never has
		// them; the host may push names only): ask OpenAlex, or
		// researcher and institution follows could never match it.
		now := time.Now().UTC()
		r.EnrichAfter = &now
	}
	return r
}

// hasResearcherIDs reports whether any author of p carries a researcher id.
func hasResearcherIDs(p *paper.Paper) bool {
	for _, a := range p.Authors {
		if len(a.IDs) > 0 {
			return true
		}
	}
	return false
}

const recordsetColumns = `id bigint, arxiv_id text, version int, title text, abstract text, authors jsonb,
	primary_category text, categories text[], institutions text[], doi text, journal_ref text, comments text,
	submitted_at timestamptz, updated_at timestamptz, announced_at timestamptz, abs_url text, pdf_url text, source text,
	enrich_after timestamptz`

func insertPapers(ctx context.Context, tx pgx.Tx, papers []paper.Paper, src Source) (map[string]int64, error) {
	out := map[string]int64{}
	if len(papers) == 0 {
		return out, nil
	}
	rows := make([]paperRow, len(papers))
	for i, p := range papers {
		rows[i] = toRow(p, src)
	}
	payload, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	// Rows are inserted in arxiv_id order (the caller sorted them).
	r, err := tx.Query(ctx, `
		INSERT INTO papers (arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
		                    doi, journal_ref, comments, submitted_at, updated_at, announced_at, abs_url, pdf_url, source, enrich_after)
		SELECT arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
		       doi, journal_ref, comments, submitted_at, updated_at, announced_at, abs_url, pdf_url, source, enrich_after
		FROM jsonb_to_recordset($1::jsonb) AS r(`+recordsetColumns+`)
		ON CONFLICT (arxiv_id) DO NOTHING
		RETURNING id, arxiv_id`, payload)
	if err != nil {
		return nil, fmt.Errorf("inserting %d papers: %w", len(papers), err)
	}
	for r.Next() {
		var id int64
		var aid string
		if err := r.Scan(&id, &aid); err != nil {
			return nil, err
		}
		out[aid] = id
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("inserting %d papers: %w", len(papers), err)
	}
	return out, nil
}

func updatePapers(ctx context.Context, tx pgx.Tx, ids []int64, papers []paper.Paper) error {
	if len(papers) == 0 {
		return nil
	}
	rows := make([]paperRow, len(papers))
	for i, p := range papers {
		rows[i] = toRow(p, "")
		rows[i].ID = ids[i]
	}
	payload, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		UPDATE papers p SET version = r.version, title = r.title, abstract = r.abstract, authors = r.authors,
			primary_category = r.primary_category, categories = r.categories, institutions = r.institutions,
			doi = r.doi, journal_ref = r.journal_ref, comments = r.comments, submitted_at = r.submitted_at,
			updated_at = r.updated_at, announced_at = r.announced_at, abs_url = r.abs_url, pdf_url = r.pdf_url,
			deleted_at = NULL, modified_at = now()
		FROM jsonb_to_recordset($1::jsonb) AS r(`+recordsetColumns+`)
		WHERE p.id = r.id`, payload)
	if err != nil {
		return fmt.Errorf("updating %d papers: %w", len(papers), err)
	}
	return nil
}

// loadForUpdate reads and row-locks the stored papers among ids, with the
// keys each already has. Rows are locked in arxiv_id order.
func loadForUpdate(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*stored, error) {
	out := map[string]*stored{}
	rows, err := tx.Query(ctx, `
		SELECT id, arxiv_id, version, title, abstract, authors, primary_category, categories, institutions,
		       coalesce(doi, ''), coalesce(journal_ref, ''), coalesce(comments, ''),
		       coalesce(submitted_at, 'epoch'), coalesce(updated_at, 'epoch'), coalesce(announced_at, 'epoch'),
		       abs_url, pdf_url, deleted_at IS NOT NULL
		FROM papers WHERE arxiv_id = ANY($1)
		ORDER BY arxiv_id
		FOR UPDATE`, ids)
	if err != nil {
		return nil, fmt.Errorf("loading %d papers: %w", len(ids), err)
	}
	var paperIDs []int64
	for rows.Next() {
		s := &stored{keys: map[string]bool{}, searches: map[string]bool{}}
		p := &s.paper
		var authors []byte
		if err := rows.Scan(&s.id, &p.ArxivID, &p.Version, &p.Title, &p.Abstract, &authors, &p.PrimaryCategory,
			&p.Categories, &p.Institutions, &p.DOI, &p.JournalRef, &p.Comments, &p.SubmittedAt, &p.UpdatedAt,
			&p.AnnouncedAt, &p.AbsURL, &p.PDFURL, &s.deleted); err != nil {
			return nil, fmt.Errorf("reading stored paper: %w", err)
		}
		var err error
		if p.Authors, err = paper.DecodeAuthors(authors); err != nil {
			return nil, fmt.Errorf("reading authors of paper %d: %w", s.id, err)
		}
		for _, t := range []*time.Time{&p.SubmittedAt, &p.UpdatedAt, &p.AnnouncedAt} {
			if t.Unix() == 0 {
				*t = time.Time{}
			}
			*t = t.UTC()
		}
		out[p.ArxivID] = s
		paperIDs = append(paperIDs, s.id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("loading %d papers: %w", len(ids), err)
	}
	if len(paperIDs) == 0 {
		return out, nil
	}
	byID := map[int64]*stored{}
	for _, s := range out {
		byID[s.id] = s
	}
	// The primary key (paper_id, key, version) serves this lookup.
	krows, err := tx.Query(ctx, `SELECT DISTINCT paper_id, key FROM paper_keys WHERE paper_id = ANY($1)`, paperIDs)
	if err != nil {
		return nil, fmt.Errorf("loading keys of %d papers: %w", len(paperIDs), err)
	}
	defer krows.Close()
	for krows.Next() {
		var id int64
		var key string
		if err := krows.Scan(&id, &key); err != nil {
			return nil, err
		}
		byID[id].keys[key] = true
	}
	if err := krows.Err(); err != nil {
		return nil, fmt.Errorf("loading keys of %d papers: %w", len(paperIDs), err)
	}
	krows.Close()
	return out, loadSearches(ctx, tx, paperIDs, byID)
}

// merge combines what is stored with a newer (or equal) record of the same
// paper. The incoming record wins field by field, but never erases what it
// does not know: authors without ids keep the ids enrichment found for the
// same name, institutions accumulate, and empty fields keep stored values.
func merge(old, in paper.Paper) paper.Paper {
	m := in
	if m.Version == 0 || m.Version < old.Version {
		m.Version = old.Version
	}
	keep := func(dst *string, prev string) {
		if *dst == "" {
			*dst = prev
		}
	}
	keep(&m.Abstract, old.Abstract)
	keep(&m.DOI, old.DOI)
	keep(&m.JournalRef, old.JournalRef)
	keep(&m.Comments, old.Comments)
	if m.SubmittedAt.IsZero() || (!old.SubmittedAt.IsZero() && old.SubmittedAt.Before(m.SubmittedAt)) {
		m.SubmittedAt = old.SubmittedAt
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = old.UpdatedAt
	}
	if !old.AnnouncedAt.IsZero() && (m.AnnouncedAt.IsZero() || old.AnnouncedAt.Before(m.AnnouncedAt)) && m.Version == old.Version {
		m.AnnouncedAt = old.AnnouncedAt
	}
	if len(m.Authors) == 0 {
		m.Authors = old.Authors
	} else {
		idsByName := map[string][]string{}
		for _, a := range old.Authors {
			if len(a.IDs) > 0 {
				idsByName[paper.NameKey(a.Name)] = a.IDs
			}
		}
		authors := make([]paper.Author, len(m.Authors))
		for i, a := range m.Authors {
			authors[i] = paper.Author{Name: a.Name, IDs: slices.Clone(a.IDs)}
			for _, id := range idsByName[paper.NameKey(a.Name)] {
				if !slices.Contains(authors[i].IDs, id) {
					authors[i].IDs = append(authors[i].IDs, id)
				}
			}
		}
		m.Authors = authors
	}
	insts := slices.Clone(old.Institutions)
	for _, i := range m.Institutions {
		if !slices.Contains(insts, i) {
			insts = append(insts, i)
		}
	}
	m.Institutions = insts
	return m
}

func samePaper(a, b paper.Paper) bool {
	ja, _ := json.Marshal(toRow(a, ""))
	jb, _ := json.Marshal(toRow(b, ""))
	return string(ja) == string(jb)
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
