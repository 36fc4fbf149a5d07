// Package match answers "which papers match whom", with fan-out on read:
// nothing per (user, paper) is ever materialised. The match job finds,
// among the readers with instant delivery (instant_follows), those a batch
// of new keys gives a new match, in set-based queries by key; feeds and
// digests compute a user's papers at read time with Matched, with bounded
// work per followed key, and a private feed's validator from the newest
// row of its keys (Head; see docs/ARCHITECTURE.md).
package match

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/follow"
	"followfeed/paper"
)

// AffectedHook runs inside a match job's transaction with what the batch
// changed (notify schedules instant alerts, channels instant collections,
// feeds pings WebSub).
type AffectedHook func(ctx context.Context, tx pgx.Tx, res BatchResult) error

// Service runs matching queries.
type Service struct {
	db    *database.DB
	hooks []AffectedHook
}

// NewService returns the matcher over db.
func NewService(db *database.DB) *Service { return &Service{db: db} }

// OnAffected registers a hook for RunBatch. Register hooks before any job
// runs; the Service is not safe for registering concurrently with RunBatch.
func (s *Service) OnAffected(h AffectedHook) { s.hooks = append(s.hooks, h) }

// RunBatch is the match job: in one transaction it finds the readers with
// instant delivery who have a new match among the keys in [fromSeq, toSeq]
// (AffectedUsers), runs the hooks, and calls finish (the worker completes
// its job there), so a retried job never repeats half of its effects. It writes no feed state:
// the rows themselves change the private feeds' validators (Head).
func (s *Service) RunBatch(ctx context.Context, fromSeq, toSeq int64, finish func(pgx.Tx) error) (BatchResult, error) {
	var res BatchResult
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = s.AffectedUsers(ctx, tx, fromSeq, toSeq)
		if err != nil {
			return err
		}
		for _, h := range s.hooks {
			if err := h(ctx, tx, res); err != nil {
				return err
			}
		}
		if finish != nil {
			return finish(tx)
		}
		return nil
	})
	return res, err
}

// BatchResult says what a match job found.
type BatchResult struct {
	FromSeq, ToSeq int64 // the batch's key rows
	Keys           int   // distinct keys in the batch
	// Users are the readers with instant delivery (instant alerts or an
	// enabled instant channel: instant_follows) with a new match (a paper their
	// follows newly select: replacement rows only for follows that
	// include replacements, cross-lists only for those that include
	// cross-lists, and not a paper they said is not by the person they
	// follow), ascending.
	Users []int64
	// NewKeys are the batch's keys with a first match (not only
	// replacement rows), each once: the public feeds of these keys, and
	// of the other keys of their people and institutions, show a new
	// paper (feeds.Service.ChangedPublicURLs).
	NewKeys []string
	// ReplacedKeys are the batch's keys with replacement rows (a new
	// version of a paper that had the key), each once: the fediverse
	// updates the notes of those papers.
	ReplacedKeys []string
}

// AffectedUsers runs inside the match job: it takes the distinct keys written
// in seq range [fromSeq, toSeq] and finds, among the readers with instant
// delivery, those with a follow that newly matches one of them (through the
// identity registry; honouring the cross-list and replacement options and
// "not this person" disputes, see BatchResult). It reads instant_follows
// (the follows of those readers, kept by triggers, see migration 00020) by
// key: the cost grows with the number of distinct keys and their instant
// followers, never with papers × followers, nor with the followers without
// instant delivery.
func (s *Service) AffectedUsers(ctx context.Context, tx pgx.Tx, fromSeq, toSeq int64) (BatchResult, error) {
	res := BatchResult{FromSeq: fromSeq, ToSeq: toSeq}
	// JIT costs more than it saves in these statements. Custom plans: the
	// join's plan depends on how many keys and users the arrays hold,
	// which a generic plan, costed for ten, would get wrong once pgx's
	// cached statement had run five times.
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off; SET LOCAL work_mem = '32MB'; SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
		return res, err
	}
	b, err := readBatch(ctx, tx, fromSeq, toSeq)
	if err != nil {
		return res, err
	}
	res.Keys = len(b.keys)
	for i, k := range b.keys {
		if b.primaryNew[i] || b.crossNew[i] {
			res.NewKeys = append(res.NewKeys, k)
		}
		if b.primaryReplaced[i] || b.crossReplaced[i] {
			res.ReplacedKeys = append(res.ReplacedKeys, k)
		}
	}
	if len(b.keys) == 0 {
		return res, nil
	}
	// Categories and archives first: a handful of keys that most readers
	// follow (this domain's celebrities), so they alone match most of the
	// instant readers a batch reaches. The many researcher (and other)
	// keys are then expanded through the registry (so a follow of any id
	// of the person is reached) and joined only for the instant readers
	// the categories did not match; when there are none, not even the
	// registry is read.
	wide, narrow := b.split()
	aff := affected{}
	if err := aff.join(ctx, tx, wide, nil); err != nil {
		return res, fmt.Errorf("finding users affected by keys %d..%d: %w", fromSeq, toSeq, err)
	}
	if len(narrow.keys) > 0 {
		rest, err := aff.unmatched(ctx, tx)
		if err != nil {
			return res, err
		}
		if len(rest) > 0 {
			x, err := narrow.expand(ctx, tx)
			if err != nil {
				return res, err
			}
			if err := aff.join(ctx, tx, x, rest); err != nil {
				return res, fmt.Errorf("finding users affected by keys %d..%d: %w", fromSeq, toSeq, err)
			}
		}
	}
	for u, matched := range aff {
		if matched {
			res.Users = append(res.Users, u)
		}
	}
	slices.Sort(res.Users)
	if len(b.disputers) > 0 {
		if res.Users, err = withoutDisputedOnly(ctx, tx, res.Users, b.disputers, fromSeq, toSeq); err != nil {
			return res, err
		}
	}
	return res, nil
}

