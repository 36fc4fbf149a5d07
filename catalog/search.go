package catalog

import (
	"context"
	"encoding/json"
	"fmt"
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
// changed paper of the batch is evaluated against every distinct saved
// search somebody follows (follow.ActiveSearches), with search.MatchBatch,
// and the papers a search matches are listed in one search_hits row of its
// key "query:<normal form>" per batch (hits.go), with a seq like key rows.
// Feeds, digests, channels and the match job read those rows alongside
// paper_keys (package match).

// searchCache keeps the followed searches compiled between batches, as
// one search.Set (no pointer per search, term or word: the process keeps
// it for good, and a large pointer-rich heap slows every request while
// the garbage collector marks it): a batch parses only the searches
// followed since the last one, and when the followed searches are the
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
// id, numbers in set (ascending), the followed searches.
type searchMatches struct {
	byPaper map[string][]int32
	set     *search.Set
}

// len returns the number of followed searches.
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
// text a record changes, against every followed search. The caller holds
// keyWritersLock, so a search followed after this read is backfilled by
// BackfillSearch (its job takes the lock) after this batch commits.
func (st *Store) searchKeys(ctx context.Context, tx pgx.Tx, batch []paper.Paper, existing map[string]*stored, inserted map[string]int64) (searchMatches, error) {
	norms, err := follow.ActiveSearches(ctx, tx)
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

// BackfillDays is how far back a newly followed search looks, so that its
// feed is not empty on the first day.
const BackfillDays = 30

// BackfillSearch gives a newly followed query (its normal form) its
// matches among the papers announced since since, in one transaction under
// keyWritersLock: it evaluates the search against those papers it has not
// matched yet (no search_hits row lists them), writes one search_hits row
// of those papers, bumps the search's followers'
// feed versions (so their ETags change exactly when the matches land),
// enqueues the match job of the rows (instant alerts, channels) and calls
// done (the job's completion, which commits with the rows). It runs from
// the backfill job that the follow enqueued (BackfillHook), never inside a
// follow request.
//
// It writes nothing for papers that already have a row (a search followed
// continuously has them all), so the followers of an existing search are
// not told about old papers again; nothing when nobody follows the search
// any more (unfollowed before its job ran); and nothing, without calling
// done, when it no longer parses (a category withdrawn from the taxonomy,
// which ingest skips too). Running it twice writes nothing the second time.
// It returns how many papers it added.
//
// Why the lock: an ingest that read follow.ActiveSearches before the follow
// committed did not match its papers against this search; holding the lock
// means every such ingest has committed before the scan reads papers, and
// no ingest commits between the scan and the rows. Why follow.HoldFollowers
// after the scan, and done in the same transaction: a follow that found this
// job already queued or running inserted no job of its own, so it must have
// committed before the rows do (HoldFollowers waits for it), and a follow
// that comes later must find the job completed and insert a new one.
func (st *Store) BackfillSearch(ctx context.Context, normalized string, since time.Time, done func(tx pgx.Tx) error) (int, error) {
	q, err := follow.CompileQuery(normalized)
	if err != nil {
		return 0, nil
	}
	t := follow.Target{Kind: follow.Query, ID: normalized}
	key := t.Key()
	added := 0
	err = st.db.InTx(ctx, func(tx pgx.Tx) error {
		added = 0
		if err := lockWriters(ctx, tx); err != nil {
			return err
		}
		had, err := SearchHits(ctx, tx, key)
		if err != nil {
			return err
		}
		var ids []int64
		err = scanRecent(ctx, tx, since, func(id int64, p *paper.Paper) {
			if _, ok := slices.BinarySearch(had, id); !ok && q.Match(p.Doc()) {
				ids = append(ids, id)
			}
		})
		if err != nil {
			return err
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

// Preview is what a search would have found.
type Preview struct {
	// Count is how many papers of the window match.
	Count int
	// Newest are the newest matches (by announcement), at most the limit.
	Newest []paper.Paper
}

// PreviewSearch evaluates q against the papers announced since since and
// returns how many match and the newest limit of them. It writes nothing,
// and reads on the read replica when one is attached and not lagging
// (bounded staleness, database.DB.Read), else on the primary.
func (st *Store) PreviewSearch(ctx context.Context, q *search.Query, since time.Time, limit int) (Preview, error) {
	var pv Preview
	err := st.db.Read(ctx, nil, func(tx pgx.Tx) error {
		pv = Preview{}
		return scanRecent(ctx, tx, since, func(_ int64, p *paper.Paper) {
			if q.Match(p.Doc()) {
				pv.Count++
				if len(pv.Newest) < limit {
					pv.Newest = append(pv.Newest, *p)
				}
			}
		})
	})
	if err != nil {
		return Preview{}, fmt.Errorf("previewing a search: %w", err)
	}
	return pv, nil
}

// recentSQL selects the papers scanRecent reads.
const recentSQL = `
	SELECT p.id, p.arxiv_id, p.version, p.title, p.abstract, p.authors, p.primary_category, p.categories,
	       p.abs_url, coalesce(p.announced_at, p.submitted_at, p.created_at)
	FROM papers p
	WHERE coalesce(p.announced_at, p.submitted_at, p.created_at) >= $1 AND p.deleted_at IS NULL
	ORDER BY coalesce(p.announced_at, p.submitted_at, p.created_at) DESC, p.id DESC`

// scanRecent calls fn for every paper not withdrawn and announced since
// since, newest first. A month of arXiv is some 25,000 papers: a range
// scan of papers_recent_idx (the WHERE and ORDER BY are its expression and
// predicate, word for word), each paper evaluated in Go.
func scanRecent(ctx context.Context, tx pgx.Tx, since time.Time, fn func(id int64, p *paper.Paper)) error {
	rows, err := tx.Query(ctx, recentSQL, since)
	if err != nil {
		return fmt.Errorf("reading recent papers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var p paper.Paper
		var authors []byte
		if err := rows.Scan(&id, &p.ArxivID, &p.Version, &p.Title, &p.Abstract, &authors, &p.PrimaryCategory,
			&p.Categories, &p.AbsURL, &p.AnnouncedAt); err != nil {
			return fmt.Errorf("reading recent paper: %w", err)
		}
		if err := json.Unmarshal(authors, &p.Authors); err != nil {
			return fmt.Errorf("reading authors of paper %d: %w", id, err)
		}
		p.AnnouncedAt = p.AnnouncedAt.UTC()
		fn(id, &p)
	}
	return rows.Err()
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
