package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"time"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/feeds"
	"followfeed/identity"
	"followfeed/match"
	"followfeed/notify"
	"followfeed/ranking"
	"followfeed/worker"
)

// Deps are the real services the benchmark drives.
type Deps struct {
	DB      *database.DB
	Papers  *catalog.Store
	Matcher *match.Service
	// Identities is the identity registry (LinkLate).
	Identities *identity.Registry
	Tokens     *feeds.Tokens
	// Digester sends digests (to a local SMTP sink).
	Digester *notify.Digester
	// Ranking is the ranking service the handler's ranked feeds use
	// (nil: the ranking's figures are not measured).
	Ranking *ranking.Service
	// Handler is the product's full HTTP handler (rate limits off).
	Handler http.Handler
	// AuthSecret is the HS256 secret the handler verifies the host's
	// tokens with (AUTH_HS256_SECRET): the inbox page's users sign in with
	// tokens minted with it (nil: the inbox page is not measured).
	AuthSecret []byte
	// Exe (the followfeed binary) and Env start `serve` as a separate
	// process for the memory test.
	Exe string
	Env []string
	Log io.Writer
	// Skip names figures not to measure ("digests": every digest figure;
	// "best": the best-first digests (and their cold start); "controls":
	// the digests with mutes and read papers; "feeds": the
	// feed query, renders, 304s and memory, and the ranking's figures;
	// "ranking": the ranked feed, the feedback clicks and the memory with
	// ranked feeds; "inbox": the inbox page; "searches": queries;
	// "fediverse": the fediverse's fan-out), to iterate on one part.
	Skip map[string]bool
	// SearchSizes are the numbers of queries the batch is matched
	// against (nil: DefaultSearchSizes); the largest is the target's.
	SearchSizes []int
}

// runLock is the session advisory lock a benchmark run holds.
const runLock int64 = 0x62656e6368 // "bench"

// lock takes runLock on a connection of db, held until release is called.
func lock(ctx context.Context, db *database.DB) (release func(), err error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, runLock).Scan(&locked); err != nil {
		conn.Release()
		return nil, err
	}
	if !locked {
		conn.Release()
		return nil, fmt.Errorf("another benchmark is running against this database; wait for it to finish")
	}
	return func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, runLock)
		conn.Release()
	}, nil
}

// Build builds level l's dataset into db unless db holds it already, and
// measures nothing. Like Run, it refuses to start while another run holds
// the database, and refuses a database that holds papers but not l's
// dataset.
func Build(ctx context.Context, db *database.DB, l Level, log io.Writer) error {
	release, err := lock(ctx, db)
	if err != nil {
		return err
	}
	defer release()
	return ensureDataset(ctx, db, l, log)
}

