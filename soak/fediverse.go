package soak

import (
	"context"
	"fmt"
	"net/http"
	"time"

	fakefed "followfeed/internal/fake/fediverse"
)

// runFediverseOutage is the fediverse-outage scenario: the peer's inbox
// fails for a while (and the process is killed meanwhile), then recovers;
// every note must arrive once, none lost.
func runFediverseOutage(ctx context.Context, e *env, res *Result) error {
	const (
		healthy, during = 40, 60 // papers pushed before and during the outage, in batches of 10
		batch           = 10
		everyNth        = 4 // every 4th paper is also the researcher's
		outage          = 45 * time.Second
		bound           = 3 * time.Minute
	)
	res.What = fmt.Sprintf(`A fresh database; `+"`followfeed serve`"+` with ACTIVITYPUB=on, ACTIVITYPUB_CATEGORY_NOTES=on (a category actor posts per paper), CHANNEL_ALLOW_HOSTS=127.0.0.1 (the guard's development switch, so the peer on loopback is reachable), JOB_RETRY_MAX=2s, JOB_TIMEOUT=20s and JOB_RESCUE_AFTER=30s. A fake fediverse server (internal/fake/fediverse: its own RSA key, signs like Mastodon, verifies every request's signature and digest with crypto/rsa) with three users on one shared inbox: alice and bob follow cs.LG, carol follows cs.LG and a researcher (host:4242).

%d papers in cs.LG are pushed in batches of %d (every %dth by the researcher) while the peer is healthy; then the peer's inboxes answer 503 to everything, %d more papers are pushed, the serve process is SIGKILLed %s into the outage and started again, and after %s the peer recovers. The soak waits (at most %s) until no delivery is pending and no ActivityPub job is left.`,
		healthy, batch, everyNth, during, secs(outage/2), secs(outage), bound)
	res.Policy = `**Policy checked.** Delivery is at least once through the ledger (ap_deliveries): a row is delivered only after the inbox answered 2xx; 5xx, 429, 408 and network errors retry with River's back-off (5 s doubling, capped at JOB_RETRY_MAX), the same activity (same id, same bytes) on every attempt; one delivery per shared inbox, however many of its users follow; an inbox failing for 3 days is disabled. A note is written once per paper and actor (a unique index), so a restarted fan-out never posts a paper twice.`

	peer, err := fakefed.Start()
	if err != nil {
		return err
	}
	defer peer.Close()
	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "fediverse-outage")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	env := append(e.baseEnv(db.url), "ACTIVITYPUB=on", "ACTIVITYPUB_CATEGORY_NOTES=on", "CHANNEL_ALLOW_HOSTS=127.0.0.1",
		"JOB_RETRY_MAX=2s", "JOB_TIMEOUT=20s", "JOB_RESCUE_AFTER=30s")
	start := func(n int) (*proc, error) {
		return startProc(ctx, e.opts.Exe, "serve", env, e.logPath("fediverse-outage", fmt.Sprintf("serve%d", n)))
	}
	srv, err := start(1)
	if err != nil {
		return err
	}
	defer func() { srv.stop() }()
	c := newClient(srv.base, 8, 30*time.Second)
	defer c.close()

	category := srv.base + "/ap/actors/cs.LG"
	researcher := srv.base + "/ap/actors/host_4242"
	follows := [][2]string{{"alice", category}, {"bob", category}, {"carol", category}, {"carol", researcher}}
	for i, f := range follows {
		act := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": fmt.Sprintf("%s#follow/%d", peer.ActorID(f[0]), i),
			"type": "Follow", "actor": peer.ActorID(f[0]), "object": f[1]}
		st, body, err := peer.Send(f[0], f[1]+"/inbox", act)
		if err != nil || st != http.StatusAccepted {
			return fmt.Errorf("follow %v: %d %s %v", f, st, body, err)
		}
	}
	if err := peer.Wait(time.Minute, func(rs []fakefed.Received) bool { return count4(rs, "Accept") == len(follows) }); err != nil {
		return err
	}
	e.logf("fediverse-outage: %d follows accepted", len(follows))

	tok, err := mint("soak-service", "", "papers:write")
	if err != nil {
		return err
	}
	want := map[string]bool{} // "actor paper" of every note expected
	push := func(from, n int) error {
		for b := from; b < from+n; b += batch {
			var papers []map[string]any
			for i := b; i < b+batch; i++ {
				id := fmt.Sprintf("2912.%05d", i+1)
				author := map[string]any{"name": "Ada Soak"}
				want[category+" "+id] = true
				if i%everyNth == 0 {
					author["ids"] = []string{"host:4242"}
					want[researcher+" "+id] = true
				}
				papers = append(papers, map[string]any{"arxiv_id": id + "v1", "title": fmt.Sprintf("Fediverse soak paper %d", i+1),
					"authors": []any{author}, "categories": []string{"cs.LG"}, "primary_category": "cs.LG"})
			}
			if _, err := c.must(ctx, "POST", "/v1/papers", tok, papers, 200); err != nil {
				return err
			}
		}
		return nil
	}
	if err := push(0, healthy); err != nil {
		return err
	}
	healthyWant := len(want)
	healthyStart := time.Now()
	okHealthy, err := waitFor(ctx, time.Minute, 200*time.Millisecond, func() (bool, error) {
		return count4(peer.Received(), "Create") >= healthyWant, nil
	})
	if err != nil {
		return err
	}
	healthyTook := time.Since(healthyStart)
	beforeOutage := peer.Attempts()
	peer.Fail(http.StatusServiceUnavailable)
	outageStart := time.Now()
	if err := push(healthy, during); err != nil {
		return err
	}
	select {
	case <-time.After(outage / 2):
	case <-ctx.Done():
		return ctx.Err()
	}
	pendingAtKill, _ := count(ctx, db.pool, `SELECT count(*) FROM ap_deliveries WHERE state = 'pending'`)
	srv.kill()
	e.logf("fediverse-outage: serve SIGKILLed %s into the outage with %d deliveries pending", secs(time.Since(outageStart)), pendingAtKill)
	if srv, err = start(2); err != nil {
		return err
	}
	select {
	case <-time.After(outage - time.Since(outageStart)):
	case <-ctx.Done():
		return ctx.Err()
	}
	failedAttempts := peer.Attempts() - beforeOutage
	peer.Fail(0)
	recovered := time.Now()
	e.logf("fediverse-outage: the peer recovers after %s (%d refused attempts)", secs(time.Since(outageStart)), failedAttempts)

	var pending, open int64
	done, err := waitFor(ctx, bound, time.Second, func() (bool, error) {
		var err error
		if pending, err = count(ctx, db.pool, `SELECT count(*) FROM ap_deliveries WHERE state = 'pending'`); err != nil {
			return false, err
		}
		if open, err = count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind LIKE 'activitypub_%'
			AND kind NOT IN ('activitypub_summary', 'activitypub_housekeeping', 'activitypub_fanout')
			AND state NOT IN ('completed', 'discarded', 'cancelled')`); err != nil {
			return false, err
		}
		due, err := count(ctx, db.pool, `SELECT count(*) FROM ap_actors WHERE due_at IS NOT NULL`)
		return pending == 0 && open == 0 && due == 0 && count4(peer.Received(), "Create") >= len(want), err
	})
	if err != nil {
		return err
	}
	recovery := time.Since(recovered)

	// What arrived: each note once (by its object's id), under one activity
	// id, for exactly the expected (actor, paper) pairs.
	notes := map[string]string{} // note id → activity id
	perPair := map[string]int{}
	dupActivities, dupNotes, unexpected := 0, 0, 0
	seenActivity := map[string]bool{}
	for _, r := range peer.Received() {
		if r.Type() != "Create" {
			continue
		}
		if seenActivity[r.ID()] {
			dupActivities++
			continue
		}
		seenActivity[r.ID()] = true
		obj := r.Object()
		nid, _ := obj["id"].(string)
		if _, dup := notes[nid]; dup {
			dupNotes++
		}
		notes[nid] = r.ID()
		pair := fmt.Sprintf("%v %v", r.Activity["actor"], paperOf(obj))
		perPair[pair]++
		if !want[pair] {
			unexpected++
		}
	}
	lost := 0
	for p := range want {
		if perPair[p] == 0 {
			lost++
		}
	}
	var delivered, failed int64
	delivered, _ = count(ctx, db.pool, `SELECT count(*) FROM ap_deliveries WHERE state = 'delivered'`)
	failed, _ = count(ctx, db.pool, `SELECT count(*) FROM ap_deliveries WHERE state = 'failed'`)
	disabled, _ := count(ctx, db.pool, `SELECT count(*) FROM ap_inboxes WHERE disabled_at IS NOT NULL`)

	res.figure("follows", "%d (3 users, 2 actors, one shared inbox)", len(follows))
	res.figure("notes expected", "%d (%d papers to the category actor, %d to the researcher's)", len(want), healthy+during, len(want)-healthy-during)
	res.figure("before the outage", "%d notes expected; all received %s after the last push: %v", healthyWant, secs(healthyTook), okHealthy)
	res.figure("outage", "%s of 503s, with a SIGKILL of serve halfway (%d deliveries pending then); %d attempts refused", secs(outage), pendingAtKill, failedAttempts)
	res.figure("recovery", "%s from the peer's recovery until nothing was pending (bound %s)", secs(recovery), bound)
	res.figure("ledger (final)", "%d delivered, %d failed, %d pending; %d inboxes disabled", delivered, failed, pending, disabled)
	res.figure("received", "%d distinct Create activities, %d distinct notes; %d activities received twice", len(seenActivity), len(notes), dupActivities)
	res.check("every note delivered", lost == 0 && done, "%d of %d expected notes never arrived", lost, len(want))
	res.check("every note once", dupNotes == 0 && unexpected == 0,
		"%d notes under two activity ids, %d unexpected; %d resends of one activity (allowed: at least once, same id)", dupNotes, unexpected, dupActivities)
	res.check("the ledger is settled", pending == 0 && failed == 0 && disabled == 0 && open == 0,
		"%d pending, %d failed deliveries, %d disabled inboxes, %d delivery jobs open", pending, failed, disabled, open)
	res.check("delivered promptly while healthy", okHealthy, "the %d notes of the healthy phase arrived within a minute of its last push: %v (%s)", healthyWant, okHealthy, secs(healthyTook))
	res.check("the outage was retried", failedAttempts > 0, "%d refused attempts during the outage", failedAttempts)
	res.check("the peer rejected nothing", len(peer.Rejected()) == 0, "%d requests refused by the peer's verification %v", len(peer.Rejected()), first(peer.Rejected(), 3))
	res.Summary = fmt.Sprintf("%d notes, %s outage with a SIGKILL: %d lost, %d doubled, %d resends of the same activity; recovered in %s",
		len(want), secs(outage), lost, dupNotes, dupActivities, secs(recovery))
	return nil
}

func count4(rs []fakefed.Received, typ string) int {
	n := 0
	for _, r := range rs {
		if r.Type() == typ {
			n++
		}
	}
	return n
}

// paperOf reads the arXiv id a note's content names ("arXiv:2912.00001").
func paperOf(note map[string]any) string {
	s, _ := note["content"].(string)
	const p = "arXiv:"
	for i := 0; i+len(p) < len(s); i++ {
		if s[i:i+len(p)] == p {
			j := i + len(p)
			k := j
			for k < len(s) && (s[k] == '.' || s[k] >= '0' && s[k] <= '9') {
				k++
			}
			return s[j:k]
		}
	}
	return ""
}
