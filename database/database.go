// Package database owns the PostgreSQL connection pool and the transaction and
// error conventions every domain package follows: public methods open the
// transaction with InTx, helpers take the pgx.Tx, and a missing row becomes
// ErrNotFound at this boundary.
package database

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"followfeed/apperr"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned (wrapped) when a requested row does not exist.
// Every error that wraps it and reaches the HTTP layer is answered 404
// through the problem table (httpapi), with the message of the innermost
// *apperr.Error when there is one (see Missing).
var ErrNotFound = errors.New("not found")

// ErrUnavailable is returned (wrapped) when the database cannot be reached or
// did not answer in time; HTTP maps it to 503.
var ErrUnavailable = errors.New("database unavailable")

// DB is the application's handle on PostgreSQL. It is safe for concurrent use.
type DB struct {
	Pool *pgxpool.Pool
	// replica, when attached (AttachReplica), takes Read's work.
	replica *Replica
}

// Options tune the pool; zero values take sensible defaults.
type Options struct {
	MaxConns int32
	// AppName is reported in pg_stat_activity.
	AppName string
}

// poolConfig parses dsn (named by variable in errors) into a pool
// configuration with opt applied, a connect timeout of at most
// maxConnect, and health checks: a failed health check must not leave dead
// connections in the pool after a server restart, so connections idle for
// more than a few seconds are checked.
func poolConfig(dsn, variable string, opt Options, maxConnect time.Duration) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", variable, err)
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > maxConnect {
		cfg.ConnConfig.ConnectTimeout = maxConnect
	}
	if opt.AppName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opt.AppName
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.MaxConnIdleTime = 5 * time.Minute
	return cfg, nil
}

// Open connects a pool to dsn and checks it with one round trip. It fails
// fast (connect timeout 5 s) instead of hanging when the server is down.
func Open(ctx context.Context, dsn string, opt Options) (*DB, error) {
	cfg, err := poolConfig(dsn, "DATABASE_URL", opt, 5*time.Second)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating pool: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to %s: %w", redacted(cfg), err)
	}
	return &DB{Pool: pool}, nil
}

func redacted(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Close releases every connection, the replica's too.
func (db *DB) Close() {
	if db.replica != nil {
		db.replica.close()
	}
	db.Pool.Close()
}

// InTx runs fn in a transaction and commits when fn returns nil; any error or
// panic rolls back. It is the only way domain code opens a transaction.
func (db *DB) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.Pool, fn)
}

// InTxIso is InTx with an explicit isolation level.
func (db *DB) InTxIso(ctx context.Context, iso pgx.TxIsoLevel, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: iso}, fn)
}

// NotFound converts pgx.ErrNoRows into ErrNotFound wrapped with what; other
// errors are returned wrapped unchanged. nil stays nil. what is for logs;
// a person sees Missing's message, or a generic one.
func NotFound(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Missing returns a not-found error with a message a person can act on
// ("you do not follow cs.LG"). It is an *apperr.Error with code NotFound
// that also wraps ErrNotFound, so both errors.Is(err, ErrNotFound) and the
// problem table see it.
func Missing(format string, args ...any) error {
	return &apperr.Error{Code: apperr.NotFound, Message: fmt.Sprintf(format, args...), Err: ErrNotFound}
}

// IsUniqueViolation reports whether err is a unique-constraint violation,
// optionally of the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return constraint == "" || pgErr.ConstraintName == constraint
	}
	return false
}

// IsForeignKeyViolation reports whether err is a foreign-key violation,
// optionally of the named constraint.
func IsForeignKeyViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return constraint == "" || pgErr.ConstraintName == constraint
	}
	return false
}

// IsUserGone reports whether err is a write that named a user who is no
// longer there: a foreign-key violation of a user_id column (every
// reference to users(id) is a column user_id, so its constraint is named
// <table>_user_id_fkey). The user was erased (account.Users.Erase) after
// the writer read them; the write has nothing left to do.
func IsUserGone(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503" && strings.HasSuffix(pgErr.ConstraintName, "_user_id_fkey")
}

// IsRetryable reports whether err ended its transaction in a deadlock or
// a serialization failure: the same transaction run again may succeed.
func IsRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// IsUnavailable reports whether err means the database could not be used at
// all (connection refused, reset, timed out, shutting down) as opposed to a
// query that failed.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01..57P03: admin shutdown,
		// crash shutdown, cannot connect now.
		return pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// EnsureDatabase creates the database named in dsn when it does not exist,
// connecting to the server's "postgres" database to do so. It exists for
// development and tests (`make run` on a fresh server); production databases
// are created by their operators.
func EnsureDatabase(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parsing DATABASE_URL: %w", err)
	}
	name := cfg.Database
	if name == "" || name == "postgres" {
		return nil
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	// A database that accepts connections exists: this also keeps a pooler
	// in front (PgBouncer lists only its configured databases, not
	// "postgres") from failing the start-up.
	if conn, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connecting to the postgres database to create %q: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("looking for database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && !IsUniqueViolation(err, "") && !isDuplicateDatabase(err) {
		return fmt.Errorf("creating database %q: %w", name, err)
	}
	return nil
}

func isDuplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P04"
}
