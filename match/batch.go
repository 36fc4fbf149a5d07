package match

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/identity/registrysql"
)

// batch is what the match job reads of its key rows.
type batch struct {
	batchKeys
	// disputers are the users who said of a paper of the batch "not this
	// person".
	disputers []int64
}

// readBatch reads the batch's key rows once (a BRIN range scan on seq),
// and its query hits (search_hits_seq_idx; a row per search, its
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
	err := tx.QueryRow(ctx, batchSQL, fromSeq, toSeq).Scan(&b.keys, &b.primaryNew, &b.primaryReplaced, &b.crossNew, &b.crossReplaced, &papers)
	if err != nil {
		return b, fmt.Errorf("reading the keys %d..%d: %w", fromSeq, toSeq, err)
	}
	if len(papers) == 0 {
		return b, nil
	}
	// The match job's custom plan has the ids as a constant (DisputersSQL).
	rows, err := tx.Query(ctx, registrysql.DisputersSQL, papers)
	if err != nil {
		return b, fmt.Errorf("finding disputes of keys %d..%d: %w", fromSeq, toSeq, err)
	}
	if b.disputers, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return b, fmt.Errorf("finding disputes of keys %d..%d: %w", fromSeq, toSeq, err)
	}
	return b, nil
}

// batchSQL is readBatch's first statement: the batch's keys with their
// flags and, when anybody disputed anything, its papers.
const batchSQL = `
		WITH r AS MATERIALIZED (
			SELECT paper_id, key, cross_list, replacement FROM ` + catalog.KeysTable + ` WHERE seq BETWEEN $1 AND $2
		)
		SELECT coalesce(array_agg(key), '{}'), coalesce(array_agg(pn), '{}'), coalesce(array_agg(pr), '{}'),
		       coalesce(array_agg(cn), '{}'), coalesce(array_agg(cr), '{}'),
		       CASE WHEN ` + registrysql.AnyDisputesSQL + ` THEN ARRAY(SELECT DISTINCT paper_id FROM r) END
		FROM (
			SELECT key,
			       bool_or(NOT cross_list AND NOT replacement) AS pn, bool_or(NOT cross_list AND replacement) AS pr,
			       bool_or(cross_list AND NOT replacement) AS cn, bool_or(cross_list AND replacement) AS cr
			FROM (
				SELECT key, cross_list, replacement FROM r
				UNION ALL
				SELECT key, false, replacement FROM ` + catalog.HitsTable + `
				WHERE seq BETWEEN $1 AND $2
			) r
			GROUP BY key ORDER BY key COLLATE "C"
		) k`

// expand returns ks with, through the identity registry, every other key
// of the same person or institution, with the flags of the keys that reach
// it, in the same order: a primary-key probe and an index-only scan of
// identity_keys per researcher or institution key, in key order.
func (ks batchKeys) expand(ctx context.Context, tx pgx.Tx) (batchKeys, error) {
	var x batchKeys
	err := tx.QueryRow(ctx, expandSQL, ks.keys, ks.primaryNew, ks.primaryReplaced, ks.crossNew, ks.crossReplaced).
		Scan(&x.keys, &x.primaryNew, &x.primaryReplaced, &x.crossNew, &x.crossReplaced)
	if err != nil {
		return x, fmt.Errorf("expanding %d keys through the registry: %w", len(ks.keys), err)
	}
	return x, nil
}

// expandSQL is expand's statement.
var expandSQL = `
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
				FROM b ` + registrysql.LinkedKeys("b.key") + ` AND k2.key <> b.key
			) e
			GROUP BY key ORDER BY key COLLATE "C"
		) x`

// withoutDisputedOnly returns users without those of candidates (users who
// disputed a paper of the batch) whose every new match in [fromSeq, toSeq]
// is a paper they said is not by the person their follow means: feeds and
// digests leave those out (matchedManySQL), so the batch is no new match
// for them (no instant alert, no instant channel). Per candidate, an
// EXISTS over its follows, each expanded through the registry like the
// feed's, and the follow's rows in the batch (paper_keys_key_seq_idx range
// scans), stopping at the first row that is not disputed for that follow's
// person. A query's match (search_hits) is never disputed: a
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
	rows, err := tx.Query(ctx, disputedOnlySQL, check, fromSeq, toSeq)
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

// disputedOnlySQL is withoutDisputedOnly's statement: of the users $1,
// those with a match in [$2, $3] that is not disputed.
var disputedOnlySQL = `
		SELECT u.user_id FROM unnest($1::bigint[]) AS u(user_id)
		WHERE EXISTS (
			SELECT 1
			FROM ` + follow.FollowsTable + ` f
			` + registrysql.Key("f.key") + `
			CROSS JOIN LATERAL (
				SELECT f.key AS key
				UNION
				` + registrysql.IdentityKeys("k1.identity_id") + `
			) x
			JOIN ` + catalog.KeysTable + ` pk ON pk.key = x.key AND pk.seq BETWEEN $2 AND $3
			WHERE f.user_id = u.user_id
			  AND (f.include_cross_lists OR NOT pk.cross_list)
			  AND (f.include_replacements OR NOT pk.replacement)
			  AND NOT ` + registrysql.Disputed("u.user_id", "pk.paper_id", "f.key", "k1.identity_id") + `)
		   OR EXISTS (
			SELECT 1
			FROM ` + follow.FollowsTable + ` f JOIN ` + catalog.HitsTable + ` h ON h.key = f.key AND h.seq BETWEEN $2 AND $3
			WHERE f.user_id = u.user_id AND f.key >= 'query:' AND f.key < 'query;'
			  AND (f.include_replacements OR NOT h.replacement))`
