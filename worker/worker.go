// Package worker owns everything River: the job kinds, their thin workers
// (each calls one domain method), the queues, the periodic schedule, the
// Enqueuer through which domain packages insert jobs inside their own
// transactions, the one middleware that logs failed attempts and runs the
// domain's give-up actions (failureLog), River's own logger (RiverLogger)
// and the job metrics (JobsCollector from River's job list, jobRuns from
// its event subscription). Domain packages never import River; they import
// the small interfaces they define, which Enqueuer implements.
package worker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/migrations"
)

// Queue names. Each gets its own worker budget so a slow harvest never
// delays matching or mail. The harvest queue holds the arXiv work (runs
// and completeness checks: one OAI-PMH request at a time per process), the
// enrich queue the OpenAlex work, so neither upstream's slowness holds up
// the other's.
const (
	QueueDefault = river.QueueDefault
	QueueMatch   = "match"
	QueueHarvest = "harvest"
	QueueEnrich  = "enrich"
	QueueMail    = "mail"
)

// MailWorkers is how many mail jobs (digest batches, alerts, confirmations)
// one worker process runs at once; each holds one pooled SMTP connection.
const MailWorkers = 8

// Settings tune the working client.
type Settings struct {
	// SoftStop is how long Stop waits for running jobs before cancelling them.
	SoftStop time.Duration
	// TestOnly shortens River's start-up staggering for tests.
	TestOnly bool
	// FetchPollInterval overrides River's poll interval (tests).
	FetchPollInterval time.Duration
	// JobTimeout, RescueStuckAfter and RetryMax override the defaults above.
	JobTimeout, RescueStuckAfter, RetryMax time.Duration
	// CompletedRetention, CancelledRetention and DiscardedRetention
	// override the retentions of finished jobs (zero: the defaults
	// below).
	CompletedRetention, CancelledRetention, DiscardedRetention time.Duration
	// PollOnly makes River poll (every FetchPollInterval, 1 s by default)
	// instead of LISTEN for new jobs and leadership changes, so the worker
	// needs no session of its own and can run through a transaction-mode
	// pooler; a new leader then takes up to about 5 s after one resigns.
	PollOnly bool
}

// Job timing defaults. Every job is cancelled after JobTimeout (a harvest
// pass stops and resumes on its next run); a job still "running" after
// RescueStuckJobsAfter was abandoned by a killed worker and is retried.
// Retries back off exponentially (5 s, 10 s, 20 s, … capped).
const (
	JobTimeout           = 10 * time.Minute
	RescueStuckJobsAfter = JobTimeout + 5*time.Minute
	RetryMax             = time.Hour
)

// Retention of finished jobs. River's cleaner (on the leader, every 30 s,
// in batches) deletes jobs that finished longer ago than these, so
// river_job holds the jobs of the last day or week, not of the service's
// whole life (at the default intervals the periodic jobs alone are about
// 2,000 a day). Uniqueness never depends on a finished job (every unique
// job kind is unique among unfinished states only, oneAtATime), so a
// deleted job never lets one run twice. Cancelled and discarded jobs are
// kept a week: they are what an operator looks at in the job UI.
const (
	CompletedRetention = 24 * time.Hour
	CancelledRetention = 7 * 24 * time.Hour
	DiscardedRetention = 7 * 24 * time.Hour
)

// retryPolicy backs off exponentially from 5 s, doubling per attempt, capped
// at max, with ±10 % jitter so retries of a burst do not move in step.
type retryPolicy struct{ max time.Duration }

// NextRetry implements river.ClientRetryPolicy.
func (p retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	d := 5 * time.Second
	for i := 1; i < job.Attempt && d < p.max; i++ {
		d *= 2
	}
	d = min(d, p.max)
	d += time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
	return time.Now().Add(d)
}

// NewInserter returns an insert-only River client: it can insert jobs (also
// inside a caller's transaction) but never works them. The API process and
// the domain services use it through Enqueuer.
func NewInserter(pool *pgxpool.Pool, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger: RiverLogger(logger),
		Schema: migrations.RiverSchema,
	})
	if err != nil {
		return nil, fmt.Errorf("creating River insert client: %w", err)
	}
	return c, nil
}

// Deps are the domain services the workers call.
type Deps struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	Jobs   []Registration
	// Metrics, when set, gets the client's job outcome and duration
	// metrics (jobRuns).
	Metrics prometheus.Registerer
}

