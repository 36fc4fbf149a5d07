package catalog

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/paper"
)

// The enrichment schedule lives in papers: enrich_after is when a paper is
// next due for a lookup of its authors' researcher ids (NULL: never again),
// enrich_attempts how many lookups missed. Ingest sets enrich_after for new
// papers without author ids; the methods below are the rest of its life.

// DueForEnrichment returns the arXiv ids of the papers due for a lookup at
// now (enrich_after has passed, not withdrawn), the longest waiting first,
// at most limit of them.
func (st *Store) DueForEnrichment(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := st.db.Pool.Query(ctx, `
		SELECT arxiv_id FROM papers
		WHERE enrich_after <= $1 AND deleted_at IS NULL
		ORDER BY enrich_after LIMIT $2`, now, limit) // papers_enrich_idx
	if err != nil {
		return nil, fmt.Errorf("selecting papers to enrich: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("selecting papers to enrich: %w", err)
	}
	return ids, nil
}

// Enrich updates the stored papers among arxivIDs in one transaction: apply
// receives a copy of each (same version, so never a replacement) and adds
// what a lookup found; the result is normalised (a paper it makes invalid is
// left alone) and merged like any ingest, so new keys reach their followers
// through a match job enqueued in the same transaction. A paper's
// OpenAlexID is stored, and its References give the followed papers it
// cites their EventCites rows, each once. Every paper among
// arxivIDs is marked done (enrich_after cleared), changed or not.
func (st *Store) Enrich(ctx context.Context, arxivIDs []string, apply func(p *paper.Paper)) (*IngestResult, error) {
	res := &IngestResult{Received: len(arxivIDs)}
	if len(arxivIDs) == 0 {
		return res, nil
	}
	err := st.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockWriters(ctx, tx); err != nil {
			return err
		}
		existing, err := loadForUpdate(ctx, tx, arxivIDs)
		if err != nil {
			return err
		}
		var batch []paper.Paper
		var works, workPapers []string
		for _, s := range existing {
			p := s.paper
			// Deep copies: merge compares against the stored paper.
			p.Authors = make([]paper.Author, len(s.paper.Authors))
			for i, a := range s.paper.Authors {
				p.Authors[i] = paper.Author{Name: a.Name, IDs: slices.Clone(a.IDs)}
			}
			p.Institutions = slices.Clone(s.paper.Institutions)
			apply(&p)
			p.Version = 0 // same version: never a replacement
			if fe := p.Normalize(false); fe != nil {
				continue
			}
			batch = append(batch, p)
			if p.OpenAlexID != "" {
				works, workPapers = append(works, p.OpenAlexID), append(workPapers, p.ArxivID)
			}
		}
		// Works first: a paper of this batch citing another one of it
		// finds it.
		if len(works) > 0 {
			if _, err := tx.Exec(ctx, `
				UPDATE papers p SET openalex_id = v.work
				FROM unnest($1::text[], $2::text[]) AS v(arxiv_id, work)
				WHERE p.arxiv_id = v.arxiv_id AND p.openalex_id IS DISTINCT FROM v.work`, workPapers, works); err != nil {
				return fmt.Errorf("storing OpenAlex works: %w", err)
			}
		}
		if err := st.write(ctx, tx, batch, existing, nil, res); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE papers SET enrich_after = NULL WHERE arxiv_id = ANY($1)`, arxivIDs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enriching %d papers: %w", len(arxivIDs), err)
	}
	return res, nil
}

// PostponeEnrichment schedules the next lookup of papers a lookup did not
// find: attempt n (counting from 0) waits firstRetry × 2^n from now; a paper
// that has had maxAttempts is given up (enrich_after NULL). It returns how
// many were given up.
func (st *Store) PostponeEnrichment(ctx context.Context, arxivIDs []string, now time.Time, maxAttempts int, firstRetry time.Duration) (givenUp int, err error) {
	if len(arxivIDs) == 0 {
		return 0, nil
	}
	err = st.db.Pool.QueryRow(ctx, `
		WITH upd AS (
			UPDATE papers SET
				enrich_attempts = enrich_attempts + 1,
				enrich_after = CASE WHEN enrich_attempts + 1 >= $3 THEN NULL
				               ELSE $2::timestamptz + $4 * interval '1 second' * power(2, enrich_attempts) END
			WHERE arxiv_id = ANY($1)
			RETURNING enrich_after IS NULL AS given_up
		)
		SELECT count(*) FILTER (WHERE given_up) FROM upd`,
		arxivIDs, now, maxAttempts, firstRetry.Seconds()).Scan(&givenUp)
	if err != nil {
		return 0, fmt.Errorf("postponing %d lookups: %w", len(arxivIDs), err)
	}
	return givenUp, nil
}
