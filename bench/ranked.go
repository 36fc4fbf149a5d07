package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/match"
	"followfeed/ranking"
	"followfeed/worker"
)

// The ranking's cost (issue 26): the ranked feed's full render, the first
// render of a user without a model (it trains one), a feedback click to an
// updated model, and (measureFeeds) the memory of `serve` while ranked
// feeds are polled. The generated dataset holds no feedback and no model:
// what these measurements give the users, RemoveRanking takes off again.

// RankedResult holds the ranked feed's measurement.
type RankedResult struct {
	// Paths are the users' ranked feeds (/feeds/{token}/best.atom).
	Paths FeedURLs
	// First are the first renders of the users who had no model (each
	// trains one from their follows), Renders the measured pass over every
	// user once each has one; Size is the measured bodies' average bytes.
	First, Renders []time.Duration
	Size           int
	// Papers is how many distinct papers the users' feeds hold, whose
	// vectors the warm-up made (with the process's corpus and the first
	// user's model) in Warm.
	Papers int
	Warm   time.Duration
}

// feedItems is how many items a feed shows (the feeds' default limit).
const feedItems = 50

// MeasureRanked times full renders of users' ranked feeds
// (/feeds/{token}/best.atom) through the real HTTP handler: the token
// lookup with the model's time, the feed query, ranking.Service.RankPapers
// (the user's model, the papers' vectors), each item's reasons (Batch.Why)
// and the Atom rendering. First the process's ranking corpus is built and
// the feeds' papers' vectors made, by ranking users[0]'s feed papers
// (ranking.Service.Rank, which trains users[0] a first model): untimed,
// as a running service has them. Then each user without a model gets a
// first render (which trains one: RankedResult.First), then a warm-up pass
// and the measured pass over all of them. The models stay: RemoveRanking
// takes them off.
func MeasureRanked(ctx context.Context, d Deps, users []int64) (*RankedResult, error) {
	if len(users) == 0 {
		return nil, fmt.Errorf("no users to rank for")
	}
	toks, err := d.Tokens.TokensMany(ctx, users)
	if err != nil {
		return nil, err
	}
	res := &RankedResult{}
	for _, u := range users {
		res.Paths = append(res.Paths, "/feeds/"+toks[u]+"/best.atom")
	}
	qs := make([]match.Query, len(users))
	for i, u := range users {
		qs[i] = match.Query{UserID: u, Limit: feedItems}
	}
	results, err := d.Matcher.MatchedMany(ctx, qs)
	if err != nil {
		return nil, err
	}
	seen := map[int64]bool{}
	var ids []int64
	for _, r := range results {
		for _, p := range r.Papers {
			if !seen[p.ID] {
				seen[p.ID] = true
				ids = append(ids, p.ID)
			}
		}
	}
	res.Papers = len(ids)
	start := time.Now()
	if _, err := d.Ranking.Rank(ctx, map[int64][]int64{users[0]: ids}, nil); err != nil {
		return nil, fmt.Errorf("warming the ranking up: %w", err)
	}
	res.Warm = time.Since(start)
	var first FeedURLs
	for i, u := range users {
		st, err := d.Tokens.LookupRanked(ctx, toks[u])
		if err != nil {
			return nil, err
		}
		if st.ModelAt.IsZero() {
			first = append(first, res.Paths[i])
		}
	}
	if res.First, _, err = renderPass(d.Handler, first); err != nil {
		return nil, fmt.Errorf("first renders: %w", err)
	}
	if res.Renders, res.Size, err = MeasureRender(d.Handler, res.Paths); err != nil {
		return nil, err
	}
	return res, nil
}

// ClickResult holds the feedback clicks' measurement.
type ClickResult struct {
	// Users clicked Rounds times each, each with History feedback rows
	// set (and a model trained on them) beforehand; Skipped users' feeds
	// held fewer papers than their history and clicks need.
	Users, Rounds, History, Skipped int
	// Per click: ranking.Service.Set, then ranking.Service.Train, and
	// both (Click).
	Set, Train, Click []time.Duration
}

