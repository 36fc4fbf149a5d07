package match

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/identity/registrysql"
)

// queryArrays are the queries of a batch as the parallel arrays
// matchedManySQL unnests, with defaults applied.
type queryArrays struct {
	users         []int64
	only          []string
	after, upTo   []int64
	perKey, limit []int32
	unread        []bool
}

func newQueryArrays(qs []Query) queryArrays {
	n := len(qs)
	a := queryArrays{users: make([]int64, n), only: make([]string, n), after: make([]int64, n), upTo: make([]int64, n),
		perKey: make([]int32, n), limit: make([]int32, n), unread: make([]bool, n)}
	for i, q := range qs {
		q.Limit = q.limit()
		a.users[i], a.after[i], a.limit[i], a.unread[i] = q.UserID, q.AfterSeq, int32(q.limit()), q.Unread
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
// scan, LIMIT per key), with the follow that matched; a query's
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
// the planner hash every earlier match of every followed key instead. A query's earlier matches are its
// search_hits rows before the window (search_hits_pkey, the user's few
// searches). With only_key, "before" means before by that follow: a paper another follow matched earlier is new to it (filtered
// channels).
// total counts what is kept (window functions run before LIMIT).
// unread (Query.Unread): each key's rows skip the papers the user marked
// read or done (unreadSQL, controls.go), so that "ever"'s newest per_key
// rows of a key are unread ones.
var matchedManySQL = `
	WITH q AS (
		SELECT u.*, ` + registrysql.Disputes("u.user_id") + ` AS disputes
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::int[], $6::int[], $7::bool[])
		WITH ORDINALITY AS u(user_id, only_key, after_seq, upto_seq, per_key, lim, unread, ord)
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
				FROM ` + follow.FollowsTable + ` fo
				` + registrysql.Expand("fo.key") + `
				CROSS JOIN LATERAL (SELECT coalesce(k2.key, fo.key) AS key) m
				WHERE fo.user_id = q.user_id AND (q.only_key = '' OR fo.key = q.only_key)
				ORDER BY m.key, fo.created_at, fo.key
			) fo CROSS JOIN LATERAL (
				(SELECT pk.paper_id, pk.seq, pk.replacement, pk.new_paper
				FROM ` + catalog.KeysTable + ` pk
				WHERE pk.key = fo.mkey AND pk.seq > q.after_seq AND pk.seq <= q.upto_seq
				  AND (fo.include_cross_lists OR NOT pk.cross_list)
				  AND (fo.include_replacements OR NOT pk.replacement)
				  AND (NOT q.disputes OR NOT ` + registrysql.Disputed("q.user_id", "pk.paper_id", "fo.key", "fo.ident") + `)
				  AND ` + unreadSQL("pk.paper_id") + `
				ORDER BY pk.seq DESC
				LIMIT q.per_key)
				UNION ALL
				(SELECT u.paper_id, h.seq, h.replacement, h.new_paper
				FROM ` + catalog.HitsTable + ` h CROSS JOIN LATERAL unnest(h.paper_ids) AS u(paper_id)
				WHERE fo.mkey >= 'query:' AND fo.mkey < 'query;'
				  AND h.key = fo.mkey AND h.seq > q.after_seq AND h.seq <= q.upto_seq
				  AND (fo.include_replacements OR NOT h.replacement)
				  AND ` + unreadSQL("u.paper_id") + `
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
var seenProbeSQL = `(SELECT true FROM (
				(SELECT 1
				FROM ` + catalog.KeysTable + ` pk
				CROSS JOIN LATERAL (
					SELECT pk.key AS key
					UNION ALL
					` + registrysql.Keys("pk.key") + ` AND k2.key <> pk.key
				) x
				JOIN ` + follow.FollowsTable + ` fo ON fo.user_id = q.user_id AND fo.key = x.key
				  AND (q.only_key = '' OR fo.key = q.only_key)
				WHERE q.after_seq > 0 AND NOT c.new_in_window AND pk.paper_id = c.paper_id
				  AND pk.seq <= q.after_seq AND NOT pk.replacement
				  AND (fo.include_cross_lists OR NOT pk.cross_list))
				UNION ALL
				(SELECT 1
				FROM ` + follow.FollowsTable + ` fo JOIN ` + catalog.HitsTable + ` h ON h.key = fo.key
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
	b.Queue(matchedManySQL, a.users, a.only, a.after, a.upTo, a.perKey, a.limit, a.unread).Query(func(rows pgx.Rows) error {
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
