package app_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"followfeed/database"
	"followfeed/internal/testapp"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/internal/testwait"
	"followfeed/worker"

	"github.com/riverqueue/river/rivertype"
)

func fetch(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getURL(t *testing.T, url string) (int, string) {
	req, _ := http.NewRequest("GET", url, nil)
	return fetch(t, req)
}

func TestOperationsEndpoints(t *testing.T) {
	t.Log("hostile: access")
	t.Parallel()
	env := testapp.Env(t)
	env["ADMIN_PASSWORD"] = "correct horse battery"
	a := testapp.Start(t, env)
	if code, body := getURL(t, a.URL+"/readyz"); code != 200 || !strings.Contains(body, "ready") {
		t.Errorf("readyz: %d %s", code, body)
	}
	getURL(t, a.URL+"/v1/follows/category/cs.LG")
	// A pushed paper queues a match job, which this process runs: its run
	// is counted by kind and outcome, with its duration.
	svc := testapp.Token(t, "host", "", "papers:write")
	if r := a.Client(t).Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2301.00001", "title": "T", "primary_category": "cs.LG"}]`); r.Status != 200 {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	var code int
	var body string
	ran := regexp.MustCompile(`(?m)^followfeed_river_job_runs_total\{kind="match_batch",outcome="completed"\} 1$`)
	if !testwait.Until(testjobs.Timeout, func() bool { code, body = getURL(t, a.URL+"/metrics"); return ran.MatchString(body) }) {
		t.Errorf("metrics lack the match job's run by kind and outcome:\n%s", grepLines(body, "followfeed_river_job"))
	}
	for _, want := range []string{`followfeed_http_requests_total{code="200",method="GET",route="GET /v1/follows/{kind}/{id}"}`,
		"followfeed_http_request_duration_seconds_bucket", `followfeed_river_job_run_seconds_count{kind="match_batch"} 1`,
		"followfeed_river_jobs_scrape_ok 1", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code, _ := getURL(t, a.URL+"/admin/jobs/"); code != 401 {
		t.Errorf("job UI without credentials: %d", code)
	}
	req, _ := http.NewRequest("GET", a.URL+"/admin/jobs/", nil)
	req.SetBasicAuth("admin", "wrong")
	if code, _ := fetch(t, req); code != 401 {
		t.Errorf("job UI with a wrong password: %d", code)
	}
	req.SetBasicAuth("admin", "correct horse battery")
	if code, body := fetch(t, req); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("job UI with the credential: %d", code)
	}
}

// TestReadyzReportsAnOutdatedSchema: with the newest migration rolled back
// under the running process, /readyz answers 503 saying to migrate; with
// it re-applied, 200 again.
func TestReadyzReportsAnOutdatedSchema(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t, nil)
	db, err := database.Open(context.Background(), a.DatabaseURL, database.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id, version int64
	if err := db.Pool.QueryRow(context.Background(),
		`DELETE FROM goose_db_version WHERE id = (SELECT max(id) FROM goose_db_version) RETURNING id, version_id`).Scan(&id, &version); err != nil {
		t.Fatal(err)
	}
	if code, body := getURL(t, a.URL+"/readyz"); code != 503 || !strings.Contains(body, "followfeed migrate") {
		t.Errorf("readyz with migration %d rolled back: %d %s", version, code, body)
	}
	if _, err := db.Pool.Exec(context.Background(),
		`INSERT INTO goose_db_version (id, version_id, is_applied) VALUES ($1, $2, true)`, id, version); err != nil {
		t.Fatal(err)
	}
	// The verdict is reused for a second (httpapi's opsCacheFor): the
	// next probe after it sees the current schema.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := getURL(t, a.URL+"/readyz")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz with the schema current again: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond) // the probe's interval
	}
}

