package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"followfeed/database"
	"followfeed/harvest"
)

// JobsCollector exports what River holds, read through River's JobList at
// scrape time (so every replica reports the same):
// followfeed_river_jobs{kind,state}, the jobs of every state but completed
// (available, pending, scheduled, retryable, running: the backlog; and
// discarded and cancelled, which River keeps for days), counted up to
// jobsCountCap per state; completed jobs are counted by the process that
// worked them (followfeed_river_job_runs_total, jobRuns).
// followfeed_river_jobs_scrape_ok is 0, and nothing else is exported, when
// River could not be asked, rather than failing the whole /metrics response.
type JobsCollector struct {
	client *river.Client[pgx.Tx]
	desc   *prometheus.Desc
	up     *prometheus.Desc
}

// jobsCountCap is where followfeed_river_jobs stops counting a state: one
// JobList page. A state that holds more is an incident the metric already
// shows; the scrape stays one bounded query per state.
const jobsCountCap = 10_000

// jobsStates are the states followfeed_river_jobs counts.
var jobsStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateScheduled,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateDiscarded, rivertype.JobStateCancelled}

// NewJobsCollector returns a collector over the jobs client can list (an
// insert-only client will do).
func NewJobsCollector(client *river.Client[pgx.Tx]) *JobsCollector {
	return &JobsCollector{
		client: client,
		desc: prometheus.NewDesc("followfeed_river_jobs", fmt.Sprintf("River jobs by kind and state, every state but completed, up to %d per state.", jobsCountCap),
			[]string{"kind", "state"}, nil),
		up: prometheus.NewDesc("followfeed_river_jobs_scrape_ok", "1 when the River job counts could be read.", nil, nil),
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
	type key struct{ kind, state string }
	counts := map[key]int{}
	for _, state := range jobsStates {
		res, err := c.client.JobList(ctx, river.NewJobListParams().States(state).First(jobsCountCap))
		if err != nil {
			ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
			return
		}
		for _, j := range res.Jobs {
			counts[key{j.Kind, string(state)}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.kind, k.state)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

// jobRuns counts the job runs of one working client from River's event
// subscription (Client.Subscribe), in the process that ran them:
// followfeed_river_job_runs_total{kind,outcome} (outcome completed, retried:
// failed and River runs it again, discarded: failed at its last attempt,
// cancelled, snoozed, interrupted: stopped by the client's shutdown),
// followfeed_river_job_run_seconds{kind} (how long the worker ran, River's
// RunDuration) and followfeed_river_job_queue_wait_seconds{kind} (from the
// job's scheduled time to its start).
type jobRuns struct {
	runs      *prometheus.CounterVec
	run, wait *prometheus.HistogramVec
}

// runEvents is the subscription's buffer: River drops (and logs at WARN)
// the events of a full one, and completes jobs in batches of thousands.
const runEvents = 10_000

// countRuns registers c's jobRuns with reg and counts c's events until c
// stops (River then closes the subscription).
func countRuns(c *river.Client[pgx.Tx], reg prometheus.Registerer) error {
	buckets := prometheus.ExponentialBuckets(0.005, 4, 10) // 5 ms to 22 min
	m := &jobRuns{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "followfeed_river_job_runs_total",
			Help: "Job runs this process finished, by kind and outcome (completed, retried, discarded, cancelled, snoozed, interrupted)."}, []string{"kind", "outcome"}),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "followfeed_river_job_run_seconds",
			Help: "How long this process's job runs took, by kind.", Buckets: buckets}, []string{"kind"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "followfeed_river_job_queue_wait_seconds",
			Help: "How long jobs waited from their scheduled time to their start in this process, by kind.", Buckets: buckets}, []string{"kind"}),
	}
	for _, col := range []prometheus.Collector{m.runs, m.run, m.wait} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("registering the job metrics: %w", err)
		}
	}
	events, _ := c.SubscribeConfig(&river.SubscribeConfig{ChanSize: runEvents, Kinds: []river.EventKind{
		river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled,
		river.EventKindJobSnoozed, river.EventKindJobInterrupted}})
	go func() {
		for e := range events {
			m.count(e)
		}
	}()
	return nil
}

// count records one finished run.
func (m *jobRuns) count(e *river.Event) {
	var outcome string
	switch e.Kind {
	case river.EventKindJobCompleted:
		outcome = "completed"
	case river.EventKindJobFailed:
		outcome = "retried"
		if e.Job.State == rivertype.JobStateDiscarded {
			outcome = "discarded"
		}
	case river.EventKindJobCancelled:
		outcome = "cancelled"
	case river.EventKindJobSnoozed:
		outcome = "snoozed"
	case river.EventKindJobInterrupted:
		outcome = "interrupted"
	default:
		return
	}
	m.runs.WithLabelValues(e.Job.Kind, outcome).Inc()
	if e.JobStats != nil {
		m.run.WithLabelValues(e.Job.Kind).Observe(e.JobStats.RunDuration.Seconds())
		m.wait.WithLabelValues(e.Job.Kind).Observe(e.JobStats.QueueWaitDuration.Seconds())
	}
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
