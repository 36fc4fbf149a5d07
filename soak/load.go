package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/bench"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

// Load mix and sizes.
const (
	loadClients      = 32
	loadUsers        = 2000
	loadDigestBatch  = 500
	loadPapersPerMin = 200
	loadPrefix       = "2911"
)

// loadUser is one sampled scale-S user driven by the load.
type loadUser struct {
	id          int64
	sub         string
	token, feed string
	follows     []follow.Target          // what the user followed before the soak
	had         map[string]bool          // their keys
	mu          sync.Mutex               // guards etag and added
	etag        string                   // last ETag of the feed
	added       map[string]follow.Target // follows the load added and not yet removed
}

// classStats accumulates one request class.
type classStats struct {
	n, errs, limited int
	durs             []time.Duration
	statuses         map[int]int
	examples         []string
}

func (s *classStats) add(r reply, ok bool) {
	s.n++
	s.durs = append(s.durs, r.dur)
	if s.statuses == nil {
		s.statuses = map[int]int{}
	}
	s.statuses[r.status]++
	switch {
	case r.err == nil && r.status == http.StatusTooManyRequests:
		s.limited++
	case r.err != nil || !ok:
		s.errs++
		if len(s.examples) < 3 {
			if r.err != nil {
				s.examples = append(s.examples, r.err.Error())
			} else {
				s.examples = append(s.examples, fmt.Sprintf("%d %s", r.status, oneLine(lastBytes(string(r.body), 120))))
			}
		}
	}
}

func (s *classStats) merge(o *classStats) {
	s.n += o.n
	s.errs += o.errs
	s.limited += o.limited
	s.durs = append(s.durs, o.durs...)
	if s.statuses == nil {
		s.statuses = map[int]int{}
	}
	for k, v := range o.statuses {
		s.statuses[k] += v
	}
	for _, e := range o.examples {
		if len(s.examples) < 3 {
			s.examples = append(s.examples, e)
		}
	}
}

// savedDigest is a user's digest settings before the soak.
type savedDigest struct {
	id        int64
	freq      string
	next      *time.Time
	watermark int64
}

