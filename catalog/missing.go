package catalog

import (
	"context"
	"fmt"
)

// Missing returns the ids of arxivIDs (without version) that no stored
// paper has, in the order given. It reads only; the completeness check of
// the harvest compares a repository's list of a day with it.
func (s *Store) Missing(ctx context.Context, arxivIDs []string) ([]string, error) {
	if len(arxivIDs) == 0 {
		return nil, nil
	}
	// One probe of the papers_arxiv_id_key unique index per id.
	rows, err := s.db.Pool.Query(ctx, `
		SELECT i.id FROM unnest($1::text[]) WITH ORDINALITY AS i(id, n)
		WHERE NOT EXISTS (SELECT 1 FROM papers p WHERE p.arxiv_id = i.id)
		ORDER BY i.n`, arxivIDs)
	if err != nil {
		return nil, fmt.Errorf("looking up %d arXiv ids: %w", len(arxivIDs), err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
