// Package recorder is what the upstream clients' tests (package harvest's
// OAI-PMH client, package openalex) watch them through: a test server that
// counts and records the requests it answers, and a Sleep that records the
// waits it is asked for instead of waiting.
package recorder

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Sleeps stands in for time.Sleep: it records the waits and returns at
// once (or ctx's error). The zero value is ready; it is safe for
// concurrent use.
type Sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Sleep records d and returns ctx.Err().
func (s *Sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Waits returns the waits recorded so far, in order.
func (s *Sleeps) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.waits)
}

// Server serves a handler and counts and records its requests. It is
// closed when the test ends.
type Server struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	queries  []url.Values
}

// NewServer starts a Server answering with handler, which is told the
// request's number (1 for the first).
func NewServer(t testing.TB, handler func(w http.ResponseWriter, r *http.Request, n int)) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.requests.Add(1))
		s.mu.Lock()
		s.queries = append(s.queries, r.URL.Query())
		s.mu.Unlock()
		handler(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns how many requests the server has received.
func (s *Server) Requests() int32 { return s.requests.Load() }

// Queries returns the query of every request received, in order.
func (s *Server) Queries() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queries)
}

// Testdata returns the recorded file testdata/name of the package under
// test, failing the test when it cannot be read.
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// GzipBomb is a gzip stream of head followed by spaces, inflating to n
// bytes in all: about a thousandth of n on the wire. Served with
// Content-Encoding: gzip, Go's transport inflates it for the client, so
// a body cap must count after decompression to catch it.
func GzipBomb(t testing.TB, head []byte, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(head)
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for left := n - len(head); left > 0; left -= len(spaces) {
		_, _ = zw.Write(spaces[:min(left, len(spaces))])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ServeGzip answers every request with body as a gzip-encoded
// contentType (a GzipBomb, say).
func ServeGzip(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Encoding", "gzip")
	_, _ = w.Write(body)
}