// ensureDataset generates l's dataset when db does not hold it yet.
func ensureDataset(ctx context.Context, db *database.DB, l Level, log io.Writer) error {
	seeded, err := Seeded(ctx, db, l.Scale)
	if err != nil || seeded {
		return err
	}
	var papers int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM papers`).Scan(&papers); err != nil {
		return err
	}
	if papers > 0 {
		return fmt.Errorf("database %s holds %d papers but not scale %s's dataset (a build that was interrupted, or another scale's): drop it, or point DATABASE_URL at an empty database (make bench uses followfeed_bench, and followfeed_bench_m for scale M)",
			db.Pool.Config().ConnConfig.Database, papers, l.Name)
	}
	fmt.Fprintf(log, "bench: building scale %s (%d users, %d papers) in database %s; this takes %s\n", l.Name, l.Scale.Users, l.Scale.Papers,
		db.Pool.Config().ConnConfig.Database, map[bool]string{true: "a few minutes", false: "a while"}[l.Scale.Papers <= ScaleS.Papers])
	return Generate(ctx, db, l.Scale, log)
}

// Run builds level l's dataset when the database does not hold it yet,
// measures every figure against l's targets, and returns the report. It
// refuses to start while another run holds the database (runLock).
func Run(ctx context.Context, d Deps, l Level) (*Report, error) {
	s := l.Scale
	// One run at a time per database: two runs would store, measure and
	// delete each other's batch and searches.
	release, err := lock(ctx, d.DB)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := ensureDataset(ctx, d.DB, l, d.Log); err != nil {
		return nil, err
	}
	// Leftovers of an interrupted run.
	if _, _, err := RemoveRanking(ctx, d.DB); err != nil {
		return nil, err
	}
	RemoveBatch(ctx, d.DB)
	if err := RemoveSearches(ctx, d.DB); err != nil {
		return nil, err
	}
	if _, _, err := RemoveControls(ctx, d.DB); err != nil {
		return nil, err
	}
	r := &Report{When: time.Now(), Level: l, Scale: s}
	if err := d.DB.Pool.QueryRow(ctx, `SELECT current_setting('server_version'), pg_database_size(current_database()),
			(SELECT to_jsonb(m) FROM bench_meta m)`).Scan(&r.Postgres, &r.DiskBytes, &r.Meta); err != nil {
		return nil, err
	}
	r.Postgres = "PostgreSQL " + r.Postgres
	var users, follows, papers, keys int64
	err = d.DB.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM follows),
		(SELECT count(*) FROM papers), (SELECT count(*) FROM paper_keys)`).Scan(&users, &follows, &papers, &keys)
	if err != nil {
		return nil, err
	}
	r.Dataset = fmt.Sprintf("%d users, %d follows, %d papers, %d paper keys", users, follows, papers, keys)
	fmt.Fprintf(d.Log, "bench: scale %s dataset %s\n", l.Name, r.Dataset)

	if d.Identities != nil && s.Identities > 0 {
		fmt.Fprintln(d.Log, "bench: linking a tenth of the researchers after their papers")
		ll, err := LinkLate(ctx, d, s)
		if err != nil {
			return nil, err
		}
		r.Figures = append(r.Figures, Figure{Key: "link", Name: fmt.Sprintf("link a tenth of the researchers' host ids after their papers (PUT /v1/researchers batches of %d)", identity.MaxBatch),
			Target: "—", Result: fmt.Sprintf("%.2f s (%d researchers)", ll.Took.Seconds(), ll.Records), Value: ll.Took.Seconds(), Pass: true})
		r.Details = append(r.Details, fmt.Sprintf("Identities: every researcher is one identity with 2–3 ids (s2: on papers, host: in half the researcher follows, openalex: for half); "+
			"one in ten gets its host id only now, through `identity.Registry.Put` (%d records, %d updated, their followers' feed versions bumped), so the match job and the feed "+
			"queries below expand follows through the registry, including links made after the papers.", ll.Records, ll.Updated))
		if _, err := d.DB.Pool.Exec(ctx, "VACUUM ANALYZE identity_keys"); err != nil {
			return nil, err
		}
	}

	vocab, err := NewVocabulary()
	if err != nil {
		return nil, err
	}
	batch := batchPapers(5000, s, vocab, 1)
	fmt.Fprintln(d.Log, "bench: matching a 5,000-paper batch")
	mr, err := MeasureMatch(ctx, d.DB, d.Papers, d.Matcher, batch)
	defer RemoveBatch(ctx, d.DB)
	if err != nil {
		return nil, fmt.Errorf("measuring the match job: %w", err)
	}
	r.Figures = append(r.Figures,
		Figure{Key: "match", Name: "match a 5,000-paper batch (the match job, its audience the users with instant delivery)", Target: "≤ " + seconds(l.Targets.Match),
			Result: fmt.Sprintf("%.2f s", mr.Match.Seconds()), Value: mr.Match.Seconds(), Pass: mr.Match <= l.Targets.Match},
		Figure{Key: "ingest", Name: "ingest the same batch (papers + keys + match job, one transaction)", Target: "—",
			Result: fmt.Sprintf("%.2f s", mr.Ingest.Seconds()), Value: mr.Ingest.Seconds(), Pass: true})
	r.Details = append(r.Details, fmt.Sprintf("Match: %d new papers with %d key rows (%d distinct keys) go through the real `catalog.Store`; "+
		"then `match.Service.RunBatch` (the match job's transaction) reads, by key, the followers of its keys among the users with instant alerts or channels "+
		"(`instant_follows`, %d follows: for the measurement %d users, one in %d, were given instant alerts), finds %d of them with a new match and schedules "+
		"their alerts (one `digest_schedules` update each, one River job per 50); it bumps no feed (a private feed's ETag follows the newest row of its keys). "+
		"The batch is deleted at the end of the run.",
		mr.Papers, mr.Keys, mr.DistinctKeys, mr.InstantFollows, mr.Instant, int(math.Round(1/InstantShare)), mr.Users))

	if !d.Skip["fediverse"] {
		fmt.Fprintln(d.Log, "bench: the batch's notes to 10,000 fediverse followers on 1,000 shared inboxes")
		fr, err := MeasureFediverse(ctx, d.DB, d.Matcher, d.Identities, d.Papers, mr.FromSeq, mr.ToSeq, FediverseFollowers, FediverseInboxes)
		if err != nil {
			return nil, fmt.Errorf("measuring the fediverse: %w", err)
		}
		figs, detail := fediverseFigures(fr, mr, l.Targets.Match)
		r.Figures = append(r.Figures, figs...)
		r.Details = append(r.Details, detail)
	}

	// The batch wrote its keys (and the identity links bumped feed
	// rows): vacuum now, or autovacuum (of an 8M-row table, eventually)
	// runs in the middle of the measurements that follow.
	for _, t := range []string{"user_feeds", "papers", "paper_keys"} {
		if _, err := d.DB.Pool.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return nil, err
		}
	}

	if d.Digester != nil && !d.Skip["digests"] {
		fmt.Fprintln(d.Log, "bench: digests to a local SMTP server")
		users, err := SampleUsers(ctx, d.DB, 3000)
		if err != nil {
			return nil, err
		}
		// A day's window: the first fifth of the batch, about 1,000 papers,
		// more than arXiv announces in a day across all fields.
		dayEnd := mr.FromSeq + (mr.ToSeq-mr.FromSeq)/5
		// digestRounds rounds over the same windows (each run its own
		// ledger rows), the median reported: on two shared cores one run
		// can land on a checkpoint or a neighbour's burst. A ratio to
		// newest first is the median of each round's (Paired).
		// Best first (every digest ranks its candidates, a budget of
		// MaxPapersLimit, the most a best-first mail lists: about as many
		// papers shown as newest first's MaxPerDigest, the worst case of a
		// budget) is
		// measured in turn with newest first, so both meet the same load.
		// A first best-first run, not counted, trains the users' first
		// models (the cold start, once per user) and builds the ranking
		// corpus.
		const bestBudget = notify.MaxPapersLimit
		var cold time.Duration
		if !d.Skip["best"] {
			coldStart := time.Now()
			if _, err := MeasureDigestsOrdered(profiled(ctx, "best-cold"), d.DB, d.Digester, users, mr.FromSeq, dayEnd, worker.MailWorkers, worker.DigestBatch, notify.OrderBest, bestBudget); err != nil {
				return nil, fmt.Errorf("measuring best-first digests (first run): %w", err)
			}
			cold = time.Since(coldStart)
		}
		// The user's controls (issue 27): the same users' digests with
		// read papers and mutes, then with each alone, measured in turn
		// with the others (the controls put in place before each of its
		// runs and removed after it, untimed).
		var plan *ControlPlan
		if !d.Skip["controls"] {
			if plan, err = PlanControls(ctx, d.Matcher, users, mr.FromSeq, dayEnd); err != nil {
				return nil, err
			}
		}
		var runs, best []DigestRun // in the rounds' order: pairRuns pairs them
		var controlled ControlRuns
		for range digestRounds {
			run, err := MeasureDigests(profiled(ctx, "newest"), d.DB, d.Digester, users, mr.FromSeq, dayEnd, worker.MailWorkers, worker.DigestBatch)
			if err != nil {
				return nil, fmt.Errorf("measuring digests: %w", err)
			}
			runs = append(runs, run)
			fmt.Fprintf(d.Log, "bench: newest first: %s\n", run)
			if !d.Skip["best"] {
				if run, err = MeasureDigestsOrdered(profiled(ctx, "best"), d.DB, d.Digester, users, mr.FromSeq, dayEnd, worker.MailWorkers, worker.DigestBatch, notify.OrderBest, bestBudget); err != nil {
					return nil, fmt.Errorf("measuring best-first digests: %w", err)
				}
				best = append(best, run)
				fmt.Fprintf(d.Log, "bench: best first: %s\n", run)
			}
			if plan != nil {
				// The whole plan, then each control alone.
				for _, c := range []struct {
					runs *[]DigestRun
					plan *ControlPlan
					name string
				}{{&controlled.Both, plan, "controls"}, {&controlled.Read, plan.Only(false), "controls-read"}, {&controlled.Mutes, plan.Only(true), "controls-mutes"}} {
					if run, err = MeasureDigestsControlled(profiled(ctx, c.name), d.DB, d.Digester, c.plan, users, mr.FromSeq, dayEnd, worker.MailWorkers, worker.DigestBatch); err != nil {
						return nil, fmt.Errorf("measuring digests with the user's controls: %w", err)
					}
					*c.runs = append(*c.runs, run)
					fmt.Fprintf(d.Log, "bench: %s: %s\n", c.name, run)
				}
			}
		}
		med, lo, hi := rateSpread(runs)
		_, self, pg := med.PerDigest()
		r.Figures = append(r.Figures, Figure{Key: "digests", Name: "digests built and handed to a local SMTP server", Target: fmt.Sprintf("≥ %s / s", count(l.Targets.Digests)),
			Result: fmt.Sprintf("%.0f / s (median of %d: %.0f–%.0f)", med.Rate, len(runs), lo, hi), Value: med.Rate, Pass: med.Rate >= l.Targets.Digests})
		r.Details = append(r.Details, fmt.Sprintf("Digests: %d users spread over the table, each with a ledger row whose window is a day of papers (the first 1,000 of the batch, more than arXiv announces daily); "+
			"%d concurrent `notify.Digester.SendBatch` calls of %d digests each (the mail queue's workers running send jobs) reserve the windows, select and group the papers "+
			"(one query per batch), render text + HTML, build each MIME message and deliver it over pooled SMTP connections to an in-process go-smtp server, "+
			"updating the ledger per digest; %d were sent, listing %.1f papers each. %d runs (one a round), median reported. "+
			"CPU during the median run (%.1f s wall, %d cores): machine %.1f s, followfeed + SMTP sink %.1f s, PostgreSQL %.1f s "+
			"(of which this database's backends %.1f s); per digest: followfeed + SMTP sink %s, this database's PostgreSQL backends %s.",
			len(users), worker.MailWorkers, worker.DigestBatch, med.Sent, med.PapersEach(), len(runs), med.Wall.Seconds(), runtime.NumCPU(),
			med.CPU.Machine.Seconds(), med.CPU.Self.Seconds(), med.CPU.Postgres.Seconds(), med.PostgresDB.Seconds(), msPrecise(self), msPrecise(pg)))
		if len(best) > 0 {
			bestMed, bestLo, bestHi := rateSpread(best)
			paired := pairRuns(runs, best)
			_, bestSelf, bestPG := bestMed.PerDigest()
			r.Figures = append(r.Figures, Figure{Key: "digests-best", Name: fmt.Sprintf("digests, best first (ranked; a budget of %d papers)", bestBudget), Target: "≥ 90% of newest first",
				Result: fmt.Sprintf("%.0f / s, %s of newest first (rates, median of %d: %.0f–%.0f)", bestMed.Rate, paired, len(best), bestLo, bestHi),
				Value:  bestMed.Rate, Pass: paired.Share >= 0.9})
			r.Details = append(r.Details, fmt.Sprintf("Digests, best first: the same users and windows with `order: best` and a budget of %d papers (as many as newest first shows); "+
				"each batch's candidates (the newest 250 of each window) are ranked in one `ranking.Service.Rank` (the users' stored models, the papers' vectors from the process's cache) "+
				"and shown as one list with why each ranks, %.1f papers each. Measured in turn with the newest-first runs; a first run, not counted, trained the %d users' first models "+
				"(the cold start, once per user) and built the ranking corpus: %.1f s. Per digest in the median run: followfeed + SMTP sink %s, this database's PostgreSQL backends %s.",
				bestBudget, bestMed.PapersEach(), len(users), cold.Seconds(), msPrecise(bestSelf), msPrecise(bestPG)))
		}
		if plan != nil {
			f, detail := controlsFigure(runs, controlled, plan, len(users))
			r.Figures = append(r.Figures, f)
			r.Details = append(r.Details, detail)
		}
	}

	var sample []int64
	measureInbox := d.AuthSecret != nil && !d.Skip["inbox"]
	if !d.Skip["feeds"] || !d.Skip["searches"] || measureInbox {
		if sample, err = SampleUsers(ctx, d.DB, 300); err != nil {
			return nil, err
		}
	}
	if !d.Skip["feeds"] {
		fmt.Fprintln(d.Log, "bench: feed query for 300 users")
		ds, err := MeasureFeedQuery(ctx, d.Matcher, sample)
		if err != nil {
			return nil, fmt.Errorf("measuring the feed query: %w", err)
		}
		p50, p99 := Percentiles(ds)
		r.Figures = append(r.Figures, Figure{Key: "query", Name: "user-match query: 50 newest matched papers with reasons", Target: "p99 ≤ " + msTarget(l.Targets.Query),
			Result: fmt.Sprintf("p50 %s, p99 %s", ms(p50), ms(p99)), Value: msf(p99), Pass: p99 <= l.Targets.Query})
		r.Details = append(r.Details, "User-match query: `match.Service.Matched` with limit 50 (LATERAL top-N per followed key, merged, deduplicated, papers and reasons loaded) for 300 users spread over the table; a warm-up pass, then the measured pass.")

		if err := measureFeeds(ctx, d, sample, r); err != nil {
			return nil, err
		}
	}
	if measureInbox {
		fmt.Fprintln(d.Log, "bench: the inbox page of the same 300 users")
		res, err := MeasureInbox(ctx, d, sample)
		if err != nil {
			return nil, fmt.Errorf("measuring the inbox page: %w", err)
		}
		f, detail := inboxFigure(l.Targets, res)
		r.Figures = append(r.Figures, f)
		r.Details = append(r.Details, detail)
	}
	if !d.Skip["searches"] {
		res, err := MeasureSearches(ctx, d, s, vocab, batch, sample, 2)
		if err != nil {
			return nil, fmt.Errorf("measuring queries: %w", err)
		}
		figs, details, section := searchFigures(res, len(batch))
		r.Figures = append(r.Figures, figs...)
		r.Details = append(r.Details, details...)
		r.Sections = append(r.Sections, section)
	}
	return r, nil
}

