package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNoBouncer is returned (wrapped) when no pgbouncer binary is installed.
var ErrNoBouncer = errors.New("no pgbouncer binary (install Debian's pgbouncer package, e.g. scripts/pgbouncer-ensure.sh)")

// BouncerBinary returns the path of the installed pgbouncer, or ErrNoBouncer.
func BouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", ErrNoBouncer
}

// BouncerVersion is a PgBouncer release.
type BouncerVersion struct{ Major, Minor, Patch int }

func (v BouncerVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// PreparedStatements reports whether this release can keep protocol-level
// prepared statements working in transaction mode (max_prepared_statements,
// PgBouncer 1.21 and later).
func (v BouncerVersion) PreparedStatements() bool {
	return v.Major > 1 || v.Major == 1 && v.Minor >= 21
}

var bouncerVersionRE = regexp.MustCompile(`(?m)^PgBouncer (\d+)\.(\d+)(?:\.(\d+))?`)

// ParseBouncerVersion reads the release from `pgbouncer --version` output
// ("PgBouncer 1.18.0\nlibevent …").
func ParseBouncerVersion(out string) (BouncerVersion, error) {
	m := bouncerVersionRE.FindStringSubmatch(out)
	if m == nil {
		return BouncerVersion{}, fmt.Errorf("no PgBouncer version in %q", LastBytes(out, 200))
	}
	var v BouncerVersion
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	return v, nil
}

// BouncerOptions configure a private PgBouncer; zero values take the
// defaults.
type BouncerOptions struct {
	// Mode is pool_mode: "transaction" (the default), "session" or
	// "statement".
	Mode string
	// PoolSize is default_pool_size: server connections per database and
	// user (default 10).
	PoolSize int
	// MaxPrepared is max_prepared_statements (default 200 where the release
	// supports it, PgBouncer ≥ 1.21; never written for older ones, which
	// refuse unknown settings).
	MaxPrepared int
}

// BouncerConfig is what BouncerIni writes.
type BouncerConfig struct {
	BouncerOptions
	Version    BouncerVersion
	ListenPort int
	// ServerPort is the PostgreSQL server on 127.0.0.1 every database name
	// is passed to (the "*" fallback entry).
	ServerPort int
	// Dir holds the auth file, log and pid file.
	Dir string
}

// BouncerIni renders pgbouncer.ini for a private instance: loopback TCP
// only (no Unix socket, so it never meets the system's), trust
// authentication for the users of userlist.txt in Dir (PgBouncer needs the
// user listed even with trust), postgres as admin and stats user (SHOW
// STATS, SHOW POOLS on the pgbouncer database), and every database name
// routed to the same name on the server.
func BouncerIni(c BouncerConfig) string {
	mode := c.Mode
	if mode == "" {
		mode = "transaction"
	}
	size := c.PoolSize
	if size <= 0 {
		size = 10
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[databases]\n* = host=127.0.0.1 port=%d\n\n", c.ServerPort)
	b.WriteString("[pgbouncer]\n")
	for _, kv := range [][2]string{
		{"listen_addr", "127.0.0.1"},
		{"listen_port", strconv.Itoa(c.ListenPort)},
		{"unix_socket_dir", ""},
		{"auth_type", "trust"},
		{"auth_file", filepath.Join(c.Dir, "userlist.txt")},
		{"admin_users", "postgres"},
		{"stats_users", "postgres"},
		{"pool_mode", mode},
		{"default_pool_size", strconv.Itoa(size)},
		{"max_client_conn", "500"},
		// pgx sends none of these, psql and JDBC send extra_float_digits.
		{"ignore_startup_parameters", "extra_float_digits"},
		// SHOW STATS totals move only every stats_period (default 60 s).
		{"stats_period", "1"},
		{"logfile", filepath.Join(c.Dir, "pgbouncer.log")},
		{"pidfile", filepath.Join(c.Dir, "pgbouncer.pid")},
	} {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
	}
	if c.Version.PreparedStatements() {
		n := c.MaxPrepared
		if n <= 0 {
			n = 200
		}
		fmt.Fprintf(&b, "max_prepared_statements = %d\n", n)
	}
	return b.String()
}

// Bouncer is a private PgBouncer in front of a cluster: its configuration,
// log and pid file live under Dir, which Stop deletes.
type Bouncer struct {
	Dir     string
	Port    int
	Log     string
	Mode    string
	Version BouncerVersion

	cmd  *exec.Cmd
	done chan struct{}
}

// Bouncer starts a private PgBouncer on a free port from 64320 in front of
// c and waits until it accepts connections.
func (c *Cluster) Bouncer(ctx context.Context, opt BouncerOptions) (*Bouncer, error) {
	return StartBouncer(ctx, c.Port, opt)
}

// StartBouncer starts a private PgBouncer on a free port from 64320 in
// front of the PostgreSQL server on 127.0.0.1:serverPort (which must trust
// local TCP connections of user postgres) and waits until it accepts
// connections. As root it runs as the postgres user (PgBouncer refuses to
// run as root).
func StartBouncer(ctx context.Context, serverPort int, opt BouncerOptions) (*Bouncer, error) {
	bin, err := BouncerBinary()
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("pgbouncer --version: %v: %s", err, LastBytes(string(out), 200))
	}
	v, err := ParseBouncerVersion(string(out))
	if err != nil {
		return nil, err
	}
	port, err := FreePort(64320, 64519)
	if err != nil {
		return nil, err
	}
	dir, runas, err := ownDir()
	if err != nil {
		return nil, err
	}
	b := &Bouncer{Dir: dir, Port: port, Log: filepath.Join(dir, "pgbouncer.log"), Version: v, Mode: opt.Mode, done: make(chan struct{})}
	if b.Mode == "" {
		b.Mode = "transaction"
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	for _, f := range [][2]string{
		{ini, BouncerIni(BouncerConfig{BouncerOptions: opt, Version: v, ListenPort: port, ServerPort: serverPort, Dir: dir})},
		{filepath.Join(dir, "userlist.txt"), `"postgres" ""` + "\n"},
	} {
		if err := os.WriteFile(f[0], []byte(f[1]), 0o644); err != nil {
			removeDir(dir)
			return nil, err
		}
	}
	// Not CommandContext: the bouncer outlives the start's context.
	b.cmd = asUser(context.Background(), runas, bin, ini)
	if err := b.cmd.Start(); err != nil {
		removeDir(dir)
		return nil, fmt.Errorf("starting pgbouncer: %w", err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			return b, nil
		}
		select {
		case <-b.done:
			logText, _ := os.ReadFile(b.Log)
			removeDir(dir)
			return nil, fmt.Errorf("pgbouncer exited at start: %s", LastBytes(string(logText), 400))
		case <-ctx.Done():
			b.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("pgbouncer did not accept connections on port %d within 15 s", port)
		}
	}
}

// URL returns a connection string for database db through the bouncer,
// for pgx clients. In transaction mode on a release without prepared
// statement support (before 1.21) it sets default_query_exec_mode=
// cache_describe: pgx's default mode prepares named statements on one
// server connection and runs them on whichever the next transaction gets,
// which fails ("prepared statement … does not exist").
func (b *Bouncer) URL(db string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", b.Port, url.PathEscape(db))
	if b.Mode != "session" && !b.Version.PreparedStatements() {
		u += "&default_query_exec_mode=cache_describe"
	}
	return u
}

// RawURL is URL without any exec mode: pgx's defaults, which transaction
// pooling breaks before PgBouncer 1.21.
func (b *Bouncer) RawURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", b.Port, url.PathEscape(db))
}

// AdminURL is the bouncer's admin console (database pgbouncer): SHOW STATS,
// SHOW POOLS. It speaks the simple query protocol only.
func (b *Bouncer) AdminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pgbouncer?sslmode=disable&connect_timeout=5&default_query_exec_mode=simple_protocol", b.Port)
}

