package catalog

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/follow"
	"followfeed/paper"
	"followfeed/search"
)

// Queries are match keys like any other: at ingest every new or
// changed paper of the batch is evaluated against every distinct
// query somebody follows (follow.ActiveQueries), with search.MatchBatch,
// and the papers a query matches are listed in one search_hits row of its
// key "query:<normal form>" per batch (hits.go), with a seq like key rows.
// Feeds, digests, channels and the match job read those rows alongside
// paper_keys (package match).

// searchCache keeps the followed queries compiled between batches, as
// one search.Set (no pointer per search, term or word: the process keeps
// it for good, and a large pointer-rich heap slows every request while
// the garbage collector marks it): a batch parses only the queries
// followed since the last one, and when the followed queries are the
// same as the last batch's (as read, in the same order) it reuses the
// last set whole.
type searchCache struct {
	mu  sync.Mutex
	set *search.Set
	// refused are the normal forms of the last read that no longer parse
	// (a category withdrawn from the taxonomy), by position in the read:
	// left out of set.
	refused []refusedSearch
}

type refusedSearch struct {
	at   int
	norm string
}

// compile returns the set of the searches of norms (normal forms of
// searches, as stored), in the same order and each named by its text as
// read (Set.String), leaving out a search that no longer parses. The set
// is shared between batches (it is read-only).
func (c *searchCache) compile(norms []string) *search.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.same(norms) {
		return c.set
	}
	// The searches compiled already, by normal form: only while building.
	var had map[string]int
	if c.set != nil {
		had = make(map[string]int, c.set.Len())
		for i := range c.set.Len() {
			had[c.set.String(i)] = i
		}
	}
	var b search.SetBuilder
	var refused []refusedSearch
	for at, n := range norms {
		if i, ok := had[n]; ok {
			b.AddFrom(c.set, i)
			continue
		}
		q, err := follow.CompileQuery(n)
		if err != nil {
			refused = append(refused, refusedSearch{at: at, norm: n})
			continue
		}
		// Named as read: its hits go under the key its followers follow,
		// even where parsing it again gives another normal form.
		b.AddAs(q, n)
	}
	c.set, c.refused = b.Set(), refused
	return c.set
}

// same reports whether norms are the searches of the last compile.
func (c *searchCache) same(norms []string) bool {
	if c.set == nil || len(norms) != c.set.Len()+len(c.refused) {
		return false
	}
	i, r := 0, 0
	for at, n := range norms {
		if r < len(c.refused) && c.refused[r].at == at {
			if c.refused[r].norm != n {
				return false
			}
			r++
			continue
		}
		if c.set.String(i) != n {
			return false
		}
		i++
	}
	return true
}

// sameText reports whether two records of a paper read the same to a
// search (title, abstract, author names, categories).
func sameText(a, b paper.Paper) bool {
	if a.Title != b.Title || a.Abstract != b.Abstract || a.PrimaryCategory != b.PrimaryCategory ||
		!slices.Equal(a.Categories, b.Categories) || len(a.Authors) != len(b.Authors) {
		return false
	}
	for i := range a.Authors {
		if a.Authors[i].Name != b.Authors[i].Name {
			return false
		}
	}
	return true
}

// searchMatches are the queries a batch's papers match: by arXiv
// id, numbers in set (ascending), the followed queries.
type searchMatches struct {
	byPaper map[string][]int32
	set     *search.Set
}

// len returns the number of followed queries.
func (m searchMatches) len() int {
	if m.set == nil {
		return 0
	}
	return m.set.Len()
}

// key returns the match key of search qi.
func (m searchMatches) key(qi int) string {
	return follow.Target{Kind: follow.Query, ID: m.set.String(qi)}.Key()
}

// of returns the keys of the searches the paper arxivID matches.
func (m searchMatches) of(arxivID string) []string {
	qis := m.byPaper[arxivID]
	if len(qis) == 0 {
		return nil
	}
	out := make([]string, len(qis))
	for i, qi := range qis {
		out[i] = m.key(int(qi))
	}
	return out
}

