package match

import (
	"context"
	"fmt"
	"time"

	"followfeed/account"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/identity/registrysql"
)

// Head is what a private feed's validator is made of, read in one snapshot.
type Head struct {
	// Version and ChangedAt are the user's user_feeds row: what changes a
	// feed without a new key row (follows edited, identity links, disputes,
	// a token rotated) bumps them.
	Version   int64
	ChangedAt time.Time
	// HighSeq is the snapshot's high seq (match_state.high_seq):
	// Seq covers every row at or below it.
	HighSeq int64
	// Seq is the newest seq of any row that can change what the user's
	// feed shows (see headSQL), 0 when there is none; SeqAt is when it
	// was written (key_seq_times), zero when unknown.
	Seq   int64
	SeqAt time.Time
}

// headSQL reads a user's Head in one statement. u: the feed row and the
// high seq (two probes; the high seq as a scalar subquery, which the
// planner counts as one row whatever match_state's statistics say: joined
// as a table never analysed it was costed at 2,200 rows, which multiplied
// the heads' estimate past jit_above_cost and spent 0.6 s compiling every
// recomputation); fo: the user's follows expanded
// through the identity registry exactly as matchedManySQL expands them
// (one row per key, with the flags of the follow made first); heads: per
// expanded key, the newest row a feed of that follow can show
// (paper_keys_key_seq_idx, ORDER BY seq DESC LIMIT 1, index-only: the
// index includes cross_list and paper_id), skipping cross-lists for
// follows without them and papers the user said are not by that follow's
// person, as the feed does. Replacement rows count for every follow: a
// follow that skips new versions still shows the paper's new title and
// dates. A query's matches are its search_hits rows (the second
// branch: search_hits_pkey, newest first, one probe per followed query).
// This CTE is the one place the rows behind H are read.
//
// Any new row a feed can show has the largest seq there is, so Seq grows
// exactly when such a row arrives; the feed query reads the same rows.
var headSQL = `
	WITH u AS (
		SELECT f.user_id, f.version, f.changed_at, ` + catalog.HighSeqSQL + ` AS high_seq,
		       ` + registrysql.Disputes("f.user_id") + ` AS disputes
		FROM ` + account.FeedsTable + ` f WHERE f.user_id = $1
	), fo AS (
		SELECT DISTINCT ON (m.key) fo.key, fo.include_cross_lists, m.key AS mkey, k1.identity_id AS ident
		FROM ` + follow.FollowsTable + ` fo
		` + registrysql.Expand("fo.key") + `
		CROSS JOIN LATERAL (SELECT coalesce(k2.key, fo.key) AS key) m
		WHERE fo.user_id = $1
		ORDER BY m.key, fo.created_at, fo.key
	), heads AS (
		SELECT max(h.seq) AS seq
		FROM u CROSS JOIN fo CROSS JOIN LATERAL (
			(SELECT pk.seq FROM ` + catalog.KeysTable + ` pk
			WHERE pk.key = fo.mkey AND (fo.include_cross_lists OR NOT pk.cross_list)
			  AND (NOT u.disputes OR NOT ` + registrysql.Disputed("u.user_id", "pk.paper_id", "fo.key", "fo.ident") + `)
			ORDER BY pk.seq DESC LIMIT 1)
			UNION ALL
			(SELECT sh.seq FROM ` + catalog.HitsTable + ` sh
			WHERE fo.mkey >= 'query:' AND fo.mkey < 'query;' AND sh.key = fo.mkey
			ORDER BY sh.seq DESC LIMIT 1)
		) h
	)
	SELECT u.version, u.changed_at, u.high_seq, coalesce(heads.seq, 0),
	       ` + catalog.SeqTimeSQL("heads.seq") + `
	FROM u CROSS JOIN heads`

// Head reads the user's feed validator inputs on the primary (the replica's
// renders are checked against it, feeds' freshness check): one statement, a
// probe per followed key. An unknown user is an error wrapping
// database.ErrNotFound.
func (s *Service) Head(ctx context.Context, userID int64) (Head, error) {
	var h Head
	var at *time.Time
	err := s.db.Pool.QueryRow(ctx, headSQL, userID).Scan(&h.Version, &h.ChangedAt, &h.HighSeq, &h.Seq, &at)
	if err != nil {
		return Head{}, database.NotFound(err, fmt.Sprintf("reading the feed head of user %d", userID))
	}
	if at != nil {
		h.SeqAt = *at
	}
	return h, nil
}
