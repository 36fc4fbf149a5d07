package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/feeds"
	"followfeed/harvest"
	"followfeed/match"
	"followfeed/notify"
)

// Enqueuer inserts jobs for domain packages, always inside the caller's
// transaction. It implements catalog.MatchEnqueuer and the other small
// enqueuer interfaces the domain packages define.
type Enqueuer struct {
	client *river.Client[pgx.Tx]
}

// NewEnqueuer wraps an (insert-only) River client.
func NewEnqueuer(c *river.Client[pgx.Tx]) *Enqueuer { return &Enqueuer{client: c} }

// EnqueueMatch inserts the match job of seq range [fromSeq, toSeq] in tx.
func (e *Enqueuer) EnqueueMatch(ctx context.Context, tx pgx.Tx, fromSeq, toSeq int64) error {
	_, err := e.client.InsertTx(ctx, tx, MatchArgs{FromSeq: fromSeq, ToSeq: toSeq}, nil)
	return err
}

// MatchArgs is the match job of one committed batch of paper keys.
type MatchArgs struct {
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
}

// Kind implements river.JobArgs.
func (MatchArgs) Kind() string { return "match_batch" }

// InsertOpts puts match jobs on their own queue.
func (MatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMatch, MaxAttempts: 25}
}

// MatchWorker runs match.Service.RunBatch and completes its job in the same
// transaction.
type MatchWorker struct {
	river.WorkerDefaults[MatchArgs]
	Match  *match.Service
	Logger *slog.Logger
}

// Work implements river.Worker.
func (w *MatchWorker) Work(ctx context.Context, job *river.Job[MatchArgs]) error {
	res, err := w.Match.RunBatch(ctx, job.Args.FromSeq, job.Args.ToSeq, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return failed(fmt.Errorf("matching seq %d..%d: %w", job.Args.FromSeq, job.Args.ToSeq, err),
			"from_seq", job.Args.FromSeq, "to_seq", job.Args.ToSeq)
	}
	w.Logger.InfoContext(ctx, "matched batch", "from_seq", job.Args.FromSeq, "to_seq", job.Args.ToSeq,
		"distinct_keys", res.Keys, "users", len(res.Users))
	return nil
}

// EnqueueBackfill inserts the backfill job of a newly followed query
// in tx (the follow's transaction). The job is unique per search while one
// is available, scheduled, running or waiting for a retry: a second follow
// of the same search meanwhile inserts nothing (the first job's rows serve
// every follower). A search followed again after its job completed gets a
// new one, which writes only the papers that have no row yet.
func (e *Enqueuer) EnqueueBackfill(ctx context.Context, tx pgx.Tx, normalized string, since time.Time) error {
	_, err := e.client.InsertTx(ctx, tx, BackfillArgs{Search: normalized, Since: since.UTC()}, nil)
	return err
}

// BackfillArgs is the backfill of one newly followed query: its
// matches among the papers announced since Since.
type BackfillArgs struct {
	// Search is the query's normal form (follow.Target.ID); jobs are
	// unique by it. The field and its JSON name keep the engine's word:
	// stored jobs carry it.
	Search string `json:"search" river:"unique"`
	// Since is the start of the window, BackfillDays before the follow.
	Since time.Time `json:"since"`
}

// Kind implements river.JobArgs: the job backfills a query's hits (its
// search_hits rows). The kind keeps its name, "search_backfill", since
// River's stored jobs are found by it.
func (BackfillArgs) Kind() string { return "search_backfill" }

// InsertOpts puts backfills on the match queue: like ingest and the match
// job they write rows under the writers' lock (only at their end: the scan
// runs without it), and the queue's few workers keep their scans, a core
// each, from crowding out the rest. Unique per search (oneAtATime).
func (BackfillArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMatch, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: oneAtATime}}
}

// BackfillWorker runs catalog.Store.BackfillSearch and completes its job in
// the same transaction (a follow inserting while it runs must find it
// either running, and be waited for, or completed). A run is idempotent (it
// writes only papers without a row for the search), so a retry after a
// failure or a rescue is safe.
type BackfillWorker struct {
	river.WorkerDefaults[BackfillArgs]
	Papers *catalog.Store
	Logger *slog.Logger
}