// TestMetricsAddrServesMetricsApart: /metrics was public on HTTP_ADDR (a
// security review finding). With METRICS_ADDR it is served there alone,
// and HTTP_ADDR answers 404 for it.
func TestMetricsAddrServesMetricsApart(t *testing.T) {
	t.Log("hostile: access")
	t.Parallel()
	env := testapp.Env(t)
	env["METRICS_ADDR"] = "127.0.0.1:0"
	a := testapp.Start(t, env)
	m := regexp.MustCompile(`msg=metrics .*?\baddr=(\S+)`).FindStringSubmatch(a.Logs())
	if m == nil {
		t.Fatalf("no metrics line in the log:\n%s", a.Logs())
	}
	if code, _ := getURL(t, a.URL+"/metrics"); code != 404 {
		t.Errorf("/metrics on HTTP_ADDR: %d, want 404", code)
	}
	if code, _ := getURL(t, a.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz on HTTP_ADDR: %d", code)
	}
	code, body := getURL(t, "http://"+m[1]+"/metrics")
	for _, want := range []string{"followfeed_river_jobs_scrape_ok 1", "followfeed_http_requests_total", "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("METRICS_ADDR's /metrics: %d, lacks %s", code, want)
		}
	}
	if code, _ := getURL(t, "http://"+m[1]+"/v1/follows/category/cs.LG"); code != 404 {
		t.Errorf("the API on METRICS_ADDR: %d, want 404", code)
	}
}

