// Package testdb gives each test its own PostgreSQL database, cloned from a
// template that was migrated once (app and River migrations) per migration
// hash. It connects to DATABASE_URL, or when that is unset to the server
// on 127.0.0.1:5432, else to the private cluster on 127.0.0.1:54329 (as
// scripts/pg-ensure.sh provisions them).
package testdb

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver pgtestdb uses
	"github.com/peterldowns/pgtestdb"

	"followfeed/database"
	"followfeed/migrations"
)

// BaseConfig is the server connection used to create test databases.
func BaseConfig(t testing.TB) pgtestdb.Config {
	t.Helper()
	raw := os.Getenv("DATABASE_URL")
	if raw == "" {
		// As scripts/pg-ensure.sh: the usual server, else the private
		// cluster `make run` / `make test` start under ./var/pg.
		raw = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
		if c, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err == nil {
			c.Close()
		} else {
			raw = "postgres://postgres@127.0.0.1:54329/postgres?sslmode=disable"
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("testdb: DATABASE_URL: %v", err)
	}
	pw, _ := u.User.Password()
	opts := u.Query()
	if opts.Get("sslmode") == "" {
		opts.Set("sslmode", "disable")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		db = "postgres"
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	return pgtestdb.Config{
		DriverName:                "pgx",
		Host:                      u.Hostname(),
		Port:                      port,
		User:                      u.User.Username(),
		Password:                  pw,
		Database:                  db,
		Options:                   opts.Encode(),
		ForceTerminateConnections: true,
	}
}

// migrator builds templates with followfeed's real migrations.
type migrator struct{}

func (migrator) Hash() (string, error) { return migrations.Hash() }

func (migrator) Migrate(ctx context.Context, _ *sql.DB, conf pgtestdb.Config) error {
	db, err := database.Open(ctx, conf.URL(), database.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = migrations.Up(ctx, db.Pool, nil)
	return err
}

// URL returns the connection string of a fresh, fully migrated database that
// is dropped when the test ends (kept when it fails, for inspection).
func URL(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, BaseConfig(t), migrator{}).URL()
}

// EmptyURL returns a fresh database with no tables at all.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, BaseConfig(t), pgtestdb.NoopMigrator{}).URL()
}

// New returns a pool on a fresh, fully migrated database, closed at cleanup.
func New(t testing.TB) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), URL(t), database.Options{MaxConns: 8})
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// Admin returns a pool on the server's maintenance database as the
// administrative user, for tests that must act on a test database from
// outside (e.g. refuse its connections to simulate an outage).
func Admin(t testing.TB) *database.DB {
	t.Helper()
	db, err := database.Open(context.Background(), BaseConfig(t).URL(), database.Options{MaxConns: 2})
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// Strings runs a query of one text column and returns its values, failing
// the test on an error.
func Strings(t testing.TB, db *database.DB, sql string, args ...any) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}