// Work implements river.Worker.
func (w *BackfillWorker) Work(ctx context.Context, job *river.Job[BackfillArgs]) error {
	start := time.Now()
	n, err := w.Papers.BackfillSearch(ctx, job.Args.Search, job.Args.Since, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return failed(err, "source", "backfill", "since", job.Args.Since.Format(time.DateOnly))
	}
	w.Logger.InfoContext(ctx, "query backfilled", "papers", n, "since", job.Args.Since.Format(time.DateOnly),
		"took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// HarvestArgs is one incremental arXiv OAI-PMH harvest pass.
type HarvestArgs struct{}

// Kind implements river.JobArgs.
func (HarvestArgs) Kind() string { return "harvest_arxiv" }

// InsertOpts: one harvest at a time (a periodic run finding one still
// queued or running is skipped), on the harvest queue.
func (HarvestArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueHarvest, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// oneAtATime makes a job kind unique while one is queued, running or
// waiting for a retry.
var oneAtATime = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}

// HarvestWorker runs harvest.Harvester.RunOnce. A set's run that reaches
// the end of its list queues the set's completeness check (CheckArgs) and,
// when papers are due, an enrichment pass (EnrichArgs) in the transaction
// that records it, so neither depends on what is left of this job's time.
type HarvestWorker struct {
	river.WorkerDefaults[HarvestArgs]
	Harvester *harvest.Harvester
	Logger    *slog.Logger
}

// Work implements river.Worker. A run that fails resumes where it stopped on
// the retry (the harvester persists its progress page by page). A response
// over the body cap (harvest.ErrTooLarge, also one that inflates past it)
// is not retried: the same page would fail the same way, so the job is
// cancelled and the next periodic run asks again; the source's status shows
// the error meanwhile. Other unusable responses (truncated, not OAI-PMH) are
// retried by River with its back-off. A run longer than half the job's
// timeout stops between pages and snoozes for HarvestPause (no attempt
// spent): the next turn resumes at the page where it stopped and skips the
// sets an earlier turn finished (harvest.Harvester.RunSince), so a slow
// repository never times the job out mid-page.
func (w *HarvestWorker) Work(ctx context.Context, job *river.Job[HarvestArgs]) error {
	st, err := w.Harvester.RunSince(ctx, job.CreatedAt)
	attrs := []any{"source", "arxiv-oai", "pages", st.Pages, "records", st.Records, "new", st.New,
		"replaced", st.Replaced, "updated", st.Updated, "deleted", st.Deleted, "skipped", st.Skipped}
	if errors.Is(err, harvest.ErrTooLarge) {
		return river.JobCancel(failed(err, attrs...))
	}
	if err != nil {
		return failed(err, attrs...)
	}
	if st.More {
		w.Logger.InfoContext(ctx, "harvest run continues", attrs...)
		return river.JobSnooze(HarvestPause)
	}
	w.Logger.InfoContext(ctx, "harvest run", attrs...)
	return nil
}

// HarvestPause is how long a harvest run that spent half its job's time
// waits for its next turn (snoozed: the wait costs no attempt).
const HarvestPause = time.Second

// EnqueueCheck inserts the completeness check of set in tx (unique per
// set: skipped while one is queued, running, snoozed or retrying).
func (e *Enqueuer) EnqueueCheck(ctx context.Context, tx pgx.Tx, set string) error {
	_, err := e.client.InsertTx(ctx, tx, CheckArgs{Set: set}, nil)
	return err
}

// EnqueueEnrichment inserts an OpenAlex enrichment pass in tx (skipped
// while one is queued, running or retrying).
func (e *Enqueuer) EnqueueEnrichment(ctx context.Context, tx pgx.Tx) error {
	_, err := e.client.InsertTx(ctx, tx, EnrichArgs{}, nil)
	return err
}

// CheckArgs is the completeness check of one OAI-PMH set: the days its
// harvest runs queued, compared with the repository's ListIdentifiers
// (harvest.Harvester.CheckSet).
type CheckArgs struct {
	Set string `json:"set" river:"unique"`
}

// Kind implements river.JobArgs.
func (CheckArgs) Kind() string { return "harvest_check" }

// InsertOpts: one check per set at a time (unique by set while queued,
// running, snoozed or waiting for a retry), on the harvest queue, so that a
// process makes one OAI-PMH request at a time, at priority 2: a waiting
// harvest run (priority 1) always goes before the check's next turn.
func (CheckArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueHarvest, Priority: 2, MaxAttempts: 10,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: oneAtATime}}
}

// CheckPause is how long a check that spent its budget waits for its next
// turn (snoozed: the wait costs no attempt).
const CheckPause = time.Second