// Stop shuts the bouncer down at once (SIGTERM to PgBouncer, through its
// pid file), waits for it and deletes its directory.
func (b *Bouncer) Stop() {
	select {
	case <-b.done:
	default:
		if pid := b.PID(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		} else {
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			if pid := b.PID(); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	}
	removeDir(b.Dir)
}

// PID is PgBouncer's own process id from its pid file (the started command
// may be runuser), or 0.
func (b *Bouncer) PID() int {
	data, err := os.ReadFile(filepath.Join(b.Dir, "pgbouncer.pid"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return n
}

// Probe runs conns × perConn small transactions (one parameterised query
// each, the same text every time) on conns connections of a pgx pool on
// dsn, all at once, and returns the errors they met; err is set when no
// pool could be made. Through PgBouncer in transaction mode it shows
// whether pgx's statement handling survives transactions moving between
// server connections.
func Probe(ctx context.Context, dsn string, conns, perConn int) (errs []error, err error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perConn {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					var n int
					if err := tx.QueryRow(ctx, `SELECT $1::int + $2::int`, g, i).Scan(&n); err != nil {
						return err
					}
					if n != g+i {
						return fmt.Errorf("%d + %d = %d", g, i, n)
					}
					return nil
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errs, nil
}

// BouncerStats are PgBouncer's running totals for one database (SHOW
// STATS) and its pools' connections now (SHOW POOLS).
type BouncerStats struct {
	Transactions, Queries int64
	// Clients are client connections active or waiting, Servers the
	// server connections open (active, idle, used, tested or logging in).
	Clients, Servers int64
}

// Stats reads the admin console's figures for database db. The totals lag
// by up to a second (stats_period).
func (b *Bouncer) Stats(ctx context.Context, db string) (BouncerStats, error) {
	var st BouncerStats
	conn, err := pgx.Connect(ctx, b.AdminURL())
	if err != nil {
		return st, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := adminRows(ctx, conn, "SHOW STATS", db)
	if err != nil {
		return st, err
	}
	for _, r := range rows {
		st.Transactions += r["total_xact_count"]
		st.Queries += r["total_query_count"]
	}
	if rows, err = adminRows(ctx, conn, "SHOW POOLS", db); err != nil {
		return st, err
	}
	for _, r := range rows {
		st.Clients += r["cl_active"] + r["cl_waiting"]
		st.Servers += r["sv_active"] + r["sv_idle"] + r["sv_used"] + r["sv_tested"] + r["sv_login"]
	}
	return st, nil
}

// adminRows runs an admin console command and returns the integer columns
// of the rows of database db. The console answers in the simple protocol,
// so every value arrives as text (counters as numeric): each is parsed from
// its raw text.
func adminRows(ctx context.Context, conn *pgx.Conn, cmd, db string) ([]map[string]int64, error) {
	rows, err := conn.Query(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	defer rows.Close()
	var out []map[string]int64
	for rows.Next() {
		raw := rows.RawValues()
		m := map[string]int64{}
		match := false
		for i, f := range rows.FieldDescriptions() {
			s := string(raw[i])
			if f.Name == "database" {
				match = s == db
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				m[f.Name] = n
			}
		}
		if match {
			out = append(out, m)
		}
	}
	return out, rows.Err()
}
