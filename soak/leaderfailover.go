package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/fake/oaipmh"
)

// Sizes and timings of the leader-failover scenario.
const (
	lfDaily         = 144 // users with a daily digest, made due in rounds
	lfDailyRound    = 6
	lfDailyEvery    = 5 * time.Second
	lfInstant       = 48 // users with instant alerts
	lfHooks         = 24 // users with an instant webhook channel
	lfHarvested     = 60 // records the fake repository starts with
	lfGrowBy        = 12 // records it adds every lfGrowEvery
	lfGrowEvery     = 15 * time.Second
	lfPushEvery     = 1500 * time.Millisecond
	lfPerPush       = 6
	lfBefore        = 45 * time.Second // load before the kill
	lfAfter         = 75 * time.Second // load after the new leader
	lfHarvestEvery  = time.Minute      // HARVEST_INTERVAL (its minimum)
	lfDigestEvery   = 2 * time.Second  // DIGEST_SCHEDULE_INTERVAL
	lfFailoverBound = 30 * time.Second
	lfDrainBound    = 3 * time.Minute
	lfRescueAfter   = 30 * time.Second // JOB_RESCUE_AFTER
	lfHarvestPrefix = "2905"
	lfPushPrefix    = "2906"
)

// lfUser is a user of the leader-failover scenario.
type lfUser struct {
	sub, email, category, kind string // kind: daily, instant, hook
	token, hookPath            string
	id                         int64
	dueAt                      time.Time // daily: when made due (zero: never)
}

