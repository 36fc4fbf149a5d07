package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// River gets its WARN and ERROR lines through, with their attributes, and
// none of its INFO or DEBUG lines, whatever they say; a logger at DEBUG
// gets everything River logs.
func TestRiverLoggerKeepsWarningsAndErrorsOnly(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		msg   string
		want  string // "" when not logged at level info
	}{
		{slog.LevelDebug, "jobexecutor.JobExecutor: Job snoozed", ""},
		{slog.LevelInfo, "producer: Producer job counts", ""},
		{slog.LevelInfo, "River client started", ""},
		{slog.LevelInfo, "jobexecutor.JobExecutor: Job errored; retrying", ""},
		{slog.LevelWarn, "jobexecutor.JobExecutor: Job appears to be stuck", "level=WARN"},
		{slog.LevelError, "jobexecutor.JobExecutor: Error completing job", "level=ERROR"},
	} {
		var info, debug bytes.Buffer
		RiverLogger(slog.New(slog.NewTextHandler(&info, &slog.HandlerOptions{Level: slog.LevelInfo}))).
			With("process", "worker").Log(context.Background(), tc.level, tc.msg, "job_kind", "harvest_arxiv")
		RiverLogger(slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))).
			Log(context.Background(), tc.level, tc.msg, "job_kind", "harvest_arxiv")
		got := info.String()
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%q logged at info level: %s", tc.msg, got)
		case tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, "job_kind=harvest_arxiv") || !strings.Contains(got, "process=worker")):
			t.Errorf("%q: %q, want %s with its attributes", tc.msg, got, tc.want)
		case !strings.Contains(debug.String(), "level="+strings.ToUpper(tc.level.String())):
			t.Errorf("%q at debug level: %q, want it as River logged it", tc.msg, debug.String())
		}
	}
	if RiverLogger(nil) != nil {
		t.Error("a nil logger is not left to River's default")
	}
}