func runLoad(ctx context.Context, e *env, res *Result) error {
	d := e.opts.Duration
	res.What = fmt.Sprintf(``+"`followfeed serve`"+` (HTTP and workers in one process) runs on the scale-S dataset of `+"`make bench`"+` (database %s) for %s of load, with RATE_LIMIT_PER_IP=0 (the load comes from one address; the per-user limit stays at its default of 10/s), HARVEST_INTERVAL=1m against a fake OAI-PMH repository that announces %d new arXivRaw papers every minute (ids %s.*, popular categories, every fourth cross-listed), a fake OpenAlex that knows none of them, DIGEST_SCHEDULE_INTERVAL=10s and a local SMTP sink. Every minute %d further users with confirmed addresses get a daily digest made due (digest_schedules.next_at=now(), digest watermark at the high seq of the soak's start, so each digest holds the papers harvested during the soak that match the user's follows). From the soak process, %d concurrent keep-alive clients drive a mixed load over %d users sampled evenly from the table: 60%% private Atom feed polls (half conditional, with the ETag of that user's previous poll), 15%% follow/unfollow (PUT/DELETE of random categories and s2 researchers the user did not follow before), 25%% follow-status reads (GET /v1/follows/{kind}/{id}, half with the user's token). Afterwards the soak removes what it added (its papers and their keys, the digest rows and River jobs of the run, the load's follows through the API, the users' original digest settings), so the database stays at scale S.`,
		databaseName(e.opts.ScaleDB), d, loadPapersPerMin, loadPrefix, loadDigestBatch, loadClients, loadUsers)
	res.Policy = `**What passes.** No request may fail other than with 429 (rate limited, counted apart): transport errors and any status outside 200/304 (feeds), 200/201/204 (follows), 200 (follow status) count as errors. The figures show what the process sustains on this machine with the harvest, match, digest and enrichment jobs running beside the API.`

	pool, err := openPool(ctx, e.opts.ScaleDB)
	if err != nil {
		return fmt.Errorf("the scale-S database %s is not reachable (%v): run `make bench` first to build it", databaseName(e.opts.ScaleDB), err)
	}
	defer pool.Close()
	var scale string
	if err := pool.QueryRow(ctx, `SELECT scale FROM bench_meta`).Scan(&scale); err != nil || scale != fmt.Sprint(bench.ScaleS) {
		return fmt.Errorf("database %s holds no scale-S dataset (bench_meta: %v): run `make bench` first to build it", databaseName(e.opts.ScaleDB), errOr(err, scale))
	}
	db := &database.DB{Pool: pool}
	var nUsers, nFollows, nPapers int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM follows), (SELECT count(*) FROM papers WHERE arxiv_id NOT LIKE $1)`,
		loadPrefix+".%").Scan(&nUsers, &nFollows, &nPapers); err != nil {
		return err
	}
	res.figure("dataset", "%d users, %d follows, %d papers (scale S)", nUsers, nFollows, nPapers)
	var others []string
	if rows, err := pool.Query(ctx, `SELECT coalesce(nullif(application_name, ''), 'unnamed') || ' ×' || count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> 'followfeed soak' GROUP BY application_name`); err == nil {
		others, _ = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if len(others) > 0 {
		e.logf("load: other sessions on %s: %s (they share the machine with the load)", databaseName(e.opts.ScaleDB), strings.Join(others, ", "))
		res.figure("other sessions on the database at the start", "%s", strings.Join(others, ", "))
	}
	// Leftovers of an interrupted run.
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := catalog.DeletePrefix(ctx, tx, loadPrefix+".")
		return err
	}); err != nil {
		return err
	}

	ids, err := bench.SampleUsers(ctx, db, loadUsers)
	if err != nil {
		return err
	}
	users, err := loadSample(ctx, pool, ids)
	if err != nil {
		return err
	}
	batches := int((d + time.Minute - 1) / time.Minute)
	digestUsers, saved, err := pickDigestUsers(ctx, pool, ids, batches*loadDigestBatch, e.opts.Seed)
	if err != nil {
		return err
	}
	var maxJob, maxDigest, baseSeq int64
	if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT max(id) FROM river.river_job), 0), coalesce((SELECT max(id) FROM digests), 0),
		(SELECT high_seq FROM match_state)`).Scan(&maxJob, &maxDigest, &baseSeq); err != nil {
		return err
	}
	var harvestRow []any
	hadHarvest := true
	var hu, rf *time.Time
	var tok, lerr *string
	var pg, rc int64
	if err := pool.QueryRow(ctx, `SELECT harvested_until, run_from, resumption_token, pages, records, last_error FROM harvest_state WHERE source = 'arxiv-oai:cs'`).
		Scan(&hu, &rf, &tok, &pg, &rc, &lerr); errors.Is(err, pgx.ErrNoRows) {
		hadHarvest = false
	} else if err != nil {
		return err
	} else {
		harvestRow = []any{hu, rf, tok, pg, rc, lerr}
	}

	// Fake upstreams and the mail sink.
	day := time.Now().UTC().Format(time.DateOnly)
	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph", "cs.RO", "math.OC", "hep-ph", "hep-th", "cs.CR", "eess.SP"}
	allRecs := oaipmh.MakeRecords(loadPrefix, 0, (batches+1)*loadPapersPerMin, cats, day)
	var annMu sync.Mutex
	announced := loadPapersPerMin
	oai := oaipmh.New(func() []oaipmh.Record {
		annMu.Lock()
		defer annMu.Unlock()
		return allRecs[:announced]
	}, 250)
	oaiSrv := httptest.NewServer(oai)
	defer oaiSrv.Close()
	oaSrv := httptest.NewServer(openalex.New(nil))
	defer oaSrv.Close()
	sink, err := fakesmtp.New(fakesmtp.Options{Discard: true, NoLineLimit: true})
	if err != nil {
		return err
	}
	defer sink.Close()
	smtpURL := sink.URL()

	env := append(e.baseEnv(e.opts.ScaleDB), "HARVEST_INTERVAL=1m", "ARXIV_OAI_URL="+oaiSrv.URL, "ARXIV_OAI_FORMAT=arXivRaw",
		"ARXIV_SETS=cs", "OPENALEX_URL="+oaSrv.URL, "SMTP_URL="+smtpURL, "DIGEST_SCHEDULE_INTERVAL=10s")
	// Whatever happens from here on, the dataset is put back.
	var srv *proc
	defer func() {
		if srv != nil {
			srv.stop()
		}
		cctx := context.WithoutCancel(ctx)
		dropExtraFollows(cctx, e, pool, users)
		cleanupLoad(cctx, e, pool, maxJob, maxDigest, digestUsers, saved, hadHarvest, harvestRow)
	}()
	srv, err = startProc(ctx, e.opts.Exe, "serve", env, e.logPath("load", "serve"))
	if err != nil {
		return err
	}
	c := newClient(srv.base, loadClients+4, 30*time.Second)
	defer c.close()
	if err := forEach(ctx, 16, len(users), func(i int) error {
		u := users[i]
		var err error
		if u.token, err = mint(u.sub, ""); err != nil {
			return err
		}
		u.feed, err = c.feedPath(ctx, u.token, "atom")
		return err
	}); err != nil {
		return fmt.Errorf("getting feed URLs: %w", err)
	}
	e.logf("load: %d users ready; driving %d clients for %s", len(users), loadClients, d)

	// Every minute: more papers announced, more digests due.
	lctx, stopLoad := context.WithTimeout(ctx, d)
	defer stopLoad()
	var dueMade int
	tickerDone := make(chan struct{})
	go func() {
		defer close(tickerDone)
		for b := 0; b < batches; b++ {
			if b > 0 {
				annMu.Lock()
				announced = min(announced+loadPapersPerMin, len(allRecs))
				annMu.Unlock()
			}
			batch := digestUsers[b*loadDigestBatch : min((b+1)*loadDigestBatch, len(digestUsers))]
			// Aging on purpose: a daily digest due now, over the papers
			// since the soak began (makeDailyDueFrom). The product's
			// settings (notify.Preferences) schedule the next digest at
			// the user's hour and start its window at the high seq;
			// cleanupLoad puts the saved settings back.
			if n, err := makeDailyDueFrom(lctx, pool, batch, baseSeq); err == nil {
				dueMade += n
			}
			select {
			case <-lctx.Done():
				return
			case <-time.After(time.Minute):
			}
		}
	}()
	stats := driveLoad(lctx, c, users, e.opts.Seed)
	<-tickerDone
	loadEnd := time.Now()
	annMu.Lock()
	nAnnounced := announced
	annMu.Unlock()
	harvestedAtEnd, _ := count(ctx, pool, `SELECT count(*) FROM papers WHERE arxiv_id LIKE $1`, loadPrefix+".%")
	// The last batch is announced a minute before the end; give its harvest
	// (every minute) the time to run.
	harvested := harvestedAtEnd
	_, _ = waitFor(ctx, 90*time.Second, time.Second, func() (bool, error) {
		var err error
		harvested, err = count(ctx, pool, `SELECT count(*) FROM papers WHERE arxiv_id LIKE $1`, loadPrefix+".%")
		return harvested >= int64(nAnnounced), err
	})
	harvestLag := time.Since(loadEnd)

	// Let the digests of the run finish before measuring and cleaning up.
	_, _ = waitFor(ctx, 2*time.Minute, 2*time.Second, func() (bool, error) {
		n, err := count(ctx, pool, `SELECT count(*) FROM digests WHERE id > $1 AND state IN ('pending', 'sending')`, maxDigest)
		return n == 0, err
	})
	rss, rssErr := bench.PeakRSS(srv.pid)
	jobs, _ := jobCounts(ctx, pool, maxJob)
	digests, _ := stateCounts(ctx, pool, "id > $1", maxDigest)
	removed, restoreErr := restoreFollows(ctx, c, pool, users)
	srv.stop()

	// Figures.
	total := &classStats{}
	var rows []string
	for _, name := range []string{"feed", "follow", "status"} {
		s := stats[name]
		total.merge(s)
		rows = append(rows, statsRow(loadClassName[name], s, d))
	}
	rows = append(rows, statsRow("**all**", total, d))
	res.Tables = append(res.Tables, "| class | requests | req/s | p50 | p99 | non-429 errors | 429 |\n| --- | --- | --- | --- | --- | --- | --- |\n"+strings.Join(rows, "\n"))
	if rssErr == nil {
		res.figure("peak RSS of serve (VmHWM)", "%d MiB", rss>>20)
	}
	res.figure("load duration", "%s (%s to %s UTC)", d, loadEnd.Add(-d).UTC().Format("15:04:05"), loadEnd.UTC().Format("15:04:05"))
	res.figure("feed responses", "%d × 200, %d × 304", stats["feed"].statuses[200], stats["feed"].statuses[304])
	if harvestedAtEnd >= int64(nAnnounced) {
		res.figure("papers announced / harvested", "%d / %d by the end of the load", nAnnounced, harvestedAtEnd)
	} else {
		res.figure("papers announced / harvested", "%d / %d by the end of the load, %d %s later (the last batch was announced a minute before the end)",
			nAnnounced, harvestedAtEnd, harvested, secs(harvestLag))
	}
	res.figure("jobs of the run (river.river_job)", "%s", formatJobs(jobs))
	res.figure("digests made due / ledger rows of the run", "%d / %s", dueMade, formatCounts(digests, "sent", "skipped", "unknown", "failed", "pending", "sending"))
	res.figure("messages received by the SMTP sink", "%d", sink.Accepted())
	res.figure("follows the load left, removed through the API afterwards", "%d", removed)
	res.check("no request failed except with 429", total.errs == 0, "%d non-429 errors in %d requests (%d × 429) %s",
		total.errs, total.n, total.limited, strings.Join(total.examples, "; "))
	res.check("the load's follows removed again", restoreErr == nil, "%s", errText(restoreErr, fmt.Sprintf("%d follows removed; the sampled users' follows equal their snapshot", removed)))
	p50, p99 := bench.Percentiles(total.durs)
	res.Summary = fmt.Sprintf("%d clients, %s: %.0f req/s, p50 %s, p99 %s, %d non-429 errors, %d × 429; peak RSS %d MiB; %d digests sent",
		loadClients, d, float64(total.n)/d.Seconds(), ms(p50), ms(p99), total.errs, total.limited, rss>>20, digests["sent"])
	return nil
}

