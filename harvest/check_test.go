package harvest_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"followfeed/harvest"
	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/testjobs"
	"followfeed/worker"
)

// A listing whose resumption token expires between two pages starts the
// day over: the day ends complete, and only the refused request and the
// pages before it are asked for twice.
func TestCheckRestartsADayWhoseTokenExpired(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2610", 0, 12, []string{"cs.LG"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 5)
	repo.PlanIdentifiers(oaipmh.FaultBadToken)
	h, health, _ := newRepoHarvester(t, repo)
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := status(t, health, "arxiv-oai:cs")
	if d := day(&s, "2026-11-28"); d == nil || d.Completeness() != "complete" || d.Expected != 12 || d.Records != 12 {
		t.Fatalf("day 2026-11-28: %+v", d)
	}
	// The run's days, the 27th (no records: one request) and the 28th:
	// page 1, page 2 refused, then pages 1 to 3.
	if got := repo.IdentifierLists(); got != 6 {
		t.Errorf("%d ListIdentifiers requests, want 6", got)
	}
}

// A repository that refuses ListIdentifiers (here: badVerb) leaves the
// days unchecked: they are given up, not retried for ever, and the harvest
// run that queued them succeeded.
func TestCheckGivesUpDaysTheRepositoryWillNotList(t *testing.T) {
	t.Parallel()
	h, db := newHarvester(t, recordedOAI())
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM harvest_checks`); n != 0 {
		t.Errorf("%d days still queued", n)
	}
	if n := count(t, db, `SELECT count(*) FROM harvest_days WHERE source = 'arxiv-oai:cs'`); n != 0 {
		t.Errorf("%d days recorded as checked", n)
	}
	if n := count(t, db, `SELECT count(*) FROM harvest_state WHERE source = 'arxiv-oai:cs' AND last_error IS NULL AND last_success_at IS NOT NULL`); n != 1 {
		t.Errorf("the run is not recorded as a success")
	}
}

// With follow-ups the run only queues its days and the check job (a real
// River inserter); a CheckSet turn then stops before its context's
// deadline, halfway, with the rest left for the next turn, which resumes
// there: every page is asked for once.
func TestCheckTurnsEndBeforeTheirDeadlineAndResume(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2610", 0, 12, []string{"cs.LG"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 5)
	repo.Hang = 600 * time.Millisecond
	repo.PlanIdentifiers(oaipmh.FaultHang, oaipmh.FaultHang, oaipmh.FaultHang, oaipmh.FaultHang)
	h, health, db := newRepoHarvester(t, repo)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.QueueFollowUps(worker.NewEnqueuer(ins))
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := repo.IdentifierLists(); got != 0 {
		t.Fatalf("the run listed identifiers %d times itself", got)
	}
	if n := testjobs.Count(t, db.Pool, worker.CheckArgs{}.Kind()); n != 1 {
		t.Fatalf("%d check jobs queued, want 1", n)
	}
	if n := count(t, db, `SELECT count(*) FROM harvest_checks`); n != 2 {
		t.Fatalf("%d days queued, want the run's 2", n)
	}
	// The 27th (one request) and the 28th (three pages): four requests of
	// 600 ms do not fit in 2 s; a turn stops starting them after 1 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	st, err := h.CheckSet(ctx, "cs")
	deadlineHit := ctx.Err()
	cancel()
	if err != nil || deadlineHit != nil || !st.More || st.Requests == 0 || st.Requests >= 4 {
		t.Fatalf("first turn: %+v, %v (context: %v); want some requests, More, before the deadline", st, err, deadlineHit)
	}
	total := st.Requests
	for turns := 0; st.More; turns++ {
		if turns > 10 {
			t.Fatal("the check does not end")
		}
		if st, err = h.CheckSet(context.Background(), "cs"); err != nil {
			t.Fatal(err)
		}
		total += st.Requests
	}
	if total != 4 || repo.IdentifierLists() != 4 {
		t.Errorf("%d requests in all (%d served), want 4: each page once", total, repo.IdentifierLists())
	}
	s := status(t, health, "arxiv-oai:cs")
	if d := day(&s, "2026-11-28"); d == nil || d.Completeness() != "complete" || d.Expected != 12 {
		t.Fatalf("day 2026-11-28: %+v", d)
	}
	if n := count(t, db, `SELECT count(*) FROM harvest_checks`); n != 0 {
		t.Errorf("%d days still queued", n)
	}
}

// RunSince, called again for the same job (the same since), does not run
// again a set an earlier turn finished; a later job does.
func TestRunSinceSkipsSetsAnEarlierTurnFinished(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2610", 0, 4, []string{"cs.LG"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	in, db := newStore(t)
	ts := httptest.NewServer(repo)
	t.Cleanup(ts.Close)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	clock := healthNow
	h := harvest.NewHarvester(db, client, in, []string{"cs", "math"}, nil, func() time.Time { return clock })
	job := clock.Add(-time.Minute) // the job's creation time
	if st, err := h.RunSince(context.Background(), job); err != nil || st.More || st.Pages != 2 {
		t.Fatalf("first turn: %+v, %v; want both sets' page", st, err)
	}
	if st, err := h.RunSince(context.Background(), job); err != nil || st.Pages != 0 {
		t.Fatalf("second turn of the same job: %+v, %v; want no request (both sets done)", st, err)
	}
	clock = clock.Add(time.Hour)
	if st, err := h.RunSince(context.Background(), clock.Add(-time.Second)); err != nil || st.Pages != 2 {
		t.Fatalf("a later job: %+v, %v; want both sets asked again", st, err)
	}
	if got := repo.ServedPages(); got != 4 {
		t.Errorf("%d pages served, want 4", got)
	}
}
