// Package migrations brings a database to the schema this binary expects:
// the application's embedded SQL migrations (goose) in the public schema and
// River's own migrations in the RiverSchema schema. Up is safe to run from
// several processes at once; Check tells a server whether it may start.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverSchema is the PostgreSQL schema that holds River's tables.
const RiverSchema = "river"

// migrateLockID is the advisory lock that serialises concurrent Up calls
// (replicas starting together). Arbitrary, but fixed forever.
const migrateLockID int64 = 0x666f6c6c6f77 // "follow"

//go:embed sql/*.sql
var files embed.FS

// ErrOutdated means the database schema is older than this binary expects.
var ErrOutdated = errors.New("database schema is not current: run `followfeed migrate` (or start with `serve --migrate`)")

// Result says what Up did.
type Result struct {
	AppApplied   []int64 // app migration versions applied by this call
	RiverApplied []int   // River migration versions applied by this call
}

// Up applies every pending migration, app first, then River. Concurrent
// callers wait for each other on an advisory lock; the loser then finds
// nothing to do, so both succeed. Running it on a current schema is a no-op.
func Up(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (*Result, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquiring connection for migration lock: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockID); err != nil {
		return nil, fmt.Errorf("taking migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the unlock must happen even when ctx is done.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockID)
	}()

	res := &Result{}
	// The app migrations wait for a table's lock at most lockTimeout
	// each (a session of their own): a rolling upgrade migrates while
	// the previous release serves, and a migration that altered one of
	// its tables and then waited on another that a request held, while
	// that request waited on the first, deadlocked with it: PostgreSQL
	// then ends one of the two (a failed request, or the migrate). Given
	// up on in time, the migration's transaction is rolled back whole
	// before any request's deadlock check, and it is tried again. (A
	// migration marked NO TRANSACTION, 00037, commits statement by
	// statement: each of its statements is safe to run again, so it too
	// is simply tried again from its first.)
	gcfg := pool.Config().Copy()
	gcfg.MaxConns = 2
	gcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET lock_timeout = '"+lockTimeout.String()+"'")
		return err
	}
	gpool, err := pgxpool.NewWithConfig(ctx, gcfg)
	if err != nil {
		return nil, fmt.Errorf("connecting for the app migrations: %w", err)
	}
	defer gpool.Close()
	prov, closeProv, err := provider(gpool)
	if err != nil {
		return nil, err
	}
	defer closeProv()
	began := time.Now()
	for attempt := 1; ; attempt++ {
		applied, err := prov.Up(ctx)
		var partial *goose.PartialError
		if errors.As(err, &partial) {
			applied = partial.Applied
		}
		for _, r := range applied {
			res.AppApplied = append(res.AppApplied, r.Source.Version)
			logger.Info("applied migration", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
		if len(applied) > 0 {
			began = time.Now() // the budget is for the migration that waits, not the work before it
		}
		if err == nil {
			break
		}
		if !lockConflict(err) {
			return nil, fmt.Errorf("applying app migrations: %w", err)
		}
		if time.Since(began) >= lockBudget {
			return nil, fmt.Errorf("applying app migrations: a migration found a table busy for %s (each attempt waits %s for a lock; %d attempts in all): %w", lockBudget, lockTimeout, attempt, err)
		}
		logger.Info("migration waited too long for a lock; trying it again", "attempt", attempt, "error", err.Error())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPause(attempt)):
		}
	}

	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{RiverSchema}.Sanitize()); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", RiverSchema, err)
	}
	rm, err := riverMigrator(pool, logger)
	if err != nil {
		return nil, err
	}
	rres, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("applying River migrations: %w", err)
	}
	for _, v := range rres.Versions {
		res.RiverApplied = append(res.RiverApplied, v.Version)
		logger.Info("applied River migration", "version", v.Version, "name", v.Name, "duration", v.Duration)
	}
	return res, nil
}

// How long an app migration waits for a lock before it is rolled back and
// tried again (below deadlock_timeout's default of 1 s: a migration alters
// one table the previous release uses, see 00035, but may wait on a few
// locks of it), and for how long migrate keeps trying one migration
// before it gives up (the clock starts again when a migration is
// applied). The budget is time, not a count of attempts: under a rolling
// upgrade's full load (RELIABILITY.md's rolling-upgrade) a table may stay
// busy for a minute, and 60 attempts (some 70 s) once ran out.
const (
	lockTimeout = 150 * time.Millisecond
	lockBudget  = 10 * time.Minute
)

// lockPause is the pause before attempt+1: growing from 200 ms to a
// second, with up to half of it again at random, so that a retry does not
// meet the same request in the same phase each time.
func lockPause(attempt int) time.Duration {
	d := time.Duration(min(attempt, 5)) * 200 * time.Millisecond
	return d + rand.N(d/2+1)
}

// lockConflict reports whether err is a migration that gave up on a lock
// (lock_timeout) or lost a deadlock: rolled back, to be tried again.
func lockConflict(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "55P03" || pg.Code == "40P01")
}

// Check returns nil when both the app and River schemas are current, and an
// error wrapping ErrOutdated (with what is missing) when they are not.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	prov, closeProv, err := provider(pool)
	if err != nil {
		return err
	}
	defer closeProv()
	current, target, err := prov.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("reading app schema version: %w", err)
	}
	if current < target {
		return fmt.Errorf("app schema at version %d of %d: %w", current, target, ErrOutdated)
	}
	var riverSchemaExists bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", RiverSchema).Scan(&riverSchemaExists); err != nil {
		return fmt.Errorf("looking for schema %s: %w", RiverSchema, err)
	}
	if !riverSchemaExists {
		return fmt.Errorf("the River schema %q is missing: %w", RiverSchema, ErrOutdated)
	}
	rm, err := riverMigrator(pool, nil)
	if err != nil {
		return err
	}
	v, err := rm.Validate(ctx, nil)
	if err != nil {
		return fmt.Errorf("validating River schema: %w", err)
	}
	if !v.OK {
		return fmt.Errorf("the River schema is not current: %v: %w", v.Messages, ErrOutdated)
	}
	return nil
}

// Hash identifies the full set of migrations this binary carries; test
// helpers use it to know when a template database must be rebuilt.
func Hash() (string, error) {
	h := sha256.New()
	names, err := fs.Glob(files, "sql/*.sql")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	rm, err := rivermigrate.New(riverpgxv5.New(nil), &rivermigrate.Config{Schema: RiverSchema})
	if err != nil {
		return "", err
	}
	for _, m := range rm.AllVersions() {
		fmt.Fprintf(h, "river\x00%d\x00%s\x00", m.Version, m.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func provider(pool *pgxpool.Pool) (*goose.Provider, func(), error) {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	prov, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("loading app migrations: %w", err)
	}
	return prov, func() { _ = db.Close() }, nil
}

func riverMigrator(pool *pgxpool.Pool, logger *slog.Logger) (*rivermigrate.Migrator[pgx.Tx], error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: RiverSchema, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("loading River migrations: %w", err)
	}
	return m, nil
}
