package fediverse

import (
	"strings"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/internal/text"
)

// Handle is the user name of the actor of t's public feed (the part before
// @host): a category or archive is its id ("cs.LG", "cs"), a researcher or
// institution its id with the scheme's colon as an underscore
// ("openalex_A5023888391", "orcid_0000-0002-1825-0097", "host_1955166",
// "ror_03dbr7087"); a dblp id's slashes become dots ("dblp_46.5782"), since
// a Mastodon user name has none. Handle is "" for a kind without a public
// feed.
func Handle(t follow.Target) string {
	switch t.Kind {
	case follow.Category:
		return t.ID
	case follow.Researcher, follow.Institution:
		scheme, rest, ok := strings.Cut(t.ID, ":")
		if !ok {
			return ""
		}
		if scheme == "dblp" {
			rest = strings.ReplaceAll(rest, "/", ".")
		}
		return scheme + "_" + rest
	}
	return ""
}

// researcherSchemes and institutionSchemes name the id schemes a handle's
// prefix may give (lower case). OpenAlex ids are of either kind: the
// letter after the prefix says which (A for authors, I for institutions).
var (
	researcherSchemes  = map[string]bool{"orcid": true, "dblp": true, "s2": true, "host": true}
	institutionSchemes = map[string]bool{"ror": true}
)

// ParseHandle is Handle's inverse, without regard to case: it returns the
// public feed the handle names, normalised as follow.ParseTarget does (so
// "OPENALEX_a5023888391" and "openalex_A5023888391" are one target, and
// "cs.lg" is cs.LG). A dblp id keeps the case it is given, dblp ids being
// case-sensitive. Anything else is an apperr.NotFound naming the forms.
func ParseHandle(h string) (follow.Target, error) {
	h = strings.TrimPrefix(strings.TrimSpace(h), "@")
	if h == "" || len(h) > 256 {
		return follow.Target{}, errNoSuchHandle(h)
	}
	prefix, rest, ok := strings.Cut(h, "_")
	if !ok {
		t, err := follow.ParseTarget("category", h)
		if err != nil {
			return follow.Target{}, errNoSuchHandle(h)
		}
		return t, nil
	}
	scheme := strings.ToLower(prefix)
	kind := ""
	switch {
	case scheme == "openalex" && rest != "" && (rest[0] == 'A' || rest[0] == 'a'):
		kind = "researcher"
	case scheme == "openalex" && rest != "" && (rest[0] == 'I' || rest[0] == 'i'):
		kind = "institution"
	case researcherSchemes[scheme]:
		kind = "researcher"
	case institutionSchemes[scheme]:
		kind = "institution"
	default:
		return follow.Target{}, errNoSuchHandle(h)
	}
	if scheme == "dblp" {
		rest = strings.ReplaceAll(rest, ".", "/")
	}
	t, err := follow.ParseTarget(kind, scheme+":"+rest)
	if err != nil {
		return follow.Target{}, errNoSuchHandle(h)
	}
	return t, nil
}

func errNoSuchHandle(h string) error {
	h = text.Truncate(h, 80)
	return apperr.New(apperr.NotFound, "no actor is called %q here: a category or archive is its id (cs.LG, cs), "+
		"a researcher scheme_id (openalex_A5023888391, orcid_0000-0002-1825-0097, host_1955166), an institution ror_03dbr7087", h)
}
