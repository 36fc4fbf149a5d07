// Package openalex is the OpenAlex client: LookupArxiv finds arXiv papers'
// works (authors with their researcher ids, institutions, the work id and
// its references), LookupAuthor an author's current profile, ParseWorks
// reads a /works response. It knows OpenAlex's wire format and nothing of
// followfeed's domain or database: package harvest's enricher applies what
// it finds to stored papers, and package identity records its
// institutions and authors.
package openalex

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"followfeed/apperr"
	"followfeed/internal/httpclient"
	"followfeed/internal/text"
	"followfeed/internal/upstream"
)

// ErrMalformed, ErrUpstream, ErrTooLarge and ErrUnreachable are the
// upstream clients' sentinel errors (package internal/upstream; package
// harvest's have the same values), which the errors of LookupArxiv,
// LookupAuthor and ParseWorks wrap: ErrTooLarge with ErrMalformed for a
// body over MaxBodyBytes (counted after decompression), ErrUnreachable
// with ErrUpstream for a host that cannot be reached. Neither is retried.
var (
	ErrMalformed   = upstream.ErrMalformed
	ErrUpstream    = upstream.ErrUpstream
	ErrTooLarge    = upstream.ErrTooLarge
	ErrUnreachable = upstream.ErrUnreachable
)

const (
	// BatchSize is how many arXiv ids LookupArxiv puts in one request.
	BatchSize = 50
	// MaxBodyBytes is the largest /works response accepted (16 MiB);
	// a larger one is rejected with ErrMalformed.
	MaxBodyBytes = 16 << 20

	// openAlexPerPage exceeds the batch size so that a DOI OpenAlex holds
	// twice (duplicate works happen) cannot push another DOI off the page.
	openAlexPerPage           = 100
	openAlexDefaultBaseURL    = "https://api.openalex.org"
	openAlexDefaultMaxRetries = 4
	openAlexFirstBackoff      = time.Second
	openAlexMaxWait           = 5 * time.Minute
	openAlexDefaultTimeout    = time.Minute
	openAlexMaxInstitutions   = 10_000
	// openAlexMaxReferences caps the referenced works kept per work (a
	// survey cites a few hundred).
	openAlexMaxReferences  = 2_000
	openAlexArxivDOIPrefix = "10.48550/arxiv."
)

// Config configures an Client. The zero value of every field
// selects its default.
type Config struct {
	// BaseURL is the API root; default https://api.openalex.org.
	BaseURL string
	// Mailto is sent as the mailto parameter (OpenAlex's polite pool) when set.
	Mailto string
	// APIKey is sent as the api_key parameter when set (OpenAlex requires a
	// key for more than a token daily allowance since February 2026). It is
	// redacted from returned errors.
	APIKey string
	// Client does the HTTP requests; default a client with a 1-minute
	// timeout. Bodies are capped at MaxBodyBytes whatever the client.
	Client *http.Client
	// MaxRetries is how many times one request is retried after HTTP 429,
	// 5xx or a network error (not one of a host that cannot be reached:
	// ErrUnreachable); default 4, negative for no retries.
	MaxRetries int
	// Sleep waits d or until ctx is done (then returning ctx.Err()); default
	// a timer. Tests inject it to record waits instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry is told of every retry of a request (httpclient.Getter.OnRetry);
	// nil for none.
	OnRetry func(rawURL string, attempt, maxRetries int, wait time.Duration, err error)
}

// Client looks arXiv papers up in OpenAlex to learn their authors'
// researcher ids and their institutions. It is safe for concurrent use.
type Client struct {
	baseURL string
	mailto  string
	apiKey  string
	get     *httpclient.Getter
}

