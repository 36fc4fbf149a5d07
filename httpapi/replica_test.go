package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"followfeed/internal/pgcluster"
	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
)

// replicaReads reads followfeed_replica_reads_total{outcome} from /metrics,
// summed over both kinds of read (checked, bounded).
// metrics is the service's /metrics.
func metrics(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func replicaReads(t *testing.T, base, outcome string) int {
	t.Helper()
	body := []byte(metrics(t, base))
	ms := regexp.MustCompile(`followfeed_replica_reads_total\{outcome="`+outcome+`",read="(checked|bounded)"\} (\d+)`).FindAllSubmatch(body, -1)
	if len(ms) != 2 {
		t.Fatalf("want the replica reads metric for %s of both kinds in /metrics, found %d", outcome, len(ms))
	}
	n := 0
	for _, m := range ms {
		v, _ := strconv.Atoi(string(m[2]))
		n += v
	}
	return n
}

// TestReadReplica runs the service on a throwaway primary with a real
// streaming standby (pg_basebackup -R) as DATABASE_REPLICA_URL and shows:
// feeds and follow status are served by the replica; with its replay
// paused and new matches on the primary, no feed is older than its ETag
// (the primary answers); the replica stopped, every request is still 200;
// the replica started again, it is used again.
func TestReadReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, err := pgcluster.New(ctx)
	if errors.Is(err, pgcluster.ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.Destroy)
	standby, err := primary.Standby(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.Destroy)

	env := testapp.Env(t)
	env["DATABASE_URL"] = primary.URL("followfeed")
	env["DATABASE_REPLICA_URL"] = standby.URL("followfeed")
	env["RATE_LIMIT_PER_IP"], env["RATE_LIMIT_PER_USER"] = "0", "0"
	a := testapp.Start(t, env, "serve", "--migrate")
	c := a.Client(t)
	db := openDB(t, primary.URL("followfeed"))
	rep := openDB(t, standby.URL("followfeed"))

	reader := testapp.Token(t, "reader", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	svc := testapp.Token(t, "host", "", "papers:write")
	n := 0
	push := func() string {
		n++
		id := fmt.Sprintf("2401.%05d", n)
		r := c.Do("POST", "/v1/papers", svc, fmt.Sprintf(`[{"arxiv_id": %q, "title": "Paper %d", "authors": "Ann Author",
			"categories": ["cs.LG"], "primary_category": "cs.LG", "published": "2024-01-02"}]`, id, n))
		if r.Status != 200 {
			t.Fatalf("push: %d %s", r.Status, r.Body)
		}
		matchIdle(t, a, db)
		return id
	}
	first := push()
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	public := a.URL + "/feeds/category/cs.LG.atom"

	// fetch GETs a feed (no validators: a full render) and checks it
	// carries want; it returns the ETag.
	fetch := func(url, want string) string {
		t.Helper()
		resp, body := get(t, url)
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %d, want %s in:\n%s", url, resp.StatusCode, want, body)
		}
		return resp.Header.Get("ETag")
	}
	// The replica catches up within moments: the feed is then rendered there.
	waitFor(t, "the replica to serve the feed", func() bool {
		before := replicaReads(t, a.URL, "replica")
		fetch(links.Atom, first)
		return replicaReads(t, a.URL, "replica") > before
	})
	before := replicaReads(t, a.URL, "replica")
	fetch(public, first)
	var st struct{ Following *bool }
	waitFor(t, "the lag monitor's first comparison", func() bool {
		b := replicaReads(t, a.URL, "replica")
		c.Do("GET", "/v1/follows/category/cs.LG", reader, nil).JSON(t, &st)
		return replicaReads(t, a.URL, "replica") > b
	})
	if st.Following == nil || !*st.Following {
		t.Fatalf("follow status from the replica: %+v", st)
	}
	if got := replicaReads(t, a.URL, "replica"); got < before+2 {
		t.Fatalf("public feed not read on the replica: %d replica reads, had %d", got, before)
	}

	// Lag injected: replay paused, a new match on the primary. Every
	// render must show it (the primary answers), with the ETag of the
	// primary's version.
	if _, err := rep.Pool.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	second := push()
	stale := replicaReads(t, a.URL, "stale")
	etag := fetch(links.Atom, second)
	fetch(public, second)
	if got := replicaReads(t, a.URL, "stale"); got < stale+2 {
		t.Errorf("a lagging replica's renders were not counted stale: %d, had %d", got, stale)
	}
	if !strings.Contains(etag, fmt.Sprintf("-%d.", feedVersion(t, db, "reader"))) {
		t.Errorf("ETag %s is not the primary's version %d", etag, feedVersion(t, db, "reader"))
	}
	var onReplica bool
	if err := rep.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM papers WHERE arxiv_id = $1)`, second).Scan(&onReplica); err != nil || onReplica {
		t.Fatalf("the paused replica has the new paper (%v, %v): the test shows nothing", onReplica, err)
	}
	// A follow on the primary: within the lag monitor's bound (two
	// periods of 1 s) follow status reads the primary.
	c.Do("PUT", "/v1/me/follows/category/cs.CV", reader, nil)
	testwait.For(t, 2500*time.Millisecond, "the lag monitor to find the replica behind", func() bool {
		return strings.Contains(metrics(t, a.URL), "\nfollowfeed_replica_lagging 1\n")
	})
	c.Do("GET", "/v1/follows/category/cs.CV", reader, nil).JSON(t, &st)
	if st.Following == nil || !*st.Following {
		t.Errorf("follow status while the replica lags: %+v, want following", st)
	}
	if _, err := rep.Pool.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}

	// The replica stopped: requests are still 200, from the primary.
	rep.Close()
	if err := standby.Stop(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	third := push()
	for range 5 {
		fetch(links.Atom, third)
		fetch(public, third)
		if r := c.Do("GET", "/v1/follows/category/cs.LG", reader, nil); r.Status != 200 {
			t.Fatalf("follow status with the replica down: %d %s", r.Status, r.Body)
		}
	}
	if replicaReads(t, a.URL, "error")+replicaReads(t, a.URL, "down") == 0 {
		t.Error("the replica's failures were not counted")
	}
	if !strings.Contains(a.Logs(), "replica unavailable") {
		t.Error("no warn line about the replica")
	}

	// Started again: after the back-off, renders go to the replica again.
	if err := standby.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replica to be used again", func() bool {
		b := replicaReads(t, a.URL, "replica")
		fetch(links.Atom, third)
		return replicaReads(t, a.URL, "replica") > b
	})
}
