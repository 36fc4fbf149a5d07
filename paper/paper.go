// Package paper says what an arXiv paper is to followfeed: the Paper and
// Author types every source produces, their normalisation and validation,
// the match keys a paper is found by (Keys), its text as queries
// read it (Doc), and the kinds of event a followed paper has. It touches no
// database: package catalog stores papers (catalog.Store.Ingest) and reads
// them back (catalog.Load).
package paper

import (
	"time"
)

// Paper is one arXiv paper as a source describes it. Sources fill what they
// know; Normalize makes it storable or says which field keeps it from being.
type Paper struct {
	// ArxivID is the id without version: "2202.02326" or "astro-ph/9901001".
	ArxivID string
	// Version is the arXiv version number (1 for v1); 0 means unknown and is
	// stored as 1.
	Version  int
	Title    string
	Abstract string
	Authors  []Author
	// PrimaryCategory is the paper's primary arXiv category (e.g. "cs.LG").
	PrimaryCategory string
	// Categories are all categories, primary included (any order; cross-lists
	// are the ones that are not the primary).
	Categories   []string
	Institutions []string // "ror:03dbr7087", "openalex:I136199984"
	DOI          string
	JournalRef   string
	Comments     string
	SubmittedAt  time.Time // first version submitted
	UpdatedAt    time.Time // this version submitted (zero: same as SubmittedAt)
	AnnouncedAt  time.Time // when the source announced it (OAI datestamp), zero if unknown
	AbsURL       string
	PDFURL       string
	// Deleted marks an OAI-PMH deleted record: the paper is withdrawn from
	// feeds, and nothing else of it is used.
	Deleted bool
	// OpenAlexID is the paper's OpenAlex work ("W2741809807"), known from
	// enrichment: catalog.Store.Enrich stores it (no other write erases it), and a
	// citing paper's References are resolved to followed papers through it.
	OpenAlexID string
	// References are the OpenAlex works the paper cites ("W…"), from
	// enrichment. They are not stored: catalog.Store.Enrich turns the followed
	// papers among them into citation events.
	References []string
}

// Author is one author with every researcher id known for them, in the
// normalised forms of package follow ("openalex:A…", "orcid:…", "s2:…",
// "host:…").
type Author struct {
	Name string   `json:"name"`
	IDs  []string `json:"ids,omitempty"`
}

// AuthorName returns the name of the first author carrying researcherID (a
// normalised id, "openalex:A…"), and whether there is one. Its signature
// fits follow.Target.ReasonName.
func (p *Paper) AuthorName(researcherID string) (string, bool) {
	for _, a := range p.Authors {
		for _, id := range a.IDs {
			if id == researcherID {
				return a.Name, true
			}
		}
	}
	return "", false
}

// The event kinds of a followed paper (kind paper), as paper_keys.event
// stores them ("" for an ordinary key row; package catalog writes the
// rows). An event's paper is the feed item: the followed paper itself for
// its own events, the citing paper for EventCites.
const (
	// EventVersion is a new version of the followed paper; the detail is
	// the arXiv comments when the new version changed them.
	EventVersion = "version"
	// EventPublished is a DOI or journal reference appearing on the
	// followed paper; the detail is the journal reference, else "doi:<DOI>".
	EventPublished = "published"
	// EventWithdrawn is the source withdrawing the followed paper.
	EventWithdrawn = "withdrawn"
	// EventCites is a newly enriched paper whose OpenAlex referenced_works
	// include the followed paper's work; the row is the citing paper's and
	// the detail is the followed paper's title.
	EventCites = "cites"
)
