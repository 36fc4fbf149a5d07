package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"followfeed/database"
	"followfeed/harvest"
	"followfeed/internal/fake/oaipmh"
	fakeopenalex "followfeed/internal/fake/openalex"
	"followfeed/internal/testjobs"
	"followfeed/internal/testpaper"
	"followfeed/internal/testwait"
	"followfeed/match"
	"followfeed/migrations"
	"followfeed/openalex"
	"followfeed/worker"
)

var discard = slog.New(slog.DiscardHandler)

// harvestJobs is a working River client with the harvest, check,
// enrichment and match workers on a fresh database, harvesting repo.
type harvestJobs struct {
	db        *database.DB
	client    *river.Client[pgx.Tx]
	harvester *harvest.Harvester
	health    *harvest.Health
	openalex  *fakeopenalex.Server
	events    *testjobs.Events
}

func startHarvestJobs(t *testing.T, repo *oaipmh.Repository, jobTimeout time.Duration, checkRequests int) *harvestJobs {
	t.Helper()
	store, db := testpaper.NewStore(t)
	oai := httptest.NewServer(repo)
	t.Cleanup(oai.Close)
	oa := fakeopenalex.New(nil)
	oaSrv := httptest.NewServer(oa)
	t.Cleanup(oaSrv.Close)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: oai.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	h := harvest.NewHarvester(db, client, store, []string{"cs"}, nil, nil)
	h.CheckRequests = checkRequests
	enricher := harvest.NewEnricher(store, openalex.NewClient(openalex.Config{BaseURL: oaSrv.URL, MaxRetries: -1}),
		harvest.DefaultEnrichPolicy, nil, nil)
	rc, err := worker.NewClient(worker.Deps{Pool: db.Pool, Logger: discard, Jobs: []worker.Registration{
		worker.Register(&worker.HarvestWorker{Harvester: h, Logger: discard}),
		worker.Register(&worker.CheckWorker{Harvester: h, Logger: discard}),
		worker.Register(&worker.EnrichWorker{Enricher: enricher, Logger: discard}),
		worker.Register(&worker.MatchWorker{Match: match.NewService(db), Logger: discard}),
	}}, worker.Settings{TestOnly: true, FetchPollInterval: 200 * time.Millisecond, JobTimeout: jobTimeout,
		RescueStuckAfter: jobTimeout + time.Minute, RetryMax: time.Second, SoftStop: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h.QueueFollowUps(worker.NewEnqueuer(rc))
	events := testjobs.Subscribe(t, rc)
	if err := rc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = worker.Stop(ctx, rc)
	})
	return &harvestJobs{db: db, client: rc, harvester: h, health: harvest.NewHealth(db, []string{"cs"}, nil, nil), openalex: oa, events: events}
}

// harvest queues one harvest run.
func (j *harvestJobs) harvest(t *testing.T) {
	t.Helper()
	if _, err := j.client.Insert(context.Background(), worker.HarvestArgs{}, nil); err != nil {
		t.Fatal(err)
	}
}

// status is the set's source status.
func (j *harvestJobs) status(t *testing.T) harvest.SourceStatus {
	t.Helper()
	st, err := j.health.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}

// completed waits until n jobs of kind have completed.
func (j *harvestJobs) completed(t *testing.T, kind string, n int) {
	t.Helper()
	j.events.Wait(t, river.EventKindJobCompleted, kind, n)
}

// dayOf is the status of date, or nil.
func dayOf(s harvest.SourceStatus, date string) *harvest.DayStatus {
	for i := range s.Days {
		if s.Days[i].Day.Format(time.DateOnly) == date {
			return &s.Days[i]
		}
	}
	return nil
}

// cleanRun fails the test unless job completed at its first attempt.
func cleanRun(t *testing.T, job *rivertype.JobRow) {
	t.Helper()
	if job.State != rivertype.JobStateCompleted || job.Attempt != 1 || len(job.Errors) != 0 {
		t.Fatalf("%s #%d: %s after %d attempts, errors %+v; want completed at the first", job.Kind, job.ID, job.State, job.Attempt, job.Errors)
	}
}

