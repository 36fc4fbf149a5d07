package harvest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/harvest"
	"followfeed/internal/fake/oaipmh"
	"followfeed/openalex"
	"followfeed/paper"
)

// healthNow is the harvests' clock: Sunday 29 November 2026, noon UTC; the
// first run starts 48 h back, on the 27th.
var healthNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newRepoHarvester(t *testing.T, repo *oaipmh.Repository) (*harvest.Harvester, *harvest.Health, *database.DB) {
	t.Helper()
	in, db := newStore(t)
	ts := httptest.NewServer(repo)
	t.Cleanup(ts.Close)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	now := func() time.Time { return healthNow }
	return harvest.NewHarvester(db, client, in, []string{"cs"}, nil, now), harvest.NewHealth(db, []string{"cs"}, nil, now), db
}

func day(s *harvest.SourceStatus, date string) *harvest.DayStatus {
	for i := range s.Days {
		if s.Days[i].Day.Format(time.DateOnly) == date {
			return &s.Days[i]
		}
	}
	return nil
}

func status(t *testing.T, h *harvest.Health, source string) harvest.SourceStatus {
	t.Helper()
	st, err := h.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Source == source {
			return s
		}
	}
	t.Fatalf("no status of %s in %+v", source, st)
	return harvest.SourceStatus{}
}

// A repository that leaves records out of a ListRecords run is caught by
// the day's ListIdentifiers: the day is harvested again, and the status says
// "complete" with the repository's count.
func TestCompletenessCheckReharvestsWhatTheListLeftOut(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2611", 0, 12, []string{"cs.LG", "cs.CL"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 5)
	repo.Omit(1, recs[3].ID, recs[9].ID)
	h, health, db := newRepoHarvester(t, repo)
	st, err := h.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.New != 10 {
		t.Fatalf("the run itself stored %d records, want the 10 listed: %+v", st.New, st)
	}
	if got := count(t, db, `SELECT count(*) FROM papers`); got != 12 {
		t.Fatalf("%d papers after the check, want all 12", got)
	}
	s := status(t, health, "arxiv-oai:cs")
	d := day(&s, "2026-11-28")
	if d == nil || d.Expected != 12 || d.Missing != 0 || d.Records != 12 || d.Completeness() != "complete" {
		t.Fatalf("day 2026-11-28: %+v", d)
	}
	// The days of the run without records are checked too: nothing expected.
	if d := day(&s, "2026-11-27"); d == nil || d.Expected != 0 || d.Completeness() != "complete" {
		t.Fatalf("day 2026-11-27: %+v", d)
	}
	if s.Failing() || !s.LastSuccess.Equal(healthNow) || s.Lag != 0 {
		t.Fatalf("status: %+v", s)
	}
}

// Records the repository lists but cannot serve stay missing: the status
// says how many, and the next run tries again (and succeeds once they are
// served).
func TestCompletenessReportsWhatIsStillMissingAndRetries(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2612", 0, 6, []string{"cs.LG"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	repo.Withhold(recs[0].ID, recs[1].ID)
	h, health, _ := newRepoHarvester(t, repo)
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := status(t, health, "arxiv-oai:cs")
	if d := day(&s, "2026-11-28"); d == nil || d.Completeness() != "2 missing, re-harvesting" || d.Records != 4 || d.Expected != 6 {
		t.Fatalf("day 2026-11-28: %+v", d)
	}
	repo.Withhold()
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = status(t, health, "arxiv-oai:cs")
	if d := day(&s, "2026-11-28"); d == nil || d.Completeness() != "complete" || d.Records != 6 {
		t.Fatalf("day 2026-11-28 after the next run: %+v", d)
	}
}

// A failing set is in the status with its error, counted, and makes the
// harvest "behind"; the next success clears the error but keeps the count.
func TestHealthRecordsFailuresAndSuccesses(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2613", 0, 3, []string{"cs.LG"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	repo.Plan(0, oaipmh.Fault500)
	h, health, _ := newRepoHarvester(t, repo)
	if _, err := h.RunOnce(context.Background()); err == nil {
		t.Fatal("the run succeeded against an HTTP 500")
	}
	s := status(t, health, "arxiv-oai:cs")
	if !s.Failing() || !strings.Contains(s.LastError, "HTTP 500") || s.Errors != 1 || s.Lag != -1 || !s.LastErrorAt.Equal(healthNow) {
		t.Fatalf("status after a failure: %+v", s)
	}
	if msg, err := health.HarvestBehind(context.Background()); err != nil || !strings.Contains(msg, "failing") {
		t.Fatalf("HarvestBehind = %q, %v", msg, err)
	}
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = status(t, health, "arxiv-oai:cs")
	if s.Failing() || s.Errors != 1 || s.LastSuccess.IsZero() || s.HarvestedUntil.Format(time.DateOnly) != "2026-11-28" {
		t.Fatalf("status after the recovery: %+v", s)
	}
	if msg, err := health.HarvestBehind(context.Background()); err != nil || msg != "" {
		t.Fatalf("HarvestBehind after the recovery = %q, %v", msg, err)
	}
	// Pushes and OpenAlex are sources too.
	health.RecordPush(context.Background(), 7, nil)
	health.RecordPush(context.Background(), 0, errors.New("record 2: title is required"))
	p := status(t, health, "push")
	if !p.Failing() || p.Errors != 1 || p.LastSuccess.IsZero() || len(p.Days) != 1 || p.Days[0].Records != 7 || p.Days[0].Completeness() != "not checked" {
		t.Fatalf("push status: %+v", p)
	}
	if o := status(t, health, "openalex"); o.Lag != -1 || o.Failing() {
		t.Fatalf("openalex never ran: %+v", o)
	}
}