var loadClassName = map[string]string{
	"feed":   "feed polls (GET /feeds/{token}.atom)",
	"follow": "follow/unfollow (PUT/DELETE /v1/me/follows/…)",
	"status": "follow status (GET /v1/follows/…)",
}

func statsRow(name string, s *classStats, d time.Duration) string {
	p50, p99 := bench.Percentiles(s.durs)
	return fmt.Sprintf("| %s | %d | %.1f | %s | %s | %d | %d |", name, s.n, float64(s.n)/d.Seconds(), ms(p50), ms(p99), s.errs, s.limited)
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%q", s)
}

func errText(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

// loadSample loads the sampled users' subjects and follows.
func loadSample(ctx context.Context, pool *pgxpool.Pool, ids []int64) ([]*loadUser, error) {
	byID := map[int64]*loadUser{}
	var users []*loadUser
	rows, err := pool.Query(ctx, `SELECT id, sub FROM users WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		u := &loadUser{had: map[string]bool{}, added: map[string]follow.Target{}}
		if err := rows.Scan(&u.id, &u.sub); err != nil {
			rows.Close()
			return nil, err
		}
		byID[u.id] = u
		users = append(users, u)
	}
	rows.Close()
	rows, err = pool.Query(ctx, `SELECT user_id, key FROM follows WHERE user_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			return nil, err
		}
		u := byID[id]
		u.had[key] = true
		if t, err := follow.TargetFromKey(key); err == nil {
			u.follows = append(u.follows, t)
		}
	}
	return users, rows.Err()
}