// MeasureClicks times feedback clicks to an updated model: for each click
// ranking.Service.Set (the click's transaction: the feedback row, the
// count of the change, the rank_train job's insert) and then
// ranking.Service.Train (the job's body: the inputs in one snapshot, the
// followed persons' papers and the user's flow, training, the model
// stored), called directly, as the job would after River picked it up
// (the pickup is not timed). Each user's feed (the newest feedItems
// matched papers) gives the papers: history of its oldest get a value
// each (more, less, saved in turn) through Set, and the user's model is
// trained on them, untimed; then clicks rounds over the users click on
// the feed's newest papers. Users whose feeds hold fewer than history +
// clicks papers are skipped. A click that stores no new model is an
// error. The rows stay: RemoveRanking takes them off.
func MeasureClicks(ctx context.Context, r *ranking.Service, m *match.Service, users []int64, history, clicks int) (*ClickResult, error) {
	res := &ClickResult{History: history, Rounds: clicks}
	qs := make([]match.Query, len(users))
	for i, u := range users {
		qs[i] = match.Query{UserID: u, Limit: feedItems}
	}
	results, err := m.MatchedMany(ctx, qs)
	if err != nil {
		return nil, err
	}
	type clicker struct {
		user   int64
		papers []string // arXiv ids, newest match first
	}
	var cs []clicker
	for i, rs := range results {
		if len(rs.Papers) < history+clicks {
			res.Skipped++
			continue
		}
		c := clicker{user: users[i]}
		for _, p := range rs.Papers {
			c.papers = append(c.papers, p.ArxivID)
		}
		cs = append(cs, c)
	}
	res.Users = len(cs)
	for _, c := range cs {
		for j := range history {
			if _, err := r.Set(ctx, c.user, c.papers[len(c.papers)-1-j], ranking.Values[j%len(ranking.Values)]); err != nil {
				return nil, fmt.Errorf("feedback history of user %d: %w", c.user, err)
			}
		}
		if _, err := r.Train(ctx, c.user); err != nil {
			return nil, err
		}
	}
	for k := range clicks {
		for i, c := range cs {
			v := ranking.Values[(i+k)%len(ranking.Values)]
			start := time.Now()
			if _, err := r.Set(ctx, c.user, c.papers[k], v); err != nil {
				return nil, fmt.Errorf("user %d's click: %w", c.user, err)
			}
			set := time.Since(start)
			trained, err := r.Train(ctx, c.user)
			click := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("training user %d after a click: %w", c.user, err)
			}
			if !trained {
				return nil, fmt.Errorf("user %d's click (%s on %s) stored no new model", c.user, v, c.papers[k])
			}
			res.Set, res.Train, res.Click = append(res.Set, set), append(res.Train, click-set), append(res.Click, click)
		}
	}
	return res, nil
}

// RankedLoad polls ranked feeds (paths) on base, a running `serve`, from
// 16 keep-alive clients for d and returns the requests per second. One
// request goes first, alone: the process builds its ranking corpus on its
// first ranked request (seconds at scale M), which Throughput's clients
// would time out waiting for.
func RankedLoad(base string, paths FeedURLs, d time.Duration) (float64, error) {
	if len(paths) == 0 {
		return 0, fmt.Errorf("no ranked feed to poll")
	}
	c := &http.Client{Timeout: 5 * time.Minute}
	resp, err := c.Get(base + paths[0])
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d", redact(paths[0]), resp.StatusCode)
	}
	return Throughput(base, paths, nil, http.StatusOK, 16, d)
}

// RemoveRanking takes what the ranking measurements gave the dataset's
// users off again: every feedback row and model (ranking.RemoveAll; the
// generated dataset has none of its own) and the rank_train jobs their
// feedback queued (River's table, package worker's: jobs the measurement
// ran itself, which a `serve` started later must not run). It returns
// how many feedback rows and models it removed.
func RemoveRanking(ctx context.Context, db *database.DB) (feedback, models int, err error) {
	ctx = context.WithoutCancel(ctx)
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		if feedback, models, err = ranking.RemoveAll(ctx, tx); err != nil {
			return err
		}
		return removeTrainJobsIn(ctx, tx)
	})
	return feedback, models, err
}

// removeTrainJobs deletes every rank_train job (removeTrainJobsIn).
func removeTrainJobs(ctx context.Context, db *database.DB) error {
	return db.InTx(ctx, func(tx pgx.Tx) error { return removeTrainJobsIn(ctx, tx) })
}

// removeTrainJobsIn deletes every rank_train job, in tx: the jobs the
// measurements' feedback queued (only they queue any on the benchmark's
// dataset), whose work the measurement did itself.
func removeTrainJobsIn(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `DELETE FROM river.river_job WHERE kind = $1`, worker.RankTrainArgs{}.Kind())
	return err
}

