package httpclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testGetter returns a Getter on srv's client that records its waits
// instead of sleeping.
func testGetter(client *http.Client, maxWait time.Duration, waits *[]time.Duration) *Getter {
	return &Getter{Client: client, MaxRetries: 1, Backoff: time.Second, MaxWait: maxWait, MaxBody: 1 << 20,
		UserAgent: "test/1", Accept: "*/*", Now: time.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			return ctx.Err()
		}}
}

// TestRetryAfterIsCappedAtADay: a Retry-After beyond MaxRetryAfter waits
// MaxRetryAfter even when MaxWait allows more, and one too large for a
// time.Duration does not overflow into a negative (no) wait.
func TestRetryAfterIsCappedAtADay(t *testing.T) {
	for _, retryAfter := range []string{"100000", "9223372036854775807"} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header().Set("Retry-After", retryAfter)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ok"))
		}))
		var waits []time.Duration
		g := testGetter(srv.Client(), 7*24*time.Hour, &waits)
		resp, err := g.Get(t.Context(), srv.URL)
		srv.Close()
		if err != nil || string(resp.Body) != "ok" {
			t.Fatalf("Retry-After %s: %v, %v", retryAfter, resp, err)
		}
		if !slices.Equal(waits, []time.Duration{24 * time.Hour}) {
			t.Errorf("Retry-After %s: waits %v, want [24h]", retryAfter, waits)
		}
	}
	h := http.Header{"Retry-After": []string{"86401"}}
	if d := (&Getter{}).retryAfter(h); d != MaxRetryAfter {
		t.Errorf("retryAfter(86401) = %v, want %v", d, MaxRetryAfter)
	}
	h = http.Header{"Retry-After": []string{"86400"}}
	if d := (&Getter{}).retryAfter(h); d != 24*time.Hour {
		t.Errorf("retryAfter(86400) = %v, want 24h", d)
	}
}

// TestGetBodyCaps: a body over MaxBody, or over the cap of a client from
// New, fails with ErrBodyTooLarge after one request (it is not retried).
func TestGetBodyCaps(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write([]byte(strings.Repeat("x", 4096)))
	}))
	defer srv.Close()
	for name, g := range map[string]*Getter{
		"MaxBody":    {Client: srv.Client(), MaxRetries: 3, MaxBody: 1024},
		"client cap": {Client: New(5*time.Second, 1024), MaxRetries: 3, MaxBody: 1 << 20},
	} {
		n.Store(0)
		var waits []time.Duration
		g.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
		if _, err := g.Get(t.Context(), srv.URL); !errors.Is(err, ErrBodyTooLarge) {
			t.Errorf("%s: err = %v, want ErrBodyTooLarge", name, err)
		}
		if n.Load() != 1 || len(waits) != 0 {
			t.Errorf("%s: %d requests, waits %v; want one request, no retry", name, n.Load(), waits)
		}
	}
}

func TestStatusErrorWrapsErrUpstream(t *testing.T) {
	err := (&Response{Status: 404, Body: []byte("  not\n\nfound  ")}).StatusError()
	if !errors.Is(err, ErrUpstream) || err.Error() != "upstream request failed: HTTP 404 Not Found: not found" {
		t.Errorf("StatusError() = %v", err)
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled ctx = %v", err)
	}
}