// pickDigestUsers chooses n users with confirmed addresses, digests off and
// no ledger rows, outside the load sample, and saves their settings.
func pickDigestUsers(ctx context.Context, pool *pgxpool.Pool, exclude []int64, n int, seed uint64) ([]int64, []savedDigest, error) {
	rows, err := pool.Query(ctx, `
		SELECT u.id, coalesce(s.frequency, 'off'), s.next_at, coalesce(s.watermark, 0)
		FROM users u LEFT JOIN digest_schedules s ON s.user_id = u.id
		WHERE u.id <> ALL($1) AND u.email_confirmed_at IS NOT NULL AND coalesce(s.frequency, 'off') = 'off' AND s.next_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM digests d WHERE d.user_id = u.id)
		ORDER BY md5(u.id::text || $2) LIMIT $3`, exclude, fmt.Sprint(seed), n)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var saved []savedDigest
	for rows.Next() {
		var s savedDigest
		if err := rows.Scan(&s.id, &s.freq, &s.next, &s.watermark); err != nil {
			return nil, nil, err
		}
		ids = append(ids, s.id)
		saved = append(saved, s)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(ids) < n {
		return nil, nil, fmt.Errorf("only %d users qualify for digests (need %d)", len(ids), n)
	}
	return ids, saved, nil
}

// driveLoad runs the mixed load through c until ctx ends and returns
// stats per class.
func driveLoad(ctx context.Context, c *client, users []*loadUser, seed uint64) map[string]*classStats {
	per := make([]map[string]*classStats, loadClients)
	for i := range per {
		per[i] = map[string]*classStats{"feed": {}, "follow": {}, "status": {}}
	}
	rctx := context.WithoutCancel(ctx)
	runLoadMix(ctx, users, seed, func(i int, class, method, path, token string, hdr http.Header, ok func(status int) bool) reply {
		r := c.do(rctx, method, path, token, nil, hdr)
		if ctx.Err() == nil {
			per[i][class].add(r, ok(r.status))
		}
		return r
	})
	out := map[string]*classStats{"feed": {}, "follow": {}, "status": {}}
	for _, m := range per {
		for k, s := range m {
			out[k].merge(s)
		}
	}
	return out
}

// loadSend sends one request of the load's mix for load client i (of
// class "feed", "follow" or "status"; ok says whether a status is one the
// request expects), counts it unless the load ended meanwhile (a request
// still running when the load ends is not counted) and returns its
// reply: driveLoad's client, or the rolling upgrade's balancer with its
// phases.
type loadSend func(i int, class, method, path, token string, hdr http.Header, ok func(status int) bool) reply

// runLoadMix runs the load scenario's mix, loadClients concurrent clients
// without think time, over users until ctx ends: 60% private Atom feed
// polls (half conditional, with the ETag of the user's previous poll),
// 15% follow/unfollow (nextFollowOp), 25% follow-status reads (half with
// the user's token). Each request goes through send.
func runLoadMix(ctx context.Context, users []*loadUser, seed uint64, send loadSend) {
	cats := follow.ActiveCategories()
	var wg sync.WaitGroup
	for i := range loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(1000+i)))
			for ctx.Err() == nil {
				u := users[rng.IntN(len(users))]
				switch v := rng.Float64(); {
				case v < 0.60:
					u.mu.Lock()
					etag := u.etag
					u.mu.Unlock()
					var hdr http.Header
					if etag != "" && rng.IntN(2) == 0 {
						hdr = http.Header{"If-None-Match": {etag}}
					}
					r := send(i, "feed", "GET", u.feed, "", hdr, func(s int) bool { return s == 200 || s == 304 })
					if r.err == nil && r.status == 200 {
						u.mu.Lock()
						u.etag = r.header.Get("ETag")
						u.mu.Unlock()
					}
				case v < 0.75:
					method, t := nextFollowOp(rng, u, cats)
					send(i, "follow", method, "/v1/me/follows/"+string(t.Kind)+"/"+t.ID, u.token, nil, func(s int) bool { return s == 200 || s == 201 || s == 204 })
				default:
					var t follow.Target
					if len(u.follows) > 0 && rng.IntN(2) == 0 {
						t = u.follows[rng.IntN(len(u.follows))]
					} else {
						t = follow.Target{Kind: follow.Category, ID: cats[rng.IntN(len(cats))].ID}
					}
					tok := ""
					if rng.IntN(2) == 0 {
						tok = u.token
					}
					send(i, "status", "GET", "/v1/follows/"+string(t.Kind)+"/"+t.ID, tok, nil, func(s int) bool { return s == 200 })
				}
			}
		}()
	}
	wg.Wait()
}

