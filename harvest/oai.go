package harvest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"followfeed/apperr"
	"followfeed/paper"
)

// Sentinel errors of the upstream clients (OAI-PMH and OpenAlex). Test them
// with errors.Is; the errors returned wrap them with the action that failed.
var (
	// ErrMalformed marks an upstream response that arrived complete (HTTP
	// 2xx) but cannot be used: not well-formed XML/JSON (for example
	// truncated), not the expected document, hostile (a DOCTYPE), or larger
	// than the body cap. The clients do not retry it: the caller should retry
	// the whole job later.
	ErrMalformed = errors.New("malformed upstream response")
	// ErrUpstream marks an upstream that failed or refused: HTTP 429, 5xx or
	// network errors that persisted through every retry, or an HTTP status
	// that is not worth retrying (4xx other than 429).
	ErrUpstream = errors.New("upstream request failed")
	// ErrBadResumptionToken is matched (errors.Is) by the *OAIError of an
	// OAI-PMH badResumptionToken error: the token expired or is unknown, and
	// the harvest must restart with From set to the last datestamp it stored.
	ErrBadResumptionToken = errors.New("OAI-PMH resumption token rejected")
)

// The OAI-PMH metadata formats OAIClient understands.
const (
	// OAIFormatArXiv is arXiv's "arXiv" metadata format: structured authors,
	// created/updated dates, no version numbers.
	OAIFormatArXiv = "arXiv"
	// OAIFormatArXivRaw is arXiv's "arXivRaw" format: every version with its
	// submission date, authors as one free-text string.
	OAIFormatArXivRaw = "arXivRaw"
)

// OAIMaxBodyBytes is the largest OAI-PMH response body accepted (64 MiB); a
// larger one is rejected with ErrMalformed.
const OAIMaxBodyBytes = 64 << 20

// Per-field caps applied to every parsed record. Longer values are truncated
// (at a rune boundary), extra list entries dropped; a DOI or category that
// is too long is dropped, since a truncated one would be wrong.
const (
	oaiMaxTitleRunes      = 2000
	oaiMaxAbstractRunes   = 100_000
	oaiMaxCommentsRunes   = 10_000
	oaiMaxJournalRefRunes = 2000
	oaiMaxDOIBytes        = 256
	oaiMaxCategories      = 100
	oaiMaxCategoryBytes   = 64
	oaiMaxTokenBytes      = 4096
	upstreamMaxAuthors    = 5000
	upstreamMaxNameRunes  = 500
)

const (
	oaiDefaultBaseURL       = "https://oaipmh.arxiv.org/oai"
	oaiDefaultPageDelay     = 3 * time.Second
	oaiDefaultMaxRetries    = 5
	oaiDefaultMaxRetryAfter = 5 * time.Minute
	oaiFirstBackoff         = 5 * time.Second
	oaiDefaultTimeout       = 5 * time.Minute
	upstreamUserAgent       = "followfeed-harvester/1 (+https://arxiv.org/help/oa)"
)

// OAIConfig configures an OAIClient. The zero value of every field selects
// its default.
type OAIConfig struct {
	// BaseURL is the OAI-PMH endpoint; default https://oaipmh.arxiv.org/oai.
	BaseURL string
	// Format is the metadataPrefix: OAIFormatArXiv (default) or
	// OAIFormatArXivRaw. Any other value makes ListRecords fail.
	Format string
	// Client does the HTTP requests; default a client with a 5-minute
	// timeout. Bodies are capped at OAIMaxBodyBytes whatever the client.
	Client *http.Client
	// PageDelay is the polite pause between the end of one request and the
	// start of the next made by this client; default 3s, negative for none.
	PageDelay time.Duration
	// MaxRetries is how many times one page is retried after HTTP 429, 5xx or
	// a network error; default 5, negative for no retries.
	MaxRetries int
	// MaxRetryAfter caps an honoured Retry-After (and the exponential
	// back-off); default 5m.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done (then returning ctx.Err()); default
	// a timer. Tests inject it to record waits instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// UserAgent is sent with every request; default identifies followfeed.
	UserAgent string
}

