package bench

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/account"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/paper"
)

// The generator's loaders: the draws stay in the seeded session (g.draw),
// as they always were, so the dataset is the one earlier builds made; the
// rows they give are turned into the product's values (paper.Paper,
// account.BulkUser, follow.BulkFollow, identity.Record) and written by
// the tables' owners.

// drawn yields the rows of sql on conn, each read by scan. The first error
// (the query's, a scan's, the rows') is put in *errp and ends the rows; a
// consumer that stops early ends them too (the query is cancelled).
func drawn[T any](ctx context.Context, conn *pgxpool.Conn, errp *error, scan func(pgx.Rows) (T, error), sql string, args ...any) iter.Seq[T] {
	return func(yield func(T) bool) {
		qctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rows, err := conn.Query(qctx, sql, args...)
		if err != nil {
			*errp = err
			return
		}
		defer rows.Close()
		// Before Close: a consumer that stops early cancels the rest of
		// the query instead of reading it to its end.
		defer cancel()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				*errp = err
				return
			}
			if !yield(v) {
				return
			}
		}
		*errp = rows.Err()
	}
}

// prefetch yields seq's values, which a goroutine of its own reads ahead
// (up to two batches of n): the draw session computes and sends the next
// rows while the loader writes the last ones, two backends at work instead
// of one. When the consumer stops early the goroutine stops too; prefetch
// returns only after it ended, so what seq wrote (drawn's *errp) is then
// safe to read.
func prefetch[T any](seq iter.Seq[T], n int) iter.Seq[T] {
	return func(yield func(T) bool) {
		batches := make(chan []T, 2)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(batches)
			batch := make([]T, 0, n)
			send := func() bool {
				select {
				case batches <- batch:
					batch = make([]T, 0, n)
					return true
				case <-stop:
					return false
				}
			}
			for v := range seq {
				if batch = append(batch, v); len(batch) == n && !send() {
					return
				}
			}
			if len(batch) > 0 {
				send()
			}
		}()
		defer wg.Wait()
		defer close(stop)
		for b := range batches {
			for _, v := range b {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// planRow is a row of bench_plan: a paper's drawn ranks and authors.
type planRow struct {
	n, prim        int
	cross1, cross2 *int
	authors        []int32
	inst           *int
}

// papers loads the papers of bench_plan, in plan order: paper n's arXiv id
// is YYMM.NNNNN in month n / papersPerMonth from 2020-01, its categories
// the plan's ranks (a cross-list equal to the primary, or the second equal
// to the first, left out), its authors "Researcher a" with id s2:a, its
// institution openalex:I<inst> when drawn.
func (g *generator) papers(ctx context.Context, tx pgx.Tx) (int64, error) {
	monthly := papersPerMonth(g.s)
	every := time.Duration(2_400_000/monthly) * time.Second
	epoch := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	abstract := strings.Repeat("We study a problem of scale and measure it carefully; ", 40)
	abstract = abstract[:min(len(abstract), g.s.AbstractChars)]
	var drawErr error
	plan := drawn(ctx, g.draw, &drawErr, func(r pgx.Rows) (planRow, error) {
		var p planRow
		return p, r.Scan(&p.n, &p.prim, &p.cross1, &p.cross2, &p.authors, &p.inst)
	}, `SELECT n, prim, cross1, cross2, authors, inst FROM bench_plan ORDER BY n`)
	papers := func(yield func(paper.Paper) bool) {
		for r := range prefetch(plan, 5000) {
			aid := fmt.Sprintf("%02d%02d.%05d", 20+(r.n/monthly)/12, 1+(r.n/monthly)%12, r.n%monthly+1)
			at := epoch.Add(time.Duration(r.n) * every)
			prim := g.cats[r.prim-1]
			p := paper.Paper{ArxivID: aid, Version: 1, Title: fmt.Sprintf("Synthetic paper %d on %s", r.n, prim), Abstract: abstract,
				PrimaryCategory: prim, Categories: []string{prim}, SubmittedAt: at, UpdatedAt: at, AnnouncedAt: at,
				AbsURL: "https://arxiv.org/abs/" + aid, PDFURL: "https://arxiv.org/pdf/" + aid}
			if r.cross1 != nil && *r.cross1 != r.prim {
				p.Categories = append(p.Categories, g.cats[*r.cross1-1])
			}
			if r.cross2 != nil && *r.cross2 != r.prim && (r.cross1 == nil || *r.cross1 == r.prim || *r.cross2 != *r.cross1) {
				p.Categories = append(p.Categories, g.cats[*r.cross2-1])
			}
			p.Authors = make([]paper.Author, len(r.authors))
			for i, a := range r.authors {
				p.Authors[i] = paper.Author{Name: fmt.Sprintf("Researcher %d", a), IDs: []string{fmt.Sprintf("s2:%d", a)}}
			}
			if r.inst != nil {
				p.Institutions = []string{fmt.Sprintf("openalex:I%d", *r.inst)}
			}
			if !yield(p) {
				return
			}
		}
	}
	res, err := catalog.BulkLoad(ctx, tx, papers, catalog.SourcePush)
	fmt.Fprintf(g.log, "  %-28s %9d rows\n", "(paper keys)", res.Keys)
	return int64(res.Papers), errors.Join(err, drawErr)
}

// users loads s.Users users with confirmed addresses, in five time zones.
func (g *generator) users(ctx context.Context, tx pgx.Tx) (int64, error) {
	zones := []string{"UTC", "Europe/Amsterdam", "America/New_York", "Asia/Tokyo", "Australia/Sydney"}
	ids, err := account.BulkLoad(ctx, tx, func(yield func(account.BulkUser) bool) {
		for n := 1; n <= g.s.Users; n++ {
			if !yield(account.BulkUser{Sub: fmt.Sprintf("bench-user-%d", n), Email: fmt.Sprintf("user%d@example.org", n),
				Confirmed: true, Timezone: zones[n%len(zones)]}) {
				return
			}
		}
	})
	return int64(len(ids)), err
}

// categoryFollows loads each user's CategoryFollow category draws, skewed
// towards the popular ranks. random() in a select list is evaluated per
// row: each user draws their own. DISTINCT ON keeps one follow per user
// and category.
func (g *generator) categoryFollows(ctx context.Context, tx pgx.Tx) (int64, error) {
	return g.follows(ctx, tx, follow.Category, `
		SELECT DISTINCT ON (x.user_id, c.id) x.user_id, c.id
		FROM (SELECT u.id AS user_id, least(floor(power($2::float, power(random(), 2)))::int, $2) AS r
		      FROM users u CROSS JOIN generate_series(1, $1)) x
		JOIN bench_cats c ON c.rank = x.r`, g.s.CategoryFollow, len(g.cats))
}

// researcherFollows loads each user's ResearcherFoll researcher draws,
// log-uniform over the pool. Half use the host's id (the Follow button's),
// which papers never carry: they match through the identity registry
// (identities).
func (g *generator) researcherFollows(ctx context.Context, tx pgx.Tx) (int64, error) {
	return g.follows(ctx, tx, follow.Researcher, `
		SELECT DISTINCT ON (x.user_id, x.scheme, x.r) x.user_id, x.scheme || x.r
		FROM (SELECT u.id AS user_id, greatest(floor(power($2::float, random()))::int, 1) AS r,
		             CASE WHEN random() < 0.5 THEN 'host:' ELSE 's2:' END AS scheme
		      FROM users u CROSS JOIN generate_series(1, $1)) x`, g.s.ResearcherFoll, g.s.Researchers)
}

// follows loads the follows of kind that draw (user id, target id) gives.
func (g *generator) follows(ctx context.Context, tx pgx.Tx, kind follow.Kind, draw string, args ...any) (int64, error) {
	var drawErr error
	n, err := follow.BulkLoad(ctx, tx, prefetch(drawn(ctx, g.draw, &drawErr, func(r pgx.Rows) (follow.BulkFollow, error) {
		f := follow.BulkFollow{Target: follow.Target{Kind: kind}}
		return f, r.Scan(&f.UserID, &f.Target.ID)
	}, draw, args...), 20_000))
	return n, errors.Join(err, drawErr)
}

// followCounts counts every key's followers.
func (g *generator) followCounts(ctx context.Context, tx pgx.Tx) (int64, error) {
	return follow.RecountAll(ctx, tx)
}

// identities loads the registry: every researcher of the pool is one
// identity named "Researcher N" with two or three ids — s2:N (what papers
// carry), host:N (what the host's Follow button sends; half the researcher
// follows use it) and, for every second one, openalex:AN. One researcher
// in ten (N divisible by 10) has no host id yet: LinkLate links it during
// the run, after the papers arrived.
func (g *generator) identities(ctx context.Context, tx pgx.Tx) (int64, error) {
	n, err := identity.BulkLoad(ctx, tx, func(yield func(identity.Record) bool) {
		for r := 1; r <= g.s.Researchers; r++ {
			rec := identity.Record{Kind: follow.Researcher, Name: fmt.Sprintf("Researcher %d", r), IDs: []string{fmt.Sprintf("s2:%d", r)}}
			if r%10 != 0 {
				rec.IDs = append(rec.IDs, fmt.Sprintf("host:%d", r))
			}
			if r%2 == 0 {
				rec.IDs = append(rec.IDs, fmt.Sprintf("openalex:A%d", r))
			}
			if !yield(rec) {
				return
			}
		}
	}, identity.SourceHost)
	return int64(n), err
}