// CheckWorker runs harvest.Harvester.CheckSet.
type CheckWorker struct {
	river.WorkerDefaults[CheckArgs]
	Harvester *harvest.Harvester
	Logger    *slog.Logger
}

// Work implements river.Worker. Each turn does a bounded part of the check
// (harvest.Harvester.CheckRequests requests, at most half the job's time)
// and, with days left, snoozes for CheckPause, which lets a waiting harvest
// run go first; a failure is retried by River with its back-off and
// resumes at the page where it stopped. A failing check never marks the
// set's harvest failing: the days' verdicts just wait for it.
func (w *CheckWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	st, err := w.Harvester.CheckSet(ctx, job.Args.Set)
	attrs := []any{"source", harvest.OAISource(job.Args.Set), "requests", st.Requests, "days", st.Days,
		"missing", st.Missing, "reharvested", st.Reharvested, "dropped", st.Dropped}
	switch {
	case err != nil:
		return failed(err, attrs...)
	case st.More:
		w.Logger.InfoContext(ctx, "completeness check continues", attrs...)
		return river.JobSnooze(CheckPause)
	}
	w.Logger.InfoContext(ctx, "completeness check", attrs...)
	return nil
}

// EnrichArgs is one OpenAlex enrichment pass over the papers that are due.
type EnrichArgs struct{}

// Kind implements river.JobArgs.
func (EnrichArgs) Kind() string { return "enrich_openalex" }

// InsertOpts: one pass at a time, on the enrich queue, apart from the
// arXiv work: OpenAlex's retries never delay a harvest run or a check, and
// neither of those delays an enrichment pass.
func (EnrichArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEnrich, MaxAttempts: 8, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// EnrichWorker runs harvest.Enricher.RunOnce.
type EnrichWorker struct {
	river.WorkerDefaults[EnrichArgs]
	Enricher *harvest.Enricher
	Logger   *slog.Logger
}

// Work implements river.Worker; lookup failures are retried by River with
// its backoff.
func (w *EnrichWorker) Work(ctx context.Context, job *river.Job[EnrichArgs]) error {
	st, err := w.Enricher.RunOnce(ctx)
	attrs := []any{"source", harvest.SourceOpenAlex, "looked", st.Looked, "found", st.Found, "missing", st.Missing,
		"given_up", st.GivenUp, "keys", st.Keys}
	if err != nil {
		return failed(err, attrs...)
	}
	w.Logger.InfoContext(ctx, "enrichment run", attrs...)
	return nil
}

// EnqueueWebSub inserts a hub ping for topics in tx.
func (e *Enqueuer) EnqueueWebSub(ctx context.Context, tx pgx.Tx, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	_, err := e.client.InsertTx(ctx, tx, WebSubArgs{Topics: topics}, nil)
	return err
}

// WebSubArgs announces changed public feeds to the WebSub hub.
type WebSubArgs struct {
	Topics []string `json:"topics"`
}

// Kind implements river.JobArgs.
func (WebSubArgs) Kind() string { return "websub_publish" }

// InsertOpts: a few retries; a missed ping only delays users until their
// next poll.
func (WebSubArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDefault, MaxAttempts: 5}
}

// WebSubWorker runs feeds.Publisher.Publish.
type WebSubWorker struct {
	river.WorkerDefaults[WebSubArgs]
	Publisher *feeds.Publisher
}

// Work implements river.Worker.
func (w *WebSubWorker) Work(ctx context.Context, job *river.Job[WebSubArgs]) error {
	return w.Publisher.Publish(ctx, job.Args.Topics)
}

// DigestBatch is how many digest ledger rows one send job carries: they are
// built together (one query selects every user's papers, shared papers are
// loaded once), then sent one SMTP transaction each.
const DigestBatch = 50

// EnqueueDigests inserts send jobs for digest ledger rows, DigestBatch rows
// per job, in bulk.
func (e *Enqueuer) EnqueueDigests(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	var params []river.InsertManyParams
	for chunk := range slices.Chunk(ids, DigestBatch) {
		params = append(params, river.InsertManyParams{Args: DigestArgs{DigestIDs: slices.Clone(chunk)}})
	}
	_, err := e.client.InsertManyTx(ctx, tx, params)
	return err
}