// OAIClient harvests ListRecords pages from an OAI-PMH repository (arXiv).
// It is safe for concurrent use, but a harvest is sequential by nature (each
// page's token comes from the previous one) and PageDelay only spaces
// requests that do not overlap.
type OAIClient struct {
	baseURL   string
	format    string
	pageDelay time.Duration
	get       *upstreamGetter
	now       func() time.Time

	mu   sync.Mutex
	next time.Time // earliest start of the next request (PageDelay)
}

// NewOAIClient returns a client using cfg, with defaults filled in. It does
// no I/O; an invalid BaseURL or Format is reported by ListRecords.
func NewOAIClient(cfg OAIConfig) *OAIClient {
	if cfg.BaseURL == "" {
		cfg.BaseURL = oaiDefaultBaseURL
	}
	if cfg.Format == "" {
		cfg.Format = OAIFormatArXiv
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: oaiDefaultTimeout}
	}
	if cfg.PageDelay == 0 {
		cfg.PageDelay = oaiDefaultPageDelay
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = oaiDefaultMaxRetries
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = oaiDefaultMaxRetryAfter
	}
	if cfg.Sleep == nil {
		cfg.Sleep = upstreamSleep
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = upstreamUserAgent
	}
	return &OAIClient{
		baseURL:   cfg.BaseURL,
		format:    cfg.Format,
		pageDelay: cfg.PageDelay,
		now:       time.Now,
		get: &upstreamGetter{
			client:     cfg.Client,
			maxRetries: cfg.MaxRetries,
			backoff:    oaiFirstBackoff,
			maxWait:    cfg.MaxRetryAfter,
			maxBody:    OAIMaxBodyBytes,
			userAgent:  cfg.UserAgent,
			accept:     "application/xml, text/xml;q=0.9",
			sleep:      cfg.Sleep,
			now:        time.Now,
		},
	}
}

// ListRequest selects one ListRecords page. With ResumptionToken set it
// continues a run and the other fields are ignored (OAI-PMH allows no other
// argument next to a token); otherwise it starts one.
type ListRequest struct {
	// From and Until bound the records' datestamps, inclusive, as
	// YYYY-MM-DD; both optional.
	From, Until string
	// Set is an OAI-PMH setSpec such as "cs" or "physics:hep-th"; optional.
	Set string
	// ResumptionToken is Page.ResumptionToken of the previous page.
	ResumptionToken string
}

// Page is one ListRecords response.
type Page struct {
	// Papers are the page's records in order. Each has ArxivID set; deleted
	// records have Deleted=true and only ArxivID and AnnouncedAt set.
	Papers []paper.Paper
	// ResumptionToken continues the run; "" when this is the last page.
	ResumptionToken string
	// CompleteListSize is the token's completeListSize, -1 if unknown (0 for
	// noRecordsMatch).
	CompleteListSize int
	// Cursor is the token's cursor, -1 if unknown.
	Cursor int
	// ResponseDate is the repository's responseDate; zero if unreadable.
	ResponseDate time.Time
	// Skipped counts records dropped because they had no usable arXiv
	// identifier, or no metadata while not deleted.
	Skipped int
}

// OAIError is an error the OAI-PMH repository reported in an <error>
// element (badArgument, cannotDisseminateFormat, idDoesNotExist, …). A
// badResumptionToken error matches ErrBadResumptionToken with errors.Is.
// noRecordsMatch is never returned as an error.
type OAIError struct {
	Code    string
	Message string
}

func (e *OAIError) Error() string {
	return fmt.Sprintf("OAI-PMH error %s: %s", e.Code, e.Message)
}

// Is reports whether target is ErrBadResumptionToken and e is that error.
func (e *OAIError) Is(target error) bool {
	return target == ErrBadResumptionToken && e.Code == "badResumptionToken"
}

