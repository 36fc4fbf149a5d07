package harvest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"followfeed/apperr"
	"followfeed/internal/httpclient"
	"followfeed/internal/upstream"
	"followfeed/paper"
)

// This file is the OAI-PMH client: requests, paging, retries (through
// httpclient.Getter) and the ListRecords contract. oaixml.go parses the
// responses.

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
	// a network error (not one of a host that cannot be reached:
	// ErrUnreachable); default 5, negative for no retries.
	MaxRetries int
	// MaxRetryAfter caps an honoured Retry-After (and the exponential
	// back-off); default 5m.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done (then returning ctx.Err()); default
	// a timer. Tests inject it to record waits instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry is told of every retry of a request (httpclient.Getter.OnRetry);
	// nil for none.
	OnRetry func(rawURL string, attempt, maxRetries int, wait time.Duration, err error)
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
	get       *httpclient.Getter
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
		cfg.Sleep = httpclient.Sleep
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = upstreamUserAgent
	}
	return &OAIClient{
		baseURL:   cfg.BaseURL,
		format:    cfg.Format,
		pageDelay: cfg.PageDelay,
		now:       time.Now,
		get: &httpclient.Getter{
			Client:     cfg.Client,
			MaxRetries: cfg.MaxRetries,
			Backoff:    oaiFirstBackoff,
			MaxWait:    cfg.MaxRetryAfter,
			MaxBody:    OAIMaxBodyBytes,
			UserAgent:  cfg.UserAgent,
			Accept:     "application/xml, text/xml;q=0.9",
			Sleep:      cfg.Sleep,
			Now:        time.Now,
			OnRetry:    cfg.OnRetry,
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
// when retries run out, or on any other 4xx, the error wraps ErrUpstream.
// A host that cannot be reached (its name does not resolve, it refuses the
// connection, its certificate does not verify) fails after one request
// with an error matching ErrUnreachable and ErrUpstream. An
// HTTP 2xx whose body is not a well-formed OAI-PMH document (for example
// truncated) is not retried: the error wraps ErrMalformed and the caller
// should retry the whole job later. An invalid request or config gives an
// *apperr.Error with code Invalid. Context errors are returned as such.
func (c *OAIClient) ListRecords(ctx context.Context, req ListRequest) (*Page, error) {
	u, err := c.requestURL("ListRecords", req)
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", err)
	}
	if err := c.pace(ctx); err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: waiting between pages: %w", err)
	}
	resp, err := upstream.Fetch(ctx, c.get, u)
	c.markDone()
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", err)
	}
	page, oaiErr, err := oaiParse(resp.Body, c.format)
	if resp.Status/100 != 2 && oaiErr == nil {
		// A 4xx that is not an OAI-PMH error envelope (e.g. an HTML 404).
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", resp.StatusError())
	}
	page, err = oaiOutcome(page, oaiErr, err)
	if err != nil {
		return nil, fmt.Errorf("fetching OAI-PMH page: %w", err)
	}
	return page, nil
}

// requestURL is the URL of verb (ListRecords or ListIdentifiers) for req.
func (c *OAIClient) requestURL(verb string, req ListRequest) (string, error) {
	u, err := url.Parse(c.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", apperr.InvalidField("BaseURL", "must be an http(s) URL, got %q", c.baseURL)
	}
	if c.format != OAIFormatArXiv && c.format != OAIFormatArXivRaw {
		return "", apperr.InvalidField("Format", "must be %q or %q, got %q", OAIFormatArXiv, OAIFormatArXivRaw, c.format)
	}
	q := u.Query()
	q.Set("verb", verb)
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
			if !(r < utf8.RuneSelf && (upstream.IsAlnum(byte(r)) || strings.ContainsRune("-_.!~*'()", r))) {
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
		return c.get.Sleep(ctx, wait)
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
