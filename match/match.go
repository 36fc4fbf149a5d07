// Package match answers "which papers match whom", with fan-out on read:
// nothing per (user, paper) is ever materialised. The match job finds,
// among the users with instant delivery (instant_follows), those a batch
// of new keys gives a new match, in set-based queries by key (job.go,
// batch.go); feeds and digests compute a user's papers at read time with
// Matched, with bounded work per followed key (select.go, window.go,
// reasons.go, events.go), public feeds with Public (public.go), and a
// private feed's validator from the newest row of its keys (Head, head.go;
// see docs/ARCHITECTURE.md).
package match

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/paper"
)

// Service runs matching queries.
type Service struct {
	db    *database.DB
	hooks []AffectedHook
}

// NewService returns the matcher over db.
func NewService(db *database.DB) *Service { return &Service{db: db} }

// Query selects a user's matched papers.
type Query struct {
	UserID int64
	// Only restricts matching to one of the user's follows (a per-follow
	// feed, a filtered channel); nil means all of them. In a window, a
	// paper is new when this follow first matched it there, whatever the
	// user's other follows matched before.
	Only *follow.Target
	// AfterSeq and UpToSeq bound the window (AfterSeq, UpToSeq]: a paper is
	// in it when the user's follows first matched it inside the window, or
	// when a new version arrived inside it and a matching follow asked for
	// replacements. UpToSeq 0 means no upper bound; AfterSeq 0 means "ever".
	AfterSeq, UpToSeq int64
	// Limit caps the papers returned (newest first); 0 means 50.
	Limit int
	// IDsOnly returns ids, seqs and reasons only, no paper details (the
	// embedded paper.Paper stays zero): digests group many candidates and
	// load details (LoadPapers) for the few they show.
	IDsOnly bool
	// At is a delivery's time (digests, instant alerts, push channels):
	// papers matched only through follows snoozed at At are left out
	// (dropSnoozed). Zero (feeds) leaves snoozes alone. It applies to
	// bounded windows (AfterSeq or UpToSeq set), which every delivery is.
	At time.Time
	// Unread leaves out the papers the user marked read or done (package
	// inbox): digests, instant alerts and push channels set it, feeds with
	// ?unread=1. Applied by the selection, on both of its paths
	// (controls.go); Total then counts only the papers kept.
	Unread bool
}

// Paper is one matched paper with why it matched.
type Paper struct {
	ID  int64
	Seq int64 // the match event that put the paper in the window; orders results
	paper.Paper
	// Reasons are the user's follows that match the paper (each once), in
	// the order of the user's follows list.
	Reasons []follow.Target
	// Replaced is true when the paper is in the window because of a new
	// version rather than a first match.
	Replaced bool
	// Events are the events of the user's paper follows (kind paper) that
	// put the paper in the window, newest first, the newest of each follow
	// and kind: the paper's own new version, publication or withdrawal, or
	// (on a citing paper) its citation of a followed paper. Empty for
	// every other match.
	Events []Event
}

// Result is what Matched returns.
type Result struct {
	Papers []Paper
	// Total counts every paper in a bounded window (AfterSeq or UpToSeq
	// set), of which Papers holds the newest Limit. Without a window it
	// counts only the candidates read.
	Total int
}

// maxWindowRowsPerKey bounds the rows read per followed key in a window: a
// day of cs.LG is a few hundred. A variable only so that a test can make
// the cap bind (SetWindowRowsPerKey); nothing else changes it.
var maxWindowRowsPerKey = 10_000

// Matched returns the user's matched papers in the query's window, newest
// match first, each paper once with every reason. Feeds and digests both
// call it (digests through MatchedMany). Work is bounded per followed key:
// for each key the newest rows in the window (at most a cap) are read
// through paper_keys_key_seq_idx.
func (s *Service) Matched(ctx context.Context, q Query) (Result, error) {
	rs, err := s.MatchedMany(ctx, []Query{q})
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// MatchedMany is Matched for several queries (users) at once: digests and
// channels are built in batches. Results are in the order of qs. It reads
// in one repeatable-read snapshot: select the matches (the queries with a
// bounded window set-based over the batch, window.go; the others, "ever",
// in one matchedManySQL statement), load the reasons the selection could
// not give, then the details of the papers of queries that want them.
func (s *Service) MatchedMany(ctx context.Context, qs []Query) ([]Result, error) {
	return s.snapshot(ctx, qs, func(ctx context.Context, tx pgx.Tx, qs []Query) ([]Result, error) {
		rs, _, err := matchedManyIn(ctx, tx, qs, nil)
		return rs, err
	})
}

// MatchedManyFollows is MatchedMany that also returns, read in the same
// snapshot, the follows of users and of the users of the queries with a
// bounded window (not of the other queries' users: pass them in users; each list
// newest first, as follow.Service.AllMany; users without follows absent),
// which the selection of bounded windows reads anyway: digests group their
// papers by them.
func (s *Service) MatchedManyFollows(ctx context.Context, qs []Query, users []int64) ([]Result, map[int64][]follow.Follow, error) {
	var follows map[int64][]follow.Follow
	rs, err := s.snapshot(ctx, qs, func(ctx context.Context, tx pgx.Tx, qs []Query) ([]Result, error) {
		rs, expanded, err := matchedManyIn(ctx, tx, qs, users)
		follows = follow.Unexpanded(expanded)
		return rs, err
	})
	return rs, follows, err
}

// snapshot runs in(qs) in a repeatable-read transaction.
func (s *Service) snapshot(ctx context.Context, qs []Query, in func(context.Context, pgx.Tx, []Query) ([]Result, error)) ([]Result, error) {
	var results []Result
	err := s.db.InTxIso(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		var err error
		results, err = in(ctx, tx, qs)
		return err
	})
	return results, err
}