// ListRecords fetches and parses one page.
//
// Outcomes: noRecordsMatch gives an empty Page and a nil error.
// badResumptionToken gives an error matching ErrBadResumptionToken (restart
// from the last stored datestamp). Other OAI-PMH errors give an *OAIError
// (errors.As), also when served with a 4xx status. HTTP 429, 5xx and network
// errors are retried up to MaxRetries times, waiting for Retry-After
// (seconds or HTTP-date, capped at MaxRetryAfter) or else 5s, 10s, 20s, …;
// when retries run out, or on any other 4xx, the error wraps ErrUpstream. An
// HTTP 2xx whose body is not a well-formed OAI-PMH document (for example
// truncated) is not retried: the error wraps ErrMalformed and the caller
// should retry the whole job later. An invalid request or config gives an
// *apperr.Error with code Invalid. Context errors are returned as such.
func (c *OAIClient) ListRecords(ctx context.Context, req ListRequest) (*Page, error) {
	u, err := c.listURL(req)
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", err)
	}
	if err := c.pace(ctx); err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: waiting between pages: %w", err)
	}
	resp, err := c.get.do(ctx, u)
	c.markDone()
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", err)
	}
	page, oaiErr, err := oaiParse(resp.body, c.format)
	if resp.status/100 != 2 && oaiErr == nil {
		// A 4xx that is not an OAI-PMH error envelope (e.g. an HTML 404).
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", resp.statusError())
	}
	page, err = oaiOutcome(page, oaiErr, err)
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", err)
	}
	return page, nil
}

// ParseListRecords parses one ListRecords response body in format ("" means
// OAIFormatArXiv). It never expands entities: a body with a DOCTYPE is
// rejected, as is one over OAIMaxBodyBytes. Errors are as for ListRecords:
// nil with an empty Page for noRecordsMatch, an *OAIError for other OAI-PMH
// errors (matching ErrBadResumptionToken for that code), ErrMalformed for a
// body that is not a well-formed OAI-PMH ListRecords response, or whose
// records are in neither arXiv format (a record in the other arXiv format
// than format is parsed as such).
// Every returned Paper has a non-empty ArxivID; text fields are valid UTF-8,
// whitespace-collapsed and capped (see the package's caps).
func ParseListRecords(body []byte, format string) (*Page, error) {
	page, oaiErr, err := oaiParse(body, format)
	page, err = oaiOutcome(page, oaiErr, err)
	if err != nil {
		return nil, fmt.Errorf("parsing OAI-PMH ListRecords: %w", err)
	}
	return page, nil
}

// oaiOutcome maps oaiParse's results to ListRecords' contract.
func oaiOutcome(page *Page, oaiErr *OAIError, err error) (*Page, error) {
	switch {
	case err != nil:
		return nil, err
	case oaiErr != nil && oaiErr.Code == "noRecordsMatch":
		return &Page{Papers: []paper.Paper{}, CompleteListSize: 0, Cursor: 0, ResponseDate: page.ResponseDate}, nil
	case oaiErr != nil:
		return nil, oaiErr
	}
	return page, nil
}

