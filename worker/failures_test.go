package worker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"followfeed/internal/testdb"
)

// probeArgs is a job whose worker does what the test says.
type probeArgs struct{}

func (probeArgs) Kind() string { return "test_probe" }

type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	work func(job *river.Job[probeArgs]) error
}

func (w *probeWorker) Work(_ context.Context, job *river.Job[probeArgs]) error { return w.work(job) }

// lines is a concurrency-safe log buffer.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }

// take returns the lines logged since the last take.
func (l *lines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	l.buf.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// probe works probe jobs through rivertest.Worker on Config, as the
// service's clients work jobs, each in a transaction rolled back at the end.
type probe struct {
	t    *testing.T
	log  *lines
	tw   *rivertest.Worker[probeArgs, pgx.Tx]
	tx   pgx.Tx
	work func(job *river.Job[probeArgs]) error
}

func newProbe(t *testing.T) *probe {
	t.Helper()
	db := testdb.New(t)
	p := &probe{t: t, log: &lines{}}
	logger := slog.New(slog.NewTextHandler(p.log, &slog.HandlerOptions{Level: slog.LevelInfo})).With("process", "worker")
	p.tw = rivertest.NewWorker(t, riverpgxv5.New(nil), Config(logger, Settings{}),
		&probeWorker{work: func(job *river.Job[probeArgs]) error { return p.work(job) }})
	tx, err := db.Pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	p.tx = tx
	return p
}

// run works the job at attempt (of maxAttempts) with work and returns
// River's result and the log lines of the attempt.
func (p *probe) run(attempt, maxAttempts int, work func(job *river.Job[probeArgs]) error) (*rivertest.WorkResult, []string) {
	p.t.Helper()
	p.work = work
	ctx := context.Background()
	// The error returned is the attempt's (rivertest returns what its
	// error handler saw); the tests read River's record of it.
	res, _ := p.tw.Work(ctx, p.t, p.tx, probeArgs{}, &river.InsertOpts{MaxAttempts: maxAttempts})
	if attempt > 1 {
		if res.EventKind != river.EventKindJobFailed {
			p.t.Fatalf("attempt 1: %s; want a failure", res.EventKind)
		}
		p.log.take()
		row := *res.Job
		row.Attempt = attempt - 1
		res, _ = p.tw.WorkJob(ctx, p.t, p.tx, &row)
	}
	if res.EventKind != river.EventKindJobSnoozed && res.Job.Attempt != attempt { // a snooze gives the attempt back
		p.t.Fatalf("worked attempt %d, want %d", res.Job.Attempt, attempt)
	}
	return res, p.log.take()
}

// one fails the test unless lines is one line holding every want.
func one(t *testing.T, what string, lines []string, want ...string) {
	t.Helper()
	if len(lines) != 1 {
		t.Fatalf("%s: %d log lines, want 1:\n%s", what, len(lines), strings.Join(lines, "\n"))
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("%s: the line lacks %s:\n%s", what, w, lines[0])
		}
	}
}

