package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/bench"
	"followfeed/follow"
	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
	"followfeed/internal/pgcluster"
	"followfeed/internal/querylog"
	"followfeed/migrations"
)

// Sizes and timings of the rolling-upgrade scenario.
const (
	ruUsers         = 180 // feed users, 30 per category
	ruChannelUsers  = 24  // of them with an instant webhook channel
	ruSettingsUsers = 20  // users whose settings the load changes
	ruClients       = 8   // the scenario's own clients, beside the load scenario's loadClients
	ruLoadUsers     = 500 // users the load scenario's mix drives
	ruThink         = 25 * time.Millisecond
	ruPushPrefix    = "2905"
	ruOAIPrefix     = "2906"
	ruPushEvery     = 3 * time.Second
	ruPerPush       = 2
	ruAnnounceEvery = 30 * time.Second
	ruPerAnnounce   = 20
	ruDigestEvery   = 6 * time.Second
	ruDigestBatch   = 6
	ruRegistryEvery = 15 * time.Second
	ruPreviousPhase = 60 * time.Second       // the previous release alone
	ruSettle        = 20 * time.Second       // load after each step
	ruShutdown      = 10 * time.Second       // SHUTDOWN_TIMEOUT (baseEnv)
	ruSMTPDelay     = 750 * time.Millisecond // every SMTP reply: a digest job of six takes seconds
	ruSecretKey     = "soak-rolling-upgrade-secret-key-0123456789abcdef"
	// ruQueriesFile is the committed capture of the previous release's
	// statements, relative to the repository.
	ruQueriesFile = "migrations/testdata/previous-release-queries.sql"
)

var ruCats = []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}

// ruUser is a user of the scenario: a feed user follows one of ruCats
// (and is driven through the load's follows, which never match a paper); a
// settings user follows nothing and gets its settings changed.
type ruUser struct {
	sub, category, token string
	settings             bool
	feeds                map[string]string // "json", "atom", "rss", "opml", "follow" (the category's own feed)
	etag                 string            // of the last JSON feed poll
	channel              string            // an instant webhook channel's id
	added                map[string]string // follows the load added: PUT path → DELETE path
}

// ruPhase is a stretch of the run between two steps.
type ruPhase struct {
	name       string
	start, end time.Time
	n, failed  int
	retried    map[string]int
	byRelease  map[string]int
	durs       []time.Duration
}

// ruStats is what the load's clients saw.
type ruStats struct {
	mu       sync.Mutex
	classes  map[string]*classStats
	phases   []*ruPhase
	examples []string
}

func (s *ruStats) phase(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if n := len(s.phases); n > 0 {
		s.phases[n-1].end = now
	}
	s.phases = append(s.phases, &ruPhase{name: name, start: now, retried: map[string]int{}, byRelease: map[string]int{}})
}

// current is the index of the phase now.
func (s *ruStats) current() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.phases) - 1
}

// record counts one request of class, sent in phase; ok says its status
// was one the request expects.
func (s *ruStats) record(class string, phase int, r lbReply, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.classes[class] == nil {
		s.classes[class] = &classStats{}
	}
	s.classes[class].add(r.reply, ok)
	p := s.phases[phase]
	p.n++
	p.durs = append(p.durs, r.dur)
	if r.retried != "" {
		p.retried[r.retried]++
	}
	if r.err == nil {
		p.byRelease[r.release]++
	}
	if r.err != nil || !ok || r.status == http.StatusTooManyRequests {
		p.failed++
		if len(s.examples) < 5 {
			detail := fmt.Sprintf("%d %s", r.status, oneLine(lastBytes(string(r.body), 120)))
			if r.err != nil {
				detail = r.err.Error()
			}
			s.examples = append(s.examples, fmt.Sprintf("%s via %s (%s): %s", class, r.slot.name, p.name, detail))
		}
	}
}

// ruStep is one step of the upgrade.
type ruStep struct {
	name       string
	at         time.Duration // since the load began
	drained    time.Duration // SIGTERM to exit
	exitErr    error
	replaced   time.Duration // SIGTERM to the new process ready
	otherAlive bool          // the other process of the kind served throughout
	running    int64         // jobs running (on any worker) at the SIGTERM
}

// upgradeHooks is the webhook receiver of the instant channels: what arrived
// per webhook-id and which papers each channel got in each event.
type upgradeHooks struct {
	mu     sync.Mutex
	byID   map[string]int            // webhook-id → requests
	papers map[string]map[string]int // user sub → arXiv id → distinct events holding it
	total  int
}

