package httpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"followfeed/apperr"
	"followfeed/internal/text"
)

// ErrUpstream is wrapped by Getter's errors when the server failed or
// refused: HTTP 429, 5xx or network errors that persisted through every
// retry, a host that cannot be reached (ErrUnreachable), or
// (Response.StatusError) a status that is not worth retrying.
var ErrUpstream = errors.New("upstream request failed")

// ErrUnreachable is matched (errors.Is) by the *UnreachableError Get
// returns after one attempt, without retrying, when the host cannot be
// reached in a way that retrying soon cannot fix: its name does not
// resolve (DNS NXDOMAIN), it refused the connection, or its TLS
// certificate does not verify. Such an error matches ErrUpstream too.
var ErrUnreachable = errors.New("upstream unreachable")

// UnreachableError says that a request's host cannot be reached and why;
// it matches ErrUnreachable and ErrUpstream, and unwraps to the
// transport's error (with any api_key redacted).
type UnreachableError struct {
	Host   string // the URL's host[:port]
	Reason string // a fixed sentence without the host: "its name does not resolve (DNS: no such host)"
	Err    error
}

func (e *UnreachableError) Error() string {
	return "cannot reach " + e.Host + ": " + e.Reason + " (not retried): " + e.Err.Error()
}

// Unwrap makes the error match ErrUpstream, ErrUnreachable and its cause.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUpstream, ErrUnreachable, e.Err} }

// unreachable says why err, a failed request's transport error, is one
// that retrying within seconds or minutes cannot fix, or ok false when a
// retry may succeed (timeouts, resets, a DNS server that did not answer).
//
//   - A name that does not exist (NXDOMAIN) stays so until someone fixes
//     the URL or the DNS: a resolver's authoritative answer, not a
//     failure to ask.
//   - A refused connection is an immediate, definitive answer from the
//     host: nothing listens on the port (a wrong URL, the service down
//     or restarting). Waiting 5 s, 10 s, 20 s, … inside one attempt only
//     hides that from the person at a terminal; the periodic jobs retry
//     their attempts with River's back-off anyway, which spans a restart.
//   - A certificate that does not verify (unknown authority, wrong name,
//     expired) needs a person to fix it.
func unreachable(err error) (reason string, ok bool) {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "its name does not resolve (DNS: no such host)", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "it refused the connection (nothing listens on that port)", true
	case errors.As(err, &certErr):
		return "its TLS certificate does not verify", true
	}
	return "", false
}

// StatusError is a response status that is not a success, with the start
// of its body (collapsed, at most 200 characters).
type StatusError struct {
	Status  int
	Snippet string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Snippet != "" {
		s += ": " + e.Snippet
	}
	return s
}

// MaxRetryAfter caps the Retry-After a Getter reads, whatever its MaxWait:
// larger values (up to an int64 of seconds) must not overflow a
// time.Duration into a negative wait.
const MaxRetryAfter = 24 * time.Hour

// Getter does GET requests with the retry policy of the harvest clients:
// HTTP 429, 5xx and network errors are retried up to MaxRetries times
// (except those of a host that cannot be reached, ErrUnreachable, which
// fail at once),
// waiting for Retry-After (seconds or an HTTP-date, at most MaxRetryAfter)
// or else Backoff, 2×Backoff, 4×…, each wait capped at MaxWait; other
// statuses are returned to the caller. Bodies are read whole, at most
// MaxBody bytes. Set every field; a Getter is safe for concurrent use once
// set.
type Getter struct {
	Client     *http.Client
	MaxRetries int           // retries after the first attempt; 0 for none
	Backoff    time.Duration // the first wait without Retry-After
	MaxWait    time.Duration // the longest single wait
	MaxBody    int64         // the largest body read
	UserAgent  string
	Accept     string
	// Sleep waits d or until ctx is done (then returning ctx.Err()); Sleep
	// (the function) is the real one, tests record waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock an HTTP-date Retry-After is read against when the
	// response has no Date header.
	Now func() time.Time
	// OnRetry, when set, is told of every retry before its wait: the
	// request's URL with any api_key redacted, the attempt that failed
	// (1-based), the retries allowed, the wait and why. Commands run by a
	// person print it, so a down upstream is not minutes of silence.
	OnRetry func(rawURL string, attempt, maxRetries int, wait time.Duration, err error)
}

