package identity

import (
	"context"

	"followfeed/follow"
	"followfeed/harvest"
)

// OpenAlexSink returns what OpenAlex enrichment feeds the registry
// through (harvest.Enricher.OnIdentities): institutions (an institution's
// ROR and OpenAlex ids are one, with OpenAlex's name and country) and the
// followed OpenAlex author ids it resolves (a merged profile is linked to
// its survivor). Authorships reach the registry through the stored papers
// (ObservePapers).
func (r *Registry) OpenAlexSink() harvest.IdentitySink { return openAlexSink{r} }

type openAlexSink struct{ r *Registry }

func (s openAlexSink) ObserveInstitutions(ctx context.Context, insts []harvest.Institution) error {
	recs := make([]Record, 0, len(insts))
	for _, in := range insts {
		recs = append(recs, Record{Kind: follow.Institution, IDs: in.IDs, Name: in.Name, Country: in.Country})
	}
	return s.r.Observe(ctx, SourceOpenAlex, recs)
}

func (s openAlexSink) UnresolvedAuthors(ctx context.Context, limit int) ([]string, error) {
	return s.r.UnresolvedAuthors(ctx, limit)
}

// ObserveAuthor links a followed OpenAlex id to the profile OpenAlex now
// answers it with (the survivor of a merge, with its ORCID and name), or
// registers it alone, unnamed, when OpenAlex does not know it (so it is
// not asked again).
func (s openAlexSink) ObserveAuthor(ctx context.Context, asked string, a harvest.OpenAlexAuthor, found bool) error {
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