// Every failed attempt is logged once, by failureLog: WARN while River
// retries, ERROR with the give-up action run once when River gives the job
// up, each with the job's kind, id, attempt, the error and the worker's
// own attributes; River's own "Job errored" lines stay out of the log.
func TestAFailedAttemptIsLoggedOnceAndTheLastGivesUp(t *testing.T) {
	t.Parallel()
	p := newProbe(t)
	var reasons []string
	fail := func(job *river.Job[probeArgs]) error {
		return onGiveUp(failed(errors.New("upstream answered 503"), "source", "arxiv-oai"), func(ctx context.Context, reason string) error {
			if ctx.Err() != nil {
				t.Errorf("the give-up's context is over: %v", ctx.Err())
			}
			reasons = append(reasons, reason)
			return nil
		})
	}
	res, log := p.run(1, 3, fail)
	one(t, "attempt 1 of 3", log, "level=WARN", `msg="job failed; will retry"`, "process=worker", "job_kind=test_probe",
		"attempt=1", "max_attempts=3", `error="upstream answered 503"`, "source=arxiv-oai")
	if res.EventKind != river.EventKindJobFailed || res.Job.State == rivertype.JobStateDiscarded || len(reasons) != 0 {
		t.Fatalf("attempt 1 of 3: %s %s, give-ups %v; want a retry and no give-up", res.EventKind, res.Job.State, reasons)
	}
	if got := res.Job.Errors[0].Error; got != "upstream answered 503" {
		t.Errorf("River recorded %q, want the worker's error", got)
	}

	res, log = p.run(3, 3, fail)
	one(t, "attempt 3 of 3", log, "level=ERROR", `msg="job failed; giving up"`, "attempt=3", "max_attempts=3", "source=arxiv-oai")
	if res.Job.State != rivertype.JobStateDiscarded || len(reasons) != 1 || reasons[0] != "gave up after 3 attempts" {
		t.Fatalf("attempt 3 of 3: %s, give-ups %v; want discarded after one give-up", res.Job.State, reasons)
	}

	// A give-up that fails says so in the line and in River's record.
	res, log = p.run(1, 1, func(*river.Job[probeArgs]) error {
		return onGiveUp(errors.New("smtp timeout"), func(context.Context, string) error { return errors.New("database gone") })
	})
	one(t, "a failed give-up", log, "level=ERROR", `give_up_error="database gone"`)
	if got := res.Job.Errors[len(res.Job.Errors)-1].Error; !strings.Contains(got, "smtp timeout") || !strings.Contains(got, "giving up: database gone") {
		t.Errorf("River recorded %q, want both errors", got)
	}
}

// A panic is recovered by failureLog and returned to River as the
// attempt's error, stack included: WARN "job panicked; will retry", then
// ERROR at the last attempt, and nothing from River itself.
func TestAPanicIsLoggedOnceLikeAFailure(t *testing.T) {
	t.Parallel()
	p := newProbe(t)
	boom := func(*river.Job[probeArgs]) error { panic("index out of range") }
	res, log := p.run(1, 2, boom)
	one(t, "a panic at attempt 1 of 2", log, "level=WARN", `msg="job panicked; will retry"`, `error="panic: index out of range"`,
		"stack=", "failures_test.go")
	if res.EventKind != river.EventKindJobFailed || !strings.HasPrefix(res.Job.Errors[0].Error, "panic: index out of range\n") ||
		!strings.Contains(res.Job.Errors[0].Error, "failures_test.go") {
		t.Fatalf("River's record of the panic: %s %+v", res.EventKind, res.Job.Errors)
	}
	_, log = p.run(2, 2, boom)
	one(t, "a panic at the last attempt", log, "level=ERROR", `msg="job panicked; giving up"`)
}

// A job the worker cancels (river.JobCancel) is given up at once: ERROR
// "not retried", its give-up run; snoozes and successes log nothing.
func TestACancelledJobIsGivenUpAndSnoozesAreNotFailures(t *testing.T) {
	t.Parallel()
	p := newProbe(t)
	var reasons []string
	res, log := p.run(1, 10, func(*river.Job[probeArgs]) error {
		return river.JobCancel(onGiveUp(failed(errors.New("response too large"), "source", "arxiv-oai"), func(_ context.Context, reason string) error {
			reasons = append(reasons, reason)
			return nil
		}))
	})
	one(t, "a cancelled job", log, "level=ERROR", `msg="job failed; not retried"`, "source=arxiv-oai", "response too large")
	if res.Job.State != rivertype.JobStateCancelled || len(reasons) != 1 || reasons[0] != "not retried after attempt 1" {
		t.Fatalf("cancelled job: %s, give-ups %v", res.Job.State, reasons)
	}
	for name, work := range map[string]func(*river.Job[probeArgs]) error{
		"a snooze":  func(*river.Job[probeArgs]) error { return river.JobSnooze(time.Minute) },
		"a success": func(*river.Job[probeArgs]) error { return nil },
	} {
		if _, log := p.run(1, 3, work); len(log) != 0 {
			t.Errorf("%s logged %q", name, log)
		}
	}
}
