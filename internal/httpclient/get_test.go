package httpclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	fakedns "followfeed/internal/fake/dns"
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

// TestUnreachableHostsAreNotRetried: a host whose name does not resolve
// (a real DNS server's NXDOMAIN), one that refuses the connection (a
// closed port) and one whose certificate does not verify get their
// verdict after one attempt, with no back-off wait: an *UnreachableError
// that says why and matches ErrUnreachable and ErrUpstream. A timeout is
// still retried.
func TestUnreachableHostsAreNotRetried(t *testing.T) {
	nx := fakedns.NXDomain(t)
	viaFakeDNS := &http.Client{Transport: &http.Transport{
		DialContext: (&net.Dialer{Resolver: nx.Resolver(), Timeout: 5 * time.Second}).DialContext}}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/oai"
	closed.Close() // nothing listens there now: connection refused

	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer untrusted.Close()

	for _, tc := range []struct {
		name, url, reason string
		client            *http.Client
	}{
		{"no such host", "http://nonexistent.invalid/oai?api_key=secret", "its name does not resolve", viaFakeDNS},
		{"connection refused", closedURL, "it refused the connection", New(5*time.Second, 1<<20)},
		{"certificate", untrusted.URL, "its TLS certificate does not verify", New(5*time.Second, 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			g := testGetter(tc.client, time.Minute, &waits)
			g.MaxRetries = 5
			retried := 0
			g.OnRetry = func(string, int, int, time.Duration, error) { retried++ }
			_, err := g.Get(t.Context(), tc.url)
			var ue *UnreachableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnreachable) || !errors.Is(err, ErrUpstream) {
				t.Fatalf("err = %v, want an *UnreachableError matching ErrUnreachable and ErrUpstream", err)
			}
			if !strings.HasPrefix(ue.Reason, tc.reason) || !strings.Contains(err.Error(), "cannot reach ") {
				t.Errorf("err = %q, want the reason %q", err, tc.reason)
			}
			if len(waits) != 0 || retried != 0 {
				t.Errorf("waits %v and %d retries, want none", waits, retried)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the api_key leaked: %v", err)
			}
		})
	}
	if nx.Queries() == 0 {
		t.Error("the fake DNS server was never asked")
	}
}

// TestTimeoutsAreRetried: a server that does not answer in time is a
// failure a retry may fix; it is retried, not called unreachable.
func TestTimeoutsAreRetried(t *testing.T) {
	srv := hanging(t)
	var waits []time.Duration
	g := testGetter(New(100*time.Millisecond, 1<<20), time.Minute, &waits)
	_, err := g.Get(t.Context(), srv.URL)
	if !errors.Is(err, ErrUpstream) || errors.Is(err, ErrUnreachable) || len(waits) != 1 {
		t.Fatalf("err = %v, waits %v; want a retried ErrUpstream, not ErrUnreachable", err, waits)
	}
}
