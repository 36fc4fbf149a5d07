package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

func runSMTPChaos(ctx context.Context, e *env, res *Result) error {
	const (
		nUsers  = 300
		nPapers = 60
		bound   = 6 * time.Minute
	)
	res.What = fmt.Sprintf(`A fresh database with %d users (verified addresses), each following one of six categories, and %d pushed papers so that every user has something to read. `+"`followfeed worker`"+` (JOB_RETRY_MAX=3s, DIGEST_SCHEDULE_INTERVAL=2s) sends their daily digests, made due all at once, through SMTP_URL=smtp://…?tls=opportunistic to a chaos server built on emersion/go-smtp. The server misbehaves at random from a fixed seed: 421/451/452 at MAIL, 451/452 at RCPT, 451 after DATA, connections dropped at MAIL or RCPT (before DATA) and, rarely, after the whole message without any reply; a quarter of its replies are held for up to 2 s; about 6%% of addresses get 550 at RCPT and 4%% get 554 after DATA, decided from the address so each recipient's fate is consistent. For its first %s it offers STARTTLS with a certificate the service cannot verify (so the handshake fails); afterwards it advertises neither STARTTLS nor AUTH (go-smtp advertises STARTTLS only with a TLS configuration and AUTH only for sessions that implement it), so tls=opportunistic falls back to plain delivery. The worker runs until every ledger row is final (at most %s).`,
		nUsers, nPapers, chaosTLSPhase, bound)
	res.Policy = `**Policies checked** (README "Delivery ledger"): *at most once* — a row is committed as "sending" before the SMTP transaction; a 250 makes it "sent"; a connection lost after the whole message was written (no reply to the final dot) makes it "unknown" and it is never resent; 4xx replies and network errors before the message was complete put it back to "pending" and River retries it with backoff (12 attempts); a 5xx concerning the recipient (RCPT, or the final dot) fails the row and suppresses the address. So every sent row's Message-ID must have arrived exactly once, no Message-ID may arrive twice, every 5xx recipient must be suppressed with its row failed, and the unknown rows must be exactly the messages dropped after DATA.`

	chaos := newChaosSMTP(e.opts.Seed)
	smtpURL, stopChaos, err := chaos.start()
	if err != nil {
		return err
	}
	defer stopChaos()
	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "smtp-chaos")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	env := append(e.baseEnv(db.url), "SMTP_URL="+smtpURL, "DIGEST_SCHEDULE_INTERVAL=2s",
		"JOB_TIMEOUT=1m", "JOB_RESCUE_AFTER=2m", "JOB_RETRY_MAX=3s")
	api, err := startProc(ctx, e.opts.Exe, "api", env, e.logPath("smtp-chaos", "api"))
	if err != nil {
		return err
	}
	defer api.stop()
	c := newClient(api.base, 16, 30*time.Second)
	defer c.close()

	cats := []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph"}
	if err := forEach(ctx, 8, nUsers, func(i int) error {
		tok, err := mint(fmt.Sprintf("soak-chaos-%d", i), fmt.Sprintf("chaos%d@soak.example", i))
		if err != nil {
			return err
		}
		_, err = c.must(ctx, "PUT", "/v1/me/follows/category/"+cats[i%len(cats)], tok, nil, 201, 200)
		return err
	}); err != nil {
		return fmt.Errorf("creating users: %w", err)
	}
	if err := pushPapers(ctx, c, "2912", nPapers, cats); err != nil {
		return err
	}
	w, err := startProc(ctx, e.opts.Exe, "worker", env, e.logPath("smtp-chaos", "worker"))
	if err != nil {
		return err
	}
	defer func() { w.stop() }()
	if ok, err := waitFor(ctx, 2*time.Minute, time.Second, func() (bool, error) {
		n, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state <> 'completed'`)
		if err != nil {
			return false, err
		}
		m, err := count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch'`)
		return m > 0 && n == 0, err
	}); err != nil || !ok {
		return fmt.Errorf("the pushed papers were not matched within 2 minutes (%v)", err)
	}
	// Aging on purpose: every user's daily digest due now, their
	// watermarks kept (makeDailyDueFrom).
	all, err := userIDs(ctx, db.pool, "")
	if err != nil {
		return err
	}
	if _, err := makeDailyDueFrom(ctx, db.pool, slices.Collect(maps.Values(all)), -1); err != nil {
		return err
	}
	due := time.Now()
	e.logf("smtp-chaos: %d digests due; waiting until every row is final", nUsers)
	var rows int64
	ok, err := waitFor(ctx, bound, 2*time.Second, func() (bool, error) {
		var open, jobs int64
		err := db.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state IN ('pending', 'sending')) FROM digests`).Scan(&rows, &open)
		if err != nil {
			return false, err
		}
		jobs, err = count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'digest_send' AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`)
		if err != nil {
			return false, err
		}
		// Done when every row is final, or when no job is left that could
		// still move one (a row whose job gave up stays pending).
		return rows >= nUsers && (open == 0 || jobs == 0), nil
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(due)
	w.stop()

	type row struct {
		state, email, msgID, reply string
		attempts                   int
	}
	var ledger []row
	rs, err := db.pool.Query(ctx, `SELECT state, coalesce(lower(email), ''), coalesce(message_id, ''), coalesce(smtp_reply, ''), attempts FROM digests`)
	if err != nil {
		return err
	}
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.state, &r.email, &r.msgID, &r.reply, &r.attempts); err != nil {
			rs.Close()
			return err
		}
		ledger = append(ledger, r)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	suppressed := map[string]bool{}
	srows, err := db.pool.Query(ctx, `SELECT email FROM suppressions`)
	if err != nil {
		return err
	}
	for srows.Next() {
		var s string
		if err := srows.Scan(&s); err != nil {
			srows.Close()
			return err
		}
		suppressed[s] = true
	}
	srows.Close()

	chaos.mu.Lock()
	accepted, dropped, fiveXX := copyMap(chaos.accepted), copyMap(chaos.dropped), copyStrMap(chaos.fiveXX)
	faults := copyMap(chaos.faults)
	chaos.mu.Unlock()
	conns, untrusted := chaos.connections()
	faults[chaosTLS] = untrusted

	states := map[string]int{}
	var open, sentBad, failedUnexplained, attempts, maxAttempts int
	var unknownIDs []string
	rowOf := map[string]row{}
	for _, r := range ledger {
		states[r.state]++
		rowOf[r.email] = r
		attempts += r.attempts
		maxAttempts = max(maxAttempts, r.attempts)
		switch r.state {
		case "pending", "sending":
			open++
		case "sent":
			if accepted[r.msgID] != 1 || dropped[r.msgID] != 0 {
				sentBad++
			}
		case "failed":
			if _, ok := fiveXX[r.email]; !ok {
				failedUnexplained++
			}
		case "unknown":
			unknownIDs = append(unknownIDs, r.msgID)
		}
	}
	dups := 0
	for id := range accepted {
		if accepted[id]+dropped[id] > 1 {
			dups++
		}
	}
	for id := range dropped {
		if accepted[id] == 0 && dropped[id] > 1 {
			dups++
		}
	}
	var notSuppressed, notFailed []string
	for rcpt := range fiveXX {
		if !suppressed[rcpt] {
			notSuppressed = append(notSuppressed, rcpt)
		}
		if rowOf[rcpt].state != "failed" {
			notFailed = append(notFailed, rcpt+" is "+rowOf[rcpt].state)
		}
	}
	var droppedIDs []string
	for id := range dropped {
		droppedIDs = append(droppedIDs, id)
	}
	slices.Sort(droppedIDs)
	slices.Sort(unknownIDs)
	unknownMatch := slices.Equal(droppedIDs, unknownIDs)

	res.check("all rows created and final", ok && int(rows) == nUsers && open == 0,
		"%d of %d rows; %d pending or sending after %s", rows, nUsers, open, secs(elapsed))
	res.check("every sent row's Message-ID received exactly once", sentBad == 0, "%d sent rows; %d not received exactly once", states["sent"], sentBad)
	res.check("no Message-ID received twice", dups == 0, "%d Message-IDs received (accepted or dropped after DATA) more than once", dups)
	res.check("every 5xx recipient suppressed and failed", len(notSuppressed) == 0 && len(notFailed) == 0 && failedUnexplained == 0,
		"%d recipients got a 5xx; not suppressed: %d %s; row not failed: %d %s; failed rows without a 5xx: %d",
		len(fiveXX), len(notSuppressed), strings.Join(first(notSuppressed, 3), ", "), len(notFailed), strings.Join(first(notFailed, 3), ", "), failedUnexplained)
	res.check("unknown rows are exactly the messages dropped after DATA", unknownMatch,
		"%d unknown rows, %d messages dropped after DATA", len(unknownIDs), len(droppedIDs))

	res.figure("final ledger", "%s", formatCounts(states, "sent", "failed", "unknown", "skipped", "pending", "sending"))
	res.figure("time until every row was final", "%s", secs(elapsed))
	res.figure("SMTP connections accepted", "%d", conns)
	res.figure("delivery attempts recorded in the ledger", "%d for %d rows (at most %d for one row)", attempts, len(ledger), maxAttempts)
	res.figure("addresses suppressed", "%d", len(suppressed))
	var faultRows []string
	for _, name := range []string{chaosTLS, chaosMail421, chaosMail451, chaosMail452, chaosDropMail, chaosRcpt451, chaosRcpt452,
		chaosRcpt550, chaosDropRcpt, chaosData451, chaosData554, chaosDropAfter, chaosDelay, chaosAccepted} {
		faultRows = append(faultRows, fmt.Sprintf("| %s | %d |", name, faults[name]))
	}
	res.Tables = append(res.Tables, "| what the server did | times |\n| --- | --- |\n"+strings.Join(faultRows, "\n"))
	res.Summary = fmt.Sprintf("%d digests: %s; %d faults injected; duplicates %d; unknown = dropped-after-DATA: %v",
		len(ledger), formatCounts(states, "sent", "failed", "unknown", "skipped", "pending", "sending"), sumFaults(faults), dups, unknownMatch)
	return nil
}

