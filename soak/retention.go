package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/bench"
	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/harvest"
	"followfeed/identity"
	"followfeed/notify"
	"followfeed/paper"
	"followfeed/search"
)

// The retention scenario's simulated year.
const (
	rtDays         = 365
	rtPapersPerDay = 730 // 22,200 a month: arXiv's rate
	rtWritesPerDay = 8   // writes of key rows a day (harvest pages, enrichment batches)
	rtUsers        = 300
	rtInstantEvery = 10    // every 10th user gets instant alerts, the others a daily digest
	rtAlertsPerDay = 4     // instant alerts per instant user and day
	rtChannelEvery = 20    // every 20th user has a daily webhook channel for one topic
	rtDormantUsers = 5     // users following only a researcher whose last paper is 11 months old
	rtResearchers  = 60000 // the researchers authoring by the year's end (half of them at its start)
	rtDormant      = "s2:999999999"
	rtSearches     = 40    // distinct queries the users follow
	rtSearchEvery  = 3     // every user but every 3rd follows 1–3 of them
	rtMinShare     = 0.001 // a kept search matches at least this share of a day's papers (0.7 a day)
)

// rtCategories are the generated papers' primary categories, most
// frequent first (drawn with a skew, as arXiv's are).
var rtCategories = []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph", "cs.RO", "math.OC", "hep-ph",
	"hep-th", "cs.CR", "eess.SP", "astro-ph.GA", "cond-mat.mes-hall", "math.PR", "cs.IT", "cs.SE", "astro-ph.CO",
	"cond-mat.mtrl-sci", "math.AP", "cs.NE", "physics.optics", "eess.SY", "gr-qc", "math.NA"}

// rtTopics are the channels' topics: one category each, a few papers a day.
var rtTopics = []string{"math.PR", "cs.IT", "gr-qc", "math.NA", "eess.SY", "cs.NE", "physics.optics", "math.AP"}

// rtJobsPerDay are the River jobs a day of this service leaves finished,
// at the default intervals: the periodic jobs, and per write, digest
// batch, alert batch and channel.
var rtJobsPerDay = []struct {
	kind, queue string
	n           int
}{
	{"channel_schedule", "default", 24 * 60}, {"digest_schedule", "default", 24 * 12}, {"enrich_openalex", "enrich", 24 * 4},
	{"harvest_arxiv", "harvest", 24}, {"harvest_check", "harvest", 24}, {"channel_prune", "default", 24},
	{"seq_times_prune", "default", 24}, {"digest_prune", "default", 24}, {"harvest_prune", "default", 24},
	{"confirmation_prune", "default", 24}, {"match_batch", "match", rtWritesPerDay},
	{"digest_send", "mail", (rtUsers - rtUsers/rtInstantEvery + 49) / 50}, {"instant_send", "mail", rtAlertsPerDay},
	{"channel_collect", "push", rtUsers / rtChannelEvery}, {"channel_deliver", "push", rtUsers / rtChannelEvery},
}

// rtUser is a user of the scenario.
type rtUser struct {
	id            int64
	sub, email    string
	token         string
	cats          []string
	researchers   []string
	searches      []string // queries followed (normal forms)
	instant       bool
	dormant       bool
	topic         string // the channel's category ("" for no channel)
	channel       int64
	feed          string // the Atom feed's path, for the sampled users
	etag, lastMod string // the feed's validators before the prune
}

// rtTable is one table's figures.
type rtTable struct {
	name, class, retention string
	rowsBefore, rowsAfter  int64
	sizeBefore, sizeAfter  int64
	sizeCompact            int64 // after VACUUM FULL (pruned tables only)
	kept                   string
}