// The completeness check is a job of its own: the harvest job completes
// at its first attempt having checked nothing; the run's transaction
// queued one harvest_check job for the set and an enrichment pass, both
// worked afterwards; the check takes turns of two requests (the same job,
// snoozed in between), each resuming where the last stopped, so every
// ListIdentifiers page is asked for once.
func TestCompletenessCheckRunsAsItsOwnJob(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC().Format(time.DateOnly)
	recs := oaipmh.MakeRecords("2607", 0, 30, []string{"cs.LG"}, today)
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	j := startHarvestJobs(t, repo, 20*time.Second, 2)
	j.harvest(t)
	j.completed(t, worker.CheckArgs{}.Kind(), 1)

	harvests := testjobs.List(t, j.db.Pool, worker.HarvestArgs{}.Kind())
	checks := testjobs.List(t, j.db.Pool, worker.CheckArgs{}.Kind())
	if len(harvests) != 1 || len(checks) != 1 {
		t.Fatalf("%d harvest and %d check jobs, want one each", len(harvests), len(checks))
	}
	cleanRun(t, harvests[0])
	cleanRun(t, checks[0])
	var args worker.CheckArgs
	if err := json.Unmarshal(checks[0].EncodedArgs, &args); err != nil || args.Set != "cs" {
		t.Fatalf("check args %s (%v), want set cs", checks[0].EncodedArgs, err)
	}
	if !checks[0].AttemptedAt.After(*harvests[0].FinalizedAt) && !checks[0].AttemptedAt.Equal(*harvests[0].FinalizedAt) {
		t.Errorf("the check ran at %v, before the harvest job ended at %v", checks[0].AttemptedAt, *harvests[0].FinalizedAt)
	}
	// Three days (the first run looks 48 h back): two without records
	// (one request each) and today's three pages: 5 requests in turns of 2.
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(checks[0].Metadata, &meta)
	if got := repo.IdentifierLists(); got != 5 {
		t.Errorf("%d ListIdentifiers requests, want 5 (each page once)", got)
	}
	if meta.Snoozes != 2 {
		t.Errorf("the check snoozed %d times, want 2 (turns of 2 of 5 requests)", meta.Snoozes)
	}
	s := j.status(t)
	if d := dayOf(s, today); d == nil || d.Completeness() != "complete" || d.Expected != 30 || d.Records != 30 {
		t.Fatalf("today: %+v", d)
	}
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM harvest_checks`); n != 0 {
		t.Errorf("%d days still queued for the check", n)
	}
	j.completed(t, worker.EnrichArgs{}.Kind(), 1)
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM papers WHERE enrich_attempts = 1`); n != 30 {
		t.Errorf("%d papers looked up in OpenAlex, want 30", n)
	}
}

// A check whose ListIdentifiers hangs past the job timeout fails its own
// job, which River retries; the harvest job completed at its first attempt,
// the set's status stays ok (its days "not checked" meanwhile) and the
// enrichment the run queued runs. Once the repository answers, the retried
// check resumes and completes.
func TestACheckThatTimesOutNoLongerFailsTheHarvest(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC().Format(time.DateOnly)
	recs := oaipmh.MakeRecords("2608", 0, 12, []string{"cs.LG"}, today)
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 5)
	repo.Hang = time.Minute // until the job's timeout cancels the request
	repo.PlanIdentifiers(oaipmh.FaultHang, oaipmh.FaultHang)
	j := startHarvestJobs(t, repo, 5*time.Second, harvest.DefaultCheckRequests)
	j.harvest(t)
	j.completed(t, worker.HarvestArgs{}.Kind(), 1)
	j.completed(t, worker.EnrichArgs{}.Kind(), 1)
	j.events.Wait(t, river.EventKindJobFailed, worker.CheckArgs{}.Kind(), 1)
	cleanRun(t, testjobs.List(t, j.db.Pool, worker.HarvestArgs{}.Kind())[0])
	s := j.status(t)
	if s.Failing() || s.LastSuccess.IsZero() || s.Errors != 0 {
		t.Fatalf("the set's status after a failed check: %+v", s)
	}
	if d := dayOf(s, today); d != nil && d.Expected >= 0 {
		t.Fatalf("today was checked while the repository hung: %+v", d)
	}
	if behind, err := j.health.HarvestBehind(context.Background()); err != nil || behind != "" {
		t.Fatalf("HarvestBehind = %q, %v; want current", behind, err)
	}
	check := testjobs.List(t, j.db.Pool, worker.CheckArgs{}.Kind())[0]
	if !strings.Contains(check.Errors[0].Error, "context deadline exceeded") {
		t.Errorf("the check's error: %q, want its timeout", check.Errors[0].Error)
	}

	j.completed(t, worker.CheckArgs{}.Kind(), 1)
	check = testjobs.List(t, j.db.Pool, worker.CheckArgs{}.Kind())[0]
	if check.Attempt < 3 || len(check.Errors) != 2 {
		t.Errorf("the check completed at attempt %d with %d errors, want after the two hung requests", check.Attempt, len(check.Errors))
	}
	if d := dayOf(j.status(t), today); d == nil || d.Completeness() != "complete" || d.Expected != 12 {
		t.Fatalf("today after the retried check: %+v", d)
	}
	cleanRun(t, testjobs.List(t, j.db.Pool, worker.HarvestArgs{}.Kind())[0])
}

