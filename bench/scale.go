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

// ScaleM is the scale M of docs/ARCHITECTURE.md: ten times S's readers with
// S's per-reader follows (1M users, ~19M follows, the same Zipf skew), three
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

// Generate fills an empty, migrated database with scale s. The generator is
// seeded (setseed), so every run builds the same data. It logs progress to
// log, takes a few minutes at scale S and about half an hour at scale M on two
// shared cores (28 minutes, 16 GB), and records in bench_meta (written last, so a dataset whose build
// was interrupted is never taken for a complete one) the scale, how long the
// build took and the database's size on disk after it.
func Generate(ctx context.Context, db *database.DB, s Scale, log io.Writer) error {
	began := time.Now()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	step := func(name string, sql string, args ...any) error {
		start := time.Now()
		tag, err := conn.Exec(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("generating %s: %w", name, err)
		}
		fmt.Fprintf(log, "  %-28s %9d rows  %6.1fs  (%s in all)\n", name, tag.RowsAffected(), time.Since(start).Seconds(),
			time.Since(began).Round(time.Second))
		return nil
	}
	// Category ranks: popular first, then every other active category.
	var cats, archives []string
	seen := map[string]bool{}
	for _, id := range popular {
		if c, ok := follow.LookupCategory(id); ok && c.Active {
			cats, archives, seen[id] = append(cats, c.ID), append(archives, c.Archive), true
		}
	}
	for _, c := range follow.ActiveCategories() {
		if !seen[c.ID] {
			cats, archives = append(cats, c.ID), append(archives, c.Archive)
		}
	}
	monthly := papersPerMonth(s)
	type sqlStep struct {
		name string
		sql  string
		args []any
	}
	steps := []sqlStep{
		// Index builds and the sorts of 25M key rows (scale M) want memory;
		// two cores: one parallel worker beside the leader.
		{"session", `SET maintenance_work_mem = '1GB'`, nil},
		{"session", `SET max_parallel_maintenance_workers = 1`, nil},
		{"session", `SET work_mem = '512MB'`, nil},
		{"session", `SET synchronous_commit = off`, nil},
		{"seed", `SELECT setseed(0.42)`, nil},
		{"categories", `CREATE UNLOGGED TABLE bench_cats AS
			SELECT ord::int AS rank, id, archive FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(id, archive, ord)`,
			[]any{cats, archives}},
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
			[]any{s.Papers, len(cats), s.Researchers, s.AuthorsPer}},
	}
	// Bulk loads are faster into a table without its B-trees and
	// foreign keys: papers, their keys and the follows are loaded bare and
	// indexed (sorted once, maintenance_work_mem) and checked (one join per
	// foreign key) afterwards.
	var rebuild []sqlStep
	for _, table := range []string{"papers", "paper_keys", "follows"} {
		drop, add, err := bareTable(ctx, conn, table)
		if err != nil {
			return err
		}
		for _, q := range drop {
			steps = append(steps, sqlStep{"drop " + table + " indexes", q, nil})
		}
		for _, q := range add {
			rebuild = append(rebuild, sqlStep{"index " + table, q, nil})
		}
	}
	steps = append(steps, []sqlStep{
		{"papers", `INSERT INTO papers (arxiv_id, version, title, abstract, authors, primary_category, categories,
				institutions, submitted_at, updated_at, announced_at, abs_url, pdf_url, source)
			SELECT aid, 1, 'Synthetic paper ' || p.n || ' on ' || c.id,
			       left(repeat('We study a problem of scale and measure it carefully; ', 40), $1),
			       (SELECT jsonb_agg(jsonb_build_object('name', 'Researcher ' || a, 'ids', jsonb_build_array('s2:' || a)))
			          FROM unnest(p.authors) a),
			       c.id, array_remove(ARRAY[c.id, c1.id, c2.id], NULL),
			       CASE WHEN p.inst IS NULL THEN '{}' ELSE ARRAY['openalex:I' || p.inst] END,
			       ts, ts, ts, 'https://arxiv.org/abs/' || aid, 'https://arxiv.org/pdf/' || aid, 'push'
			FROM bench_plan p
			JOIN bench_cats c ON c.rank = p.prim
			LEFT JOIN bench_cats c1 ON c1.rank = p.cross1 AND c1.rank <> p.prim
			LEFT JOIN bench_cats c2 ON c2.rank = p.cross2 AND c2.rank <> p.prim AND c2.rank IS DISTINCT FROM c1.rank
			-- $2 papers a month from 2020-01: YYMM.NNNNN, all distinct.
			CROSS JOIN LATERAL (SELECT to_char(20 + (p.n / $2) / 12, 'FM00') || to_char(1 + (p.n / $2) % 12, 'FM00')
			                           || '.' || to_char(p.n % $2 + 1, 'FM00000') AS aid,
			                           timestamptz '2020-01-01' + p.n * $3::interval AS ts) x
			ORDER BY p.n`, []any{s.AbstractChars, monthly, fmt.Sprintf("%d seconds", 2_400_000/monthly)}},
		// Keys in paper order, so seq (and the BRIN index) follow papers.
		{"paper keys", `INSERT INTO paper_keys (paper_id, key, version, cross_list, replacement, new_paper, seq)
			SELECT paper_id, key, 1, bool_and(cross_list), false, true, nextval('paper_key_seq')
			FROM (
				SELECT p.id AS paper_id, 'category:' || c AS key, c <> p.primary_category AS cross_list
				FROM papers p, unnest(p.categories) c
				UNION ALL
				SELECT p.id, 'archive:' || bc.archive, bc.id <> p.primary_category
				FROM papers p, unnest(p.categories) c JOIN bench_cats bc ON bc.id = c
				UNION ALL
				SELECT p.id, 'researcher:' || (a->'ids'->>0), false FROM papers p, jsonb_array_elements(p.authors) a
				UNION ALL
				SELECT p.id, 'institution:' || i, false FROM papers p, unnest(p.institutions) i
			) k
			GROUP BY paper_id, key
			ORDER BY paper_id, key`, nil},
		{"watermark", `UPDATE match_state SET high_seq = (SELECT max(seq) FROM paper_keys)`, nil},
		{"watermark time", `INSERT INTO key_seq_times (to_seq, at) SELECT high_seq, now() FROM match_state ON CONFLICT DO NOTHING`, nil},
		{"users", `INSERT INTO users (sub, email, email_confirmed_at, timezone)
			SELECT 'bench-user-' || g, 'reader' || g || '@example.org', now(),
			       (ARRAY['UTC','Europe/Amsterdam','America/New_York','Asia/Tokyo','Australia/Sydney'])[1 + g % 5]
			FROM generate_series(1, $1) g`, []any{s.Users}},
		{"user feeds", `INSERT INTO user_feeds (user_id) SELECT id FROM users`, nil},
		// random() in a select list is evaluated per row: each user draws
		// their own skewed categories and researchers. DISTINCT ON keeps one
		// follow per user and key (the primary key is built afterwards).
		{"category follows", `INSERT INTO follows (user_id, key, kind, target)
			SELECT DISTINCT ON (x.user_id, c.id) x.user_id, 'category:' || c.id, 'category', c.id
			FROM (SELECT u.id AS user_id, least(floor(power($2::float, power(random(), 2)))::int, $2) AS r
			      FROM users u CROSS JOIN generate_series(1, $1)) x
			JOIN bench_cats c ON c.rank = x.r`, []any{s.CategoryFollow, len(cats)}},
		// Half the researcher follows use the host's id (the Follow
		// button's), which papers never carry: they match through the
		// identity registry (identitySteps).
		{"researcher follows", `INSERT INTO follows (user_id, key, kind, target)
			SELECT DISTINCT ON (x.user_id, x.scheme, x.r) x.user_id, 'researcher:' || x.scheme || x.r, 'researcher', x.scheme || x.r
			FROM (SELECT u.id AS user_id, greatest(floor(power($2::float, random()))::int, 1) AS r,
			             CASE WHEN random() < 0.5 THEN 'host:' ELSE 's2:' END AS scheme
			      FROM users u CROSS JOIN generate_series(1, $1)) x`, []any{s.ResearcherFoll, s.Researchers}},
	}...)
	steps = append(steps, rebuild...)
	steps = append(steps, sqlStep{"follow counts", `INSERT INTO follow_counts (key, followers) SELECT key, count(*) FROM follows GROUP BY key`, nil})
	for _, st := range identitySteps(s) {
		steps = append(steps, sqlStep(st))
	}
	steps = append(steps, sqlStep{"drop plan", `DROP TABLE bench_plan, bench_cats`, nil})
	for _, st := range steps {
		if err := step(st.name, st.sql, st.args...); err != nil {
			return err
		}
	}
	for _, t := range []string{"papers", "paper_keys", "users", "user_feeds", "follows", "follow_counts", "identities", "identity_keys"} {
		if err := step("analyze "+t, "VACUUM ANALYZE "+t); err != nil {
			return err
		}
	}
	return step("meta", `CREATE TABLE bench_meta AS
		SELECT $1::text AS scale, now() AS built_at, $2::float8 AS build_seconds, pg_database_size(current_database()) AS disk_bytes`,
		fmt.Sprint(s), time.Since(began).Seconds())
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