// Registration adds one worker (and optionally a periodic job) to a client.
// Build them with Register.
type Registration struct {
	add      func(*river.Workers)
	periodic *river.PeriodicJob
}

// Register wraps a River worker for NewClient.
func Register[T river.JobArgs](w river.Worker[T]) Registration {
	return Registration{add: func(ws *river.Workers) { river.AddWorker(ws, w) }}
}

// Every makes a registration also run periodically. The job's own
// InsertOpts (e.g. uniqueness) apply to the periodic inserts.
func (r Registration) Every(interval time.Duration, args func() river.JobArgs, runOnStart bool) Registration {
	r.periodic = river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return args(), nil },
		&river.PeriodicJobOpts{RunOnStart: runOnStart})
	return r
}

// Config is the River configuration every working client of this package
// starts from: River's schema, its logger (RiverLogger), the retry policy,
// the job timeout and rescue delay, the retention of finished jobs, and
// the failure middleware (failureLog:
// every failed attempt logged once, the give-up actions). NewClient adds the
// queues, workers and periodic jobs; a test gives it to rivertest.NewWorker
// to work one job as the service would. A nil logger is slog.Default().
func Config(logger *slog.Logger, s Settings) *river.Config {
	if logger == nil {
		logger = slog.Default()
	}
	if s.JobTimeout == 0 {
		s.JobTimeout, s.RescueStuckAfter = JobTimeout, RescueStuckJobsAfter
	}
	if s.RetryMax == 0 {
		s.RetryMax = RetryMax
	}
	return &river.Config{
		Logger:                      RiverLogger(logger),
		Schema:                      migrations.RiverSchema,
		JobTimeout:                  s.JobTimeout,
		RescueStuckJobsAfter:        s.RescueStuckAfter,
		RetryPolicy:                 retryPolicy{max: s.RetryMax},
		Middleware:                  []rivertype.Middleware{&failureLog{logger: logger}},
		SoftStopTimeout:             s.SoftStop,
		TestOnly:                    s.TestOnly,
		PollOnly:                    s.PollOnly,
		CompletedJobRetentionPeriod: cmp.Or(s.CompletedRetention, CompletedRetention),
		CancelledJobRetentionPeriod: cmp.Or(s.CancelledRetention, CancelledRetention),
		DiscardedJobRetentionPeriod: cmp.Or(s.DiscardedRetention, DiscardedRetention),
	}
}

// NewClient returns a River client that works every queue with the given
// registrations (on Config). Start it with Start; stop it with Stop, which
// waits up to Settings.SoftStop for running jobs. With deps.Metrics the
// client's job outcomes and durations are counted there (jobRuns).
func NewClient(deps Deps, s Settings) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	var periodic []*river.PeriodicJob
	for _, r := range deps.Jobs {
		r.add(workers)
		if r.periodic != nil {
			periodic = append(periodic, r.periodic)
		}
	}
	queues := map[string]river.QueueConfig{
		QueueDefault: {MaxWorkers: 10},
		QueueMatch:   {MaxWorkers: 2},
		QueueHarvest: {MaxWorkers: 1},
		QueueEnrich:  {MaxWorkers: 1},
		QueueMail:    {MaxWorkers: MailWorkers},
		QueuePush:    {MaxWorkers: PushWorkers},
		// The fediverse's queue (worker/fediverse.go).
		QueueActivityPub: {MaxWorkers: ActivityPubWorkers},
	}
	if s.FetchPollInterval > 0 {
		for k, q := range queues {
			q.FetchPollInterval = s.FetchPollInterval
			queues[k] = q
		}
	}
	cfg := Config(deps.Logger, s)
	cfg.Queues, cfg.Workers, cfg.PeriodicJobs = queues, workers, periodic
	c, err := river.NewClient(riverpgxv5.New(deps.Pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("creating River client: %w", err)
	}
	if deps.Metrics != nil {
		if err := countRuns(c, deps.Metrics); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Stop stops c, waiting for running jobs up to the client's soft timeout and
// then cancelling them; it returns once every job has returned or ctx ends.
func Stop(ctx context.Context, c *river.Client[pgx.Tx]) error {
	if err := c.Stop(ctx); err != nil {
		return fmt.Errorf("stopping River: %w", err)
	}
	return nil
}