// A day the check finds incomplete is harvested again by the check job
// (the status says "n missing, re-harvesting" meanwhile) without holding
// up the normal run: a harvest queued while the check still has turns to
// go runs before the check ends. The check is queued once per set however
// many runs ask for it while it is under way.
func TestAnIncompleteDayIsReharvestedWithoutStarvingTheRun(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC()
	var recs []oaipmh.Record
	for d := range 6 {
		recs = append(recs, oaipmh.MakeRecords("2609", len(recs), 4, []string{"cs.LG"}, today.Add(-time.Duration(d)*24*time.Hour).Format(time.DateOnly))...)
	}
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	repo.Omit(1, recs[22].ID, recs[23].ID) // of the oldest day, left out of the first run's list
	j := startHarvestJobs(t, repo, 20*time.Second, 1)
	j.harvester.Lookback = 5 * 24 * time.Hour
	j.harvest(t)
	j.completed(t, worker.HarvestArgs{}.Kind(), 1)
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM papers`); n != len(recs)-2 {
		t.Fatalf("the run stored %d papers, want all but the 2 left out", n)
	}
	oldest := today.Add(-5 * 24 * time.Hour).Format(time.DateOnly)
	testwait.For(t, time.Minute, "the oldest day found incomplete", func() bool {
		d := dayOf(j.status(t), oldest)
		return d != nil && d.Completeness() == "2 missing, re-harvesting"
	})
	// A second run while the check has days to go: it is not held up
	// behind them, and it queues no second check.
	j.harvest(t)
	j.completed(t, worker.HarvestArgs{}.Kind(), 2)
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM harvest_checks`); n == 0 {
		t.Fatal("the check ended before the second run: nothing shows the run was not held up")
	}
	if n := testjobs.Count(t, j.db.Pool, worker.CheckArgs{}.Kind()); n != 1 {
		t.Fatalf("%d check jobs, want one for the set", n)
	}
	j.completed(t, worker.CheckArgs{}.Kind(), 1)
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM papers`); n != len(recs) {
		t.Fatalf("%d papers after the check, want all %d", n, len(recs))
	}
	s := j.status(t)
	for d := 5; d >= 0; d-- {
		date := today.Add(-time.Duration(d) * 24 * time.Hour).Format(time.DateOnly)
		if day := dayOf(s, date); day == nil || day.Completeness() != "complete" || day.Expected != 4 || day.Records != 4 {
			t.Errorf("%s: %+v", date, day)
		}
	}
	for _, job := range testjobs.List(t, j.db.Pool, worker.HarvestArgs{}.Kind()) {
		cleanRun(t, job)
	}
}

// EnqueueCheck queues one check per set: a second for a set with one
// waiting is skipped, another set gets its own.
func TestEnqueueCheckIsUniquePerSet(t *testing.T) {
	t.Parallel()
	_, db := testpaper.NewStore(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := worker.NewEnqueuer(ins)
	for _, set := range []string{"cs", "cs", "math", "cs"} {
		if err := db.InTx(context.Background(), func(tx pgx.Tx) error { return e.EnqueueCheck(context.Background(), tx, set) }); err != nil {
			t.Fatal(err)
		}
	}
	opts := &rivertest.RequireInsertedOpts{Schema: migrations.RiverSchema, Queue: worker.QueueHarvest, Priority: 2}
	jobs := rivertest.RequireManyInserted(context.Background(), t, riverpgxv5.New(db.Pool),
		[]rivertest.ExpectedJob{{Args: worker.CheckArgs{}, Opts: opts}, {Args: worker.CheckArgs{}, Opts: opts}})
	var sets []string
	for _, job := range jobs {
		var args worker.CheckArgs
		if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
			t.Fatal(err)
		}
		sets = append(sets, args.Set)
	}
	if !slices.Equal(sets, []string{"cs", "math"}) {
		t.Fatalf("check jobs for sets %v, want one each for cs and math", sets)
	}
}

// A harvest run that does not fit in its job's time takes turns: each
// stops starting pages after half the timeout and snoozes, the next resumes
// at the page where it stopped, and the job completes at its first attempt
// with every page asked for once (before, the run hit the deadline mid-page,
// failed its attempt and resumed on a retry).
func TestALongHarvestRunSnoozesBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC().Format(time.DateOnly)
	recs := oaipmh.MakeRecords("2608", 0, 50, []string{"cs.LG"}, today)
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	// Five pages of 400 ms do not fit in one turn of a 2 s job (turns
	// start no page after 1 s).
	repo.Delay = 400 * time.Millisecond
	j := startHarvestJobs(t, repo, 2*time.Second, 2)
	j.harvest(t)
	j.completed(t, worker.HarvestArgs{}.Kind(), 1)

	harvests := testjobs.List(t, j.db.Pool, worker.HarvestArgs{}.Kind())
	if len(harvests) != 1 {
		t.Fatalf("%d harvest jobs, want 1", len(harvests))
	}
	cleanRun(t, harvests[0])
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(harvests[0].Metadata, &meta)
	if meta.Snoozes < 1 {
		t.Errorf("the run snoozed %d times, want at least once (5 pages of 400 ms, turns of 1 s)", meta.Snoozes)
	}
	if got := repo.ServedPages(); got != 5 {
		t.Errorf("%d ListRecords pages served, want 5 (each once)", got)
	}
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM papers`); n != 50 {
		t.Errorf("%d papers stored, want 50", n)
	}
	if n := testpaper.Count(t, j.db, `SELECT count(*) FROM harvest_state WHERE source = 'arxiv-oai:cs' AND resumption_token IS NULL AND last_success_at IS NOT NULL`); n != 1 {
		t.Errorf("the set's run is not recorded as done")
	}
}
