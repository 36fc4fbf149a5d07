package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// probe is one request of the postgres-restart traffic.
type probe struct {
	class      string
	start, end time.Time
	status     int // 0: transport error
	retryAfter bool
	err        string
}

func (p probe) ok() bool {
	switch p.class {
	case "feed":
		return p.status == 200 || p.status == 304
	case "follow":
		return p.status == 200 || p.status == 201 || p.status == 204
	default:
		return p.status == 200
	}
}

// acceptable: a success, or a fast 503 with Retry-After.
func (p probe) acceptable() bool {
	return p.ok() || (p.status == http.StatusServiceUnavailable && p.retryAfter)
}

func (p probe) dur() time.Duration { return p.end.Sub(p.start) }

// outage is one restart of PostgreSQL.
type outage struct {
	name   string
	args   []string
	t0, t1 time.Time
	output string // the script's output
}

func runPostgresRestart(ctx context.Context, e *env, res *Result) error {
	const (
		clients   = 4
		failFast  = 2 * time.Second
		recoverBy = 15 * time.Second
	)
	res.What = `A throwaway PostgreSQL cluster (initdb into /tmp as the postgres user, its own port from 54400, torn down at the end) holds a fresh, migrated database; ` + "`followfeed serve`" + ` runs on it with 12 users and 60 pushed papers. Four clients in the soak process send light traffic (private feed polls, follow-status reads with and without a token, follow/unfollow), one request every 25 ms each, and a prober asks ` + "`/readyz`" + ` every 200 ms; every request's start, latency and status is recorded. PostgreSQL is restarted twice with scripts/pg-restart.sh: first a plain ` + "`pg_ctl restart -m fast`" + `, then with ` + "`--down 5`" + ` (fast stop, 5 s down, start). A request "during the outage" is one whose lifetime overlaps the time from the script's start to its return (the server accepting connections again).`
	res.Policy = `**Policies checked.** Database errors that mean "unavailable" (connection refused or reset, admin shutdown, cannot connect now, timeouts) are answered 503 with Retry-After, never 500; the pool connects with a 5 s timeout and health-checks idle connections every 5 s, so a dead server fails requests fast instead of hanging them, and the same process serves again once the server is back, without a restart; /readyz is 503 while the database does not answer. Verdict: every request during an outage finishes within 2 s as a success or a 503 with Retry-After; /readyz answers 503 during the 5 s outage; requests and /readyz are 200 again within 15 s of the server's return, from the same process.`

	script, err := e.scriptPath("pg-restart.sh")
	if err != nil {
		return err
	}
	cl, db, done, err := newClusterDB(ctx, e, "postgres-restart")
	if err != nil {
		return err
	}
	defer done()
	srv, err := startProc(ctx, e.opts.Exe, "serve", e.baseEnv(db.url), e.logPath("postgres-restart", "serve"))
	if err != nil {
		return err
	}
	defer srv.stop()
	pid := srv.pid
	c := newClient(srv.base, clients+2, 10*time.Second)
	defer c.close()

	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	type user struct{ token, feed string }
	users := make([]user, 12)
	for i := range users {
		tok, err := mint(fmt.Sprintf("soak-pg-%d", i), fmt.Sprintf("pg%d@soak.example", i))
		if err != nil {
			return err
		}
		if _, err := c.must(ctx, "PUT", "/v1/me/follows/category/"+cats[i%len(cats)], tok, nil, 201, 200); err != nil {
			return err
		}
		feed, err := c.feedPath(ctx, tok, "atom")
		if err != nil {
			return err
		}
		users[i] = user{tok, feed}
	}
	if err := pushPapers(ctx, c, "2912", 60, cats); err != nil {
		return err
	}

	var mu sync.Mutex
	var probes []probe
	record := func(p probe) {
		mu.Lock()
		probes = append(probes, p)
		mu.Unlock()
	}
	send := func(class, method, path, token string) {
		start := time.Now()
		r := c.do(ctx, method, path, token, nil, nil)
		p := probe{class: class, start: start, end: time.Now(), status: r.status, retryAfter: r.header.Get("Retry-After") != ""}
		if r.err != nil {
			p.status, p.err = 0, r.err.Error()
		}
		record(p)
	}
	tctx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(e.opts.Seed, uint64(i)))
			for tctx.Err() == nil {
				u := users[rng.IntN(len(users))]
				cat := cats[rng.IntN(len(cats))]
				switch v := rng.Float64(); {
				case v < 0.5:
					send("feed", "GET", u.feed, "")
				case v < 0.8:
					tok := ""
					if rng.IntN(2) == 0 {
						tok = u.token
					}
					send("status", "GET", "/v1/follows/category/"+cat, tok)
				default:
					method := "PUT"
					if rng.IntN(2) == 0 {
						method = "DELETE"
					}
					send("follow", method, "/v1/me/follows/category/"+cat, u.token)
				}
				sleep(tctx, 25*time.Millisecond)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for tctx.Err() == nil {
			send("readyz", "GET", "/readyz", "")
			sleep(tctx, 200*time.Millisecond)
		}
	}()

	outages := []*outage{
		{name: "pg_ctl restart -m fast", args: []string{"--datadir", cl.Data}},
		{name: "fast stop, 5 s down, start", args: []string{"--datadir", cl.Data, "--down", "5"}},
	}
	sleep(ctx, 5*time.Second)
	var runErr error
	for i, o := range outages {
		o.t0 = time.Now()
		out, err := exec.CommandContext(ctx, script, o.args...).CombinedOutput()
		o.t1 = time.Now()
		o.output = strings.TrimSpace(string(out))
		if err != nil {
			runErr = fmt.Errorf("scripts/pg-restart.sh %s: %v: %s", strings.Join(o.args, " "), err, lastBytes(o.output, 300))
			break
		}
		e.logf("postgres-restart: %s took %s", o.name, secs(o.t1.Sub(o.t0)))
		if i == 0 {
			sleep(ctx, 15*time.Second)
		} else {
			sleep(ctx, 20*time.Second)
		}
	}
	stopTraffic()
	wg.Wait()
	if runErr != nil {
		return runErr
	}
	// The workers inside serve must have recovered too: a paper pushed now
	// must get its match job run.
	var maxJob int64
	if err := db.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM river.river_job`).Scan(&maxJob); err != nil {
		return err
	}
	pushed := time.Now()
	jobErr := pushPapers(ctx, c, "2912", 61, cats) // one new paper: 2912.00061
	var jobsOK bool
	if jobErr == nil {
		jobsOK, jobErr = waitFor(ctx, 60*time.Second, 500*time.Millisecond, func() (bool, error) {
			n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE id > $1 AND kind = 'match_batch' AND state = 'completed'`, maxJob)
			return n > 0, err
		})
	}
	res.check("background jobs run again after the restarts", jobsOK && jobErr == nil,
		"a paper pushed after the second restart had its match job completed by the same process %s later %s", secs(time.Since(pushed)), errText(jobErr, ""))
	alive := srv.alive()
	mu.Lock()
	all := slices.Clone(probes)
	mu.Unlock()
	slices.SortFunc(all, func(a, b probe) int { return a.start.Compare(b.start) })

	var summaries []string
	for i, o := range outages {
		var during []probe
		for _, p := range all {
			if !p.start.After(o.t1) && !p.end.Before(o.t0) {
				during = append(during, p)
			}
		}
		statuses := map[string]int{}
		var worst time.Duration
		var slow, bad, ready503, ready200 int
		var badDetail []string
		for _, p := range during {
			key := fmt.Sprint(p.status)
			if p.status == 0 {
				key = "transport error"
			}
			if p.class == "readyz" {
				statuses["/readyz "+key]++
				switch p.status {
				case 503:
					ready503++
				case 200:
					ready200++
				}
				continue
			}
			statuses[key]++
			worst = max(worst, p.dur())
			if p.dur() > failFast {
				slow++
			}
			if !p.acceptable() {
				bad++
				if len(badDetail) < 3 {
					badDetail = append(badDetail, fmt.Sprintf("%s %d %s", p.class, p.status, p.err))
				}
			}
		}
		// Recovery: the end of the last failed request (or /readyz) that
		// started after the outage began, measured from the server's return.
		lastFail := o.t1
		next := time.Now()
		if i+1 < len(outages) {
			next = outages[i+1].t0
		}
		for _, p := range all {
			if p.start.Before(o.t0) || !p.start.Before(next) {
				continue
			}
			if !p.ok() && p.end.After(lastFail) {
				lastFail = p.end
			}
		}
		recovery := lastFail.Sub(o.t1)
		okAfter := map[string]bool{}
		for _, p := range all {
			if p.start.After(lastFail) && p.start.Before(next) && p.ok() {
				okAfter[p.class] = true
			}
		}
		firstOK := time.Duration(-1)
		for _, p := range all {
			if p.class != "readyz" && p.start.After(o.t1) && p.ok() {
				firstOK = p.end.Sub(o.t1)
				break
			}
		}
		recovered := recovery <= recoverBy && okAfter["feed"] && okAfter["status"] && okAfter["follow"] && okAfter["readyz"]
		label := fmt.Sprintf("restart %d (%s)", i+1, o.name)
		res.figure(label+": outage", "%s (from the script's start until the server accepted connections again)", secs(o.t1.Sub(o.t0)))
		res.figure(label+": requests during it", "%d; %s", len(during), formatCounts(statuses))
		res.figure(label+": worst latency during it", "%s", ms(worst))
		res.figure(label+": time to recover", "last failure ended %s after the server was back; first success %s after it", secs(max(recovery, 0)), ms(firstOK))
		res.check(label+": requests fail fast", slow == 0 && bad == 0,
			"%d API requests overlapped the outage: %d slower than %s, %d neither a success nor a 503 with Retry-After %s; worst %s",
			len(during)-ready503-ready200, slow, failFast, bad, strings.Join(badDetail, "; "), ms(worst))
		if i == 1 {
			res.check(label+": /readyz 503 during the outage", ready503 > 0, "/readyz answered 503 %d times and 200 %d times during the outage", ready503, ready200)
		} else {
			res.figure(label+": /readyz during it", "503 ×%d, 200 ×%d", ready503, ready200)
		}
		res.check(label+": recovers by itself", recovered, "every request and /readyz succeeded again %s after the server was back (bound %s), in the same process",
			secs(max(recovery, 0)), recoverBy)
		summaries = append(summaries, fmt.Sprintf("restart %d: outage %s, worst %s, recovered in %s", i+1, secs(o.t1.Sub(o.t0)), ms(worst), secs(max(recovery, 0))))
	}
	total := map[string]int{}
	for _, p := range all {
		total[fmt.Sprint(p.status)]++
	}
	res.figure("all requests of the run", "%d; by status: %s", len(all), formatCounts(total))
	res.check("same serve process throughout", alive && srv.pid == pid, "pid %d alive at the end: %v", pid, alive)
	res.Summary = strings.Join(summaries, "; ")
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