// Response is a final response: any 2xx, or a status not worth retrying.
type Response struct {
	Status int
	Body   []byte
}

// StatusError describes a non-2xx response, with the start of its body: a
// *StatusError wrapped with ErrUpstream.
func (r *Response) StatusError() error {
	snippet := text.Collapse(string(r.Body[:min(len(r.Body), 300)]), 200)
	return fmt.Errorf("%w: %w", ErrUpstream, &StatusError{Status: r.Status, Snippet: snippet})
}

// Get GETs rawURL. It returns the response for any 2xx and for
// non-retryable statuses (callers decide what a 4xx means); an error
// wrapping ErrUpstream when retries run out; an *UnreachableError after
// the first attempt when the host cannot be reached (see ErrUnreachable);
// one wrapping ErrBodyTooLarge,
// not retried, when the body exceeds MaxBody (or the Client's own cap); an
// *apperr.Error (Invalid) when rawURL cannot be requested; the context's
// error when ctx ends. Errors never show an api_key query parameter.
func (g *Getter) Get(ctx context.Context, rawURL string) (*Response, error) {
	for attempt := 0; ; attempt++ {
		resp, retryErr, wait, err := g.attempt(ctx, rawURL)
		if err != nil {
			return nil, err
		}
		if retryErr == nil {
			return resp, nil
		}
		if attempt >= g.MaxRetries {
			return nil, fmt.Errorf("%w: %d attempts failed, the last with: %w", ErrUpstream, attempt+1, retryErr)
		}
		if wait < 0 { // no Retry-After: exponential back-off
			wait = g.Backoff << min(attempt, 20)
		}
		wait = min(wait, g.MaxWait)
		if g.OnRetry != nil {
			g.OnRetry(redactURL(rawURL), attempt+1, g.MaxRetries, wait, retryErr)
		}
		if wait > 0 {
			if err := g.Sleep(ctx, wait); err != nil {
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
func (g *Getter) attempt(ctx context.Context, rawURL string) (resp *Response, retryErr error, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, 0, apperr.InvalidField("url", "cannot build request: %v", redactErr(err))
	}
	req.Header.Set("User-Agent", g.UserAgent)
	req.Header.Set("Accept", g.Accept)
	hr, err := g.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		if reason, ok := unreachable(err); ok {
			return nil, nil, 0, &UnreachableError{Host: req.URL.Host, Reason: reason, Err: redactErr(err)}
		}
		return nil, redactErr(err), -1, nil
	}
	defer hr.Body.Close()
	if hr.StatusCode == http.StatusTooManyRequests || hr.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(hr.Body, 64<<10))
		return nil, &StatusError{Status: hr.StatusCode}, g.retryAfter(hr.Header), nil
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, g.MaxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, 0, ctx.Err()
		}
		if errors.Is(err, ErrBodyTooLarge) { // the Client's own cap (New)
			return nil, nil, 0, redactErr(err)
		}
		return nil, fmt.Errorf("reading HTTP %d body: %w", hr.StatusCode, redactErr(err)), -1, nil
	}
	if int64(len(body)) > g.MaxBody {
		return nil, nil, 0, fmt.Errorf("%w: the body exceeds the %d-byte cap", ErrBodyTooLarge, g.MaxBody)
	}
	return &Response{Status: hr.StatusCode, Body: body}, nil, 0, nil
}

// retryAfter reads Retry-After as seconds or an HTTP-date (relative to the
// response's Date header when present, so clock skew does not matter), at
// most MaxRetryAfter; -1 when absent or unreadable.
func (g *Getter) retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return -1
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return -1
	}
	base := g.Now()
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		base = d
	}
	return max(at.Sub(base), 0)
}

// redactErr hides query parameters that may carry secrets (OpenAlex's
// api_key) from a *url.Error's URL.
func redactErr(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
}

// redactURL is rawURL with an api_key query parameter's value hidden.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	q := u.Query()
	if q.Has("api_key") {
		q.Set("api_key", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Sleep waits d, or until ctx is done (returning ctx.Err()). It is the
// Getter's Sleep outside tests.
func Sleep(ctx context.Context, d time.Duration) error {
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
