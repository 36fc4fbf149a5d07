package migrations_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"followfeed/internal/testdb"
	"followfeed/migrations"
)

// emptyDB returns an empty database's URL, a pool on it (closed at the
// test's end) and a goose provider of this tree's migrations on it.
func emptyDB(t *testing.T) (string, *pgxpool.Pool, *goose.Provider) {
	t.Helper()
	url := testdb.EmptyURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sqlDB := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { sqlDB.Close() })
	prov, err := goose.NewProvider(goose.DialectPostgres, sqlDB, os.DirFS("sql"))
	if err != nil {
		t.Fatal(err)
	}
	return url, pool, prov
}

// A migration that meets a table held by a running transaction (a request
// of the release being upgraded) waits for it at most a moment, is rolled
// back whole and tried again until it gets the lock: Up succeeds once the
// request ends, and the request, which takes another lock after the
// migration began waiting (as the deadlock with migration 35's first form
// did: the migration held digest_schedules and waited for follows; the
// request held follows and wanted digest_schedules), is not ended by a
// deadlock. Now that each migration alters one table, 00035 commits
// digest_schedules and 00039 waits for follows alone.
func TestUpRetriesAMigrationThatWaitsForALock(t *testing.T) {
	ctx := context.Background()
	_, pool, prov := emptyDB(t)
	if _, err := prov.UpTo(ctx, 34); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE follows IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	var log bytes.Buffer // written by Up's goroutine, read after it is done
	go func() {
		_, err := migrations.Up(ctx, pool, slog.New(slog.NewTextHandler(&log, nil)))
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // 00035 altered digest_schedules; 00039 waits for follows
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM digest_schedules`); err != nil {
		t.Fatalf("the request, after the migration began: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // past deadlock_timeout
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the request's commit: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Up: %v", err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("Up took %s while follows was held for 2 s", took)
	}
	// It gave up on the lock and tried again, rather than wait out the
	// request (which would hold every later request to follows behind it).
	if n := strings.Count(log.String(), "trying it again"); n < 2 {
		t.Errorf("the migration was tried again %d times while follows was held for 2 s; log:\n%s", n, log.String())
	}
	if err := migrations.Check(ctx, pool); err != nil {
		t.Error(err)
	}
}

// The migrations that 00035's and 00030's first forms held in one
// transaction (00037 to 00041) run again on a database that ran those
// forms whole, as an unreleased database may have, or where an attempt of
// 00037 (which commits statement by statement) stopped half-way: each
// ends in the same schema. The kinds'
// check, added NOT VALID and then validated, ends validated and refuses a
// kind it does not list.
func TestSplitMigrationsRunAgain(t *testing.T) {
	ctx := context.Background()
	_, pool, prov := emptyDB(t)
	// Up to 00041: such a database has none of the later migrations.
	if _, err := prov.UpTo(ctx, 41); err != nil {
		t.Fatal(err)
	}
	// As a first form left it, and as a failed attempt of 00037 may (its
	// first statement committed, not its second): the check not yet valid.
	if _, err := pool.Exec(ctx, `ALTER TABLE digests DROP CONSTRAINT digests_kind_check,
		ADD CONSTRAINT digests_kind_check CHECK (kind IN ('daily', 'weekly', 'instant', 'manual', 'catchup')) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id BETWEEN 37 AND 41`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatalf("the split migrations again: %v", err)
	}
	if err := migrations.Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var valid bool
	if err := pool.QueryRow(ctx, `SELECT convalidated FROM pg_constraint WHERE conname = 'digests_kind_check'`).Scan(&valid); err != nil || !valid {
		t.Fatalf("digests_kind_check validated: %v, %v", valid, err)
	}
	for _, idx := range []string{"digest_schedules_pause_end_idx", "digests_instant_day_idx"} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = $1`, idx).Scan(&n); err != nil || n != 1 {
			t.Fatalf("index %s: %d, %v", idx, n, err)
		}
	}
	var user int64
	if err := pool.QueryRow(ctx, `INSERT INTO users (sub) VALUES ('split-migrations') RETURNING id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]bool{"catchup": true, "daily": true, "hourly": false} {
		_, err := pool.Exec(ctx, `INSERT INTO digests (user_id, period, from_seq, to_seq, kind) VALUES ($1, $2, 0, 0, $2)`, user, kind)
		var pg *pgconn.PgError
		switch {
		case want && err != nil:
			t.Errorf("kind %q: %v", kind, err)
		case !want && !(errors.As(err, &pg) && pg.Code == "23514"):
			t.Errorf("kind %q: %v, want the check's refusal", kind, err)
		}
	}
}