// NewClient returns a client using cfg, with defaults filled in. It
// does no I/O; an invalid BaseURL is reported by LookupArxiv.
func NewClient(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = openAlexDefaultBaseURL
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: openAlexDefaultTimeout}
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = openAlexDefaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.Sleep == nil {
		cfg.Sleep = httpclient.Sleep
	}
	ua := "followfeed-harvester/1"
	if cfg.Mailto != "" {
		ua += " (mailto:" + cfg.Mailto + ")"
	}
	return &Client{
		baseURL: strings.TrimRight(cfg.BaseURL, "/"),
		mailto:  cfg.Mailto,
		apiKey:  cfg.APIKey,
		get: &httpclient.Getter{
			Client:     cfg.Client,
			MaxRetries: cfg.MaxRetries,
			Backoff:    openAlexFirstBackoff,
			MaxWait:    openAlexMaxWait,
			MaxBody:    MaxBodyBytes,
			UserAgent:  ua,
			Accept:     "application/json",
			Sleep:      cfg.Sleep,
			Now:        time.Now,
			OnRetry:    cfg.OnRetry,
		},
	}
}

// Enrichment is what OpenAlex knows about one paper.
type Enrichment struct {
	// Authors are in authorship order. Name is OpenAlex's display name (its
	// raw author name when that is missing; empty only if both are); IDs
	// holds "openalex:A…" and "orcid:XXXX-XXXX-XXXX-XXXX" when known.
	Authors []WorkAuthor
	// Institutions are every institution of every authorship, deduplicated,
	// in first-seen order: "ror:…" (lowercase) then "openalex:I…" for each.
	Institutions []string
	// WorkID is the work's OpenAlex id ("W2741809807"), "" if malformed.
	WorkID string
	// References are the works it cites (referenced_works), as "W…" ids,
	// deduplicated, at most 2,000; malformed ids are left out.
	References []string
	// InstitutionRecords describe each institution once: its ids (the
	// ROR id and the OpenAlex id, linked as one), OpenAlex's display name
	// and country code. They feed the identity registry.
	InstitutionRecords []Institution
}

// WorkAuthor is one author as a work lists them.
type WorkAuthor struct {
	Name string
	IDs  []string // "openalex:A…", "orcid:XXXX-XXXX-XXXX-XXXX"
}

// Institution is one institution as OpenAlex describes it.
type Institution struct {
	IDs     []string // "ror:…", "openalex:I…"
	Name    string
	Country string // ISO 3166-1 alpha-2, upper case, or ""
}

// identify adds what every OpenAlex request carries to q: the contact
// address (OpenAlex's polite pool) and the API key, when configured.
func (c *Client) identify(q url.Values) {
	if c.mailto != "" {
		q.Set("mailto", c.mailto)
	}
	if c.apiKey != "" {
		q.Set("api_key", c.apiKey)
	}
}

// LookupArxiv looks arXiv ids up by their DataCite DOI
// (10.48550/arXiv.<id>), BatchSize ids per request, and returns
// what was found keyed by the caller's id with any version suffix removed
// ("2202.02326v2" -> "2202.02326"). Ids OpenAlex does not know, and strings
// that are not plausible arXiv ids, are simply absent. HTTP 429, 5xx and
// network errors are retried with back-off (1s, 2s, 4s, …) or the server's
// Retry-After (capped at 5 minutes); when retries run out, or on another
// 4xx, the error wraps ErrUpstream; a host that cannot be reached fails
// after one request (ErrUnreachable). A body that is not a valid /works
// response wraps ErrMalformed, and one over MaxBodyBytes (after
// decompression: a gzip bomb) ErrTooLarge too, after one request: the
// same request would fail the same way. On any error no partial result is
// returned.
func (c *Client) LookupArxiv(ctx context.Context, arxivIDs []string) (map[string]Enrichment, error) {
	// want maps the lowercased id (as it appears in a DOI) to the caller's id.
	want := make(map[string]string, len(arxivIDs))
	var order []string
	for _, raw := range arxivIDs {
		s := strings.TrimSpace(raw)
		if len(s) > 6 && strings.EqualFold(s[:6], "arxiv:") {
			s = s[6:]
		}
		id, ok := upstream.CleanArxivID(s)
		if !ok {
			continue
		}
		low := strings.ToLower(id)
		if _, dup := want[low]; dup {
			continue
		}
		want[low] = id
		order = append(order, low)
	}
	out := make(map[string]Enrichment)
	for start := 0; start < len(order); start += BatchSize {
		batch := order[start:min(start+BatchSize, len(order))]
		works, err := c.lookupBatch(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("looking up %d arXiv ids in OpenAlex: %w", len(batch), err)
		}
		for doi, e := range works {
			aid, ok := openAlexArxivIDFromDOI(doi)
			if !ok {
				continue
			}
			id, ok := want[aid]
			if !ok {
				continue
			}
			if prev, seen := out[id]; !seen || len(e.Authors) > len(prev.Authors) {
				out[id] = e
			}
		}
	}
	return out, nil
}