// affected maps each affected user to whether the batch is a new match
// for them (see BatchResult).
type affected map[int64]bool

// joinSQL finds the readers with instant delivery (all, or those of $6
// when it is not NULL) who follow a key of the arrays (a batchKeys slice),
// through instant_follows' primary key (key, user_id, including the
// options: an index-only scan per key, in key order): a follow is affected
// when a row of its key reaches it (cross-lists only when it includes
// them); matched says whether one newly selects a paper (replacement rows
// only for follows that include replacements).
const joinSQL = `
	SELECT f.user_id,
	       bool_or(b.primary_new OR (f.include_replacements AND b.primary_replaced)
	               OR (f.include_cross_lists AND (b.cross_new OR (f.include_replacements AND b.cross_replaced)))) AS matched
	FROM unnest($1::text[], $2::bool[], $3::bool[], $4::bool[], $5::bool[])
	     AS b(key, primary_new, primary_replaced, cross_new, cross_replaced)
	JOIN instant_follows f ON f.key = b.key
	WHERE (b.primary_new OR b.primary_replaced OR (f.include_cross_lists AND (b.cross_new OR b.cross_replaced)))
	  AND ($6::bigint[] IS NULL OR f.user_id = ANY ($6))
	GROUP BY f.user_id`

// join adds the instant followers of the keys of ks to a: among users
// only, when users is not nil.
func (a affected) join(ctx context.Context, tx pgx.Tx, ks batchKeys, users []int64) error {
	if len(ks.keys) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, joinSQL, ks.keys, ks.primaryNew, ks.primaryReplaced, ks.crossNew, ks.crossReplaced, users)
	if err != nil {
		return err
	}
	var user int64
	var matched bool
	_, err = pgx.ForEachRow(rows, []any{&user, &matched}, func() error {
		a[user] = a[user] || matched
		return nil
	})
	return err
}

