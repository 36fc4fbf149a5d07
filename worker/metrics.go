package worker

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// JobsCollector exports River job counts by kind and state
// (followfeed_river_jobs{kind,state}) as read from the database at scrape
// time. A scrape that cannot reach the database exports nothing rather than
// failing the whole /metrics response.
type JobsCollector struct {
	pool *pgxpool.Pool
	desc *prometheus.Desc
	up   *prometheus.Desc
}

// NewJobsCollector returns a collector over pool's River schema.
func NewJobsCollector(pool *pgxpool.Pool) *JobsCollector {
	return &JobsCollector{
		pool: pool,
		desc: prometheus.NewDesc("followfeed_river_jobs", "River jobs by kind and state.", []string{"kind", "state"}, nil),
		up:   prometheus.NewDesc("followfeed_river_jobs_scrape_ok", "1 when the River job counts could be read.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *JobsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *JobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// river_job is indexed on (state, queue, priority, scheduled_at, id); a
	// GROUP BY over it is a sequential scan of a table River keeps small by
	// deleting finished jobs after a day.
	rows, err := c.pool.Query(ctx, `SELECT kind, state::text, count(*) FROM river.river_job GROUP BY 1, 2`)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var kind, state string
		var n int64
		if err := rows.Scan(&kind, &state, &n); err != nil {
			break
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), kind, state)
	}
	ok := 1.0
	if rows.Err() != nil {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok)
}
