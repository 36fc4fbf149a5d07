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
			SELECT pk.paper_id, pk.seq
			FROM (` + registrysql.PersonKeys("$1") + `) ks
			CROSS JOIN LATERAL (
				SELECT paper_id, seq FROM ` + catalog.KeysTable + ` pk
				WHERE pk.key = ks.key AND NOT pk.replacement
				ORDER BY pk.seq DESC LIMIT $2
			) pk
			ORDER BY pk.seq DESC LIMIT $2 * 4`

// PublicIn is Public inside tx (a repeatable-read transaction, e.g. the read
// replica's in database.DB.Read).
func PublicIn(ctx context.Context, tx pgx.Tx, key string, limit int) ([]Paper, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var out []Paper
	err := func() error {
		// The newest rows of every key of the key's person or
		// institution (the identity registry), merged.
		rows, err := tx.Query(ctx, publicSQL, key, limit)
		if err != nil {
			return fmt.Errorf("selecting papers of %s: %w", key, err)
		}
		byID := map[int64]*Paper{}
		var ids []int64
		for rows.Next() {
			p := &Paper{}
			if err := rows.Scan(&p.ID, &p.Seq); err != nil {
				return err
			}
			if _, dup := byID[p.ID]; dup || len(ids) == limit {
				continue
			}
			byID[p.ID] = p
			ids = append(ids, p.ID)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("selecting papers of %s: %w", key, err)
		}
		if err := loadDetails(ctx, tx, ids, byID, catalog.AllFields); err != nil {
			return err
		}
		for _, id := range ids {
			out = append(out, *byID[id])
		}
		return nil
	}()
	return out, err
}