// unmatched returns the readers with instant delivery for whom a holds no
// new match (instant_readers(): two index-only scans).
func (a affected) unmatched(ctx context.Context, tx pgx.Tx) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT instant_readers()`)
	if err != nil {
		return nil, fmt.Errorf("reading the readers with instant delivery: %w", err)
	}
	var rest []int64
	var u int64
	_, err = pgx.ForEachRow(rows, []any{&u}, func() error {
		if !a[u] {
			rest = append(rest, u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the readers with instant delivery: %w", err)
	}
	return rest, nil
}

// split returns the keys of categories and archives (wide: followed by
// many) and the others (narrow).
func (ks batchKeys) split() (wide, narrow batchKeys) {
	for i, k := range ks.keys {
		to := &narrow
		if strings.HasPrefix(k, "category:") || strings.HasPrefix(k, "archive:") {
			to = &wide
		}
		to.keys = append(to.keys, k)
		to.primaryNew = append(to.primaryNew, ks.primaryNew[i])
		to.primaryReplaced = append(to.primaryReplaced, ks.primaryReplaced[i])
		to.crossNew = append(to.crossNew, ks.crossNew[i])
		to.crossReplaced = append(to.crossReplaced, ks.crossReplaced[i])
	}
	return wide, narrow
}

// batchKeys are keys of a batch as parallel arrays (in key order: the
// join's sort then finds them sorted), one element per key, with which rows
// of it the batch has: of a paper's primary category or of anything else
// but a cross-list (primary), of a cross-list (cross), of a first match
// (new) or of a new version (replaced).
type batchKeys struct {
	keys                        []string
	primaryNew, primaryReplaced []bool
	crossNew, crossReplaced     []bool
}

// batch is what the match job reads of its key rows.
type batch struct {
	batchKeys
	// disputers are the users who said of a paper of the batch "not this
	// person".
	disputers []int64
}

// readBatch reads the batch's key rows once (a BRIN range scan on seq),
// and its saved-search hits (search_hits_seq_idx; a row per search, its
// key a batch key like any other, never a cross-list): the distinct keys
// with their flags, sorted bytewise (COLLATE "C",
// several times faster than the database's collation; keys are ASCII,
// whose byte order is the indexes' order under C.UTF-8 and the like, so
// the join's sort finds its input sorted and the identity probes walk the
// index in order) and, when anybody ever said of a paper "not this
// person", the batch's paper ids, to find those of them who said it of a
// paper of the batch.
func readBatch(ctx context.Context, tx pgx.Tx, fromSeq, toSeq int64) (batch, error) {
	var b batch
	var papers []int64
	err := tx.QueryRow(ctx, `
		WITH r AS MATERIALIZED (
			SELECT paper_id, key, cross_list, replacement FROM paper_keys WHERE seq BETWEEN $1 AND $2
		)
		SELECT coalesce(array_agg(key), '{}'), coalesce(array_agg(pn), '{}'), coalesce(array_agg(pr), '{}'),
		       coalesce(array_agg(cn), '{}'), coalesce(array_agg(cr), '{}'),
		       CASE WHEN EXISTS (SELECT 1 FROM identity_disputes) THEN ARRAY(SELECT DISTINCT paper_id FROM r) END
		FROM (
			SELECT key,
			       bool_or(NOT cross_list AND NOT replacement) AS pn, bool_or(NOT cross_list AND replacement) AS pr,
			       bool_or(cross_list AND NOT replacement) AS cn, bool_or(cross_list AND replacement) AS cr
			FROM (
				SELECT key, cross_list, replacement FROM r
				UNION ALL
				SELECT key, false, replacement FROM search_hits
				WHERE seq BETWEEN $1 AND $2
			) r
			GROUP BY key ORDER BY key COLLATE "C"
		) k`,
		fromSeq, toSeq).Scan(&b.keys, &b.primaryNew, &b.primaryReplaced, &b.crossNew, &b.crossReplaced, &papers)
	if err != nil {
		return b, fmt.Errorf("reading the keys %d..%d: %w", fromSeq, toSeq, err)
	}
	if len(papers) == 0 {
		return b, nil
	}
	// The match job's custom plan has the ids as a constant, which
	// PostgreSQL hashes for = ANY: one pass over identity_disputes (it has
	// no index on paper_id), not one per paper.
	rows, err := tx.Query(ctx, `SELECT DISTINCT user_id FROM identity_disputes WHERE paper_id = ANY($1)`, papers)
	if err != nil {
		return b, fmt.Errorf("finding disputes of keys %d..%d: %w", fromSeq, toSeq, err)
	}
	if b.disputers, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return b, fmt.Errorf("finding disputes of keys %d..%d: %w", fromSeq, toSeq, err)
	}
	return b, nil
}

// expand returns ks with, through the identity registry, every other key
// of the same person or institution, with the flags of the keys that reach
// it, in the same order: a primary-key probe and an index-only scan of
// identity_keys per researcher or institution key, in key order.
func (ks batchKeys) expand(ctx context.Context, tx pgx.Tx) (batchKeys, error) {
	var x batchKeys
	err := tx.QueryRow(ctx, `
		WITH b AS (
			SELECT * FROM unnest($1::text[], $2::bool[], $3::bool[], $4::bool[], $5::bool[]) AS b(key, pn, pr, cn, cr)
		)
		SELECT coalesce(array_agg(key), '{}'), coalesce(array_agg(pn), '{}'), coalesce(array_agg(pr), '{}'),
		       coalesce(array_agg(cn), '{}'), coalesce(array_agg(cr), '{}')
		FROM (
			SELECT key, bool_or(pn) AS pn, bool_or(pr) AS pr, bool_or(cn) AS cn, bool_or(cr) AS cr
			FROM (
				SELECT key, pn, pr, cn, cr FROM b
				UNION ALL
				SELECT k2.key, b.pn, b.pr, b.cn, b.cr
				FROM b CROSS JOIN LATERAL (
					SELECT k1.identity_id FROM identity_keys k1
					WHERE k1.key = b.key AND (b.key LIKE 'researcher:%' OR b.key LIKE 'institution:%')
				) k1
				JOIN identity_keys k2 ON k2.identity_id = k1.identity_id AND k2.key <> b.key
			) e
			GROUP BY key ORDER BY key COLLATE "C"
		) x`, ks.keys, ks.primaryNew, ks.primaryReplaced, ks.crossNew, ks.crossReplaced,
	).Scan(&x.keys, &x.primaryNew, &x.primaryReplaced, &x.crossNew, &x.crossReplaced)
	if err != nil {
		return x, fmt.Errorf("expanding %d keys through the registry: %w", len(ks.keys), err)
	}
	return x, nil
}

// withoutDisputedOnly returns users without those of candidates (users who
// disputed a paper of the batch) whose every new match in [fromSeq, toSeq]
// is a paper they said is not by the person their follow means: feeds and
// digests leave those out (matchedManySQL), so the batch is no new match
// for them (no instant alert, no instant channel). Per candidate, an
// EXISTS over its follows, each expanded through the registry like the
// feed's, and the follow's rows in the batch (paper_keys_key_seq_idx range
// scans), stopping at the first row that is not disputed for that follow's
// person. A saved search's match (search_hits) is never disputed: a
// candidate with one in the batch keeps it.
func withoutDisputedOnly(ctx context.Context, tx pgx.Tx, users, candidates []int64, fromSeq, toSeq int64) ([]int64, error) {
	var check []int64
	for _, u := range candidates {
		if _, ok := slices.BinarySearch(users, u); ok {
			check = append(check, u)
		}
	}
	if len(check) == 0 {
		return users, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT u.user_id FROM unnest($1::bigint[]) AS u(user_id)
		WHERE EXISTS (
			SELECT 1
			FROM follows f
			LEFT JOIN identity_keys k1 ON k1.key = f.key
			CROSS JOIN LATERAL (
				SELECT f.key AS key
				UNION
				SELECT k2.key FROM identity_keys k2 WHERE k2.identity_id = k1.identity_id
			) x
			JOIN paper_keys pk ON pk.key = x.key AND pk.seq BETWEEN $2 AND $3
			WHERE f.user_id = u.user_id
			  AND (f.include_cross_lists OR NOT pk.cross_list)
			  AND (f.include_replacements OR NOT pk.replacement)
			  AND NOT EXISTS (
				SELECT 1 FROM identity_disputes d
				WHERE d.user_id = u.user_id AND d.paper_id = pk.paper_id
				  AND (d.follow_key = f.key
				       OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = k1.identity_id))))
		   OR EXISTS (
			SELECT 1
			FROM follows f JOIN search_hits h ON h.key = f.key AND h.seq BETWEEN $2 AND $3
			WHERE f.user_id = u.user_id AND f.key >= 'query:' AND f.key < 'query;'
			  AND (f.include_replacements OR NOT h.replacement))`,
		check, fromSeq, toSeq)
	if err != nil {
		return nil, fmt.Errorf("checking disputed matches of %d users: %w", len(check), err)
	}
	confirmed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("checking disputed matches of %d users: %w", len(check), err)
	}
	out := users[:0:0]
	for _, u := range users {
		if !slices.Contains(check, u) || slices.Contains(confirmed, u) {
			out = append(out, u)
		}
	}
	return out, nil
}

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
	if err := send(b); err != nil {
		return nil, nil, err
	}
	b = &pgx.Batch{}
	w.queueRows(b)
	if err := send(b); err != nil {
		return nil, nil, err
	}
	pu, only, after, papers := w.merge()
	seen := map[int]bool{}
	b = &pgx.Batch{}
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
	w.results(seen, results, needReasons)
	rs, err := finishMatched(ctx, tx, qs, results, needReasons)
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
// details of the papers of queries that want them, then the events.
func finishMatched(ctx context.Context, tx pgx.Tx, qs []Query, results []Result, needReasons map[int][]int64) ([]Result, error) {
	var b pgx.Batch
	queueReasons(&b, qs, results, needReasons)
	queueDetails(&b, qs, results)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return nil, err
		}
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
		return finishMatched(ctx, tx, qs, results, needReasons)
	}
}

