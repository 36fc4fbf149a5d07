// Package bench builds scales S and M (docs/ARCHITECTURE.md) from a seeded generator and
// measures the performance targets against it, with the service's real code
// paths. `followfeed-lab bench` (make bench) runs it and writes BENCHMARKS.md.
package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/database"
	"followfeed/follow"
)

// Scale is the size of a generated dataset.
type Scale struct {
	Users          int
	CategoryFollow int // category follows per user (distinct)
	ResearcherFoll int // researcher follows per user (distinct)
	Papers         int
	Researchers    int // pool of researcher ids authors are drawn from
	AuthorsPer     int
	AbstractChars  int
	// Identities is the version of the identity registry's dataset
	// (identitySteps); 0 builds none. A new value rebuilds the dataset.
	Identities int
}

// ScaleS is the scale S of docs/ARCHITECTURE.md: 100k users, ~2M follows, 1M papers, ~8M keys,
// and every researcher an identity with 2–3 ids (Identities).
var ScaleS = Scale{Users: 100_000, CategoryFollow: 5, ResearcherFoll: 15, Papers: 1_000_000,
	Researchers: 300_000, AuthorsPer: 4, AbstractChars: 1200, Identities: 2}

// ScaleM is the scale M of docs/ARCHITECTURE.md: ten times S's users with
// S's per-user follows (1M users, ~19M follows, the same Zipf skew), three
// times its papers (3M, ~25M keys) and a researcher pool three times S's
// (900k identities): the pool grows with the papers, so a researcher writes
// as many papers as at S, and has about 10/3 as many followers.
var ScaleM = Scale{Users: 1_000_000, CategoryFollow: 5, ResearcherFoll: 15, Papers: 3_000_000,
	Researchers: 900_000, AuthorsPer: 4, AbstractChars: 1200, Identities: 2}

// popular lists the categories that get most papers and followers first;
// the rest of the taxonomy follows in id order. Ranks are drawn from a
// skewed (Zipf-like) distribution, so rank 1 is cs.LG, the "celebrity".
var popular = []string{"cs.LG", "cs.CV", "cs.AI", "cs.CL", "stat.ML", "quant-ph", "cs.RO", "math.OC", "hep-ph",
	"hep-th", "cs.CR", "eess.SP", "astro-ph.GA", "cond-mat.mes-hall", "math.PR", "cs.IT", "cs.SE", "astro-ph.CO",
	"cond-mat.mtrl-sci", "math.AP", "cs.NE", "physics.optics", "eess.SY", "gr-qc", "math.NA"}

