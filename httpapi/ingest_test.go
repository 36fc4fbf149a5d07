package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"followfeed/database"
	"followfeed/internal/testapp"
	"followfeed/internal/testjobs"
	"followfeed/internal/testwait"
	"followfeed/worker"
)

func openDB(t *testing.T, url string) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), url, database.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func feedVersion(t *testing.T, db *database.DB, sub string) int64 {
	var v int64
	db.Pool.QueryRow(context.Background(), `SELECT f.version FROM user_feeds f JOIN users u ON u.id = f.user_id WHERE u.sub = $1`, sub).Scan(&v)
	return v
}

// matchIdle waits until every match job queued so far has run (its
// effects: instant alerts and channels, WebSub pings; feeds show a batch's
// papers as soon as its ingest commits).
func matchIdle(t *testing.T, a *testapp.App, db *database.DB) {
	t.Helper()
	a.Jobs().WaitIdle(t, db.Pool, worker.MatchArgs{}.Kind())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 15*time.Second, what, cond)
}

// TestPushedPapersReachFollowersThroughTheMatchJob: POST /v1/papers commits
// papers with their match job; the River worker of the same process runs it
// (instant alerts, channels); the follower's feed changes its ETag with
// the ingest, a stranger's does not.
func TestPushedPapersReachFollowersThroughTheMatchJob(t *testing.T) {
	t.Parallel()
	a, c := start(t)
	db := openDB(t, a.DatabaseURL)
	reader, stranger := testapp.Token(t, "reader", ""), testapp.Token(t, "stranger", "")
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", reader, nil)
	c.Do("PUT", "/v1/me/follows/category/astro-ph.GA", stranger, nil)
	etag := func(tok string) string {
		var links feedLinks
		c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &links)
		resp, _ := get(t, links.Atom)
		return resp.Header.Get("ETag")
	}
	readerBefore, strangerBefore := etag(reader), etag(stranger)

	svc := testapp.Token(t, "host-site", "", "papers:write")
	body := `{"arxiv_id": "2202.02326v2", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}` + "\n"
	r := c.Do("POST", "/v1/papers", svc, body, "Content-Type", "application/x-ndjson")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"new":1`) {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)
	if etag(reader) == readerBefore {
		t.Error("the follower's feed kept its ETag")
	}
	if etag(stranger) != strangerBefore {
		t.Error("a stranger's feed changed")
	}
	r = c.Do("POST", "/v1/papers", svc, "[{]")
	if r.Status != 400 {
		t.Errorf("broken JSON: %d", r.Status)
	}
	r = c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "nope"}]`)
	var p problem
	r.JSON(t, &p)
	if r.Status != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "arxiv_id" {
		t.Errorf("invalid paper: %d %s", r.Status, r.Body)
	}
}

// TestPeriodicHarvestRunsAsARiverJob boots the service with a harvest
// interval: the periodic job runs on start against a recorded OAI-PMH
// server, stores the papers, and their match job runs.
func TestPeriodicHarvestRunsAsARiverJob(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../harvest/testdata/oai/listrecords-arXiv-complete-list.xml")
	if err != nil {
		t.Fatal(err)
	}
	oai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	defer oai.Close()
	openalex := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"meta":{"count":0},"results":[]}`))
	}))
	defer openalex.Close()
	env := testapp.Env(t)
	env["HARVEST_INTERVAL"] = "1h"
	env["ARXIV_OAI_URL"] = oai.URL
	env["OPENALEX_URL"] = openalex.URL
	env["ARXIV_SETS"] = "cs"
	a := testapp.Start(t, env)
	db := openDB(t, a.DatabaseURL)
	count := func(sql string) int {
		var n int
		db.Pool.QueryRow(context.Background(), sql).Scan(&n)
		return n
	}
	waitFor(t, "the harvest job", func() bool { return count(`SELECT count(*) FROM papers`) == 2 })
	// At least one: the test is that the harvest's match job ran, not
	// how many the process's start-up jobs made.
	a.Jobs().Until(t, "a completed match job", []string{worker.MatchArgs{}.Kind()}, func() bool {
		return testjobs.Count(t, db.Pool, worker.MatchArgs{}.Kind(), rivertype.JobStateCompleted) >= 1
	})
	// The harvest records how far it got after it stored the papers (and
	// their match job ran): its state is read once its job completed.
	a.Jobs().Until(t, "a completed harvest job", []string{worker.HarvestArgs{}.Kind()}, func() bool {
		return testjobs.Count(t, db.Pool, worker.HarvestArgs{}.Kind(), rivertype.JobStateCompleted) >= 1
	})
	var state string
	db.Pool.QueryRow(context.Background(), `SELECT source FROM harvest_state WHERE harvested_until IS NOT NULL`).Scan(&state)
	if state != "arxiv-oai:cs" {
		t.Errorf("harvest state %q", state)
	}
}