// queryArrays are the queries of a batch as the parallel arrays
// matchedManySQL unnests, with defaults applied.
type queryArrays struct {
	users         []int64
	only          []string
	after, upTo   []int64
	perKey, limit []int32
}

func newQueryArrays(qs []Query) queryArrays {
	n := len(qs)
	a := queryArrays{users: make([]int64, n), only: make([]string, n), after: make([]int64, n), upTo: make([]int64, n),
		perKey: make([]int32, n), limit: make([]int32, n)}
	for i, q := range qs {
		q.Limit = q.limit()
		a.users[i], a.after[i], a.limit[i] = q.UserID, q.AfterSeq, int32(q.Limit)
		a.upTo[i] = q.window()[1]
		if q.Only != nil {
			a.only[i] = q.Only.Key()
		}
		// For a bounded window every candidate is needed (digests count
		// them); for "ever" the newest Limit per key suffice, since a
		// paper's newest event row is among its key's newest rows.
		a.perKey[i] = int32(q.Limit)
		if bounded(q) {
			a.perKey[i] = int32(maxWindowRowsPerKey)
		}
	}
	return a
}

// matchedManySQL selects the matched papers of a batch of queries: feeds'
// ("ever"), and the reference the windowed path (window.go) must equal.
//
// Per query (user), in a LATERAL subquery so that every sort and aggregate
// works on one user's few hundred rows rather than on the whole batch's tens
// of thousands (a third less time for a digest batch of 50):
// q.disputes: whether the user said of any paper "not this person" (one
// probe; most never do, and then the per-row check below is skipped);
// fo: the user's follows, each expanded through the identity registry to
// every key of its person or institution (k1: one primary-key probe of
// identity_keys per follow, k2: its keys, index-only), one row per key: a
// key two follows reach (two ids of one person) goes with the follow made
// first, so a paper is read once and has one reason per person. Plain
// joins, not a correlated subquery: planning stays as cheap as before;
// hits skip papers the user disputed for that person;
// hits: for each expanded key, its newest rows in the window (index range
// scan, LIMIT per key), with the follow that matched; a saved search's
// (query: keys) are the papers of its newest search_hits rows in the
// window instead (search_hits_pkey, the same range scan; its paper_keys
// probe finds nothing), which share their row's seq: papers of one seq are
// ordered by id;
// c: the newest event per paper and the follows it hit (keys), each with
// its rank in the order of the user's follows list (created_at, key; ranks,
// computed once per user in fo): the caller sorts the few keys of a paper
// by rank. An aggregate ORDER BY would sort every paper's keys apart, a
// third of the statement's time for a digest's 400 candidates;
// seen: with a window start, papers first matched before it are not new;
// they stay only for a replacement event (opted in). A paper first stored
// inside the window cannot have such a match, so only older papers are
// probed: the probe is a subquery under CASE, which PostgreSQL runs only
// for them (a LEFT JOIN LATERAL, as before, was rescanned for every
// candidate, a tenth of the statement's time for a digest batch of new
// papers; OFFSET 0 keeps c a subquery, so seen is computed once per
// candidate for both its uses). The (SELECT ... LIMIT 1) probes that
// candidate's few key rows (primary key on paper_id); a plain EXISTS lets
// the planner hash every earlier match of every followed key instead. A saved search's earlier matches are its
// search_hits rows before the window (search_hits_pkey, the user's few
// searches). With only_key, "before" means before by that follow: a paper another follow matched earlier is new to it (filtered
// channels).
// total counts what is kept (window functions run before LIMIT).
const matchedManySQL = `
	WITH q AS (
		SELECT u.*, EXISTS (SELECT 1 FROM identity_disputes d WHERE d.user_id = u.user_id) AS disputes
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::int[], $6::int[])
		WITH ORDINALITY AS u(user_id, only_key, after_seq, upto_seq, per_key, lim, ord)
	)
	SELECT q.ord, j.paper_id, j.seq, j.replaced, j.new_in_window, j.keys, j.ranks, j.total
	FROM q CROSS JOIN LATERAL (
		SELECT c.paper_id, c.seq, (c.seen IS NOT NULL OR NOT c.first_in_window) AS replaced,
		       c.new_in_window, c.keys, c.ranks, count(*) OVER () AS total
		FROM (SELECT c.*, CASE WHEN q.after_seq > 0 AND NOT c.new_in_window THEN ` + seenProbeSQL + ` END AS seen FROM (
			SELECT k.paper_id, max(k.seq) AS seq,
			       bool_or(NOT k.replacement) AS first_in_window,
			       bool_or(k.replacement) AS replaced_in_window,
			       bool_or(k.new_paper) AS new_in_window,
			       array_agg(fo.key) AS keys, array_agg(fo.rank) AS ranks
			FROM (
				SELECT DISTINCT ON (m.key) fo.key, fo.created_at, fo.include_cross_lists, fo.include_replacements,
				       m.key AS mkey, k1.identity_id AS ident,
				       dense_rank() OVER (ORDER BY fo.created_at, fo.key)::int AS rank
				FROM follows fo
				LEFT JOIN identity_keys k1 ON k1.key = fo.key
				LEFT JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
				CROSS JOIN LATERAL (SELECT coalesce(k2.key, fo.key) AS key) m
				WHERE fo.user_id = q.user_id AND (q.only_key = '' OR fo.key = q.only_key)
				ORDER BY m.key, fo.created_at, fo.key
			) fo CROSS JOIN LATERAL (
				(SELECT pk.paper_id, pk.seq, pk.replacement, pk.new_paper
				FROM paper_keys pk
				WHERE pk.key = fo.mkey AND pk.seq > q.after_seq AND pk.seq <= q.upto_seq
				  AND (fo.include_cross_lists OR NOT pk.cross_list)
				  AND (fo.include_replacements OR NOT pk.replacement)
				  AND (NOT q.disputes OR NOT EXISTS (
					SELECT 1 FROM identity_disputes d
					WHERE d.user_id = q.user_id AND d.paper_id = pk.paper_id
					  AND (d.follow_key = fo.key
					       OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = fo.ident))))
				ORDER BY pk.seq DESC
				LIMIT q.per_key)
				UNION ALL
				(SELECT u.paper_id, h.seq, h.replacement, h.new_paper
				FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(paper_id)
				WHERE fo.mkey >= 'query:' AND fo.mkey < 'query;'
				  AND h.key = fo.mkey AND h.seq > q.after_seq AND h.seq <= q.upto_seq
				  AND (fo.include_replacements OR NOT h.replacement)
				ORDER BY h.seq DESC
				LIMIT q.per_key)
			) k
			GROUP BY k.paper_id
		) c OFFSET 0) c
		WHERE c.seen IS NULL OR c.replaced_in_window
		ORDER BY c.seq DESC, c.paper_id DESC
		LIMIT q.lim
	) j
	ORDER BY q.ord, j.seq DESC, j.paper_id DESC`