func (c *Client) lookupBatch(ctx context.Context, lowIDs []string) (map[string]Enrichment, error) {
	u, err := url.Parse(c.baseURL + "/works")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, apperr.InvalidField("BaseURL", "must be an http(s) URL, got %q", c.baseURL)
	}
	dois := make([]string, len(lowIDs))
	for i, id := range lowIDs {
		dois[i] = openAlexArxivDOIPrefix + id
	}
	q := u.Query()
	q.Set("filter", "doi:"+strings.Join(dois, "|"))
	q.Set("per-page", fmt.Sprint(openAlexPerPage))
	q.Set("select", "id,doi,authorships,referenced_works")
	c.identify(q)
	u.RawQuery = q.Encode()
	resp, err := upstream.Fetch(ctx, c.get, u.String())
	if err != nil {
		return nil, err
	}
	if resp.Status/100 != 2 {
		return nil, resp.StatusError()
	}
	return ParseWorks(resp.Body)
}

// ParseWorks parses an OpenAlex /works list response ({"meta":…,
// "results":[work…]}) into an Enrichment per work, keyed by the work's DOI
// normalised to lowercase without resolver prefix ("10.48550/arxiv.2202.02326").
// Works without a DOI are left out; when two works share a DOI the one with
// more authors wins. Only id, doi, authorships and referenced_works are read; any DOI is kept
// (LookupArxiv picks the arXiv ones). The work's id and its
// referenced_works are read too (citation events of followed papers). A body that is not JSON, lacks
// "results", has fields of the wrong type or exceeds MaxBodyBytes
// gives an error wrapping ErrMalformed. Author names are valid UTF-8,
// whitespace-collapsed and capped; at most 5000 authors are kept per work.
func ParseWorks(body []byte) (map[string]Enrichment, error) {
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("parsing OpenAlex works: %w: body of %d bytes exceeds the %d-byte cap", ErrMalformed, len(body), MaxBodyBytes)
	}
	var env struct {
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("parsing OpenAlex works: %w: %w", ErrMalformed, err)
	}
	if len(env.Results) == 0 {
		return nil, fmt.Errorf("parsing OpenAlex works: %w: no \"results\" in response", ErrMalformed)
	}
	var works []openAlexWork
	if err := json.Unmarshal(env.Results, &works); err != nil {
		return nil, fmt.Errorf("parsing OpenAlex works: %w: %w", ErrMalformed, err)
	}
	out := make(map[string]Enrichment, len(works))
	for i := range works {
		doi := openAlexNormalizeDOI(works[i].DOI)
		if doi == "" {
			continue
		}
		e := openAlexEnrichment(&works[i])
		if prev, seen := out[doi]; !seen || len(e.Authors) > len(prev.Authors) {
			out[doi] = e
		}
	}
	return out, nil
}

type openAlexWork struct {
	ID              string               `json:"id"`
	DOI             string               `json:"doi"`
	Authorships     []openAlexAuthorship `json:"authorships"`
	ReferencedWorks []string             `json:"referenced_works"`
}

