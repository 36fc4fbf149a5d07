// Package worker owns everything River: the job kinds, their thin workers
// (each calls one domain method), the queues, the periodic schedule, and the
// Enqueuer through which domain packages insert jobs inside their own
// transactions. Domain packages never import River; they import the small
// interfaces they define, which Enqueuer implements.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"followfeed/migrations"
)

// Queue names. Each gets its own worker budget so a slow harvest never
// delays matching or mail.
const (
	QueueDefault = river.QueueDefault
	QueueMatch   = "match"
	QueueHarvest = "harvest"
	QueueMail    = "mail"
)

// Settings tune the working client.
type Settings struct {
	// SoftStop is how long Stop waits for running jobs before cancelling them.
	SoftStop time.Duration
	// HarvestInterval schedules the periodic arXiv harvest; 0 disables it.
	HarvestInterval time.Duration
	// DigestInterval is how often the digest scheduler looks for users whose
	// local digest time has come.
	DigestInterval time.Duration
	// TestOnly shortens River's start-up staggering for tests.
	TestOnly bool
	// FetchPollInterval overrides River's poll interval (tests).
	FetchPollInterval time.Duration
}

// RescueStuckJobsAfter is how long a job may run before River considers its
// worker dead and retries it. Our longest job (a harvest pass) stops itself
// after JobTimeout, so a job still "running" after this long was abandoned by a
// killed process.
const (
	JobTimeout           = 10 * time.Minute
	RescueStuckJobsAfter = JobTimeout + 5*time.Minute
)

// NewInserter returns an insert-only River client: it can insert jobs (also
// inside a caller's transaction) but never works them. The API process and
// the domain services use it through Enqueuer.
func NewInserter(pool *pgxpool.Pool, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger: logger,
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

// NewClient returns a River client that works every queue with the given
// registrations. Start it with Start; stop it with Stop, which waits up to
// Settings.SoftStop for running jobs.
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
		QueueMail:    {MaxWorkers: 8},
	}
	if s.FetchPollInterval > 0 {
		for k, q := range queues {
			q.FetchPollInterval = s.FetchPollInterval
			queues[k] = q
		}
	}
	c, err := river.NewClient(riverpgxv5.New(deps.Pool), &river.Config{
		Logger:               deps.Logger,
		Schema:               migrations.RiverSchema,
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic,
		JobTimeout:           JobTimeout,
		RescueStuckJobsAfter: RescueStuckJobsAfter,
		SoftStopTimeout:      s.SoftStop,
		TestOnly:             s.TestOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("creating River client: %w", err)
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