// seenProbeSQL is true when user q.user_id's follows (only q.only_key's
// when it is not ”) matched candidate c.paper_id before the window start
// q.after_seq, NULL otherwise: matchedManySQL's and seenSQL's probe (see
// matchedManySQL).
const seenProbeSQL = `(SELECT true FROM (
				(SELECT 1
				FROM paper_keys pk
				CROSS JOIN LATERAL (
					SELECT pk.key AS key
					UNION ALL
					SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
					WHERE k1.key = pk.key AND k2.key <> pk.key
				) x
				JOIN follows fo ON fo.user_id = q.user_id AND fo.key = x.key
				  AND (q.only_key = '' OR fo.key = q.only_key)
				WHERE q.after_seq > 0 AND NOT c.new_in_window AND pk.paper_id = c.paper_id
				  AND pk.seq <= q.after_seq AND NOT pk.replacement
				  AND (fo.include_cross_lists OR NOT pk.cross_list))
				UNION ALL
				(SELECT 1
				FROM follows fo JOIN search_hits h ON h.key = fo.key
				WHERE q.after_seq > 0 AND NOT c.new_in_window
				  AND fo.user_id = q.user_id AND fo.key >= 'query:' AND fo.key < 'query;'
				  AND (q.only_key = '' OR fo.key = q.only_key)
				  AND h.seq <= q.after_seq AND NOT h.replacement AND c.paper_id = ANY(h.paper_ids))
			) x
			LIMIT 1)`