// nextFollowOp picks a follow (PUT) of something the user did not follow
// before the soak, or the unfollow (DELETE) of one the load added.
func nextFollowOp(rng *rand.Rand, u *loadUser, cats []follow.CategoryInfo) (string, follow.Target) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.added) > 0 && rng.IntN(2) == 0 {
		for k, t := range u.added {
			delete(u.added, k)
			return "DELETE", t
		}
	}
	for {
		var t follow.Target
		if rng.IntN(10) < 7 {
			t = follow.Target{Kind: follow.Category, ID: cats[rng.IntN(len(cats))].ID}
		} else {
			t = follow.Target{Kind: follow.Researcher, ID: fmt.Sprintf("s2:%d", 1+rng.IntN(300000))}
		}
		if k := t.Key(); !u.had[k] && u.added[k].ID == "" {
			u.added[k] = t
			return "PUT", t
		}
	}
}

// extraFollow is a follow of a sampled user that the user did not have
// before the soak.
type extraFollow struct {
	u *loadUser
	t follow.Target
}

// extraFollows reads the sampled users' follows and returns those they did
// not have before the soak, and how many of those they had are there.
func extraFollows(ctx context.Context, pool *pgxpool.Pool, users []*loadUser) (extras []extraFollow, have int, err error) {
	ids := make([]int64, len(users))
	byID := map[int64]*loadUser{}
	for i, u := range users {
		ids[i] = u.id
		byID[u.id] = u
	}
	rows, err := pool.Query(ctx, `SELECT user_id, key FROM follows WHERE user_id = ANY($1)`, ids)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			return nil, 0, err
		}
		u := byID[id]
		if u.had[key] {
			have++
			continue
		}
		t, err := follow.TargetFromKey(key)
		if err != nil {
			return nil, 0, err
		}
		extras = append(extras, extraFollow{u, t})
	}
	return extras, have, rows.Err()
}

