package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/paper"
	"followfeed/search"
)

// Queries are added at measure time, like the late identity links:
// the generated dataset has none, and RemoveSearches takes them off again
// at the end of the run, so the dataset stays at scale S.

// DefaultSearchSizes are the numbers of distinct queries the match
// cost is measured at (0 is the batch without searches); 100,000 is the
// target's.
var DefaultSearchSizes = []int{0, 10_000, 30_000, 100_000}

// searchesPerSampleUser is how many of the searches each sampled user
// follows, so that the measured feeds include query keys.
const searchesPerSampleUser = 3

// SearchCategories returns the followed categories with their follower
// counts: drawn searches' cat: filters are weighted like the follows.
func SearchCategories(ctx context.Context, db *database.DB) ([]WeightedCategory, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT substr(key, 10), followers FROM follow_counts
		WHERE key >= 'category:' AND key < 'category;' AND followers > 0 ORDER BY key`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WeightedCategory, error) {
		var c WeightedCategory
		return c, r.Scan(&c.ID, &c.Followers)
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("no category follows to weigh cat: filters by")
	}
	return out, err
}

// AddSearches makes searches[i] a query (a follow of kind query)
// of followers[i], with its follow count, and bumps those users' feeds,
// in one transaction: what follow.Service.Follow writes, through the
// owners' bulk functions (follow.BulkLoad, follow.Recount,
// account.BumpFeeds), without the backfill (the dataset's papers have no
// text a search could match). A follower following the same search twice
// follows it once.
func AddSearches(ctx context.Context, db *database.DB, searches []string, followers []int64) error {
	seen := make(map[follow.BulkFollow]bool, len(searches))
	var fs []follow.BulkFollow
	keys := make([]string, len(searches))
	for i, s := range searches {
		f := follow.BulkFollow{UserID: followers[i], Target: follow.Target{Kind: follow.Query, ID: s}}
		keys[i] = f.Target.Key()
		if !seen[f] {
			seen[f] = true
			fs = append(fs, f)
		}
	}
	return db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := follow.BulkLoad(ctx, tx, slices.Values(fs)); err != nil {
			return fmt.Errorf("adding %d queries: %w", len(fs), err)
		}
		if err := follow.Recount(ctx, tx, keys); err != nil {
			return fmt.Errorf("counting the followers of %d queries: %w", len(searches), err)
		}
		return account.BumpFeeds(ctx, tx, distinct(followers)...)
	})
}

func distinct(ids []int64) []int64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}

// RemoveSearches deletes every query (follow.RemoveKind: the
// follows, their counts, their followers' feed bumps) and its matches
// (catalog.RemoveSearchHits): the dataset has none of its own, so this
// also takes off the benchmark's leftovers of an interrupted run.
func RemoveSearches(ctx context.Context, db *database.DB) error {
	ctx = context.WithoutCancel(ctx)
	return db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := follow.RemoveKind(ctx, tx, follow.Query); err != nil {
			return err
		}
		_, err := catalog.RemoveSearchHits(ctx, tx)
		return err
	})
}

// SearchRun is the batch's ingest and match job with one number of
// queries followed.
type SearchRun struct {
	Searches int
	// Ingest and Match are the fastest of the repetitions (a shared
	// machine adds, it never subtracts); All lists every repetition.
	Ingest, Match time.Duration
	All           []MatchResult
	// QueryKeys are the query matches the ingest wrote (papers in
	// search_hits rows), QueryRows those rows, QueryKeyed the distinct
	// searches among them.
	QueryKeys, QueryRows, QueryKeyed int
	// Warmup is the first ingest after the searches were added, of one
	// paper: it parses the searches not yet compiled.
	Warmup time.Duration
	// Evaluate is search.Set.Match over the batch's docs in this process,
	// Docs building those docs: the in-Go part of the ingest.
	Evaluate, Docs time.Duration
	Load           string
}

// SearchResult reports MeasureSearches.
type SearchResult struct {
	Mix  SearchMix
	Runs []SearchRun
	// Feed renders of the sampled users before any search was followed
	// and with all of them, each following searchesPerSampleUser.
	RenderBefore, RenderAfter [2]time.Duration // p50, p99
	RenderLoad                [2]string
	FeedQueryItems            int // feed items the sampled users got through a search
	Sampled                   int // users whose feeds were rendered
	Vocabulary                string
}

// loadAvg is the machine's load average (1, 5, 15 minutes), as /proc has it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// MeasureSearches measures the batch against growing numbers of
// queries (SearchSizes, each repeated reps times), then the sampled
// users' feeds with searches among their follows. It expects the batch
// stored (MeasureMatch) and no queries; it leaves the batch stored
// and removes the searches (deferred, also on error).
func MeasureSearches(ctx context.Context, d Deps, s Scale, v *Vocabulary, batch []paper.Paper, sample []int64, reps int) (*SearchResult, error) {
	res := &SearchResult{Sampled: len(sample), Vocabulary: v.String()}
	paths, err := feedPaths(ctx, d, sample)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(d.Log, "bench: feeds of the sampled users before queries")
	res.RenderLoad[0] = loadAvg()
	if res.RenderBefore, err = renderPercentiles(d, paths); err != nil {
		return nil, err
	}
	cats, err := SearchCategories(ctx, d.DB)
	if err != nil {
		return nil, err
	}
	sizes := d.SearchSizes
	if len(sizes) == 0 {
		sizes = DefaultSearchSizes
	}
	sizes = slices.Sorted(slices.Values(sizes))
	if sizes[0] != 0 {
		sizes = append([]int{0}, sizes...)
	}
	largest := sizes[len(sizes)-1]
	fmt.Fprintf(d.Log, "bench: drawing %d queries\n", largest)
	searches, mix := DrawSearches(v, cats, s.Researchers, previewDocs(v, s, 3000, 2), largest, 3)
	res.Mix = mix
	if len(searches) < largest {
		return nil, fmt.Errorf("drew only %d distinct searches of %d", len(searches), largest)
	}
	all, err := SampleUsers(ctx, d.DB, s.Users)
	if err != nil {
		return nil, err
	}
	// The sampled users follow the first searches, three each; the rest
	// go to users spread over the table.
	followers := make([]int64, len(searches))
	for i := range followers {
		if i < searchesPerSampleUser*len(sample) {
			followers[i] = sample[i/searchesPerSampleUser]
		} else {
			followers[i] = all[(i*7919)%len(all)]
		}
	}
	defer func() {
		if err := RemoveSearches(ctx, d.DB); err != nil {
			fmt.Fprintf(d.Log, "bench: removing the queries: %v\n", err)
		}
		_, _ = d.DB.Pool.Exec(context.WithoutCancel(ctx), "VACUUM ANALYZE follows, follow_counts")
	}()
	docs := make([]*search.Doc, len(batch))
	for i := range batch {
		p := batch[i]
		if fe := p.Normalize(true); fe != nil {
			return nil, fmt.Errorf("batch paper %d: %s: %s", i, fe.Field, fe.Reason)
		}
		docs[i] = p.Doc()
	}
	RemoveBatch(ctx, d.DB)
	added := 0
	for _, n := range sizes {
		if n > added {
			if err := AddSearches(ctx, d.DB, searches[added:n], followers[added:n]); err != nil {
				return nil, err
			}
			added = n
			if _, err := d.DB.Pool.Exec(ctx, "ANALYZE follows, follow_counts"); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(d.Log, "bench: the batch against %d queries\n", n)
		run := SearchRun{Searches: n, Load: loadAvg()}
		// One paper first: its ingest compiles the new searches.
		start := time.Now()
		if _, err := d.Papers.Ingest(ctx, batchPapers(1, s, v, 99), catalog.SourcePush); err != nil {
			return nil, err
		}
		run.Warmup = time.Since(start)
		RemoveBatch(ctx, d.DB)
		for range reps {
			mr, err := MeasureMatch(ctx, d.DB, d.Papers, d.Matcher, batch)
			if err != nil {
				return nil, fmt.Errorf("the batch against %d searches: %w", n, err)
			}
			if err := d.DB.Pool.QueryRow(ctx, `SELECT coalesce(sum(cardinality(paper_ids)), 0), count(*), count(DISTINCT key)
				FROM search_hits WHERE seq BETWEEN $1 AND $2`, mr.FromSeq, mr.ToSeq).
				Scan(&run.QueryKeys, &run.QueryRows, &run.QueryKeyed); err != nil {
				return nil, err
			}
			run.All = append(run.All, mr)
			if run.Ingest == 0 || mr.Ingest < run.Ingest {
				run.Ingest = mr.Ingest
			}
			if run.Match == 0 || mr.Match < run.Match {
				run.Match = mr.Match
			}
			if n < largest || len(run.All) < reps {
				RemoveBatch(ctx, d.DB)
			}
		}
		// The ingest's evaluation, alone: the same searches (compiled
		// into a set as the ingest keeps them) and docs.
		var sb search.SetBuilder
		for _, norm := range searches[:n] {
			q, err := follow.CompileQuery(norm)
			if err != nil {
				return nil, err
			}
			sb.Add(q)
		}
		set := sb.Set()
		start = time.Now()
		for i := range batch {
			_ = batch[i].Doc()
		}
		run.Docs = time.Since(start)
		start = time.Now()
		set.Match(docs)
		run.Evaluate = time.Since(start)
		res.Runs = append(res.Runs, run)
	}
	// The batch stays, with its query keys: the feeds of the sampled
	// users include them.
	for _, t := range []string{"user_feeds", "papers", "paper_keys", "search_hits", "paper_search_hits"} {
		if _, err := d.DB.Pool.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return nil, err
		}
	}
	if err := d.DB.Pool.QueryRow(ctx, `
		SELECT count(*) FROM follows f JOIN LATERAL (
			SELECT 1 FROM search_hits h CROSS JOIN LATERAL unnest(h.paper_ids) u
			WHERE h.key = f.key ORDER BY h.seq DESC LIMIT 50) k ON true
		WHERE f.kind = 'query' AND f.user_id = ANY($1)`, sample).Scan(&res.FeedQueryItems); err != nil {
		return nil, err
	}
	fmt.Fprintln(d.Log, "bench: feeds of the sampled users with queries")
	res.RenderLoad[1] = loadAvg()
	if res.RenderAfter, err = renderPercentiles(d, paths); err != nil {
		return nil, err
	}
	return res, nil
}

func feedPaths(ctx context.Context, d Deps, users []int64) (FeedURLs, error) {
	var paths FeedURLs
	for _, u := range users {
		tok, err := d.Tokens.Token(ctx, u)
		if err != nil {
			return nil, err
		}
		paths = append(paths, "/feeds/"+tok+".atom")
	}
	return paths, nil
}

func renderPercentiles(d Deps, paths FeedURLs) ([2]time.Duration, error) {
	ds, _, err := MeasureRender(d.Handler, paths)
	if err != nil {
		return [2]time.Duration{}, err
	}
	p50, p99 := Percentiles(ds)
	return [2]time.Duration{p50, p99}, nil
}

// searchFigures turns MeasureSearches' result into the report's figures,
// their "how measured" text and the growth table.
func searchFigures(res *SearchResult, batchPapers int) (figs []Figure, details []string, section string) {
	base := res.Runs[0]
	baseCost := base.Ingest + base.Match
	last := res.Runs[len(res.Runs)-1]
	addedCost := func(r SearchRun) time.Duration { return r.Ingest + r.Match - baseCost }
	figs = append(figs, Figure{
		Name:   fmt.Sprintf("%d distinct queries against the 5,000-paper batch: ingest + match job, added to the same without searches", last.Searches),
		Target: "≤ 2 s",
		Result: fmt.Sprintf("+%.2f s (%.2f + %.2f s vs %.2f + %.2f s; %d matches in %d search_hits rows)", addedCost(last).Seconds(),
			last.Ingest.Seconds(), last.Match.Seconds(), base.Ingest.Seconds(), base.Match.Seconds(), last.QueryKeys, last.QueryRows),
		Pass: addedCost(last) <= 2*time.Second,
	})
	var series []string
	for _, r := range res.Runs[1:] {
		series = append(series, fmt.Sprintf("%dk: +%.2f s", r.Searches/1000, addedCost(r).Seconds()))
	}
	figs = append(figs, Figure{Name: "the same, by number of queries", Target: "—", Result: strings.Join(series, ", "), Pass: true})
	before, after := res.RenderBefore, res.RenderAfter
	limit := max(before[1]*11/10, before[1]+time.Millisecond)
	figs = append(figs, Figure{
		Name:   fmt.Sprintf("private feed, full render, users following %d queries each", searchesPerSampleUser),
		Target: "p99 unchanged (≤ 110% of the same users' without)",
		Result: fmt.Sprintf("p50 %s, p99 %s (without: p50 %s, p99 %s)", ms(after[0]), ms(after[1]), ms(before[0]), ms(before[1])),
		Pass:   after[1] <= limit,
	})
	m := res.Mix
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(m.Searches, 1)) }
	details = append(details,
		fmt.Sprintf("Queries: %d distinct, drawn (seeded) from the word distribution of the batch's text (see `bench/vocab.go`: %s) and parsed by the real parser (`follow.CompileQuery`; it refused %d drafts): "+
			"terms 1/2/3/4: %.0f/%.0f/%.0f/%.0f%%, %.2f on average; %.0f%% with a cat: filter (%.0f%% of those two categories OR'ed), categories weighted by their followers; "+
			"%.0f%% with a \"phrase\", %.0f%% with an -exclusion, %.0f%% with (a OR b), %.0f%% with ti:/abs:, %.0f%% with au:; %d distinct words. "+
			"Each draft is tried on a preview of 3,000 other papers drawn like the batch's (the product's `GET /v1/search/preview`): one matching more than %.0f%% of them (a mid-size category's flow) gets another term, as a user tunes it (%d were refined, %d dropped at four terms). "+
			"As first drawn they matched %.2f%% of the preview on average (about %.0f query key rows per batch at this number), as followed %.3f%%.",
			m.Searches, res.Vocabulary, m.Refused, pct(m.Terms[1]), pct(m.Terms[2]), pct(m.Terms[3]), pct(m.Terms[4]), m.TermsPerSearch,
			pct(m.Cat), 100*float64(m.CatOr)/float64(max(m.Cat, 1)), pct(m.Phrase), pct(m.Negation), pct(m.Or), pct(m.Field), pct(m.Author), m.DistinctWords,
			100*MaxShare, m.Refined, m.Abandoned, 100*m.DraftShare, m.DraftShare*float64(batchPapers*m.Searches), 100*m.FinalShare),
		fmt.Sprintf("Query match: each number of searches is added as follows (kind query, one user each; the %d sampled users of the feed figures follow %d each) with their follow counts, "+
			"then one 1-paper ingest compiles them (the product's compiled-search cache, as after a restart), then the 5,000-paper batch goes through the real `catalog.Store.Ingest` "+
			"(which evaluates it against every followed query, compiled into one `search.Set` kept between batches, with `Set.Match`, and writes one `search_hits` row per query with a match, listing its papers, in the ingest's transaction) and `match.Service.RunBatch`; "+
			"the batch is deleted between repetitions, the fastest of each is reported; with 100k searches the batch stays for the feed renders. The searches are deleted at the end of the run.",
			res.Sampled, searchesPerSampleUser),
		fmt.Sprintf("Feeds with queries: the sampled users' full renders (as above) before any search was followed (load %s) and with all %d followed and the batch's query keys stored (load %s); "+
			"their %d query follows had %d matched papers in all (at most 50 counted per follow).", res.RenderLoad[0], last.Searches, res.RenderLoad[1],
			searchesPerSampleUser*res.Sampled, res.FeedQueryItems))
	var b strings.Builder
	b.WriteString("## How the query cost grows\n\n")
	b.WriteString("| queries | matches | search_hits rows | searches with a match | ingest | match job | added to none | of which Set.Match (in Go) | building the docs | first ingest after adding (compiles) | load average |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %.2f s | %.2f s | %+.2f s | %s | %s | %s | %s |\n", r.Searches, r.QueryKeys, r.QueryRows, r.QueryKeyed,
			r.Ingest.Seconds(), r.Match.Seconds(), addedCost(r).Seconds(), ms(r.Evaluate), ms(r.Docs), ms(r.Warmup), r.Load)
	}
	if len(res.Runs) >= 3 {
		// added ≈ a + b·searches, least squares over the sizes with searches.
		var n, sx, sy, sxx, sxy float64
		for _, r := range res.Runs[1:] {
			x, y := float64(r.Searches), addedCost(r).Seconds()
			n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
		}
		slope := (n*sxy - sx*sy) / max(n*sxx-sx*sx, 1)
		icept := (sy - slope*sx) / n
		fmt.Fprintf(&b, "\nThe matches grow linearly with the searches (%.1f per search per %d papers here; %.0f per paper at %dk searches, against %.0f key rows per paper), "+
			"and so does the added cost: about %.2f s + %.1f µs per search (least squares over the sizes above). A search's matches of the batch are one `search_hits` row "+
			"(%d rows at %dk searches, %.1f papers each; `COPY`, one primary-key and one seq B-tree entry each) and each matched paper one `paper_search_hits` row; "+
			"the rest is the evaluation (`search.Set.Match`, timed alone over a set built beforehand as the ingest keeps it: a few bitset operations of %d/64 words per search, %s at %dk searches, %.1f µs per search), "+
			"building the batch's docs and the match job's extra keys (one per search with a match).\n",
			float64(last.QueryKeys)/float64(last.Searches), batchPapers, float64(last.QueryKeys)/float64(batchPapers), last.Searches/1000,
			float64(base.All[0].Keys)/float64(batchPapers), icept, slope*1e6, last.QueryRows, last.Searches/1000,
			float64(last.QueryKeys)/float64(max(last.QueryRows, 1)), batchPapers, ms(last.Evaluate), last.Searches/1000,
			float64(last.Evaluate.Microseconds())/float64(last.Searches))
	}
	return figs, details, b.String()
}
