package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"followfeed/bench"
)

// Sizes of the replica scenario.
const (
	rpUsers     = 36 // six per category
	rpClients   = 4
	rpPerBatch  = 3 // papers per pushed batch, in three of the six categories
	rpCheckNew  = 20
	rpPrefix    = "2909"
	rpThinkTime = 15 * time.Millisecond
)

// rpUser is a user of the replica scenario: one category followed, and
// the last feed it was served (the ETag and the papers of that 200).
type rpUser struct {
	sub, category, token, feed string

	mu   sync.Mutex
	etag string
	ids  map[string]bool
}

// promiseBatch is one pushed batch whose match job the soak saw complete.
type promiseBatch struct {
	ids       map[string][]string // arXiv ids by category
	matchedAt time.Time
}

// promises are the batches matched so far, in the order they were matched.
// A batch whose match job had completed before a request started is in
// every answer to that request: the ETag is derived on the primary after
// the request started, when the batch's papers and key rows (and the match
// high seq with them) were committed, so content older than that would be
// older than what the ETag promises.
type promises struct {
	mu      sync.Mutex
	batches []promiseBatch
}

func (p *promises) add(b promiseBatch) {
	p.mu.Lock()
	p.batches = append(p.batches, b)
	p.mu.Unlock()
}

// expected returns the newest (up to n) ids of category cat among the
// batches matched before t, newest first.
func (p *promises) expected(cat string, t time.Time, n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i := len(p.batches) - 1; i >= 0 && len(out) < n; i-- {
		b := p.batches[i]
		if !b.matchedAt.Before(t) {
			continue
		}
		ids := b.ids[cat]
		for j := len(ids) - 1; j >= 0 && len(out) < n; j-- {
			out = append(out, ids[j])
		}
	}
	return out
}