// queueSelect queues on b matchedManySQL for qs; when it has been read,
// done gets one Result per query with ids, seqs, totals and, where the
// selection's keys suffice, reasons, and needReasons: per query index, the
// papers whose reasons must be read with queueLoadReasons.
func queueSelect(b *pgx.Batch, qs []Query, done func(results []Result, needReasons map[int][]int64)) {
	a := newQueryArrays(qs)
	b.Queue(matchedManySQL, a.users, a.only, a.after, a.upTo, a.perKey, a.limit).Query(func(rows pgx.Rows) error {
		results := make([]Result, len(qs))
		needReasons := map[int][]int64{}
		targets := map[string]follow.Target{}
		var (
			ord, id, seq          int64
			replaced, newInWindow bool
			keys                  []string
			ranks                 []int32
			total                 int
		)
		for rows.Next() {
			// Scanned into locals: a Paper handed to Scan would escape to
			// the heap, once per row.
			if err := rows.Scan(&ord, &id, &seq, &replaced, &newInWindow, &keys, &ranks, &total); err != nil {
				return fmt.Errorf("reading matched paper: %w", err)
			}
			p := Paper{ID: id, Seq: seq, Replaced: replaced}
			qi := int(ord - 1)
			r := &results[qi]
			if r.Papers == nil {
				r.Papers = make([]Paper, 0, min(total, int(a.limit[qi])))
			}
			r.Total = total
			// A paper first stored in the window has all its keys there,
			// so the follows it hit are all its reasons; older papers (a
			// replacement, an enrichment) are asked separately.
			if newInWindow && qs[qi].IDsOnly && qs[qi].Only == nil {
				sortByRank(keys, ranks)
				p.Reasons = reasonsFromKeys(keys, targets)
			} else {
				needReasons[qi] = append(needReasons[qi], p.ID)
			}
			r.Papers = append(r.Papers, p)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("selecting matched papers of %d users: %w", len(qs), err)
		}
		done(results, needReasons)
		return nil
	})
}