// The feedback clicks' shape (MeasureClicks): each sampled user first has
// clickHistory feedback rows, then clicks clickRounds times.
const (
	clickHistory = 10
	clickRounds  = 3
)

// measureFeeds adds the feed figures: full renders, 304 throughput against
// a bare handler, and the memory of `serve` under feed load; with
// d.Ranking (unless skipped) the ranked feed's renders, the feedback
// clicks and the memory with ranked feeds polled too, whose feedback and
// models it removes at the end (RemoveRanking).
func measureFeeds(ctx context.Context, d Deps, sample []int64, r *Report) error {
	fmt.Fprintln(d.Log, "bench: full renders of 300 private feeds")
	paths, err := feedPaths(ctx, d, sample)
	if err != nil {
		return err
	}
	ds, avg, err := MeasureRender(d.Handler, paths)
	if err != nil {
		return fmt.Errorf("measuring feed renders: %w", err)
	}
	p50, p99 := Percentiles(ds)
	r.Figures = append(r.Figures, Figure{Key: "render", Name: "private feed, 50 items, full render, server side", Target: "p99 ≤ " + msTarget(r.Level.Targets.Render),
		Result: fmt.Sprintf("p50 %s, p99 %s (%d KiB)", ms(p50), ms(p99), avg>>10), Value: msf(p99), Pass: p99 <= r.Level.Targets.Render})
	r.Details = append(r.Details, "Full render: `GET /feeds/{token}.atom` through the real HTTP handler in-process (token lookup, feed query, reasons, Atom rendering, no compression), 300 users, warm-up pass then measured pass; time from request to the last byte written.")

	var ranked *RankedResult
	if d.Ranking != nil && !d.Skip["ranking"] {
		defer func() {
			if _, _, err := RemoveRanking(ctx, d.DB); err != nil {
				fmt.Fprintf(d.Log, "bench: removing the ranking's feedback and models: %v\n", err)
			}
		}()
		fmt.Fprintln(d.Log, "bench: ranked feeds of the same users")
		if ranked, err = MeasureRanked(ctx, d, sample); err != nil {
			return fmt.Errorf("measuring ranked feeds: %w", err)
		}
		fmt.Fprintln(d.Log, "bench: feedback clicks to updated models")
		clicks, err := MeasureClicks(ctx, d.Ranking, d.Matcher, sample, clickHistory, clickRounds)
		if err != nil {
			return fmt.Errorf("measuring feedback clicks: %w", err)
		}
		// The clicks' jobs: the measurement did their work itself, and a
		// `serve` started below must not run them during its load.
		if err := removeTrainJobs(ctx, d.DB); err != nil {
			return err
		}
		figs, details := rankingFigures(r.Level.Targets, ranked, clicks)
		r.Figures = append(r.Figures, figs...)
		r.Details = append(r.Details, details...)
	}

	fmt.Fprintln(d.Log, "bench: conditional GETs vs a bare handler")
	etags := make([]http.Header, len(paths))
	for i, p := range paths {
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, httptest.NewRequest("HEAD", p, nil))
		etags[i] = http.Header{"If-None-Match": {rec.Header().Get("ETag")}}
	}
	bare, stopBare, err := Serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotModified) }))
	if err != nil {
		return err
	}
	bareRPS, err := Throughput(bare, paths, nil, http.StatusNotModified, 16, 5*time.Second)
	stopBare()
	if err != nil {
		return fmt.Errorf("bare handler load: %w", err)
	}
	ours, stopOurs, err := Serve(d.Handler)
	if err != nil {
		return err
	}
	condRPS, err := Throughput(ours, paths, func(i int) http.Header { return etags[i] }, http.StatusNotModified, 16, 5*time.Second)
	stopOurs()
	if err != nil {
		return fmt.Errorf("conditional GET load: %w", err)
	}
	ratio := condRPS / bareRPS
	r.Figures = append(r.Figures, Figure{Key: "304", Name: "conditional GET answered 304", Target: fmt.Sprintf("≥ %.0f%% of a bare net/http handler's req/s", 100*r.Level.Targets.Share),
		Result: fmt.Sprintf("%.0f req/s = %.0f%% of %.0f req/s", condRPS, 100*ratio, bareRPS), Value: ratio, Pass: ratio >= r.Level.Targets.Share})
	r.Details = append(r.Details, "304s: 16 keep-alive clients in the benchmark process for 5 s each against (a) a bare `net/http` handler that answers 304, (b) the full handler (middleware, metrics, token lookup, ETag check) with `If-None-Match` for 300 users' feeds, both on loopback, one after the other, in the same run.")

	if d.Exe == "" {
		return nil
	}
	fmt.Fprintln(d.Log, "bench: memory of serve under feed load")
	base, pid, stop, err := ServeProcess(ctx, d.Exe, d.Env)
	if err != nil {
		return err
	}
	defer stop()
	fullRPS, err := Throughput(base, paths, nil, http.StatusOK, 16, 10*time.Second)
	if err != nil {
		return fmt.Errorf("feed load on serve: %w", err)
	}
	if _, err := Throughput(base, paths, func(i int) http.Header { return etags[i] }, http.StatusNotModified, 16, 5*time.Second); err != nil {
		return fmt.Errorf("conditional load on serve: %w", err)
	}
	rss, err := PeakRSS(pid)
	if err != nil {
		return err
	}
	r.Figures = append(r.Figures, rssFigure("rss", "memory of `serve` under the feed load test", rss, r.Level.Targets.RSS))
	r.Details = append(r.Details, fmt.Sprintf("Memory: `followfeed serve` as a separate process (HTTP and workers), 16 clients fetching full feeds for 10 s (%.0f req/s), then conditional GETs for 5 s; peak RSS is VmHWM from /proc.", fullRPS))
	if ranked == nil {
		return nil
	}
	fmt.Fprintln(d.Log, "bench: memory of serve with ranked feeds polled too")
	rankedRPS, err := RankedLoad(base, ranked.Paths, 10*time.Second)
	if err != nil {
		return fmt.Errorf("ranked feed load on serve: %w", err)
	}
	all, err := PeakRSS(pid)
	if err != nil {
		return err
	}
	r.Figures = append(r.Figures, rssFigure("rss-ranked", "memory of `serve` under the feed load test, then ranked feeds polled", all, r.Level.Targets.RSS))
	r.Details = append(r.Details, fmt.Sprintf("Memory with ranking in use: the same `serve` process after the load above gets one ranked feed request alone (it builds the process's ranking corpus, "+
		"the newest %d papers), then 16 clients fetch the %d users' ranked feeds (`best.atom`, every user with a stored model, so `serve` reads models and trains none; "+
		"the papers' vectors are cached as they are made, up to %d) for 10 s (%.0f req/s); peak RSS (VmHWM) over the whole life of the process, the plain feed load's included.",
		ranking.DefaultCorpusPapers, len(ranked.Paths), ranking.DefaultVectors, rankedRPS))
	return nil
}

// rssFigure is a memory figure of `serve`: its peak RSS (bytes) against
// the target (bytes), in MiB.
func rssFigure(key, name string, rss, target int64) Figure {
	return Figure{Key: key, Name: name, Target: fmt.Sprintf("≤ %d MiB RSS", target>>20),
		Result: fmt.Sprintf("peak %d MiB", rss>>20), Value: float64(rss >> 20), Pass: rss <= target}
}
