package worker

import (
	"context"
	"log/slog"
	"strings"
)

// RiverLogger is logger as River should get it: River's routine INFO lines
// ("Producer job counts" every few seconds, "JobScheduler: Ran
// successfully", leadership and start/stop notices) become DEBUG, while
// the lines that say a job failed become WARN ("Job errored; retrying",
// "Job panicked", "Notifier unhealthy") or ERROR ("Job errored" after the
// last attempt: River gives the job up). WARN and ERROR lines stay as they
// are. NewClient and NewInserter apply it; the River UI is not affected.
// A nil logger stays nil (River then uses its default).
func RiverLogger(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return nil
	}
	return slog.New(&riverHandler{inner: logger.Handler()})
}

type riverHandler struct{ inner slog.Handler }

// riverLevel is the level a River record of level l and message msg is
// logged at.
func riverLevel(l slog.Level, msg string) slog.Level {
	if l != slog.LevelInfo {
		return l
	}
	switch {
	case strings.HasSuffix(msg, ": Job errored"):
		return slog.LevelError // the last attempt failed: River discards the job
	case strings.Contains(msg, "Job errored"), strings.Contains(msg, "Job panicked"),
		strings.Contains(msg, "unhealthy"), strings.Contains(msg, "Hard stop"):
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// Enabled implements slog.Handler: an INFO record may become WARN, so it is
// wanted whenever WARN is.
func (h *riverHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		return h.inner.Enabled(ctx, slog.LevelDebug) || h.inner.Enabled(ctx, slog.LevelWarn)
	}
	return h.inner.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *riverHandler) Handle(ctx context.Context, r slog.Record) error {
	l := riverLevel(r.Level, r.Message)
	if l == r.Level {
		return h.inner.Handle(ctx, r)
	}
	if !h.inner.Enabled(ctx, l) {
		return nil
	}
	nr := slog.NewRecord(r.Time, l, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(a)
		return true
	})
	return h.inner.Handle(ctx, nr)
}

// WithAttrs implements slog.Handler.
func (h *riverHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &riverHandler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *riverHandler) WithGroup(name string) slog.Handler {
	return &riverHandler{inner: h.inner.WithGroup(name)}
}