// missingFrom returns the ids of want that have lacks.
func missingFrom(have map[string]bool, want []string) []string {
	var out []string
	for _, id := range want {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// rpPhaseStats is what the clients saw in one phase.
type rpPhaseStats struct {
	name       string
	start, end time.Time
	atStart    metrics // the api's counters when the phase began
	metrics    metrics // their increase over the phase

	full, cond304, cond200, status, pushes int
	renderDurs                             []time.Duration
	failed, stale, stale304, wrongStatus   int
	promisedChecked                        int
	examples                               []string
}

// add sums o's counts into s (the totals of the run), with up to five of
// its examples.
func (s *rpPhaseStats) add(o *rpPhaseStats) {
	for _, p := range [][2]*int{{&s.full, &o.full}, {&s.cond304, &o.cond304}, {&s.cond200, &o.cond200}, {&s.status, &o.status},
		{&s.pushes, &o.pushes}, {&s.failed, &o.failed}, {&s.stale, &o.stale}, {&s.stale304, &o.stale304},
		{&s.wrongStatus, &o.wrongStatus}, {&s.promisedChecked, &o.promisedChecked}} {
		*p[0] += *p[1]
	}
	for _, x := range o.examples {
		if len(s.examples) < 5 {
			s.examples = append(s.examples, o.name+": "+x)
		}
	}
}

func (s *rpPhaseStats) example(format string, args ...any) {
	if len(s.examples) < 3 {
		s.examples = append(s.examples, fmt.Sprintf(format, args...))
	}
}

func runReplica(ctx context.Context, e *env, res *Result) error {
	type phaseDef struct {
		name string
		d    time.Duration
	}
	phaseDefs := []phaseDef{
		{"replica healthy", 40 * time.Second},
		{"replay paused", 40 * time.Second},
		{"replay resumed", 20 * time.Second},
		{"replica stopped", 30 * time.Second},
		{"replica started again", 35 * time.Second},
	}
	res.What = fmt.Sprintf(`A throwaway primary cluster (initdb under /tmp, its own port) holds a fresh, migrated database; a streaming hot standby of it is made with `+"`pg_basebackup -R`"+` and started on a port of its own. `+"`followfeed api`"+` runs with DATABASE_URL on the primary and DATABASE_REPLICA_URL on the standby; `+"`followfeed worker`"+` runs the match jobs on the primary. %d users (six per category) follow one of six categories each. While the scenario runs, the soak pushes a batch of %d papers (three of the six categories) through `+"`POST /v1/papers`"+`, waits until its match job has completed, notes the time, and pushes the next (about one batch a second), and %d clients poll the users' private JSON feeds (40%% conditional with the user's last ETag, 35%% full renders without validators) and their follow status (GET /v1/follows/category/…, 25%%), one request every %s each. Five phases: %s. Lag is injected with `+"`pg_wal_replay_pause()`"+` on the standby (it stays connected and answers, with an ever older snapshot), the standby is stopped with `+"`pg_ctl stop -m fast`"+` and started again. The api's `+"`followfeed_replica_reads_total{outcome,read}`"+` counters are read at every phase boundary.`,
		rpUsers, rpPerBatch, rpClients, rpThinkTime, phaseList(phaseDefs, func(p phaseDef) (string, time.Duration) { return p.name, p.d }))
	res.Policy = `**Policies checked.** *Never older than the ETag:* a private feed's ETag and Last-Modified come from the primary (the token lookup reads the user's ` + "`user_feeds`" + ` row and the high seq in one statement; the newest seq of the rows of the user's follows is cached per process for that version and high seq); a full render runs on the replica only when the replica's snapshot has at least the feed version and the high seq that ETag was made from (` + "`account.FeedAtLeast`" + `), else on the primary. The check is made from outside: a batch whose match job had completed before a request started must be in the answer (its papers and key rows, and the high seq with them, were committed on the primary before the ETag was derived), so every full render must list the newest ` + fmt.Sprint(rpCheckNew) + ` such papers of the user's category, and a 304 may only confirm a copy that lists them. *Bounded staleness* for follow status: it reads the replica only while the lag monitor finds it within a second, and every answer here must be right (the users' follows never change). *A replica that is down costs nothing:* a failed replica read falls back to the primary in the same request, and the replica is left alone for 5 s before it is tried again; so does a read the standby cancels when replay resumes and conflicts with its snapshot (max_standby_streaming_delay has long passed for WAL received during the pause). Verdict: no request fails, no feed is stale, no follow status is wrong; the replica takes most renders while healthy, none while stopped, and again after it is started.`

	primary, db, done, err := newClusterDB(ctx, e, "replica")
	if err != nil {
		return err
	}
	defer done()
	standby, err := primary.Standby(ctx)
	if err != nil {
		return err
	}
	defer standby.Destroy()
	e.logf("replica: standby in %s on port %d", standby.Dir, standby.Port)
	rep, err := openPool(ctx, standby.URL(db.name))
	if err != nil {
		return fmt.Errorf("connecting to the standby: %w", err)
	}
	defer func() {
		if rep != nil {
			rep.Close()
		}
	}()

	env := append(e.baseEnv(db.url), "RATE_LIMIT_PER_USER=0")
	w, err := startProc(ctx, e.opts.Exe, "worker", env, e.logPath("replica", "worker"))
	if err != nil {
		return err
	}
	defer w.stop()
	api, err := startProc(ctx, e.opts.Exe, "api", append(slices.Clone(env), "DATABASE_REPLICA_URL="+standby.URL(db.name)), e.logPath("replica", "api"))
	if err != nil {
		return err
	}
	defer api.stop()
	apiPid := api.pid
	c := newClient(api.base, rpClients+4, 15*time.Second)
	defer c.close()

	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	users := make([]*rpUser, rpUsers)
	for i := range users {
		users[i] = &rpUser{sub: fmt.Sprintf("soak-rp-%d", i), category: cats[i%len(cats)]}
	}
	if err := forEach(ctx, 4, len(users), func(i int) error {
		u := users[i]
		var err error
		u.token, u.feed, err = c.newUser(ctx, u.sub, "", u.category, "json")
		return err
	}); err != nil {
		return fmt.Errorf("creating users: %w", err)
	}

	stats := make([]*rpPhaseStats, len(phaseDefs))
	for i, p := range phaseDefs {
		stats[i] = &rpPhaseStats{name: p.name}
	}
	var phase atomic.Int32
	var mu sync.Mutex // guards stats
	prom := &promises{}
	matchIdle := func() (bool, error) {
		n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state NOT IN ('completed', 'discarded', 'cancelled')`)
		return n == 0, err
	}

	tctx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	var wg sync.WaitGroup
	// The pusher: one batch at a time, each noted once its match completed.
	var pushed atomic.Int64
	var matchWait []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; tctx.Err() == nil; k++ {
			ph := stats[phase.Load()]
			start := time.Now()
			ids, err := pushRange(tctx, c, rpPrefix, k*rpPerBatch, rpPerBatch, cats)
			if tctx.Err() != nil {
				return
			}
			var idle bool
			if err == nil {
				idle, err = waitFor(tctx, 30*time.Second, 20*time.Millisecond, matchIdle)
				if err == nil && !idle {
					err = fmt.Errorf("match job of batch %d not completed within 30 s", k)
				}
			}
			done := time.Now()
			mu.Lock()
			ph.pushes++
			if err != nil && tctx.Err() == nil {
				ph.failed++
				ph.example("push %d: %v", k, err)
			}
			if err == nil {
				matchWait = append(matchWait, done.Sub(start))
			}
			mu.Unlock()
			if err == nil {
				prom.add(promiseBatch{ids: ids, matchedAt: done})
				pushed.Add(1)
			}
			sleep(tctx, 700*time.Millisecond)
		}
	}()
	for i := range rpClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(e.opts.Seed, uint64(3000+i)))
			rctx := context.WithoutCancel(tctx)
			for tctx.Err() == nil {
				u := users[rng.IntN(len(users))]
				ph := stats[phase.Load()]
				start := time.Now()
				switch v := rng.Float64(); {
				case v < 0.75:
					u.mu.Lock()
					etag, cached := u.etag, u.ids
					u.mu.Unlock()
					var hdr http.Header
					conditional := v < 0.40 && etag != ""
					if conditional {
						hdr = http.Header{"If-None-Match": {etag}}
					}
					want := prom.expected(u.category, start, rpCheckNew)
					r := c.do(rctx, "GET", u.feed, "", nil, hdr)
					var ids map[string]bool
					var perr error
					if r.err == nil && r.status == 200 {
						if ids, perr = parseFeedIDs(r.body); perr == nil {
							u.mu.Lock()
							u.etag, u.ids = r.header.Get("ETag"), ids
							u.mu.Unlock()
						}
					}
					mu.Lock()
					switch {
					case r.err != nil:
						ph.failed++
						ph.example("feed: %v", r.err)
					case r.status == 200 && perr != nil:
						ph.failed++
						ph.example("feed: %v", perr)
					case r.status == 200:
						if conditional {
							ph.cond200++
						} else {
							ph.full++
							ph.renderDurs = append(ph.renderDurs, r.dur)
						}
						ph.promisedChecked += len(want)
						if miss := missingFrom(ids, want); len(miss) > 0 {
							ph.stale++
							ph.example("%s: a 200 with ETag %s lacks %d papers matched before the request (%s)", u.sub, r.header.Get("ETag"), len(miss), strings.Join(miss[:min(3, len(miss))], ", "))
						}
					case r.status == http.StatusNotModified && conditional:
						ph.cond304++
						ph.promisedChecked += len(want)
						if miss := missingFrom(cached, want); len(miss) > 0 {
							ph.stale304++
							ph.example("%s: 304 for ETag %s, whose copy lacks %d papers matched before the request (%s)", u.sub, etag, len(miss), strings.Join(miss[:min(3, len(miss))], ", "))
						}
					default:
						ph.failed++
						ph.example("feed: status %d %s", r.status, oneLine(lastBytes(string(r.body), 120)))
					}
					mu.Unlock()
				default:
					cat := cats[rng.IntN(len(cats))]
					r := c.do(rctx, "GET", "/v1/follows/category/"+cat, u.token, nil, nil)
					var st struct {
						Following *bool `json:"following"`
					}
					mu.Lock()
					ph.status++
					switch {
					case r.err != nil:
						ph.failed++
						ph.example("status: %v", r.err)
					case r.status != 200:
						ph.failed++
						ph.example("status: %d %s", r.status, oneLine(lastBytes(string(r.body), 120)))
					case json.Unmarshal(r.body, &st) != nil || st.Following == nil || *st.Following != (cat == u.category):
						ph.wrongStatus++
						ph.example("%s follows %s; status of %s said %s", u.sub, u.category, cat, oneLine(lastBytes(string(r.body), 120)))
					}
					mu.Unlock()
				}
				sleep(tctx, rpThinkTime)
			}
		}()
	}

	// The phases. Each begins once its fault is in place (the pause, the
	// resume, the stop, the start): the api's counters are read then, so a
	// phase's reads are those made in its state.
	var lagBytes, lagSecs float64
	var catchUp, stopTook, startTook time.Duration
	usedAgain := time.Duration(-1)
	var target string // the primary's WAL position at the resume
	var t0 time.Time
	// begin puts phase i's fault in place.
	begin := func(i int) error {
		t0 = time.Now()
		switch i {
		case 1:
			_, err := rep.Exec(ctx, `SELECT pg_wal_replay_pause()`)
			return err
		case 2:
			// What the standby missed, measured while it is still paused.
			if err := rep.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)`).Scan(&lagSecs); err != nil {
				return err
			}
			if err := db.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&target); err != nil {
				return err
			}
			if err := rep.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())`, target).Scan(&lagBytes); err != nil {
				return err
			}
			t0 = time.Now()
			// The resume itself may be cancelled by the very replay it
			// starts (its statement's snapshot conflicts, SQLSTATE
			// 40001): then ask whether replay is still paused, and
			// resume again if it is.
			var err error
			for range 10 {
				if _, err = rep.Exec(ctx, `SELECT pg_wal_replay_resume()`); err == nil {
					return nil
				}
				var paused bool
				if qerr := rep.QueryRow(ctx, `SELECT pg_is_wal_replay_paused()`).Scan(&paused); qerr == nil && !paused {
					return nil
				}
				time.Sleep(50 * time.Millisecond)
			}
			return err
		case 3:
			rep.Close()
			rep = nil
			err := standby.Stop(ctx, "fast")
			stopTook = time.Since(t0)
			return err
		case 4:
			err := standby.Start(ctx)
			startTook = time.Since(t0)
			return err
		}
		return nil
	}
	// after measures phase i's recovery, once it has begun.
	after := func(i int, atStart metrics) error {
		switch i {
		case 2:
			// Replay resumed cancels the standby's queries whose snapshot
			// conflicts with what it replays (max_standby_streaming_delay
			// has long passed for WAL received during the pause): the
			// soak's own probes are retried, the api's fall back.
			var lastErr error
			ok, _ := waitFor(ctx, 20*time.Second, 50*time.Millisecond, func() (bool, error) {
				var done bool
				lastErr = rep.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, target).Scan(&done)
				return lastErr == nil && done, nil
			})
			catchUp = time.Since(t0)
			if !ok {
				return fmt.Errorf("the standby did not replay the primary's WAL within 20 s of the resume (%v)", lastErr)
			}
		case 4:
			base := atStart.get("followfeed_replica_reads_total", "outcome", "replica", "read", "checked")
			_, _ = waitFor(ctx, 25*time.Second, 250*time.Millisecond, func() (bool, error) {
				m, err := c.scrape(ctx)
				if err == nil && m.get("followfeed_replica_reads_total", "outcome", "replica", "read", "checked") > base {
					usedAgain = time.Since(t0)
					return true, nil
				}
				return false, nil
			})
		}
		return nil
	}
	var actionErr error
	for i, p := range phaseDefs {
		if actionErr = begin(i); actionErr != nil {
			break
		}
		m, err := c.scrape(ctx)
		if err != nil {
			actionErr = err
			break
		}
		if i > 0 {
			closePhase(stats[i-1], m)
			e.logf("replica: phase %q done: %s", stats[i-1].name, phaseBrief(stats[i-1]))
		}
		stats[i].start, stats[i].atStart = time.Now(), m
		phase.Store(int32(i))
		if actionErr = after(i, m); actionErr != nil {
			break
		}
		sleep(ctx, p.d-time.Since(stats[i].start))
	}
	if actionErr == nil {
		last := stats[len(stats)-1]
		m, err := c.scrape(ctx)
		if err != nil {
			actionErr = err
		} else {
			closePhase(last, m)
			e.logf("replica: phase %q done: %s", last.name, phaseBrief(last))
		}
	}
	stopTraffic()
	wg.Wait()
	if actionErr != nil {
		return actionErr
	}
	alive := api.alive()
	apiLog, _ := os.ReadFile(api.logPath)
	warned := strings.Count(string(apiLog), "replica unavailable")
	rss, _ := bench.PeakRSS(api.pid)

	// Figures.
	rows := []string{"| phase | time | feed requests: full 200 / conditional 304 / conditional 200 | renders on the replica | renders on the primary, the replica being: behind the ETag / failing / left alone | follow status on the replica | follow status on the primary, the replica being: lagging / failing / left alone | full render p50 / p99 | failed requests | stale or wrong answers |",
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"}
	total := &rpPhaseStats{}
	for _, s := range stats {
		if s.end.IsZero() {
			continue
		}
		m := s.metrics
		get := func(outcome, read string) int {
			return int(m.get("followfeed_replica_reads_total", "outcome", outcome, "read", read))
		}
		onRep, stale, errs, down := get("replica", "checked"), get("stale", "checked"), get("error", "checked"), get("down", "checked")
		renders := onRep + stale + errs + down
		p50, p99 := bench.Percentiles(s.renderDurs)
		rows = append(rows, fmt.Sprintf("| %s | %s | %d / %d / %d | %d (%s) | %d / %d / %d | %d (%s) | %d / %d / %d | %s / %s | %d | %d |",
			s.name, secs(s.end.Sub(s.start)), s.full, s.cond304, s.cond200, onRep, share(onRep, renders), stale, errs, down,
			get("replica", "bounded"), share(get("replica", "bounded"), get("replica", "bounded")+get("lagging", "bounded")+get("error", "bounded")+get("down", "bounded")),
			get("lagging", "bounded"), get("error", "bounded"), get("down", "bounded"), ms(p50), ms(p99), s.failed, s.stale+s.stale304+s.wrongStatus))
		total.add(s)
	}
	res.Tables = append(res.Tables, "Renders are the api's checked reads (`read=\"checked\"`: full private-feed renders; a 304 reads no replica), follow status its bounded reads; the requests are counted by the soak's clients, the reads by the api's counters over the same phase.\n\n"+strings.Join(rows, "\n"))
	mw50, mw99 := bench.Percentiles(matchWait)
	res.figure("batches pushed and matched", "%d batches of %d papers (%d pushes in all); push to match job completed p50 %s, p99 %s", pushed.Load(), rpPerBatch, total.pushes, ms(mw50), ms(mw99))
	res.figure("requests", "%d full renders, %d conditional GETs answered 304, %d conditional GETs answered 200, %d follow-status reads", total.full, total.cond304, total.cond200, total.status)
	res.figure("promised papers checked", "%d (the newest %d of the user's category matched before each feed request)", total.promisedChecked, rpCheckNew)
	res.figure("lag injected", "replay paused for %s: at the resume the standby's last replayed transaction was %.1f s old and it was %.0f kB of WAL behind; it caught up %s after the resume", phaseDefs[1].d, lagSecs, lagBytes/1024, secs(catchUp))
	res.figure("replica stopped and started", "pg_ctl stop -m fast took %s, start %s; the api rendered a feed on it again %s after the start", secs(stopTook), secs(startTook), secsOrNever(usedAgain))
	res.figure("warn lines of the api about the replica", "%d \"replica unavailable\" (rate-limited to one per 30 s)", warned)
	if rss > 0 {
		res.figure("peak RSS of the api (VmHWM)", "%d MiB", rss>>20)
	}

	res.check("no failed request", total.failed == 0, "%d failed of %d feed requests, %d follow-status reads and %d pushes %s",
		total.failed, total.full+total.cond304+total.cond200, total.status, total.pushes, strings.Join(total.examples, "; "))
	res.check("no stale full render", total.stale == 0, "%d of %d 200s lacked a paper whose match had completed before the request", total.stale, total.full+total.cond200)
	res.check("no stale 304", total.stale304 == 0, "%d of %d 304s confirmed a copy lacking a paper matched before the request", total.stale304, total.cond304)
	res.check("follow status always right", total.wrongStatus == 0, "%d of %d follow-status answers wrong", total.wrongStatus, total.status)
	healthy, paused, stopped, started := stats[0].metrics, stats[1].metrics, stats[3].metrics, stats[4].metrics
	rr := func(m metrics, outcome, read string) int {
		return int(m.get("followfeed_replica_reads_total", "outcome", outcome, "read", read))
	}
	renders := func(m metrics) int {
		return rr(m, "replica", "checked") + rr(m, "stale", "checked") + rr(m, "error", "checked") + rr(m, "down", "checked")
	}
	res.check("healthy: the replica takes most renders", 2*rr(healthy, "replica", "checked") > renders(healthy) && rr(healthy, "replica", "bounded") > 0,
		"%d of %d renders and %d follow-status reads on the replica", rr(healthy, "replica", "checked"), renders(healthy), rr(healthy, "replica", "bounded"))
	res.check("paused: stale renders and lagging status reads go to the primary", rr(paused, "stale", "checked") > 0 && rr(paused, "lagging", "bounded") > 0,
		"%d renders found the replica's snapshot older than the ETag (stale) and ran on the primary; %d follow-status reads went to the primary while the lag monitor saw the replica behind; %d renders still ran on the replica (users whose feed had not changed since the pause)",
		rr(paused, "stale", "checked"), rr(paused, "lagging", "bounded"), rr(paused, "replica", "checked"))
	res.check("stopped: every read on the primary, none failed", rr(stopped, "replica", "checked")+rr(stopped, "replica", "bounded") == 0 &&
		rr(stopped, "error", "checked")+rr(stopped, "down", "checked") > 0 && stats[3].failed == 0,
		"renders: %d error, %d down (left alone 5 s after an error), %d on the replica; %d failed requests in the phase",
		rr(stopped, "error", "checked"), rr(stopped, "down", "checked"), rr(stopped, "replica", "checked"), stats[3].failed)
	res.check("started again: the replica is used again", rr(started, "replica", "checked") > 0 && rr(started, "replica", "bounded") > 0 && usedAgain >= 0,
		"%d renders and %d follow-status reads on the replica; first render there %s after the start", rr(started, "replica", "checked"), rr(started, "replica", "bounded"), secsOrNever(usedAgain))
	res.check("same api process throughout", alive && api.pid == apiPid, "pid %d alive at the end: %v", apiPid, alive)
	res.Summary = fmt.Sprintf("%d feed requests, %d status reads, %d batches; %d failed, %d stale; renders on the replica: healthy %s, paused %s, stopped %s, restarted %s",
		total.full+total.cond304+total.cond200, total.status, pushed.Load(), total.failed, total.stale+total.stale304+total.wrongStatus,
		share(rr(healthy, "replica", "checked"), renders(healthy)), share(rr(paused, "replica", "checked"), renders(paused)),
		share(rr(stopped, "replica", "checked"), renders(stopped)), share(rr(started, "replica", "checked"), renders(started)))
	return nil
}

