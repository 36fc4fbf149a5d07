package harvest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"followfeed/harvest"
	"followfeed/internal/httpclient"
)

// gzipBomb is a gzip stream of a well-formed OAI-PMH prefix followed by
// spaces, inflating to n bytes (about 64 KiB compressed for 65 MiB).
func gzipBomb(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	head := []byte(`<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-29T12:00:00Z</responseDate><ListRecords>`)
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

// An OAI-PMH response that is small on the wire but inflates past the 64 MiB
// cap (Content-Encoding: gzip, decoded by the transport) is a malformed
// response, not a transient one: one request, no retry, ErrMalformed
// wrapping httpclient.ErrBodyTooLarge. The production client is used
// (httpclient.New with the OAI cap, retries at their default).
func TestOAIResponseInflatingPastTheCapIsNotRetried(t *testing.T) {
	t.Log("hostile: limits")
	bomb := gzipBomb(t, harvest.OAIMaxBodyBytes+(1<<20))
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes compressed; the test wants a small one", len(bomb))
	}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb)
	}))
	defer srv.Close()
	var slept atomic.Int32
	c := harvest.NewOAIClient(harvest.OAIConfig{
		BaseURL: srv.URL, PageDelay: -1, Client: httpclient.New(time.Minute, harvest.OAIMaxBodyBytes),
		Sleep: func(ctx context.Context, d time.Duration) error { slept.Add(1); return nil },
	})
	_, err := c.ListRecords(context.Background(), harvest.ListRequest{Set: "cs"})
	if !errors.Is(err, harvest.ErrMalformed) || !errors.Is(err, harvest.ErrTooLarge) || errors.Is(err, harvest.ErrUpstream) {
		t.Fatalf("err = %v, want ErrMalformed wrapping ErrBodyTooLarge, not ErrUpstream", err)
	}
	if n := requests.Load(); n != 1 || slept.Load() != 0 {
		t.Fatalf("%d requests and %d back-off waits, want 1 and none", n, slept.Load())
	}
}
