package worker

import (
	"context"
	"log/slog"
)

// RiverLogger is logger as River gets it (NewClient, NewInserter): River's
// own lines at WARN and above only, unless logger is enabled at DEBUG
// (LOG_LEVEL=debug), when River gets logger unchanged.
//
// River's INFO lines are its routine (client started and stopped,
// "Producer job counts", maintenance services' "Ran successfully",
// leadership changes) and its per-attempt "Job errored" / "Job panicked"
// lines; an operator needs none of them: the failed attempts are logged once
// each by failureLog, with the job's own attributes, at WARN while River
// retries and ERROR when it gives up. What River logs at WARN and ERROR is
// what an operator must see and nothing else says: database errors of its
// producers, completer, elector and maintenance services, a job stuck past
// its timeout, a soft stop that had to cancel jobs, dropped notifications,
// a remote cancellation. A nil logger stays nil (River then uses its
// default). The River UI is not affected.
func RiverLogger(logger *slog.Logger) *slog.Logger {
	if logger == nil || logger.Enabled(context.Background(), slog.LevelDebug) {
		return logger
	}
	return slog.New(&minLevel{inner: logger.Handler(), min: slog.LevelWarn})
}

// minLevel passes on the records of level min and above to inner.
type minLevel struct {
	inner slog.Handler
	min   slog.Level
}

// Enabled implements slog.Handler.
func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.inner.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *minLevel) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

// WithAttrs implements slog.Handler.
func (h *minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &minLevel{inner: h.inner.WithAttrs(attrs), min: h.min}
}

// WithGroup implements slog.Handler.
func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{inner: h.inner.WithGroup(name), min: h.min}
}
