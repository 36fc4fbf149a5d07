package match

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/identity/registrysql"
)

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

// publicSQL reads the newest first-match rows (at most $2 of each) of key
// $1 and the other keys of its person or institution, at most 4 × $2.
var publicSQL = `
			SELECT pk.paper_id, pk.seq, false
			FROM (` + registrysql.PersonKeys("$1") + `) ks
			CROSS JOIN LATERAL (
				SELECT paper_id, seq FROM ` + catalog.KeysTable + ` pk
				WHERE pk.key = ks.key AND NOT pk.replacement
				ORDER BY pk.seq DESC LIMIT $2
			) pk
			ORDER BY pk.seq DESC LIMIT $2 * 4`

// publicWindowSQL reads the rows, replacements too, of key $1 and the
// other keys of its person or institution in the window ($3, $4], at most
// 4 × $2 of each key and 16 × $2 in all.
var publicWindowSQL = `
			SELECT pk.paper_id, pk.seq, pk.replacement
			FROM (` + registrysql.PersonKeys("$1") + `) ks
			CROSS JOIN LATERAL (
				SELECT paper_id, seq, replacement FROM ` + catalog.KeysTable + ` pk
				WHERE pk.key = ks.key AND pk.seq > $3 AND pk.seq <= $4
				ORDER BY pk.seq DESC LIMIT $2 * 4
			) pk
			ORDER BY pk.seq DESC LIMIT $2 * 16`

// PublicIn is Public inside tx (a repeatable-read transaction, e.g. the read
// replica's in database.DB.Read).
func PublicIn(ctx context.Context, tx pgx.Tx, key string, limit int) ([]Paper, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	// The newest rows of every key of the key's person or institution (the
	// identity registry), merged.
	return publicRows(ctx, tx, key, limit, publicSQL, key, limit)
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
	return publicRows(ctx, tx, key, limit, publicWindowSQL, key, limit, afterSeq, upToSeq)
}

// publicRows runs a public selection (paper_id, seq, and whether the row is
// a replacement row, newest first) and loads the first limit distinct
// papers: a paper is Replaced only when every row of it read was a
// replacement row.
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
	if err := loadDetails(ctx, tx, ids, byID, catalog.AllFields); err != nil {
		return nil, err
	}
	out := make([]Paper, 0, len(ids))
	for _, id := range ids {
		out = append(out, *byID[id])
	}
	return out, nil
}
