package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// failureLog is the worker middleware of every working client (Config). It
// is the one place a failed attempt is logged, once, whatever the job's
// kind:
//
//   - WARN "job failed; will retry" while River will run the job again,
//   - ERROR "job failed; giving up" after the last attempt (River discards
//     the job), and ERROR "job failed; not retried" when the worker cancelled
//     it (river.JobCancel): in both cases the failure's give-up action runs
//     first (onGiveUp), so the domain closes what the job still held,
//   - "job panicked; …" likewise for a panic, which is recovered here and
//     returned to River as the attempt's error (its stack in the log line and
//     in the error River records), so River retries or discards it as any
//     failed attempt and logs nothing of its own about it.
//
// Each line carries job_kind, job_id, attempt, max_attempts and error, and the
// attributes the worker put on its error (failed). A snooze is not a
// failure; a job stopped by the client's shutdown (River runs it again, no
// attempt spent) is logged at INFO, and a job cancelled from outside
// (Client.JobCancel) is left to River's own WARN line.
type failureLog struct {
	river.MiddlewareDefaults
	logger *slog.Logger
}

// Work implements rivertype.WorkerMiddleware.
func (m *failureLog) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
		err = m.ended(ctx, job, err)
	}()
	return doInner(ctx)
}

// ended logs the attempt of job that returned err and runs the give-up
// action when River will not run the job again; it returns the error River
// records (err, joined with the give-up's own failure if it had one).
func (m *failureLog) ended(ctx context.Context, job *rivertype.JobRow, err error) error {
	var snooze *rivertype.JobSnoozeError
	if err == nil || errors.As(err, &snooze) || errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely) {
		return err
	}
	attrs := []any{"job_kind", job.Kind, "job_id", job.ID, "attempt", job.Attempt, "max_attempts", job.MaxAttempts}
	what := "job failed"
	var p *panicError
	if errors.As(err, &p) {
		what = "job panicked"
		attrs = append(attrs, "error", fmt.Sprintf("panic: %v", p.value), "stack", string(p.stack))
	} else {
		attrs = append(attrs, "error", err)
	}
	var f *failure
	if errors.As(err, &f) {
		attrs = append(attrs, f.attrs...)
	}
	var cancel *rivertype.JobCancelError
	var reason string
	switch {
	case errors.As(err, &cancel):
		what += "; not retried"
		reason = fmt.Sprintf("not retried after attempt %d", job.Attempt)
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		m.logger.InfoContext(ctx, "job stopped by the shutdown; River runs it again", attrs...)
		return err
	case job.Attempt < job.MaxAttempts:
		m.logger.WarnContext(ctx, what+"; will retry", attrs...)
		return err
	default:
		what += "; giving up"
		reason = fmt.Sprintf("gave up after %d attempts", job.Attempt)
	}
	if f != nil && f.giveUp != nil {
		// The job's context may be over (a timeout): the give-up must
		// still reach the database.
		if gerr := f.giveUp(context.WithoutCancel(ctx), reason); gerr != nil {
			attrs = append(attrs, "give_up_error", gerr)
			err = errors.Join(err, fmt.Errorf("giving up: %w", gerr))
		}
	}
	m.logger.ErrorContext(ctx, what, attrs...)
	return err
}

// failure is a failed attempt's error with what failureLog needs beyond the
// error itself: the kind's own attributes for the log line, and the domain
// action to run when River will not retry the job.
type failure struct {
	err    error
	attrs  []any
	giveUp func(ctx context.Context, reason string) error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failed returns err with attrs (key, value pairs as slog takes them) for
// its log line; nil stays nil. The error River records is err's text.
func failed(err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	if f, ok := err.(*failure); ok {
		f.attrs = append(f.attrs, attrs...)
		return f
	}
	return &failure{err: err, attrs: attrs}
}

// onGiveUp returns err with the action failureLog runs, once, when River
// will not run the job again (its last attempt failed, or the worker
// cancelled it); reason says which ("gave up after 12 attempts"). nil stays
// nil. The action is what the job held in the domain (ledger rows it
// reserved) and would otherwise leave pending for ever; a panic carries none.
func onGiveUp(err error, giveUp func(ctx context.Context, reason string) error) error {
	if err == nil {
		return nil
	}
	f, ok := err.(*failure)
	if !ok {
		f = &failure{err: err}
	}
	f.giveUp = giveUp
	return f
}

// panicError is a worker's panic as failureLog returns it to River.
type panicError struct {
	value any
	stack []byte
}

// Error is what River records for the attempt: the value and the stack.
func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", p.value, p.stack) }
