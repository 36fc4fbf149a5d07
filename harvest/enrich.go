package harvest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// EnrichPolicy says how long to keep asking OpenAlex about a paper it does
// not know yet (OpenAlex lags arXiv by days).
type EnrichPolicy struct {
	// FirstRetry is the wait after the first miss; each later miss doubles it.
	FirstRetry time.Duration
	// MaxAttempts is how many misses end the attempts for a paper.
	MaxAttempts int
	// Batch is the most papers one run looks up.
	Batch int
}

// DefaultEnrichPolicy retries after 6 h, 12 h, 1 d, 2 d, 4 d, 8 d, 16 d:
// about a month in all.
var DefaultEnrichPolicy = EnrichPolicy{FirstRetry: 6 * time.Hour, MaxAttempts: 8, Batch: 500}

// Lookup finds OpenAlex data for arXiv ids (OpenAlexClient implements it).
type Lookup interface {
	LookupArxiv(ctx context.Context, arxivIDs []string) (map[string]Enrichment, error)
}

// Enricher adds OpenAlex author and institution ids to harvested papers.
type Enricher struct {
	db       *database.DB
	lookup   Lookup
	ingester *Ingester
	policy   EnrichPolicy
	logger   *slog.Logger
	now      func() time.Time
}

// NewEnricher returns an Enricher. now may be nil (time.Now).
func NewEnricher(db *database.DB, lookup Lookup, in *Ingester, policy EnrichPolicy, logger *slog.Logger, now func() time.Time) *Enricher {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Enricher{db: db, lookup: lookup, ingester: in, policy: policy, logger: logger, now: now}
}

// EnrichStats reports one enrichment run.
type EnrichStats struct {
	Looked, Found, Missing, GivenUp int
	Keys                            int // match keys written (new followers matched)
}

// RunOnce looks up the papers that are due (enrich_after has passed),
// oldest first, up to the policy's batch. Found papers get their authors'
// researcher ids and their institutions, through the same ingest path as
// every other source, so new keys reach their followers through a match
// job; missing ones are retried later with doubling waits, then given up.
// A failed lookup changes nothing and returns the error (the job retries).
func (e *Enricher) RunOnce(ctx context.Context) (EnrichStats, error) {
	var st EnrichStats
	rows, err := e.db.Pool.Query(ctx, `
		SELECT arxiv_id FROM papers
		WHERE enrich_after <= $1 AND deleted_at IS NULL
		ORDER BY enrich_after LIMIT $2`, e.now(), e.policy.Batch) // papers_enrich_idx
	if err != nil {
		return st, fmt.Errorf("selecting papers to enrich: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return st, fmt.Errorf("selecting papers to enrich: %w", err)
	}
	if len(ids) == 0 {
		return st, nil
	}
	st.Looked = len(ids)
	found, err := e.lookup.LookupArxiv(ctx, ids)
	if err != nil {
		return st, fmt.Errorf("looking up %d papers in OpenAlex: %w", len(ids), err)
	}
	var missing []string
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			missing = append(missing, id)
		}
	}
	st.Found, st.Missing = len(found), len(missing)
	res, err := e.ingester.enrich(ctx, found)
	if err != nil {
		return st, err
	}
	st.Keys = res.Keys
	given, err := e.postpone(ctx, missing)
	if err != nil {
		return st, err
	}
	st.GivenUp = given
	return st, nil
}

// postpone schedules the next lookup of papers OpenAlex did not know, or
// gives up on those that have had MaxAttempts.
func (e *Enricher) postpone(ctx context.Context, ids []string) (givenUp int, err error) {
	if len(ids) == 0 {
		return 0, nil
	}
	err = e.db.Pool.QueryRow(ctx, `
		WITH upd AS (
			UPDATE papers SET
				enrich_attempts = enrich_attempts + 1,
				enrich_after = CASE WHEN enrich_attempts + 1 >= $3 THEN NULL
				               ELSE $2::timestamptz + $4 * interval '1 second' * power(2, enrich_attempts) END
			WHERE arxiv_id = ANY($1)
			RETURNING enrich_after IS NULL AS given_up
		)
		SELECT count(*) FILTER (WHERE given_up) FROM upd`,
		ids, e.now(), e.policy.MaxAttempts, e.policy.FirstRetry.Seconds()).Scan(&givenUp)
	if err != nil {
		return 0, fmt.Errorf("postponing %d lookups: %w", len(ids), err)
	}
	return givenUp, nil
}

// enrich applies OpenAlex data to stored papers in one transaction: each
// paper's authors gain the ids of the OpenAlex authors they correspond to,
// its institutions are added, and enrichment is marked done.
func (in *Ingester) enrich(ctx context.Context, found map[string]Enrichment) (*IngestResult, error) {
	res := &IngestResult{Received: len(found)}
	if len(found) == 0 {
		return res, nil
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	err := in.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, keyWritersLock); err != nil {
			return fmt.Errorf("taking the writers' lock: %w", err)
		}
		existing, err := loadForUpdate(ctx, tx, ids)
		if err != nil {
			return err
		}
		var batch []Paper
		for id, s := range existing {
			p := s.paper
			// Deep copies: merge compares against the stored paper.
			p.Authors = make([]Author, len(s.paper.Authors))
			for i, a := range s.paper.Authors {
				p.Authors[i] = Author{Name: a.Name, IDs: slices.Clone(a.IDs)}
			}
			p.Institutions = slices.Clone(s.paper.Institutions)
			applyEnrichment(&p, found[id])
			p.Version = 0 // same version: never a replacement
			if fe := p.Normalize(false); fe != nil {
				continue
			}
			batch = append(batch, p)
		}
		if err := in.write(ctx, tx, batch, existing, nil, res); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE papers SET enrich_after = NULL WHERE arxiv_id = ANY($1)`, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enriching %d papers: %w", len(found), err)
	}
	return res, nil
}

// applyEnrichment gives p's authors the ids of their OpenAlex counterparts:
// same name first, then same surname and initial, then the same position
// when both lists are equally long. Institutions are added.
func applyEnrichment(p *Paper, e Enrichment) {
	used := make([]bool, len(e.Authors))
	match := func(i int, same func(a, b string) bool) bool {
		for j, oa := range e.Authors {
			if !used[j] && len(oa.IDs) > 0 && same(p.Authors[i].Name, oa.Name) {
				used[j] = true
				p.Authors[i].IDs = appendNew(p.Authors[i].IDs, oa.IDs...)
				return true
			}
		}
		return false
	}
	done := make([]bool, len(p.Authors))
	for _, same := range []func(a, b string) bool{
		func(a, b string) bool { return nameKey(a) == nameKey(b) },
		func(a, b string) bool { return surnameInitial(a) != "" && surnameInitial(a) == surnameInitial(b) },
	} {
		for i := range p.Authors {
			if !done[i] {
				done[i] = match(i, same)
			}
		}
	}
	if len(p.Authors) == len(e.Authors) {
		for i := range p.Authors {
			if !done[i] && !used[i] {
				used[i] = true
				p.Authors[i].IDs = appendNew(p.Authors[i].IDs, e.Authors[i].IDs...)
			}
		}
	}
	p.Institutions = appendNew(p.Institutions, e.Institutions...)
}

// surnameInitial is "wen m" for "Mingzhi Wen" and "M. Wen".
func surnameInitial(name string) string {
	f := strings.Fields(strings.ToLower(name))
	if len(f) < 2 {
		return ""
	}
	return f[len(f)-1] + " " + string([]rune(f[0])[:1])
}

func appendNew(dst []string, src ...string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}