// queueReasons queues on b the reads of the reasons of the papers in
// needReasons (per query index, loadReasonsSQL), which set them in results.
func queueReasons(b *pgx.Batch, qs []Query, results []Result, needReasons map[int][]int64) {
	for qi, ids := range needReasons {
		queueLoadReasons(b, qs[qi].UserID, ids, func(got map[int64][]follow.Target) {
			for i := range results[qi].Papers {
				p := &results[qi].Papers[i]
				if rs, ok := got[p.ID]; ok || p.Reasons == nil {
					p.Reasons = rs
				}
			}
		})
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
	paper.QueueLoad(b, ids, paper.AllFields, func(got map[int64]paper.Paper) {
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

// sortByRank orders keys by ranks (parallel, a paper's few matched keys),
// the order of the user's follows list; equal ranks are the same key.
func sortByRank(keys []string, ranks []int32) {
	if len(keys) != len(ranks) {
		return
	}
	// Insertion sort: one to three keys per paper.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && ranks[j] < ranks[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
			ranks[j], ranks[j-1] = ranks[j-1], ranks[j]
		}
	}
}

// reasonsFromKeys turns match keys (in follow order, possibly repeated)
// into targets, each once; parsed memoizes the parsing across calls.
func reasonsFromKeys(keys []string, parsed map[string]follow.Target) []follow.Target {
	out := make([]follow.Target, 0, len(keys))
	for i, k := range keys {
		if i > 0 && slices.Contains(keys[:i], k) {
			continue
		}
		t, ok := parsed[k]
		if !ok {
			var err error
			if t, err = follow.TargetFromKey(k); err != nil {
				continue
			}
			parsed[k] = t
		}
		out = append(out, t)
	}
	return out
}

// Public returns the newest papers carrying key (a public feed: everything
// in a category, archive, or by a researcher or institution), newest first.
// Replacement rows are left out: a public feed lists each paper once, when
// it was first matched.
func (s *Service) Public(ctx context.Context, key string, limit int) ([]Paper, error) {
	var out []Paper
	err := s.db.InTxIso(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		var err error
		out, err = PublicIn(ctx, tx, key, limit)
		return err
	})
	return out, err
}

// PublicIn is Public inside tx (a repeatable-read transaction, e.g. the read
// replica's in database.DB.Read).
func PublicIn(ctx context.Context, tx pgx.Tx, key string, limit int) ([]Paper, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	// The newest rows of every key of the key's person or institution (the
	// identity registry), merged.
	return publicRows(ctx, tx, key, limit, `
			SELECT pk.paper_id, pk.seq, false
			FROM (SELECT $1::text AS key
			      UNION
			      SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			      WHERE k1.key = $1) ks
			CROSS JOIN LATERAL (
				SELECT paper_id, seq FROM paper_keys pk
				WHERE pk.key = ks.key AND NOT pk.replacement
				ORDER BY pk.seq DESC LIMIT $2
			) pk
			ORDER BY pk.seq DESC LIMIT $2 * 4`, key, limit)
}

// PublicWindowIn is the public feed of key in the window (afterSeq,
// upToSeq], inside tx: the papers of every key of the key's person or
// institution whose rows have a seq in the window, newest first, at most
// limit. Unlike PublicIn it keeps new versions: a paper whose only rows in
// the window are replacement rows comes back with Replaced set (the
// fediverse's Update of a note). Seq is the paper's newest row in the
// window. A range scan of paper_keys_key_seq_idx per key of the identity.
func PublicWindowIn(ctx context.Context, tx pgx.Tx, key string, afterSeq, upToSeq int64, limit int) ([]Paper, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	return publicRows(ctx, tx, key, limit, `
			SELECT pk.paper_id, pk.seq, pk.replacement
			FROM (SELECT $1::text AS key
			      UNION
			      SELECT k2.key FROM identity_keys k1 JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			      WHERE k1.key = $1) ks
			CROSS JOIN LATERAL (
				SELECT paper_id, seq, replacement FROM paper_keys pk
				WHERE pk.key = ks.key AND pk.seq > $3 AND pk.seq <= $4
				ORDER BY pk.seq DESC LIMIT $2 * 4
			) pk
			ORDER BY pk.seq DESC LIMIT $2 * 16`, key, limit, afterSeq, upToSeq)
}

// publicRows runs a public selection (paper_id, seq, replacement rows,
// newest first) and loads the first limit distinct papers: a paper is
// Replaced only when every row of it read was a replacement row.
func publicRows(ctx context.Context, tx pgx.Tx, key string, limit int, sql string, args ...any) ([]Paper, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("selecting papers of %s: %w", key, err)
	}
	byID := map[int64]*Paper{}
	var ids []int64
	for rows.Next() {
		var id, seq int64
		var replacement bool
		if err := rows.Scan(&id, &seq, &replacement); err != nil {
			rows.Close()
			return nil, err
		}
		if p, dup := byID[id]; dup {
			p.Replaced = p.Replaced && replacement
			continue
		}
		if len(ids) == limit {
			continue
		}
		byID[id] = &Paper{ID: id, Seq: seq, Replaced: replacement}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("selecting papers of %s: %w", key, err)
	}
	if err := loadDetails(ctx, tx, ids, byID, paper.AllFields); err != nil {
		return nil, err
	}
	out := make([]Paper, 0, len(ids))
	for _, id := range ids {
		out = append(out, *byID[id])
	}
	return out, nil
}