func (c *OAIClient) listURL(req ListRequest) (string, error) {
	u, err := url.Parse(c.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", apperr.InvalidField("BaseURL", "must be an http(s) URL, got %q", c.baseURL)
	}
	if c.format != OAIFormatArXiv && c.format != OAIFormatArXivRaw {
		return "", apperr.InvalidField("Format", "must be %q or %q, got %q", OAIFormatArXiv, OAIFormatArXivRaw, c.format)
	}
	q := u.Query()
	q.Set("verb", "ListRecords")
	if req.ResumptionToken != "" {
		q.Set("resumptionToken", req.ResumptionToken)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	q.Set("metadataPrefix", c.format)
	var from, until time.Time
	if req.From != "" {
		if from, err = time.Parse(time.DateOnly, req.From); err != nil {
			return "", apperr.InvalidField("from", "must be a date YYYY-MM-DD, got %q", req.From)
		}
		q.Set("from", req.From)
	}
	if req.Until != "" {
		if until, err = time.Parse(time.DateOnly, req.Until); err != nil {
			return "", apperr.InvalidField("until", "must be a date YYYY-MM-DD, got %q", req.Until)
		}
		q.Set("until", req.Until)
	}
	if !from.IsZero() && !until.IsZero() && until.Before(from) {
		return "", apperr.InvalidField("until", "must not be before from (%s)", req.From)
	}
	if req.Set != "" {
		if !oaiValidSetSpec(req.Set) {
			return "", apperr.InvalidField("set", "is not a valid OAI-PMH setSpec: %q", req.Set)
		}
		q.Set("set", req.Set)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// oaiValidSetSpec accepts the setSpec syntax of OAI-PMH 2.0: unreserved URI
// characters in ":"-separated non-empty parts.
func oaiValidSetSpec(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, part := range strings.Split(s, ":") {
		if part == "" {
			return false
		}
		for _, r := range part {
			if !(r < utf8.RuneSelf && (upstreamIsAlnum(byte(r)) || strings.ContainsRune("-_.!~*'()", r))) {
				return false
			}
		}
	}
	return true
}

// pace waits until PageDelay has passed since the previous request ended.
func (c *OAIClient) pace(ctx context.Context) error {
	if c.pageDelay <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	wait := min(c.next.Sub(c.now()), c.pageDelay)
	c.mu.Unlock()
	if wait > 0 {
		return c.get.sleep(ctx, wait)
	}
	return ctx.Err()
}

func (c *OAIClient) markDone() {
	if c.pageDelay <= 0 {
		return
	}
	c.mu.Lock()
	c.next = c.now().Add(c.pageDelay)
	c.mu.Unlock()
}

// --- XML document model -----------------------------------------------------

type oaiEnvelope struct {
	ResponseDate string          `xml:"responseDate"`
	Errors       []oaiXMLError   `xml:"error"`
	ListRecords  *oaiListRecords `xml:"ListRecords"`
}

type oaiXMLError struct {
	Code    string `xml:"code,attr"`
	Message string `xml:",chardata"`
}

type oaiListRecords struct {
	Records []oaiRecord `xml:"record"`
	Token   *oaiToken   `xml:"resumptionToken"`
}

type oaiToken struct {
	Value            string `xml:",chardata"`
	Cursor           string `xml:"cursor,attr"`
	CompleteListSize string `xml:"completeListSize,attr"`
}

type oaiRecord struct {
	Header   oaiHeader    `xml:"header"`
	Metadata *oaiMetadata `xml:"metadata"`
}

type oaiHeader struct {
	Status     string `xml:"status,attr"`
	Identifier string `xml:"identifier"`
	Datestamp  string `xml:"datestamp"`
}

type oaiMetadata struct {
	ArXiv *oaiArXiv    `xml:"arXiv"`
	Raw   *oaiArXivRaw `xml:"arXivRaw"`
	Other []oaiAnyElem `xml:",any"`
}

type oaiAnyElem struct {
	XMLName xml.Name
}

type oaiArXiv struct {
	ID         string           `xml:"id"`
	Created    string           `xml:"created"`
	Updated    string           `xml:"updated"`
	Authors    []oaiArXivAuthor `xml:"authors>author"`
	Title      string           `xml:"title"`
	Categories string           `xml:"categories"`
	Comments   string           `xml:"comments"`
	JournalRef string           `xml:"journal-ref"`
	DOI        string           `xml:"doi"`
	Abstract   string           `xml:"abstract"`
}

type oaiArXivAuthor struct {
	Keyname   string `xml:"keyname"`
	Forenames string `xml:"forenames"`
	Suffix    string `xml:"suffix"`
}

type oaiArXivRaw struct {
	ID         string          `xml:"id"`
	Versions   []oaiRawVersion `xml:"version"`
	Title      string          `xml:"title"`
	Authors    string          `xml:"authors"`
	Categories string          `xml:"categories"`
	Comments   string          `xml:"comments"`
	JournalRef string          `xml:"journal-ref"`
	DOI        string          `xml:"doi"`
	Abstract   string          `xml:"abstract"`
}

type oaiRawVersion struct {
	Version string `xml:"version,attr"`
	Date    string `xml:"date"`
}

// --- parsing ----------------------------------------------------------------

func oaiMalformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// oaiParse parses a response body. It returns a page (only ResponseDate set
// when oaiErr is not nil), the repository's OAI-PMH error if any, or an
// error wrapping ErrMalformed (or an invalid-format error).
func oaiParse(body []byte, format string) (*Page, *OAIError, error) {
	switch format {
	case "":
		format = OAIFormatArXiv
	case OAIFormatArXiv, OAIFormatArXivRaw:
	default:
		return nil, nil, apperr.InvalidField("format", "must be %q or %q, got %q", OAIFormatArXiv, OAIFormatArXivRaw, format)
	}
	if len(body) > OAIMaxBodyBytes {
		return nil, nil, oaiMalformed("body of %d bytes exceeds the %d-byte cap", len(body), OAIMaxBodyBytes)
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	root, err := oaiRoot(d)
	if err != nil {
		return nil, nil, err
	}
	if root.Name.Local != "OAI-PMH" {
		return nil, nil, oaiMalformed("root element is <%s>, not <OAI-PMH>", oaiShort(root.Name.Local))
	}
	var env oaiEnvelope
	if err := d.DecodeElement(&env, &root); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := oaiEpilogue(d); err != nil {
		return nil, nil, err
	}

	page := &Page{Papers: []paper.Paper{}, CompleteListSize: -1, Cursor: -1}
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(env.ResponseDate)); err == nil {
		page.ResponseDate = t.UTC()
	}
	if len(env.Errors) > 0 {
		e := env.Errors[0]
		for _, x := range env.Errors {
			if x.Code == "badResumptionToken" {
				e = x
			}
		}
		return page, &OAIError{
			Code:    upstreamText(e.Code, 100),
			Message: upstreamText(e.Message, 1000),
		}, nil
	}
	if env.ListRecords == nil {
		return nil, nil, oaiMalformed("response has neither <ListRecords> nor <error>")
	}
	if tok := env.ListRecords.Token; tok != nil {
		page.ResumptionToken = strings.TrimSpace(tok.Value)
		if len(page.ResumptionToken) > oaiMaxTokenBytes || !utf8.ValidString(page.ResumptionToken) {
			return nil, nil, oaiMalformed("resumptionToken is longer than %d bytes or not UTF-8", oaiMaxTokenBytes)
		}
		page.Cursor = oaiAttrInt(tok.Cursor)
		page.CompleteListSize = oaiAttrInt(tok.CompleteListSize)
	}
	for i := range env.ListRecords.Records {
		rec := &env.ListRecords.Records[i]
		p, ok, err := oaiPaper(rec, format)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			page.Skipped++
			continue
		}
		page.Papers = append(page.Papers, p)
	}
	return page, nil, nil
}

// oaiRoot reads the prolog and returns the root element's start tag. It
// rejects any directive (DOCTYPE): OAI-PMH responses have none, and one that
// declares entities is an attack, even though encoding/xml never expands them.
func oaiRoot(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return xml.StartElement{}, oaiMalformed("no root element")
		}
		if err != nil {
			return xml.StartElement{}, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.Directive:
			return xml.StartElement{}, oaiMalformed("DOCTYPE or other <!…> directive is not allowed")
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return xml.StartElement{}, oaiMalformed("text before the root element")
			}
		case xml.EndElement:
			return xml.StartElement{}, oaiMalformed("end tag before the root element")
		}
	}
}