func runRetention(ctx context.Context, e *env, res *Result) error {
	res.What = fmt.Sprintf(`A fresh database holds a simulated year at arXiv's rate, loaded through the product's API and the owners' lab loaders, each row dated on the day it belongs to; then the real `+"`followfeed worker`"+` prunes it, and the real service goes on working on the pruned tables.

*Users (through the API of an `+"`api`"+` process):* %d users with confirmed addresses, each following three categories (drawn with arXiv's skew) and two researchers; every %dth has instant alerts, the others a daily digest; every %dth has a daily webhook channel for one topic (a category it follows); %d follow only a researcher whose last paper is 11 months old; all but every %drd of the others (%d users) also follow 1–3 of %d queries (drawn as the benchmark draws them, `+"`bench.DrawSearches`"+`: 1–4 terms of the vocabulary, phrases, fields, au: names, cat: filters, none matching more than 2%% of a day's papers; of those, the first %d that match at least 0.1%% of them, as a user keeps a query that shows something in the preview), their backfill jobs run by a `+"`followfeed worker`"+` then (on no papers yet), as at the year's start. *The year (%d days, ending yesterday):* %d papers a day (%d in all, 22,200 a month), each with realistic title and abstract (the bench's vocabulary), 1–3 categories and four authors (the researchers who publish grow from %d to %d over the year), written in %d writes a day by `+"`catalog.BulkLoadMatching`"+` (key rows, seqs and a `+"`key_seq_times`"+` row per write, and each followed query's matches of the write in one `+"`search_hits`"+` row with its papers' `+"`paper_search_hits`"+` rows, as an ingest writes them); the researchers registered by the host the day they first author a paper (`+"`identity.BulkLoad`"+`, source host: an identity with its s2 and host ids, and an OpenAlex id for every other one); a daily digest per daily user and %d instant alerts per instant user a day, sent (`+"`notify.PutLedger`"+`, final rows as a send leaves them); a delivered event a day per channel with that day's papers of its topic, its attempt and its sent papers (`+"`channels.BulkLoadLedger`"+`); the pushes' day counts (`+"`harvest.Health`"+` on the simulated clock); and River's finished jobs of a year at the default intervals (about %d a day: the periodic jobs, per write, digest batch and channel), written in the soak's own SQL since no product path finishes a job in the past. `+"`key_seq_times`"+` rows are dated in the soak's SQL too (aging on purpose), the users' feeds were last changed a year ago, and the tables are analyzed (ANALYZE, as autovacuum would have done over the year). The fediverse is off (its housekeeping is tested in package fediverse), and no confirmation mail was asked for this year (the table holds one day of them, tested in package account).

*The prune:* `+"`followfeed worker`"+` starts with the default retentions; its prune jobs run at start (then hourly) and River's cleaner runs on the leader. The soak waits until every prune job has completed and no finished River job is past its retention, then measures every table (rows by count(*), size by pg_total_relation_size) before and after, after a plain VACUUM (what autovacuum does: the space is reused, the file keeps its size) and, for the pruned tables, after VACUUM FULL (the size the kept rows need). *Then the service works on:* today's %d papers are pushed through `+"`POST /v1/papers`"+` (the product's ingest, match job, instant alerts), every daily digest is made due, and the sampled users' feeds are fetched again with the validators they had before the prune.`,
		rtUsers, rtInstantEvery, rtChannelEvery, rtDormantUsers, rtSearchEvery, rtQueryUsers(), rtSearches, rtSearches, rtDays, rtPapersPerDay, rtDays*rtPapersPerDay,
		rtPool(0), rtPool(rtDays), rtWritesPerDay, rtAlertsPerDay, rtJobsADay(), rtPapersPerDay)
	res.Policy = `**Policies checked** (README, Operations: Retention). Every table that grows with time has a retention and a pruning job owned by its package, deleting in batches of 5,000 rows, each its own transaction, idempotently; what grows with the papers kept or the users is never pruned. A row whose absence could make something go out twice is kept: digest ledger rows that are not final, and each user's newest instant and newest other row (a row's name is what stops a second digest of its period or window). ` + "`key_seq_times`" + ` keeps 30 days and merges older writes into one floor row, so a feed's Last-Modified never moves later and its ETag never changes. Verdict: after the prune no row is past its table's retention (beyond the documented keepers), the tables that grow with papers and users hold exactly the rows they held (and those that grow with papers, search hits and registered researchers among them, grew with the papers between the year's middle and its end, and hold nothing of a paper or researcher not kept), a feed whose newest paper is 11 months old still answers 304 to the validators it had, and the day's digests go out once each, none of an old period.`

	start := time.Now()
	day0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -rtDays) // the first simulated day; the last is yesterday

	sink, smtpURL, stopSink, err := startSink(0)
	if err != nil {
		return err
	}
	defer stopSink()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { // the channels' webhooks
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	db, err := newFreshDB(ctx, e, e.opts.DatabaseURL, "retention")
	if err != nil {
		return err
	}
	defer db.drop(ctx)
	env := append(e.baseEnv(db.url), "SMTP_URL="+smtpURL, "DIGEST_SCHEDULE_INTERVAL=2s", "CHANNEL_ALLOW_HOSTS=127.0.0.1",
		"RATE_LIMIT_PER_USER=0")
	api, err := startProc(ctx, e.opts.Exe, "api", env, e.logPath("retention", "api"))
	if err != nil {
		return err
	}
	defer api.stop()
	c := newClient(api.base, 16, 60*time.Second)
	defer c.close()

	vocab, err := bench.NewVocabulary()
	if err != nil {
		return err
	}
	searches := rtDrawSearches(e, vocab)
	users, err := rtMakeUsers(ctx, e, c, receiver.URL, searches)
	if err != nil {
		return fmt.Errorf("creating users: %w", err)
	}
	e.logf("retention: %d users through the API, %d of them following %d queries", len(users), rtQueryUsers(), len(searches))
	// The searches' backfill jobs (one per search, from the follows) run
	// now, on no papers yet, as they did when the users followed them.
	if err := rtBackfills(ctx, e, db, env); err != nil {
		return err
	}

	load := time.Now()
	year, err := rtLoadYear(ctx, e, db, users, day0, vocab)
	if err != nil {
		return fmt.Errorf("loading the year: %w", err)
	}
	// What autovacuum's analyze does over a year: the planner's
	// statistics of the loaded tables (the load took a minute or two).
	if _, err := db.pool.Exec(ctx, `ANALYZE`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	loadTook := time.Since(load)
	e.logf("retention: a year loaded in %s: %d papers, %d key rows, %d ledger rows, %d channel events, %d River jobs",
		secs(loadTook), year.papers, year.keys, year.ledger, year.events, year.jobs)

	// The sampled users' feeds, with the validators a feed reader holds.
	sample := rtSample(users)
	for _, u := range sample {
		if u.feed, err = c.feedPath(ctx, u.token, "atom"); err != nil {
			return err
		}
	}
	// Aging on purpose: the users signed up a year ago, and their feeds
	// last changed then (making a feed's token above changed it now). The
	// daily digests' next one is tomorrow, and every user has had the
	// year's papers: their watermark is the year's last seq.
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE user_feeds SET changed_at = $1`, []any{day0}},
		{`UPDATE digest_schedules SET watermark = $1, next_at = CASE WHEN frequency = 'daily' THEN now() + interval '1 day' END`, []any{year.lastSeq}},
	} {
		if _, err := db.pool.Exec(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	for _, u := range sample {
		r, err := c.must(ctx, "GET", u.feed, "", nil, 200)
		if err != nil {
			return err
		}
		u.etag, u.lastMod = r.header.Get("ETag"), r.header.Get("Last-Modified")
	}

	before, err := rtMeasure(ctx, db.pool)
	if err != nil {
		return err
	}

	// The prune: the real worker, default retentions.
	pruneStart := time.Now()
	w, err := startProc(ctx, e.opts.Exe, "worker", env, e.logPath("retention", "worker"))
	if err != nil {
		return err
	}
	defer func() { w.stop() }()
	pruneKinds := []string{"seq_times_prune", "digest_prune", "harvest_prune", "confirmation_prune", "channel_prune"}
	var pruneDetail string
	pruned, err := waitFor(ctx, 5*time.Minute, 2*time.Second, func() (bool, error) {
		var done, expired int64
		if err := db.pool.QueryRow(ctx, `SELECT
			(SELECT count(DISTINCT kind) FROM river.river_job WHERE kind = ANY($1) AND state = 'completed' AND finalized_at > $2),
			(SELECT count(*) FROM river.river_job WHERE (state = 'completed' AND finalized_at < now() - interval '1 day')
			   OR (state IN ('cancelled', 'discarded') AND finalized_at < now() - interval '7 days'))`, pruneKinds, pruneStart).Scan(&done, &expired); err != nil {
			return false, err
		}
		pruneDetail = fmt.Sprintf("%d of %d prune jobs completed; %d finished River jobs past their retention", done, len(pruneKinds), expired)
		return done == int64(len(pruneKinds)) && expired == 0, nil
	})
	if err != nil {
		return err
	}
	pruneTook := time.Since(pruneStart)
	res.check("every prune job ran and River's cleaner caught up", pruned, "%s, %s after the worker started (bound 5m)", pruneDetail, secs(pruneTook))
	if !pruned {
		return fmt.Errorf("the prune did not finish within 5 minutes: %s", pruneDetail)
	}
	e.logf("retention: pruned in %s", secs(pruneTook))
	after, err := rtMeasure(ctx, db.pool)
	if err != nil {
		return err
	}
	oldLeft, err := rtPastRetention(ctx, db.pool)
	if err != nil {
		return err
	}
	orphans, err := rtOrphans(ctx, db.pool)
	if err != nil {
		return err
	}

	// Sizes after a plain VACUUM of the pruned tables (nothing else
	// deleted rows) and after VACUUM FULL.
	var timeTables []string
	for _, t := range after {
		if rtClasses[t.name].class == classTime {
			timeTables = append(timeTables, t.name)
		}
	}
	if _, err := db.pool.Exec(ctx, `VACUUM `+strings.Join(rtQuoted(timeTables), ", ")); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	final, err := rtMeasure(ctx, db.pool)
	if err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `VACUUM FULL `+strings.Join(rtQuoted(timeTables), ", ")); err != nil {
		return fmt.Errorf("vacuum full: %w", err)
	}
	compact, err := rtMeasure(ctx, db.pool)
	if err != nil {
		return err
	}

	// The service works on: today's papers through the API, the day's
	// digests, the feeds.
	if err := rtPushToday(ctx, c, year); err != nil {
		return err
	}
	if err := rtDigestsToday(ctx, e, db, res, sink, users); err != nil {
		return err
	}
	rtCheckFeeds(ctx, c, res, sample)

	tables := rtCombine(before, after, final, compact, year)
	rtReport(res, tables, year, oldLeft, loadTook, pruneTook)
	rtGrowth(res, year, before, orphans)
	res.figure("scenario time", "%s (loading the year %s, the prune %s)", secs(time.Since(start)), secs(loadTook), secs(pruneTook))
	return nil
}

// rtJobsADay is how many River jobs a day of the simulated service leaves.
func rtJobsADay() int {
	n := 0
	for _, j := range rtJobsPerDay {
		n += j.n
	}
	return n
}

// rtRank draws a category rank with arXiv's skew (the first few categories
// take most papers and most follows).
func rtRank(r *rand.Rand, n int, steep float64) int {
	k := int(math.Pow(float64(n), math.Pow(r.Float64(), steep)))
	return min(max(k, 1), n) - 1
}

// rtPool is how many researchers publish on day d of the year: half of
// them at its start, growing evenly to rtResearchers at its end.
func rtPool(d int) int {
	return rtResearchers/2 + rtResearchers/2*min(d, rtDays)/rtDays
}

// rtResearcher draws an author of a pool of n researchers: half from the
// whole pool, half log-uniform (a few prolific researchers).
func rtResearcher(r *rand.Rand, n int) string {
	a := 1 + r.IntN(n)
	if r.Float64() < 0.5 {
		a = max(int(math.Pow(float64(n), r.Float64())), 1)
	}
	return fmt.Sprintf("s2:%d", a)
}

// rtQueryUsers is how many users follow queries.
func rtQueryUsers() int {
	n := 0
	for i := rtDormantUsers; i < rtUsers; i++ {
		if i%rtSearchEvery != 0 {
			n++
		}
	}
	return n
}

// rtDrawSearches draws the users' queries as the benchmark
// does (tried on papers like the year's, none broader than
// bench.MaxShare of them) and keeps, in the order drawn, those that show
// the user something in the preview: at least rtMinShare of its papers
// (a search that shows nothing in a month of papers is refined, not kept).
func rtDrawSearches(e *env, vocab *bench.Vocabulary) []string {
	r := rand.New(rand.NewPCG(e.opts.Seed, 2030))
	var preview []*search.Doc
	for i := range 3000 {
		p := paper.Paper{ArxivID: fmt.Sprintf("2001.%05d", i+1)}
		p.Title, p.Abstract = vocab.Paper(r)
		p.PrimaryCategory = rtCategories[rtRank(r, len(rtCategories), 1.5)]
		p.Categories = []string{p.PrimaryCategory}
		for range 4 {
			id := rtResearcher(r, rtResearchers)
			p.Authors = append(p.Authors, paper.Author{Name: "Researcher " + strings.TrimPrefix(id, "s2:"), IDs: []string{id}})
		}
		preview = append(preview, p.Doc())
	}
	cats := make([]bench.WeightedCategory, len(rtCategories))
	for i, c := range rtCategories {
		cats[i] = bench.WeightedCategory{ID: c, Followers: int64(1000 / (i + 1))}
	}
	drawn, _ := bench.DrawSearches(vocab, cats, rtResearchers, preview, 10*rtSearches, e.opts.Seed)
	qs := make([]*search.Query, 0, len(drawn))
	norms := make([]string, 0, len(drawn))
	for _, d := range drawn {
		if q, err := follow.CompileQuery(d); err == nil {
			qs, norms = append(qs, q), append(norms, d)
		}
	}
	hits := make([]int, len(qs))
	for _, h := range search.MatchBatch(qs, preview) {
		for _, qi := range h {
			hits[qi]++
		}
	}
	var out []string
	for i, n := range norms {
		if len(out) < rtSearches && float64(hits[i]) >= rtMinShare*float64(len(preview)) {
			out = append(out, n)
		}
	}
	return out
}

// rtBackfills runs a worker until the follows' backfill jobs have
// completed, and stops it.
func rtBackfills(ctx context.Context, e *env, db *freshDB, env []string) error {
	w, err := startProc(ctx, e.opts.Exe, "worker", env, e.logPath("retention", "worker-backfills"))
	if err != nil {
		return err
	}
	defer w.stop()
	var open int64
	done, err := waitFor(ctx, 2*time.Minute, 500*time.Millisecond, func() (bool, error) {
		var err error
		open, err = count(ctx, db.pool, `SELECT count(*) FROM river.river_job WHERE kind = 'search_backfill' AND state <> 'completed'`)
		return open == 0, err
	})
	if err == nil && !done {
		err = fmt.Errorf("%d search backfill jobs not completed after 2 minutes", open)
	}
	return err
}

// rtMakeUsers creates the users through the API: follows, digest
// settings and channels.
func rtMakeUsers(ctx context.Context, e *env, c *client, receiver string, searches []string) ([]*rtUser, error) {
	r := rand.New(rand.NewPCG(e.opts.Seed, 28))
	users := make([]*rtUser, rtUsers)
	for i := range users {
		u := &rtUser{sub: fmt.Sprintf("soak-rt-%d", i), email: fmt.Sprintf("rt%d@soak.example", i), instant: i%rtInstantEvery == 1}
		if i < rtDormantUsers {
			u.dormant, u.researchers = true, []string{rtDormant}
		} else {
			for len(u.cats) < 3 {
				if c := rtCategories[rtRank(r, len(rtCategories), 1.5)]; !slices.Contains(u.cats, c) {
					u.cats = append(u.cats, c)
				}
			}
			u.researchers = []string{rtResearcher(r, rtResearchers), rtResearcher(r, rtResearchers)}
			if i%rtSearchEvery != 0 {
				for n := min(1+r.IntN(3), len(searches)); len(u.searches) < n; {
					// Skewed: a few searches have many users.
					if q := searches[rtRank(r, len(searches), 1.2)]; !slices.Contains(u.searches, q) {
						u.searches = append(u.searches, q)
					}
				}
			}
			if i%rtChannelEvery == 3 {
				u.topic = rtTopics[(i/rtChannelEvery)%len(rtTopics)]
				if !slices.Contains(u.cats, u.topic) {
					u.cats = append(u.cats, u.topic)
				}
			}
		}
		users[i] = u
	}
	err := forEach(ctx, 8, len(users), func(i int) error {
		u := users[i]
		var err error
		if u.token, err = mint(u.sub, u.email); err != nil {
			return err
		}
		for _, cat := range u.cats {
			if _, err := c.must(ctx, "PUT", "/v1/me/follows/category/"+cat, u.token, nil, 201, 200); err != nil {
				return err
			}
		}
		for _, id := range u.researchers {
			if _, err := c.must(ctx, "PUT", "/v1/me/follows/researcher/"+id, u.token, nil, 201, 200); err != nil {
				return err
			}
		}
		for _, q := range u.searches {
			if _, err := c.must(ctx, "PUT", "/v1/me/follows/query/"+url.PathEscape(q), u.token, nil, 201, 200); err != nil {
				return err
			}
		}
		freq := "daily"
		if u.instant {
			freq = "instant"
		}
		if _, err := c.must(ctx, "PATCH", "/v1/me", u.token, map[string]any{"digest": map[string]any{"frequency": freq, "hour": 7}}, 200); err != nil {
			return err
		}
		if u.topic != "" {
			r, err := c.must(ctx, "POST", "/v1/me/channels", u.token, map[string]any{"type": "webhook", "url": receiver + "/" + u.sub, "mode": "daily",
				"follows": []map[string]string{{"kind": "category", "id": u.topic}}}, 201)
			if err != nil {
				return err
			}
			var ch struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(r.body, &ch); err != nil || ch.ID == 0 {
				return fmt.Errorf("creating a channel: %s", r.body)
			}
			u.channel = ch.ID
		}
		return nil
	})
	return users, err
}

// rtSample is the users whose feeds are checked across the prune: the
// dormant ones and some others.
func rtSample(users []*rtUser) []*rtUser {
	var out []*rtUser
	for i, u := range users {
		if u.dormant || i%25 == 7 {
			out = append(out, u)
		}
	}
	return out
}

// rtYear is what the year's load wrote.
type rtYear struct {
	papers, keys, ledger, events, jobs, writes int64
	channelPapers                              int64
	hits, hitRows                              int64 // query matches and their search_hits rows
	identities, identityKeys                   int64 // researchers the host registered, and their ids
	mid                                        []rtSize
	midPapers                                  int64 // papers at mid-year (mid's measurement)
	lastSeq                                    int64
	today                                      []paper.Paper // today's papers, pushed through the API after the prune
	perDay                                     map[string]float64
}

// rtLoadYear writes the simulated year through the owners' loaders.
func rtLoadYear(ctx context.Context, e *env, db *freshDB, users []*rtUser, day0 time.Time, vocab *bench.Vocabulary) (*rtYear, error) {
	// Ids of the users, by subject.
	rows, err := db.pool.Query(ctx, `SELECT sub, id FROM users`)
	if err != nil {
		return nil, err
	}
	ids := map[string]int64{}
	var sub string
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&sub, &id}, func() error { ids[sub] = id; return nil }); err != nil {
		return nil, err
	}
	for _, u := range users {
		if u.id = ids[u.sub]; u.id == 0 {
			return nil, fmt.Errorf("user %s not stored", u.sub)
		}
	}
	y := &rtYear{perDay: map[string]float64{}}
	r := rand.New(rand.NewPCG(e.opts.Seed, 2028))
	// Titles and abstracts: a pool drawn once from the bench's vocabulary
	// (realistic words and lengths, 1.2 KB a paper), reused: drawing each
	// of the year's papers anew took most of the load's time.
	text := rand.New(rand.NewPCG(e.opts.Seed, 2029))
	texts := make([][2]string, 4096)
	for i := range texts {
		texts[i][0], texts[i][1] = vocab.Paper(text)
	}
	gen := func(d int, day time.Time, n int, counter *int) []paper.Paper {
		out := make([]paper.Paper, n)
		for i := range out {
			*counter++
			p := paper.Paper{ArxivID: fmt.Sprintf("%s.%05d", day.Format("0601"), *counter), SubmittedAt: day.Add(-24 * time.Hour), AnnouncedAt: day}
			t := texts[r.IntN(len(texts))]
			p.Title, p.Abstract = t[0], t[1]
			p.PrimaryCategory = rtCategories[rtRank(r, len(rtCategories), 1.5)]
			p.Categories = []string{p.PrimaryCategory}
			for _, share := range []float64{0.6, 0.3} {
				if c := rtCategories[r.IntN(len(rtCategories))]; r.Float64() < share && !slices.Contains(p.Categories, c) {
					p.Categories = append(p.Categories, c)
				}
			}
			for range 4 {
				id := rtResearcher(r, rtPool(d))
				p.Authors = append(p.Authors, paper.Author{Name: "Researcher " + strings.TrimPrefix(id, "s2:"), IDs: []string{id}})
			}
			out[i] = p
		}
		return out
	}
	var seqAt struct {
		seqs []int64
		ats  []time.Time
	}
	var ledger []notify.LedgerRow
	var now atomic.Pointer[time.Time] // the simulated clock harvest.Health reads
	health := harvest.NewHealth(&database.DB{Pool: db.pool}, nil, nil, func() time.Time { return *now.Load() })
	month, counter := "", 0
	prevEnd := int64(0)
	var bulkTook, chanTook, idTook time.Duration
	registered := make([]bool, rtResearchers+1)
	for d := range rtDays + 1 {
		day := day0.AddDate(0, 0, d)
		if m := day.Format("0601"); m != month {
			month, counter = m, 0
		}
		papers := gen(d, day, rtPapersPerDay, &counter)
		if d < 30 { // the dormant researcher's papers: the first month only
			papers[0].Authors = append(papers[0].Authors, paper.Author{Name: "Dormant Researcher", IDs: []string{rtDormant}})
		}
		if d == rtDays { // today: pushed through the API after the prune
			y.today = papers
			break
		}
		var writeEnds []int64
		t0 := time.Now()
		for w, chunk := range rtChunks(papers, rtWritesPerDay) {
			tx, err := db.pool.Begin(ctx)
			if err != nil {
				return nil, err
			}
			br, err := catalog.BulkLoadMatching(ctx, tx, slices.Values(chunk), catalog.SourceOAI)
			if err == nil {
				err = tx.Commit(ctx)
			}
			if err != nil {
				_ = tx.Rollback(ctx)
				return nil, err
			}
			y.papers += int64(br.Papers)
			y.keys += int64(br.Keys)
			y.hits, y.hitRows = y.hits+int64(br.Hits), y.hitRows+int64(br.HitRows)
			y.writes++
			seqAt.seqs = append(seqAt.seqs, br.ToSeq)
			seqAt.ats = append(seqAt.ats, day.Add(time.Duration(w)*3*time.Hour))
			writeEnds = append(writeEnds, br.ToSeq)
		}
		bulkTook += time.Since(t0)
		// The host registers the day's new researchers.
		t0 = time.Now()
		if err := rtRegister(ctx, db, papers, registered, y); err != nil {
			return nil, err
		}
		idTook += time.Since(t0)
		noon := day.Add(12 * time.Hour)
		now.Store(&noon)
		health.RecordPush(ctx, len(papers), nil)
		// The day's ledgers.
		for i, u := range users {
			email := u.email
			if u.instant {
				for k := range rtAlertsPerDay {
					from, to := prevEnd, writeEnds[(k+1)*rtWritesPerDay/rtAlertsPerDay-1]
					if k > 0 {
						from = writeEnds[k*rtWritesPerDay/rtAlertsPerDay-1]
					}
					ledger = append(ledger, rtLedgerRow(u.id, fmt.Sprintf("instant:%d-%d", from, to), notify.Instant, from, to, email,
						day.Add(time.Duration(k)*6*time.Hour+10*time.Minute), r))
				}
				continue
			}
			ledger = append(ledger, rtLedgerRow(u.id, "daily:"+day.Format(time.DateOnly), notify.Daily, prevEnd, writeEnds[len(writeEnds)-1], email,
				day.Add(7*time.Hour+time.Duration(i)*time.Second), r))
		}
		prevEnd = writeEnds[len(writeEnds)-1]
		t0 = time.Now()
		n, np, err := rtChannelDay(ctx, db.pool, users, papers, day)
		chanTook += time.Since(t0)
		if err != nil {
			return nil, err
		}
		y.events, y.channelPapers = y.events+int64(n), y.channelPapers+int64(np)
		if d%60 == 59 {
			e.logf("retention: %d days loaded (%d papers)", d+1, y.papers)
		}
		if d == rtDays/2-1 { // mid-year: what the papers' tables hold
			if y.mid, err = rtMeasureTables(ctx, db.pool, rtPaperTables); err != nil {
				return nil, err
			}
			y.midPapers = y.papers
		}
	}
	y.lastSeq = prevEnd
	e.logf("retention: papers written in %s (%d search hits in %d rows), %d researchers registered in %s, channel events in %s",
		secs(bulkTook), y.hits, y.hitRows, y.identities, secs(idTook), secs(chanTook))
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	// In the order they were made, as the sequence numbers a running
	// service's rows (the ledger's prune reads ids as growing with
	// created_at: digests_pkey from the start up to the cutoff).
	slices.SortStableFunc(ledger, func(a, b notify.LedgerRow) int { return a.At.Compare(b.At) })
	n, err := notify.PutLedger(ctx, tx, slices.Values(ledger))
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	y.ledger = int64(n)
	// Aging on purpose: each write of key rows happened on its day (the
	// loader dates it now).
	if _, err := db.pool.Exec(ctx, `
		UPDATE key_seq_times k SET at = v.at FROM unnest($1::bigint[], $2::timestamptz[]) AS v(seq, at) WHERE k.to_seq = v.seq`,
		seqAt.seqs, seqAt.ats); err != nil {
		return nil, err
	}
	// A year of River's finished jobs, in the soak's own SQL: no product
	// path finishes a job in the past. Each kind as often as the service
	// runs it at the default intervals; one job a day discarded and one a
	// week cancelled (what an operator would look at).
	kinds, queues, per := []string{}, []string{}, []int{}
	for _, j := range rtJobsPerDay {
		kinds, queues, per = append(kinds, j.kind), append(queues, j.queue), append(per, j.n)
	}
	jobsStart := time.Now()
	tag, err := db.pool.Exec(ctx, `
		INSERT INTO river.river_job (state, attempt, max_attempts, attempted_at, created_at, finalized_at, scheduled_at, args, kind, queue, attempted_by)
		SELECT CASE WHEN k.n = 1 AND j = 0 THEN 'discarded' WHEN k.n = 2 AND j = 0 AND d % 7 = 0 THEN 'cancelled' ELSE 'completed' END::river.river_job_state,
		       1, 3, t, t, t + interval '40 milliseconds', t, '{}', k.kind, k.queue, ARRAY['soak']
		FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS k(kind, queue, per_day, n)
		CROSS JOIN generate_series(0, $4 - 1) AS d
		CROSS JOIN LATERAL generate_series(0, k.per_day - 1) AS j
		CROSS JOIN LATERAL (SELECT $5::timestamptz + d * interval '1 day' + j * (interval '1 day' / k.per_day)) AS x(t)`,
		kinds, queues, per, rtDays, day0)
	if err != nil {
		return nil, fmt.Errorf("writing River's finished jobs: %w", err)
	}
	y.jobs = tag.RowsAffected()
	e.logf("retention: %d River jobs written in %s", y.jobs, secs(time.Since(jobsStart)))
	for _, t := range []string{"papers", "paper_keys", "key_seq_times", "digests", "channel_events", "channel_papers", "harvest_days", "river_job"} {
		y.perDay[t] = 0
	}
	y.perDay["papers"] = rtPapersPerDay
	y.perDay["key_seq_times"] = rtWritesPerDay
	y.perDay["digests"] = float64(y.ledger) / rtDays
	y.perDay["channel_events"] = float64(y.events) / rtDays
	y.perDay["channel_papers"] = float64(y.channelPapers) / rtDays
	y.perDay["harvest_days"] = 1
	y.perDay["river_job"] = float64(rtJobsADay())
	return y, nil
}

// rtChunks splits papers into n nearly equal chunks.
func rtChunks(papers []paper.Paper, n int) [][]paper.Paper {
	var out [][]paper.Paper
	for i := range n {
		out = append(out, papers[i*len(papers)/n:(i+1)*len(papers)/n])
	}
	return out
}

// rtLedgerRow is a final ledger row as a send leaves it: mostly sent, a
// few skipped (nothing new) or refused.
func rtLedgerRow(user int64, period string, kind notify.Frequency, from, to int64, email string, at time.Time, r *rand.Rand) notify.LedgerRow {
	row := notify.LedgerRow{UserID: user, Period: period, Kind: kind, State: notify.StateSent, FromSeq: from, ToSeq: to, Email: email,
		MessageID: fmt.Sprintf("<%x.%d@soak.example>", r.Uint64(), user), Papers: 5 + r.IntN(40),
		Reply: fmt.Sprintf("250 2.0.0 Ok: queued as %X", r.Uint32()), At: at}
	switch x := r.Float64(); {
	case x < 0.03:
		row.State, row.MessageID, row.Papers, row.Reply = notify.StateSkipped, "", 0, "nothing new"
	case x < 0.035:
		row.State, row.Reply = notify.StateFailed, "550 5.1.1 mailbox unavailable"
	}
	return row
}

// rtChannelDay writes the day's delivered event of every channel: the
// day's papers of its topic.
func rtChannelDay(ctx context.Context, pool *pgxpool.Pool, users []*rtUser, papers []paper.Paper, day time.Time) (loaded, sent int, err error) {
	byTopic := map[string][]paper.Paper{}
	var arxiv []string
	for _, p := range papers {
		for _, c := range p.Categories {
			if slices.Contains(rtTopics, c) {
				byTopic[c] = append(byTopic[c], p)
				arxiv = append(arxiv, p.ArxivID)
			}
		}
	}
	rows, err := pool.Query(ctx, `SELECT arxiv_id, id FROM papers WHERE arxiv_id = ANY($1)`, arxiv)
	if err != nil {
		return 0, 0, err
	}
	ids := map[string]int64{}
	var a string
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&a, &id}, func() error { ids[a] = id; return nil }); err != nil {
		return 0, 0, err
	}
	var events []channels.BulkEvent
	for _, u := range users {
		ps := byTopic[u.topic]
		if u.channel == 0 || len(ps) == 0 {
			continue
		}
		for chunk := range slices.Chunk(ps, channels.PapersPerEvent) {
			ev := channels.BulkEvent{ChannelID: u.channel, At: day.Add(7 * time.Hour)}
			for _, p := range chunk {
				pj := channels.PaperJSON{ArxivID: p.ArxivID, Title: p.Title, Abstract: p.Abstract, Categories: p.Categories,
					Links:   channels.LinksJSON{Abs: "https://arxiv.org/abs/" + p.ArxivID, PDF: "https://arxiv.org/pdf/" + p.ArxivID},
					Reasons: []channels.Reason{{Kind: "category", ID: u.topic, Name: u.topic}}}
				for _, au := range p.Authors {
					pj.Authors = append(pj.Authors, au.Name)
				}
				ev.Papers, ev.PaperIDs = append(ev.Papers, pj), append(ev.PaperIDs, ids[p.ArxivID])
				sent++
			}
			events = append(events, ev)
		}
	}
	if len(events) == 0 {
		return 0, 0, nil
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	n, err := channels.BulkLoadLedger(ctx, tx, slices.Values(events))
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
	}
	return n, sent, err
}

// rtPaperTables are the tables that grow with the papers kept, measured
// at mid-year too.
var rtPaperTables = []string{"papers", "paper_keys", "search_hits", "paper_search_hits", "identities", "identity_keys"}

// rtRegister registers, as the host does, the researchers of papers not
// registered yet (registered, by s2 number): an identity with its s2 and
// host ids, and an OpenAlex id for every other one.
func rtRegister(ctx context.Context, db *freshDB, papers []paper.Paper, registered []bool, y *rtYear) error {
	var recs []identity.Record
	for _, p := range papers {
		for _, a := range p.Authors {
			for _, id := range a.IDs {
				n, err := strconv.Atoi(strings.TrimPrefix(id, "s2:"))
				if err != nil || n >= len(registered) || registered[n] {
					continue
				}
				registered[n] = true
				rec := identity.Record{Kind: follow.Researcher, Name: fmt.Sprintf("Researcher %d", n), IDs: []string{id, fmt.Sprintf("host:%d", n)}}
				if n%2 == 0 {
					rec.IDs = append(rec.IDs, fmt.Sprintf("openalex:A%d", n))
				}
				recs = append(recs, rec)
				y.identityKeys += int64(len(rec.IDs))
			}
		}
	}
	if len(recs) == 0 {
		return nil
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	n, err := identity.BulkLoad(ctx, tx, slices.Values(recs), identity.SourceHost)
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return fmt.Errorf("registering %d researchers: %w", len(recs), err)
	}
	y.identities += int64(n)
	return nil
}
