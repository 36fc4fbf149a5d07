package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// River's routine lines drop to debug and its failure lines rise to warn or
// error, with their attributes kept; at LOG_LEVEL=warn only the failures
// remain.
func TestRiverLoggerDemotesRoutineAndPromotesFailures(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		msg   string
		want  string // "" when not logged at level warn
	}{
		{slog.LevelInfo, "producer: Producer job counts", ""},
		{slog.LevelInfo, "JobScheduler: Ran successfully", ""},
		{slog.LevelInfo, "River client started", ""},
		{slog.LevelInfo, "jobexecutor.JobExecutor: Job errored; retrying", "level=WARN"},
		{slog.LevelInfo, "jobexecutor.JobExecutor: Job errored", "level=ERROR"},
		{slog.LevelInfo, "jobexecutor.JobExecutor: Job panicked", "level=WARN"},
		{slog.LevelWarn, "producer: something River warns about", "level=WARN"},
		{slog.LevelError, "Error completing job", "level=ERROR"},
	} {
		var warn, debug bytes.Buffer
		RiverLogger(slog.New(slog.NewTextHandler(&warn, &slog.HandlerOptions{Level: slog.LevelWarn}))).
			With("process", "worker").Log(context.Background(), tc.level, tc.msg, "job_kind", "harvest_arxiv")
		RiverLogger(slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))).
			Log(context.Background(), tc.level, tc.msg, "job_kind", "harvest_arxiv")
		got := warn.String()
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%q logged at warn level: %s", tc.msg, got)
		case tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, "job_kind=harvest_arxiv") || !strings.Contains(got, "process=worker")):
			t.Errorf("%q: %q, want %s with its attributes", tc.msg, got, tc.want)
		case tc.want == "" && !strings.Contains(debug.String(), "level=DEBUG"):
			t.Errorf("%q at debug level: %q, want level=DEBUG", tc.msg, debug.String())
		}
	}
}