func runLeaderFailover(ctx context.Context, e *env, res *Result) error {
	res.What = fmt.Sprintf(`A fresh database; two `+"`followfeed worker`"+` processes and one `+"`api`"+` on it, the workers with River's election as the product configures it (River's defaults: a leader re-elected every 5 s, its row valid 15 s), HARVEST_INTERVAL=%s, DIGEST_SCHEDULE_INTERVAL=%s, JOB_TIMEOUT=20s, JOB_RESCUE_AFTER=%s and JOB_RETRY_MAX=3s. A fake arXiv OAI-PMH repository starts with %d arXivRaw records and adds %d every %s; a fake OpenAlex knows none; a recording SMTP sink (every reply held 30 ms) and a webhook receiver that checks every signature. Users, created through the api with verified addresses, each follow one of six categories: %d with a daily digest, %d with instant alerts, %d with an instant webhook channel.

Load, from the first harvest on: a batch of %d papers pushed through the api every %s; %d daily digests made due every %s (each user once, so that digests fall due before, during and after the failover); the instant alerts' River jobs (the product holds them 10 minutes to gather a burst) made due every 2 s. After %s of load the process that `+"`river.river_leader`"+` names (each worker logs its River client id at start, `+"`working jobs river_client_id=…`"+`) is SIGKILLed; the load goes on for %s after the survivor is leader, then stops, and the soak waits (at most %s) until every match job, digest, alert and webhook event is final and the repository's last records are stored. `+"`river_leader`"+` is read every 200 ms throughout; every periodic job, match job, ledger row, message and webhook request is counted afterwards.`,
		lfHarvestEvery, lfDigestEvery, lfRescueAfter, lfHarvested, lfGrowBy, lfGrowEvery, lfDaily, lfInstant, lfHooks,
		lfPerPush, lfPushEvery, lfDailyRound, lfDailyEvery, lfBefore, lfAfter, lfDrainBound)
	res.Policy = `**Policies checked.** *One leader, and a new one when it dies:* River keeps one row in ` + "`river_leader`" + `; the leader renews it every 5 s for 15 s. A leader killed outright cannot resign, so its row lives until it expires; the survivor tries every 5 s (±1 s) and takes the row once it has expired: a new leader within about 15–21 s. Only the leader inserts the periodic jobs (each kind unique while one is queued or running, and inserted at once when a process takes the lead), moves scheduled and retryable jobs to available, and rescues jobs stuck running (after JOB_RESCUE_AFTER): while there is no leader nothing periodic is inserted, delayed jobs wait, and jobs already available run on the survivor. *Nothing twice:* a match job covers its own seq range and is idempotent; a digest's ledger row is unique per (user, period) and its Message-ID is derived from them; an instant alert reserves (watermark, high seq] and moves the watermark in one transaction; a webhook event keeps its webhook-id on every retry (at least once: an event whose 2xx answer the killed worker never recorded is sent again, under the same id). Verdict: leadership moved to the survivor within the bound; no periodic job was inserted while no process led, none more often than one leader inserts it, and each resumed within its interval of the new leader (or, for a kind whose job was running on the killed worker, after its rescue); every stored key seq lies in exactly one completed match job's range; every digest made due was sent once (no Message-ID twice, one ledger row per user and period); every instant user's alerts tile their matches with no seq alerted twice or left out; every webhook paper reached its channel in exactly one event; the harvest went on (every record the repository added after the kill stored once, at its latest version).`

	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	up, err := startUpstreams(lfHarvestPrefix, lfHarvested, cats, 30*time.Millisecond)
	if err != nil {
		return err
	}
	defer up.close()
	sink, hooks, records := up.sink, up.hooks, up.repo.records

	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "leader-failover")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	env := append(append(e.baseEnv(db.url), up.env...), "DIGEST_SCHEDULE_INTERVAL="+lfDigestEvery.String(),
		"JOB_TIMEOUT=20s", "JOB_RESCUE_AFTER="+lfRescueAfter.String(), "JOB_RETRY_MAX=3s", "RATE_LIMIT_PER_USER=0")
	api, err := startProc(ctx, e.opts.Exe, "api", env, e.logPath("leader-failover", "api"))
	if err != nil {
		return err
	}
	defer api.stop()
	c := newClient(api.base, 16, 30*time.Second)
	defer c.close()

	users, err := lfMakeUsers(ctx, c, hooks, up.hookURL, cats)
	if err != nil {
		return err
	}
	userID, err := userIDs(ctx, db.pool, "soak-lf-")
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.id = userID[u.sub]; u.id == 0 {
			return fmt.Errorf("user %s not in the database", u.sub)
		}
	}
	e.logf("leader-failover: %d users (%d daily, %d instant, %d webhook)", len(users), lfDaily, lfInstant, lfHooks)

	// The leader, read every 200 ms from the workers' start.
	leaders := &leaderLog{}
	stopLeaders := leaders.watch(ctx, db.pool, 200*time.Millisecond)
	defer stopLeaders()

	workerEnv := append(slices.Clone(env), "HARVEST_INTERVAL="+lfHarvestEvery.String())
	runStart := time.Now()
	workers := make([]*proc, 2)
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.stop()
			}
		}
	}()
	ids := make([]string, 2) // River's client id of each worker
	for i := range workers {
		if workers[i], err = startProc(ctx, e.opts.Exe, "worker", workerEnv, e.logPath("leader-failover", fmt.Sprintf("worker%d", i+1))); err != nil {
			return err
		}
		if ids[i] = workers[i].riverClientID(); ids[i] == "" {
			return fmt.Errorf("worker %d logged no River client id (working jobs river_client_id=…): %s", i+1, workers[i].tail())
		}
	}
	var firstLeader string
	ok, err := waitFor(ctx, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		err := db.pool.QueryRow(ctx, `SELECT leader_id FROM river.river_leader WHERE expires_at > now()`).Scan(&firstLeader)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no River leader within 30 s of starting two workers")
	}
	elected1 := time.Now()
	dead := slices.Index(ids, firstLeader)
	if dead < 0 {
		return fmt.Errorf("river_leader names %q, neither worker's id (%s)", firstLeader, strings.Join(ids, ", "))
	}
	survivor := 1 - dead
	ok, err = waitStoredAndMatched(ctx, db.pool, lfHarvested, 90*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the first harvest did not store and match %d records within 90 s", lfHarvested)
	}
	e.logf("leader-failover: worker %d (%s) leads; first harvest matched %s after the workers started", dead+1, firstLeader, secs(time.Since(runStart)))

	// The load, until stopLoad.
	load := &lfLoad{}
	loadStart := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var loadWG sync.WaitGroup
	loadWG.Add(4)
	go func() { // pushes through the api
		defer loadWG.Done()
		for k := 0; loadCtx.Err() == nil; k++ {
			// Never cut short: a push the server took must be counted.
			got, err := pushRange(context.WithoutCancel(loadCtx), c, lfPushPrefix, k*lfPerPush, lfPerPush, cats)
			load.pushed(got, err)
			sleep(loadCtx, lfPushEvery)
		}
	}()
	go func() { // the repository grows
		defer loadWG.Done()
		for loadCtx.Err() == nil {
			sleep(loadCtx, lfGrowEvery)
			if loadCtx.Err() != nil {
				return
			}
			up.repo.grow(lfGrowBy)
			load.grown(time.Now(), lfGrowBy)
		}
	}()
	daily := where(users, func(u *lfUser) bool { return u.kind == "daily" })
	go func() { // daily digests fall due
		defer loadWG.Done()
		for next := 0; next < len(daily) && loadCtx.Err() == nil; next += lfDailyRound {
			round := daily[next:min(next+lfDailyRound, len(daily))]
			ids := make([]int64, len(round))
			for i, u := range round {
				ids[i] = u.id
			}
			_, err := makeDailyDue(context.WithoutCancel(loadCtx), db.pool, ids)
			at := time.Now()
			load.mu.Lock()
			if err != nil {
				load.errs = append(load.errs, "making digests due: "+err.Error())
			} else {
				for _, u := range round {
					u.dueAt = at
				}
			}
			load.mu.Unlock()
			sleep(loadCtx, lfDailyEvery)
		}
	}()
	go func() { // instant alerts' jobs made due
		defer loadWG.Done()
		for loadCtx.Err() == nil {
			ageInstantJobs(loadCtx, db)
			sleep(loadCtx, 2*time.Second)
		}
	}()

	sleep(ctx, lfBefore)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var leaderNow string
	if err := db.pool.QueryRow(ctx, `SELECT leader_id FROM river.river_leader WHERE expires_at > now()`).Scan(&leaderNow); err != nil {
		return fmt.Errorf("reading the leader before the kill: %w", err)
	}
	if leaderNow != ids[dead] {
		// Leadership moved by itself before the kill; kill whoever leads.
		if dead = slices.Index(ids, leaderNow); dead < 0 {
			return fmt.Errorf("river_leader names %q before the kill, neither worker's id", leaderNow)
		}
		survivor = 1 - dead
	}
	// The kill comes while the leader is in the middle of a job that
	// sends or matches (polled every 20 ms, for at most 20 s), so that its
	// rescue is part of the run.
	_, err = waitFor(ctx, 20*time.Second, 20*time.Millisecond, func() (bool, error) {
		n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE state = 'running'
			AND attempted_by[array_upper(attempted_by, 1)] = $1 AND kind = ANY($2)`,
			ids[dead], []string{"digest_send", "digest_instant", "match_batch", "channel_deliver"})
		return n > 0, err
	})
	if err != nil {
		return err
	}
	workers[dead].kill()
	killAt := time.Now()
	held, err := lfRunningOn(ctx, db, ids[dead])
	if err != nil {
		return err
	}
	papersAtKill, _ := count(ctx, db.pool, `SELECT count(*) FROM papers`)
	loadAtKill := killAt.Sub(loadStart)
	e.logf("leader-failover: SIGKILL to worker %d (the leader, %s) %s into the load; it held %s", dead+1, ids[dead], secs(loadAtKill), formatCounts(held))
	var electedAt time.Time
	ok, err = waitFor(ctx, 2*lfFailoverBound, 100*time.Millisecond, func() (bool, error) {
		var id string
		err := db.pool.QueryRow(ctx, `SELECT leader_id FROM river.river_leader WHERE expires_at > now()`).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && id != ids[survivor]) {
			return false, nil
		}
		electedAt = time.Now()
		return err == nil, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("worker %d did not take the lead within %s of the kill", survivor+1, 2*lfFailoverBound)
	}
	failover := electedAt.Sub(killAt)
	e.logf("leader-failover: worker %d leads %s after the kill", survivor+1, secs(failover))
	sleep(ctx, lfAfter)
	stopLoad()
	loadWG.Wait()
	loadEnd := time.Now()
	e.logf("leader-failover: load stopped; %d batches pushed, %d records added to the repository", load.batches, load.added)

	// Drain: the last instant alerts made due, until everything is final.
	var st lfState
	drained, err := waitFor(ctx, lfDrainBound, 2*time.Second, func() (bool, error) {
		ageInstantJobs(ctx, db)
		var err error
		st, err = lfOpen(ctx, db, records(), load, ids[dead], killAt)
		return err == nil && st.idle(), err
	})
	if err != nil {
		return err
	}
	drainTook := time.Since(loadEnd)
	workers[survivor].stop()
	runEnd := time.Now()
	stopLeaders()
	apiAlive := api.alive()
	e.logf("leader-failover: drained in %s (%v)", secs(drainTook), drained)

	// --- Figures and checks.

	// Leadership.
	leaderIDs, changes := leaders.summary()
	seenNew, seen := leaders.firstSince(ids[survivor], killAt)
	res.figure("workers", "worker 1 %s, worker 2 %s; worker %d led from %s after their start", ids[0], ids[1], dead+1, secs(elected1.Sub(runStart)))
	res.figure("SIGKILL", "worker %d, the leader, %s into the load (%d papers stored), while it was running %s", dead+1, secs(loadAtKill), papersAtKill, formatCounts(held))
	res.figure("time to a new leader", "%s from the kill until river_leader named worker %d (bound %s; River: row valid 15 s after its last renewal, survivor tries every 5 s ± 1 s)", secs(failover), survivor+1, lfFailoverBound)
	res.figure("river_leader samples", "%d (every 200 ms): %d distinct leaders, %d changes", leaders.samples, len(leaderIDs), changes)
	res.check("leadership moved to the survivor", seen && failover <= lfFailoverBound && slices.Equal(leaderIDs, []string{ids[dead], ids[survivor]}) && changes == 1,
		"leaders in order: %s (the killed worker, then the survivor); the survivor led %s after the kill (first 200 ms sample %s after); %d changes of leader in %d samples",
		strings.Join(leaderIDs, " → "), secs(failover), secs(seenNew.Sub(killAt)), changes, leaders.samples)

	// Periodic jobs.
	periodic, err := periodicRuns(ctx, db.pool, runStart, runEnd)
	if err != nil {
		return err
	}
	var pRows, pBad []string
	names := strings.NewReplacer(ids[dead], "the killed worker", ids[survivor], "the survivor")
	for _, k := range []struct {
		kind  string
		every time.Duration
	}{{"digest_schedule", lfDigestEvery}, {"harvest_arxiv", lfHarvestEvery}, {"channel_schedule", time.Minute}, {"channel_prune", time.Hour}} {
		p := periodic[k.kind]
		t := judgeTerms(p.at, k.every, elected1, killAt, electedAt, runEnd)
		// A kind whose job the killed worker was running stays blocked
		// (unique while running) until the leader rescues it.
		resumeBound := k.every + 5*time.Second
		if held[k.kind] > 0 {
			// River's rescuer (every 30 s) retries it JOB_RESCUE_AFTER
			// after it started; the retry waits its back-off (5 s) and
			// the scheduler (5 s); the kind is inserted again at the
			// tick after it completed.
			resumeBound += lfRescueAfter + 40*time.Second
		}
		good := t.between == 0 && t.before <= t.maxBefore && t.after <= t.maxAfter && t.after > 0 && t.resume <= resumeBound
		if !good {
			pBad = append(pBad, k.kind)
		}
		pRows = append(pRows, fmt.Sprintf("| %s | %s | %d (≤ %d) | %d | %d (≤ %d) | %s (≤ %s) | %s | %s |", k.kind, k.every, t.before, t.maxBefore, t.between,
			t.after, t.maxAfter, secs(t.resume), secs(resumeBound), gapOrNone(t.minGap), names.Replace(formatCounts(p.by))))
	}
	res.Tables = append(res.Tables, "Periodic jobs inserted (`river_job.created_at`) in each leader's term: the killed leader's (from its election to the kill), none (the kill to the survivor's election), the survivor's (to the end); one leader inserts one at its election and one per interval, so a kind may run again sooner than its interval after a failover (the closest two inserts of an hourly kind are the two leaders' first). *Resumed* is from the survivor's election to its first insert.\n\n"+
		"| kind | interval | killed leader's term | no leader | survivor's term | resumed after | closest two | worked by |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n"+strings.Join(pRows, "\n"))
	res.check("periodic jobs neither stopped nor ran twice", len(pBad) == 0,
		"none inserted while no process led; none more often than one leader inserts it; each resumed under the survivor within its interval (+5 s; + the rescue for a kind the killed worker was running); failing: %s", noneOr(pBad))

	// Match jobs: every stored seq in exactly one completed range.
	mc, err := lfMatchCoverage(ctx, db, ids[dead])
	if err != nil {
		return err
	}
	res.figure("match jobs", "%d (%s); %d ran again after the kill (attempt > 1); last worked by: %s", mc.jobs, formatCounts(mc.states), mc.rerun, formatCounts(mc.by))
	res.check("every seq matched exactly once", mc.jobs > 0 && mc.seqs > 0 && len(mc.lost) == 0 && len(mc.twice) == 0 && mc.notDone == 0,
		"%d key seqs stored (paper_keys, search_hits) against %d match jobs' ranges: %d in no range %s, %d in two or more %s; %d jobs not completed",
		mc.seqs, mc.jobs, len(mc.lost), sample(mc.lost), len(mc.twice), sample(mc.twice), mc.notDone)

	// Digests and alerts.
	dg, err := lfDigests(ctx, db, users, sink, killAt, electedAt)
	if err != nil {
		return err
	}
	res.figure("daily digests", "%d made due (%d before the kill, %d while no process led, %d after); ledger %s; due → sent: %s", dg.due, dg.dueBefore, dg.dueGap, dg.dueAfter,
		formatCounts(dg.daily, "sent", "unknown", "skipped", "failed", "pending", "sending"), dg.latency)
	res.figure("instant alerts", "%d ledger rows for %d users: %s", dg.instantRows, lfInstant, formatCounts(dg.instant, "sent", "unknown", "skipped", "failed", "pending", "sending"))
	res.figure("messages received by the SMTP sink", "%d (%d distinct Message-IDs)", dg.messages, dg.distinct)
	res.check("every due digest sent exactly once", dg.dueGap > 0 && dg.dueAfter > 0 && dg.dailyRows == dg.due && dg.dailyFinal == dg.due && dg.dupIDs == 0 && dg.sentNotOnce == 0 && dg.unknownTwice == 0,
		"%d users made due (%d of them while no process led), %d daily rows (one per user and period), %d final; %d Message-IDs received twice; %d sent rows not received exactly once; %d unknown rows received twice",
		dg.due, dg.dueGap, dg.dailyRows, dg.dailyFinal, dg.dupIDs, dg.sentNotOnce, dg.unknownTwice)
	res.check("instant alerts: every match once", dg.instantRows > 0 && dg.instantOpen == 0 && dg.tileBad == 0 && dg.uncovered == 0,
		"%d users' alert windows: %d overlap or leave a gap, %d category seqs alerted in no sent window or in two; %d rows not final",
		lfInstant, dg.tileBad, dg.uncovered, dg.instantOpen)

	// Webhooks.
	wh, err := lfWebhooks(ctx, db, users, hooks, load, records(), killAt)
	if err != nil {
		return err
	}
	res.figure("webhook events", "%d in the ledger (%s); the receiver answered %d requests, %d webhook-ids accepted twice (%d first accepted before the kill)",
		wh.events, formatCounts(wh.states, "delivered", "pending", "failed"), wh.tally.requests, wh.tally.repeats, wh.tally.inFlight)
	res.check("every webhook paper in exactly one event", wh.events > 0 && wh.states["pending"] == 0 && wh.states["failed"] == 0 && wh.missing == 0 && wh.tally.paperTwice == 0 &&
		wh.tally.unsigned == 0 && wh.tally.repeats == wh.tally.inFlight,
		"%d channels × their category's papers: %d papers missing, %d in two events; %d requests unsigned; %d repeated webhook-ids not explained by the kill",
		lfHooks, wh.missing, wh.tally.paperTwice, wh.tally.unsigned, wh.tally.repeats-wh.tally.inFlight)

	// Harvest and pushes.
	res.figure("load", "%d batches of %d papers pushed (%d failed); the repository grew by %d records (%d after the kill)", load.batches, lfPerPush, len(load.errs), load.added, load.addedAfter(killAt))
	res.check("the harvest continued", st.papersBad == 0 && st.papersExtra == 0 && st.papersOnce == len(records())+load.batches*lfPerPush && st.harvestsAfter > 0 && load.addedAfter(killAt) > 0,
		"%d records and pushed papers stored once at their latest version, %d missing or wrong, %d extra; %d harvest_arxiv jobs completed after the kill; every record added after the kill stored",
		st.papersOnce, st.papersBad, st.papersExtra, st.harvestsAfter)
	res.check("no request failed, everything drained", len(load.errs) == 0 && apiAlive && drained,
		"%d pushes or digest updates failed %s; api alive: %v; everything final %s after the load stopped (bound %s): %v",
		len(load.errs), sample(load.errs), apiAlive, secs(drainTook), lfDrainBound, drained)
	rescued, _ := jobWorkersOf(ctx, db, ids[dead])
	res.figure("jobs the killed worker had started and the survivor finished", "%s (River's rescuer, on the leader, retries a job JOB_RESCUE_AFTER after it started)", formatCounts(rescued))
	jobs, _ := jobCounts(ctx, db.pool, 0)
	res.figure("River jobs", "%s", formatJobs(jobs))

	res.Summary = fmt.Sprintf("leader SIGKILLed, survivor led after %s; %s; %d match jobs, %d seqs: lost %d, twice %d; %d digests + %d alerts, Message-IDs twice: %d; %d webhook events, papers twice: %d",
		secs(failover), strings.Join(lfPeriodicSummary(periodic, killAt), ", "), mc.jobs, mc.seqs, len(mc.lost), len(mc.twice),
		dg.dailyRows, dg.instantRows, dg.dupIDs, wh.events, wh.tally.paperTwice)
	return nil
}

// lfMakeUsers creates the scenario's users through the api: daily users
// (their digests made due later), instant users (PATCH /v1/me) and
// users with an instant webhook channel to hooks.
func lfMakeUsers(ctx context.Context, c *client, hooks *hookSink, hookURL string, cats []string) ([]*lfUser, error) {
	var users []*lfUser
	add := func(kind string, n int) {
		for i := range n {
			users = append(users, &lfUser{sub: fmt.Sprintf("soak-lf-%s-%d", kind, i), email: fmt.Sprintf("lf-%s-%d@soak.example", kind, i),
				category: cats[i%len(cats)], kind: kind})
		}
	}
	add("daily", lfDaily)
	add("instant", lfInstant)
	add("hook", lfHooks)
	err := forEach(ctx, 8, len(users), func(i int) error {
		u := users[i]
		var err error
		if u.token, _, err = c.newUser(ctx, u.sub, u.email, u.category, "json"); err != nil {
			return err
		}
		switch u.kind {
		case "instant":
			_, err = c.must(ctx, "PATCH", "/v1/me", u.token, map[string]any{"digest": map[string]any{"frequency": "instant"}}, 200)
		case "hook":
			u.hookPath = fmt.Sprintf("/hook/%d", i)
			err = hooks.addChannel(ctx, c, u.token, hookURL, u.hookPath)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating users: %w", err)
	}
	return users, nil
}

// where returns the elements of xs that keep accepts.
func where[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// ageInstantJobs makes every waiting instant alert's job due now. Aging on
// purpose, in the soak's own SQL: the product holds an alert
// notify.InstantDelay (10 minutes) to gather a burst of matches into one
// mail. River's leader moves the jobs to available.
func ageInstantJobs(ctx context.Context, db *freshDB) {
	_, _ = db.pool.Exec(ctx, `UPDATE river.river_job SET scheduled_at = now() WHERE kind = 'digest_instant' AND state = 'scheduled' AND scheduled_at > now()`)
}

// lfLoad is what the load did.
type lfLoad struct {
	mu      sync.Mutex
	batches int
	ids     map[string][]string // pushed paper ids by category
	errs    []string
	added   int
	growth  []time.Time // when the repository grew (lfGrowBy each)
}

func (l *lfLoad) pushed(ids map[string][]string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs = append(l.errs, err.Error())
		return
	}
	if l.ids == nil {
		l.ids = map[string][]string{}
	}
	for c, v := range ids {
		l.ids[c] = append(l.ids[c], v...)
	}
	l.batches++
}

func (l *lfLoad) grown(at time.Time, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.added += n
	l.growth = append(l.growth, at)
}

func (l *lfLoad) addedAfter(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.growth {
		if at.After(t) {
			n += lfGrowBy
		}
	}
	return n
}

// pushedRecords returns the pushed papers as records (version 1) for
// checkPapers.
func (l *lfLoad) pushedRecords() []oaipmh.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []oaipmh.Record
	for c, ids := range l.ids {
		for _, id := range ids {
			out = append(out, oaipmh.Record{ID: id, Version: 1, Categories: []string{c}})
		}
	}
	return out
}

// lfRunningOn counts, by kind, the jobs running on client id.
func lfRunningOn(ctx context.Context, db *freshDB, id string) (map[string]int, error) {
	return countsBy(ctx, db.pool, `SELECT kind, count(*) FROM river.river_job
		WHERE state = 'running' AND attempted_by[array_upper(attempted_by, 1)] = $1 GROUP BY 1`, id)
}

// jobWorkersOf counts, by kind, the jobs client id attempted that another
// client finished.
func jobWorkersOf(ctx context.Context, db *freshDB, id string) (map[string]int, error) {
	return countsBy(ctx, db.pool, `SELECT kind, count(*) FROM river.river_job
		WHERE $1 = ANY(attempted_by) AND attempted_by[array_upper(attempted_by, 1)] <> $1 GROUP BY 1`, id)
}

// lfState is one look at what is still open.
type lfState struct {
	open                               map[string]map[string]int
	digestsOpen, eventsOpen, deadHeld  int
	papersOnce, papersBad, papersExtra int
	harvestsAfter                      int64
}

func (s lfState) idle() bool {
	return len(s.open) == 0 && s.digestsOpen == 0 && s.eventsOpen == 0 && s.deadHeld == 0 && s.papersBad == 0 && s.papersExtra == 0
}

// lfOpen reads what is still to be done: River jobs other than the
// periodic scheduler's not final, digests and webhook events not final,
// jobs the killed worker still holds, records not yet stored.
func lfOpen(ctx context.Context, db *freshDB, recs []oaipmh.Record, load *lfLoad, dead string, kill time.Time) (lfState, error) {
	var s lfState
	var err error
	jobs, err := jobCounts(ctx, db.pool, 0)
	if err != nil {
		return s, err
	}
	s.open = map[string]map[string]int{}
	for kind, states := range jobs {
		for st, n := range states {
			if slices.Contains([]string{"completed", "discarded", "cancelled"}, st) || kind == "digest_schedule" || kind == "channel_schedule" ||
				kind == "channel_prune" || kind == "harvest_arxiv" || kind == "enrich_openalex" || kind == "harvest_check" {
				continue
			}
			if s.open[kind] == nil {
				s.open[kind] = map[string]int{}
			}
			s.open[kind][st] = n
		}
	}
	if n, err := count(ctx, db.pool, `SELECT count(*) FROM digests WHERE state IN ('pending', 'sending')`); err != nil {
		return s, err
	} else {
		s.digestsOpen = int(n)
	}
	if n, err := count(ctx, db.pool, `SELECT count(*) FROM channel_events WHERE state = 'pending'`); err != nil {
		return s, err
	} else {
		s.eventsOpen = int(n)
	}
	if n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE state = 'running' AND attempted_by[array_upper(attempted_by, 1)] = $1`, dead); err != nil {
		return s, err
	} else {
		s.deadHeld = int(n)
	}
	all := append(slices.Clone(recs), load.pushedRecords()...)
	if s.papersOnce, s.papersBad, s.papersExtra, err = checkPapers(ctx, db, all); err != nil {
		return s, err
	}
	s.harvestsAfter, err = count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'harvest_arxiv' AND state = 'completed' AND created_at > $1`, kill)
	return s, err
}

// terms is judgeTerms' reading of one periodic kind.
type terms struct {
	before, between, after int           // inserts in the killed leader's term, with no leader, in the survivor's
	maxBefore, maxAfter    int           // what one leader inserts in each term (one at election, one per interval, +1 for a boundary)
	resume                 time.Duration // the survivor's election to its first insert (the term's length when none)
	minGap                 time.Duration // closest two inserts (0 below two)
}

// judgeTerms splits a periodic kind's inserts (in order) into the leaders'
// terms: [elected1, kill], (kill, elected2), [elected2, end].
func judgeTerms(at []time.Time, every time.Duration, elected1, kill, elected2, end time.Time) terms {
	t := terms{maxBefore: 2 + int(kill.Sub(elected1)/every), maxAfter: 2 + int(end.Sub(elected2)/every), resume: end.Sub(elected2)}
	// A leader's first insert may be read a moment before the soak saw it
	// elected (it polls): an insert up to a second early counts as its.
	const slack = time.Second
	first := true
	for i, a := range at {
		if i > 0 {
			if g := a.Sub(at[i-1]); t.minGap == 0 || g < t.minGap {
				t.minGap = g
			}
		}
		switch {
		case !a.After(kill):
			t.before++
		case a.Before(elected2.Add(-slack)):
			t.between++
		default:
			t.after++
			if first {
				t.resume, first = max(a.Sub(elected2), 0), false
			}
		}
	}
	return t
}

// seqRange is the closed seq range [from, to].
type seqRange struct{ from, to int64 }

// coverage returns, of seqs, those no range holds and those two or more
// hold.
func coverage(ranges []seqRange, seqs []int64) (lost, twice []int64) {
	rs := slices.Clone(ranges)
	slices.SortFunc(rs, func(a, b seqRange) int { return int(a.from - b.from) })
	for _, s := range seqs {
		// The ranges starting at or before s; a range can hold s only if
		// it is among them.
		n := 0
		end, _ := slices.BinarySearchFunc(rs, s, func(r seqRange, s int64) int {
			if r.from <= s {
				return -1
			}
			return 1
		})
		for _, r := range rs[:end] {
			if r.to >= s {
				n++
			}
		}
		switch {
		case n == 0:
			lost = append(lost, s)
		case n > 1:
			twice = append(twice, s)
		}
	}
	return lost, twice
}

// tiling reports, of windows (from, to] sorted by from, how many overlap
// the one before or leave a gap after it.
func tiling(ws []seqRange) (bad int) {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b seqRange) int { return int(a.from - b.from) })
	for i := 1; i < len(ws); i++ {
		if ws[i].from != ws[i-1].to {
			bad++
		}
	}
	return bad
}

// matchCoverage is what lfMatchCoverage found.
type matchCoverage struct {
	jobs, seqs, rerun, notDone int
	states, by                 map[string]int
	lost, twice                []int64
}

// lfMatchCoverage reads every match job's range and every stored key seq.
func lfMatchCoverage(ctx context.Context, db *freshDB, dead string) (matchCoverage, error) {
	m := matchCoverage{states: map[string]int{}, by: map[string]int{}}
	rows, err := db.pool.Query(ctx, `SELECT state::text, attempt, coalesce(attempted_by[array_upper(attempted_by, 1)], ''), args FROM river.river_job WHERE kind = 'match_batch'`)
	if err != nil {
		return m, err
	}
	var ranges []seqRange
	for rows.Next() {
		var state, by string
		var attempt int
		var args []byte
		if err := rows.Scan(&state, &attempt, &by, &args); err != nil {
			rows.Close()
			return m, err
		}
		var a struct {
			FromSeq int64 `json:"from_seq"`
			ToSeq   int64 `json:"to_seq"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			rows.Close()
			return m, fmt.Errorf("match job args %s: %w", args, err)
		}
		m.jobs++
		m.states[state]++
		if by == dead {
			by = "killed worker"
		} else if by != "" {
			by = "survivor"
		}
		m.by[by]++
		if attempt > 1 {
			m.rerun++
		}
		if state != "completed" {
			m.notDone++
		}
		ranges = append(ranges, seqRange{a.FromSeq, a.ToSeq})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return m, err
	}
	rows, err = db.pool.Query(ctx, `SELECT DISTINCT seq FROM paper_keys UNION SELECT seq FROM search_hits ORDER BY 1`)
	if err != nil {
		return m, err
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return m, err
	}
	m.seqs = len(seqs)
	m.lost, m.twice = coverage(ranges, seqs)
	return m, nil
}