func (h *upgradeHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Papers []struct {
				ArxivID string `json:"arxiv_id"`
			} `json:"papers"`
		} `json:"data"`
	}
	err := json.NewDecoder(r.Body).Decode(&ev)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	sub := strings.TrimPrefix(r.URL.Path, "/hook/")
	id := r.Header.Get("webhook-id")
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total++
	h.byID[id]++
	if h.byID[id] == 1 && ev.Type == "papers.matched" {
		if h.papers[sub] == nil {
			h.papers[sub] = map[string]int{}
		}
		for _, p := range ev.Data.Papers {
			h.papers[sub][p.ArxivID]++
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func runRollingUpgrade(ctx context.Context, e *env, res *Result) error {
	prevRef := e.opts.PreviousRelease
	if prevRef == "" {
		prevRef = migrations.PreviousRelease
	}
	res.What = fmt.Sprintf(`The previous release (migrations.PreviousRelease, %s: the release this one upgrades from, updated at each release; `+"`--previous-release`"+` overrides it) is built from git (`+"`git archive`"+` of the commit, `+"`go build ./cmd/followfeed`"+`). A throwaway PostgreSQL cluster whose log is JSON (jsonlog, log_statement=all while only the previous release runs) holds a fresh database migrated by the previous binary. Two `+"`api`"+` processes (each on a fixed port, as a load balancer's backends) and two `+"`worker`"+` processes of the previous release start on it, with HARVEST_INTERVAL=1m against a fake OAI-PMH repository that announces %d new records every %s, a fake OpenAlex, DIGEST_SCHEDULE_INTERVAL=2s, a recording SMTP sink that holds every reply %s (so a digest job runs for seconds), CHANNEL_ALLOW_HOSTS=127.0.0.1 and a recording webhook receiver, SHUTDOWN_TIMEOUT=%s, DB_MAX_CONNS=14 (six processes at most within the cluster's max_connections=100). %d users (through the API, verified addresses) each follow one of six categories, %d of them with an instant webhook channel; %d more users follow no category (every other one follows a query every pushed paper matches, so match jobs take the path of narrow keys, which reads the users with instant delivery).

From then on until the end, the load runs through a balancer in the soak that sends each request to the two apis in turn. *The load scenario's load* (its code, `+"`runLoadMix`"+`): %d concurrent clients without think time over %d more users (through the API: three categories and two researchers each, digests off), 60%% private Atom feed polls (half conditional), 15%% follow/unfollow of categories and s2 researchers, 25%% follow-status reads (half with the user's token); as many clients and the same mix as scenario `+"`load`"+`, at full rate, on this scenario's small database rather than scale S (the figure "load" says the rate reached). *Beside it, the scenario's own clients* reach the rest of the API: %d clients (%s think time) poll private feeds (JSON, half conditional; Atom; RSS), per-follow, public and OPML feeds, follow and unfollow categories, researchers, queries and papers that match none of the pushed papers, read follow status, `+"`/v1/me`"+`, follows, feed links and channels, change those %d users' settings (PATCH /v1/me: time zone, digest frequency among daily, weekly and off, hour; not instant, whose alerts wait 10 minutes, longer than the run), preview searches, read `+"`/v1/status`, `/status`, `/readyz`, `/healthz`, `/metrics`"+` and registered researchers; a pusher posts %d papers every %s, the host registers a researcher every %s, and, once every category has a matched paper, every %s %d more feed users' daily digests are made due (in the soak's own SQL, the window from seq 0), until each has been once.

After %s on the previous release alone, the new binary's `+"`migrate`"+` runs while those processes serve; then worker 1, worker 2, api 1 and api 2 are replaced one at a time (SIGTERM, wait for the exit, start the new binary in the same place, wait for `+"`/readyz`"+`), %s of load after each step; a worker gets its SIGTERM while a digest job is running (on one of the workers), so a drain meets work in progress. Last, the rollback check: a previous-release api (in the balancer's rotation) and worker start on the upgraded schema beside the new ones, serve for %s, and are drained. The load stops; the soak waits until every announced record is harvested and every job, digest and channel event is final, then checks.`,
		prevRef, ruPerAnnounce, ruAnnounceEvery, ruSMTPDelay, ruShutdown, ruUsers, ruChannelUsers, ruSettingsUsers, loadClients, ruLoadUsers, ruClients, ruThink, ruSettingsUsers,
		ruPerPush, ruPushEvery, ruRegistryEvery, ruDigestEvery, ruDigestBatch, ruPreviousPhase, ruSettle, ruSettle)
	res.Policy = `**What is counted.** *A failed request* is one whose client saw a transport error, a 5xx, a 429 or any status the request does not expect (feeds 200/304, follows 200/201/204, the rest 200; pushes 200–202), whichever release answered. The balancer resends a request to the other api only when the first certainly did not take it (connection refused: the process is gone or not yet listening) or, for GET, HEAD, PUT and DELETE, which HTTP lets a proxy repeat, when the connection broke before any response; such resends are counted apart and are not failures. A POST or PATCH that broke would be a failure. *A lost job:* a pushed or announced paper not stored, or missing from a follower's feed; a due digest not sent; a paper of a channel's category not delivered to it; a River job left available, running, retryable or scheduled at the end, or discarded or cancelled. *A job run twice:* a paper stored twice or listed twice in a feed, a user's due digest sent twice or a Message-ID received twice, a paper delivered to a channel in two events (a resend of one event under its webhook-id is counted apart: at least once is the channels' policy). *The schema:* every statement the previous release's api and worker processes sent before the upgrade (from the server's log; River's included) must still PREPARE on the upgraded schema (and its INSERTs and COPYs leave no NOT NULL column without a default out), and the committed capture (migrations/testdata/previous-release-queries.sql, which make test holds against the schema) must hold every followfeed statement seen.`

	root, err := repoRoot(ctx, e)
	if err != nil {
		return err
	}
	prev, err := buildRelease(ctx, e, root, prevRef)
	if err != nil {
		return err
	}
	e.logf("rolling-upgrade: built the previous release %s in %s", prev.commit[:12], secs(prev.took))
	cl, logDir, err := newStatementLogCluster(ctx, e)
	if err != nil {
		return err
	}
	defer cl.Destroy()
	db, err := newFreshDBWith(ctx, e, prev.exe, cl.URL("postgres"), "rolling-upgrade")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	schemaVersion := func() (int64, error) {
		return count(ctx, db.pool, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`)
	}
	prevSchema, err := schemaVersion()
	if err != nil {
		return err
	}

	// Upstreams and receivers.
	day := time.Now().UTC().Format(time.DateOnly)
	allRecs := oaipmh.MakeRecords(ruOAIPrefix, 0, 40*ruPerAnnounce, ruCats, day)
	var annMu sync.Mutex
	announced := 0
	oai := oaipmh.New(func() []oaipmh.Record {
		annMu.Lock()
		defer annMu.Unlock()
		return allRecs[:announced]
	}, 50)
	oaiSrv := httptest.NewServer(oai)
	defer oaiSrv.Close()
	oaSrv := httptest.NewServer(openalex.New(nil))
	defer oaSrv.Close()
	sink, smtpURL, stopSink, err := startSink(ruSMTPDelay)
	if err != nil {
		return err
	}
	defer stopSink()
	hooks := &upgradeHooks{byID: map[string]int{}, papers: map[string]map[string]int{}}
	hookSrv := httptest.NewServer(hooks)
	defer hookSrv.Close()

	// The processes' places: three fixed api ports (the third for the
	// rollback check), two workers.
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	common := append(e.baseEnv(db.url), "ARXIV_OAI_URL="+oaiSrv.URL, "ARXIV_OAI_FORMAT=arXivRaw", "ARXIV_SETS=cs",
		"OPENALEX_URL="+oaSrv.URL, "SMTP_URL="+smtpURL, "HARVEST_INTERVAL=1m", "DIGEST_SCHEDULE_INTERVAL=2s",
		"CHANNEL_ALLOW_HOSTS=127.0.0.1", "RATE_LIMIT_PER_USER=0", "JOB_RETRY_MAX=5s", "SECRET_KEY="+ruSecretKey,
		// Pools sized to the server, as an operator does: six processes at
		// most (the rollback check's api and worker beside the four) ×
		// 14 = 84 of the cluster's max_connections=100, with room for the
		// soak's own and the migrate's. At the default of 20 the sixth
		// process met "too many clients" under the load scenario's load.
		"DB_MAX_CONNS=14",
		fmt.Sprintf("PUBLIC_URL=http://127.0.0.1:%d", ports[0]))
	var slots []*slot
	newSlot := func(name, mode string, port int) *slot {
		s := &slot{name: name, mode: mode, port: port}
		if port > 0 {
			s.c = newClient(fmt.Sprintf("http://127.0.0.1:%d", port), loadClients+ruClients+8, 30*time.Second)
		}
		slots = append(slots, s)
		return s
	}
	defer func() {
		for _, s := range slots {
			if p, _ := s.now(); p != nil {
				p.stop()
			}
			if s.c != nil {
				s.c.close()
			}
		}
	}()
	starts := 0
	start := func(s *slot, exe, rel string) error {
		env := common
		if s.port > 0 {
			env = append(slices.Clone(common), fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", s.port))
		}
		starts++
		p, err := startProc(ctx, exe, s.mode, env, e.logPath("rolling-upgrade", fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(s.name, " ", ""), rel, starts)))
		if err != nil {
			return fmt.Errorf("%s (%s release): %w", s.name, rel, err)
		}
		c := s.c
		if c == nil {
			c = newClient(p.base, 2, 5*time.Second)
			defer c.close()
		}
		ready, err := waitFor(ctx, time.Minute, 100*time.Millisecond, func() (bool, error) {
			r := c.do(ctx, "GET", "/readyz", "", nil, nil)
			return r.err == nil && r.status == http.StatusOK, nil
		})
		if err == nil && !ready {
			err = fmt.Errorf("%s (%s release) not ready within a minute: %s", s.name, rel, p.tail())
		}
		if err != nil {
			p.kill()
			return err
		}
		s.mu.Lock()
		s.p, s.release = p, rel
		s.mu.Unlock()
		return nil
	}
	api1, api2, api3 := newSlot("api 1", "api", ports[0]), newSlot("api 2", "api", ports[1]), newSlot("api 3", "api", ports[2])
	worker1, worker2, worker3 := newSlot("worker 1", "worker", 0), newSlot("worker 2", "worker", 0), newSlot("worker 3", "worker", 0)

	// The previous release's statements are logged from its first start
	// to the new migrate.
	if err := setLogStatement(ctx, cl, "all"); err != nil {
		return err
	}
	for _, s := range []*slot{worker1, worker2, api1, api2} {
		if err := start(s, prev.exe, "previous"); err != nil {
			return err
		}
	}
	lb := &balancer{}
	lb.add(api1)
	lb.add(api2)
	e.logf("rolling-upgrade: previous release %s running (schema %d): api 1 on :%d, api 2 on :%d, two workers", prev.commit[:12], prevSchema, ports[0], ports[1])

	// Users, through both apis of the previous release.
	users := make([]*ruUser, ruUsers+ruSettingsUsers)
	for i := range users {
		u := &ruUser{sub: fmt.Sprintf("soak-ru-%d", i), added: map[string]string{}, feeds: map[string]string{}}
		if i < ruUsers {
			u.category = ruCats[i%len(ruCats)]
		} else {
			u.settings = true
		}
		users[i] = u
	}
	if err := forEach(ctx, 8, len(users), func(i int) error {
		return setupUser(ctx, []*client{api1.c, api2.c}[i%2], users[i], i, hookSrv.URL)
	}); err != nil {
		return fmt.Errorf("creating users: %w", err)
	}
	loadUsers := make([]*loadUser, ruLoadUsers)
	if err := forEach(ctx, 8, len(loadUsers), func(i int) error {
		var err error
		loadUsers[i], err = setupLoadUser(ctx, []*client{api1.c, api2.c}[i%2], i, e.opts.Seed)
		return err
	}); err != nil {
		return fmt.Errorf("creating the load's users: %w", err)
	}
	e.logf("rolling-upgrade: %d users, %d channels; %d users for the load scenario's mix", len(users), ruChannelUsers, len(loadUsers))

	// The load, from now to the end.
	stats := &ruStats{classes: map[string]*classStats{}}
	stats.phase(fmt.Sprintf("previous release (schema %d)", prevSchema))
	var registered atomic.Int64 // researchers the host registered
	loadStart := time.Now()
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	for i := range ruClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			driveUpgradeLoad(lctx, lb, stats, users, &registered, i, e.opts.Seed)
		}()
	}
	wg.Add(1)
	go func() { // the load scenario's load
		defer wg.Done()
		rctx := context.WithoutCancel(lctx)
		runLoadMix(lctx, loadUsers, e.opts.Seed, func(_ int, class, method, path, token string, hdr http.Header, ok func(int) bool) reply {
			phase := stats.current()
			r := lb.do(rctx, method, path, token, nil, hdr)
			if lctx.Err() == nil {
				stats.record("load: "+loadClassName[class], phase, r, r.err == nil && ok(r.status))
			}
			return r.reply
		})
	}()
	var pushed sync.Map // arXiv id → category
	nPushed := 0
	var dueMu sync.Mutex
	due := map[int64]time.Time{} // user id → when the digest was made due
	ids, err := ruUserIDs(ctx, db, users)
	if err != nil {
		return err
	}
	wg.Add(4)
	go func() { // pusher
		defer wg.Done()
		tok, _ := mint("soak-service", "", "papers:write")
		for k := 0; lctx.Err() == nil; k++ {
			papers, byCat := pushBatch(ruPushPrefix, k*ruPerPush, ruPerPush, ruCats)
			phase := stats.current()
			r := lb.do(context.WithoutCancel(lctx), "POST", "/v1/papers", tok, papers, nil)
			ok := r.err == nil && r.status >= 200 && r.status <= 202
			stats.record("push", phase, r, ok)
			if ok {
				for cat, list := range byCat {
					for _, id := range list {
						pushed.Store(id, cat)
					}
				}
				nPushed += ruPerPush
			}
			sleep(lctx, ruPushEvery)
		}
	}()
	go func() { // the repository announces
		defer wg.Done()
		for lctx.Err() == nil {
			annMu.Lock()
			announced = min(announced+ruPerAnnounce, len(allRecs))
			annMu.Unlock()
			sleep(lctx, ruAnnounceEvery)
		}
	}()
	go func() { // the host registers researchers
		defer wg.Done()
		tok, _ := mint("soak-host", "", "papers:write")
		for k := 0; lctx.Err() == nil; k++ {
			rec := []map[string]any{{"ids": []string{fmt.Sprintf("host:9%03d", k), fmt.Sprintf("s2:8%06d", k)}, "name": fmt.Sprintf("Soak Person %d", k)}}
			phase := stats.current()
			r := lb.do(context.WithoutCancel(lctx), "PUT", "/v1/researchers", tok, rec, nil)
			ok := r.err == nil && r.status == http.StatusOK
			stats.record("registry", phase, r, ok)
			if ok {
				registered.Store(int64(k + 1))
			}
			sleep(lctx, ruRegistryEvery)
		}
	}()
	// agerDone: every feed user's digest has been made due (or the load
	// is over).
	var agerDone atomic.Bool
	go func() { // digests made due, once every category has papers matched
		defer wg.Done()
		defer agerDone.Store(true)
		if _, err := waitFor(lctx, time.Minute, time.Second, func() (bool, error) {
			var cats, open int64
			err := db.pool.QueryRow(lctx, `SELECT (SELECT count(DISTINCT primary_category) FROM papers),
				(SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state NOT IN ('completed', 'discarded', 'cancelled'))`).Scan(&cats, &open)
			return cats >= int64(len(ruCats)) && open == 0, err
		}); err != nil {
			return
		}
		for b := 0; b*ruDigestBatch < ruUsers && lctx.Err() == nil; b++ {
			if err := makeDue(lctx, db, ids[b*ruDigestBatch:min((b+1)*ruDigestBatch, ruUsers)], &dueMu, due); err != nil && lctx.Err() == nil {
				e.logf("rolling-upgrade: making digests due: %v", err)
			}
			sleep(lctx, ruDigestEvery)
		}
	}()

	var steps []ruStep
	settle := func() { sleep(ctx, ruSettle) }
	// drain sends the process in s SIGTERM and waits for its exit; a
	// worker gets it while a digest job runs (there or on the other
	// worker; at most 15 s later, digests come every few seconds), while
	// digests are still being made due. It returns the jobs running at
	// the SIGTERM.
	drain := func(s *slot) (int64, time.Duration, error) {
		if s.mode == "worker" {
			_, _ = waitFor(ctx, 15*time.Second, 50*time.Millisecond, func() (bool, error) {
				n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'digest_send' AND state = 'running'`)
				return n > 0 || agerDone.Load(), err
			})
		}
		running, _ := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE state = 'running'`)
		p, _ := s.now()
		d, err := p.terminate(ruShutdown + 5*time.Second)
		return running, d, err
	}
	replace := func(s, other *slot, exe, rel string) error {
		stats.phase(fmt.Sprintf("%s → %s release", s.name, rel))
		st := ruStep{name: fmt.Sprintf("%s: SIGTERM, exit, %s binary started, ready", s.name, rel), at: time.Since(loadStart)}
		t0 := time.Now()
		st.running, st.drained, st.exitErr = drain(s)
		if err := start(s, exe, rel); err != nil {
			return err
		}
		st.replaced = time.Since(t0)
		op, _ := other.now()
		st.otherAlive = op != nil && op.alive()
		steps = append(steps, st)
		e.logf("rolling-upgrade: %s replaced in %s (drained in %s, exit %v)", s.name, secs(st.replaced), secs(st.drained), errText(st.exitErr, "0"))
		settle()
		return nil
	}

	sleep(ctx, ruPreviousPhase)
	// The new migrate, while the previous release serves. The statement
	// log ends here.
	if err := setLogStatement(ctx, cl, "none"); err != nil {
		return err
	}
	cutoff := time.Now()
	stats.phase("new binary's migrate, previous release serving")
	t0 := time.Now()
	migrateErr := runCmd(ctx, e.opts.Exe, e.baseEnv(db.url), e.logPath("rolling-upgrade", "migrate-new"), "migrate")
	migrateTook := time.Since(t0)
	newSchema, err := schemaVersion()
	if err != nil {
		return err
	}
	steps = append(steps, ruStep{name: fmt.Sprintf("new binary's migrate: schema %d → %d (%s)", prevSchema, newSchema, errText(migrateErr, "ok")), at: t0.Sub(loadStart), replaced: migrateTook})
	if migrateErr != nil {
		return migrateErr
	}
	e.logf("rolling-upgrade: migrated %d → %d in %s under load", prevSchema, newSchema, secs(migrateTook))
	stats.phase(fmt.Sprintf("schema %d, previous release serving", newSchema))
	settle()
	for _, r := range []struct{ s, other *slot }{{worker1, worker2}, {worker2, worker1}, {api1, api2}, {api2, api1}} {
		if err := replace(r.s, r.other, e.opts.Exe, "new"); err != nil {
			return err
		}
	}
	// Rollback: the previous binary starts and serves on the expanded
	// schema, beside the new processes.
	stats.phase("rollback check: a previous-release api and worker beside the new ones")
	rbAt := time.Since(loadStart)
	rbErr := errors.Join(start(api3, prev.exe, "previous"), start(worker3, prev.exe, "previous"))
	if rbErr == nil {
		lb.add(api3)
		settle()
		running, d1, err1 := drain(worker3)
		_, d2, err2 := drain(api3)
		lb.remove(api3)
		steps = append(steps, ruStep{name: "rollback check: previous-release api 3 and worker 3 started on the upgraded schema, served, drained", at: rbAt,
			running: running, drained: max(d1, d2), exitErr: errors.Join(err1, err2), otherAlive: true})
	} else {
		steps = append(steps, ruStep{name: "rollback check: the previous release did not start on the upgraded schema", at: rbAt, exitErr: rbErr})
	}
	stats.phase("all new")
	settle()
	stopLoad()
	wg.Wait()
	loadEnd := time.Now()
	stats.mu.Lock()
	stats.phases[len(stats.phases)-1].end = loadEnd
	stats.mu.Unlock()
	e.logf("rolling-upgrade: load stopped after %s; waiting for the jobs", secs(loadEnd.Sub(loadStart)))

	// Everything announced harvested, every job, digest and event final.
	annMu.Lock()
	recs := slices.Clone(allRecs[:announced])
	annMu.Unlock()
	want := map[string]int{} // arXiv id → version
	catOf := map[string][]string{}
	for _, r := range recs {
		want[r.ID] = r.Version
		catOf[r.ID] = r.Categories
	}
	pushed.Range(func(k, v any) bool {
		want[k.(string)] = 1
		catOf[k.(string)] = []string{v.(string)}
		return true
	})
	var final ruFinal
	settled, err := waitFor(ctx, 3*time.Minute, 2*time.Second, func() (bool, error) {
		var err error
		final, err = readFinal(ctx, db, want)
		return err == nil && final.done(), err
	})
	if err != nil {
		return err
	}
	waited := time.Since(loadEnd)

	// --- Figures and checks.
	total, failed, retried := stats.tables(res)
	stepsOK := stepsTable(res, steps)
	res.figure("previous release", "%s (schema %d), built in %s", prev.commit, prevSchema, secs(prev.took))
	res.figure("new release", "this tree (schema %d); migrate ran %s under load", newSchema, secs(migrateTook))
	var mixN int
	stats.mu.Lock()
	for name, c := range stats.classes {
		if strings.HasPrefix(name, "load: ") {
			mixN += c.n
		}
	}
	stats.mu.Unlock()
	res.figure("load", "%d requests in %s (%.0f req/s) through the balancer: %d of them (%.0f req/s) from the load scenario's %d clients and mix, the rest from the scenario's own %d; %d papers pushed, %d records announced, %d researchers registered",
		total.n, secs(loadEnd.Sub(loadStart)), rate(total.n, loadEnd.Sub(loadStart)), mixN, rate(mixN, loadEnd.Sub(loadStart)), loadClients, ruClients, nPushed, len(recs), registered.Load())
	res.figure("resent to the other api", "%d after a refused connection, %d after a broken connection (idempotent methods)", retried[retryRefused], retried[retryBroken])
	res.check("no request failed", failed == 0 && total.errs+total.limited == 0,
		"%d failed of %d (%d resent to the other api and answered there) %s", failed, total.n, retried[retryRefused]+retried[retryBroken], strings.Join(stats.examples, "; "))
	prevAfterMigrate := 0
	for _, p := range stats.phases[1:] {
		prevAfterMigrate += p.byRelease["previous"]
	}
	migPhases := stats.phases[1].failed + stats.phases[2].failed
	res.check("the previous release kept serving on the expanded schema", migrateErr == nil && migPhases == 0 && prevAfterMigrate > 0,
		"migrate %d → %d took %s while the previous release served; %d requests failed during and after it before the first restart; %d requests answered by previous-release apis after the migrate",
		prevSchema, newSchema, secs(migrateTook), migPhases, prevAfterMigrate)
	res.check("every process drained and replaced one at a time", stepsOK,
		"each SIGTERM ended in exit 0 within SHUTDOWN_TIMEOUT and the new process was ready while the other of its kind served (table above)")
	rbPhase := stats.phases[len(stats.phases)-2]
	res.check("rollback: the previous binary runs on the upgraded schema", rbErr == nil && rbPhase.byRelease["previous"] > 0 && rbPhase.failed == 0,
		"%s; the previous-release api answered %d requests beside the new ones, %d failed", errText(rbErr, "api 3 and worker 3 of the previous release became ready on schema "+fmt.Sprint(newSchema)),
		rbPhase.byRelease["previous"], rbPhase.failed)

	res.figure("waited after the load", "%s until everything was final (bound 3 min): %v", secs(waited), settled)
	res.check("every paper stored once", final.papersBad == 0 && final.papersOnce == len(want),
		"%d of %d papers (pushed and harvested) stored once with their latest version; %d missing, doubled or behind; %d unexpected", final.papersOnce, len(want), final.papersBad, final.papersExtra)
	feedBad, feedEx, err := checkUpgradeFeeds(ctx, lb, users, want, catOf)
	if err != nil {
		return err
	}
	res.check("every feed lists every paper of its category once", feedBad == 0, "%d of %d feed users' JSON feeds (read through the balancer after the load) lack a paper, repeat one or list another %s",
		feedBad, ruUsers, strings.Join(feedEx, "; "))
	mb, err := matchJobs(ctx, db.pool)
	if err != nil {
		return err
	}
	res.figure("match jobs", "%d: %d not completed on their first attempt by one worker, %d overlapping seq ranges", mb.n, mb.bad, mb.overlaps)
	res.check("every match job done, no range twice", mb.n > 0 && mb.overlaps == 0 && final.matchOpen == 0, "%d match jobs, %d open, %d with overlapping seq ranges", mb.n, final.matchOpen, mb.overlaps)
	dueMu.Lock()
	dg, err := checkUpgradeDigests(ctx, db, sink, ids[:ruUsers], due)
	dueMu.Unlock()
	if err != nil {
		return err
	}
	res.figure("digests", "%d made due; ledger %s; %d messages received (%d distinct Message-IDs)", dg.due,
		formatCounts(final.digests, "sent", "skipped", "unknown", "failed", "pending", "sending"), dg.mails, dg.ids)
	res.check("every due digest sent once", dg.due > 0 && dg.notOnce == 0 && dg.twice == 0 && dg.unreceived == 0 && dg.mails == dg.sent,
		"%d made-due users without exactly one sent digest; %d Message-IDs received twice; %d sent rows whose message did not arrive once; %d messages for %d sent rows",
		dg.notOnce, dg.twice, dg.unreceived, dg.mails, dg.sent)
	ch := hooks.check(users[:ruChannelUsers], catOf)
	res.figure("webhook deliveries", "%d requests, %d distinct webhook-ids (%d resends of an id); channel events %s", ch.requests, ch.ids, ch.resends, formatCounts(final.events, "delivered", "failed", "pending"))
	res.check("every instant channel got every paper once", final.events["failed"] == 0 && ch.missing == 0 && ch.twice == 0 && ch.extra == 0,
		"%d channels: %d papers of their category missing, %d in two events, %d not of their category; %d events failed %s",
		ruChannelUsers, ch.missing, ch.twice, ch.extra, final.events["failed"], strings.Join(ch.examples, "; "))
	jobs, err := jobCounts(ctx, db.pool, 0)
	if err != nil {
		return err
	}
	retriedJobs, err := jobRetries(ctx, db)
	if err != nil {
		return err
	}
	res.figure("River jobs", "%s", formatJobs(jobs))
	res.figure("jobs that took more than one attempt", "%s", orNone(len(retriedJobs))+" "+strings.Join(retriedJobs[:min(len(retriedJobs), 5)], "; "))
	res.check("no job lost or stuck", len(final.open) == 0 && final.lost == 0, "left open: %s; discarded or cancelled: %d", formatJobs(final.open), final.lost)
	fit, seen, err := checkStatements(ctx, e, res, db, logDir, cutoff, prev, prevSchema, newSchema, root)
	if err != nil {
		return err
	}

	lost := final.papersBad + feedBad + dg.notOnce + ch.missing + sumJobs(final.open) + int(final.lost)
	twice := dg.unreceived + dg.twice + ch.twice
	res.Summary = fmt.Sprintf("%s → this tree, schema %d → %d under load; %d of %d requests failed (%d resent to the other api); 4 processes replaced one at a time; %d papers, %d digests, %d channel deliveries, %d jobs: %d lost, %d twice; %d of %d previous-release statements fit",
		prev.commit[:7], prevSchema, newSchema, failed, total.n, retried[retryRefused]+retried[retryBroken], len(want), dg.sent,
		ch.ids, sumJobs(jobs), lost, twice, fit, seen)
	return nil
}

// tables adds the requests by class and by phase to res and returns the
// totals: all requests, those that failed, the resends by reason.
func (s *ruStats) tables(res *Result) (*classStats, int, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := &classStats{}
	var classNames []string
	for k := range s.classes {
		classNames = append(classNames, k)
	}
	slices.Sort(classNames)
	var classRows []string
	for _, k := range classNames {
		c := s.classes[k]
		total.merge(c)
		p50, p99 := bench.Percentiles(c.durs)
		classRows = append(classRows, fmt.Sprintf("| %s | %d | %s | %s | %d |", k, c.n, ms(p50), ms(p99), c.errs+c.limited))
	}
	res.Tables = append(res.Tables, "Requests by class, through the balancer (p50/p99 include a resend's first try):\n\n| class | requests | p50 | p99 | failed |\n| --- | --- | --- | --- | --- |\n"+strings.Join(classRows, "\n"))
	var phaseRows []string
	retried := map[string]int{}
	failed := 0
	for _, p := range s.phases {
		p50, p99 := bench.Percentiles(p.durs)
		for k, v := range p.retried {
			retried[k] += v
		}
		failed += p.failed
		phaseRows = append(phaseRows, fmt.Sprintf("| %s | %s | %d | %d | %d / %d | %d / %d | %s | %s |", p.name, secs(p.end.Sub(p.start)), p.n, p.failed,
			p.retried[retryRefused], p.retried[retryBroken], p.byRelease["previous"], p.byRelease["new"], ms(p50), ms(p99)))
	}
	res.Tables = append(res.Tables, "The run, phase by phase (a phase begins with its step; a request counts in the phase it was sent in):\n\n| phase | lasted | requests | failed | resent to the other api: refused / broken idempotent | answered by previous / new | p50 | p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n"+strings.Join(phaseRows, "\n"))
	return total, failed, retried
}

// stepsTable adds the steps to res and reports whether every drain ended
// in exit 0 while the other process of its kind served.
func stepsTable(res *Result, steps []ruStep) bool {
	var rows []string
	ok := true
	for _, st := range steps {
		rows = append(rows, fmt.Sprintf("| %s | %s | %d | %s | %s | %s |", st.name, secs(st.at), st.running, secsOrDash(st.drained), errText(st.exitErr, "0"), secsOrDash(st.replaced)))
		if strings.Contains(st.name, "SIGTERM") && (st.exitErr != nil || !st.otherAlive) {
			ok = false
		}
	}
	res.Tables = append(res.Tables, "The steps (at: since the load began; running: River jobs running on any worker at the SIGTERM; drained: SIGTERM to exit; replaced: SIGTERM to the new process's /readyz, or the migrate's run time):\n\n| step | at | running | drained | exit | replaced / took |\n| --- | --- | --- | --- | --- | --- |\n"+strings.Join(rows, "\n"))
	return ok
}

// ruDigests is what the digest check found.
type ruDigests struct {
	due, notOnce, sent, mails, ids, twice, unreceived int
}

// checkUpgradeDigests compares the ledger with the sink: each made-due
// user (due) has one sent digest, every sent row's message arrived once.
func checkUpgradeDigests(ctx context.Context, db *freshDB, sink *mailSink, ids []int64, due map[int64]time.Time) (ruDigests, error) {
	d := ruDigests{due: len(due)}
	perUser, err := sentPerUser(ctx, db, ids)
	if err != nil {
		return d, err
	}
	for _, id := range ids {
		if _, ok := due[id]; ok && perUser[id] != 1 {
			d.notOnce++
		}
	}
	received, mails := sink.snapshot()
	d.mails, d.ids = mails, len(received)
	sentIDs, err := messageIDs(ctx, db, "state = 'sent'")
	if err != nil {
		return d, err
	}
	d.sent = len(sentIDs)
	for _, n := range received {
		if n > 1 {
			d.twice++
		}
	}
	for _, id := range sentIDs {
		if received[id] != 1 {
			d.unreceived++
		}
	}
	return d, nil
}

// ruChannels is what the channel check found.
type ruChannels struct {
	missing, twice, extra  int
	examples               []string
	requests, ids, resends int
}

// check compares what each channel user's webhook received with the
// papers of its category (catOf: every paper's categories).
func (h *upgradeHooks) check(users []*ruUser, catOf map[string][]string) ruChannels {
	h.mu.Lock()
	defer h.mu.Unlock()
	var c ruChannels
	for _, u := range users {
		got := h.papers[u.sub]
		for id, cats := range catOf {
			if !slices.Contains(cats, u.category) {
				continue
			}
			switch got[id] {
			case 0:
				c.missing++
			case 1:
			default:
				c.twice++
			}
			if got[id] != 1 && len(c.examples) < 3 {
				c.examples = append(c.examples, fmt.Sprintf("%s (%s): %s in %d events", u.sub, u.category, id, got[id]))
			}
		}
		for id := range got {
			if !slices.Contains(catOf[id], u.category) {
				c.extra++
			}
		}
	}
	for _, n := range h.byID {
		c.resends += n - 1
	}
	c.requests, c.ids = h.total, len(h.byID)
	return c
}

// checkStatements reads the statements the previous release sent before
// cutoff from the server's log, checks each on the upgraded schema and
// against the committed capture (writing the capture first when asked),
// and returns how many fit of how many.
func checkStatements(ctx context.Context, e *env, res *Result, db *freshDB, logDir string, cutoff time.Time, prev *release, prevSchema, newSchema int64, root string) (int, int, error) {
	captured := querylog.NewSet()
	nMsgs, err := readStatementLog(logDir, databaseName(db.url), cutoff, captured)
	if err != nil {
		return 0, 0, err
	}
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var misfits []string
	origins := map[string]int{}
	for _, st := range captured.Statements() {
		origins[st.Origin]++
		if err := querylog.Check(ctx, conn, st.SQL); err != nil {
			misfits = append(misfits, fmt.Sprintf("%s: %v", oneLine(lastBytes(st.SQL, 160)), err))
		}
	}
	res.figure("the previous release's statements", "%d distinct (%d followfeed, %d goose, %d River) in %d logged executions of its api and worker processes before the migrate",
		captured.Len(), origins[querylog.OriginFollowfeed], origins[querylog.OriginGoose], origins[querylog.OriginRiver], nMsgs)
	res.check("the previous release's statements fit the upgraded schema", captured.Len() > 0 && len(misfits) == 0,
		"%d of %d do not PREPARE on schema %d (or leave a NOT NULL column out) %s", len(misfits), captured.Len(), newSchema, strings.Join(misfits[:min(len(misfits), 3)], "; "))
	if e.opts.CaptureQueries != "" {
		n, err := writeCapture(e, e.opts.CaptureQueries, prev, prevSchema, captured)
		if err != nil {
			return 0, 0, err
		}
		res.figure("capture written", "%s: %d statements", e.opts.CaptureQueries, n)
	}
	missing, fileErr := notInCapture(filepath.Join(root, ruQueriesFile), prev.commit, captured)
	holds := "it holds every followfeed statement of this run"
	if len(missing) > 0 {
		holds = fmt.Sprintf("%d followfeed statements of this run missing, e.g. %s: re-capture (make soak SOAK_FLAGS=\"--only rolling-upgrade --capture-queries %s\")",
			len(missing), strings.Join(missing[:min(len(missing), 2)], "; "), ruQueriesFile)
	}
	res.check("the committed capture holds them", fileErr == nil && len(missing) == 0, "%s: %s", ruQueriesFile, errText(fileErr, holds))
	return captured.Len() - len(misfits), captured.Len(), nil
}

// sumJobs is the number of jobs of counts.
func sumJobs(counts map[string]map[string]int) int {
	n := 0
	for _, byState := range counts {
		for _, c := range byState {
			n += c
		}
	}
	return n
}

func secsOrDash(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return secs(d)
}

// freePorts returns n distinct free ports of 127.0.0.1, all held until
// the last is found.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// setupUser makes a user with a verified address through c: a feed user
// follows its category (the first ruChannelUsers also get an instant
// webhook channel to hookBase), a settings user follows nothing; both
// learn their feed links.
func setupUser(ctx context.Context, c *client, u *ruUser, i int, hookBase string) error {
	var err error
	if u.token, err = mint(u.sub, fmt.Sprintf("ru%d@soak.example", i)); err != nil {
		return err
	}
	if u.settings {
		// Every other one follows a query every pushed paper matches:
		// the match jobs then have narrow keys (the path that reads the
		// users with instant delivery: the channel users).
		if _, err := c.must(ctx, "GET", "/v1/me", u.token, nil, 200); err != nil {
			return err
		}
		if i%2 == 0 {
			if _, err := c.must(ctx, "PUT", "/v1/me/follows/query/"+url.PathEscape(ruPushedQuery), u.token, nil, 200, 201); err != nil {
				return err
			}
		}
	} else if _, err := c.must(ctx, "PUT", "/v1/me/follows/category/"+u.category, u.token, nil, 200, 201); err != nil {
		return err
	}
	r, err := c.must(ctx, "GET", "/v1/me/feeds", u.token, nil, 200)
	if err != nil {
		return err
	}
	var links struct {
		Atom, RSS, JSON, OPML string
		Follows               []struct{ JSON string }
	}
	if err := json.Unmarshal(r.body, &links); err != nil {
		return err
	}
	for k, v := range map[string]string{"atom": links.Atom, "rss": links.RSS, "json": links.JSON, "opml": links.OPML} {
		if pu, err := url.Parse(v); err == nil {
			u.feeds[k] = pu.Path
		}
	}
	if len(links.Follows) > 0 {
		if pu, err := url.Parse(links.Follows[0].JSON); err == nil {
			u.feeds["follow"] = pu.Path
		}
	}
	if i < ruChannelUsers {
		r, err := c.must(ctx, "POST", "/v1/me/channels", u.token, map[string]any{"type": "webhook", "url": hookBase + "/hook/" + u.sub, "mode": "instant"}, 201)
		if err != nil {
			return err
		}
		var ch struct{ ID any }
		if err := json.Unmarshal(r.body, &ch); err != nil {
			return err
		}
		u.channel = fmt.Sprint(ch.ID)
	}
	return nil
}

// ruPushedQuery matches every pushed paper ("Pushed soak paper N"); only
// settings users follow it.
const ruPushedQuery = `"pushed soak"`

// Targets of the load's follows: none matches a paper the soak pushes or
// announces, so feeds, digests and channels stay predictable.
var (
	ruOtherCats = []string{"math.OC", "hep-th", "astro-ph.GA", "q-bio.NC", "econ.EM", "physics.optics"}
	ruSearches  = []string{"previewing soak", "ti:soak cat:cs.LG", "ti:paper", "au:soak OR au:tester", `"pushed soak"`}
)

// driveUpgradeLoad is one load client: it drives the users whose index is
// client modulo ruClients (so each user's requests are sequential) until
// ctx ends; registered is how many researchers the host registered.
func driveUpgradeLoad(ctx context.Context, lb *balancer, stats *ruStats, users []*ruUser, registered *atomic.Int64, client int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(7000+client)))
	var feedUsers, settingsUsers, channelUsers []*ruUser
	for i := client; i < len(users); i += ruClients {
		u := users[i]
		switch {
		case u.settings:
			settingsUsers = append(settingsUsers, u)
		default:
			feedUsers = append(feedUsers, u)
			if u.channel != "" {
				channelUsers = append(channelUsers, u)
			}
		}
	}
	rctx := context.WithoutCancel(ctx) // a request under way when the load stops finishes and is not counted
	do := func(class, method, path, token string, body any, hdr http.Header, want ...int) lbReply {
		phase := stats.current()
		r := lb.do(rctx, method, path, token, body, hdr)
		if ctx.Err() == nil {
			stats.record(class, phase, r, r.err == nil && slices.Contains(want, r.status))
		}
		return r
	}
	for ctx.Err() == nil {
		u := feedUsers[rng.IntN(len(feedUsers))]
		switch v := rng.IntN(100); {
		case v < 30:
			switch rng.IntN(3) {
			case 0:
				var hdr http.Header
				if u.etag != "" && rng.IntN(2) == 0 {
					hdr = http.Header{"If-None-Match": {u.etag}}
				}
				if r := do("feed (private)", "GET", u.feeds["json"], "", nil, hdr, 200, 304); r.err == nil && r.status == 200 {
					u.etag = r.header.Get("ETag")
				}
			case 1:
				do("feed (private)", "GET", u.feeds["atom"], "", nil, nil, 200)
			default:
				do("feed (private)", "GET", u.feeds["rss"], "", nil, nil, 200)
			}
		case v < 36:
			do("feed (per follow)", "GET", u.feeds["follow"], "", nil, nil, 200, 304)
		case v < 42:
			do("feed (public)", "GET", "/feeds/category/"+ruCats[rng.IntN(len(ruCats))]+[]string{".atom", ".rss", ".json"}[rng.IntN(3)], "", nil, nil, 200, 304)
		case v < 45:
			do("feed (OPML)", "GET", u.feeds["opml"], "", nil, nil, 200)
		case v < 59:
			method, path := nextUpgradeFollow(rng, u)
			r := do("follow/unfollow", method, path, u.token, nil, nil, 200, 201, 204)
			if method == "PUT" && r.err == nil && (r.status == 200 || r.status == 201) {
				var f struct{ Kind, ID string }
				if json.Unmarshal(r.body, &f) == nil && f.ID != "" {
					u.added[path] = "/v1/me/follows/" + f.Kind + "/" + url.PathEscape(f.ID)
				}
			}
		case v < 67:
			tok := ""
			if rng.IntN(2) == 0 {
				tok = u.token
			}
			do("follow status", "GET", "/v1/follows/category/"+[]string{u.category, ruOtherCats[rng.IntN(len(ruOtherCats))]}[rng.IntN(2)], tok, nil, nil, 200)
		case v < 77:
			do("me", "GET", []string{"/v1/me", "/v1/me/follows", "/v1/me/feeds"}[rng.IntN(3)], u.token, nil, nil, 200)
		case v < 81:
			if len(settingsUsers) == 0 {
				continue
			}
			s := settingsUsers[rng.IntN(len(settingsUsers))]
			patch := map[string]any{"timezone": []string{"Europe/Amsterdam", "America/New_York", "Asia/Tokyo", "UTC"}[rng.IntN(4)]}
			if rng.IntN(2) == 0 {
				patch["digest"] = map[string]any{"frequency": []string{"daily", "weekly", "off"}[rng.IntN(3)], "hour": rng.IntN(24)}
			}
			do("settings (PATCH /v1/me)", "PATCH", "/v1/me", s.token, patch, nil, 200)
		case v < 85:
			do("search preview", "GET", "/v1/search/preview?q="+url.QueryEscape(ruSearches[rng.IntN(len(ruSearches))]), u.token, nil, nil, 200)
		case v < 91:
			do("status and operations", "GET", []string{"/v1/status", "/status", "/readyz", "/healthz", "/metrics"}[rng.IntN(5)], "", nil, nil, 200)
		case v < 95:
			if n := registered.Load(); n > 0 {
				do("researcher", "GET", fmt.Sprintf("/v1/researchers/s2:8%06d", rng.Int64N(n)), "", nil, nil, 200)
			}
		default:
			if len(channelUsers) == 0 {
				continue
			}
			c := channelUsers[rng.IntN(len(channelUsers))]
			do("channels", "GET", []string{"/v1/me/channels", "/v1/me/channels/" + c.channel + "/deliveries"}[rng.IntN(2)], c.token, nil, nil, 200)
		}
		sleep(ctx, ruThink)
	}
}

// nextUpgradeFollow picks the unfollow of a follow the load added, or a
// new follow (a category of ruOtherCats, a host researcher, a query or a
// paper that is never pushed).
func nextUpgradeFollow(rng *rand.Rand, u *ruUser) (string, string) {
	if len(u.added) > 0 && rng.IntN(2) == 0 {
		for put, del := range u.added {
			delete(u.added, put)
			return "DELETE", del
		}
	}
	for {
		var path string
		switch rng.IntN(4) {
		case 0:
			path = "category/" + ruOtherCats[rng.IntN(len(ruOtherCats))]
		case 1:
			path = fmt.Sprintf("researcher/host:9%03d", rng.IntN(50))
		case 2:
			path = "query/" + url.PathEscape(fmt.Sprintf("ti:zzqx%d", rng.IntN(10)))
		default:
			path = fmt.Sprintf("paper/2401.%05d", 1+rng.IntN(99))
		}
		path = "/v1/me/follows/" + path
		if _, ok := u.added[path]; !ok {
			return "PUT", path
		}
	}
}

// setupLoadUser makes user i of the load scenario's mix through c, as a
// scale-S user of scenario load is: a verified address, three categories
// and two s2 researchers followed (what the mix's follows never repeat),
// digests off, the private Atom feed's path.
func setupLoadUser(ctx context.Context, c *client, i int, seed uint64) (*loadUser, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(9000+i)))
	u := &loadUser{sub: fmt.Sprintf("soak-ru-load-%d", i), had: map[string]bool{}, added: map[string]follow.Target{}}
	var err error
	if u.token, err = mint(u.sub, fmt.Sprintf("ru-load%d@soak.example", i)); err != nil {
		return nil, err
	}
	cats := follow.ActiveCategories()
	for len(u.follows) < 5 {
		t := follow.Target{Kind: follow.Category, ID: cats[rng.IntN(len(cats))].ID}
		if len(u.follows) >= 3 {
			t = follow.Target{Kind: follow.Researcher, ID: fmt.Sprintf("s2:%d", 1+rng.IntN(300000))}
		}
		if u.had[t.Key()] {
			continue
		}
		if _, err := c.must(ctx, "PUT", "/v1/me/follows/"+string(t.Kind)+"/"+t.ID, u.token, nil, 200, 201); err != nil {
			return nil, err
		}
		u.had[t.Key()] = true
		u.follows = append(u.follows, t)
	}
	if _, err := c.must(ctx, "PATCH", "/v1/me", u.token, map[string]any{"digest": map[string]any{"frequency": "off"}}, 200); err != nil {
		return nil, err
	}
	u.feed, err = c.feedPath(ctx, u.token, "atom")
	return u, err
}

// ruUserIDs returns the users' ids, in the order of users.
func ruUserIDs(ctx context.Context, db *freshDB, users []*ruUser) ([]int64, error) {
	subs := make([]string, len(users))
	for i, u := range users {
		subs[i] = u.sub
	}
	rows, err := db.pool.Query(ctx, `SELECT sub, id FROM users WHERE sub = ANY($1)`, subs)
	if err != nil {
		return nil, err
	}
	bySub := map[string]int64{}
	for rows.Next() {
		var s string
		var id int64
		if err := rows.Scan(&s, &id); err != nil {
			rows.Close()
			return nil, err
		}
		bySub[s] = id
	}
	rows.Close()
	out := make([]int64, len(users))
	for i, u := range users {
		if out[i] = bySub[u.sub]; out[i] == 0 {
			return nil, fmt.Errorf("user %s not in the database", u.sub)
		}
	}
	return out, rows.Err()
}

// makeDue makes the users' daily digests due now, the window from seq 0:
// aging on purpose, in the soak's own SQL (notify.Preferences schedules a
// digest at the user's hour).
func makeDue(ctx context.Context, db *freshDB, ids []int64, mu *sync.Mutex, due map[int64]time.Time) error {
	if _, err := makeDailyDue(ctx, db.pool, ids); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		due[id] = time.Now()
	}
	return nil
}

// sentPerUser counts the sent digests of each user.
func sentPerUser(ctx context.Context, db *freshDB, ids []int64) (map[int64]int, error) {
	rows, err := db.pool.Query(ctx, `SELECT user_id, count(*) FROM digests WHERE state = 'sent' AND user_id = ANY($1) GROUP BY 1`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// ruFinal is the state the soak waits for after the load.
type ruFinal struct {
	papersOnce, papersBad, papersExtra int
	matchOpen                          int64
	digests, events                    map[string]int
	open                               map[string]map[string]int
	lost                               int64
}

// done: every paper stored, every digest and channel event final, no job
// open but the periodic ones waiting their turn.
func (f ruFinal) done() bool {
	return f.papersBad == 0 && f.matchOpen == 0 && f.digests["pending"] == 0 && f.digests["sending"] == 0 &&
		f.events["pending"] == 0 && len(f.open) == 0
}

func readFinal(ctx context.Context, db *freshDB, want map[string]int) (ruFinal, error) {
	var f ruFinal
	var err error
	recs := make([]oaipmh.Record, 0, len(want))
	for id, v := range want {
		recs = append(recs, oaipmh.Record{ID: id, Version: v})
	}
	if f.papersOnce, f.papersBad, f.papersExtra, err = checkPapers(ctx, db, recs); err != nil {
		return f, err
	}
	if f.matchOpen, err = count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state NOT IN ('completed', 'discarded', 'cancelled')`); err != nil {
		return f, err
	}
	if f.digests, err = stateCounts(ctx, db.pool, "true"); err != nil {
		return f, err
	}
	if f.events, err = countsBy(ctx, db.pool, `SELECT state, count(*) FROM channel_events GROUP BY 1`); err != nil {
		return f, err
	}
	// Open: a job not final, beyond a periodic job (or a harvest's
	// follow-up) that is running or waiting its first attempt or its next
	// turn: the leader inserts those on schedule, and they never end while
	// the harvest runs every minute.
	if f.open, err = kindStateCounts(ctx, db.pool, `SELECT kind, state::text, count(*) FROM river.river_job
		WHERE state NOT IN ('completed', 'discarded', 'cancelled')
		  AND NOT (kind = ANY($1) AND state IN ('available', 'running', 'scheduled') AND attempt <= 1)
		GROUP BY 1, 2`, []string{"digest_schedule", "harvest_arxiv", "harvest_check", "enrich_openalex", "channel_schedule", "channel_prune"}); err != nil {
		return f, err
	}
	f.lost, err = count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE state IN ('discarded', 'cancelled')`)
	return f, err
}

// jobRetries lists the jobs that took more than one attempt: kind, id,
// attempts and the first error.
func jobRetries(ctx context.Context, db *freshDB) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT kind, id, attempt, coalesce(errors[1]->>'error', '') FROM river.river_job WHERE attempt > 1 ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var kind, msg string
		var id int64
		var attempt int
		if err := rows.Scan(&kind, &id, &attempt, &msg); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s %d: %d attempts (%s)", kind, id, attempt, oneLine(lastBytes(msg, 120))))
	}
	return out, rows.Err()
}

// checkUpgradeFeeds reads every feed user's JSON feed through the
// balancer: every paper of the user's category listed once, nothing else.
func checkUpgradeFeeds(ctx context.Context, lb *balancer, users []*ruUser, want map[string]int, catOf map[string][]string) (int, []string, error) {
	var mu sync.Mutex
	bad := 0
	var ex []string
	err := forEach(ctx, 8, ruUsers, func(i int) error {
		u := users[i]
		r := lb.do(ctx, "GET", u.feeds["json"]+"?limit=200", "", nil, nil)
		if r.err != nil || r.status != 200 {
			return fmt.Errorf("reading %s's feed: %v %d", u.sub, r.err, r.status)
		}
		items, err := parseFeedItems(r.body)
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for _, id := range items {
			seen[id]++
		}
		missing, twice, other := 0, 0, 0
		for id := range want {
			if slices.Contains(catOf[id], u.category) && seen[id] == 0 {
				missing++
			}
		}
		for id, n := range seen {
			if n > 1 {
				twice++
			}
			if !slices.Contains(catOf[id], u.category) {
				other++
			}
		}
		if missing+twice+other > 0 {
			mu.Lock()
			bad++
			if len(ex) < 3 {
				ex = append(ex, fmt.Sprintf("%s (%s): %d missing, %d twice, %d of another category", u.sub, u.category, missing, twice, other))
			}
			mu.Unlock()
		}
		return nil
	})
	return bad, ex, err
}

// newStatementLogCluster starts a throwaway cluster whose server log is
// JSON lines (jsonlog through the logging collector, which a restart
// turns on) in its own directory, returned.
func newStatementLogCluster(ctx context.Context, e *env) (*pgcluster.Cluster, string, error) {
	cl, err := newCluster(ctx, e)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(cl.Dir, "jsonlog")
	for _, s := range []string{
		"ALTER SYSTEM SET logging_collector = on",
		"ALTER SYSTEM SET log_destination = 'jsonlog'",
		"ALTER SYSTEM SET log_directory = '" + dir + "'",
		"ALTER SYSTEM SET log_filename = 'server'", // the collector writes server.json
		"ALTER SYSTEM SET log_rotation_size = 0",
		"ALTER SYSTEM SET log_rotation_age = 0",
		"ALTER SYSTEM SET log_parameter_max_length = 0", // statements, not their values
	} {
		if err := execAdmin(ctx, cl.URL("postgres"), s); err != nil {
			cl.Destroy()
			return nil, "", fmt.Errorf("%s: %w", s, err)
		}
	}
	if err := cl.Stop(ctx, "fast"); err != nil {
		cl.Destroy()
		return nil, "", err
	}
	if err := cl.Start(ctx); err != nil {
		cl.Destroy()
		return nil, "", err
	}
	return cl, dir, nil
}

// setLogStatement sets log_statement for every session of the cluster
// (ALTER SYSTEM and a reload) and waits until a new session sees it.
func setLogStatement(ctx context.Context, cl *pgcluster.Cluster, value string) error {
	if err := execAdmin(ctx, cl.URL("postgres"), "ALTER SYSTEM SET log_statement = '"+value+"'"); err != nil {
		return err
	}
	if err := execAdmin(ctx, cl.URL("postgres"), "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	ok, err := waitFor(ctx, 10*time.Second, 50*time.Millisecond, func() (bool, error) {
		conn, err := pgx.Connect(ctx, cl.URL("postgres"))
		if err != nil {
			return false, err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var v string
		err = conn.QueryRow(ctx, "SHOW log_statement").Scan(&v)
		return v == value, err
	})
	if err == nil && !ok {
		err = fmt.Errorf("log_statement did not become %q after a reload", value)
	}
	return err
}

// readStatementLog adds to set the statements the api and worker
// processes sent to database db before cutoff.
func readStatementLog(dir, db string, cutoff time.Time, set *querylog.Set) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("no JSON server log in %s", dir)
	}
	total := 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return total, err
		}
		n, err := querylog.ReadLog(f, set, func(e querylog.Entry) bool {
			if e.DBName != db || (e.Application != "followfeed api" && e.Application != "followfeed worker") {
				return false
			}
			t, err := time.Parse("2006-01-02 15:04:05.000 MST", e.Timestamp)
			return err == nil && t.Before(cutoff)
		}, func(e querylog.Entry) string { return strings.TrimPrefix(e.Application, "followfeed ") })
		f.Close()
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// notInCapture returns the followfeed statements of run that the
// committed capture at path lacks; an error when it cannot be read or is
// another release's.
func notInCapture(path, commit string, run *querylog.Set) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := querylog.Parse(string(data))
	if err != nil {
		return nil, err
	}
	if f.Release != commit {
		return nil, fmt.Errorf("it holds release %s's statements, not %s's: re-capture it", f.Release, commit)
	}
	have := querylog.NewSet(f.Statements...)
	var missing []string
	for _, st := range run.Statements() {
		if st.Origin == querylog.OriginFollowfeed && !have.Has(st.SQL) {
			missing = append(missing, oneLine(lastBytes(st.SQL, 120)))
		}
	}
	return missing, nil
}

// writeCapture writes the capture file at path: this run's statements,
// with those of the file already there when it holds the same release (so
// captures add up).
func writeCapture(e *env, path string, prev *release, schema int64, run *querylog.Set) (int, error) {
	stmts := run.Statements()
	if data, err := os.ReadFile(path); err == nil {
		if old, err := querylog.Parse(string(data)); err == nil && old.Release == prev.commit {
			stmts = append(stmts, old.Statements...)
		}
	}
	set := querylog.NewSet(stmts...)
	digest, err := querylog.MigrationsDigest(os.DirFS(filepath.Join(prev.tree, "migrations", "sql")), schema)
	if err != nil {
		return 0, err
	}
	by := "`" + e.opts.Command + "`"
	if e.opts.ViaMake {
		by = "`make soak` (" + by + ")"
	}
	f := &querylog.File{
		Release: prev.commit, Schema: schema, Migrations: digest,
		Captured: time.Now().UTC().Format("2006-01-02") + " by " + by,
		Notes: []string{
			"What: every distinct statement the release's api and worker processes sent in the soak's rolling-upgrade scenario before the",
			"upgrade began (PostgreSQL's jsonlog with log_statement=all; $n placeholders as sent, values not logged), River's own included;",
			"session commands (BEGIN, SET, LISTEN, ...) left out. A re-capture of the same release adds to the statements already here.",
			"Re-capture (at each release, after updating migrations.PreviousRelease): make soak SOAK_FLAGS=\"--only rolling-upgrade --capture-queries " + ruQueriesFile + "\"",
		},
		Statements: set.Statements(),
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	out, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	if err := f.Write(out); err != nil {
		out.Close()
		return 0, err
	}
	return len(f.Statements), out.Close()
}