// LoadPapers returns the details of papers by id (which fields: f), in the
// order of ids; unknown ids are skipped. Seq, Reasons and Replaced are left
// zero: digests select with Query.IDsOnly and load the few papers they show.
func (s *Service) LoadPapers(ctx context.Context, ids []int64, f paper.Fields) ([]Paper, error) {
	byID := make(map[int64]*Paper, len(ids))
	for _, id := range ids {
		byID[id] = &Paper{ID: id}
	}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error { return loadDetails(ctx, tx, ids, byID, f) })
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
func loadDetails(ctx context.Context, tx pgx.Tx, ids []int64, byID map[int64]*Paper, f paper.Fields) error {
	got, err := paper.Load(ctx, tx, ids, f)
	if err != nil {
		return err
	}
	for id, p := range got {
		byID[id].Paper = p
	}
	return nil
}

// loadReasonsSQL reads, for user $1, the follows that match each of the
// papers $2 (queueLoadReasons).
//
// fo: the user's follows, each expanded through the identity registry
// to every key of its person or institution (one primary-key probe and
// an index-only scan of identity_keys per follow, once per query), so
// a follow of another id of the author is a reason. Each paper's keys
// by paper_keys' primary key (paper_id, key, ...; an index-only scan:
// the heap rows of a paper's keys lie on as many pages as it has keys,
// its rows being written in key order) are joined with it (a hash
// join in memory: expanding each paper key through the registry
// instead, as before, probed identity_keys twice per key, three to
// five times the cost for a 50-paper feed). The probe per paper is
// forced (unnest, and OFFSET 0 keeps the subquery from being
// flattened): left to itself the planner sometimes scanned a followed
// key's whole index range instead (150-600 ms for cs.LG against 3 ms).
//
// A follow without cross-lists reaches the paper only through a row of
// the key that is not one: probed (paper_id, key) for those follows
// alone, so the heap is read only for them.
//
// Of several follows of one person (fo.ident) the first made is the
// one reason; a follow whose person the user disputed for the paper is
// none.
//
// Saved searches are not in paper_keys: qh reads the search_hits rows
// of the user's own searches (search_hits_pkey, their few rows) that
// list one of the papers, never the other readers' searches that
// matched them.
const loadReasonsSQL = `
		WITH fo AS MATERIALIZED (
			SELECT f.key, f.created_at, f.include_cross_lists, k1.identity_id AS ident, coalesce(k2.key, f.key) AS mkey
			FROM follows f
			LEFT JOIN identity_keys k1 ON k1.key = f.key
			LEFT JOIN identity_keys k2 ON k2.identity_id = k1.identity_id
			WHERE f.user_id = $1
		), qh AS MATERIALIZED (
			SELECT DISTINCT u.id, h.key
			FROM fo JOIN search_hits h ON h.key = fo.key
			CROSS JOIN LATERAL unnest(h.paper_ids) AS u(id)
			WHERE fo.key >= 'query:' AND fo.key < 'query;' AND h.paper_ids && $2::bigint[] AND u.id = ANY($2)
		)
		SELECT id, key, followed FROM (
			SELECT DISTINCT ON (p.id, coalesce(fo.ident::text, fo.key)) p.id, fo.key, fo.created_at AS followed
			FROM unnest($2::bigint[]) AS p(id)
			CROSS JOIN LATERAL (
				(SELECT key, true AS rows FROM paper_keys WHERE paper_id = p.id OFFSET 0)
				UNION ALL
				SELECT key, false FROM qh WHERE qh.id = p.id
			) pk
			JOIN fo ON fo.mkey = pk.key
			WHERE (fo.include_cross_lists OR NOT pk.rows OR EXISTS (
				SELECT 1 FROM paper_keys c WHERE c.paper_id = p.id AND c.key = pk.key AND NOT c.cross_list))
			  AND NOT EXISTS (
				SELECT 1 FROM identity_disputes d
				WHERE d.user_id = $1 AND d.paper_id = p.id
				  AND (d.follow_key = fo.key OR d.follow_key IN (SELECT k3.key FROM identity_keys k3 WHERE k3.identity_id = fo.ident)))
			ORDER BY p.id, coalesce(fo.ident::text, fo.key), fo.created_at, fo.key
		) r
		ORDER BY id, followed, key`

// queueLoadReasons queues on b the read of the user's reasons for the
// papers ids (loadReasonsSQL); done gets, per paper, the user's follows that
// match it, each once, in the order of the user's follows list.
func queueLoadReasons(b *pgx.Batch, userID int64, ids []int64, done func(map[int64][]follow.Target)) {
	b.Queue(loadReasonsSQL, userID, ids).Query(func(rows pgx.Rows) error {
		out := map[int64][]follow.Target{}
		var (
			id       int64
			key      string
			followed time.Time
		)
		for rows.Next() {
			if err := rows.Scan(&id, &key, &followed); err != nil {
				return fmt.Errorf("reading match reasons: %w", err)
			}
			t, err := follow.TargetFromKey(key)
			if err != nil {
				continue
			}
			out[id] = append(out[id], t)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("loading match reasons: %w", err)
		}
		done(out)
		return nil
	})
}
