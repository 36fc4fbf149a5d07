package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// opsCacheFor is how long /readyz's verdict and the metrics read from the
// database (Options.Queried) are reused. Both run queries (readiness: a
// ping and the schema check; metrics: River's job counts and the sources'
// health), and neither endpoint is rate limited, since probes and
// scrapers must never see a 429; so a flood of requests costs at most one
// round of queries a second per process. In-process metrics (requests,
// replica reads) are gathered fresh on every scrape.
const opsCacheFor = time.Second

// cached is a value computed at most once per opsCacheFor; callers that
// come while it is being computed wait for that result instead of
// computing their own.
type cached[T any] struct {
	mu  sync.Mutex
	at  time.Time
	val T
	err error
}

// get returns the cached value, computing it with compute when older than
// opsCacheFor.
func (c *cached[T]) get(compute func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) >= opsCacheFor {
		c.val, c.err = compute()
		c.at = time.Now()
	}
	return c.val, c.err
}

// cachedReady is ready's verdict, reused for opsCacheFor. The check runs
// detached from the request that happens to trigger it (a client that
// hangs up does not turn the cached verdict into a failure), within 2 s.
func cachedReady(ready func(context.Context) error) func(context.Context) error {
	var c cached[struct{}]
	return func(ctx context.Context) error {
		_, err := c.get(func() (struct{}, error) {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			return struct{}{}, ready(ctx)
		})
		return err
	}
}

// cachedGatherer gathers g at most once per opsCacheFor; every scrape in
// between is answered from the same metric families (which the encoders
// only read).
type cachedGatherer struct {
	g prometheus.Gatherer
	c cached[[]*dto.MetricFamily]
}

// Gather implements prometheus.Gatherer.
func (c *cachedGatherer) Gather() ([]*dto.MetricFamily, error) {
	return c.c.get(c.g.Gather)
}
