package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// countingCollector is a collector whose every Collect stands for a round
// of database queries, as worker's JobsCollector does.
type countingCollector struct {
	desc  *prometheus.Desc
	calls atomic.Int64
}

func (c *countingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *countingCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.calls.Add(1)
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}

// TestOperationsEndpointsQueryAtMostOnceASecond: /readyz and /metrics ran
// their queries on every request, outside any rate limit (a security
// review finding). Under a flood of concurrent requests the readiness
// check and the database-backed collectors run at most once a second,
// while in-process metrics stay live on every scrape.
func TestOperationsEndpointsQueryAtMostOnceASecond(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	var readies atomic.Int64
	ready := func(ctx context.Context) error {
		readies.Add(1)
		return nil
	}
	queried := prometheus.NewRegistry()
	cc := &countingCollector{desc: prometheus.NewDesc("test_queried_rounds", "Rounds of queries.", nil, nil)}
	queried.MustRegister(cc)
	reg := prometheus.NewRegistry()
	live := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_live_total", Help: "An in-process counter."})
	reg.MustRegister(live)
	srv := httptest.NewServer(NewHandler(Options{Ready: ready, Registry: reg, Queried: queried}))
	t.Cleanup(srv.Close)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	start := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if code, _ := get("/readyz"); code != 200 {
					t.Errorf("readyz: %d", code)
				}
				if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "test_queried_rounds") {
					t.Errorf("metrics: %d", code)
				}
			}
		}()
	}
	wg.Wait()
	allowed := 1 + int64(time.Since(start)/opsCacheFor)
	if n := readies.Load(); n > allowed {
		t.Errorf("200 readiness probes in %s ran the check %d times, want at most %d", time.Since(start), n, allowed)
	}
	if n := cc.calls.Load(); n > allowed {
		t.Errorf("200 scrapes in %s ran the queries %d times, want at most %d", time.Since(start), n, allowed)
	}

	live.Add(41)
	_, body := get("/metrics")
	live.Inc()
	_, again := get("/metrics")
	if !strings.Contains(body, "test_live_total 41") || !strings.Contains(again, "test_live_total 42") {
		t.Errorf("in-process metrics are not live:\n%s\n%s", body, again)
	}
	// Once the second is over, a scrape queries again.
	before, deadline := cc.calls.Load(), time.Now().Add(3*opsCacheFor)
	for cc.calls.Load() == before && time.Now().Before(deadline) {
		get("/metrics")
		time.Sleep(20 * time.Millisecond) // the poll's interval
	}
	if cc.calls.Load() != before+1 {
		t.Errorf("scrapes for %s gathered %d times anew, want once", 3*opsCacheFor, cc.calls.Load()-before)
	}
}