// oaiEpilogue checks that nothing but whitespace, comments and processing
// instructions follows the root element.
func oaiEpilogue(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return oaiMalformed("text after the root element")
			}
		case xml.Comment, xml.ProcInst:
		default:
			return oaiMalformed("content after the root element")
		}
	}
}

func oaiAttrInt(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// oaiPaper converts one record. ok is false for records to skip; err is set
// when the record's metadata is in neither arXiv format.
func oaiPaper(rec *oaiRecord, format string) (p paper.Paper, ok bool, err error) {
	metaID := ""
	if m := rec.Metadata; m != nil {
		if m.ArXiv != nil {
			metaID = m.ArXiv.ID
		} else if m.Raw != nil {
			metaID = m.Raw.ID
		}
	}
	id, ok := oaiArxivID(rec.Header.Identifier, metaID)
	if !ok {
		return paper.Paper{}, false, nil
	}
	p = paper.Paper{ArxivID: id, AnnouncedAt: oaiDate(rec.Header.Datestamp)}
	if strings.TrimSpace(rec.Header.Status) == "deleted" {
		p.Deleted = true
		return p, true, nil
	}
	m := rec.Metadata
	if m == nil {
		return paper.Paper{}, false, nil
	}
	p.AbsURL = "https://arxiv.org/abs/" + id
	p.PDFURL = "https://arxiv.org/pdf/" + id
	// Both arXiv formats describe a paper fully, so a record in the other one
	// is parsed rather than rejected; anything else (oai_dc, …) is not ours.
	switch {
	case m.Raw != nil && (format == OAIFormatArXivRaw || m.ArXiv == nil):
		oaiFillArXivRaw(&p, m.Raw)
	case m.ArXiv != nil:
		oaiFillArXiv(&p, m.ArXiv)
	default:
		got := "no"
		if len(m.Other) > 0 {
			got = "<" + oaiShort(m.Other[0].XMLName.Local) + ">"
		}
		return paper.Paper{}, false, oaiMalformed("record %s: expected %s metadata, got %s", id, format, got)
	}
	return p, true, nil
}

// oaiArxivID takes the id from the header identifier "oai:arXiv.org:<id>",
// else from the metadata's <id>.
func oaiArxivID(identifier, metaID string) (string, bool) {
	s := strings.TrimSpace(identifier)
	const prefix = "oai:arxiv.org:"
	if len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return upstreamCleanArxivID(s[len(prefix):])
	}
	return upstreamCleanArxivID(metaID)
}

