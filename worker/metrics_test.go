package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"

	"followfeed/internal/testdb"
	"followfeed/internal/testwait"
)

// The job metrics come from River's API: the backlog by kind and state from
// its job list (completed jobs left out, every other state counted), the
// runs of a working client from its event subscription, by outcome, with
// their durations.
func TestJobMetricsComeFromRiver(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.DiscardHandler)
	c, err := NewClient(Deps{Pool: db.Pool, Logger: logger, Metrics: reg, Jobs: []Registration{
		Register(&probeWorker{work: func(job *river.Job[probeArgs]) error {
			if job.MaxAttempts == 1 {
				return errors.New("no luck")
			}
			return nil
		}}),
	}}, Settings{TestOnly: true, FetchPollInterval: 200 * time.Millisecond, SoftStop: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(NewJobsCollector(ins))
	if _, err := ins.Insert(ctx, MatchArgs{FromSeq: 1, ToSeq: 2}, &river.InsertOpts{Queue: "elsewhere"}); err != nil { // a queue nobody works
		t.Fatal(err)
	}
	if _, err := ins.Insert(ctx, probeArgs{}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	backlog := `
# HELP followfeed_river_jobs River jobs by kind and state, every state but completed, up to 10000 per state.
# TYPE followfeed_river_jobs gauge
followfeed_river_jobs{kind="match_batch",state="available"} 1
followfeed_river_jobs{kind="test_probe",state="scheduled"} 1
# HELP followfeed_river_jobs_scrape_ok 1 when the River job counts could be read.
# TYPE followfeed_river_jobs_scrape_ok gauge
followfeed_river_jobs_scrape_ok 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(backlog), "followfeed_river_jobs", "followfeed_river_jobs_scrape_ok"); err != nil {
		t.Error(err)
	}

	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Stop(context.Background(), c) })
	for _, attempts := range []int{1, 5, 5} {
		if _, err := ins.Insert(ctx, probeArgs{}, &river.InsertOpts{MaxAttempts: attempts}); err != nil {
			t.Fatal(err)
		}
	}
	runs := `
# HELP followfeed_river_job_runs_total Job runs this process finished, by kind and outcome (completed, retried, discarded, cancelled, snoozed, interrupted).
# TYPE followfeed_river_job_runs_total counter
followfeed_river_job_runs_total{kind="test_probe",outcome="completed"} 2
followfeed_river_job_runs_total{kind="test_probe",outcome="discarded"} 1
`
	if !testwait.Until(30*time.Second, func() bool {
		return testutil.GatherAndCompare(reg, strings.NewReader(runs), "followfeed_river_job_runs_total") == nil
	}) {
		t.Fatalf("the runs as counted after 30 s: %v", testutil.GatherAndCompare(reg, strings.NewReader(runs), "followfeed_river_job_runs_total"))
	}
	if n := testutil.CollectAndCount(reg, "followfeed_river_job_run_seconds", "followfeed_river_job_queue_wait_seconds"); n != 2 {
		t.Errorf("%d duration series, want one of each for test_probe", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP followfeed_river_jobs River jobs by kind and state, every state but completed, up to 10000 per state.
# TYPE followfeed_river_jobs gauge
followfeed_river_jobs{kind="match_batch",state="available"} 1
followfeed_river_jobs{kind="test_probe",state="discarded"} 1
followfeed_river_jobs{kind="test_probe",state="scheduled"} 1
`), "followfeed_river_jobs"); err != nil {
		t.Error(err)
	}
}