type openAlexAuthorship struct {
	Author struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		ORCID       string `json:"orcid"`
	} `json:"author"`
	RawAuthorName string `json:"raw_author_name"`
	Institutions  []struct {
		ID          string `json:"id"`
		ROR         string `json:"ror"`
		DisplayName string `json:"display_name"`
		CountryCode string `json:"country_code"`
	} `json:"institutions"`
}

func openAlexEnrichment(w *openAlexWork) Enrichment {
	var e Enrichment
	e.WorkID, _ = openAlexEntityID(w.ID, 'W')
	refs := make(map[string]bool)
	for _, r := range w.ReferencedWorks {
		if id, ok := openAlexEntityID(r, 'W'); ok && !refs[id] && len(e.References) < openAlexMaxReferences {
			refs[id] = true
			e.References = append(e.References, id)
		}
	}
	seen := make(map[string]bool)
	addInst := func(s string) {
		if !seen[s] && len(e.Institutions) < openAlexMaxInstitutions {
			seen[s] = true
			e.Institutions = append(e.Institutions, s)
		}
	}
	for i := range w.Authorships {
		as := &w.Authorships[i]
		if len(e.Authors) < upstream.MaxAuthors {
			name := text.Collapse(as.Author.DisplayName, upstream.MaxNameRunes)
			if name == "" {
				name = text.Collapse(as.RawAuthorName, upstream.MaxNameRunes)
			}
			var ids []string
			if id, ok := openAlexEntityID(as.Author.ID, 'A'); ok {
				ids = append(ids, "openalex:"+id)
			}
			if orcid, ok := openAlexORCID(as.Author.ORCID); ok {
				ids = append(ids, "orcid:"+orcid)
			}
			if name != "" || len(ids) > 0 {
				e.Authors = append(e.Authors, WorkAuthor{Name: name, IDs: ids})
			}
		}
		for _, inst := range as.Institutions {
			var ids []string
			fresh := false
			if ror, ok := openAlexROR(inst.ROR); ok {
				ids = append(ids, "ror:"+ror)
				fresh = fresh || !seen["ror:"+ror]
				addInst("ror:" + ror)
			}
			if id, ok := openAlexEntityID(inst.ID, 'I'); ok {
				ids = append(ids, "openalex:"+id)
				fresh = fresh || !seen["openalex:"+id]
				addInst("openalex:" + id)
			}
			if fresh && len(ids) > 0 && len(e.InstitutionRecords) < openAlexMaxInstitutions {
				cc := strings.ToUpper(strings.TrimSpace(inst.CountryCode))
				if len(cc) != 2 {
					cc = ""
				}
				e.InstitutionRecords = append(e.InstitutionRecords, Institution{IDs: ids,
					Name: text.Collapse(inst.DisplayName, upstream.MaxNameRunes), Country: cc})
			}
		}
	}
	return e
}

// openAlexLastSegment returns what follows the last '/' of a URL-ish id.
func openAlexLastSegment(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// openAlexEntityID turns "https://openalex.org/A5023888391" (or the bare
// "A5023888391") into "A5023888391" when its letter is kind.
func openAlexEntityID(s string, kind byte) (string, bool) {
	id := openAlexLastSegment(s)
	if len(id) < 2 || len(id) > 20 || (id[0] != kind && id[0] != kind+('a'-'A')) {
		return "", false
	}
	for i := 1; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return "", false
		}
	}
	return string(kind) + id[1:], true
}

// openAlexORCID turns "https://orcid.org/0000-0002-1825-0097" into
// "0000-0002-1825-0097" (checksum X uppercased) when it has ORCID's shape.
func openAlexORCID(s string) (string, bool) {
	id := strings.ToUpper(openAlexLastSegment(s))
	if len(id) != 19 {
		return "", false
	}
	for i := 0; i < 19; i++ {
		c := id[i]
		switch {
		case i == 4 || i == 9 || i == 14:
			if c != '-' {
				return "", false
			}
		case c >= '0' && c <= '9':
		case i == 18 && c == 'X':
		default:
			return "", false
		}
	}
	return id, true
}