// Seeded reports whether db already holds a dataset of scale s (the
// generator records it in bench_meta).
func Seeded(ctx context.Context, db *database.DB, s Scale) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'bench_meta')`).Scan(&ok)
	if err != nil || !ok {
		return false, err
	}
	var got string
	err = db.Pool.QueryRow(ctx, `SELECT scale FROM bench_meta`).Scan(&got)
	if err == pgx.ErrNoRows {
		return false, nil
	}
	return got == fmt.Sprint(s), err
}

// Generate fills an empty, migrated database with scale s. The draws are
// PostgreSQL's random() after setseed, in one session, so every run builds
// the same data; the rows are written by the owners' bulk loaders
// (catalog.BulkLoad, account.BulkLoad, follow.BulkLoad, identity.BulkLoad:
// COPY, no jobs, no feed bumps) on a second connection, and the follower
// counts by follow.RecountAll. It logs progress to log, takes a few
// minutes at scale S and about ten at scale M on two shared cores, and
// records in bench_meta (written last, so a dataset whose build was
// interrupted is never taken for a complete one) the scale, how long the
// build took and the database's size on disk after it.
func Generate(ctx context.Context, db *database.DB, s Scale, log io.Writer) error {
	g := &generator{s: s, log: log, began: time.Now()}
	var err error
	// draw holds the seeded session: every random() of the build is
	// drawn there, in the order of the statements below.
	if g.draw, err = db.Pool.Acquire(ctx); err != nil {
		return err
	}
	defer g.draw.Release()
	if g.load, err = db.Pool.Acquire(ctx); err != nil {
		return err
	}
	defer g.load.Release()
	// Category ranks: popular first, then every other active category.
	seen := map[string]bool{}
	for _, id := range popular {
		if c, ok := follow.LookupCategory(id); ok && c.Active {
			g.cats, g.archives, seen[id] = append(g.cats, c.ID), append(g.archives, c.Archive), true
		}
	}
	for _, c := range follow.ActiveCategories() {
		if !seen[c.ID] {
			g.cats, g.archives = append(g.cats, c.ID), append(g.archives, c.Archive)
		}
	}
	for _, conn := range []*pgxpool.Conn{g.draw, g.load} {
		// Index builds, the sorts of 25M key rows (scale M) and of the
		// follow draws want memory; two cores: one parallel worker
		// beside the leader.
		for _, set := range []string{`SET maintenance_work_mem = '1GB'`, `SET max_parallel_maintenance_workers = 1`,
			`SET work_mem = '512MB'`, `SET synchronous_commit = off`} {
			if _, err := conn.Exec(ctx, set); err != nil {
				return err
			}
		}
	}
	for _, st := range []sqlStep{
		{"seed", `SELECT setseed(0.42)`, nil},
		{"categories", `CREATE UNLOGGED TABLE bench_cats AS
			SELECT ord::int AS rank, id, archive FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(id, archive, ord)`,
			[]any{g.cats, g.archives}},
		// Papers: the primary category is drawn log-uniformly over ranks
		// (steepened), cross-lists uniformly-ish, authors log-uniformly over
		// the researcher pool (prolific researchers are few).
		{"paper plan", `CREATE UNLOGGED TABLE bench_plan AS
			SELECT g AS n,
			       least(floor(power($2::float, power(random(), 1.5)))::int, $2) AS prim,
			       CASE WHEN random() < 0.6 THEN 1 + floor(random() * $2)::int END AS cross1,
			       CASE WHEN random() < 0.3 THEN 1 + floor(random() * $2)::int END AS cross2,
			       ARRAY(SELECT CASE WHEN random() < 0.5 THEN floor(power($3::float, random()))::int
			                         ELSE 1 + floor(random() * $3)::int END
			             FROM generate_series(1, $4) WHERE g > 0) AS authors,
			       CASE WHEN random() < 0.5 THEN 1 + floor(random() * 5000)::int END AS inst
			FROM generate_series(1, $1) g`,
			[]any{s.Papers, len(g.cats), s.Researchers, s.AuthorsPer}},
	} {
		if err := g.exec(ctx, g.draw, st); err != nil {
			return err
		}
	}
	// Bulk loads are faster into a table without its B-trees and
	// foreign keys: papers, their keys and the follows are loaded bare and
	// indexed (sorted once, maintenance_work_mem) and checked (one join per
	// foreign key) afterwards.
	var rebuild []sqlStep
	for _, table := range []string{"papers", "paper_keys", "follows"} {
		drop, add, err := bareTable(ctx, g.load, table)
		if err != nil {
			return err
		}
		for _, q := range drop {
			if err := g.exec(ctx, g.load, sqlStep{"drop " + table + " indexes", q, nil}); err != nil {
				return err
			}
		}
		for _, q := range add {
			rebuild = append(rebuild, sqlStep{"index " + table, q, nil})
		}
	}
	for _, l := range []loader{{"papers and keys", g.papers}, {"users and feeds", g.users},
		{"category follows", g.categoryFollows}, {"researcher follows", g.researcherFollows}} {
		if err := g.loadStep(ctx, l); err != nil {
			return err
		}
	}
	for _, st := range rebuild {
		if err := g.exec(ctx, g.load, st); err != nil {
			return err
		}
	}
	for _, l := range []loader{{"follow counts", g.followCounts}, {"identities and keys", g.identities}} {
		if err := g.loadStep(ctx, l); err != nil {
			return err
		}
	}
	if err := g.exec(ctx, g.draw, sqlStep{"drop plan", `DROP TABLE bench_plan, bench_cats`, nil}); err != nil {
		return err
	}
	for _, t := range []string{"papers", "paper_keys", "users", "user_feeds", "follows", "follow_counts", "identities", "identity_keys"} {
		if err := g.exec(ctx, g.load, sqlStep{"analyze " + t, "VACUUM ANALYZE " + t, nil}); err != nil {
			return err
		}
	}
	return g.exec(ctx, g.load, sqlStep{"meta", `CREATE TABLE bench_meta AS
		SELECT $1::text AS scale, now() AS built_at, $2::float8 AS build_seconds, pg_database_size(current_database()) AS disk_bytes`,
		[]any{fmt.Sprint(s), time.Since(g.began).Seconds()}})
}

// generator is one run of Generate.
type generator struct {
	s              Scale
	log            io.Writer
	began          time.Time
	draw, load     *pgxpool.Conn
	cats, archives []string // by rank (bench_cats)
}

// sqlStep is a statement of the generator's own (its session, its
// tables, the indexes it drops and rebuilds).
type sqlStep struct {
	name string
	sql  string
	args []any
}

// exec runs st on conn and logs it.
func (g *generator) exec(ctx context.Context, conn *pgxpool.Conn, st sqlStep) error {
	start := time.Now()
	tag, err := conn.Exec(ctx, st.sql, st.args...)
	if err != nil {
		return fmt.Errorf("generating %s: %w", st.name, err)
	}
	g.logStep(st.name, tag.RowsAffected(), start)
	return nil
}

func (g *generator) logStep(name string, rows int64, start time.Time) {
	fmt.Fprintf(g.log, "  %-28s %9d rows  %6.1fs  (%s in all)\n", name, rows, time.Since(start).Seconds(),
		time.Since(g.began).Round(time.Second))
}

// loader is a step of the generator that writes product tables: through
// their owners' loaders, in tx; it returns how many rows it wrote.
type loader struct {
	name string
	load func(ctx context.Context, tx pgx.Tx) (int64, error)
}

// loadStep runs l in a transaction of the load connection and logs it.
func (g *generator) loadStep(ctx context.Context, l loader) error {
	start := time.Now()
	var rows int64
	err := pgx.BeginFunc(ctx, g.load, func(tx pgx.Tx) error {
		var err error
		rows, err = l.load(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("generating %s: %w", l.name, err)
	}
	g.logStep(l.name, rows, start)
	return nil
}

// papersPerMonth is how many papers the generator gives each month: they
// are spread over 50 months from 2020-01 (20,000 a month up to scale S's
// million, more a month beyond), so arXiv ids (YYMM.NNNNN) stay below the
// batch's (2901.*, batchPapers) and every generated paper is older.
func papersPerMonth(s Scale) int { return max(20_000, (s.Papers+49)/50) }

// bareTable returns the statements that drop table's indexes, primary and
// unique keys and foreign keys, and those that make them again as the
// migrations defined them (read from the catalog, so a later migration's
// index is rebuilt too). A key another table's foreign key depends on is
// kept, as are check constraints.
func bareTable(ctx context.Context, conn *pgxpool.Conn, table string) (drop, add []string, err error) {
	t := pgx.Identifier{table}.Sanitize()
	rows, err := conn.Query(ctx, `
		SELECT c.conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u', 'f')
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint r WHERE r.contype = 'f' AND r.conindid = c.conindid AND c.contype <> 'f')
		ORDER BY c.contype = 'f', c.conname`, table)
	if err != nil {
		return nil, nil, err
	}
	type def struct{ name, sql string }
	cons, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (def, error) {
		var d def
		return d, r.Scan(&d.name, &d.sql)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the constraints of %s: %w", table, err)
	}
	rows, err = conn.Query(ctx, `
		SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
		FROM pg_index i
		WHERE i.indrelid = $1::regclass
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)
		ORDER BY 1`, table)
	if err != nil {
		return nil, nil, err
	}
	idx, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (def, error) {
		var d def
		return d, r.Scan(&d.name, &d.sql)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the indexes of %s: %w", table, err)
	}
	for _, c := range cons {
		drop = append(drop, "ALTER TABLE "+t+" DROP CONSTRAINT "+pgx.Identifier{c.name}.Sanitize())
	}
	for _, i := range idx {
		drop = append(drop, "DROP INDEX "+i.name)
		add = append(add, i.sql)
	}
	// Keys before foreign keys (cons is ordered so), indexes first: a
	// foreign key's check is a join that can use them.
	for _, c := range cons {
		add = append(add, "ALTER TABLE "+t+" ADD CONSTRAINT "+pgx.Identifier{c.name}.Sanitize()+" "+c.sql)
	}
	return drop, add, nil
}
