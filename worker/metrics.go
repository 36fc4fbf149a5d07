package worker

import (
	"context"
	"followfeed/database"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"followfeed/harvest"
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

// SourceStatuser reports the health of every source (harvest.Health
// implements it).
type SourceStatuser interface {
	Status(ctx context.Context) ([]harvest.SourceStatus, error)
}

// SourcesCollector exports the source health read at scrape time:
// followfeed_source_last_success_timestamp_seconds{source} and
// followfeed_source_lag_seconds{source} (absent for a source that never
// succeeded), followfeed_source_errors_total{source} (failures ever
// recorded), followfeed_source_failing{source} (1 while the last run
// failed) and followfeed_source_missing_records{source} (records the
// completeness check found missing, over the reported days). A scrape that
// cannot read them exports followfeed_source_scrape_ok 0 and nothing else
// of these.
type SourcesCollector struct {
	health                                    SourceStatuser
	lastSuccess, lag, errors, failing, missed *prometheus.Desc
	up                                        *prometheus.Desc
}

// NewSourcesCollector returns a collector over h.
func NewSourcesCollector(h SourceStatuser) *SourcesCollector {
	l := []string{"source"}
	return &SourcesCollector{
		health:      h,
		lastSuccess: prometheus.NewDesc("followfeed_source_last_success_timestamp_seconds", "Unix time of the source's last successful run.", l, nil),
		lag:         prometheus.NewDesc("followfeed_source_lag_seconds", "Seconds since the source's last successful run.", l, nil),
		errors:      prometheus.NewDesc("followfeed_source_errors_total", "Failed runs of the source (harvests, enrichment runs, pushes).", l, nil),
		failing:     prometheus.NewDesc("followfeed_source_failing", "1 while the source's last run failed.", l, nil),
		missed:      prometheus.NewDesc("followfeed_source_missing_records", "Records the repository lists that are still missing, over the last 14 days checked.", l, nil),
		up:          prometheus.NewDesc("followfeed_source_scrape_ok", "1 when the source health could be read.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *SourcesCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastSuccess, c.lag, c.errors, c.failing, c.missed, c.up} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *SourcesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.health.Status(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	for _, s := range st {
		if !s.LastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, float64(s.LastSuccess.UnixMilli())/1000, s.Source)
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.Lag.Seconds(), s.Source)
		}
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(s.Errors), s.Source)
		failing := 0.0
		if s.Failing() {
			failing = 1
		}
		ch <- prometheus.MustNewConstMetric(c.failing, prometheus.GaugeValue, failing, s.Source)
		missing := 0
		for _, d := range s.Days {
			missing += max(d.Missing, 0)
		}
		ch <- prometheus.MustNewConstMetric(c.missed, prometheus.GaugeValue, float64(missing), s.Source)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

// ReplicaCollector exports where reads went (database.DB.Read): answered by
// the read replica, or sent to the primary because the replica was stale,
// lagging, erroring or left alone after an error; and whether it is up.
type ReplicaCollector struct {
	r     *database.Replica
	reads *prometheus.Desc
	up    *prometheus.Desc
	lag   *prometheus.Desc
}

// NewReplicaCollector returns the collector of r's counters.
func NewReplicaCollector(r *database.Replica) *ReplicaCollector {
	return &ReplicaCollector{r: r,
		reads: prometheus.NewDesc("followfeed_replica_reads_total", "Reads by where they went (outcome: replica, or primary because the replica was stale, lagging, erroring or down) and by kind (read: checked, i.e. feed renders with a freshness check, or bounded, i.e. follow status and previews).", []string{"outcome", "read"}, nil),
		up:    prometheus.NewDesc("followfeed_replica_up", "1 while the read replica is used (not left alone after an error).", nil, nil),
		lag:   prometheus.NewDesc("followfeed_replica_lagging", "1 while the lag monitor finds the replica behind the primary.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *ReplicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reads
	ch <- c.up
	ch <- c.lag
}

// Collect implements prometheus.Collector.
func (c *ReplicaCollector) Collect(ch chan<- prometheus.Metric) {
	// Only checked reads can be stale, only bounded ones lagging; both
	// series are there for each kind all the same (zero).
	for _, k := range []database.ReadKind{database.Checked, database.Bounded} {
		st := c.r.Stats(k)
		for _, o := range []struct {
			name string
			n    uint64
		}{{"replica", st.Replica.Load()}, {"stale", st.Stale.Load()}, {"lagging", st.Lagging.Load()}, {"error", st.Errors.Load()}, {"down", st.Down.Load()}} {
			ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(o.n), o.name, k.String())
		}
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, b(c.r.Up()))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, b(c.r.Lagging()))
}