// matchedManyIn is MatchedIn with the queries of a bounded window answered
// by the windowed path (window.go): the same results, with each distinct
// key of a window read once for the batch. It also returns the follows of
// users and of those queries' users.
func matchedManyIn(ctx context.Context, tx pgx.Tx, qs []Query, users []int64) ([]Result, map[int64][]follow.Expanded, error) {
	w := &windowed{qs: qs}
	var perUser []int
	for i, q := range qs {
		if bounded(q) {
			w.idx = append(w.idx, i)
		} else {
			perUser = append(perUser, i)
		}
	}
	if len(w.idx) == 0 && len(users) == 0 {
		rs, err := MatchedIn(ctx, tx, qs)
		return rs, nil, err
	}
	results := make([]Result, len(qs))
	needReasons := map[int][]int64{}
	send := func(b *pgx.Batch) error {
		if b.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, b).Close()
	}
	// The follows first (and the per-user selection of the other
	// queries), then the rows of their keys, then the seen probes (and the
	// per-user selection of the queries a truncated key sends that way).
	b := &pgx.Batch{}
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	queueSubset(b, qs, perUser, results, needReasons)
	w.queueFollows(b, users)
	// The mutes of the windows' users (mutes.go, windowmutes.go).
	w.mutes, w.orig = newMutes(), qs
	w.mutes.queueRules(b, w.users())
	if err := send(b); err != nil {
		return nil, nil, err
	}
	// Muting users' windows are selected whole, for their mutes to filter
	// (mutes.go).
	w.qs = mutingOf(w.mutes).overselect(qs)
	b = &pgx.Batch{}
	w.queueRows(b)
	if err := send(b); err != nil {
		return nil, nil, err
	}
	pu, only, after, papers := w.merge()
	seen := map[int]bool{}
	b = &pgx.Batch{}
	// The user's read state (controls.go) with the seen probes: the
	// marked candidates are left out before any Paper is made of them.
	read := w.queueMarks(b)
	viewIDs, versions := w.queueViewVersions(b) // windowmutes.go
	if len(papers) > 0 {
		b.Queue(seenSQL, pu, only, after, papers).Query(func(rows pgx.Rows) error {
			var n int32
			_, err := pgx.ForEachRow(rows, []any{&n}, func() error {
				seen[int(n)] = true
				return nil
			})
			if err != nil {
				return fmt.Errorf("probing %d papers' earlier matches: %w", len(papers), err)
			}
			return nil
		})
	}
	queueSubset(b, qs, w.redo, results, needReasons)
	if err := send(b); err != nil {
		return nil, nil, err
	}
	if err := w.fillJudgedViews(ctx, tx, viewIDs, *versions); err != nil {
		return nil, nil, err
	}
	w.results(seen, read, results, needReasons)
	if c, _ := ctx.Value(judgedKey{}).(*atomic.Int64); c != nil {
		c.Add(int64(len(w.mutes.judged)))
	}
	rs, err := finishMatched(ctx, tx, qs, results, needReasons, w.mutes)
	if err == nil {
		dropSnoozed(qs, rs, w.follows)
	}
	return rs, w.follows, err
}

// queueSubset queues on b matchedManySQL for the queries of qs at idx,
// which sets their results and needReasons (by index into qs).
func queueSubset(b *pgx.Batch, qs []Query, idx []int, results []Result, needReasons map[int][]int64) {
	if len(idx) == 0 {
		return
	}
	sub := make([]Query, len(idx))
	for j, i := range idx {
		sub[j] = qs[i]
	}
	queueSelect(b, sub, func(rs []Result, need map[int][]int64) {
		for j, r := range rs {
			results[idx[j]] = r
		}
		for j, ids := range need {
			needReasons[idx[j]] = ids
		}
	})
}