// searchKeys evaluates the batch's new papers, and the stored ones whose
// text a record changes, against every followed query. The caller holds
// keyWritersLock, so a query followed after this read is backfilled by
// BackfillSearch (its job takes the lock) after this batch commits.
func (st *Store) searchKeys(ctx context.Context, tx pgx.Tx, batch []paper.Paper, existing map[string]*stored, inserted map[string]int64) (searchMatches, error) {
	norms, err := follow.ActiveQueries(ctx, tx)
	if err != nil || len(norms) == 0 {
		return searchMatches{}, err
	}
	set := st.searches.compile(norms)
	var ids []string
	var texts []paper.Paper
	for _, p := range batch {
		if p.Deleted {
			continue
		}
		text := p
		if _, ok := inserted[p.ArxivID]; !ok {
			old, ok := existing[p.ArxivID]
			if !ok {
				continue
			}
			text = merge(old.paper, p)
			if sameText(old.paper, text) && text.Version == old.paper.Version && !old.deleted {
				continue
			}
		}
		ids = append(ids, p.ArxivID)
		texts = append(texts, text)
	}
	docs := make([]*search.Doc, len(texts))
	parallel(len(texts), func(i int) { docs[i] = texts[i].Doc() })
	m := searchMatches{byPaper: make(map[string][]int32, len(ids)), set: set}
	for i, hits := range set.Match(docs) {
		if len(hits) > 0 {
			m.byPaper[ids[i]] = hits
		}
	}
	return m, nil
}

// parallel calls fn(0) … fn(n−1), a share of them on each core.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 1+n/500)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// BackfillDays is how far back a newly followed query looks, so that its
// feed is not empty on the first day.
const BackfillDays = 30