// A set whose last success is more than 12 hours old is behind.
func TestHarvestBehindAfterTwelveHours(t *testing.T) {
	t.Parallel()
	recs := oaipmh.MakeRecords("2614", 0, 2, []string{"cs.LG"}, "2026-11-28")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	in, db := newStore(t)
	ts := httptest.NewServer(repo)
	t.Cleanup(ts.Close)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	h := harvest.NewHarvester(db, client, in, []string{"cs"}, nil, func() time.Time { return healthNow })
	if _, err := h.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	later := healthNow.Add(13 * time.Hour)
	health := harvest.NewHealth(db, []string{"cs"}, nil, func() time.Time { return later })
	msg, err := health.HarvestBehind(context.Background())
	if err != nil || msg != "The arXiv harvest is 13 hours behind" {
		t.Fatalf("HarvestBehind = %q, %v", msg, err)
	}
	early := harvest.NewHealth(db, []string{"cs"}, nil, func() time.Time { return healthNow.Add(11 * time.Hour) })
	if msg, _ := early.HarvestBehind(context.Background()); msg != "" {
		t.Fatalf("11 hours: %q", msg)
	}
}

// A source's last error is public (/v1/status): it is a fixed sentence
// for the kind of failure, never the error's text. A repository that
// cannot be reached says why without its address, after one request; a
// push that failed on a database error (a real one: an integer out of
// range) says "internal error", and one refused as invalid says so.
func TestLastErrorIsAPublicSentence(t *testing.T) {
	t.Parallel()
	t.Log("hostile: leaks")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	in, db := newStore(t)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: "http://" + addr + "/oai", PageDelay: -1})
	now := func() time.Time { return healthNow }
	h := harvest.NewHarvester(db, client, in, []string{"cs"}, nil, now)
	health := harvest.NewHealth(db, []string{"cs"}, nil, now)
	if _, err := h.RunOnce(context.Background()); !errors.Is(err, harvest.ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("run against a closed port: %v, want ErrUnreachable naming %s", err, addr)
	}
	s := status(t, health, "arxiv-oai:cs")
	if want := "the source cannot be reached: it refused the connection (nothing listens on that port)"; s.LastError != want {
		t.Errorf("last error %q, want %q", s.LastError, want)
	}

	_, sqlErr := db.Pool.Exec(context.Background(), `SELECT 2147483648::int`)
	if sqlErr == nil {
		t.Fatal("no SQL error")
	}
	health.RecordPush(context.Background(), 0, fmt.Errorf("storing 1 papers: %w", sqlErr))
	if p := status(t, health, "push"); p.LastError != "internal error (the service's log has the details)" {
		t.Errorf("push after a database error: %q", p.LastError)
	}
	_, invalid := harvest.DecodePush(strings.NewReader(`{"arxiv_id": "2202.02326", "title": "x", "published": "<script>"}`))
	health.RecordPush(context.Background(), 0, invalid)
	if p := status(t, health, "push"); p.LastError != "refused: invalid input (the response to the request listed the problems)" || p.Errors != 2 {
		t.Errorf("push refused as invalid: %+v", p)
	}
}

// TestOpenAlexNotAskedIsNoSuccess: an enrichment run with nothing to look
// up asks OpenAlex nothing and records nothing, so a fresh service's
// openalex source stays "never" (not asked yet) instead of turning ok; the
// first run that asks records its success, and a later run that asks
// nothing leaves that success's time as it was.
func TestOpenAlexNotAskedIsNoSuccess(t *testing.T) {
	t.Parallel()
	in, db := newStore(t)
	ctx := context.Background()
	// The real clock, a minute on: papers are due for enrichment from the
	// time they are stored.
	start := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	now := start
	clock := func() time.Time { return now }
	health := harvest.NewHealth(db, []string{"cs"}, nil, clock)
	client := openalex.NewClient(openalex.Config{BaseURL: openAlexServer(t, "2202.02326").URL, MaxRetries: -1})
	e := harvest.NewEnricher(in, client, harvest.EnrichPolicy{FirstRetry: time.Hour, MaxAttempts: 2, Batch: 100}, nil, clock)
	e.ReportTo(health)
	if st, err := e.RunOnce(ctx); err != nil || st.Looked != 0 {
		t.Fatalf("a run with nothing due: %+v %v", st, err)
	}
	if o := status(t, health, "openalex"); o.Lag != -1 || !o.LastSuccess.IsZero() || o.Failing() {
		t.Fatalf("openalex was never asked, yet: %+v", o)
	}
	if _, err := in.Ingest(ctx, []paper.Paper{testPaper("2202.02326")}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	if st, err := e.RunOnce(ctx); err != nil || st.Looked != 1 {
		t.Fatalf("a run with a paper due: %+v %v", st, err)
	}
	asked := status(t, health, "openalex")
	if !asked.LastSuccess.Equal(start) || asked.Lag != 0 {
		t.Fatalf("after OpenAlex answered: %+v", asked)
	}
	now = now.Add(time.Hour)
	if st, err := e.RunOnce(ctx); err != nil || st.Looked != 0 {
		t.Fatalf("a later run with nothing due: %+v %v", st, err)
	}
	if o := status(t, health, "openalex"); !o.LastSuccess.Equal(start) || o.Lag != time.Hour {
		t.Fatalf("a run that asked nothing moved the last success: %+v", o)
	}
}