// rankingFigures turns the ranking's measurements into the report's
// figures and their "how measured" text.
func rankingFigures(t Targets, rk *RankedResult, cl *ClickResult) ([]Figure, []string) {
	var figs []Figure
	p50, p99 := Percentiles(rk.Renders)
	figs = append(figs, Figure{Key: "ranked-render", Name: "ranked feed (best.atom), 50 items best first with their reasons, full render, server side", Target: "p99 ≤ " + msTarget(t.Ranked),
		Result: fmt.Sprintf("p50 %s, p99 %s (%d KiB)", ms(p50), ms(p99), rk.Size>>10), Value: msf(p99), Pass: len(rk.Renders) > 0 && p99 <= t.Ranked})
	f50, f99 := Percentiles(rk.First)
	first := Figure{Key: "ranked-first", Name: "the ranked feed's first render for a user without a model (trains it from their follows)", Target: "—",
		Result: fmt.Sprintf("p50 %s, p99 %s (%d users)", ms(f50), ms(f99), len(rk.First)), Value: msf(f99), Pass: true}
	if len(rk.First) == 0 {
		first.Result, first.Value = "no user without a model", 0
	}
	figs = append(figs, first)
	c50, c99 := Percentiles(cl.Click)
	s50, s99 := Percentiles(cl.Set)
	t50, t99 := Percentiles(cl.Train)
	click := Figure{Key: "click", Name: "a feedback click to an updated model (ranking.Service.Set, then Train: the rank_train job's body)", Target: "p99 ≤ " + msTarget(t.Click),
		Result: fmt.Sprintf("p50 %s, p99 %s (Set p99 %s, Train p99 %s; %d clicks)", ms(c50), ms(c99), ms(s99), ms(t99), len(cl.Click)), Value: msf(c99), Pass: c99 <= t.Click}
	if len(cl.Click) == 0 {
		click.Result, click.Value, click.Pass = fmt.Sprintf("no user's feed held %d papers", cl.History+cl.Rounds), 0, false
	}
	figs = append(figs, click)
	users := len(rk.Paths)
	details := []string{
		fmt.Sprintf("Ranked feed: `GET /feeds/{token}/best.atom` through the real HTTP handler in-process, for the %d users of the full render: the token lookup with the model's time "+
			"(`Tokens.LookupRanked`), the feed query, `ranking.Service.RankPapers` (the user's stored model, one statement; the papers' vectors), each item's reasons "+
			"(`Batch.Why`) and the Atom rendering; warm-up pass, then the measured pass, every user with a model. Before any render the process's ranking corpus "+
			"(the newest %d papers' word frequencies) is built and the vectors of the %d distinct papers of their feeds made, untimed (%.1f s), as a running service has them; "+
			"then each user without a model (%d) has a first render, which trains and stores one from their follows (`feeds.Service.FirstModel`, "+
			"`ranking.Service.Models`: the followed persons' newest papers, the user's flow, a background sample) before ranking: its own line, no target.",
			users, ranking.DefaultCorpusPapers, rk.Papers, rk.Warm.Seconds(), len(rk.First)),
		fmt.Sprintf("Feedback click: %d of those users (%d skipped: fewer than %d papers in their feed) each get %d feedback rows through `ranking.Service.Set` "+
			"on the oldest papers of their feed (more, less, saved in turn; %d rows) and a model trained on them, untimed; then %d rounds over the users click "+
			"on their feed's newest papers (a value in turn), each click timed from the start of `Set` (the click's transaction: the feedback row, the change counted in "+
			"`ranking_models`, the `rank_train` job inserted with `InsertTx`) to the end of `ranking.Service.Train` called directly (the job's body: the inputs in one "+
			"snapshot, the followed persons' papers and the user's flow, training, the model stored), %d clicks; Set p50 %s, Train p50 %s. Not timed: the wait for a River "+
			"worker to pick the job up (the job's fetch, which depends on the worker's load and River's fetch settings, not on the product's work). "+
			"The feedback, the models and the jobs are removed at the end (`ranking.RemoveAll`).",
			cl.Users, cl.Skipped, cl.History+cl.Rounds, cl.History, cl.Users*cl.History, cl.Rounds, len(cl.Click), ms(s50), ms(t50)),
	}
	return figs, details
}
