package soak

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
)

func runUpstreamFaults(ctx context.Context, e *env, res *Result) error {
	const (
		pages, perPage = 8, 50
		bound          = 8 * time.Minute
	)
	oaiPlan := map[int][]string{
		0: {oaipmh.Fault500, oaipmh.Fault503},
		1: {oaipmh.FaultTruncated},
		2: {oaipmh.FaultInvalid},
		3: {oaipmh.FaultHang},
		4: {oaipmh.FaultBadToken},
		5: {oaipmh.Fault503, oaipmh.Fault503},
		6: {oaipmh.Fault500},
	}
	oaPlan := []string{openalex.Fault429, openalex.Fault500, openalex.FaultInvalid, openalex.Fault429}
	res.What = fmt.Sprintf(`A fresh database; `+"`followfeed worker`"+` with HARVEST_INTERVAL=1m, JOB_TIMEOUT=20s, JOB_RESCUE_AFTER=30s and JOB_RETRY_MAX=3s harvests a fake OAI-PMH repository of %d pages × %d arXivRaw records (ids 2910.00001…, versions 1–3, all of today's datestamp; ListIdentifiers in pages of %d too) and enriches them from a fake OpenAlex that knows every second record (authors with OpenAlex ids, institutions). The repository injects, on the first requests of given ListRecords pages: HTTP 500 and 503 with Retry-After: 1 (retried inside the OAI client), a truncated body and invalid XML (a malformed page fails the job, which River retries and which resumes from the saved resumption token), a response held for 30 s, longer than JOB_TIMEOUT (the job is cancelled and retried), and one badResumptionToken on a resumed page (the harvester restarts the run from its first date); the completeness check's first ListIdentifiers request is also held for 30 s. OpenAlex answers its first requests with 429 (Retry-After: 1), 500 and a truncated JSON body. The soak waits (at most %s) until a harvest run has reached the end of the list (harvest_state.last_success_at set, harvested_until at today), the completeness check has compared today with the repository's ListIdentifiers and found it complete (harvest_days: %d expected, 0 missing), every record is stored once and enrichment is applied.`,
		pages, perPage, perPage, bound, pages*perPage)
	res.Policy = `**Policies checked.** The OAI-PMH and OpenAlex clients retry HTTP 429, 5xx and network errors themselves (honouring Retry-After, else 5 s / 1 s doubling back-off, 5 resp. 4 retries); a complete but unusable response (truncated, not XML/JSON) is not retried by the client but fails the job, and River retries the job with its back-off (capped by JOB_RETRY_MAX). The harvester saves its resumption token after every ingested page, so a retried or timed-out job resumes where it stopped, and a run that has spent half of JOB_TIMEOUT starts no further page but snoozes and resumes at the next page (no attempt spent); a refused token restarts the run from its first date, and records are idempotent, so nothing is stored twice. The completeness check is a job of its own (harvest_check, one per set), queued with the enrichment pass in the transaction that records the run's success: its turns are bounded (20 requests, half the job's time) and resumable page by page, and enrichment has a queue of its own, so a check that hangs or times out fails only its own attempt and can neither fail the harvest run nor delay the enrichment. Enrichment applies an OpenAlex answer only when the whole lookup succeeded; a failed lookup changes nothing and the job is retried.`

	day := time.Now().UTC().Format(time.DateOnly)
	cats := []string{"cs.LG", "cs.DS", "math.OC", "stat.ML"}
	recs := oaipmh.MakeRecords("2910", 0, pages*perPage, cats, day)
	known := map[string]openalex.Work{}
	wantKeys := map[string][]string{}
	for i, r := range recs {
		if i%2 != 0 {
			continue
		}
		var w openalex.Work
		for j, name := range r.Authors {
			a := openalex.Author{Name: name, ID: fmt.Sprintf("A59%07d%d", i, j)}
			if j == 0 {
				a.Inst = fmt.Sprintf("I7%06d", i%50)
			}
			w.Authors = append(w.Authors, a)
			wantKeys[r.ID] = append(wantKeys[r.ID], "researcher:openalex:"+a.ID)
		}
		known[strings.ToLower(r.ID)] = w
	}
	oai := oaipmh.New(func() []oaipmh.Record { return recs }, perPage)
	oai.Hang = 30 * time.Second
	for p, fs := range oaiPlan {
		oai.Plan(p, fs...)
	}
	oai.PlanIdentifiers(oaipmh.FaultHang)
	oaiSrv := httptest.NewServer(oai)
	defer oaiSrv.Close()
	oa := openalex.New(known, oaPlan...)
	oaSrv := httptest.NewServer(oa)
	defer oaSrv.Close()

	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "upstream-faults")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	env := append(e.baseEnv(db.url), "ARXIV_OAI_URL="+oaiSrv.URL, "ARXIV_OAI_FORMAT=arXivRaw", "ARXIV_SETS=cs",
		"OPENALEX_URL="+oaSrv.URL, "HARVEST_INTERVAL=1m", "JOB_TIMEOUT=20s", "JOB_RESCUE_AFTER=30s", "JOB_RETRY_MAX=3s")
	start := time.Now()
	w, err := startProc(ctx, e.opts.Exe, "worker", env, e.logPath("upstream-faults", "worker"))
	if err != nil {
		return err
	}
	defer func() { w.stop() }()

	var once, bad, extra, enriched, enrichMissing int
	var harvested, checked bool
	var expected, missing int
	var harvestAt, checkAt time.Duration
	ok, err := waitFor(ctx, bound, 2*time.Second, func() (bool, error) {
		var err error
		if once, bad, extra, err = checkPapers(ctx, db, recs); err != nil {
			return false, err
		}
		// A run that reached the end of its list stays recorded while
		// later periodic runs re-read the day.
		if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM harvest_state WHERE source = 'arxiv-oai:cs'
			AND last_success_at IS NOT NULL AND harvested_until >= $1::date)`, day).Scan(&harvested); err != nil {
			return false, err
		}
		if harvested && harvestAt == 0 {
			harvestAt = time.Since(start)
		}
		expected, missing = -1, -1
		if err := db.pool.QueryRow(ctx, `SELECT coalesce(expected, -1), coalesce(missing, -1) FROM harvest_days
			WHERE source = 'arxiv-oai:cs' AND day = $1::date`, day).Scan(&expected, &missing); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return false, err
		}
		checked = expected == len(recs) && missing == 0
		if checked && checkAt == 0 {
			checkAt = time.Since(start)
		}
		if enriched, enrichMissing, err = checkEnriched(ctx, db, wantKeys); err != nil {
			return false, err
		}
		return harvested && checked && bad == 0 && extra == 0 && enrichMissing == 0, nil
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	w.stop()

	var postponed int64
	postponed, _ = count(ctx, db.pool, `SELECT count(*) FROM papers WHERE enrich_after > now() AND enrich_attempts = 1`)
	res.check("every record stored exactly once, latest version", bad == 0 && once == len(recs),
		"%d of %d records stored once with their latest version; %d missing, duplicated or wrong version", once, len(recs), bad)
	res.check("nothing extra", extra == 0, "%d papers that the repository never served", extra)
	res.check("harvest caught up", harvested, "a run reached the end of the list, through today (harvest_state.last_success_at, harvested_until): %s",
		after(harvestAt, harvested))
	res.check("completeness check agrees with the repository", checked, "harvest_days for today: %s expected, %s missing (want %d, 0): %s",
		orNone(expected), orNone(missing), len(recs), after(checkAt, checked))
	res.check("OpenAlex enrichment applied", enrichMissing == 0,
		"%d of %d records OpenAlex knows carry all their authors' researcher:openalex keys; %d incomplete", enriched, len(wantKeys), enrichMissing)
	res.check("caught up within the bound", ok, "everything above held %s after the worker started (bound %s)", secs(elapsed), bound)

	faultRows := []string{}
	for name, n := range oai.FaultCounts() {
		faultRows = append(faultRows, fmt.Sprintf("| OAI-PMH | %s | %d |", name, n))
	}
	reqs, okReqs, oaFaults := oa.Counts()
	for name, n := range oaFaults {
		faultRows = append(faultRows, fmt.Sprintf("| OpenAlex | %s | %d |", name, n))
	}
	slices.Sort(faultRows)
	res.Tables = append(res.Tables, "| upstream | fault injected | times |\n| --- | --- | --- |\n"+strings.Join(faultRows, "\n"))
	jobRows, retries, err := jobHistory(ctx, db, "harvest_arxiv", "harvest_check", "enrich_openalex")
	if err != nil {
		return err
	}
	res.Tables = append(res.Tables, "River jobs of the run, with the error of every failed attempt:\n\n| job | final state | attempts | errors |\n| --- | --- | --- | --- |\n"+strings.Join(jobRows, "\n"))
	res.figure("OAI-PMH pages served without a fault", "%d ListRecords; %d ListIdentifiers requests in all", oai.ServedPages(), oai.IdentifierLists())
	res.figure("OpenAlex requests", "%d (%d answered normally)", reqs, okReqs)
	res.figure("failed job attempts retried by River", "%d", retries)
	res.figure("records OpenAlex does not know", "%d postponed for a later lookup (enrich_attempts = 1)", postponed)
	res.figure("time to catch up", "harvest %s, completeness check %s, everything %s", after(harvestAt, harvested), after(checkAt, checked), secs(elapsed))
	completeness := "today complete"
	if !checked {
		completeness = fmt.Sprintf("today %s expected, %s missing", orNone(expected), orNone(missing))
	}
	res.Summary = fmt.Sprintf("%d OAI + %d OpenAlex faults; %d failed job attempts retried; %d/%d records once; %s; %d/%d enriched; caught up in %s",
		sumMap(oai.FaultCounts()), sumMap(oaFaults), retries, once, len(recs), completeness, enriched, len(wantKeys), secs(elapsed))
	return nil
}

// after is "n s after the worker started", or "not reached".
func after(d time.Duration, reached bool) string {
	if !reached {
		return "not reached"
	}
	return secs(d) + " after the worker started"
}

// orNone is n, or "none" for -1 (no row, not checked).
func orNone(n int) string {
	if n < 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkEnriched counts the known records whose papers carry every expected
// researcher key.
func checkEnriched(ctx context.Context, db *freshDB, want map[string][]string) (complete, incomplete int, err error) {
	rows, err := db.pool.Query(ctx, `SELECT p.arxiv_id, k.key FROM papers p JOIN paper_keys k ON k.paper_id = p.id
		WHERE k.key LIKE 'researcher:openalex:%'`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	have := map[string]map[string]bool{}
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			return 0, 0, err
		}
		if have[id] == nil {
			have[id] = map[string]bool{}
		}
		have[id][key] = true
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	for id, keys := range want {
		okAll := true
		for _, k := range keys {
			okAll = okAll && have[id][k]
		}
		if okAll {
			complete++
		} else {
			incomplete++
		}
	}
	return complete, incomplete, nil
}

// jobHistory lists the River jobs of kinds with their attempts and errors,
// and counts the failed attempts.
func jobHistory(ctx context.Context, db *freshDB, kinds ...string) ([]string, int, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, kind, state::text, attempt,
		       coalesce((SELECT array_agg(left(regexp_replace(x->>'error', '\s+', ' ', 'g'), 160) ORDER BY (x->>'attempt')::int)
		                 FROM unnest(errors) x), '{}')
		FROM river.river_job WHERE kind = ANY($1) ORDER BY id`, kinds)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []string
	failed := 0
	for rows.Next() {
		var id int64
		var kind, state string
		var attempt int
		var errs []string
		if err := rows.Scan(&id, &kind, &state, &attempt, &errs); err != nil {
			return nil, 0, err
		}
		failed += len(errs)
		if len(errs) == 0 && attempt <= 1 && state == "completed" {
			continue // a clean periodic run: not interesting
		}
		for i := range errs {
			errs[i] = fmt.Sprintf("%d. %s", i+1, errs[i])
		}
		out = append(out, fmt.Sprintf("| %s #%d | %s | %d | %s |", kind, id, state, attempt, cell(strings.Join(errs, " · "))))
	}
	return out, failed, rows.Err()
}