// upstreamCleanArxivID trims s, strips a trailing version ("v2"), and
// accepts it if it looks like an arXiv id: 1–64 bytes of letters, digits,
// '.', '-' and '/', with at least one digit. It is deliberately lenient about
// the exact scheme so a future id format is not dropped.
func upstreamCleanArxivID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return "", false
	}
	digit := false
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= '0' && b <= '9':
			digit = true
		case upstreamIsAlnum(b) || b == '.' || b == '-' || b == '/':
		default:
			return "", false
		}
	}
	if !digit {
		return "", false
	}
	// Strip "vN" preceded by a digit: "2202.02326v3", "hep-th/9504118v1".
	if i := strings.LastIndexAny(s, "vV"); i > 0 && i < len(s)-1 && s[i-1] >= '0' && s[i-1] <= '9' {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i]
		}
	}
	if strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//") || strings.Contains(s, "..") {
		return "", false
	}
	return s, true
}

func upstreamIsAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// oaiDate parses a YYYY-MM-DD (or full UTC) datestamp to UTC; zero if bad.
func oaiDate(s string) time.Time {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
}

// oaiRawDateLayouts are the forms of arXivRaw's <date> (RFC 1123, with one-
// or two-digit days).
var oaiRawDateLayouts = [...]string{
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
}