func sumFaults(m map[string]int) int {
	n := 0
	for k, v := range m {
		if k != chaosAccepted {
			n += v
		}
	}
	return n
}

func first(s []string, n int) []string { return s[:min(len(s), n)] }

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copyStrMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// pushPapers posts n papers (ids prefix.00001…) with a service token,
// spread over cats.
func pushPapers(ctx context.Context, c *client, prefix string, n int, cats []string) error {
	_, err := pushRange(ctx, c, prefix, 0, n, cats)
	return err
}

// pushRange posts the n papers prefix.{from+1…from+n} with a service token,
// paper i in cats[i % len(cats)], and returns their ids by category.
func pushRange(ctx context.Context, c *client, prefix string, from, n int, cats []string) (map[string][]string, error) {
	tok, err := mint("soak-service", "", "papers:write")
	if err != nil {
		return nil, err
	}
	papers, ids := pushBatch(prefix, from, n, cats)
	_, err = c.must(ctx, "POST", "/v1/papers", tok, papers, 200, 201, 202)
	return ids, err
}

// pushBatch makes the n papers prefix.{from+1…from+n} of pushRange and
// their ids by category.
func pushBatch(prefix string, from, n int, cats []string) ([]pushPaper, map[string][]string) {
	var papers []pushPaper
	ids := map[string][]string{}
	for i := from; i < from+n; i++ {
		p := pushPaper{
			ArxivID: fmt.Sprintf("%s.%05d", prefix, i+1), Version: 1, Title: fmt.Sprintf("Pushed soak paper %d", i+1),
			Abstract: "A paper pushed by the soak to give users something to read.", Authors: []string{"Ada Soak", "Bo Tester"},
			Categories: []string{cats[i%len(cats)]}, Published: time.Now().UTC().Format(time.RFC3339),
		}
		papers = append(papers, p)
		ids[p.Categories[0]] = append(ids[p.Categories[0]], p.ArxivID)
	}
	return papers, ids
}
