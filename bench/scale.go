// Package bench builds scale S (docs/ARCHITECTURE.md) from a seeded generator and
// measures the performance targets against it, with the service's real code
// paths. `followfeed-lab bench` (make bench) runs it and writes BENCHMARKS.md.
package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

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
// log and takes a few minutes at scale S on two cores.
func Generate(ctx context.Context, db *database.DB, s Scale, log io.Writer) error {
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
		fmt.Fprintf(log, "  %-28s %9d rows  %6.1fs\n", name, tag.RowsAffected(), time.Since(start).Seconds())
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
	steps := []struct {
		name string
		sql  string
		args []any
	}{
		{"session", `SET maintenance_work_mem = '512MB'`, nil},
		{"session", `SET work_mem = '256MB'`, nil},
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
			-- 20,000 papers a month from 2001: YYMM.NNNNN, all distinct.
			CROSS JOIN LATERAL (SELECT to_char(20 + (p.n / 20000) / 12, 'FM00') || to_char(1 + (p.n / 20000) % 12, 'FM00')
			                           || '.' || to_char(p.n % 20000 + 1, 'FM00000') AS aid,
			                           timestamptz '2020-01-01' + p.n * interval '2 minutes' AS ts) x
			ORDER BY p.n`, []any{s.AbstractChars}},
		// Bulk loads are faster into a table without its B-trees.
		{"drop key indexes", `ALTER TABLE paper_keys DROP CONSTRAINT paper_keys_pkey`, nil},
		{"drop key indexes", `DROP INDEX paper_keys_key_seq_idx`, nil},
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
		{"key primary key", `ALTER TABLE paper_keys ADD PRIMARY KEY (paper_id, key, version, event)`, nil},
		{"key seq index", `CREATE INDEX paper_keys_key_seq_idx ON paper_keys (key, seq DESC) INCLUDE (paper_id, cross_list, replacement, new_paper)`, nil},
		{"watermark", `UPDATE match_state SET high_seq = (SELECT max(seq) FROM paper_keys)`, nil},
		{"watermark time", `INSERT INTO key_seq_times (to_seq, at) SELECT high_seq, now() FROM match_state ON CONFLICT DO NOTHING`, nil},
		{"users", `INSERT INTO users (sub, email, email_confirmed_at, timezone)
			SELECT 'bench-user-' || g, 'reader' || g || '@example.org', now(),
			       (ARRAY['UTC','Europe/Amsterdam','America/New_York','Asia/Tokyo','Australia/Sydney'])[1 + g % 5]
			FROM generate_series(1, $1) g`, []any{s.Users}},
		{"user feeds", `INSERT INTO user_feeds (user_id) SELECT id FROM users`, nil},
		// random() in a select list is evaluated per row: each user draws
		// their own skewed categories and researchers.
		{"category follows", `INSERT INTO follows (user_id, key, kind, target)
			SELECT DISTINCT ON (x.user_id, c.id) x.user_id, 'category:' || c.id, 'category', c.id
			FROM (SELECT u.id AS user_id, least(floor(power($2::float, power(random(), 2)))::int, $2) AS r
			      FROM users u CROSS JOIN generate_series(1, $1)) x
			JOIN bench_cats c ON c.rank = x.r
			ON CONFLICT DO NOTHING`, []any{s.CategoryFollow, len(cats)}},
		// Half the researcher follows use the host's id (the Follow
		// button's), which papers never carry: they match through the
		// identity registry (identitySteps).
		{"researcher follows", `INSERT INTO follows (user_id, key, kind, target)
			SELECT x.user_id, 'researcher:' || x.scheme || x.r, 'researcher', x.scheme || x.r
			FROM (SELECT u.id AS user_id, greatest(floor(power($2::float, random()))::int, 1) AS r,
			             CASE WHEN random() < 0.5 THEN 'host:' ELSE 's2:' END AS scheme
			      FROM users u CROSS JOIN generate_series(1, $1)) x
			ON CONFLICT DO NOTHING`, []any{s.ResearcherFoll, s.Researchers}},
		{"follow counts", `INSERT INTO follow_counts (key, followers) SELECT key, count(*) FROM follows GROUP BY key`, nil},
		{"drop plan", `DROP TABLE bench_plan, bench_cats`, nil},
		{"meta", `CREATE TABLE bench_meta AS SELECT $1::text AS scale, now() AS built_at`, []any{fmt.Sprint(s)}},
	}
	steps = append(steps[:len(steps)-1], append(identitySteps(s), steps[len(steps)-1])...) // before "meta"
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
	return nil
}
