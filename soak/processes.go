package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/bench"
	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
	"followfeed/internal/pgcluster"
)

// Sizes and timings of the processes scenario.
const (
	pcUsers           = 480
	pcHarvested       = 100 // records of the fake OAI-PMH repository
	pcPushers         = 2   // one per api
	pcBatches         = 20  // per pusher
	pcPerBatch        = 5
	pcPrefix          = "2907"
	pcClients         = 16
	pcRun             = 30 * time.Second // each throughput run
	pcDigestEvery     = 2 * time.Second  // DIGEST_SCHEDULE_INTERVAL
	pcHarvestEvery    = time.Minute      // HARVEST_INTERVAL (its minimum)
	pcBouncerPoolSize = 10
)

// pcUser is a user of the processes scenario.
type pcUser struct {
	sub, category, token, feed string
	id                         int64
	mu                         sync.Mutex
	etag                       string
}

// tpRun is one throughput run: conditional feed polls against some api
// processes.
type tpRun struct {
	name     string
	targets  []int // indexes of the api processes
	n, errs  int
	statuses map[int]int
	durs     []time.Duration
	examples []string
	perAPI   []int
	cpu      []time.Duration // per api process
	bouncer  time.Duration
	postgres time.Duration
	machine  time.Duration
	self     time.Duration
	elapsed  time.Duration
	pools    poolPeak
}

// poolPeak is the largest PgBouncer pool figures seen during a run.
type poolPeak struct {
	clients, server int
}

