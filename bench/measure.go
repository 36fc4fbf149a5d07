package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/notify"
	"followfeed/paper"
)

// Figure is one measured number beside its target.
type Figure struct {
	// Key names the figure across scales (the side-by-side report's row);
	// "" means Name does.
	Key    string
	Name   string
	Target string
	Result string
	// Value is the figure's number (seconds, a rate, a p99 in ms, a
	// share, MiB), what the side-by-side report divides for the ratio
	// between scales; 0 means the figure has none.
	Value float64
	Pass  bool
	Note  string
}

// untargeted reports whether the figure has no target ("—"): it is
// measured, not judged, and its verdict says so.
func (f Figure) untargeted() bool { return f.Target == "—" || f.Target == "" }

// key is the figure's row across scales.
func (f Figure) key() string {
	if f.Key != "" {
		return f.Key
	}
	return f.Name
}

// batchPapers makes n new papers drawn like the generated ones (skewed
// primary categories, cross-lists, four authors from the researcher pool)
// with ids no generated paper has, and titles and abstracts drawn from v
// (realistic words and lengths, so queries match them as they
// would real papers).
func batchPapers(n int, s Scale, v *Vocabulary, seed uint64) []paper.Paper {
	r := rand.New(rand.NewPCG(seed, 7))
	cats := []string{}
	seen := map[string]bool{}
	for _, id := range popular {
		if c, ok := follow.LookupCategory(id); ok && c.Active {
			cats, seen[id] = append(cats, c.ID), true
		}
	}
	for _, c := range follow.ActiveCategories() {
		if !seen[c.ID] {
			cats = append(cats, c.ID)
		}
	}
	rank := func(steep float64) int {
		k := int(math.Pow(float64(len(cats)), math.Pow(r.Float64(), steep)))
		return min(max(k, 1), len(cats)) - 1
	}
	// Text from its own stream, so the categories and authors are those
	// of the batch before it had realistic text.
	text := rand.New(rand.NewPCG(seed, 8))
	out := make([]paper.Paper, n)
	for i := range out {
		p := paper.Paper{
			ArxivID:     fmt.Sprintf("%s%05d", batchPrefix, i+1),
			SubmittedAt: time.Date(2029, 1, 2, 0, 0, 0, 0, time.UTC),
		}
		p.Title, p.Abstract = v.Paper(text)
		p.PrimaryCategory = cats[rank(1.5)]
		p.Categories = []string{p.PrimaryCategory}
		if r.Float64() < 0.6 {
			p.Categories = append(p.Categories, cats[r.IntN(len(cats))])
		}
		if r.Float64() < 0.3 {
			p.Categories = append(p.Categories, cats[r.IntN(len(cats))])
		}
		for range s.AuthorsPer {
			a := 1 + r.IntN(s.Researchers)
			if r.Float64() < 0.5 {
				a = max(int(math.Pow(float64(s.Researchers), r.Float64())), 1)
			}
			p.Authors = append(p.Authors, paper.Author{Name: fmt.Sprintf("Researcher %d", a), IDs: []string{fmt.Sprintf("s2:%d", a)}})
		}
		if r.Float64() < 0.5 {
			p.Institutions = []string{fmt.Sprintf("openalex:I%d", 1+r.IntN(5000))}
		}
		out[i] = p
	}
	return out
}

// batchPrefix begins the arXiv ids of batchPapers: a month after every
// generated paper's (papersPerMonth).
const batchPrefix = "2901."

// MatchResult holds the match-job measurement.
type MatchResult struct {
	Papers, Keys, DistinctKeys, Users int
	// Instant is how many users the benchmark gave instant alerts for
	// the measurement, InstantFollows how many follows instant_follows
	// then held (theirs: what the match job reads from, by key).
	Instant, InstantFollows int
	Ingest, Match           time.Duration
	FromSeq, ToSeq          int64 // the batch's key rows
}

// InstantShare is the share of the users with a confirmed address that
// MeasureMatch gives instant alerts for its measurement (the generated
// dataset has none): the match job's audience, whose follows it reads.
const InstantShare = 0.10