func oaiRawDate(s string) time.Time {
	s = strings.Join(strings.Fields(s), " ")
	for _, layout := range oaiRawDateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

func oaiFillArXiv(p *paper.Paper, m *oaiArXiv) {
	p.Title = upstreamText(m.Title, oaiMaxTitleRunes)
	p.Abstract = upstreamText(m.Abstract, oaiMaxAbstractRunes)
	p.Comments = upstreamText(m.Comments, oaiMaxCommentsRunes)
	p.JournalRef = upstreamText(m.JournalRef, oaiMaxJournalRefRunes)
	p.DOI = oaiFirstDOI(m.DOI)
	p.SubmittedAt = oaiDate(m.Created)
	p.UpdatedAt = oaiDate(m.Updated)
	p.Categories, p.PrimaryCategory = oaiCategories(m.Categories)
	for _, a := range m.Authors {
		if len(p.Authors) == upstreamMaxAuthors {
			break
		}
		name := upstreamText(a.Forenames+" "+a.Keyname+" "+a.Suffix, upstreamMaxNameRunes)
		if name != "" {
			p.Authors = append(p.Authors, paper.Author{Name: name})
		}
	}
}

func oaiFillArXivRaw(p *paper.Paper, m *oaiArXivRaw) {
	p.Title = upstreamText(m.Title, oaiMaxTitleRunes)
	p.Abstract = upstreamText(m.Abstract, oaiMaxAbstractRunes)
	p.Comments = upstreamText(m.Comments, oaiMaxCommentsRunes)
	p.JournalRef = upstreamText(m.JournalRef, oaiMaxJournalRefRunes)
	p.DOI = oaiFirstDOI(m.DOI)
	p.Categories, p.PrimaryCategory = oaiCategories(m.Categories)
	lowest := 0
	for _, v := range m.Versions {
		n, err := strconv.Atoi(strings.TrimLeft(strings.TrimSpace(v.Version), "vV"))
		if err != nil || n <= 0 || n > 100_000 {
			continue
		}
		date := oaiRawDate(v.Date)
		if n > p.Version {
			p.Version = n
			p.UpdatedAt = date
		}
		if lowest == 0 || n < lowest {
			lowest = n
			p.SubmittedAt = date
		}
	}
	for _, name := range oaiSplitRawAuthors(m.Authors, upstreamMaxAuthors) {
		p.Authors = append(p.Authors, paper.Author{Name: name})
	}
}

func oaiFirstDOI(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 || len(f[0]) > oaiMaxDOIBytes || !utf8.ValidString(f[0]) {
		return ""
	}
	return f[0]
}

// oaiCategories splits the space-separated list, dropping duplicates and
// implausible entries; the first is the primary.
func oaiCategories(s string) ([]string, string) {
	var cats []string
	for _, c := range strings.Fields(s) {
		if len(cats) == oaiMaxCategories {
			break
		}
		if len(c) > oaiMaxCategoryBytes || !oaiValidCategory(c) || slices.Contains(cats, c) {
			continue
		}
		cats = append(cats, c)
	}
	if len(cats) == 0 {
		return nil, ""
	}
	return cats, cats[0]
}

func oaiValidCategory(c string) bool {
	for i := 0; i < len(c); i++ {
		if b := c[i]; !upstreamIsAlnum(b) && b != '.' && b != '-' && b != '_' {
			return false
		}
	}
	return true
}

// oaiNameSuffixes are pieces that follow a name after a comma ("Smith, Jr.")
// rather than being names themselves.
var oaiNameSuffixes = map[string]bool{"Jr": true, "Jr.": true, "Sr": true, "Sr.": true, "II": true, "III": true, "IV": true}

// oaiSplitRawAuthors splits arXivRaw's free-text author list on commas and
// the word "and" outside parentheses, dropping parenthesised affiliations,
// "et al." and empty pieces, and re-attaching suffixes such as "Jr.".
func oaiSplitRawAuthors(s string, max int) []string {
	s = upstreamText(s, -1)
	var pieces []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',', ';':
			if depth == 0 {
				pieces = append(pieces, s[start:i])
				start = i + 1
			}
		case ' ':
			if depth == 0 && strings.HasPrefix(s[i:], " and ") {
				pieces = append(pieces, s[start:i])
				start = i + len(" and ")
				i += len(" and ") - 1
			}
		}
		if len(pieces) > 2*max {
			break
		}
	}
	if start <= len(s) {
		pieces = append(pieces, s[start:])
	}
	var names []string
	for _, piece := range pieces {
		name := upstreamText(oaiStripParens(piece), upstreamMaxNameRunes)
		name = strings.TrimPrefix(name, "and ")
		switch {
		case name == "", name == "et al", name == "et al.", name == "others":
			continue
		case oaiNameSuffixes[name] && len(names) > 0:
			names[len(names)-1] += " " + name
			continue
		}
		if len(names) == max {
			break
		}
		names = append(names, name)
	}
	return names
}

