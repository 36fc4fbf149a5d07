package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/riverqueue/river/rivertype"

	"followfeed/harvest"
	"followfeed/internal/browser"
	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
	"followfeed/internal/fake/recorder"
	"followfeed/internal/testapp"
	"followfeed/internal/testjobs"
	"followfeed/worker"
)

type statusDoc struct {
	Sources []struct {
		Source        string  `json:"source"`
		State         string  `json:"state"`
		LastError     *string `json:"last_error"`
		Errors        int     `json:"errors"`
		LagSeconds    *int    `json:"lag_seconds"`
		LastSuccessAt *string `json:"last_success_at"`
		Days          []struct {
			Day          string `json:"day"`
			Records      int    `json:"records"`
			Expected     *int   `json:"expected"`
			Missing      *int   `json:"missing"`
			Completeness string `json:"completeness"`
		} `json:"days"`
	} `json:"sources"`
	HarvestBehind    *string `json:"harvest_behind"`
	NextAnnouncement *string `json:"next_announcement"`
}

func getStatus(t *testing.T, c *testapp.Client) statusDoc {
	t.Helper()
	r := c.Do("GET", "/v1/status", "", nil)
	if r.Status != 200 || r.Header.Get("Cache-Control") != "public, max-age=30" {
		t.Fatalf("GET /v1/status: %d %s %s", r.Status, r.Header.Get("Cache-Control"), r.Body)
	}
	var doc statusDoc
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// inflating serves an OAI-PMH response of 64 KiB on the wire that inflates
// past the 64 MiB cap, counting the requests.
func inflating(t *testing.T, requests *atomic.Int32) *httptest.Server {
	bomb := recorder.GzipBomb(t, []byte(`<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords>`),
		harvest.OAIMaxBodyBytes+(1<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		recorder.ServeGzip(w, "text/xml", bomb)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The whole service against an OAI-PMH endpoint whose response inflates
// past the cap: one request, the job cancelled rather than retried, the
// failure at ERROR/WARN naming the source, and in GET /v1/status and
// /metrics; a push is a source too. River's routine lines stay out of an
// INFO log.
func TestSourceStatusShowsAFailedHarvestAndPushes(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	var requests atomic.Int32
	up := inflating(t, &requests)
	a, c := start(t, "ARXIV_OAI_URL", up.URL, "HARVEST_INTERVAL", "1h")
	db := openDB(t, a.DatabaseURL)
	a.Jobs().Until(t, "the harvest job to be cancelled", []string{worker.HarvestArgs{}.Kind()}, func() bool {
		return testjobs.Count(t, db.Pool, worker.HarvestArgs{}.Kind(), rivertype.JobStateCancelled) == 1
	})
	// Cancelled is final: River runs the job no more, so the count is too.
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests to the OAI-PMH endpoint, want 1 (no retries)", n)
	}
	doc := getStatus(t, c)
	if len(doc.Sources) != 3 || doc.Sources[0].Source != "arxiv-oai:cs" || doc.Sources[1].Source != "openalex" || doc.Sources[2].Source != "push" {
		t.Fatalf("sources: %+v", doc.Sources)
	}
	cs := doc.Sources[0]
	if cs.State != "failing" || cs.LastError == nil || *cs.LastError != "the source's response exceeded the size cap" || cs.Errors != 1 || cs.LagSeconds != nil {
		t.Fatalf("arxiv-oai:cs: %+v", cs)
	}
	if doc.HarvestBehind == nil || !strings.Contains(*doc.HarvestBehind, "failing") || doc.NextAnnouncement == nil {
		t.Fatalf("harvest_behind %v, next_announcement %v", doc.HarvestBehind, doc.NextAnnouncement)
	}

	svc := testapp.Token(t, "host-site", "", "papers:write")
	body := `{"arxiv_id": "2202.02326", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "Mingzhi Wen"}], "categories": ["cs.LG"], "primary_category": "cs.LG"}`
	if r := c.Do("POST", "/v1/papers", svc, body); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/v1/papers", svc, `{"arxiv_id": "2202.02327"}`); r.Status != 422 {
		t.Fatalf("invalid push: %d %s", r.Status, r.Body)
	}
	push := getStatus(t, c).Sources[2]
	if push.State != "failing" || push.Errors != 1 || push.LastSuccessAt == nil || len(push.Days) != 1 || push.Days[0].Records != 1 {
		t.Fatalf("push: %+v", push)
	}

	m := string(c.Do("GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		`followfeed_source_errors_total{source="arxiv-oai:cs"} 1`,
		`followfeed_source_failing{source="arxiv-oai:cs"} 1`,
		`followfeed_source_errors_total{source="push"} 1`,
		`followfeed_source_lag_seconds{source="push"}`,
		`followfeed_source_last_success_timestamp_seconds{source="push"}`,
		`followfeed_source_scrape_ok 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(m, `followfeed_source_lag_seconds{source="arxiv-oai:cs"}`) {
		t.Error("a lag for a set that never succeeded")
	}
	if r := c.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Errorf("/readyz is about this process, not the sources: %d %s", r.Status, r.Body)
	}

	logs := a.Logs()
	for _, re := range []string{
		`level=WARN msg="harvest failed" process=serve source=arxiv-oai:cs error=`,
		`level=ERROR msg="job failed; not retried" process=serve job_kind=harvest_arxiv job_id=\d+ attempt=1 max_attempts=10 error=".*exceeds 67108864 bytes.*" source=arxiv-oai `,
	} {
		if !regexp.MustCompile(re).MatchString(logs) {
			t.Errorf("logs lack %s", re)
		}
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "level=INFO") && (strings.Contains(line, "River client") || strings.Contains(line, "Producer") ||
			strings.Contains(line, "JobScheduler") || strings.Contains(line, "elected leader")) {
			t.Errorf("River's routine line at INFO: %s", line)
		}
	}
}

// The /status page in Chromium after a harvest whose list left records out
// that the repository still counts: the set is ok, its day says "2 missing,
// re-harvesting".
func TestStatusPageInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	yesterday := time.Now().UTC().Add(-24 * time.Hour).Format(time.DateOnly)
	recs := oaipmh.MakeRecords("2612", 0, 6, []string{"cs.LG"}, yesterday)
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	repo.Withhold(recs[0].ID, recs[1].ID)
	up := httptest.NewServer(repo)
	t.Cleanup(up.Close)
	// OpenAlex holds its answers until the page has been read: the
	// enrichment the harvest queues has asked it, but no answer has come,
	// so its state is "never" (not asked yet) until the gate opens.
	gate := make(chan struct{})
	works := openalex.New(nil)
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		works.ServeHTTP(w, r)
	}))
	t.Cleanup(oa.Close)
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	a, c := start(t, "ARXIV_OAI_URL", up.URL, "OPENALEX_URL", oa.URL, "HARVEST_INTERVAL", "1h", "RATE_LIMIT_PER_IP", "0")
	waitFor(t, "the completeness check", func() bool {
		d := getStatus(t, c).Sources[0].Days
		for _, day := range d {
			if day.Day == yesterday && day.Completeness == "2 missing, re-harvesting" {
				return true
			}
		}
		return false
	})
	// Only the set has run: OpenAlex was never asked, nothing was pushed.
	for _, src := range getStatus(t, c).Sources {
		want := "never"
		if src.Source == "arxiv-oai:cs" {
			want = "ok"
		}
		if src.State != want {
			t.Errorf("GET /v1/status: %s is %q, want %q", src.Source, src.State, want)
		}
	}
	for _, width := range []int64{390, 1280} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate(a.URL+"/status"), chromedp.WaitVisible("table.days")); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text("main"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Source status", "arxiv-oai:cs", "ok", "2 missing, re-harvesting", "openalex", "push", yesterday} {
			if !strings.Contains(text, want) {
				t.Errorf("the page lacks %q:\n%s", want, text)
			}
		}
		// OpenAlex was never asked and nothing was pushed: not ok.
		states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.state')].map(e => e.closest('h2').id + ': ' + e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(states, ", "); got != "src-arxiv-oai:cs: ok, src-openalex: not asked yet, src-push: nothing pushed yet" {
			t.Errorf("the sources' states read %q", got)
		}
		// Nothing is wider than the screen (it was 55 px wider at 390).
		fitsTheScreen(ctx, t, width)
		b.Screenshot(ctx, t, fmt.Sprintf("status-page-%d", width))
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	// Once OpenAlex answers, it is ok.
	close(gate)
	waitFor(t, "OpenAlex to be ok once it answered", func() bool {
		return getStatus(t, c).Sources[1].State == "ok"
	})
}

// The whole service against an arXiv endpoint that refuses the
// connection: the periodic harvest job's first attempt fails at once (no
// retries inside it; River's back-off schedules the next), and
// GET /v1/status says why in public words, the address only in the log.
func TestPeriodicHarvestOfAnUnreachableRepositoryFailsItsAttemptAtOnce(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	a, c := start(t, "ARXIV_OAI_URL", "http://"+addr+"/oai", "HARVEST_INTERVAL", "1h")
	db := openDB(t, a.DatabaseURL)
	// The first attempt has failed once its error is recorded; River may
	// already be running the next (its first back-off is a second or so),
	// so the job's state is not waited for.
	a.Jobs().Until(t, "the harvest job's first attempt to fail", []string{worker.HarvestArgs{}.Kind()}, func() bool {
		jobs := testjobs.List(t, db.Pool, worker.HarvestArgs{}.Kind())
		return len(jobs) == 1 && len(jobs[0].Errors) >= 1
	})
	cs := getStatus(t, c).Sources[0]
	if cs.Source != "arxiv-oai:cs" || cs.State != "failing" || cs.LastError == nil ||
		*cs.LastError != "the source cannot be reached: it refused the connection (nothing listens on that port)" {
		t.Fatalf("arxiv-oai:cs: %+v", cs)
	}
	if logs := a.Logs(); strings.Contains(logs, "upstream request failed; retrying") || !strings.Contains(logs, "cannot reach "+addr) {
		t.Errorf("the log retried, or does not name the address:\n%s", logs)
	}
}
