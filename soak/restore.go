package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/bench"
)

// Sizes and timings of the restore scenario.
const (
	rsSent          = 24    // users whose digest is sent before the dump
	rsPending       = 24    // users whose digest is pending (the relay refuses) in the dump
	rsHeld          = 8     // users whose digest is being sent (the relay holds its reply) in the dump
	rsBulk          = 20000 // papers in categories nobody here follows, so the dump has some size
	rsBulkPrefix    = "2801"
	rsQuiet         = 12 // users following a category the load never touches
	rsHooks         = 8  // users with an instant webhook channel
	rsQuietCategory = "math.CO"
	rsQuietPapers   = 10
	rsHarvested     = 60
	rsPerPush       = 6
	rsPushEvery     = 1500 * time.Millisecond
	rsPollers       = 4
	rsRetryMax      = 10 * time.Second // JOB_RETRY_MAX: 12 attempts of a refused digest span ~2 minutes
	rsRescueAfter   = 30 * time.Second // JOB_RESCUE_AFTER
	rsBound         = 3 * time.Minute
	rsHarvestPrefix = "2903"
	rsPushPrefix    = "2904"
	rsQuietPrefix   = "2902"
	rsAfterPrefix   = "2901"
	// rsSecretKey is the SECRET_KEY of both services: feed tokens and the
	// sealed webhook secrets need the same one after a restore.
	rsSecretKey = "soak-restore-secret-key-kept-beside-the-dump-0001"
	rsOtherKey  = "soak-restore-a-different-secret-key-for-the-probe"
	rsPublicURL = "http://followfeed.soak.example"
)

// rsUser is a user of the restore scenario.
type rsUser struct {
	sub, email, category, kind string // kind: sent, pending, held, quiet, hook
	token, feed, hookPath      string
	id                         int64
	mu                         sync.Mutex
	etag                       string // busy users: the poller's latest
	recBody                    []byte // quiet users: recorded before the dump
	recETag                    string
}

// rsLedger is a database's delivery ledger, read at one moment.
type rsLedger struct {
	digests map[string]string // Message-ID → state
	digUser map[string]int64  // Message-ID → user
	events  map[string]string // webhook-id → state
	jobs    map[string]map[string]int
	papers  int64
}

func readLedger(ctx context.Context, pool *pgxpool.Pool) (rsLedger, error) {
	l := rsLedger{digests: map[string]string{}, digUser: map[string]int64{}, events: map[string]string{}}
	// Digest Message-IDs are digest.<user>.<period>@<host> (notify's
	// message): derived here from the row when not set yet.
	rows, err := pool.Query(ctx, `SELECT coalesce(message_id, ''), user_id, period, state FROM digests`)
	if err != nil {
		return l, err
	}
	for rows.Next() {
		var mid, period, state string
		var user int64
		if err := rows.Scan(&mid, &user, &period, &state); err != nil {
			rows.Close()
			return l, err
		}
		if mid == "" {
			mid = fmt.Sprintf("digest.%d.%s@%s", user, strings.ReplaceAll(period, ":", "."), strings.TrimPrefix(rsPublicURL, "http://"))
		}
		l.digests[mid], l.digUser[mid] = state, user
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return l, err
	}
	rows, err = pool.Query(ctx, `SELECT webhook_id, state FROM channel_events WHERE type = 'papers.matched'`)
	if err != nil {
		return l, err
	}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			rows.Close()
			return l, err
		}
		l.events[id] = state
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return l, err
	}
	if l.jobs, err = jobCounts(ctx, pool, 0); err != nil {
		return l, err
	}
	l.papers, err = count(ctx, pool, `SELECT count(*) FROM papers`)
	return l, err
}

func (l rsLedger) count(m map[string]string, state string) int {
	n := 0
	for _, s := range m {
		if s == state {
			n++
		}
	}
	return n
}

