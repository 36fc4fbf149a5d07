package migrations_test

import (
	"context"
	"os"
	"testing"
	"time"

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
// migration began waiting (as the deadlock with migration 35 did: the
// migration held digest_schedules and waited for follows; the request
// held follows and wanted digest_schedules), is not ended by a deadlock.
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
	go func() {
		_, err := migrations.Up(ctx, pool, nil)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the migration has altered digest_schedules and waits for follows
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
	if err := migrations.Check(ctx, pool); err != nil {
		t.Error(err)
	}
}