// lfDigestResult is what lfDigests found.
type lfDigestResult struct {
	due, dueBefore, dueGap, dueAfter             int
	dailyRows, dailyFinal                        int
	daily, instant                               map[string]int
	instantRows, instantOpen, tileBad, uncovered int
	messages, distinct, dupIDs                   int
	sentNotOnce, unknownTwice                    int
	latency                                      string
}

// lfDigests reads the ledger and compares it with the sink.
func lfDigests(ctx context.Context, db *freshDB, users []*lfUser, sink *mailSink, kill, elected time.Time) (lfDigestResult, error) {
	r := lfDigestResult{daily: map[string]int{}, instant: map[string]int{}}
	received, total := sink.snapshot()
	r.messages, r.distinct = total, len(received)
	for _, n := range received {
		if n > 1 {
			r.dupIDs++
		}
	}
	type row struct {
		user             int64
		kind, state, mid string
		from, to         *int64
		sentAt           *time.Time
	}
	rows, err := db.pool.Query(ctx, `SELECT user_id, kind, state, coalesce(message_id, ''), from_seq, to_seq, sent_at FROM digests`)
	if err != nil {
		return r, err
	}
	all, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var x row
		err := cr.Scan(&x.user, &x.kind, &x.state, &x.mid, &x.from, &x.to, &x.sentAt)
		return x, err
	})
	if err != nil {
		return r, err
	}
	byUser := map[int64][]row{}
	for _, x := range all {
		byUser[x.user] = append(byUser[x.user], x)
		switch x.kind {
		case "daily":
			r.dailyRows++
			r.daily[x.state]++
			if x.state != "pending" && x.state != "sending" {
				r.dailyFinal++
			}
		case "instant":
			r.instantRows++
			r.instant[x.state]++
			if x.state == "pending" || x.state == "sending" {
				r.instantOpen++
			}
		}
		switch {
		case x.state == "sent" && received[x.mid] != 1:
			r.sentNotOnce++
		case x.state == "unknown" && received[x.mid] > 1:
			r.unknownTwice++
		}
	}
	var lat [3]time.Duration // worst due → sent: before the kill, no leader, after
	for _, u := range users {
		if u.kind != "daily" || u.dueAt.IsZero() {
			continue
		}
		r.due++
		phase := 0
		switch {
		case u.dueAt.After(elected):
			phase = 2
			r.dueAfter++
		case u.dueAt.After(kill):
			phase = 1
			r.dueGap++
		default:
			r.dueBefore++
		}
		for _, x := range byUser[u.id] {
			if x.kind == "daily" && x.sentAt != nil {
				lat[phase] = max(lat[phase], x.sentAt.Sub(u.dueAt))
			}
		}
	}
	r.latency = fmt.Sprintf("worst %s when due before the kill, %s while no process led, %s after", secs(lat[0]), secs(lat[1]), secs(lat[2]))
	// Instant users: their alerts' windows tile (0, last] and every seq
	// of their category's key rows lies in exactly one alert that held
	// papers (sent or unknown).
	for _, u := range users {
		if u.kind != "instant" {
			continue
		}
		var ws, held []seqRange
		for _, x := range byUser[u.id] {
			if x.kind != "instant" || x.from == nil || x.to == nil {
				continue
			}
			ws = append(ws, seqRange{*x.from, *x.to})
			if x.state == "sent" || x.state == "unknown" {
				held = append(held, seqRange{*x.from + 1, *x.to})
			}
		}
		r.tileBad += tiling(ws)
		rows, err := db.pool.Query(ctx, `SELECT seq FROM paper_keys WHERE key = $1 ORDER BY seq`, "category:"+u.category)
		if err != nil {
			return r, err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return r, err
		}
		lost, twice := coverage(held, seqs)
		r.uncovered += len(lost) + len(twice)
	}
	return r, nil
}

