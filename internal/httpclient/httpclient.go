// Package httpclient builds the *http.Client every outbound call of followfeed
// uses (JWKS, arXiv, OpenAlex, WebSub...). Such a client always has an overall
// timeout, bounded dial/TLS/header waits, a bounded redirect chain, a
// User-Agent, and a hard cap on how many response body bytes it will read.
// Getter adds the retry policy of the harvest clients on top of such a
// client: GET with retries on 429, 5xx and network errors, honouring
// Retry-After, and a verdict after one attempt for a host that cannot be
// reached (a name that does not resolve, a refused connection, a
// certificate that does not verify).
package httpclient

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// UserAgent is sent on every request that does not set its own User-Agent.
const UserAgent = "followfeed/1 (+https://github.com/followfeed)"

// MaxRedirects is the longest redirect chain a client follows; the request
// after the last allowed redirect fails with an error.
const MaxRedirects = 5

// Defaults New uses for non-positive arguments.
const (
	DefaultTimeout = 30 * time.Second
	DefaultMaxBody = 10 << 20 // 10 MiB
)

// ErrBodyTooLarge is wrapped by the error a response body's Read returns once
// the body turns out to be longer than the client's cap. Test with errors.Is.
var ErrBodyTooLarge = errors.New("response body too large")

// New returns a client whose requests (including reading the body) end after
// timeout, that follows at most MaxRedirects redirects and only to http or
// https URLs, sets User-Agent to UserAgent when a request has none, and whose
// response bodies yield at most maxBody bytes: reading past that returns an
// error wrapping ErrBodyTooLarge instead of silently truncating. A body whose
// Content-Length already exceeds maxBody fails on the first Read.
//
// timeout <= 0 means DefaultTimeout; maxBody <= 0 means DefaultMaxBody. Each
// call builds its own transport (own connection pool); share the client.
func New(timeout time.Duration, maxBody int64) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	step := min(timeout, 10*time.Second)
	dialer := &net.Dialer{Timeout: step, KeepAlive: 30 * time.Second}
	base := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    10,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    step,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     &transport{base: base, maxBody: maxBody},
		CheckRedirect: checkRedirect,
	}
}

// checkRedirect stops long chains and anything that is not plain web.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("httpclient: stopped after %d redirects", MaxRedirects)
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return fmt.Errorf("httpclient: refusing redirect to scheme %q (only http and https)", s)
	}
	return nil
}

// transport adds the User-Agent and caps response bodies.
type transport struct {
	base    http.RoundTripper
	maxBody int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") == "" {
		// A RoundTripper must not modify the caller's request.
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", UserAgent)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = &cappedBody{
			rc:        resp.Body,
			remaining: t.maxBody,
			max:       t.maxBody,
			declared:  resp.ContentLength,
			where:     req.URL.Scheme + "://" + req.URL.Host + req.URL.Path,
		}
	}
	return resp, nil
}

// cappedBody yields at most max bytes, then fails with ErrBodyTooLarge if
// more follow. It is http.MaxBytesReader without the ResponseWriter.
type cappedBody struct {
	rc        io.ReadCloser
	remaining int64
	max       int64
	declared  int64 // Content-Length, -1 when unknown
	where     string
	err       error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.declared > b.max {
		b.err = b.tooLarge()
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Read one byte more than allowed to learn whether the body goes on.
	if int64(len(p))-1 > b.remaining {
		p = p[:b.remaining+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.remaining {
		b.remaining -= int64(n)
		b.err = err
		return n, err
	}
	n = int(b.remaining)
	b.remaining = 0
	b.err = b.tooLarge()
	return n, b.err
}

func (b *cappedBody) tooLarge() error {
	return fmt.Errorf("httpclient: body of %s exceeds %d bytes: %w", b.where, b.max, ErrBodyTooLarge)
}

func (b *cappedBody) Close() error { return b.rc.Close() }