// EnqueueDigestRetry inserts a send job for the one ledger row digestID in
// tx, due at at: the retry of a digest that met a temporary failure outside
// any job (notify.Digester.SendNow). It is an ordinary DigestArgs job, so it
// retries and finally gives up like any send job.
func (e *Enqueuer) EnqueueDigestRetry(ctx context.Context, tx pgx.Tx, digestID int64, at time.Time) error {
	_, err := e.client.InsertTx(ctx, tx, DigestArgs{DigestIDs: []int64{digestID}}, &river.InsertOpts{ScheduledAt: at})
	return err
}

// EnqueueInstant inserts instant-alert jobs for users, due at at,
// DigestBatch users per job (the match job schedules the alerts of every
// user with instant alerts that a batch reaches, 100,000 at scale M; a
// job per user cost 14 µs each to insert, more than everything else the
// match job did), in bulk.
func (e *Enqueuer) EnqueueInstant(ctx context.Context, tx pgx.Tx, userIDs []int64, at time.Time) error {
	if len(userIDs) == 0 {
		return nil
	}
	var params []river.InsertManyParams
	for chunk := range slices.Chunk(userIDs, DigestBatch) {
		params = append(params, river.InsertManyParams{Args: InstantArgs{UserIDs: slices.Clone(chunk)}, InsertOpts: &river.InsertOpts{ScheduledAt: at}})
	}
	// COPY: the jobs are not unique, so it cannot meet a conflict.
	_, err := e.client.InsertManyFastTx(ctx, tx, params)
	return err
}

// EnqueueConfirm inserts the confirmation mail of a new address.
func (e *Enqueuer) EnqueueConfirm(ctx context.Context, tx pgx.Tx, userID int64, email string) error {
	_, err := e.client.InsertTx(ctx, tx, ConfirmArgs{UserID: userID, Email: email}, nil)
	return err
}

// ScheduleDigestsArgs is the periodic digest scheduler.
type ScheduleDigestsArgs struct{}

// Kind implements river.JobArgs.
func (ScheduleDigestsArgs) Kind() string { return "digest_schedule" }

// InsertOpts: one scheduler at a time.
func (ScheduleDigestsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDefault, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// ScheduleDigestsWorker runs notify.Digester.Schedule.
type ScheduleDigestsWorker struct {
	river.WorkerDefaults[ScheduleDigestsArgs]
	Digester *notify.Digester
	Logger   *slog.Logger
}

// Work implements river.Worker.
func (w *ScheduleDigestsWorker) Work(ctx context.Context, job *river.Job[ScheduleDigestsArgs]) error {
	n, err := w.Digester.Schedule(ctx)
	if err != nil {
		return failed(err, "queued", n)
	}
	if n > 0 {
		w.Logger.InfoContext(ctx, "digests scheduled", "queued", n)
	}
	return nil
}

// DigestArgs sends digest ledger rows.
type DigestArgs struct {
	DigestIDs []int64 `json:"digest_ids"`
}

// Kind implements river.JobArgs.
func (DigestArgs) Kind() string { return "digest_send" }

// InsertOpts: the mail queue; SMTP 4xx and timeouts are retried 11 times,
// backing off from 5 s to JOB_RETRY_MAX (with the default 1 h, about 3.5 h in all).
func (DigestArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMail, MaxAttempts: 12}
}

// DigestWorker runs notify.Digester.Send.
type DigestWorker struct {
	river.WorkerDefaults[DigestArgs]
	Digester *notify.Digester
	Logger   *slog.Logger
}

// Work implements river.Worker. A retry resends only the rows still
// pending: the ledger makes SendBatch idempotent. When River gives the job
// up the rows still pending are marked failed (onGiveUp), so none is left
// waiting for ever. Each digest's outcome is logged by notify, once.
func (w *DigestWorker) Work(ctx context.Context, job *river.Job[DigestArgs]) error {
	_, err := w.Digester.SendBatch(ctx, job.Args.DigestIDs)
	return onGiveUp(failed(err, "digests", len(job.Args.DigestIDs)), func(ctx context.Context, reason string) error {
		_, err := w.Digester.GiveUp(ctx, job.Args.DigestIDs, reason)
		return err
	})
}

// InstantArgs sends the waiting instant alerts of up to DigestBatch users.
type InstantArgs struct {
	UserIDs []int64 `json:"user_ids"`
	// UserID is the one user of a job queued by an earlier version.
	UserID int64 `json:"user_id,omitempty"`
}

// Kind implements river.JobArgs.
func (InstantArgs) Kind() string { return "digest_instant" }

// InsertOpts: the mail queue.
func (InstantArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMail, MaxAttempts: 12}
}

