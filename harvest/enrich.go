package harvest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"followfeed/catalog"
	"followfeed/openalex"
	"followfeed/paper"
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

// Lookup finds OpenAlex data for arXiv ids (openalex.Client implements it).
type Lookup interface {
	LookupArxiv(ctx context.Context, arxivIDs []string) (map[string]openalex.Enrichment, error)
}

// IdentitySink stores what OpenAlex says about institutions and
// authors (the identity registry's identity.OpenAlexSink, wired in package
// app).
type IdentitySink interface {
	// ObserveInstitutions stores which ids are one institution, its name
	// and country.
	ObserveInstitutions(ctx context.Context, institutions []openalex.Institution) error
	// UnresolvedAuthors returns up to limit OpenAlex author ids
	// ("openalex:A…") that users follow and the registry does not know.
	UnresolvedAuthors(ctx context.Context, limit int) ([]string, error)
	// ObserveAuthor stores what OpenAlex answered for asked: found false
	// (unknown to OpenAlex; remembered so it is not asked again), or the
	// author, whose ID differs from asked when OpenAlex merged the profile
	// into it (then asked is linked to the survivor).
	ObserveAuthor(ctx context.Context, asked string, a openalex.Author, found bool) error
}

// AuthorLookup asks OpenAlex about one author (openalex.Client implements
// it). A Lookup that does not implement it resolves no followed authors.
type AuthorLookup interface {
	LookupAuthor(ctx context.Context, id string) (openalex.Author, bool, error)
}

// authorsPerRun bounds the followed OpenAlex author ids one run resolves
// (one request each).
const authorsPerRun = 50

// Enricher adds OpenAlex author and institution ids to harvested papers. It
// decides what to look up and how to apply it; the papers and their
// enrichment schedule are written through the catalog.Store (whose identity
// observer links each author's OpenAlex id and ORCID in the same
// transaction), the institutions through the IdentitySink.
type Enricher struct {
	papers     *catalog.Store
	lookup     Lookup
	policy     EnrichPolicy
	logger     *slog.Logger
	now        func() time.Time
	health     *Health
	identities IdentitySink
}

// ReportTo makes every run record its outcome in h (source openalex): the
// papers found count as that day's records, a failure as the last error.
// A run that asked OpenAlex nothing (no paper due, no followed author to
// resolve) records nothing: a success says OpenAlex answered, so a source
// never asked stays "never" (not asked yet). Call it before the first run.
func (e *Enricher) ReportTo(h *Health) { e.health = h }

// OnIdentities makes every run hand the institutions it found to sink.
// Call it before the first run.
func (e *Enricher) OnIdentities(sink IdentitySink) { e.identities = sink }

// NewEnricher returns an Enricher. now may be nil (time.Now).
func NewEnricher(papers *catalog.Store, lookup Lookup, policy EnrichPolicy, logger *slog.Logger, now func() time.Time) *Enricher {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Enricher{papers: papers, lookup: lookup, policy: policy, logger: logger, now: now}
}

// EnrichStats reports one enrichment run.
type EnrichStats struct {
	Looked, Found, Missing, GivenUp int
	Keys                            int // match keys written (new followers matched)
	// Authors counts the followed OpenAlex author ids looked up, Merged
	// those OpenAlex answered under another (surviving) id.
	Authors, Merged int
	// Refused counts the papers whose request's response exceeded the
	// size cap (ErrTooLarge); they are postponed like Missing ones.
	Refused int
}

// asked says whether the run had an answer from OpenAlex: a paper or a
// followed author looked up.
func (st EnrichStats) asked() bool { return st.Looked > 0 || st.Authors > 0 }

// resolveAuthors looks up followed OpenAlex author ids no paper has
// brought into the registry: a profile OpenAlex merged into another is
// answered under the survivor's id, which is linked to it, so the follow
// matches the survivor's papers.
func (e *Enricher) resolveAuthors(ctx context.Context, st *EnrichStats) error {
	al, ok := e.lookup.(AuthorLookup)
	if e.identities == nil || !ok {
		return nil
	}
	ids, err := e.identities.UnresolvedAuthors(ctx, authorsPerRun)
	if err != nil {
		return err
	}
	for _, id := range ids {
		a, found, err := al.LookupAuthor(ctx, id)
		if err != nil {
			return err
		}
		st.Authors++
		if found && a.ID != id {
			st.Merged++
		}
		if err := e.identities.ObserveAuthor(ctx, id, a, found); err != nil {
			return err
		}
	}
	return nil
}

