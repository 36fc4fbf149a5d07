package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"followfeed/fediverse"
)

// QueueActivityPub carries the fediverse's fan-outs and deliveries, apart
// from channels and mail, so that a thousand slow inboxes never delay a
// webhook or a digest.
const QueueActivityPub = "activitypub"

// ActivityPubWorkers is how many ActivityPub jobs one process runs at once;
// a delivery job holds at most one outbound request at a time.
const ActivityPubWorkers = 10

// EnqueueFanout inserts the fan-out job (one while one is waiting).
func (e *Enqueuer) EnqueueFanout(ctx context.Context, tx pgx.Tx) error {
	_, err := e.client.InsertTx(ctx, tx, APFanoutArgs{}, nil)
	return err
}

// EnqueueDeliveries inserts one delivery job per inbox.
func (e *Enqueuer) EnqueueDeliveries(ctx context.Context, tx pgx.Tx, inboxIDs []int64) error {
	params := make([]river.InsertManyParams, len(inboxIDs))
	for i, id := range inboxIDs {
		params[i] = river.InsertManyParams{Args: APDeliverArgs{InboxID: id}}
	}
	_, err := e.client.InsertManyTx(ctx, tx, params)
	return err
}

// APFanoutArgs turns the due actors' new papers into notes and deliveries.
type APFanoutArgs struct{}

// Kind implements river.JobArgs.
func (APFanoutArgs) Kind() string { return "activitypub_fanout" }

// InsertOpts: one fan-out waiting at a time (a running one reads every
// actor due, see fediverse.Service.Fanout).
func (APFanoutArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueActivityPub, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// APFanoutWorker runs fediverse.Service.Fanout and completes its job in the
// transaction that finds no actor due.
type APFanoutWorker struct {
	river.WorkerDefaults[APFanoutArgs]
	Fediverse *fediverse.Service
	Logger    *slog.Logger
}

// Work implements river.Worker.
func (w *APFanoutWorker) Work(ctx context.Context, job *river.Job[APFanoutArgs]) error {
	n, err := w.Fediverse.Fanout(ctx, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return fmt.Errorf("ActivityPub fan-out: %w", err)
	}
	if n > 0 {
		w.Logger.InfoContext(ctx, "ActivityPub notes published", "activities", n)
	}
	return nil
}

// APDeliverArgs sends an inbox's pending activities.
type APDeliverArgs struct {
	InboxID int64 `json:"inbox_id"`
}

// Kind implements river.JobArgs.
func (APDeliverArgs) Kind() string { return "activitypub_deliver" }

// InsertOpts: fediverse.DeliverAttempts covers fediverse.DeadAfter.
func (APDeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueActivityPub, MaxAttempts: fediverse.DeliverAttempts}
}

// APDeliverWorker runs fediverse.Service.DeliverInbox; a temporary failure
// returns its error for River's back-off, and after the last attempt the
// inbox is disabled.
type APDeliverWorker struct {
	river.WorkerDefaults[APDeliverArgs]
	Fediverse *fediverse.Service
	Logger    *slog.Logger
}