// InstantWorker runs notify.Digester.SendInstants for a batch of users;
// when River gives the job up, the alerts it reserved and could not send are
// failed (notify.Digester.GiveUp), not left pending.
type InstantWorker struct {
	river.WorkerDefaults[InstantArgs]
	Digester *notify.Digester
}

// Work implements river.Worker.
func (w *InstantWorker) Work(ctx context.Context, job *river.Job[InstantArgs]) error {
	users := job.Args.UserIDs
	if job.Args.UserID != 0 {
		users = append(users, job.Args.UserID)
	}
	outs, err := w.Digester.SendInstants(ctx, users)
	return onGiveUp(failed(err, "users", len(users)), func(ctx context.Context, reason string) error {
		ids := make([]int64, len(outs))
		for i, o := range outs {
			ids[i] = o.DigestID
		}
		_, err := w.Digester.GiveUp(ctx, ids, reason)
		return err
	})
}

// ConfirmArgs mails the double opt-in link of a new address.
type ConfirmArgs struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
}

// Kind implements river.JobArgs.
func (ConfirmArgs) Kind() string { return "email_confirm" }

// InsertOpts: the mail queue.
func (ConfirmArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMail, MaxAttempts: 8}
}

// ConfirmWorker runs notify.Confirmations.SendConfirmation.
type ConfirmWorker struct {
	river.WorkerDefaults[ConfirmArgs]
	Confirmations *notify.Confirmations
}

// Work implements river.Worker.
func (w *ConfirmWorker) Work(ctx context.Context, job *river.Job[ConfirmArgs]) error {
	return w.Confirmations.SendConfirmation(ctx, job.Args.UserID, job.Args.Email)
}

// QueuePush carries channel collections and deliveries, apart from mail so
// a slow receiver never delays digests.
const QueuePush = "push"

// PushWorkers is how many channel jobs one process runs at once; each holds
// at most one outbound request (10 s at most).
const PushWorkers = 10

// EnqueueChannelCollect inserts collection jobs for channels, due at at.
func (e *Enqueuer) EnqueueChannelCollect(ctx context.Context, tx pgx.Tx, channelIDs []int64, at time.Time) error {
	params := make([]river.InsertManyParams, len(channelIDs))
	for i, id := range channelIDs {
		params[i] = river.InsertManyParams{Args: ChannelCollectArgs{ChannelID: id}, InsertOpts: &river.InsertOpts{ScheduledAt: at}}
	}
	_, err := e.client.InsertManyTx(ctx, tx, params)
	return err
}

// EnqueueChannelDeliveries inserts one delivery job per channel event.
func (e *Enqueuer) EnqueueChannelDeliveries(ctx context.Context, tx pgx.Tx, eventIDs []int64) error {
	params := make([]river.InsertManyParams, len(eventIDs))
	for i, id := range eventIDs {
		params[i] = river.InsertManyParams{Args: ChannelDeliverArgs{EventID: id}}
	}
	_, err := e.client.InsertManyTx(ctx, tx, params)
	return err
}

// EnqueueChannelDisabled inserts the owner's mail about a disabled channel.
func (e *Enqueuer) EnqueueChannelDisabled(ctx context.Context, tx pgx.Tx, channelID int64) error {
	_, err := e.client.InsertTx(ctx, tx, ChannelDisabledArgs{ChannelID: channelID}, nil)
	return err
}

// ChannelCollectArgs turns a channel's new matches into events.
type ChannelCollectArgs struct {
	ChannelID int64 `json:"channel_id"`
}

// Kind implements river.JobArgs.
func (ChannelCollectArgs) Kind() string { return "channel_collect" }

// InsertOpts: the push queue; a collection is one transaction, retried.
func (ChannelCollectArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueuePush, MaxAttempts: 10}
}

// ChannelCollectWorker runs channels.Service.Collect.
type ChannelCollectWorker struct {
	river.WorkerDefaults[ChannelCollectArgs]
	Channels *channels.Service
}

// Work implements river.Worker.
func (w *ChannelCollectWorker) Work(ctx context.Context, job *river.Job[ChannelCollectArgs]) error {
	_, err := w.Channels.Collect(ctx, job.Args.ChannelID)
	return failed(err, "channel", job.Args.ChannelID)
}

// ChannelDeliverArgs delivers one channel event.
type ChannelDeliverArgs struct {
	EventID int64 `json:"event_id"`
}

