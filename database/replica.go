package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"followfeed/apperr"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Replica is a PostgreSQL streaming replica (a hot standby) that read-only
// work may be sent to through DB.Read. It never makes a read fail: a replica
// that is down, erroring, lagging or not fresh enough for a read sends that
// read to the primary.
type Replica struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	// downFor is how long a replica that failed is left alone before it is
	// tried again.
	downFor time.Duration
	// lagEvery is the lag monitor's period: a replica that has not replayed
	// the primary's WAL position of one period ago is lagging.
	lagEvery time.Duration

	downUntil atomic.Int64 // unix nanoseconds; 0: up
	lagging   atomic.Bool
	checked   atomic.Bool // the lag monitor has compared once
	// lastWarn holds the unix nanoseconds of the last warn line of each
	// kind: 0 down, 1 lagging.
	lastWarn [2]atomic.Int64

	stats [2]ReplicaStats // by ReadKind
	stop  context.CancelFunc
	done  sync.WaitGroup
}

// ReadKind is the guarantee a read asked DB.Read for; stats are kept per
// kind.
type ReadKind int

const (
	// Checked reads carry a freshness check (feed renders, private and
	// public): only they can be Stale.
	Checked ReadKind = iota
	// Bounded reads accept bounded staleness (follow status, previews):
	// only they can be Lagging.
	Bounded
)

// String is the kind's metric label: "checked" or "bounded".
func (k ReadKind) String() string {
	if k == Bounded {
		return "bounded"
	}
	return "checked"
}

// ReplicaStats counts where reads of one ReadKind went. Every field is a
// running total.
type ReplicaStats struct {
	// Replica counts reads answered by the replica.
	Replica atomic.Uint64
	// Stale counts reads the replica was behind for (its snapshot older
	// than what the primary had answered), sent to the primary.
	Stale atomic.Uint64
	// Lagging counts bounded-staleness reads sent to the primary because
	// the lag monitor found the replica behind.
	Lagging atomic.Uint64
	// Errors counts reads the replica failed (down, refused, cancelled by
	// recovery conflicts), sent to the primary.
	Errors atomic.Uint64
	// Down counts reads sent to the primary while the replica was left
	// alone after an error.
	Down atomic.Uint64
}

// ReplicaOptions tune a replica; zero values take the defaults.
type ReplicaOptions struct {
	Options
	// DownFor is how long a failed replica is left alone (default 5 s).
	DownFor time.Duration
	// LagEvery is the lag monitor's period (default 1 s): bounded-staleness
	// reads (follow status, previews) use the replica only while it has
	// replayed what the primary had written one period earlier.
	LagEvery time.Duration
	Logger   *slog.Logger
}

// AttachReplica opens a pool on the streaming replica at dsn and makes db.Read
// use it. The replica need not be up: it is only a preference, and Open
// of the replica does not ping. Close the DB to stop it.
func (db *DB) AttachReplica(dsn string, opt ReplicaOptions) error {
	// A replica that does not answer must cost a read little (the primary
	// is the fallback): a shorter connect timeout than the primary's.
	cfg, err := poolConfig(dsn, "DATABASE_REPLICA_URL", opt.Options, 2*time.Second)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("creating replica pool: %w", err)
	}
	r := &Replica{pool: pool, logger: opt.Logger, downFor: opt.DownFor, lagEvery: opt.LagEvery}
	if r.downFor <= 0 {
		r.downFor = 5 * time.Second
	}
	if r.lagEvery <= 0 {
		r.lagEvery = time.Second
	}
	if r.logger == nil {
		r.logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.done.Add(1)
	go r.monitor(ctx, db.Pool)
	db.replica = r
	return nil
}

// Replica returns the attached replica, or nil.
func (db *DB) Replica() *Replica { return db.replica }

// Stats returns the replica's running counters of reads of kind k.
func (r *Replica) Stats(k ReadKind) *ReplicaStats { return &r.stats[k] }

// Up reports whether the replica is currently used (not left alone after
// an error).
func (r *Replica) Up() bool { return time.Now().UnixNano() >= r.downUntil.Load() }

// Lagging reports whether the lag monitor last found the replica behind.
func (r *Replica) Lagging() bool { return r.lagging.Load() }

func (r *Replica) close() {
	r.stop()
	r.done.Wait()
	r.pool.Close()
}

// monitor compares, every lagEvery, the replica's replayed WAL position
// with the primary's position of the previous round: two cheap function
// calls, no table read.
func (r *Replica) monitor(ctx context.Context, primary *pgxpool.Pool) {
	defer r.done.Done()
	t := time.NewTicker(r.lagEvery)
	defer t.Stop()
	prev := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, r.lagEvery)
		var cur string
		if err := primary.QueryRow(qctx, `SELECT pg_current_wal_lsn()::text`).Scan(&cur); err != nil {
			cancel()
			continue // the primary's own troubles are reported elsewhere
		}
		if prev != "" && r.Up() {
			var behind bool
			// coalesce: a server not in recovery (a promoted replica, or
			// the primary itself named as replica) has replayed everything
			// it has.
			err := r.pool.QueryRow(qctx, `
				SELECT coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn()) < $1::pg_lsn`, prev).Scan(&behind)
			if err != nil {
				if ctx.Err() == nil {
					r.failed(err)
				}
			} else {
				if behind && !r.lagging.Load() {
					r.warn(warnLag, "replica is lagging: it has not replayed what the primary wrote "+r.lagEvery.String()+" ago; follow status and previews read the primary until it catches up")
				}
				r.lagging.Store(behind)
				r.checked.Store(true)
			}
		}
		cancel()
		prev = cur
	}
}

