package soak

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
)

// wkUser is a test user of the worker-killed scenario.
type wkUser struct {
	sub, email, category string
	token, feed          string
}

func runWorkerKilled(ctx context.Context, e *env, res *Result) error {
	const (
		pages, perPage = 6, 100
		nUsers         = 120
		bound          = 3 * time.Minute
	)
	res.What = fmt.Sprintf(`A fresh database; a fake arXiv OAI-PMH repository serving %d pages of %d arXivRaw records (ids 2911.00001…, versions 1–3, six categories, every fourth cross-listed), each page answered after a 1 s delay; a fake OpenAlex that knows none of them; a slow SMTP sink (every reply held 400 ms) that records every Message-ID it receives. %d users (created through the API with verified addresses) each follow one of the six categories. An `+"`api`"+` process serves the API and feeds throughout; `+"`followfeed worker`"+` runs with JOB_TIMEOUT=20s, JOB_RESCUE_AFTER=30s, JOB_RETRY_MAX=3s and one harvest on start.

The worker is SIGKILLed as soon as the fake repository has served the third page of the harvest, and restarted. Once the harvest has finished, every user's daily digest is made due; the worker is SIGKILLed again right after the sink has received its fifth message, and restarted. The soak then waits (at most %s) until: every record is in `+"`papers`"+` exactly once with its latest version, `+"`harvest_state`"+` shows the run finished, no River job is available, running, retryable or scheduled (the periodic digest scheduler excepted), every digest row is final, no Message-ID arrived twice, and every user's private feed, fetched from the api process, lists every paper of their category.`,
		pages, perPage, nUsers, bound)
	res.Policy = `**Policies checked.** *Stuck-job rescue:* River marks a job that is still "running" after JOB_RESCUE_AFTER as abandoned by a dead worker and retries it (the rescuer runs every 30 s); every job is also cancelled after JOB_TIMEOUT, so a live worker never holds a job that long and the rescue can only hit jobs of dead processes (the configuration refuses a JOB_RESCUE_AFTER not longer than JOB_TIMEOUT). The production defaults are JOB_TIMEOUT=10m and JOB_RESCUE_AFTER=15m: a harvest pass may legitimately run for minutes (3 s polite pause between OAI-PMH pages), and after a crash its work resumes at most ~15 minutes later from the resumption token saved after every page. This scenario shortens both (20 s / 30 s) so that recovery fits in minutes. *Harvest resumption:* progress (token, run start date) is saved after every ingested page, records are idempotent, so re-fetching the page a killed worker had received stores nothing twice. *At most once delivery* (README "Delivery ledger"): a digest row is committed as "sending" before its SMTP transaction; a rescued job that finds its row "sending" marks it "unknown" and does not resend.`

	day := time.Now().UTC().Format(time.DateOnly)
	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	recs := oaipmh.MakeRecords("2911", 0, pages*perPage, cats, day)
	oai := oaipmh.New(func() []oaipmh.Record { return recs }, perPage)
	oai.Delay = time.Second
	thirdPage := make(chan struct{})
	oai.OnServe = func(_, total int) {
		if total == 3 {
			close(thirdPage)
		}
	}
	oaiSrv := httptest.NewServer(oai)
	defer oaiSrv.Close()
	oaSrv := httptest.NewServer(openalex.New(nil))
	defer oaSrv.Close()
	sink, smtpURL, stopSink, err := startSink(400 * time.Millisecond)
	if err != nil {
		return err
	}
	defer stopSink()
	fifthMail := make(chan struct{})
	sink.onData = func(total int) {
		if total == 5 {
			close(fifthMail)
		}
	}

	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "worker-killed")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	env := append(e.baseEnv(db.url), "ARXIV_OAI_URL="+oaiSrv.URL, "ARXIV_OAI_FORMAT=arXivRaw", "ARXIV_SETS=cs",
		"OPENALEX_URL="+oaSrv.URL, "SMTP_URL="+smtpURL, "DIGEST_SCHEDULE_INTERVAL=2s",
		"JOB_TIMEOUT=20s", "JOB_RESCUE_AFTER=30s", "JOB_RETRY_MAX=3s")
	api, err := startProc(ctx, e.opts.Exe, "api", env, e.logPath("worker-killed", "api"))
	if err != nil {
		return err
	}
	defer api.stop()
	c := newClient(api.base, 16, 30*time.Second)
	defer c.close()

	users := make([]*wkUser, nUsers)
	for i := range users {
		users[i] = &wkUser{sub: fmt.Sprintf("soak-wk-%d", i), email: fmt.Sprintf("wk%d@soak.example", i), category: cats[i%len(cats)]}
	}
	if err := forEach(ctx, 8, len(users), func(i int) error {
		u := users[i]
		var err error
		u.token, u.feed, err = c.newUser(ctx, u.sub, u.email, u.category, "json")
		return err
	}); err != nil {
		return fmt.Errorf("creating users: %w", err)
	}
	e.logf("worker-killed: %d users follow %s", nUsers, strings.Join(cats, ", "))

	workerEnv := append(slices.Clone(env), "HARVEST_INTERVAL=1h")
	startWorker := func(n int) (*proc, error) {
		return startProc(ctx, e.opts.Exe, "worker", workerEnv, e.logPath("worker-killed", fmt.Sprintf("worker%d", n)))
	}
	w, err := startWorker(1)
	if err != nil {
		return err
	}
	defer func() { w.stop() }()
	harvestStart := time.Now()
	select {
	case <-thirdPage:
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("the harvest did not reach page 3 within 2 minutes (served %d pages)", oai.ServedPages())
	case <-ctx.Done():
		return ctx.Err()
	}
	w.kill()
	kill1 := time.Now()
	papersAtKill, _ := count(ctx, db.pool, `SELECT count(*) FROM papers`)
	e.logf("worker-killed: SIGKILL 1 after page 3 was served (%s into the harvest, %d papers stored)", secs(kill1.Sub(harvestStart)), papersAtKill)
	if w, err = startWorker(2); err != nil {
		return err
	}

	harvestDone := func() (bool, error) {
		var finished bool
		err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM harvest_state WHERE source = 'arxiv-oai:cs'
			AND harvested_until IS NOT NULL AND run_from IS NULL AND resumption_token IS NULL)`).Scan(&finished)
		if err != nil || !finished {
			return false, err
		}
		n, err := count(ctx, db.pool, `SELECT count(*) FROM papers`)
		if err != nil || n < int64(len(recs)) {
			return false, err
		}
		busy, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state NOT IN ('completed', 'discarded', 'cancelled')`)
		return busy == 0, err
	}
	ok, err := waitFor(ctx, bound, time.Second, harvestDone)
	if err != nil {
		return err
	}
	harvestRecovery := time.Since(kill1)
	res.check("harvest resumed after SIGKILL 1", ok, "harvest finished and matched %s after the kill (bound %s)", secs(harvestRecovery), bound)
	if !ok {
		return fmt.Errorf("the harvest did not finish within %s of the first kill", bound)
	}
	e.logf("worker-killed: harvest finished %s after the kill", secs(harvestRecovery))

	// Aging on purpose, in the soak's own SQL: every user's daily digest
	// due now. The product's settings (notify.Preferences) schedule it at
	// the user's hour, hours away.
	tag, err := db.pool.Exec(ctx, `
		INSERT INTO digest_schedules (user_id, frequency, next_at) SELECT id, 'daily', now() FROM users WHERE sub LIKE 'soak-wk-%'
		ON CONFLICT (user_id) DO UPDATE SET frequency = 'daily', next_at = now()`)
	if err != nil {
		return err
	}
	digestsDue := time.Now()
	select {
	case <-fifthMail:
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("the sink got no 5 messages within 2 minutes of %d digests becoming due", tag.RowsAffected())
	case <-ctx.Done():
		return ctx.Err()
	}
	w.kill()
	kill2 := time.Now()
	_, mailsAtKill := sink.snapshot()
	atKill, _ := stateCounts(ctx, db.pool, "true")
	e.logf("worker-killed: SIGKILL 2 %s after digests became due; sink had %d messages; ledger %s", secs(kill2.Sub(digestsDue)), mailsAtKill,
		formatCounts(atKill, "pending", "sending", "sent"))
	if w, err = startWorker(3); err != nil {
		return err
	}
	restart2 := time.Now()

	var last wkState
	ok, err = waitFor(ctx, bound, 2*time.Second, func() (bool, error) {
		st, err := wkCheck(ctx, db, c, sink, recs, users)
		last = st
		return err == nil && st.ok(), nil
	})
	if err != nil {
		return err
	}
	recovery := time.Since(restart2)

	jobs, _ := jobCounts(ctx, db.pool, 0)
	rescued, _ := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE errors::text ILIKE '%rescue%'`)
	var harvestAttempts int64
	_ = db.pool.QueryRow(ctx, `SELECT coalesce(max(attempt), 0) FROM river.river_job WHERE kind = 'harvest_arxiv'`).Scan(&harvestAttempts)
	final, _ := stateCounts(ctx, db.pool, "true")
	ids, total := sink.snapshot()
	var unknownUnsent int64
	unknownIDs, _ := messageIDs(ctx, db, "state = 'unknown'")
	for _, id := range unknownIDs {
		if ids[id] == 0 {
			unknownUnsent++
		}
	}

	res.figure("rescue settings", "JOB_TIMEOUT=20s, JOB_RESCUE_AFTER=30s, JOB_RETRY_MAX=3s (River rescuer runs every 30 s)")
	res.figure("SIGKILL 1", "%s into the harvest, after page 3 of %d was served; %d papers stored at that moment", secs(kill1.Sub(harvestStart)), pages, papersAtKill)
	res.figure("harvest finished after SIGKILL 1", "%s (harvest job attempts: %d)", secs(harvestRecovery), harvestAttempts)
	res.figure("SIGKILL 2", "%s after %d digests became due, with %d messages at the sink; ledger at the kill: %s",
		secs(kill2.Sub(digestsDue)), tag.RowsAffected(), mailsAtKill, formatCounts(atKill, "pending", "sending", "sent"))
	res.figure("recovery after the second restart", "%s until every condition held (bound %s)", secs(recovery), bound)
	res.figure("jobs rescued from the killed workers", "%d", rescued)
	res.figure("digest ledger (final)", "%s", formatCounts(final, "sent", "unknown", "skipped", "failed", "pending", "sending"))
	res.figure("messages received by the sink", "%d (%d distinct Message-IDs)", total, len(ids))
	res.figure("unknown rows whose message never reached the sink", "%d (committed as sending, but the body had not reached the server when the worker died)", unknownUnsent)
	res.figure("River jobs", "%s", formatJobs(jobs))
	last.record(res, ok)
	res.Summary = fmt.Sprintf("2 SIGKILLs; harvest resumed in %s, full recovery %s after the 2nd restart; %d/%d records once; digests %s; duplicates %d",
		secs(harvestRecovery), secs(recovery), last.papersOnce, len(recs), formatCounts(final, "sent", "unknown", "skipped", "failed", "pending", "sending"), last.dupIDs)
	return nil
}

// wkState is one evaluation of the worker-killed conditions.
type wkState struct {
	papersOnce, papersBad, papersExtra int
	harvestFinished                    bool
	harvestDetail                      string
	openJobs                           map[string]map[string]int
	digests                            map[string]int
	digestRows                         int
	dupIDs, sentNotReceived            int
	feedsChecked, feedsMissing         int
	feedDetail                         string
}

func (s wkState) ok() bool {
	final := s.digests["pending"] == 0 && s.digests["sending"] == 0
	return s.papersBad == 0 && s.papersExtra == 0 && s.harvestFinished && len(s.openJobs) == 0 && final &&
		s.dupIDs == 0 && s.sentNotReceived == 0 && s.feedsChecked > 0 && s.feedsMissing == 0
}

func (s wkState) record(res *Result, inTime bool) {
	res.check("every harvested record stored exactly once", s.papersBad == 0 && s.papersExtra == 0 && s.papersOnce > 0,
		"%d records stored once with their latest version; %d missing, duplicated or wrong version; %d extra rows", s.papersOnce, s.papersBad, s.papersExtra)
	res.check("harvest run finished", s.harvestFinished, "%s", s.harvestDetail)
	res.check("no River job left available/running/retryable", len(s.openJobs) == 0, "%s", formatJobs(s.openJobs))
	res.check("every digest row final", s.digests["pending"] == 0 && s.digests["sending"] == 0 && s.digestRows > 0,
		"%d rows: %s", s.digestRows, formatCounts(s.digests, "sent", "unknown", "skipped", "failed", "pending", "sending"))
	res.check("no Message-ID received twice", s.dupIDs == 0 && s.sentNotReceived == 0,
		"%d Message-IDs received more than once; %d sent rows whose message the sink never saw", s.dupIDs, s.sentNotReceived)
	res.check("every private feed lists every matching paper", s.feedsChecked > 0 && s.feedsMissing == 0, "%s", s.feedDetail)
	res.check("recovered within the bound", inTime, "all of the above held within 3 minutes of the second restart")
}

func messageIDs(ctx context.Context, db *freshDB, where string) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT coalesce(message_id, '') FROM digests WHERE `+where)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// checkPapers compares papers with the records: stored once, latest version.
func checkPapers(ctx context.Context, db *freshDB, recs []oaipmh.Record) (once, bad, extra int, err error) {
	rows, err := db.pool.Query(ctx, `SELECT arxiv_id, version, count(*) OVER (PARTITION BY arxiv_id) FROM papers`)
	if err != nil {
		return 0, 0, 0, err
	}
	defer rows.Close()
	want := make(map[string]int, len(recs))
	for _, r := range recs {
		want[r.ID] = r.Version
	}
	seen := map[string]bool{}
	for rows.Next() {
		var id string
		var v, n int
		if err := rows.Scan(&id, &v, &n); err != nil {
			return 0, 0, 0, err
		}
		wv, ok := want[id]
		switch {
		case !ok:
			extra++
		case n == 1 && v == wv:
			once++
			seen[id] = true
		default:
			bad++
			seen[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, 0, err
	}
	bad += len(want) - len(seen)
	return once, bad, extra, nil
}

func wkCheck(ctx context.Context, db *freshDB, c *client, sink *mailSink, recs []oaipmh.Record, users []*wkUser) (wkState, error) {
	var s wkState
	var err error
	if s.papersOnce, s.papersBad, s.papersExtra, err = checkPapers(ctx, db, recs); err != nil {
		return s, err
	}
	var until, from *time.Time
	var token *string
	var lastErr *string
	err = db.pool.QueryRow(ctx, `SELECT harvested_until, run_from, resumption_token, last_error FROM harvest_state WHERE source = 'arxiv-oai:cs'`).
		Scan(&until, &from, &token, &lastErr)
	if err != nil {
		s.harvestDetail = "no harvest_state row: " + err.Error()
	} else {
		s.harvestFinished = until != nil && from == nil && token == nil
		s.harvestDetail = fmt.Sprintf("arxiv-oai:cs harvested_until=%v, run_from=%v, resumption_token=%v", fmtDate(until), fmtDate(from), token != nil)
	}
	rows, err := db.pool.Query(ctx, `SELECT kind, state::text, count(*) FROM river.river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending') AND kind <> 'digest_schedule' GROUP BY 1, 2`)
	if err != nil {
		return s, err
	}
	s.openJobs = map[string]map[string]int{}
	for rows.Next() {
		var k, st string
		var n int
		if err := rows.Scan(&k, &st, &n); err != nil {
			rows.Close()
			return s, err
		}
		if s.openJobs[k] == nil {
			s.openJobs[k] = map[string]int{}
		}
		s.openJobs[k][st] = n
	}
	rows.Close()
	if s.digests, err = stateCounts(ctx, db.pool, "true"); err != nil {
		return s, err
	}
	for _, n := range s.digests {
		s.digestRows += n
	}
	ids, _ := sink.snapshot()
	for _, n := range ids {
		if n > 1 {
			s.dupIDs++
		}
	}
	sent, err := messageIDs(ctx, db, "state = 'sent'")
	if err != nil {
		return s, err
	}
	for _, id := range sent {
		if ids[id] != 1 {
			s.sentNotReceived++
		}
	}
	if s.papersBad != 0 || !s.harvestFinished {
		s.feedDetail = "not checked yet (harvest incomplete)"
		return s, nil
	}
	var mu sync.Mutex
	var missing []string
	err = forEach(ctx, 8, len(users), func(i int) error {
		u := users[i]
		got, err := c.feedIDs(ctx, u.feed)
		if err != nil {
			return err
		}
		n := 0
		for _, r := range recs {
			if slices.Contains(r.Categories, u.category) && !got[r.ID] {
				n++
			}
		}
		mu.Lock()
		s.feedsChecked++
		if n > 0 {
			missing = append(missing, fmt.Sprintf("%s misses %d", u.sub, n))
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		s.feedDetail = "fetching feeds: " + err.Error()
		s.feedsMissing = 1
		return s, nil
	}
	s.feedsMissing = len(missing)
	perUser := map[string]int{}
	for _, r := range recs {
		for _, cat := range r.Categories {
			perUser[cat]++
		}
	}
	s.feedDetail = fmt.Sprintf("%d feeds fetched from the api process (%d–%d papers each expected); %d incomplete %s",
		s.feedsChecked, minVal(perUser), maxVal(perUser), len(missing), strings.Join(missing[:min(len(missing), 5)], ", "))
	return s, nil
}

func fmtDate(t *time.Time) string {
	if t == nil {
		return "NULL"
	}
	return t.Format(time.DateOnly)
}

func minVal(m map[string]int) int {
	first, out := true, 0
	for _, v := range m {
		if first || v < out {
			out, first = v, false
		}
	}
	return out
}

func maxVal(m map[string]int) int {
	out := 0
	for _, v := range m {
		out = max(out, v)
	}
	return out
}

// forEach runs fn(0..n-1) on `workers` goroutines and returns the first error.
func forEach(ctx context.Context, workers, n int, fn func(i int) error) error {
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= n || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
