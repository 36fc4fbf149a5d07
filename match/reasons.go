package match

import (
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/identity/registrysql"
)

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
// Queries are not in paper_keys: qh reads the search_hits rows
// of the user's own searches (search_hits_pkey, their few rows) that
// list one of the papers, never the other users' searches that
// matched them.
var loadReasonsSQL = `
		WITH fo AS MATERIALIZED (
			SELECT f.key, f.created_at, f.include_cross_lists, k1.identity_id AS ident, coalesce(k2.key, f.key) AS mkey
			FROM ` + follow.FollowsTable + ` f
			` + registrysql.Expand("f.key") + `
			WHERE f.user_id = $1
		), qh AS MATERIALIZED (
			SELECT DISTINCT u.id, h.key
			FROM fo JOIN ` + catalog.HitsTable + ` h ON h.key = fo.key
			CROSS JOIN LATERAL unnest(h.paper_ids) AS u(id)
			WHERE fo.key >= 'query:' AND fo.key < 'query;' AND h.paper_ids && $2::bigint[] AND u.id = ANY($2)
		)
		SELECT id, key, followed FROM (
			SELECT DISTINCT ON (p.id, coalesce(fo.ident::text, fo.key)) p.id, fo.key, fo.created_at AS followed
			FROM unnest($2::bigint[]) AS p(id)
			CROSS JOIN LATERAL (
				(SELECT key, true AS rows FROM ` + catalog.KeysTable + ` WHERE paper_id = p.id OFFSET 0)
				UNION ALL
				SELECT key, false FROM qh WHERE qh.id = p.id
			) pk
			JOIN fo ON fo.mkey = pk.key
			WHERE (fo.include_cross_lists OR NOT pk.rows OR EXISTS (
				SELECT 1 FROM ` + catalog.KeysTable + ` c WHERE c.paper_id = p.id AND c.key = pk.key AND NOT c.cross_list))
			  AND NOT ` + registrysql.Disputed("$1", "p.id", "fo.key", "fo.ident") + `
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
