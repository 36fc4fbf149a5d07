package identity

import (
	"context"

	"followfeed/follow"
	"followfeed/openalex"
)

// OpenAlexSink is what OpenAlex enrichment feeds the registry through
// (package harvest's Enricher.OnIdentities; it implements
// harvest.IdentitySink): institutions (an institution's ROR and OpenAlex
// ids are one, with OpenAlex's name and country) and the followed OpenAlex
// author ids it resolves (a merged profile is linked to its survivor).
// Authorships reach the registry through the stored papers
// (ObservePapers). It takes OpenAlex's own types (package openalex), so
// the registry imports no harvester.
type OpenAlexSink struct{ r *Registry }

// OpenAlexSink returns the registry's OpenAlexSink.
func (r *Registry) OpenAlexSink() OpenAlexSink { return OpenAlexSink{r} }

// ObserveInstitutions records each institution's ids as one institution,
// with OpenAlex's name and country.
func (s OpenAlexSink) ObserveInstitutions(ctx context.Context, insts []openalex.Institution) error {
	recs := make([]Record, 0, len(insts))
	for _, in := range insts {
		recs = append(recs, Record{Kind: follow.Institution, IDs: in.IDs, Name: in.Name, Country: in.Country})
	}
	return s.r.Observe(ctx, SourceOpenAlex, recs)
}

// UnresolvedAuthors is Registry.UnresolvedAuthors.
func (s OpenAlexSink) UnresolvedAuthors(ctx context.Context, limit int) ([]string, error) {
	return s.r.UnresolvedAuthors(ctx, limit)
}

// ObserveAuthor links a followed OpenAlex id to the profile OpenAlex now
// answers it with (the survivor of a merge, with its ORCID and name), or
// registers it alone, unnamed, when OpenAlex does not know it (so it is
// not asked again).
func (s OpenAlexSink) ObserveAuthor(ctx context.Context, asked string, a openalex.Author, found bool) error {
	rec := Record{Kind: follow.Researcher, IDs: []string{asked}}
	if found {
		rec.IDs = append(rec.IDs, a.ID)
		if a.ORCID != "" {
			rec.IDs = append(rec.IDs, a.ORCID)
		}
		rec.Name = a.Name
	}
	return s.r.Observe(ctx, SourceOpenAlex, []Record{rec})
}