// failed leaves the replica alone for downFor and logs (rate-limited).
func (r *Replica) failed(err error) {
	r.downUntil.Store(time.Now().Add(r.downFor).UnixNano())
	r.warn(warnDown, fmt.Sprintf("replica unavailable, reading from the primary for %s: %v", r.downFor, err))
}

// The kinds of warn line, each rate-limited on its own.
const (
	warnDown = iota
	warnLag
)

// warn logs at most one line of each kind per 30 s.
func (r *Replica) warn(kind int, msg string) {
	now := time.Now().UnixNano()
	last := r.lastWarn[kind].Load()
	if now-last < int64(30*time.Second) || !r.lastWarn[kind].CompareAndSwap(last, now) {
		return
	}
	c, b := &r.stats[Checked], &r.stats[Bounded]
	r.logger.Warn(msg, "replica_reads", c.Replica.Load()+b.Replica.Load(), "stale", c.Stale.Load(),
		"lagging", b.Lagging.Load(), "errors", c.Errors.Load()+b.Errors.Load(), "down", c.Down.Load()+b.Down.Load())
}

// Fresh is the freshness check of a read on the replica: a statement that
// decides, inside the replica's read transaction (its snapshot), whether that
// snapshot has everything the caller's answer promises — for a feed, at
// least the version its ETag was derived from on the primary. It must
// return one row of one boolean, true when fresh; no row means not fresh. It
// is sent with BEGIN and the read's first statements (DB.ReadBatch), so it
// costs no round trip of its own, and should cost one index probe.
type Fresh struct {
	SQL  string
	Args []any
}

// Read runs fn in a read-only repeatable-read transaction: on the replica
// when one is attached, up, and fresh enough, else on the primary. fresh
// nil asks for bounded staleness only (the lag monitor's period, about a
// second): the replica is used while it is not lagging. fn may run twice
// (on the replica, then on the primary) and must set its results from
// scratch each time. An error of fn that is a domain answer (apperr,
// ErrNotFound) is returned as is; any other replica error falls back to the
// primary without failing the read.
func (db *DB) Read(ctx context.Context, fresh *Fresh, fn func(tx pgx.Tx) error) error {
	return db.ReadBatch(ctx, fresh, nil, fn)
}

// ReadBatch is Read whose transaction starts with the statements first
// queues on b: BEGIN, the freshness check (on the replica) and they go to
// the server in one round trip, and their results are read (b's callbacks
// run) before fn is called with the transaction. first may be nil; like fn
// it may run twice (replica, then primary) and its callbacks must set
// their results from scratch. A replica snapshot that is not fresh
// discards the results of first's statements: their callbacks after the
// check are not run, nor is fn.
func (db *DB) ReadBatch(ctx context.Context, fresh *Fresh, first func(b *pgx.Batch), fn func(tx pgx.Tx) error) error {
	if r := db.replica; r != nil {
		done, err := r.read(ctx, fresh, first, fn)
		if done || ctx.Err() != nil {
			return err
		}
	}
	return readTx(ctx, db.Pool, nil, first, fn)
}

// readTx runs a read-only repeatable-read transaction on pool: BEGIN,
// fresh's check (errStale when it answers no) and first's statements in one
// batch, then fn; it commits when fn returns nil and rolls back otherwise.
func readTx(ctx context.Context, pool *pgxpool.Pool, fresh *Fresh, first func(b *pgx.Batch), fn func(tx pgx.Tx) error) error {
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if fresh != nil {
		b.Queue(fresh.SQL, fresh.Args...).QueryRow(func(row pgx.Row) error {
			var ok bool
			if err := row.Scan(&ok); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("checking the replica's freshness: %w", err)
			}
			if !ok {
				return errStale
			}
			return nil
		})
	}
	if first != nil {
		first(&b)
	}
	br := pool.SendBatch(ctx, &b)
	// tx owns the connection until it is committed or rolled back (also
	// when the batch failed before BEGIN: then Rollback only releases
	// it); the deferred Rollback, a no-op after Commit, also covers a
	// panic of fn. Its error is dropped: a failed read has its own, and a
	// committed one has none.
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }()
	if err := br.Close(); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// errStale ends a replica transaction whose snapshot is not fresh enough.
var errStale = errors.New("replica snapshot older than the primary's answer")

// read tries the replica; done says the read is answered (with err).
func (r *Replica) read(ctx context.Context, fresh *Fresh, first func(b *pgx.Batch), fn func(tx pgx.Tx) error) (done bool, err error) {
	st := &r.stats[Checked]
	if fresh == nil {
		st = &r.stats[Bounded]
	}
	switch {
	case !r.Up():
		st.Down.Add(1)
		return false, nil
	case fresh == nil && (r.lagging.Load() || !r.checked.Load()):
		st.Lagging.Add(1)
		return false, nil
	}
	err = readTx(ctx, r.pool, fresh, first, fn)
	switch {
	case err == nil:
		st.Replica.Add(1)
		return true, nil
	case errors.Is(err, errStale):
		st.Stale.Add(1)
		return false, nil
	case ctx.Err() != nil:
		return true, err
	case isAnswer(err):
		st.Replica.Add(1)
		return true, err
	}
	st.Errors.Add(1)
	r.failed(err)
	return false, nil
}

// isAnswer reports whether err is a domain answer rather than a failure of
// the server.
func isAnswer(err error) bool {
	var ae *apperr.Error
	return errors.As(err, &ae) || errors.Is(err, ErrNotFound)
}