// TestReadyzReportsALostDatabase: readiness follows the database, fast.
func TestReadyzReportsALostDatabase(t *testing.T) {
	t.Parallel()
	a := testapp.Start(t, nil)
	db := testdb.Admin(t)
	// Kill every connection of the service and forbid new ones.
	name := dbName(a.DatabaseURL)
	if _, err := db.Pool.Exec(context.Background(), `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, strings.Trim(name, `"`)); err != nil {
		t.Fatal(err)
	}
	defer db.Pool.Exec(context.Background(), `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`)
	start := time.Now()
	code, body := getURL(t, a.URL+"/readyz")
	if code != 503 || time.Since(start) > 5*time.Second {
		t.Errorf("readyz with the database gone: %d %s after %s", code, body, time.Since(start))
	}
	if code, _ := getURL(t, a.URL+"/healthz"); code != 200 {
		t.Errorf("healthz: %d", code)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func dbName(url string) string {
	i := strings.LastIndex(url, "/")
	name := url[i+1:]
	if j := strings.IndexByte(name, '?'); j >= 0 {
		name = name[:j]
	}
	return `"` + name + `"`
}

// TestAPIAndWorkerRunApart: `api` serves the API and queues jobs it does not
// run; `worker` runs them and serves only the operations endpoints.
func TestAPIAndWorkerRunApart(t *testing.T) {
	t.Parallel()
	env := testapp.Env(t)
	api := testapp.Start(t, env, "api")
	wenv := map[string]string{}
	for k, v := range env {
		wenv[k] = v
	}
	c := api.Client(t)
	svc := testapp.Token(t, "host", "", "papers:write")
	r := c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2301.00001", "title": "T", "primary_category": "cs.LG"}]`)
	if r.Status != 200 {
		t.Fatalf("ingest on api: %d %s", r.Status, r.Body)
	}
	db, err := database.Open(context.Background(), env["DATABASE_URL"], database.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Nothing signals a job the api process does not run: a second gives a
	// working client (it would be told of the insert at once) its chance.
	time.Sleep(time.Second)
	if jobs := testjobs.List(t, db.Pool, worker.MatchArgs{}.Kind()); len(jobs) != 1 || jobs[0].State != rivertype.JobStateAvailable {
		t.Fatalf("the api process ran the match job, or inserted none: %+v", jobs)
	}
	// Its /metrics counts the job River holds, by kind and state.
	if _, body := getURL(t, api.URL+"/metrics"); !strings.Contains(body, "\nfollowfeed_river_jobs{kind=\"match_batch\",state=\"available\"} 1\n") {
		t.Errorf("the api's metrics lack the waiting match job:\n%s", grepLines(body, "followfeed_river_jobs"))
	}
	w := testapp.Start(t, wenv, "worker")
	w.Jobs().WaitCompleted(t, db.Pool, worker.MatchArgs{}.Kind(), 1)
	if code, _ := getURL(t, w.URL+"/healthz"); code != 200 {
		t.Errorf("worker healthz: %d", code)
	}
	if code, _ := getURL(t, w.URL+"/metrics"); code != 200 {
		t.Errorf("worker metrics: %d", code)
	}
	if code, _ := getURL(t, w.URL+"/v1/follows/category/cs.LG"); code != 404 {
		t.Errorf("worker serves the API: %d", code)
	}
}

// TestWorkersLogTheirRiverClientID: each working process logs the id River
// knows it by, so river_leader's leader_id names a process; when the
// leader stops, the other process's id takes the row.
func TestWorkersLogTheirRiverClientID(t *testing.T) {
	t.Parallel()
	env := testapp.Env(t)
	idRE := regexp.MustCompile(`msg="working jobs" .*?\briver_client_id=(\S+)`)
	var workers []*testapp.App
	var ids []string
	for range 2 {
		w := testapp.Start(t, env, "worker")
		m := idRE.FindStringSubmatch(w.Logs())
		if m == nil {
			t.Fatalf("the worker logged no river_client_id before listening:\n%s", w.Logs())
		}
		workers, ids = append(workers, w), append(ids, m[1])
	}
	if ids[0] == ids[1] {
		t.Fatalf("two processes logged the same River client id %q", ids[0])
	}
	db, err := database.Open(context.Background(), env["DATABASE_URL"], database.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	leader := func() string {
		var id string
		_ = db.Pool.QueryRow(context.Background(), `SELECT leader_id FROM river.river_leader WHERE expires_at > now()`).Scan(&id)
		return id
	}
	// River's elector tries every 5 s (with jitter) until one wins.
	testwait.For(t, 30*time.Second, "a leader among the logged ids", func() bool { l := leader(); return l == ids[0] || l == ids[1] })
	first := 0
	if leader() == ids[1] {
		first = 1
	}
	if err := workers[first].Stop(); err != nil {
		t.Fatal(err)
	}
	// A leader that stops resigns (deletes its row and notifies): the
	// other process takes the lead at its next attempt.
	testwait.For(t, 30*time.Second, "the other process leading", func() bool { return leader() == ids[1-first] })
}

// TestAWorkerPrunesAtStart: a working process runs every retention prune
// when it starts (then hourly), with the retention its configuration
// sets: with DIGEST_RETENTION=14d, a user's digest made 20 days ago that
// is not their newest is gone once digest_prune has run; their newest
// stays.
func TestAWorkerPrunesAtStart(t *testing.T) {
	t.Parallel()
	env := testapp.Env(t)
	env["DIGEST_RETENTION"] = "14d"
	ctx := context.Background()
	db, err := database.Open(ctx, env["DATABASE_URL"], database.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Two sent digests of one user, 20 and 19 days old, in the test's own
	// SQL: no product path writes a ledger row in the past.
	var user int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO users (sub) VALUES ('pruned') RETURNING id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO digests (user_id, period, kind, state, from_seq, to_seq, created_at, updated_at)
		VALUES ($1, 'daily:old', 'daily', 'sent', 0, 1, now() - interval '20 days', now() - interval '20 days'),
		       ($1, 'daily:newest', 'daily', 'sent', 1, 2, now() - interval '19 days', now() - interval '19 days')`, user); err != nil {
		t.Fatal(err)
	}
	w := testapp.Start(t, env, "worker")
	for _, kind := range []string{worker.SeqTimesPruneArgs{}.Kind(), worker.DigestPruneArgs{}.Kind(), worker.HarvestPruneArgs{}.Kind(),
		worker.ConfirmationPruneArgs{}.Kind(), worker.ChannelPruneArgs{}.Kind()} {
		w.Jobs().WaitCompleted(t, db.Pool, kind, 1)
	}
	var periods []string
	if err := db.Pool.QueryRow(ctx, `SELECT array_agg(period ORDER BY id) FROM digests`).Scan(&periods); err != nil {
		t.Fatal(err)
	}
	if len(periods) != 1 || periods[0] != "daily:newest" {
		t.Errorf("digests left %v, want the newest only", periods)
	}
}