// MeasureMatch ingests a batch of new papers (batchPapers) through the real catalog.Store
// (papers, keys, match job insert in one transaction) and then runs the
// match job (m, wired as the product wires it: it reads the follows of the
// users with instant alerts or instant channels, instant_follows) over
// its keys, timing both. For the measurement, InstantShare of the users
// with a confirmed address who have no digest settings get instant alerts
// (listed in bench_instant and removed again by RemoveBatch). Call
// RemoveBatch afterwards so the dataset stays at its scale.
func MeasureMatch(ctx context.Context, db *database.DB, in *catalog.Store, m *match.Service, papers []paper.Paper) (MatchResult, error) {
	var res MatchResult
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_instant (user_id bigint PRIMARY KEY)`); err != nil {
			return err
		}
		// Who gets them is the benchmark's to choose (a read), and
		// bench_instant, its own table, remembers them for RemoveBatch.
		rows, err := tx.Query(ctx, `
			INSERT INTO bench_instant (user_id)
			SELECT id FROM users
			WHERE email_confirmed_at IS NOT NULL AND id % $1 = 0
			  AND NOT EXISTS (SELECT 1 FROM digest_schedules d WHERE d.user_id = users.id)
			RETURNING user_id`, int(math.Round(1/InstantShare)))
		if err != nil {
			return err
		}
		users, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		res.Instant, err = notify.PutDigestSettings(ctx, tx, users, notify.Instant, false)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("giving users instant alerts: %w", err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE digest_schedules; ANALYZE instant_follows`); err != nil {
		return res, err
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM instant_follows`).Scan(&res.InstantFollows); err != nil {
		return res, err
	}
	start := time.Now()
	ir, err := in.Ingest(ctx, papers, catalog.SourcePush)
	if err != nil {
		return res, err
	}
	res.Ingest = time.Since(start)
	res.Papers, res.Keys, res.FromSeq, res.ToSeq = ir.New, ir.Keys, ir.FromSeq, ir.ToSeq
	if ir.New != len(papers) {
		// The batch (or part of it) was stored already: another run on the
		// same database, whose figures and ours would both be wrong.
		return res, fmt.Errorf("%d of the batch's %d papers were new: is another benchmark using this database?", ir.New, len(papers))
	}
	start = time.Now()
	br, err := m.RunBatch(ctx, ir.FromSeq, ir.ToSeq, nil)
	if err != nil {
		return res, err
	}
	// The benchmark ran the match job itself: its queued copy must not run
	// later in a `serve` started by the benchmark.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM river.river_job WHERE kind IN ('match_batch', 'digest_instant', 'websub_publish')`); err != nil {
		return res, err
	}
	res.Match = time.Since(start)
	res.DistinctKeys, res.Users = br.Keys, len(br.Users)
	return res, nil
}

// RemoveBatch deletes what MeasureMatch added: the users' instant
// alerts (notify.DeleteSchedules: they had no settings before), the batch
// (catalog.DeletePrefix) and its jobs.
func RemoveBatch(ctx context.Context, db *database.DB) {
	ctx = context.WithoutCancel(ctx)
	_ = db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_instant (user_id bigint PRIMARY KEY)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM bench_instant RETURNING user_id`)
		if err != nil {
			return err
		}
		users, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		_, err = notify.DeleteSchedules(ctx, tx, users)
		return err
	})
	_ = db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := catalog.DeletePrefix(ctx, tx, batchPrefix)
		return err
	})
	// River's own table (package worker's): the match job MeasureMatch ran
	// itself and what its hooks queued.
	_, _ = db.Pool.Exec(ctx, `DELETE FROM river.river_job WHERE kind IN ('match_batch', 'digest_instant', 'websub_publish')`)
}

// SampleUsers returns n user ids spread evenly over the table.
func SampleUsers(ctx context.Context, db *database.DB, n int) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id FROM users ORDER BY id`)
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(all) <= n {
		return all, err
	}
	out := make([]int64, 0, n)
	step := float64(len(all)) / float64(n)
	for i := range n {
		out = append(out, all[int(float64(i)*step)])
	}
	return out, nil
}

// Percentiles returns p50 and p99 of ds.
func Percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(int(math.Ceil(q*float64(len(s))))-1, len(s)-1)] }
	return at(0.50), at(0.99)
}

// MeasureFeedQuery times match.Matched (50 newest items) for each user,
// twice: a warm-up pass, then the measured one.
func MeasureFeedQuery(ctx context.Context, m *match.Service, users []int64) ([]time.Duration, error) {
	var out []time.Duration
	for pass := range 2 {
		for _, u := range users {
			start := time.Now()
			if _, err := m.Matched(ctx, match.Query{UserID: u, Limit: 50}); err != nil {
				return nil, err
			}
			if pass == 1 {
				out = append(out, time.Since(start))
			}
		}
	}
	return out, nil
}