// lfWebhookResult is what lfWebhooks found.
type lfWebhookResult struct {
	events  int
	states  map[string]int
	missing int
	tally   hookTally
}

// lfWebhooks compares what each webhook channel received with the papers
// of its category.
func lfWebhooks(ctx context.Context, db *freshDB, users []*lfUser, hooks *hookSink, load *lfLoad, recs []oaipmh.Record, kill time.Time) (lfWebhookResult, error) {
	r := lfWebhookResult{states: map[string]int{}}
	st, err := countsBy(ctx, db.pool, `SELECT state, count(*) FROM channel_events WHERE type = 'papers.matched' GROUP BY 1`)
	if err != nil {
		return r, err
	}
	r.states = st
	for _, n := range st {
		r.events += n
	}
	r.tally = tallyHooks(hooks.received(), kill)
	want := map[string][]string{} // category → every paper in it
	for _, rec := range append(slices.Clone(recs), load.pushedRecords()...) {
		for _, c := range rec.Categories {
			want[c] = append(want[c], rec.ID)
		}
	}
	for _, u := range users {
		if u.kind != "hook" {
			continue
		}
		for _, id := range want[u.category] {
			if !r.tally.papers[u.hookPath][id] {
				r.missing++
			}
		}
	}
	return r, nil
}

// lfPeriodicSummary renders each periodic kind's inserts per term.
func lfPeriodicSummary(p map[string]*periodicRun, kill time.Time) []string {
	var out []string
	for _, k := range []string{"digest_schedule", "harvest_arxiv"} {
		var before, after int
		for _, a := range p[k].at {
			if a.After(kill) {
				after++
			} else {
				before++
			}
		}
		out = append(out, fmt.Sprintf("%s %d+%d", k, before, after))
	}
	return out
}

func gapOrNone(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return secs(d)
}

func noneOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// sample renders up to five values of a list.
func sample[T any](xs []T) string {
	if len(xs) == 0 {
		return ""
	}
	parts := make([]string, 0, 5)
	for _, x := range xs[:min(len(xs), 5)] {
		parts = append(parts, fmt.Sprint(x))
	}
	if len(xs) > 5 {
		parts = append(parts, "…")
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
