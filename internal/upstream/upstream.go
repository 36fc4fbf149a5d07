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
)

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