// BackfillSearch gives a newly followed query (its normal form) its
// matches among the papers announced since since: it evaluates the search
// against those papers it has not matched yet (no search_hits row lists
// them), writes one search_hits row of those papers, bumps the search's
// followers' feed versions (so their ETags change exactly when the matches
// land), enqueues the match job of the rows (instant alerts, channels) and
// calls done (the job's completion, which commits with the rows). It runs
// from the backfill job that the follow enqueued (BackfillHook), never
// inside a follow request.
//
// It writes nothing for papers that already have a row (a search followed
// continuously has them all), so the followers of an existing search are
// not told about old papers again; nothing when nobody follows the search
// any more (unfollowed before its job ran); and nothing, without calling
// done, when it no longer parses (a category withdrawn from the taxonomy,
// which ingest skips too). Running it twice writes nothing the second time.
// It returns how many papers it added.
//
// It never holds keyWritersLock while it scans, so ingest goes on meanwhile
// (a month is some 25,000 papers, a second or two of evaluation). In three
// steps:
//
//  1. the scan, without the lock: the window's papers are read in chunks
//     (scanRecent: no connection is held while a chunk is evaluated) and
//     evaluated, remembering each row's version (xmin, the transaction that
//     wrote it);
//  2. catching up, without the lock: the window's (id, xmin) are listed
//     again and the papers new or changed since they were evaluated are
//     read and evaluated again, until few are left (an ingest of thousands
//     of papers during the scan is evaluated here, not under the lock);
//  3. under the lock, one last catch-up (one index range of ids and xmins,
//     some 25 ms at 25,000 papers, and what changed since step 2) and the
//     writes, in the transaction that completes the job.
//
// So the matches written are those of every paper's text as it is under
// the lock, exactly what a scan under the lock would find: a paper
// changed, withdrawn or moved out of the window after it was evaluated is
// evaluated again or dropped, a paper stored after the scan began is
// evaluated. Why the lock at the end: an ingest that read
// follow.ActiveQueries before the follow committed did not match its
// papers against this search; holding the lock means every such ingest
// has committed before the last catch-up lists the papers, and no ingest
// commits between that listing and the rows. Why follow.HoldFollowers
// after the catch-up, and done in the same transaction: a follow that
// found this job already queued or running inserted no job of its own, so
// it must have committed before the rows do (HoldFollowers waits for it),
// and a follow that comes later must find the job completed and insert a
// new one.
func (st *Store) BackfillSearch(ctx context.Context, normalized string, since time.Time, done func(tx pgx.Tx) error) (int, error) {
	q, err := follow.CompileQuery(normalized)
	if err != nil {
		return 0, nil
	}
	t := follow.Target{Kind: follow.Query, ID: normalized}
	key := t.Key()
	ev := backfillEval{q: q, seen: map[int64]uint32{}, matched: map[int64]bool{}}
	// 1. The scan, on the primary (the xmins are compared with its rows).
	err = scanRecent(ctx, st.readPrimary, since, func(chunk []recentPaper) (bool, error) {
		ev.evaluate(chunk)
		if st.backfillScanned != nil {
			st.backfillScanned(normalized, len(ev.seen))
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("backfilling search %q: %w", normalized, err)
	}
	// 2. Catching up while papers keep changing, a few rounds at most.
	for range backfillCatchUps {
		var changed int
		err := st.readPrimary(ctx, func(tx pgx.Tx) error {
			var err error
			changed, err = ev.catchUp(ctx, tx, since)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("backfilling search %q: %w", normalized, err)
		}
		if changed <= backfillSettled {
			break
		}
	}
	// 3. Under the lock: the last catch-up and the writes.
	added := 0
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		added = 0
		if err := lockWriters(ctx, tx); err != nil {
			return err
		}
		if _, err := ev.catchUp(ctx, tx, since); err != nil {
			return err
		}
		had, err := SearchHits(ctx, tx, key)
		if err != nil {
			return err
		}
		var ids []int64
		for id := range ev.matched {
			if _, ok := slices.BinarySearch(had, id); !ok {
				ids = append(ids, id)
			}
		}
		followers, err := follow.HoldFollowers(ctx, tx, t)
		if err != nil {
			return err
		}
		if len(ids) > 0 && len(followers) > 0 {
			from, to, err := writeKeys(ctx, tx, nil, hitSet{hitKind{key: key}: ids})
			if err != nil {
				return err
			}
			if to > 0 {
				added = len(ids)
				if err := account.BumpFeeds(ctx, tx, followers...); err != nil {
					return err
				}
				if err := st.enq.EnqueueMatch(ctx, tx, from, to); err != nil {
					return fmt.Errorf("enqueuing match job for seq %d..%d: %w", from, to, err)
				}
			}
		}
		if done != nil {
			return done(tx)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("backfilling search %q: %w", normalized, err)
	}
	return added, nil
}

// backfillCatchUps is how many catch-up rounds a backfill runs without the
// writers' lock, and backfillSettled how few changed papers end them early.
const (
	backfillCatchUps = 3
	backfillSettled  = 50
)

// backfillEval is a backfill's evaluation of its search on the window's
// papers: the row version each was evaluated at and the ones it matched.
type backfillEval struct {
	q       *search.Query
	seen    map[int64]uint32 // paper id → xmin of the row evaluated
	matched map[int64]bool
}

// evaluate evaluates the search on papers and remembers their versions.
func (ev *backfillEval) evaluate(papers []recentPaper) {
	for i := range papers {
		r := &papers[i]
		ev.seen[r.id] = r.xmin
		if ev.q.Match(r.paper.Doc()) {
			ev.matched[r.id] = true
		} else {
			delete(ev.matched, r.id)
		}
	}
}

// catchUp lists the window's papers as tx sees them (id and xmin, one
// range of papers_recent_idx), forgets those no longer in it (withdrawn,
// moved out, deleted), and reads and evaluates again those new or changed
// since they were evaluated. It returns how many it evaluated.
func (ev *backfillEval) catchUp(ctx context.Context, tx pgx.Tx, since time.Time) (int, error) {
	rows, err := tx.Query(ctx, recentVersionsSQL, since)
	if err != nil {
		return 0, fmt.Errorf("listing recent papers: %w", err)
	}
	now := make(map[int64]uint32, len(ev.seen))
	var changed []int64
	var id int64
	var xmin uint32
	_, err = pgx.ForEachRow(rows, []any{&id, &xmin}, func() error {
		now[id] = xmin
		if x, ok := ev.seen[id]; !ok || x != xmin {
			changed = append(changed, id)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("listing recent papers: %w", err)
	}
	for id := range ev.seen {
		if _, ok := now[id]; !ok {
			delete(ev.seen, id)
			delete(ev.matched, id)
		}
	}
	if len(changed) == 0 {
		return 0, nil
	}
	papers, err := readPapers(ctx, tx, changed)
	if err != nil {
		return 0, err
	}
	ev.evaluate(papers)
	return len(changed), nil
}

// Preview is what a search would have found.
type Preview struct {
	// Count is how many papers of the window match (of the papers
	// searched, when not Complete).
	Count int
	// Newest are the newest matches (by announcement), at most the limit.
	Newest []paper.Paper
	// Searched is how many papers were evaluated, newest first.
	Searched int
	// Complete: every paper of the window was searched. When the budget
	// ran out first, the answer is exact for the newest Searched papers,
	// those announced since SearchedSince.
	Complete bool
	// SearchedSince is when the oldest paper searched was announced (zero
	// when none was).
	SearchedSince time.Time
}

// PreviewOptions bound a preview.
type PreviewOptions struct {
	// Budget is how long the preview may take (0: no limit). It is
	// checked after each chunk (recentChunk papers, newest first): the
	// first chunk is always evaluated, and once the budget is spent no
	// further chunk is read and the answer is marked incomplete. So a
	// preview takes at most the budget and one chunk's evaluation.
	Budget time.Duration
	// OnChunk, when set, is called after each chunk is read, before it is
	// evaluated, while no connection is held (tests hold a preview there).
	OnChunk func(ctx context.Context)
}

// PreviewSearch evaluates q against the papers announced since since,
// newest first, and returns how many match and the newest limit of them.
// It writes nothing, reads on the read replica when one is attached and
// not lagging (bounded staleness, database.DB.Read), else on the primary,
// in chunks (scanRecent): a pooled connection is held only while a chunk
// is read, never while papers are evaluated. opt.Budget bounds the time
// (see PreviewOptions); one preview evaluates on one core.
func (st *Store) PreviewSearch(ctx context.Context, q *search.Query, since time.Time, limit int, opt PreviewOptions) (Preview, error) {
	pv := Preview{Complete: true}
	var deadline time.Time
	if opt.Budget > 0 {
		deadline = time.Now().Add(opt.Budget)
	}
	read := func(ctx context.Context, fn func(tx pgx.Tx) error) error { return st.db.Read(ctx, nil, fn) }
	err := scanRecent(ctx, read, since, func(chunk []recentPaper) (bool, error) {
		if opt.OnChunk != nil {
			opt.OnChunk(ctx)
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		for i := range chunk {
			p := &chunk[i].paper
			pv.Searched++
			pv.SearchedSince = p.AnnouncedAt
			if q.Match(p.Doc()) {
				pv.Count++
				if len(pv.Newest) < limit {
					pv.Newest = append(pv.Newest, *p)
				}
			}
		}
		if !deadline.IsZero() && len(chunk) == recentChunk && time.Now().After(deadline) {
			// Spent, with more to read.
			pv.Complete = false
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return Preview{}, fmt.Errorf("previewing a search: %w", err)
	}
	return pv, nil
}

// recentChunk is how many papers one read of scanRecent takes: some 5 ms
// of a connection, and 30–40 ms of evaluation on one core.
const recentChunk = 500

// recentCols are the columns scanRecent and readPapers read, and
// recentFrom the window's rows in newest-first order: the WHERE and ORDER
// BY are papers_recent_idx's expression and predicate, word for word.
const (
	recentCols = `p.id, p.xmin, p.arxiv_id, p.version, p.title, p.abstract, p.authors, p.primary_category, p.categories,
	       p.abs_url, coalesce(p.announced_at, p.submitted_at, p.created_at)`
	recentWhere = `coalesce(p.announced_at, p.submitted_at, p.created_at) >= $1 AND p.deleted_at IS NULL`
)

// recentSQL selects one chunk of scanRecent: the window's papers after the
// cursor ($2, $3: the announcement time and id of the last paper of the
// previous chunk), newest first, at most $4. The row comparison is a range
// of papers_recent_idx, so each chunk starts where the last one ended.
const recentSQL = `
	SELECT ` + recentCols + `
	FROM papers p
	WHERE ` + recentWhere + `
	  AND (coalesce(p.announced_at, p.submitted_at, p.created_at), p.id) < ($2, $3)
	ORDER BY coalesce(p.announced_at, p.submitted_at, p.created_at) DESC, p.id DESC
	LIMIT $4`

// recentVersionsSQL lists the window's papers with their row versions
// (xmin: the transaction that wrote the row), for a backfill's catch-up.
const recentVersionsSQL = `SELECT p.id, p.xmin FROM papers p WHERE ` + recentWhere

// scanCursorStart is a cursor before every paper.
var scanCursorStart = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// recentPaper is a paper as scanRecent reads it: the row's id and version
// (xmin), and the paper's text, categories and announcement time.
type recentPaper struct {
	id    int64
	xmin  uint32
	paper paper.Paper
}

// scanRecent calls fn with the papers not withdrawn and announced since
// since, newest first, recentChunk at a time, until fn returns false. Each
// chunk is read in a short read of its own (read: database.DB.Read, or a
// read on the primary), and fn runs after that read ended, so no
// connection is held while fn evaluates. The chunks are not one snapshot:
// a paper changed between two reads may be read twice or not at all (a
// backfill checks every paper again; a preview is a preview).
func scanRecent(ctx context.Context, read func(context.Context, func(pgx.Tx) error) error, since time.Time,
	fn func(chunk []recentPaper) (bool, error)) error {
	at, after := scanCursorStart, int64(math.MaxInt64)
	for {
		var chunk []recentPaper
		err := read(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, recentSQL, since, at, after, recentChunk)
			if err != nil {
				return fmt.Errorf("reading recent papers: %w", err)
			}
			chunk, err = collectRecent(rows)
			return err
		})
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			return nil
		}
		more, err := fn(chunk)
		if err != nil || !more || len(chunk) < recentChunk {
			return err
		}
		last := chunk[len(chunk)-1]
		at, after = last.paper.AnnouncedAt, last.id
	}
}

// readPapers reads the papers ids (recentCols), in any order.
func readPapers(ctx context.Context, tx pgx.Tx, ids []int64) ([]recentPaper, error) {
	rows, err := tx.Query(ctx, `SELECT `+recentCols+` FROM papers p WHERE p.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading %d papers: %w", len(ids), err)
	}
	return collectRecent(rows)
}

// collectRecent reads rows of recentCols.
func collectRecent(rows pgx.Rows) ([]recentPaper, error) {
	defer rows.Close()
	var out []recentPaper
	for rows.Next() {
		var r recentPaper
		p := &r.paper
		var authors []byte
		if err := rows.Scan(&r.id, &r.xmin, &p.ArxivID, &p.Version, &p.Title, &p.Abstract, &authors, &p.PrimaryCategory,
			&p.Categories, &p.AbsURL, &p.AnnouncedAt); err != nil {
			return nil, fmt.Errorf("reading recent paper: %w", err)
		}
		var err error
		if p.Authors, err = paper.DecodeAuthors(authors); err != nil {
			return nil, fmt.Errorf("reading authors of paper %d: %w", r.id, err)
		}
		p.AnnouncedAt = p.AnnouncedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading recent papers: %w", err)
	}
	return out, nil
}

// readPrimary runs fn in a read-only transaction on the primary.
func (st *Store) readPrimary(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, st.db.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, fn)
}

// BackfillHook returns the follow.Service hook that, inside the follow's
// transaction, enqueues the backfill of a newly followed query over
// the BackfillDays days before now (now may be nil: time.Now; the job runs
// BackfillSearch moments later, so the follow waits neither on
// keyWritersLock nor on the scan), and makes a newly followed paper without
// a known OpenAlex work due for enrichment (scheduleWorkLookup), so papers
// citing it can be recognised. Other kinds need nothing.
func (st *Store) BackfillHook(now func() time.Time) follow.FollowHook {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, tx pgx.Tx, _ int64, t follow.Target) error {
		switch t.Kind {
		case follow.Query:
			if err := st.enq.EnqueueBackfill(ctx, tx, t.ID, now().Add(-BackfillDays*24*time.Hour)); err != nil {
				return fmt.Errorf("enqueuing the backfill of search %q: %w", t.ID, err)
			}
			return nil
		case follow.Paper:
			return scheduleWorkLookup(ctx, tx, t.ID, now())
		}
		return nil
	}
}