// finishMatched reads the reasons the selection could not give and the
// details of the papers of queries that want them (and the users' mutes,
// but for those pre, nil or the windowed path's, read already), applies
// the mutes (mutes.go), then reads the events.
func finishMatched(ctx context.Context, tx pgx.Tx, qs []Query, results []Result, needReasons map[int][]int64, pre *mutes) ([]Result, error) {
	var b pgx.Batch
	queueReasons(&b, qs, results, needReasons)
	queueDetails(&b, qs, results)
	mutes := queueMutes(&b, qs, results, pre) // mutes.go: read with the reasons, unless pre has them
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return nil, err
		}
	}
	// The user's mutes, for every surface (mutes.go).
	if err := mutes.apply(ctx, tx, qs, results); err != nil {
		return nil, err
	}
	if err := fillEvents(ctx, tx, qs, results); err != nil {
		return nil, err
	}
	return results, nil
}

// MatchedIn gives MatchedMany's results inside tx, which should be a
// repeatable-read transaction (one snapshot), selecting every query with
// the per-user statement (matchedManySQL, one round trip): a feed render on
// the read replica (database.DB.Read) runs it with the follows it shows. It
// sets plan_cache_mode = force_generic_plan for the rest of tx.
func MatchedIn(ctx context.Context, tx pgx.Tx, qs []Query) ([]Result, error) {
	var b pgx.Batch
	finish := QueueMatchedIn(&b, qs)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}
	return finish(ctx, tx)
}

// QueueMatchedIn is MatchedIn in two halves, so that its first round trip
// carries the caller's other statements of the snapshot (and BEGIN:
// database.DB.ReadBatch): it queues on b the statements MatchedIn sends
// first (it sets plan_cache_mode = force_generic_plan for the rest of the
// transaction b is sent in); once b has been sent in that transaction and
// its results read without error, finish, called once with the
// transaction, returns what MatchedIn would.
func QueueMatchedIn(b *pgx.Batch, qs []Query) (finish func(ctx context.Context, tx pgx.Tx) ([]Result, error)) {
	// Two round trips for any number of queries (three with paper
	// follows' events): the selection, then the reasons it could not give
	// and the papers' details together; on a shared machine each round
	// trip is a wait for the other process to be scheduled.
	//
	// Generic plans: these statements' parameters are arrays that the
	// planner cannot see into, so a custom plan (PostgreSQL's choice, the
	// generic one being costed for ten array elements) has the same shape
	// and costs a millisecond of planning per render at scale S; the
	// generic one is planned once per connection (pgx caches the
	// prepared statements).
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	var results []Result
	var needReasons map[int][]int64
	queueSelect(b, qs, func(r []Result, need map[int][]int64) { results, needReasons = r, need })
	return func(ctx context.Context, tx pgx.Tx) ([]Result, error) {
		return finishMatched(ctx, tx, qs, results, needReasons, nil)
	}
}

// queueDetails queues on b the load of the papers of every query that is
// not IDsOnly, each paper once however many queries selected it, which
// sets their details in results.
func queueDetails(b *pgx.Batch, qs []Query, results []Result) {
	var ids []int64
	seen := map[int64]bool{}
	for qi, r := range results {
		if qs[qi].IDsOnly {
			continue
		}
		for _, p := range r.Papers {
			if !seen[p.ID] {
				seen[p.ID] = true
				ids = append(ids, p.ID)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	catalog.QueueLoad(b, ids, catalog.AllFields, func(got map[int64]paper.Paper) {
		for qi := range results {
			if qs[qi].IDsOnly {
				continue
			}
			for i := range results[qi].Papers {
				p := &results[qi].Papers[i]
				p.Paper = got[p.ID]
			}
		}
	})
}

// LoadPapers returns the details of papers by id (which fields: f), in the
// order of ids; unknown ids are skipped. Seq, Reasons and Replaced are left
// zero: digests select with Query.IDsOnly and load the few papers they show.
// Without abstracts (catalog.WithoutAbstract, the digests') the papers come
// from the process's kept details while their rows are unchanged
// (details.go), so their slices are shared: callers only read them.
func (s *Service) LoadPapers(ctx context.Context, ids []int64, f catalog.Fields) ([]Paper, error) {
	byID := make(map[int64]*Paper, len(ids))
	for _, id := range ids {
		byID[id] = &Paper{ID: id}
	}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if f == catalog.WithoutAbstract {
			return loadKeptDetails(ctx, tx, ids, byID)
		}
		return loadDetails(ctx, tx, ids, byID, f)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Paper, 0, len(ids))
	for _, id := range ids {
		if p := byID[id]; p.ArxivID != "" {
			out = append(out, *p)
		}
	}
	return out, nil
}

// loadDetails fills in the paper.Paper of each byID[id] for ids, in tx.
func loadDetails(ctx context.Context, tx pgx.Tx, ids []int64, byID map[int64]*Paper, f catalog.Fields) error {
	got, err := catalog.Load(ctx, tx, ids, f)
	if err != nil {
		return err
	}
	for id, p := range got {
		byID[id].Paper = p
	}
	return nil
}