// closePhase ends s with the api's counters m.
func closePhase(s *rpPhaseStats, m metrics) {
	s.end = time.Now()
	s.metrics = m.sub(s.atStart)
}

// phaseList renders "name (d), name (d), …".
func phaseList[T any](ps []T, f func(T) (string, time.Duration)) string {
	var parts []string
	for _, p := range ps {
		n, d := f(p)
		parts = append(parts, fmt.Sprintf("%s (%s)", n, d))
	}
	return strings.Join(parts, ", ")
}

func phaseBrief(s *rpPhaseStats) string {
	m := s.metrics
	return fmt.Sprintf("%d full, %d 304, %d status, %d pushes, %d failed, %d stale; replica reads %v, stale %v, lagging %v, error %v, down %v",
		s.full, s.cond304, s.status, s.pushes, s.failed, s.stale+s.stale304+s.wrongStatus,
		m.get("followfeed_replica_reads_total", "outcome", "replica", "read", "checked")+m.get("followfeed_replica_reads_total", "outcome", "replica", "read", "bounded"),
		m.get("followfeed_replica_reads_total", "outcome", "stale", "read", "checked"),
		m.get("followfeed_replica_reads_total", "outcome", "lagging", "read", "bounded"),
		m.get("followfeed_replica_reads_total", "outcome", "error", "read", "checked")+m.get("followfeed_replica_reads_total", "outcome", "error", "read", "bounded"),
		m.get("followfeed_replica_reads_total", "outcome", "down", "read", "checked")+m.get("followfeed_replica_reads_total", "outcome", "down", "read", "bounded"))
}

// share is n of total as a percentage ("–" when total is 0).
func share(n, total int) string {
	if total == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total))
}

func secsOrNever(d time.Duration) string {
	if d < 0 {
		return "never (within 25 s)"
	}
	return secs(d)
}