func runRestore(ctx context.Context, e *env, res *Result) error {
	res.What = fmt.Sprintf(`A fresh database and `+"`followfeed serve`"+` on it (HARVEST_INTERVAL=1m against a fake OAI-PMH repository of %d records that grows by 12 every 15 s, DIGEST_SCHEDULE_INTERVAL=2s, JOB_RETRY_MAX=%s, JOB_RESCUE_AFTER=%s, a fixed SECRET_KEY and PUBLIC_URL), a recording SMTP sink and a webhook receiver that checks every signature. %d papers are pushed first in six categories nobody here follows, so that the dump has some size. Users created through the API: %d, %d and %d with daily digests, %d following %s (a category the load never touches, %d papers pushed once), %d with an instant webhook channel; the others follow one of six busy categories.

Before the dump: the first %d users' digests are made due and sent, and the webhook channels' first events delivered; the quiet users' private feeds are fetched and their bodies and ETags recorded. Then the load starts (%d papers pushed every %s, the repository growing, %d clients polling the busy users' feeds with If-None-Match); the SMTP sink holds its replies and the next %d users' digests are made due (one is being sent when the dump is taken: its row `+"`sending`"+`, its job running); then the sink answers 421 and the receiver 503 and the last %d users' digests are made due, so that the dump holds digests and webhook events pending after a failed attempt, their River jobs waiting to retry. `+"`pg_dump -Fc`"+` then dumps the running database under that load; the service is SIGKILLed (the machine lost), the sink and the receiver heal, the dump is restored with `+"`pg_restore --no-owner`"+` into a new database, and `+"`serve --migrate`"+` starts on it with the same SECRET_KEY (an `+"`api`"+` with another SECRET_KEY is tried on it first). The soak compares what arrives afterwards with the dump's own ledger rows (read from the restored database before the service starts) and waits (at most %s) until everything pending in the dump is final; then it pushes a paper per busy category to see the restored service at work.`,
		rsHarvested, rsRetryMax, rsRescueAfter, rsBulk, rsSent, rsHeld, rsPending, rsQuiet, rsQuietCategory, rsQuietPapers, rsHooks,
		rsSent, rsPerPush, rsPushEvery, rsPollers, rsHeld, rsPending, rsBound)
	res.Policy = `**Policies checked.** *What a dump holds:* everything is in PostgreSQL, River's queue included (schema ` + "`river`" + `): a dump is one snapshot of users, follows, papers, the delivery ledgers and the jobs that were waiting, retrying or running at that moment. *What must be kept beside it:* SECRET_KEY and the other secrets of the configuration. SECRET_KEY seals the webhook signing secrets and chat URLs (another key cannot read them) and derives the private feed URLs: with another key the URLs feed readers already poll still answer (a token is found by its hash), but the URL the API shows each user is a new one that answers 404. *After a restore:* what the dump says was sent is never sent again (a digest's ledger row is final; a webhook event delivered); what it says is pending is delivered by the restored service once (a digest's River job retries it; an event's job delivers it under the same webhook-id); a digest the dump caught mid-send (` + "`sending`" + `) is recorded ` + "`unknown`" + ` and not resent (at most once); jobs the dump caught running are rescued after JOB_RESCUE_AFTER; a leader row in the dump expires within 15 s. Anything after the dump's snapshot is lost with the old database (a digest or event sent after it is pending again in the dump and sent again: at least once across a restore). Feed URLs, ETags and bodies are the dump's: a conditional GET with an ETag recorded before the dump answers 304 while the feed has not changed.`

	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	up, err := startUpstreams(rsHarvestPrefix, rsHarvested, cats, 20*time.Millisecond)
	if err != nil {
		return err
	}
	defer up.close()
	sink, hooks := up.sink, up.hooks

	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "restore")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	svcEnv := func(dbURL, key string) []string {
		return append(append(e.baseEnv(dbURL), up.env...), "DIGEST_SCHEDULE_INTERVAL=2s", "HARVEST_INTERVAL=1m",
			"JOB_TIMEOUT=20s", "JOB_RESCUE_AFTER="+rsRescueAfter.String(), "JOB_RETRY_MAX="+rsRetryMax.String(),
			"RATE_LIMIT_PER_USER=0", "SECRET_KEY="+key, "PUBLIC_URL="+rsPublicURL)
	}
	orig, err := startProc(ctx, e.opts.Exe, "serve", svcEnv(db.url, rsSecretKey), e.logPath("restore", "serve"))
	if err != nil {
		return err
	}
	defer func() { orig.stop() }()
	c := newClient(orig.base, 16, 30*time.Second)
	defer c.close()

	users, err := rsMakeUsers(ctx, c, hooks, up.hookURL, cats)
	if err != nil {
		return err
	}
	userID, err := userIDs(ctx, db.pool, "soak-rs-")
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.id = userID[u.sub]; u.id == 0 {
			return fmt.Errorf("user %s not in the database", u.sub)
		}
	}
	if _, err := pushRange(ctx, c, rsQuietPrefix, 0, rsQuietPapers, []string{rsQuietCategory}); err != nil {
		return err
	}
	bulkStart := time.Now()
	bulkCats := []string{"hep-th", "astro-ph.GA", "math.AP", "cond-mat.str-el", "physics.optics", "q-bio.NC"}
	for from := 0; from < rsBulk; from += 10000 { // POST /v1/papers takes 10,000 at most
		if _, err := pushRange(ctx, c, rsBulkPrefix, from, min(10000, rsBulk-from), bulkCats); err != nil {
			return fmt.Errorf("pushing the bulk papers: %w", err)
		}
	}
	ok, err := waitStoredAndMatched(ctx, db.pool, rsHarvested+rsQuietPapers+rsBulk, 90*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the first harvest, the quiet and the bulk papers were not stored and matched within 90 s")
	}
	e.logf("restore: %d papers stored and matched in %s", rsHarvested+rsQuietPapers+rsBulk, secs(time.Since(bulkStart)))

	// Before the dump: the first digests sent, the first events delivered.
	sentUsers, pendingUsers, heldUsers := rsKind(users, "sent"), rsKind(users, "pending"), rsKind(users, "held")
	if _, err := makeDailyDue(ctx, db.pool, rsIDs(sentUsers)); err != nil {
		return err
	}
	ok, err = waitFor(ctx, 90*time.Second, 500*time.Millisecond, func() (bool, error) {
		sent, err := count(ctx, db.pool, `SELECT count(*) FROM digests WHERE state = 'sent'`)
		if err != nil || sent < rsSent {
			return false, err
		}
		open, err := count(ctx, db.pool, `SELECT count(*) FROM channel_events WHERE state <> 'delivered'`)
		if err != nil || open > 0 {
			return false, err
		}
		channels, err := count(ctx, db.pool, `SELECT count(DISTINCT channel_id) FROM channel_events WHERE state = 'delivered'`)
		return channels == rsHooks, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the first %d digests and every channel's first events were not delivered within 90 s", rsSent)
	}
	quiet := rsKind(users, "quiet")
	for _, u := range quiet {
		r, err := c.must(ctx, "GET", u.feed, "", nil, 200)
		if err != nil {
			return err
		}
		u.recBody, u.recETag = r.body, r.header.Get("ETag")
		if r2 := c.do(ctx, "GET", u.feed, "", nil, http.Header{"If-None-Match": {u.recETag}}); r2.status != http.StatusNotModified {
			return fmt.Errorf("the original service answered %d to a conditional GET with the ETag it had just given", r2.status)
		}
	}
	e.logf("restore: %d digests sent, every channel delivered; %d quiet feeds recorded", rsSent, len(quiet))

	// The load, until stopLoad.
	var pushes, polls, pollErrs atomic.Int64
	var loadMu sync.Mutex
	var loadErrs []string
	var pollLat []timedDur
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var loadWG sync.WaitGroup
	loadWG.Add(2 + rsPollers)
	go func() {
		defer loadWG.Done()
		for k := 0; loadCtx.Err() == nil; k++ {
			_, err := pushRange(context.WithoutCancel(loadCtx), c, rsPushPrefix, k*rsPerPush, rsPerPush, cats)
			if err != nil {
				loadMu.Lock()
				loadErrs = append(loadErrs, err.Error())
				loadMu.Unlock()
			} else {
				pushes.Add(1)
			}
			sleep(loadCtx, rsPushEvery)
		}
	}()
	go func() {
		defer loadWG.Done()
		for loadCtx.Err() == nil {
			sleep(loadCtx, 15*time.Second)
			up.repo.grow(12)
		}
	}()
	busy := append(append(slices.Clone(sentUsers), pendingUsers...), heldUsers...)
	for p := range rsPollers {
		go func() {
			defer loadWG.Done()
			for k := p; loadCtx.Err() == nil; k += rsPollers {
				u := busy[k%len(busy)]
				u.mu.Lock()
				etag := u.etag
				u.mu.Unlock()
				at := time.Now()
				r := c.do(context.WithoutCancel(loadCtx), "GET", u.feed, "", nil, http.Header{"If-None-Match": {etag}})
				polls.Add(1)
				loadMu.Lock()
				pollLat = append(pollLat, timedDur{at, r.dur})
				loadMu.Unlock()
				switch {
				case r.err == nil && r.status == 200:
					u.mu.Lock()
					u.etag = r.header.Get("ETag")
					u.mu.Unlock()
				case r.err == nil && r.status == http.StatusNotModified:
				default:
					pollErrs.Add(1)
					loadMu.Lock()
					loadErrs = append(loadErrs, fmt.Sprintf("feed poll: %d %v", r.status, r.err))
					loadMu.Unlock()
				}
			}
		}()
	}
	sleep(ctx, 10*time.Second)

	// The relay holds its replies: what falls due now is being sent (a
	// row "sending", its job running) when the dump is taken.
	sink.hold.Store(true)
	if _, err := makeDailyDue(ctx, db.pool, rsIDs(heldUsers)); err != nil {
		return err
	}
	ok, err = waitFor(ctx, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		n, err := count(ctx, db.pool, `SELECT count(*) FROM digests WHERE state = 'sending'`)
		return n > 0, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no digest was being sent within 30 s of the relay holding its replies")
	}
	// Then the relay refuses and the receiver fails: what falls due now
	// is pending, its job waiting to retry.
	sink.refuse.Store(true)
	hooks.fail.Store(true)
	if _, err := makeDailyDue(ctx, db.pool, rsIDs(pendingUsers)); err != nil {
		return err
	}
	ok, err = waitFor(ctx, 60*time.Second, 500*time.Millisecond, func() (bool, error) {
		n, err := count(ctx, db.pool, `SELECT count(*) FROM digests WHERE state = 'pending' AND attempts > 0`)
		if err != nil || n < rsPending {
			return false, err
		}
		n, err = count(ctx, db.pool, `SELECT count(*) FROM channel_events WHERE state = 'pending' AND attempts > 0`)
		return n >= rsHooks/2, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("within 60 s of the relay refusing, %d digests and %d webhook events were not pending after a failed attempt", rsPending, rsHooks/2)
	}

	// The dump, under load.
	dumpFile := filepath.Join(e.workDir, fmt.Sprintf("restore-%d.dump", time.Now().UnixNano()))
	defer os.Remove(dumpFile)
	polls0, pushes0 := polls.Load(), pushes.Load()
	dumpStart := time.Now()
	pathEnv := []string{"PATH=" + os.Getenv("PATH")}
	if err := runCmd(ctx, "pg_dump", pathEnv, e.logPath("restore", "pg_dump"), "--dbname="+db.url, "--format=custom", "--file="+dumpFile); err != nil {
		return err
	}
	dumpTook := time.Since(dumpStart)
	pollsDuring, pushesDuring := polls.Load()-polls0, pushes.Load()-pushes0
	st, err := os.Stat(dumpFile)
	if err != nil {
		return err
	}
	sleep(ctx, 2*time.Second) // more load after the snapshot: none of it may reach the restore
	stopLoad()
	loadWG.Wait()
	orig.kill()
	origLedger, err := readLedger(ctx, db.pool)
	if err != nil {
		return err
	}
	e.logf("restore: pg_dump took %s (%d KiB) under load (%d feed polls, %d pushes meanwhile); the service SIGKILLed", secs(dumpTook), st.Size()>>10, pollsDuring, pushesDuring)
	refused := sink.refusals()
	sink.refuse.Store(false)
	sink.release()
	hooks.fail.Store(false)
	mailsBefore, hooksBefore := len(sink.received()), len(hooks.received())

	// The restore, into a new database.
	rdb, err := createDB(ctx, e.opts.DatabaseURL, db.name+"_restored")
	if err != nil {
		return err
	}
	defer rdb.drop(ctx)
	restoreStart := time.Now()
	if err := runCmd(ctx, "pg_restore", pathEnv, e.logPath("restore", "pg_restore"), "--no-owner", "--exit-on-error", "--dbname="+rdb.url, dumpFile); err != nil {
		return err
	}
	restoreTook := time.Since(restoreStart)
	if rdb.pool, err = openPool(ctx, rdb.url); err != nil {
		return err
	}
	dump, err := readLedger(ctx, rdb.pool)
	if err != nil {
		return err
	}
	e.logf("restore: pg_restore took %s; the dump holds %d papers (the old database %d), digests %s, webhook events %s",
		secs(restoreTook), dump.papers, origLedger.papers, formatCounts(tally(dump.digests)), formatCounts(tally(dump.events)))

	// Another SECRET_KEY: the feed URLs stop working.
	probe, err := startProc(ctx, e.opts.Exe, "api", svcEnv(rdb.url, rsOtherKey), e.logPath("restore", "api-other-key"))
	if err != nil {
		return err
	}
	pc := newClient(probe.base, 2, 10*time.Second)
	otherOld := pc.do(ctx, "GET", quiet[0].feed, "", nil, nil)
	otherShown, err := pc.feedPath(ctx, quiet[0].token, "json")
	if err != nil {
		return err
	}
	otherNew := pc.do(ctx, "GET", otherShown, "", nil, nil)
	pc.close()
	probe.stop()
	e.logf("restore: with another SECRET_KEY the recorded feed URL answers %d; the API shows another URL (%v), which answers %d",
		otherOld.status, otherShown != quiet[0].feed, otherNew.status)
	goose0, err := count(ctx, rdb.pool, `SELECT count(*) FROM goose_db_version`)
	if err != nil {
		return err
	}

	// The service on the restored database, with the same SECRET_KEY.
	startAt := time.Now()
	svc, err := startProc(ctx, e.opts.Exe, "serve", svcEnv(rdb.url, rsSecretKey), e.logPath("restore", "serve-restored"), "--migrate")
	if err != nil {
		res.check("the service starts on the restored database", false, "%v", err)
		return err
	}
	defer svc.stop()
	startTook := time.Since(startAt)
	rc := newClient(svc.base, 8, 30*time.Second)
	defer rc.close()
	ready := rc.do(ctx, "GET", "/readyz", "", nil, nil)
	goose1, err := count(ctx, rdb.pool, `SELECT count(*) FROM goose_db_version`)
	if err != nil {
		return err
	}
	res.check("the service starts on the restored database", ready.status == 200 && goose1 == goose0,
		"`serve --migrate` listened %s after its start, /readyz answered %d; migrations applied: %d (the dump's schema is current)", secs(startTook), ready.status, goose1-goose0)

	// Feeds: same URL, same body; the recorded ETag still validates.
	var same, notModified, shownSame int
	var feedEx []string
	for _, u := range quiet {
		if p, err := rc.feedPath(ctx, u.token, "json"); err == nil && p == u.feed {
			shownSame++
		}
		r := rc.do(ctx, "GET", u.feed, "", nil, nil)
		if r.err == nil && r.status == 200 && bytes.Equal(r.body, u.recBody) && r.header.Get("ETag") == u.recETag {
			same++
		} else if len(feedEx) < 3 {
			feedEx = append(feedEx, fmt.Sprintf("%s: %d, ETag %s (recorded %s), %d bytes (recorded %d)", u.sub, r.status, r.header.Get("ETag"), u.recETag, len(r.body), len(u.recBody)))
		}
		if r := rc.do(ctx, "GET", u.feed, "", nil, http.Header{"If-None-Match": {u.recETag}}); r.status == http.StatusNotModified {
			notModified++
		} else if len(feedEx) < 3 {
			feedEx = append(feedEx, fmt.Sprintf("%s: conditional GET answered %d", u.sub, r.status))
		}
	}
	res.check("feed URLs and ETags still work", same == len(quiet) && notModified == len(quiet) && shownSame == len(quiet),
		"%d of %d recorded feed URLs answer 200 with the recorded body and ETag, %d of %d answer 304 to If-None-Match with the ETag recorded before the dump, and the API shows %d of %d users the URL they had %s",
		same, len(quiet), notModified, len(quiet), shownSame, len(quiet), strings.Join(feedEx, "; "))
	res.figure("another SECRET_KEY (an api on the restored database)", "the recorded feed URL answers %d (a token is found by its hash); the URL the API shows the user is %s and answers %d (it is derived from SECRET_KEY); webhook secrets and chat URLs are sealed under SECRET_KEY",
		otherOld.status, map[bool]string{true: "a different one", false: "the same"}[otherShown != quiet[0].feed], otherNew.status)

	// Everything pending in the dump delivered; then new work.
	var cur rsLedger
	settled, err := waitFor(ctx, rsBound, time.Second, func() (bool, error) {
		var err error
		if cur, err = readLedger(ctx, rdb.pool); err != nil {
			return false, err
		}
		return cur.count(cur.digests, "pending")+cur.count(cur.digests, "sending")+cur.count(cur.events, "pending") == 0, nil
	})
	if err != nil {
		return err
	}
	settleTook := time.Since(startAt)
	e.logf("restore: the dump's pending work final %s after the start (%v)", secs(settleTook), settled)
	eventsBefore := len(cur.events)
	after, err := pushRange(ctx, rc, rsAfterPrefix, 0, len(cats), cats)
	if err != nil {
		return err
	}
	worked, err := waitFor(ctx, 90*time.Second, time.Second, func() (bool, error) {
		var err error
		if cur, err = readLedger(ctx, rdb.pool); err != nil {
			return false, err
		}
		return len(cur.events) > eventsBefore && cur.count(cur.events, "pending") == 0, nil
	})
	if err != nil {
		return err
	}
	// The harvest lists again from the date the dump's harvest state
	// holds: the records stored after the snapshot come back.
	var harvested int64
	reharvested, err := waitFor(ctx, 90*time.Second, time.Second, func() (bool, error) {
		var err error
		harvested, err = count(ctx, rdb.pool, `SELECT count(*) FROM papers WHERE starts_with(arxiv_id, $1)`, rsHarvestPrefix+".")
		return harvested == int64(len(up.repo.records())), err
	})
	if err != nil {
		return err
	}
	var feedsBad int
	var feedsEx []string
	for _, u := range busy {
		got, err := rc.feedIDs(ctx, u.feed)
		if err != nil {
			return err
		}
		rows, err := rdb.pool.Query(ctx, `SELECT p.arxiv_id FROM papers p JOIN paper_keys k ON k.paper_id = p.id WHERE k.key = $1`, "category:"+u.category)
		if err != nil {
			return err
		}
		want, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		missing := 0
		for _, id := range want {
			if !got[id] {
				missing++
			}
		}
		if missing > 0 || len(got) != len(want) || !got[after[u.category][0]] {
			feedsBad++
			if len(feedsEx) < 3 {
				feedsEx = append(feedsEx, fmt.Sprintf("%s: %d items for %d papers, %d missing", u.sub, len(got), len(want), missing))
			}
		}
	}
	svc.stop()

	// What arrived after the restore, against the dump's ledger.
	mails := sink.received()[mailsBefore:]
	gotMail := map[string]int{}
	for _, m := range mails {
		gotMail[m.id]++
	}
	md := diffLedger(dump.digests, cur.digests, gotMail, "sent")
	hookMsgs := hooks.received()[hooksBefore:]
	ht := tallyHooks(hookMsgs, time.Time{})
	whole := tallyHooks(hooks.received(), time.Time{}) // before and after the restore
	gotHook := map[string]int{}
	for _, m := range hookMsgs {
		if m.status/100 == 2 {
			gotHook[m.id]++
		}
	}
	ed := diffLedger(dump.events, cur.events, gotHook, "delivered")
	rescued, _ := count(ctx, rdb.pool, `SELECT count(*) FROM river.river_job WHERE errors::text ILIKE '%rescue%'`)
	running := 0
	for _, states := range dump.jobs {
		running += states["running"]
	}

	during, outside := splitDurs(pollLat, dumpStart, dumpStart.Add(dumpTook))
	_, p99In := bench.Percentiles(during)
	_, p99Out := bench.Percentiles(outside)
	res.figure("pg_dump", "%s for %d KiB (custom format), while the service ran %d feed polls (p99 %s; %s outside the dump) and %d pushes (%d papers); %d feed polls and %d pushes failed during the whole load",
		secs(dumpTook), st.Size()>>10, pollsDuring, ms(p99In), ms(p99Out), pushesDuring, pushesDuring*rsPerPush, pollErrs.Load(), len(loadErrs)-int(pollErrs.Load()))
	res.figure("the relay", "refused %d MAIL commands (421) while the dump was prepared and taken; held the replies of %d users' digests", refused, rsHeld)
	res.figure("pg_restore", "%s into a new database; the restored service listened %s after its start", secs(restoreTook), secs(startTook))
	res.figure("papers", "%d in the dump; the old database had %d when it was killed (stored after the snapshot: lost with it)", dump.papers, origLedger.papers)
	res.figure("digest ledger in the dump", "%s; after the restore: %s", formatCounts(tally(dump.digests), "sent", "pending", "sending", "unknown", "skipped", "failed"),
		formatCounts(tally(cur.digests), "sent", "pending", "sending", "unknown", "skipped", "failed"))
	res.figure("webhook events in the dump", "%s", formatCounts(tally(dump.events), "delivered", "pending", "failed"))
	res.figure("River jobs in the dump (not completed)", "%s", formatJobs(openJobs(dump.jobs)))
	res.figure("jobs rescued on the restored database", "%d (%d were running in the dump; JOB_RESCUE_AFTER=%s)", rescued, running, rsRescueAfter)
	res.figure("after the restore", "%d messages (%d distinct Message-IDs, %d not in the dump's ledger); the receiver accepted %d events (%d not in the dump's ledger); pending work final %s after the start",
		len(mails), len(gotMail), md.fresh, len(gotHook), ed.fresh, secs(settleTook))
	res.check("nothing the dump says was sent is sent again", md.again == 0 && ed.again == 0 && md.midSendSent == 0 && md.twice == 0 && whole.repeats == 0 && whole.paperTwice == 0,
		"%d digests final in the dump received again, %d caught mid-send (sending) sent again, %d Message-IDs received twice after the restore; %d webhook events delivered in the dump received again; over the whole run %d webhook-ids accepted twice and %d papers reached a channel in two events",
		md.again, md.midSendSent, md.twice, ed.again, whole.repeats, whole.paperTwice)
	res.check("what was pending in the dump is delivered once", settled && dump.count(dump.digests, "pending") >= rsPending && dump.count(dump.events, "pending") > 0 &&
		md.pendingNotOnce == 0 && ed.pendingNotOnce == 0 && ht.unsigned == 0 && md.midSendNotUnknown == 0,
		"%d pending digests and %d pending webhook events in the dump: %d digests and %d events not received exactly once (or not final); %d digests the dump caught mid-send not recorded unknown; %d webhook requests whose signature does not verify with the secret given when the channel was made",
		dump.count(dump.digests, "pending"), dump.count(dump.events, "pending"), md.pendingNotOnce, ed.pendingNotOnce, md.midSendNotUnknown, ht.unsigned)
	res.check("the restored service works on", worked && reharvested && feedsBad == 0,
		"a paper pushed per busy category after the restore was matched and delivered (%v); its harvest stored %d of the repository's %d records (those stored after the snapshot again); %d of %d busy feeds do not list every paper of their category in the restored database %s",
		worked, harvested, len(up.repo.records()), feedsBad, len(busy), strings.Join(feedsEx, "; "))
	res.Summary = fmt.Sprintf("pg_dump %s under load (%d polls, %d pushes meanwhile); restored and serving in %s; feeds 200 %d/%d, 304 %d/%d; sent again %d+%d; pending in the dump delivered once %d/%d digests, %d/%d events",
		secs(dumpTook), pollsDuring, pushesDuring, secs(restoreTook+startTook), same, len(quiet), notModified, len(quiet), md.again+md.midSendSent, ed.again,
		dump.count(dump.digests, "pending")-md.pendingNotOnce, dump.count(dump.digests, "pending"), dump.count(dump.events, "pending")-ed.pendingNotOnce, dump.count(dump.events, "pending"))
	return nil
}

// rsMakeUsers creates the scenario's users through the API.
func rsMakeUsers(ctx context.Context, c *client, hooks *hookSink, hookURL string, cats []string) ([]*rsUser, error) {
	var users []*rsUser
	add := func(kind string, n int) {
		for i := range n {
			cat := cats[i%len(cats)]
			if kind == "quiet" {
				cat = rsQuietCategory
			}
			users = append(users, &rsUser{sub: fmt.Sprintf("soak-rs-%s-%d", kind, i), email: fmt.Sprintf("rs-%s-%d@soak.example", kind, i), category: cat, kind: kind})
		}
	}
	add("sent", rsSent)
	add("pending", rsPending)
	add("held", rsHeld)
	add("quiet", rsQuiet)
	add("hook", rsHooks)
	err := forEach(ctx, 8, len(users), func(i int) error {
		u := users[i]
		var err error
		if u.token, u.feed, err = c.newUser(ctx, u.sub, u.email, u.category, "json"); err != nil || u.kind != "hook" {
			return err
		}
		u.hookPath = fmt.Sprintf("/hook/%d", i)
		return hooks.addChannel(ctx, c, u.token, hookURL, u.hookPath)
	})
	if err != nil {
		return nil, fmt.Errorf("creating users: %w", err)
	}
	return users, nil
}

func rsIDs(users []*rsUser) []int64 {
	ids := make([]int64, len(users))
	for i, u := range users {
		ids[i] = u.id
	}
	return ids
}

func rsKind(users []*rsUser, kind string) []*rsUser {
	return where(users, func(u *rsUser) bool { return u.kind == kind })
}

// tally counts a ledger map's states.
func tally(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, s := range m {
		out[s]++
	}
	return out
}

// openJobs keeps the job counts of states other than completed.
func openJobs(jobs map[string]map[string]int) map[string]map[string]int {
	out := map[string]map[string]int{}
	for k, states := range jobs {
		for s, n := range states {
			if s == "completed" {
				continue
			}
			if out[k] == nil {
				out[k] = map[string]int{}
			}
			out[k][s] = n
		}
	}
	return out
}

// jsonField returns the string field name of a JSON object.
func jsonField(body []byte, name string) (string, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return "", err
	}
	s, _ := m[name].(string)
	if s == "" {
		return "", fmt.Errorf("no %q in %s", name, oneLine(lastBytes(string(body), 200)))
	}
	return s, nil
}

