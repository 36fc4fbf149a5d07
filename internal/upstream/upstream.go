// Package upstream is what the clients of followfeed's upstream sources
// (package harvest's OAI-PMH client, package openalex) share: their
// sentinel errors, the GET that reports an oversized body as malformed, the
// lenient reading of arXiv ids in upstream records, and the caps on
// authors. It imports no domain package.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"followfeed/internal/httpclient"
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
	// that is not worth retrying (4xx other than 429). It is
	// httpclient.ErrUpstream, which the retrying getter wraps.
	ErrUpstream = httpclient.ErrUpstream
	// ErrTooLarge is matched (errors.Is) by the ErrMalformed error of a
	// response larger than the body cap, counted after decompression (a
	// gzip body that inflates past it): the same page would fail the same
	// way, so it is a permanent failure, not one to retry soon. It is
	// httpclient.ErrBodyTooLarge.
	ErrTooLarge = httpclient.ErrBodyTooLarge
	// ErrUnreachable is matched by the error of a request whose host
	// cannot be reached in a way retrying soon cannot fix (its name does
	// not resolve, it refused the connection, its certificate does not
	// verify): the clients give that verdict after one attempt, without
	// retrying. Such an error matches ErrUpstream too. It is
	// httpclient.ErrUnreachable.
	ErrUnreachable = httpclient.ErrUnreachable
)

// Public describes err, an upstream client's error, in a fixed sentence
// fit for a public page (the sources' health on /v1/status): the kind of
// failure, the HTTP status, the reason a host cannot be reached, never
// the error's own text (no host names, URLs or bodies), which belongs in
// the logs. ok is false when err is none of the upstream failures.
func Public(err error) (msg string, ok bool) {
	var ue *httpclient.UnreachableError
	var se *httpclient.StatusError
	var ne net.Error
	switch {
	case errors.As(err, &ue):
		return "the source cannot be reached: " + ue.Reason, true
	case errors.Is(err, ErrTooLarge):
		return "the source's response exceeded the size cap", true
	case errors.Is(err, ErrMalformed):
		return "the source's response could not be used (malformed, truncated or not the expected document)", true
	case errors.As(err, &se):
		return fmt.Sprintf("the source answered HTTP %d %s", se.Status, http.StatusText(se.Status)), true
	case errors.Is(err, ErrUpstream) && errors.As(err, &ne) && ne.Timeout():
		return "the source did not answer in time", true
	case errors.Is(err, ErrUpstream):
		return "the connection to the source failed", true
	}
	return "", false
}

// Caps both clients apply to authors: the most authors kept per record,
// and the most characters of a name.
const (
	MaxAuthors   = 5000
	MaxNameRunes = 500
)

// Fetch GETs rawURL with g and maps an oversized body to ErrMalformed, as
// both clients document.
func Fetch(ctx context.Context, g *httpclient.Getter, rawURL string) (*httpclient.Response, error) {
	resp, err := g.Get(ctx, rawURL)
	if errors.Is(err, httpclient.ErrBodyTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return resp, err
}

// CleanArxivID trims s, strips a trailing version ("v2"), and
// accepts it if it looks like an arXiv id: 1–64 bytes of letters, digits,
// '.', '-' and '/', with at least one digit. It is deliberately lenient about
// the exact scheme so a future id format is not dropped.
func CleanArxivID(s string) (string, bool) {
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
		case IsAlnum(b) || b == '.' || b == '-' || b == '/':
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

// IsAlnum reports whether b is an ASCII letter or digit.
func IsAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