// openAlexROR turns "https://ror.org/03dbr7087" into "03dbr7087" (lowercase)
// when it has ROR's shape (9 letters and digits).
func openAlexROR(s string) (string, bool) {
	id := strings.ToLower(openAlexLastSegment(s))
	if len(id) != 9 {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		if !upstream.IsAlnum(id[i]) {
			return "", false
		}
	}
	return id, true
}

// openAlexNormalizeDOI lowercases a DOI and strips resolver prefixes; "" if
// it does not look like a DOI.
func openAlexNormalizeDOI(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, p := range []string{"https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	if !strings.HasPrefix(s, "10.") || !strings.Contains(s, "/") || len(s) > 512 {
		return ""
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// openAlexArxivIDFromDOI maps "10.48550/arxiv.2202.02326" (normalised, or
// with resolver prefix and any case) to the lowercased id "2202.02326";
// old-style ids ("10.48550/arxiv.hep-th/9504118") too.
func openAlexArxivIDFromDOI(doi string) (string, bool) {
	doi = openAlexNormalizeDOI(doi)
	rest, ok := strings.CutPrefix(doi, openAlexArxivDOIPrefix)
	if !ok {
		return "", false
	}
	id, ok := upstream.CleanArxivID(rest)
	if !ok {
		return "", false
	}
	return strings.ToLower(id), true
}

// Author is an author as OpenAlex's /authors/{id} answers.
type Author struct {
	// ID is the author's id now, "openalex:A…": another id than the one
	// asked when OpenAlex merged that profile into this one.
	ID    string
	ORCID string // "orcid:…", or ""
	Name  string
}

// LookupAuthor asks OpenAlex for the author id ("openalex:A5023888391").
// OpenAlex answers the id of a merged profile with the surviving profile
// (following its redirect), so the result's ID differs from id then. An
// author OpenAlex does not know is found false. Errors are as for
// LookupArxiv.
func (c *Client) LookupAuthor(ctx context.Context, id string) (Author, bool, error) {
	short, ok := openAlexEntityID(strings.TrimPrefix(id, "openalex:"), 'A')
	if !ok {
		return Author{}, false, fmt.Errorf("looking up OpenAlex author %q: not an OpenAlex author id", id)
	}
	u, err := url.Parse(c.baseURL + "/authors/" + short)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Author{}, false, apperr.InvalidField("BaseURL", "must be an http(s) URL, got %q", c.baseURL)
	}
	q := u.Query()
	q.Set("select", "id,display_name,orcid")
	c.identify(q)
	u.RawQuery = q.Encode()
	resp, err := upstream.Fetch(ctx, c.get, u.String())
	if err != nil {
		return Author{}, false, fmt.Errorf("looking up OpenAlex author %s: %w", short, err)
	}
	if resp.Status == 404 {
		return Author{}, false, nil
	}
	if resp.Status/100 != 2 {
		return Author{}, false, fmt.Errorf("looking up OpenAlex author %s: %w", short, resp.StatusError())
	}
	var body struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		ORCID       string `json:"orcid"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return Author{}, false, fmt.Errorf("parsing OpenAlex author %s: %w: %w", short, ErrMalformed, err)
	}
	now, ok := openAlexEntityID(body.ID, 'A')
	if !ok {
		return Author{}, false, fmt.Errorf("parsing OpenAlex author %s: %w: no author id in the response", short, ErrMalformed)
	}
	a := Author{ID: "openalex:" + now, Name: text.Collapse(body.DisplayName, upstream.MaxNameRunes)}
	if orcid, ok := openAlexORCID(body.ORCID); ok {
		a.ORCID = "orcid:" + orcid
	}
	return a, true, nil
}