// ledgerDiff is diffLedger's comparison of one ledger.
type ledgerDiff struct {
	again             int // final in the dump, received after the restore
	pendingNotOnce    int // pending in the dump, not received exactly once or not delivered at the end
	midSendSent       int // "sending" in the dump (a digest), received after the restore
	midSendNotUnknown int // "sending" in the dump, not recorded "unknown" at the end
	twice             int // ids received more than once after the restore
	fresh             int // ids received that the dump's ledger does not hold (new work)
}

// diffLedger compares what arrived after a restore (got: id → times
// received) with the ledger the dump holds (dump: id → state) and the
// restored ledger at the end (end); delivered is the ledger's word for
// it (digests "sent", webhook events "delivered"). A row final in the dump
// must not arrive again; a pending one must arrive once and end
// delivered; a digest caught mid-send must not arrive and end "unknown".
func diffLedger(dump, end map[string]string, got map[string]int, delivered string) ledgerDiff {
	var d ledgerDiff
	for id, n := range got {
		if n > 1 {
			d.twice++
		}
		if _, ok := dump[id]; !ok {
			d.fresh++
		}
	}
	for id, state := range dump {
		switch state {
		case "pending":
			if got[id] != 1 || end[id] != delivered {
				d.pendingNotOnce++
			}
		case "sending":
			if got[id] > 0 {
				d.midSendSent++
			}
			if end[id] != "unknown" {
				d.midSendNotUnknown++
			}
		default: // sent, delivered, unknown, skipped, failed
			if got[id] > 0 {
				d.again++
			}
		}
	}
	return d
}

// timedDur is one request's start and duration.
type timedDur struct {
	at  time.Time
	dur time.Duration
}

// splitDurs splits durations into those of requests started in [from, to]
// and the others.
func splitDurs(ds []timedDur, from, to time.Time) (in, out []time.Duration) {
	for _, d := range ds {
		if !d.at.Before(from) && !d.at.After(to) {
			in = append(in, d.dur)
		} else {
			out = append(out, d.dur)
		}
	}
	return in, out
}