// Work implements river.Worker.
func (w *APDeliverWorker) Work(ctx context.Context, job *river.Job[APDeliverArgs]) error {
	err := w.Fediverse.DeliverInbox(ctx, job.Args.InboxID, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err == nil {
		return nil
	}
	var re *fediverse.RetryError
	if errors.As(err, &re) {
		w.Logger.WarnContext(ctx, "ActivityPub delivery will be retried", "inbox", job.Args.InboxID, "attempt", job.Attempt, "error", err)
	}
	if job.Attempt >= job.MaxAttempts {
		reason := fmt.Sprintf("gave up after %d attempts: %v", job.Attempt, err)
		return errors.Join(err, w.Fediverse.GiveUp(context.WithoutCancel(ctx), job.Args.InboxID, reason))
	}
	return err
}

// APSummaryArgs is the periodic daily summary of category actors.
type APSummaryArgs struct{}

// Kind implements river.JobArgs.
func (APSummaryArgs) Kind() string { return "activitypub_summary" }

// InsertOpts: one at a time.
func (APSummaryArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueActivityPub, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// APSummaryWorker runs fediverse.Service.Summaries.
type APSummaryWorker struct {
	river.WorkerDefaults[APSummaryArgs]
	Fediverse *fediverse.Service
	Logger    *slog.Logger
}

// Work implements river.Worker.
func (w *APSummaryWorker) Work(ctx context.Context, job *river.Job[APSummaryArgs]) error {
	n, err := w.Fediverse.Summaries(ctx)
	if n > 0 {
		w.Logger.InfoContext(ctx, "ActivityPub summaries posted", "summaries", n)
	}
	return err
}

// APHousekeepingArgs is the periodic deletion of withdrawn papers' notes
// and pruning of the fediverse tables.
type APHousekeepingArgs struct{}

// Kind implements river.JobArgs.
func (APHousekeepingArgs) Kind() string { return "activitypub_housekeeping" }

// InsertOpts: one at a time.
func (APHousekeepingArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueActivityPub, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// APHousekeepingWorker runs fediverse.Service.Housekeeping.
type APHousekeepingWorker struct {
	river.WorkerDefaults[APHousekeepingArgs]
	Fediverse *fediverse.Service
	Logger    *slog.Logger
}

// Work implements river.Worker.
func (w *APHousekeepingWorker) Work(ctx context.Context, job *river.Job[APHousekeepingArgs]) error {
	n, err := w.Fediverse.Housekeeping(ctx)
	if n > 0 {
		w.Logger.InfoContext(ctx, "ActivityPub notes of withdrawn papers deleted", "notes", n)
	}
	return err
}

// FediverseCollector exports the fediverse's figures at scrape time:
// followfeed_activitypub_followers (follows of followfeed's actors),
// followfeed_activitypub_actors (actors with followers),
// followfeed_activitypub_inboxes{state} (live, disabled),
// followfeed_activitypub_pending_deliveries, and this process's
// followfeed_activitypub_deliveries_total{outcome} (delivered, retry,
// failed, gone).
type FediverseCollector struct {
	svc                                        *fediverse.Service
	followers, actors, inboxes, pending, total *prometheus.Desc
}

// NewFediverseCollector returns the collector of svc.
func NewFediverseCollector(svc *fediverse.Service) *FediverseCollector {
	return &FediverseCollector{
		svc:       svc,
		followers: prometheus.NewDesc("followfeed_activitypub_followers", "Follows of followfeed's ActivityPub actors.", nil, nil),
		actors:    prometheus.NewDesc("followfeed_activitypub_actors", "ActivityPub actors with at least one follower.", nil, nil),
		inboxes:   prometheus.NewDesc("followfeed_activitypub_inboxes", "Delivery inboxes by state.", []string{"state"}, nil),
		pending:   prometheus.NewDesc("followfeed_activitypub_pending_deliveries", "Deliveries waiting to be sent.", nil, nil),
		total:     prometheus.NewDesc("followfeed_activitypub_deliveries_total", "Delivery attempts of this process by outcome.", []string{"outcome"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *FediverseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.followers, c.actors, c.inboxes, c.pending, c.total} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. The database figures are left
// out when they cannot be read.
func (c *FediverseCollector) Collect(ch chan<- prometheus.Metric) {
	for _, o := range []string{"delivered", "retry", "failed", "gone"} {
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.CounterValue, float64(c.svc.Metrics().Deliveries()[o]), o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.svc.ReadStats(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.followers, prometheus.GaugeValue, float64(st.Followers))
	ch <- prometheus.MustNewConstMetric(c.actors, prometheus.GaugeValue, float64(st.Actors))
	ch <- prometheus.MustNewConstMetric(c.inboxes, prometheus.GaugeValue, float64(st.Inboxes), "live")
	ch <- prometheus.MustNewConstMetric(c.inboxes, prometheus.GaugeValue, float64(st.DisabledInbox), "disabled")
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.PendingDeliver))
}