// oaiStripParens removes parenthesised text (affiliations, footnote marks).
func oaiStripParens(s string) string {
	if !strings.ContainsAny(s, "()") {
		return s
	}
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			if depth > 0 {
				depth--
			}
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// upstreamText makes s storable: invalid UTF-8 replaced, control characters
// turned to spaces, whitespace runs collapsed to one space, trimmed, and
// truncated to maxRunes runes (no limit when maxRunes < 0).
func upstreamText(s string, maxRunes int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if maxRunes >= 0 && len(s) > maxRunes {
		n := 0
		for i := range s {
			if n == maxRunes {
				s = strings.TrimRight(s[:i], " ")
				break
			}
			n++
		}
	}
	return s
}

func oaiShort(s string) string {
	return upstreamText(s, 40)
}

// --- HTTP with retries (shared with the OpenAlex client) --------------------

// upstreamGetter does GET requests with the retry policy of the harvest
// clients: 429, 5xx and network errors are retried up to maxRetries times,
// waiting for Retry-After (capped at maxWait) or backoff, 2×backoff, 4×…
// (also capped); other statuses are returned to the caller.
type upstreamGetter struct {
	client     *http.Client
	maxRetries int
	backoff    time.Duration
	maxWait    time.Duration
	maxBody    int64
	userAgent  string
	accept     string
	sleep      func(ctx context.Context, d time.Duration) error
	now        func() time.Time
}

// upstreamResponse is a final (2xx or non-retryable) response.
type upstreamResponse struct {
	status int
	body   []byte
}

// statusError describes a non-2xx response, with the start of its body.
func (r *upstreamResponse) statusError() error {
	snippet := upstreamText(string(r.body[:min(len(r.body), 300)]), 200)
	if snippet != "" {
		snippet = ": " + snippet
	}
	return fmt.Errorf("%w: HTTP %d %s%s", ErrUpstream, r.status, http.StatusText(r.status), snippet)
}

// do GETs rawURL. It returns the response for any 2xx and for non-retryable
// statuses (callers decide what a 4xx means); an error wrapping ErrUpstream
// when retries run out; ErrMalformed when the body exceeds maxBody; the
// context's error when ctx ends.
func (g *upstreamGetter) do(ctx context.Context, rawURL string) (*upstreamResponse, error) {
	for attempt := 0; ; attempt++ {
		resp, retryErr, wait, err := g.attempt(ctx, rawURL)
		if err != nil {
			return nil, err
		}
		if retryErr == nil {
			return resp, nil
		}
		if attempt >= g.maxRetries {
			return nil, fmt.Errorf("%w: %d attempts failed, the last with: %w", ErrUpstream, attempt+1, retryErr)
		}
		if wait < 0 { // no Retry-After: exponential back-off
			wait = g.backoff << min(attempt, 20)
		}
		wait = min(wait, g.maxWait)
		if wait > 0 {
			if err := g.sleep(ctx, wait); err != nil {
				return nil, err
			}
		} else if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// attempt makes one request. It returns either a final response, or a
// retryable failure with the server's Retry-After (-1 when absent), or a
// fatal error.
func (g *upstreamGetter) attempt(ctx context.Context, rawURL string) (resp *upstreamResponse, retryErr error, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, 0, apperr.InvalidField("url", "cannot build request: %v", upstreamRedactErr(err))
	}
	req.Header.Set("User-Agent", g.userAgent)
	req.Header.Set("Accept", g.accept)
	hr, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		return nil, upstreamRedactErr(err), -1, nil
	}
	defer hr.Body.Close()
	if hr.StatusCode == http.StatusTooManyRequests || hr.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(hr.Body, 64<<10))
		return nil, fmt.Errorf("HTTP %d %s", hr.StatusCode, http.StatusText(hr.StatusCode)),
			g.retryAfter(hr.Header), nil
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, g.maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		return nil, fmt.Errorf("reading HTTP %d body: %w", hr.StatusCode, upstreamRedactErr(err)), -1, nil
	}
	if int64(len(body)) > g.maxBody {
		return nil, nil, 0, fmt.Errorf("%w: body exceeds the %d-byte cap", ErrMalformed, g.maxBody)
	}
	return &upstreamResponse{status: hr.StatusCode, body: body}, nil, 0, nil
}

// retryAfter reads Retry-After as seconds or an HTTP-date (relative to the
// response's Date header when present, so clock skew does not matter); -1
// when absent or unreadable.
func (g *upstreamGetter) retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return -1
		}
		if secs > int64(24*time.Hour/time.Second) {
			return 24 * time.Hour
		}
		return time.Duration(secs) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return -1
	}
	base := g.now()
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		base = d
	}
	return max(at.Sub(base), 0)
}

// upstreamRedactErr hides query parameters that may carry secrets (OpenAlex
// api_key) from a *url.Error's URL.
func upstreamRedactErr(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return &url.Error{Op: ue.Op, URL: "(unparsable URL)", Err: ue.Err}
	}
	q := u.Query()
	if q.Has("api_key") {
		q.Set("api_key", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
}

// upstreamSleep waits d, or until ctx is done (returning ctx.Err()).
func upstreamSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
