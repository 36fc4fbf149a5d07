package soak

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/notify"
)

// withDatabase returns dbURL naming database name instead of its own.
func withDatabase(dbURL, name string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("DATABASE_URL is not a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String(), nil
}

// databaseName returns the database part of dbURL.
func databaseName(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

func serverVersion(ctx context.Context, dbURL string) string {
	admin, err := withDatabase(dbURL, "postgres")
	if err != nil {
		return "PostgreSQL (unknown version)"
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, admin)
	if err != nil {
		return "PostgreSQL (unknown version)"
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(cctx, `SHOW server_version`).Scan(&v); err != nil {
		return "PostgreSQL (unknown version)"
	}
	return "PostgreSQL " + strings.Fields(v)[0]
}

// execAdmin runs one statement on the server's postgres database.
func execAdmin(ctx context.Context, serverURL, sql string) error {
	admin, err := withDatabase(serverURL, "postgres")
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(cctx, sql)
	return err
}

// freshDB is a database made for one scenario and dropped after it.
type freshDB struct {
	name string
	url  string
	pool *pgxpool.Pool
	srv  string
}

// newFreshDB creates soak_<scenario>_<unix time> on the server of
// serverURL, migrates it with `followfeed migrate` and opens a pool.
func newFreshDB(ctx context.Context, e *env, serverURL, scenario string) (*freshDB, error) {
	return newFreshDBWith(ctx, e, e.opts.Exe, serverURL, scenario)
}

// newFreshDBWith is newFreshDB migrating with the followfeed binary exe
// (another release's).
func newFreshDBWith(ctx context.Context, e *env, exe, serverURL, scenario string) (*freshDB, error) {
	d, err := createDB(ctx, serverURL, fmt.Sprintf("soak_%s_%d", strings.ReplaceAll(scenario, "-", "_"), time.Now().Unix()))
	if err != nil {
		return nil, err
	}
	if err := runCmd(ctx, exe, e.baseEnv(d.url), e.logPath(scenario, "migrate"), "migrate"); err != nil {
		d.drop(ctx)
		return nil, err
	}
	if d.pool, err = openPool(ctx, d.url); err != nil {
		d.drop(ctx)
		return nil, err
	}
	e.logf("database %s created and migrated", d.name)
	return d, nil
}

// createDB creates the empty database name on the server of serverURL
// (no pool yet); drop removes it.
func createDB(ctx context.Context, serverURL, name string) (*freshDB, error) {
	if err := execAdmin(ctx, serverURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("creating database %s: %w", name, err)
	}
	dbURL, err := withDatabase(serverURL, name)
	if err != nil {
		return nil, err
	}
	return &freshDB{name: name, url: dbURL, srv: serverURL}, nil
}

// drop closes the pool and drops the database (terminating its sessions).
func (d *freshDB) drop(ctx context.Context) {
	if d.pool != nil {
		d.pool.Close()
	}
	_ = execAdmin(context.WithoutCancel(ctx), d.srv, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)")
}

func openPool(ctx context.Context, dbURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	cfg.ConnConfig.RuntimeParams["application_name"] = "followfeed soak"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(cctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// count runs a count(*)-like query returning one integer.
func count(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// jobCounts returns river_job counts by kind and state for ids above minID.
func jobCounts(ctx context.Context, pool *pgxpool.Pool, minID int64) (map[string]map[string]int, error) {
	return kindStateCounts(ctx, pool, `SELECT kind, state::text, count(*) FROM river.river_job WHERE id > $1 GROUP BY 1, 2`, minID)
}

// kindStateCounts runs a query of (kind, state, count) rows and returns
// the counts by kind and state.
func kindStateCounts(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (map[string]map[string]int, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]int{}
	for rows.Next() {
		var kind, state string
		var n int
		if err := rows.Scan(&kind, &state, &n); err != nil {
			return nil, err
		}
		if out[kind] == nil {
			out[kind] = map[string]int{}
		}
		out[kind][state] = n
	}
	return out, rows.Err()
}

// formatJobs renders job counts as "kind: n completed, m retryable; …".
func formatJobs(jobs map[string]map[string]int) string {
	var kinds []string
	for k := range jobs {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		var states []string
		for s := range jobs[k] {
			states = append(states, s)
		}
		slices.Sort(states)
		var ss []string
		for _, s := range states {
			ss = append(ss, fmt.Sprintf("%d %s", jobs[k][s], s))
		}
		parts = append(parts, k+": "+strings.Join(ss, ", "))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// stateCounts returns digests counts by state for rows matching where.
func stateCounts(ctx context.Context, pool *pgxpool.Pool, where string, args ...any) (map[string]int, error) {
	return countsBy(ctx, pool, `SELECT state, count(*) FROM digests WHERE `+where+` GROUP BY 1`, args...)
}

// countsBy runs a query of (name, count) rows and returns them as a map.
func countsBy(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (map[string]int, error) {
	return queryMap[int](ctx, pool, sql, args...)
}

// queryMap runs a query of (text, value) rows and returns them as a map.
func queryMap[V any](ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (map[string]V, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]V{}
	for rows.Next() {
		var k string
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

func formatCounts(m map[string]int, order ...string) string {
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// userIDs returns the ids of the users whose sub starts with prefix, by sub.
func userIDs(ctx context.Context, pool *pgxpool.Pool, prefix string) (map[string]int64, error) {
	return queryMap[int64](ctx, pool, `SELECT sub, id FROM users WHERE starts_with(sub, $1)`, prefix)
}

// matchIdle reports whether no match job is waiting, running or retrying.
func matchIdle(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	n, err := count(ctx, pool, `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state NOT IN ('completed', 'discarded', 'cancelled')`)
	return n == 0, err
}

// waitStoredAndMatched waits up to bound until papers holds at least n
// rows and no match job is left; false when it did not happen in time.
func waitStoredAndMatched(ctx context.Context, pool *pgxpool.Pool, n int64, bound time.Duration) (bool, error) {
	return waitFor(ctx, bound, 500*time.Millisecond, func() (bool, error) {
		stored, err := count(ctx, pool, `SELECT count(*) FROM papers`)
		if err != nil || stored < n {
			return false, err
		}
		return matchIdle(ctx, pool)
	})
}

// makeDailyDue makes the users' daily digests due now, their windows from
// seq 0 (every pushed paper): aging on purpose, through the lab's loader
// (notify.MakeDailyDue), as the product's settings would schedule each at
// the user's hour, hours away. It returns how many rows it wrote.
func makeDailyDue(ctx context.Context, pool *pgxpool.Pool, ids []int64) (int, error) {
	return makeDailyDueFrom(ctx, pool, ids, 0)
}

// makeDailyDueFrom is makeDailyDue with the windows starting after
// fromSeq (negative: each user's watermark kept).
func makeDailyDueFrom(ctx context.Context, pool *pgxpool.Pool, ids []int64, fromSeq int64) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		n, err = notify.MakeDailyDue(ctx, tx, ids, fromSeq)
		return err
	})
	return n, err
}