func runProcesses(ctx context.Context, e *env, res *Result) error {
	res.What = fmt.Sprintf(`A throwaway PostgreSQL cluster (initdb under /tmp, its own port) holds a fresh, migrated database. A private PgBouncer (Debian's package, installed by scripts/pgbouncer-ensure.sh when missing; its own configuration, auth file and log in a temporary directory, a free port from 64320, no Unix socket) runs in front of it in transaction pooling mode with default_pool_size=%d. Two `+"`followfeed api`"+` processes connect through PgBouncer; two `+"`followfeed worker`"+` processes connect directly to PostgreSQL (River LISTENs, which transaction pooling cannot carry), with HARVEST_INTERVAL=%s against a fake OAI-PMH repository of %d records, DIGEST_SCHEDULE_INTERVAL=%s and a recording SMTP sink that holds every reply 20 ms. %d users with verified addresses (created alternately through both apis) follow one of six categories each.

*Throughput:* once the first harvest is matched, %d keep-alive clients send conditional GETs of the users' private JSON feeds (If-None-Match with the user's ETag, so 304s: the poll that dominates a feed service's traffic) for %s against the first api, %s against the second, and %s against both (half the clients each); the CPU time of each api process, of PgBouncer and of the whole machine is read from /proc around every run. *Jobs:* then %d pushers (one per api) post %d batches of %d papers each through `+"`POST /v1/papers`"+`, every user's digest is made due at once, and the soak waits until every match job and every digest is final. Every periodic job the workers inserted during the run is read back from `+"`river_job`"+`, and `+"`river_leader`"+` is read every second.`,
		pcBouncerPoolSize, pcHarvestEvery, pcHarvested, pcDigestEvery, pcUsers, pcClients, pcRun, pcRun, pcRun, pcPushers, pcBatches, pcPerBatch)

	bin, err := e.scriptPath("pgbouncer-ensure.sh")
	if err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, bin).CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/pgbouncer-ensure.sh: %v: %s", err, lastBytes(string(out), 300))
	}
	cl, db, done, err := newClusterDB(ctx, e, "processes")
	if err != nil {
		return err
	}
	defer done()
	bouncer, err := cl.Bouncer(ctx, pgcluster.BouncerOptions{Mode: "transaction", PoolSize: pcBouncerPoolSize})
	if err != nil {
		return err
	}
	defer bouncer.Stop()
	apiURL := bouncer.URL(db.name)
	execMode := "pgx's default (PgBouncer supports prepared statements in transaction mode, max_prepared_statements)"
	if strings.Contains(apiURL, "default_query_exec_mode=") {
		execMode = "default_query_exec_mode=cache_describe in the api's DATABASE_URL (PgBouncer before 1.21 cannot keep prepared statements in transaction mode)"
	}
	e.logf("processes: PgBouncer %s on port %d (transaction mode); api connections: %s", bouncer.Version, bouncer.Port, execMode)
	res.Policy = `**Policies checked.** *Connections:* an ` + "`api`" + ` holds nothing outside a transaction (no LISTEN, no session advisory locks, no session settings), so it runs through PgBouncer in transaction mode; pgx's default statement cache prepares named statements on one server connection, which transaction pooling hands to another client, so before PgBouncer 1.21 the api's DATABASE_URL carries ` + "`default_query_exec_mode=cache_describe`" + ` (README "Scaling"). A ` + "`worker`" + ` needs a session for River's LISTEN/NOTIFY (or RIVER_POLL_ONLY=true). *One leader:* River elects one leader among the worker processes (` + "`river_leader`" + `); only the leader inserts periodic jobs (digest schedule, harvest, channel schedule and prune), each kind unique while one is queued or running. *Nothing twice:* River hands each job to one worker (` + "`FOR UPDATE SKIP LOCKED`" + `); a match batch covers its own seq range and writes no feed state (a private feed's ETag is the user's feed version and the newest seq of the rows of their follows, computed by each api process and cached per high seq, so both apis answer the same ETag); a digest's window is reserved under the user's row lock and its ledger row is unique per (user, period). Verdict: through PgBouncer no request fails; with two api processes each serves at least 40% of the polls (the total is a figure, not a verdict: on one machine a second process can only share the CPU the first already keeps busy; the table gives each tier's CPU per request, from which what api processes on machines of their own add up to follows); one leader throughout, with periodic jobs no closer together than their interval; every match job completed once by one worker over disjoint seq ranges, no user's feed version moved, and every user's ETag changed exactly when a batch matched them, the same from both apis; every digest sent once, every Message-ID received once.`

	day := time.Now().UTC().Format(time.DateOnly)
	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	recs := oaipmh.MakeRecords(pcPrefix, 0, pcHarvested, cats, day)
	oai := oaipmh.New(func() []oaipmh.Record { return recs }, 50)
	oaiSrv := httptest.NewServer(oai)
	defer oaiSrv.Close()
	oaSrv := httptest.NewServer(openalex.New(nil))
	defer oaSrv.Close()
	// Every reply held 20 ms: a digest job of 50 takes a second or more,
	// so both workers are sending at once.
	sink, smtpURL, stopSink, err := startSink(20 * time.Millisecond)
	if err != nil {
		return err
	}
	defer stopSink()

	// The leader, read every second from the start.
	leaders := &leaderLog{}
	stopLeaders := leaders.watch(ctx, db.pool, time.Second)
	defer stopLeaders()

	workerEnv := append(e.baseEnv(db.url), "ARXIV_OAI_URL="+oaiSrv.URL, "ARXIV_OAI_FORMAT=arXivRaw", "ARXIV_SETS=cs",
		"OPENALEX_URL="+oaSrv.URL, "SMTP_URL="+smtpURL, "HARVEST_INTERVAL="+pcHarvestEvery.String(), "DIGEST_SCHEDULE_INTERVAL="+pcDigestEvery.String())
	runStart := time.Now()
	var workers []*proc
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	for i := range 2 {
		w, err := startProc(ctx, e.opts.Exe, "worker", workerEnv, e.logPath("processes", fmt.Sprintf("worker%d", i+1)))
		if err != nil {
			return err
		}
		workers = append(workers, w)
	}
	apiEnv := append(e.baseEnv(apiURL), "RATE_LIMIT_PER_USER=0")
	var apis []*proc
	var clients []*client
	defer func() {
		for _, a := range apis {
			a.stop()
		}
		for _, c := range clients {
			c.close()
		}
	}()
	for i := range 2 {
		a, err := startProc(ctx, e.opts.Exe, "api", apiEnv, e.logPath("processes", fmt.Sprintf("api%d", i+1)))
		if err != nil {
			return err
		}
		apis = append(apis, a)
		clients = append(clients, newClient(a.base, pcClients+4, 15*time.Second))
	}

	users := make([]*pcUser, pcUsers)
	for i := range users {
		users[i] = &pcUser{sub: fmt.Sprintf("soak-pc-%d", i), category: cats[i%len(cats)]}
	}
	if err := forEach(ctx, 8, len(users), func(i int) error {
		u := users[i]
		var err error
		u.token, u.feed, err = clients[i%2].newUser(ctx, u.sub, fmt.Sprintf("pc%d@soak.example", i), u.category, "json")
		return err
	}); err != nil {
		return fmt.Errorf("creating users: %w", err)
	}
	ids, err := userIDs(ctx, db.pool, "soak-pc-")
	if err != nil {
		return err
	}
	for _, u := range users {
		u.id = ids[u.sub]
	}

	// The first harvest (run on the leader's start) stored and matched.
	ok, err := waitStoredAndMatched(ctx, db.pool, pcHarvested, 90*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the first harvest did not store and match %d records within 90 s", pcHarvested)
	}
	e.logf("processes: %d users; first harvest stored and matched %s after the workers started", len(users), secs(time.Since(runStart)))

	// Throughput: every user's ETag first, then the three runs.
	if err := forEach(ctx, 8, len(users), func(i int) error {
		r, err := clients[i%2].must(ctx, "GET", users[i].feed, "", nil, 200)
		if err == nil {
			users[i].etag = r.header.Get("ETag")
		}
		return err
	}); err != nil {
		return fmt.Errorf("first feed renders: %w", err)
	}
	runs := []*tpRun{{name: "api 1 alone", targets: []int{0}}, {name: "api 2 alone", targets: []int{1}}, {name: "both apis", targets: []int{0, 1}}}
	for _, r := range runs {
		if err := throughputRun(ctx, r, apis, clients, users, bouncer, db.name, cl.PID()); err != nil {
			return err
		}
		e.logf("processes: %s: %.0f req/s, %d errors", r.name, float64(r.n)/r.elapsed.Seconds(), r.errs)
	}

	// Jobs: pushes through both apis, then every digest due.
	versions0, err := feedVersions(ctx, db.pool)
	if err != nil {
		return err
	}
	etags0 := make([]string, len(users))
	for i, u := range users {
		etags0[i] = u.etag
	}
	var pushMu sync.Mutex
	var batches []map[string][]string // ids by category, one per batch
	var pushErrs []string
	pushStart := time.Now()
	var wg sync.WaitGroup
	for p := range pcPushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range pcBatches {
				from := pcHarvested + (k*pcPushers+p)*pcPerBatch
				ids, err := pushRange(ctx, clients[p], pcPrefix, from, pcPerBatch, cats)
				pushMu.Lock()
				if err != nil {
					pushErrs = append(pushErrs, err.Error())
				} else {
					batches = append(batches, ids)
				}
				pushMu.Unlock()
				sleep(ctx, 200*time.Millisecond)
			}
		}()
	}
	wg.Wait()
	matched, err := waitFor(ctx, 90*time.Second, 250*time.Millisecond, func() (bool, error) { return matchIdle(ctx, db.pool) })
	if err != nil {
		return err
	}
	pushTook := time.Since(pushStart)
	versions1, err := feedVersions(ctx, db.pool)
	if err != nil {
		return err
	}
	// Every user's ETag after the pushes, from both apis (each with its
	// own validator cache, warmed by the polls before).
	etags1 := make([][2]string, len(users))
	if err := forEach(ctx, 8, len(users), func(i int) error {
		for k := range 2 {
			r, err := clients[k].must(ctx, "GET", users[i].feed, "", nil, 200)
			if err != nil {
				return err
			}
			etags1[i][k] = r.header.Get("ETag")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("feed renders after the pushes: %w", err)
	}

	// Aging on purpose: every user's daily digest due now, its window
	// from seq 0 (every pushed paper: makeDailyDue).
	pcIDs, err := userIDs(ctx, db.pool, "soak-pc-")
	if err != nil {
		return err
	}
	due, err := makeDailyDue(ctx, db.pool, slices.Collect(maps.Values(pcIDs)))
	if err != nil {
		return err
	}
	digestsDue := time.Now()
	var digestRows map[string]int
	digestsDone, err := waitFor(ctx, 2*time.Minute, time.Second, func() (bool, error) {
		var err error
		if digestRows, err = stateCounts(ctx, db.pool, "true"); err != nil {
			return false, err
		}
		n := 0
		for _, v := range digestRows {
			n += v
		}
		return n >= due && digestRows["pending"] == 0 && digestRows["sending"] == 0, nil
	})
	if err != nil {
		return err
	}
	digestTook := time.Since(digestsDue)
	// Let the schedule run a few more rounds, then stop everything.
	sleep(ctx, 3*time.Second)
	for _, w := range workers {
		w.stop()
	}
	runEnd := time.Now()
	stopLeaders()
	alive := true
	for _, a := range apis {
		alive = alive && a.alive()
	}

	// --- Figures and checks.

	// Throughput.
	tpRows := []string{"| run | feed polls | req/s | p50 | p99 | errors | per api | CPU: api 1 / api 2 | PgBouncer | PostgreSQL | the soak's clients | machine busy | requests per api CPU-second |",
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"}
	for _, r := range runs {
		p50, p99 := bench.Percentiles(r.durs)
		var apiCPU time.Duration
		for _, c := range r.cpu {
			apiCPU += c
		}
		perAPI := make([]string, len(r.perAPI))
		for i, n := range r.perAPI {
			perAPI[i] = fmt.Sprint(n)
		}
		tpRows = append(tpRows, fmt.Sprintf("| %s | %d | %.0f | %s | %s | %d | %s | %s / %s | %s | %s | %s | %s of %d | %.0f |",
			r.name, r.n, rate(r.n, r.elapsed), ms(p50), ms(p99), r.errs, strings.Join(perAPI, " + "),
			cores(r.cpu[0], r.elapsed), cores(r.cpu[1], r.elapsed), cores(r.bouncer, r.elapsed), cores(r.postgres, r.elapsed), cores(r.self, r.elapsed),
			cores(r.machine, r.elapsed), cpuCount(),
			float64(r.n)/max(apiCPU.Seconds(), 1e-9)))
	}
	res.Tables = append(res.Tables, "Throughput: conditional GETs of private feeds (If-None-Match, answered 304), "+fmt.Sprint(pcClients)+" clients in the soak process on the same machine. CPU figures are cores used on average over the run (1.00 = one core busy), from /proc.\n\n"+strings.Join(tpRows, "\n"))
	one := max(rate(runs[0].n, runs[0].elapsed), rate(runs[1].n, runs[1].elapsed))
	both := rate(runs[2].n, runs[2].elapsed)
	tpErrs := runs[0].errs + runs[1].errs + runs[2].errs
	var tpEx []string
	for _, r := range runs {
		tpEx = append(tpEx, r.examples...)
	}
	// CPU per request of each tier, from the one-api runs.
	var nOne int
	var apiCPU, bouncerCPU, pgCPU time.Duration
	for _, r := range runs[:2] {
		nOne += r.n
		apiCPU += r.cpu[0] + r.cpu[1]
		bouncerCPU, pgCPU = bouncerCPU+r.bouncer, pgCPU+r.postgres
	}
	perReq := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(max(nOne, 1)) }
	busyOne := (runs[0].machine.Seconds()/runs[0].elapsed.Seconds() + runs[1].machine.Seconds()/runs[1].elapsed.Seconds()) / 2
	res.figure("PgBouncer", "%s, pool_mode=transaction, default_pool_size=%d; api connections: %s", bouncer.Version, pcBouncerPoolSize, execMode)
	res.figure("PgBouncer pools during the both-apis run", "up to %d client connections from the two apis on up to %d server connections", runs[2].pools.clients, runs[2].pools.server)
	if st, err := bouncer.Stats(ctx, db.name); err == nil {
		res.figure("PgBouncer totals for the database", "%d transactions, %d queries (SHOW STATS)", st.Transactions, st.Queries)
	}
	// The control: pgx's default exec mode through the same PgBouncer,
	// more clients than server connections.
	if errs, err := pgcluster.Probe(ctx, bouncer.RawURL(db.name), 3*pcBouncerPoolSize, 10); err == nil {
		detail := "none failed"
		if len(errs) > 0 {
			detail = fmt.Sprintf("%d failed, e.g. %s", len(errs), oneLine(errs[0].Error()))
		}
		res.figure("control: pgx's default exec mode through this PgBouncer", "%d small transactions on %d connections: %s", 30*pcBouncerPoolSize, 3*pcBouncerPoolSize, detail)
	}
	res.check("no request through PgBouncer failed", tpErrs == 0 && len(pushErrs) == 0,
		"%d failed of %d feed polls; %d failed of %d pushes %s", tpErrs, runs[0].n+runs[1].n+runs[2].n, len(pushErrs), pcPushers*pcBatches,
		strings.Join(append(tpEx, pushErrs...)[:min(3, len(tpEx)+len(pushErrs))], "; "))
	balanced := min(runs[2].perAPI[0], runs[2].perAPI[1])*5 >= runs[2].n*2 // each ≥ 40 %
	res.check("a second api process takes its share", balanced && runs[2].errs == 0,
		"with both apis %d + %d polls (%.0f req/s), none failed; the better one alone %.0f req/s (×%.2f: see the next figure)",
		runs[2].perAPI[0], runs[2].perAPI[1], both, one, both/max(one, 1e-9))
	res.figure("does throughput add up?", "not measurable on one %d-core machine: with one api alone the machine was already %.2f of %d cores busy "+
		"(the api %s, PostgreSQL %s, PgBouncer %s, the soak's clients %s, the rest other processes), so a second api process on it only gets a share of the same CPU: "+
		"the ratio (×%.2f here) says how that CPU was shared, not what a machine of its own would add. "+
		"CPU per 304: api %.0f µs, PgBouncer %.0f µs, PostgreSQL %.0f µs. api processes on machines of their own add up until PgBouncer, one thread, "+
		"reaches about %.0f req/s per instance, or PostgreSQL about %.0f req/s per core",
		cpuCount(), busyOne, cpuCount(), cores(apiCPU/2, runs[0].elapsed), cores(pgCPU/2, runs[0].elapsed), cores(bouncerCPU/2, runs[0].elapsed),
		cores((runs[0].self+runs[1].self)/2, runs[0].elapsed), both/max(one, 1e-9),
		perReq(apiCPU), perReq(bouncerCPU), perReq(pgCPU), 1e6/max(perReq(bouncerCPU), 1e-9), 1e6/max(perReq(pgCPU), 1e-9))

	// The leader and the periodic jobs.
	leaderIDs, changes := leaders.summary()
	res.figure("River leader", "%s; %d samples, %d changes of leader", strings.Join(leaderIDs, ", "), leaders.samples, changes)
	periodic, err := periodicRuns(ctx, db.pool, runStart, runEnd)
	if err != nil {
		return err
	}
	var pRows []string
	perOK := true
	var perDetail []string
	for _, k := range []struct {
		kind  string
		every time.Duration
	}{{"digest_schedule", pcDigestEvery}, {"harvest_arxiv", pcHarvestEvery}, {"channel_schedule", time.Minute}, {"channel_prune", time.Hour}} {
		p := periodic[k.kind]
		span := runEnd.Sub(p.first)
		// One leader inserts one on start and one per interval after it.
		want := 1 + int(span/k.every)
		// A second leader would about double the count and bring two
		// inserts closer than the interval.
		good := p.n > 0 && p.n <= want+1 && (p.n < 2 || p.minGap >= k.every/2)
		perOK = perOK && good
		gap := "–"
		if p.n >= 2 {
			gap = secs(p.minGap)
		}
		pRows = append(pRows, fmt.Sprintf("| %s | %s | %d | at most %d | %s | %s |", k.kind, k.every, p.n, want+1, gap, formatCounts(p.by)))
		perDetail = append(perDetail, fmt.Sprintf("%s %d (≤ %d)", k.kind, p.n, want+1))
	}
	res.Tables = append(res.Tables, "Periodic jobs inserted during the run (`river_job`), against what one leader inserts (one when it takes the lead, then one per interval):\n\n| kind | interval | inserted | one leader | closest two | worked by |\n| --- | --- | --- | --- | --- | --- |\n"+strings.Join(pRows, "\n"))
	res.check("exactly one leader runs the periodic jobs", len(leaderIDs) == 1 && changes == 0 && perOK,
		"%d distinct leaders seen in %d samples; %s; no two inserts of a kind closer than half its interval: %v",
		len(leaderIDs), leaders.samples, strings.Join(perDetail, ", "), perOK)

	// Match batches.
	mb, err := matchJobs(ctx, db.pool)
	if err != nil {
		return err
	}
	wantBumps := map[string]int{} // category → batches with a paper in it
	for _, b := range batches {
		for cat := range b {
			wantBumps[cat]++
		}
	}
	var bumpBad int
	var bumpEx []string
	for i, u := range users {
		moved := versions1[u.id] - versions0[u.id]
		changed := etags1[i][0] != etags0[i]
		if moved != 0 || changed != (wantBumps[u.category] > 0) || etags1[i][0] != etags1[i][1] {
			bumpBad++
			if len(bumpEx) < 3 {
				bumpEx = append(bumpEx, fmt.Sprintf("%s (%s): feed version moved %d, ETag %s → %s (api 2: %s), %d batches matched",
					u.sub, u.category, moved, etags0[i], etags1[i][0], etags1[i][1], wantBumps[u.category]))
			}
		}
	}
	res.figure("pushes", "%d batches of %d papers through both apis in %s (until every match job completed)", len(batches), pcPerBatch, secs(pushTook))
	res.figure("match jobs", "%d, worked by %s", mb.n, formatCounts(mb.by))
	res.check("every match batch done once", matched && mb.n > 0 && mb.bad == 0 && mb.overlaps == 0 && bumpBad == 0,
		"%d match jobs: %d not completed on the first attempt by one worker, %d with overlapping seq ranges; %d of %d users whose feed version moved (the match job bumps none), whose ETag did not change exactly when a batch matched them, or whose ETag the two apis disagree on %s",
		mb.n, mb.bad, mb.overlaps, bumpBad, len(users), strings.Join(bumpEx, "; "))

	// Feeds, read through the second api.
	var feedBad int
	var feedEx []string
	for _, u := range users {
		r, err := clients[1].must(ctx, "GET", u.feed+"?limit=200", "", nil, 200)
		if err != nil {
			feedBad++
			feedEx = append(feedEx, err.Error())
			continue
		}
		items, err := parseFeedItems(r.body)
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, rec := range recs {
			if slices.Contains(rec.Categories, u.category) {
				want[rec.ID] = true
			}
		}
		for _, b := range batches {
			for _, id := range b[u.category] {
				want[id] = true
			}
		}
		seen := map[string]int{}
		for _, id := range items {
			seen[id]++
		}
		missing, dup := 0, 0
		for id := range want {
			if seen[id] == 0 {
				missing++
			}
		}
		for _, n := range seen {
			if n > 1 {
				dup++
			}
		}
		if missing > 0 || dup > 0 || len(seen) != len(want) {
			feedBad++
			if len(feedEx) < 3 {
				feedEx = append(feedEx, fmt.Sprintf("%s: %d missing, %d repeated, %d items for %d papers", u.sub, missing, dup, len(seen), len(want)))
			}
		}
	}
	res.check("every feed lists every paper once", feedBad == 0, "%d of %d users' feeds (read through api 2) lack a paper, repeat one or list another %s",
		feedBad, len(users), strings.Join(feedEx, "; "))

	// Digests.
	received, total := sink.snapshot()
	dupIDs := 0
	for _, n := range received {
		if n > 1 {
			dupIDs++
		}
	}
	sent, err := messageIDs(ctx, db, "state = 'sent'")
	if err != nil {
		return err
	}
	notOnce := 0
	for _, id := range sent {
		if received[id] != 1 {
			notOnce++
		}
	}
	sendJobs, err := jobWorkers(ctx, db.pool, "digest_send")
	if err != nil {
		return err
	}
	res.figure("digests", "%d made due; ledger %s in %s; digest_send jobs worked by %s", due,
		formatCounts(digestRows, "sent", "skipped", "unknown", "failed", "pending", "sending"), secs(digestTook), formatCounts(sendJobs))
	res.figure("messages received by the SMTP sink", "%d (%d distinct Message-IDs)", total, len(received))
	res.check("every digest sent once", digestsDone && len(sent) == due && dupIDs == 0 && notOnce == 0 && total == len(sent),
		"%d of %d users' digests sent; %d Message-IDs received more than once; %d sent rows whose message did not arrive exactly once; %d messages for %d sent rows",
		len(sent), due, dupIDs, notOnce, total, len(sent))
	res.check("every process ran to the end", alive, "both api processes alive at the end: %v", alive)

	res.Summary = fmt.Sprintf("PgBouncer %s transaction mode; feed polls %.0f req/s on one api, %.0f on both (×%.2f); %d leader(s), %s; %d match jobs, %d digests, %d Message-IDs, 0 expected twice: %d",
		bouncer.Version, one, both, both/max(one, 1e-9), len(leaderIDs), strings.Join(perDetail[:2], ", "), mb.n, len(sent), len(received), dupIDs+notOnce+mb.bad+mb.overlaps+bumpBad)
	return nil
}

// throughputRun drives conditional feed polls against r.targets for pcRun
// and measures the processes' CPU.
func throughputRun(ctx context.Context, r *tpRun, apis []*proc, clients []*client, users []*pcUser, b *pgcluster.Bouncer, db string, postmaster int) error {
	r.statuses = map[int]int{}
	r.perAPI = make([]int, len(r.targets))
	cpu0 := make([]time.Duration, len(apis))
	for i, a := range apis {
		cpu0[i], _ = bench.ProcessCPU(a.pid)
	}
	b0, _ := bench.ProcessCPU(b.PID())
	pg0 := bench.ChildrenCPU(postmaster)
	m0 := bench.MachineCPU()
	s0, _ := bench.ProcessCPU(os.Getpid())
	rctx, cancel := context.WithTimeout(ctx, pcRun)
	defer cancel()
	// PgBouncer's pools, sampled while the run lasts.
	poolsDone := make(chan struct{})
	go func() {
		defer close(poolsDone)
		for rctx.Err() == nil {
			if st, err := b.Stats(rctx, db); err == nil {
				r.pools.clients, r.pools.server = max(r.pools.clients, int(st.Clients)), max(r.pools.server, int(st.Servers))
			}
			sleep(rctx, 500*time.Millisecond)
		}
	}()
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range pcClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := i % len(r.targets)
			c := clients[r.targets[t]]
			var durs []time.Duration
			n, errs := 0, 0
			var ex []string
			statuses := map[int]int{}
			for k := i; rctx.Err() == nil; k += pcClients {
				u := users[k%len(users)]
				u.mu.Lock()
				etag := u.etag
				u.mu.Unlock()
				resp := c.do(context.WithoutCancel(rctx), "GET", u.feed, "", nil, http.Header{"If-None-Match": {etag}})
				n++
				durs = append(durs, resp.dur)
				statuses[resp.status]++
				switch {
				case resp.err != nil:
					errs++
					ex = append(ex, resp.err.Error())
				case resp.status == 200:
					u.mu.Lock()
					u.etag = resp.header.Get("ETag")
					u.mu.Unlock()
				case resp.status != http.StatusNotModified:
					errs++
					ex = append(ex, fmt.Sprintf("%d %s", resp.status, oneLine(lastBytes(string(resp.body), 120))))
				}
			}
			mu.Lock()
			r.n += n
			r.errs += errs
			r.perAPI[t] += n
			r.durs = append(r.durs, durs...)
			for k, v := range statuses {
				r.statuses[k] += v
			}
			for _, x := range ex {
				if len(r.examples) < 3 {
					r.examples = append(r.examples, x)
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	<-poolsDone
	r.cpu = make([]time.Duration, len(apis))
	for i, a := range apis {
		c, _ := bench.ProcessCPU(a.pid)
		r.cpu[i] = c - cpu0[i]
	}
	b1, _ := bench.ProcessCPU(b.PID())
	r.bouncer = b1 - b0
	r.postgres = bench.ChildrenCPU(postmaster) - pg0
	r.machine = bench.MachineCPU() - m0
	s1, _ := bench.ProcessCPU(os.Getpid())
	r.self = s1 - s0
	return ctx.Err()
}

// leaderLog records River's leader, sample by sample. It is safe for
// concurrent use.
type leaderLog struct {
	mu      sync.Mutex
	samples int
	ids     []string    // the leader of each sample that had one
	at      []time.Time // when each of ids was read
}

func (l *leaderLog) sample(ctx context.Context, pool *pgxpool.Pool) {
	var id string
	err := pool.QueryRow(ctx, `SELECT leader_id FROM river.river_leader WHERE expires_at > now()`).Scan(&id)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples++
	l.ids = append(l.ids, id)
	l.at = append(l.at, time.Now())
}

// watch samples the leader every interval until the returned stop is
// called (stop waits for the sampler to end; calling it again does nothing).
func (l *leaderLog) watch(ctx context.Context, pool *pgxpool.Pool, every time.Duration) (stop func()) {
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for lctx.Err() == nil {
			l.sample(lctx, pool)
			sleep(lctx, every)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// firstSince returns when id was first read as the leader at or after t.
func (l *leaderLog) firstSince(id string, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.ids {
		if x == id && !l.at[i].Before(t) {
			return l.at[i], true
		}
	}
	return time.Time{}, false
}

// summary returns the distinct leaders in order of appearance and how often
// the leader changed.
func (l *leaderLog) summary() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var distinct []string
	changes := 0
	for i, id := range l.ids {
		if !slices.Contains(distinct, id) {
			distinct = append(distinct, id)
		}
		if i > 0 && id != l.ids[i-1] {
			changes++
		}
	}
	return distinct, changes
}

// periodicRun is what river_job holds of one periodic kind.
type periodicRun struct {
	n           int
	first, last time.Time
	minGap      time.Duration  // between two inserts in a row; 0 below two
	by          map[string]int // worker client id → jobs it worked
	at          []time.Time    // every insert, in order
}

// add counts one job inserted at at (in insertion order) and worked by by.
func (p *periodicRun) add(at time.Time, by string) {
	if p.n == 0 {
		p.first = at
	} else if g := at.Sub(p.last); p.n == 1 || g < p.minGap {
		p.minGap = g
	}
	p.last = at
	p.n++
	p.by[by]++
	p.at = append(p.at, at)
}

// periodicRuns reads the periodic jobs inserted in [from, to].
func periodicRuns(ctx context.Context, pool *pgxpool.Pool, from, to time.Time) (map[string]*periodicRun, error) {
	rows, err := pool.Query(ctx, `
		SELECT kind, created_at, coalesce(attempted_by[array_upper(attempted_by, 1)], 'never worked')
		FROM river.river_job WHERE kind = ANY($1) AND created_at BETWEEN $2 AND $3 ORDER BY kind, created_at`,
		[]string{"digest_schedule", "harvest_arxiv", "channel_schedule", "channel_prune"}, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*periodicRun{}
	for _, k := range []string{"digest_schedule", "harvest_arxiv", "channel_schedule", "channel_prune"} {
		out[k] = &periodicRun{by: map[string]int{}}
	}
	for rows.Next() {
		var kind, by string
		var at time.Time
		if err := rows.Scan(&kind, &at, &by); err != nil {
			return nil, err
		}
		out[kind].add(at, by)
	}
	return out, rows.Err()
}

// matchRuns is what river_job holds of the match jobs.
type matchRuns struct {
	n, bad, overlaps int
	by               map[string]int
}

// matchJobs reads every match_batch job: how many did not complete on
// their first attempt by one worker, and whether any two seq ranges
// overlap.
func matchJobs(ctx context.Context, pool *pgxpool.Pool) (matchRuns, error) {
	m := matchRuns{by: map[string]int{}}
	rows, err := pool.Query(ctx, `
		SELECT state::text, attempt, coalesce(array_length(attempted_by, 1), 0), coalesce(attempted_by[1], ''), args
		FROM river.river_job WHERE kind = 'match_batch'`)
	if err != nil {
		return m, err
	}
	defer rows.Close()
	type span struct{ from, to int64 }
	var spans []span
	for rows.Next() {
		var state, by string
		var attempt, workers int
		var args []byte
		if err := rows.Scan(&state, &attempt, &workers, &by, &args); err != nil {
			return m, err
		}
		m.n++
		if state != "completed" || attempt != 1 || workers != 1 {
			m.bad++
		}
		m.by[by]++
		var a struct {
			FromSeq int64 `json:"from_seq"`
			ToSeq   int64 `json:"to_seq"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return m, fmt.Errorf("match job args %s: %w", args, err)
		}
		spans = append(spans, span{a.FromSeq, a.ToSeq})
	}
	if err := rows.Err(); err != nil {
		return m, err
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.from - b.from) })
	for i := 1; i < len(spans); i++ {
		if spans[i].from <= spans[i-1].to {
			m.overlaps++
		}
	}
	return m, nil
}

// jobWorkers counts the jobs of kind by the worker that last worked them.
func jobWorkers(ctx context.Context, pool *pgxpool.Pool, kind string) (map[string]int, error) {
	rows, err := pool.Query(ctx, `SELECT coalesce(attempted_by[array_upper(attempted_by, 1)], 'never worked') FROM river.river_job WHERE kind = $1`, kind)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, id := range ids {
		out[id]++
	}
	return out, nil
}

// feedVersions returns every user's feed version.
func feedVersions(ctx context.Context, pool *pgxpool.Pool) (map[int64]int64, error) {
	rows, err := pool.Query(ctx, `SELECT user_id, version FROM user_feeds`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		out[id] = v
	}
	return out, rows.Err()
}

func rate(n int, d time.Duration) float64 { return float64(n) / max(d.Seconds(), 1e-9) }

// cores renders CPU time used over d as cores busy on average.
func cores(cpu, d time.Duration) string {
	return fmt.Sprintf("%.2f", cpu.Seconds()/max(d.Seconds(), 1e-9))
}

func cpuCount() int { return runtime.NumCPU() }