// RunOnce looks up the papers that are due (enrich_after has passed),
// oldest first, up to the policy's batch. Found papers get their authors'
// researcher ids and their institutions, through the same ingest path as
// every other source, so new keys reach their followers through a match
// job; missing ones are retried later with doubling waits, then given up.
// A failed lookup changes nothing and returns the error (the job retries),
// except one whose response exceeds the size cap (ErrTooLarge, a gzip
// bomb say): the same request would fail the same way, so it is a
// permanent failure of that request's papers (openalex.BatchSize of them),
// not of the run. They are postponed as missing ones are, and the run goes
// on with the other requests and returns no error (nothing for the job to
// retry); the source's health records the failure.
func (e *Enricher) RunOnce(ctx context.Context) (EnrichStats, error) {
	st, refused, err := e.runOnce(ctx)
	if err == nil && refused != nil {
		e.logger.WarnContext(ctx, "OpenAlex response over the size cap; its papers are postponed, not retried now",
			"source", SourceOpenAlex, "papers", st.Refused, "error", refused)
	}
	if e.health != nil && ctx.Err() == nil {
		switch {
		case err != nil:
			e.logger.WarnContext(ctx, "enrichment failed", "source", SourceOpenAlex, "error", err)
			e.health.recordError(ctx, SourceOpenAlex, err)
		case refused != nil:
			e.health.recordError(ctx, SourceOpenAlex, refused)
		case st.asked(): // else nothing was asked: the source's state stays
			if herr := e.health.recordSuccess(ctx, SourceOpenAlex, st.Found); herr != nil {
				e.logger.WarnContext(ctx, "recording enrichment", "source", SourceOpenAlex, "error", herr)
			}
		}
	}
	return st, err
}

// lookupAll looks ids up one request's worth (openalex.BatchSize) at a
// time. A request refused as too large leaves its ids in refused (with
// its error) and the others go on; any other error ends the lookup.
func (e *Enricher) lookupAll(ctx context.Context, ids []string) (found map[string]openalex.Enrichment, refused []string, refusedErr, err error) {
	found = make(map[string]openalex.Enrichment, len(ids))
	for chunk := range slices.Chunk(ids, openalex.BatchSize) {
		f, err := e.lookup.LookupArxiv(ctx, chunk)
		if errors.Is(err, ErrTooLarge) && ctx.Err() == nil {
			refused, refusedErr = append(refused, chunk...), err
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("looking up %d papers in OpenAlex: %w", len(ids), err)
		}
		maps.Copy(found, f)
	}
	return found, refused, refusedErr, nil
}

func (e *Enricher) runOnce(ctx context.Context) (st EnrichStats, refusedErr, err error) {
	ids, err := e.papers.DueForEnrichment(ctx, e.now(), e.policy.Batch)
	if err != nil {
		return st, nil, err
	}
	// Resolving followed authors must not hold up the papers' enrichment:
	// a failure is logged and the next run tries again.
	if err := e.resolveAuthors(ctx, &st); err != nil {
		if ctx.Err() != nil {
			return st, nil, err
		}
		e.logger.Warn("resolving followed OpenAlex authors", "error", err)
	}
	if len(ids) == 0 {
		return st, nil, nil
	}
	st.Looked = len(ids)
	found, refused, refusedErr, err := e.lookupAll(ctx, ids)
	if err != nil {
		return st, nil, err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := found[id]; !ok && !slices.Contains(refused, id) {
			missing = append(missing, id)
		}
	}
	st.Found, st.Missing, st.Refused = len(found), len(missing), len(refused)
	res, err := e.papers.Enrich(ctx, foundIDs(found), func(p *paper.Paper) { applyEnrichment(p, found[p.ArxivID]) })
	if err != nil {
		return st, nil, err
	}
	st.Keys = res.Keys
	if e.identities != nil {
		var insts []openalex.Institution
		for _, f := range found {
			insts = append(insts, f.InstitutionRecords...)
		}
		// After the papers' commit: a failure here loses only names and
		// links the next paper of the institution brings again.
		if err := e.identities.ObserveInstitutions(ctx, insts); err != nil {
			return st, nil, fmt.Errorf("storing %d OpenAlex institutions: %w", len(insts), err)
		}
	}
	// Papers OpenAlex did not know, and those of a request refused as too
	// large, are asked again later, with doubling waits, then given up.
	given, err := e.papers.PostponeEnrichment(ctx, append(missing, refused...), e.now(), e.policy.MaxAttempts, e.policy.FirstRetry)
	if err != nil {
		return st, nil, err
	}
	st.GivenUp = given
	return st, refusedErr, nil
}

// foundIDs are the keys of found.
func foundIDs(found map[string]openalex.Enrichment) []string {
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	return ids
}

// applyEnrichment gives p's authors the ids of their OpenAlex counterparts:
// same name first, then same surname and initial, then the same position
// when both lists are equally long. Institutions are added; the work id and
// its references are handed to the store (citation events).
func applyEnrichment(p *paper.Paper, e openalex.Enrichment) {
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
		func(a, b string) bool { return paper.NameKey(a) == paper.NameKey(b) },
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
	if e.WorkID != "" {
		p.OpenAlexID = e.WorkID
	}
	p.References = e.References
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