// restoreFollows removes, through the API, every follow of the sampled users
// that they did not have before the soak, and checks the result.
func restoreFollows(ctx context.Context, c *client, pool *pgxpool.Pool, users []*loadUser) (int, error) {
	extras, have, err := extraFollows(ctx, pool, users)
	if err != nil {
		return 0, err
	}
	err = forEach(ctx, 8, len(extras), func(i int) error {
		x := extras[i]
		_, err := c.must(ctx, "DELETE", "/v1/me/follows/"+string(x.t.Kind)+"/"+x.t.ID, x.u.token, nil, 204)
		return err
	})
	if err != nil {
		return 0, err
	}
	want := 0
	ids := make([]int64, len(users))
	for i, u := range users {
		want += len(u.had)
		ids[i] = u.id
	}
	n, err := count(ctx, pool, `SELECT count(*) FROM follows WHERE user_id = ANY($1)`, ids)
	if err != nil {
		return len(extras), err
	}
	if int(n) != want || have != want {
		return len(extras), fmt.Errorf("the sampled users have %d follows, %d before the soak", n, want)
	}
	return len(extras), nil
}

// dropExtraFollows is the fallback of restoreFollows when the run was cut
// short (the API may be gone): it unfollows, through follow.Service, the
// sampled users' follows they did not have before, which also lowers
// their follower counts. It does nothing after a complete run, which
// removed them through the API.
func dropExtraFollows(ctx context.Context, e *env, pool *pgxpool.Pool, users []*loadUser) {
	extras, _, err := extraFollows(ctx, pool, users)
	if err != nil {
		e.logf("load: cleanup: follows: %v", err)
		return
	}
	svc := follow.NewService(&database.DB{Pool: pool})
	for _, x := range extras {
		if _, err := svc.Unfollow(ctx, x.u.id, x.t); err != nil {
			e.logf("load: cleanup: unfollowing %s of user %d: %v", x.t, x.u.id, err)
			return
		}
	}
	if len(extras) > 0 {
		e.logf("load: cleanup: unfollowed %d follows of an interrupted run", len(extras))
	}
}