// Kind implements river.JobArgs.
func (ChannelDeliverArgs) Kind() string { return "channel_deliver" }

// ChannelDeliverAttempts covers channels.DisableAfter: backing off from 5 s
// to JOB_RETRY_MAX (default 1 h), 35 attempts span more than 24 h, so the
// channel is disabled (and the event failed) before River gives up.
const ChannelDeliverAttempts = 35

// InsertOpts: the push queue.
func (ChannelDeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueuePush, MaxAttempts: ChannelDeliverAttempts}
}

// ChannelDeliverWorker runs channels.Service.Deliver.
type ChannelDeliverWorker struct {
	river.WorkerDefaults[ChannelDeliverArgs]
	Channels *channels.Service
	Logger   *slog.Logger
}

// Work implements river.Worker. A 429's Retry-After snoozes the job for
// that long (but on the last attempt, which fails); other temporary
// failures return the error for River's back-off. When River gives the job
// up the event is failed in the ledger (onGiveUp).
func (w *ChannelDeliverWorker) Work(ctx context.Context, job *river.Job[ChannelDeliverArgs]) error {
	err := w.Channels.Deliver(ctx, job.Args.EventID)
	var re *channels.RetryError
	if errors.As(err, &re) && re.After > 0 && job.Attempt < job.MaxAttempts {
		w.Logger.WarnContext(ctx, "channel delivery rate limited; snoozed", "event", job.Args.EventID, "after", re.After, "error", err)
		return river.JobSnooze(re.After)
	}
	return onGiveUp(failed(err, "event", job.Args.EventID), func(ctx context.Context, reason string) error {
		return w.Channels.GiveUp(ctx, job.Args.EventID, reason+": "+err.Error())
	})
}

// ChannelDisabledArgs mails the owner of a channel that was disabled.
type ChannelDisabledArgs struct {
	ChannelID int64 `json:"channel_id"`
}

// Kind implements river.JobArgs.
func (ChannelDisabledArgs) Kind() string { return "channel_disabled_mail" }

// InsertOpts: the mail queue.
func (ChannelDisabledArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMail, MaxAttempts: 8}
}

// ChannelDisabledWorker runs channels.Service.MailDisabled.
type ChannelDisabledWorker struct {
	river.WorkerDefaults[ChannelDisabledArgs]
	Channels *channels.Service
}

// Work implements river.Worker.
func (w *ChannelDisabledWorker) Work(ctx context.Context, job *river.Job[ChannelDisabledArgs]) error {
	return w.Channels.MailDisabled(ctx, job.Args.ChannelID)
}

// ChannelScheduleArgs is the periodic scheduler of daily and weekly channels.
type ChannelScheduleArgs struct{}

// Kind implements river.JobArgs.
func (ChannelScheduleArgs) Kind() string { return "channel_schedule" }

// InsertOpts: one scheduler at a time.
func (ChannelScheduleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDefault, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// ChannelScheduleWorker runs channels.Service.ScheduleWindows.
type ChannelScheduleWorker struct {
	river.WorkerDefaults[ChannelScheduleArgs]
	Channels *channels.Service
	Logger   *slog.Logger
}

// Work implements river.Worker.
func (w *ChannelScheduleWorker) Work(ctx context.Context, job *river.Job[ChannelScheduleArgs]) error {
	n, err := w.Channels.ScheduleWindows(ctx)
	if err != nil {
		return failed(err, "queued", n)
	}
	if n > 0 {
		w.Logger.InfoContext(ctx, "channel windows scheduled", "queued", n)
	}
	return nil
}

// ChannelPruneArgs is the periodic pruning of old channel events.
type ChannelPruneArgs struct{}

// Kind implements river.JobArgs.
func (ChannelPruneArgs) Kind() string { return "channel_prune" }

// InsertOpts: one pruner at a time.
func (ChannelPruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDefault, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: oneAtATime}}
}

// ChannelPruneWorker runs channels.Service.Prune.
type ChannelPruneWorker struct {
	river.WorkerDefaults[ChannelPruneArgs]
	Channels *channels.Service
	Logger   *slog.Logger
}

// Work implements river.Worker.
func (w *ChannelPruneWorker) Work(ctx context.Context, job *river.Job[ChannelPruneArgs]) error {
	n, err := w.Channels.Prune(ctx)
	if err != nil {
		return failed(err, "deleted", n)
	}
	if n > 0 {
		w.Logger.InfoContext(ctx, "channel events pruned", "deleted", n)
	}
	return nil
}