// cleanupLoad removes what the load added to the scale-S database: its
// papers (catalog.DeletePrefix) and ledger rows (notify.DeleteDigests)
// through their owners. The rest is put back as it was saved before the
// run, in SQL of the soak's own, as nothing in the product sets state to
// a given value: River's jobs of the run (package worker's tables), the
// harvest's progress and completeness-check queue of the fake repository
// (harvest's: the next real harvest resumes where the dataset's left off)
// and the digest settings the load made due (notify's: frequency, next
// time and watermark restored, not recomputed).
func cleanupLoad(ctx context.Context, e *env, pool *pgxpool.Pool, maxJob, maxDigest int64, digestUsers []int64, saved []savedDigest,
	hadHarvest bool, harvestRow []any) {
	step := func(what, sql string, args ...any) {
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			e.logf("load: cleanup: %s: %v", what, err)
		}
	}
	db := &database.DB{Pool: pool}
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := catalog.DeletePrefix(ctx, tx, loadPrefix+".")
		return err
	}); err != nil {
		e.logf("load: cleanup: papers: %v", err)
	}
	if err := db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM digests WHERE id > $1 AND user_id = ANY($2)`, maxDigest, digestUsers)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		_, err = notify.DeleteDigests(ctx, tx, ids)
		return err
	}); err != nil {
		e.logf("load: cleanup: digests: %v", err)
	}
	step("river jobs", `DELETE FROM river.river_job WHERE id > $1 AND kind = ANY($2)`, maxJob,
		[]string{"match_batch", "harvest_arxiv", "harvest_check", "enrich_openalex", "websub_publish", "digest_schedule", "digest_send", "digest_instant", "email_confirm"})
	if hadHarvest {
		step("harvest state", `UPDATE harvest_state SET harvested_until = $1, run_from = $2, resumption_token = $3, pages = $4, records = $5, last_error = $6
			WHERE source = 'arxiv-oai:cs'`, harvestRow...)
	} else {
		step("harvest state", `DELETE FROM harvest_state WHERE source = 'arxiv-oai:cs'`)
	}
	step("completeness check queue", `DELETE FROM harvest_checks WHERE source = 'arxiv-oai:cs'`)
	ids := make([]int64, len(saved))
	freqs := make([]string, len(saved))
	nexts := make([]*time.Time, len(saved))
	marks := make([]int64, len(saved))
	for i, s := range saved {
		ids[i], freqs[i], nexts[i], marks[i] = s.id, s.freq, s.next, s.watermark
	}
	step("digest settings", `UPDATE digest_schedules d SET frequency = s.freq, next_at = s.next, watermark = s.mark
		FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[]) AS s(id, freq, next, mark) WHERE d.user_id = s.id`,
		ids, freqs, nexts, marks)
	e.logf("load: removed the run's papers, digests and jobs; restored digest settings")
}
