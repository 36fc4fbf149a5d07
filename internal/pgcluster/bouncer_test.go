package pgcluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseBouncerVersion(t *testing.T) {
	for _, c := range []struct {
		out      string
		want     BouncerVersion
		prepared bool
	}{
		{"PgBouncer 1.18.0\nlibevent 2.1.12-stable\nadns: c-ares 1.18.1\n", BouncerVersion{1, 18, 0}, false},
		{"PgBouncer 1.21.0\n", BouncerVersion{1, 21, 0}, true},
		{"PgBouncer 1.9\n", BouncerVersion{1, 9, 0}, false},
		{"PgBouncer 2.0.1\n", BouncerVersion{2, 0, 1}, true},
	} {
		v, err := ParseBouncerVersion(c.out)
		if err != nil || v != c.want || v.PreparedStatements() != c.prepared {
			t.Errorf("%q: %v (prepared %v), %v; want %v (prepared %v)", c.out, v, v.PreparedStatements(), err, c.want, c.prepared)
		}
	}
	if _, err := ParseBouncerVersion("bash: pgbouncer: command not found"); err == nil {
		t.Error("no version: no error")
	}
}

// iniSettings parses the [pgbouncer] section of an ini text.
func iniSettings(t *testing.T, ini string) (map[string]string, string) {
	t.Helper()
	settings := map[string]string{}
	section, databases := "", ""
	for _, line := range strings.Split(ini, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[databases]":
			databases += line
		case section == "[pgbouncer]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("line %q is not key = value", line)
			}
			if _, dup := settings[strings.TrimSpace(k)]; dup {
				t.Fatalf("%s set twice", k)
			}
			settings[strings.TrimSpace(k)] = strings.TrimSpace(v)
		default:
			t.Fatalf("line %q outside a section", line)
		}
	}
	return settings, databases
}

func TestBouncerIni(t *testing.T) {
	old := BouncerIni(BouncerConfig{Version: BouncerVersion{1, 18, 0}, ListenPort: 64321, ServerPort: 54401, Dir: "/tmp/followfeed-pg-x"})
	s, dbs := iniSettings(t, old)
	if dbs != "* = host=127.0.0.1 port=54401" {
		t.Errorf("databases: %q", dbs)
	}
	for k, want := range map[string]string{
		"listen_addr": "127.0.0.1", "listen_port": "64321", "unix_socket_dir": "", "auth_type": "trust",
		"auth_file": "/tmp/followfeed-pg-x/userlist.txt", "pool_mode": "transaction", "default_pool_size": "10",
		"admin_users": "postgres", "logfile": "/tmp/followfeed-pg-x/pgbouncer.log", "pidfile": "/tmp/followfeed-pg-x/pgbouncer.pid", "stats_period": "1",
	} {
		if got, ok := s[k]; !ok || got != want {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, want)
		}
	}
	// PgBouncer before 1.21 refuses a setting it does not know.
	if _, ok := s["max_prepared_statements"]; ok {
		t.Error("max_prepared_statements written for PgBouncer 1.18")
	}
	s, _ = iniSettings(t, BouncerIni(BouncerConfig{BouncerOptions: BouncerOptions{Mode: "session", PoolSize: 3}, Version: BouncerVersion{1, 22, 1},
		ListenPort: 64322, ServerPort: 5432, Dir: "/tmp/followfeed-pg-y"}))
	if s["pool_mode"] != "session" || s["default_pool_size"] != "3" || s["max_prepared_statements"] != "200" {
		t.Errorf("options not applied: %v", s)
	}
}

func TestBouncerURL(t *testing.T) {
	b := &Bouncer{Port: 64323, Mode: "transaction", Version: BouncerVersion{1, 18, 0}}
	if u := b.URL("soak"); !strings.Contains(u, "default_query_exec_mode=cache_describe") || !strings.HasPrefix(u, "postgres://postgres@127.0.0.1:64323/soak?") {
		t.Errorf("transaction mode on 1.18: %s", u)
	}
	for _, b := range []*Bouncer{{Port: 1, Mode: "transaction", Version: BouncerVersion{1, 21, 0}}, {Port: 1, Mode: "session", Version: BouncerVersion{1, 18, 0}}} {
		if u := b.URL("soak"); strings.Contains(u, "default_query_exec_mode") {
			t.Errorf("%s on %s needs pgx's default mode: %s", b.Mode, b.Version, u)
		}
	}
}

// TestBouncerTransactionMode starts a real PgBouncer in transaction mode in
// front of a throwaway cluster: with URL's exec mode, concurrent pgx
// transactions share fewer server connections than clients and none fails.
func TestBouncerTransactionMode(t *testing.T) {
	ctx := context.Background()
	c, err := New(ctx)
	if errors.Is(err, ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	b, err := c.Bouncer(ctx, BouncerOptions{PoolSize: 2})
	if errors.Is(err, ErrNoBouncer) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	t.Logf("PgBouncer %s on port %d", b.Version, b.Port)

	if errs := sums(t, b.URL("postgres")); len(errs) > 0 {
		t.Fatalf("through PgBouncer in transaction mode with %s: %d failures, the first: %v", b.URL("postgres"), len(errs), errs[0])
	}
	if !b.Version.PreparedStatements() {
		// The reason for the exec mode: pgx's default fails here.
		errs := sums(t, b.RawURL("postgres"))
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "prepared statement") {
			t.Errorf("pgx's default exec mode through PgBouncer %s in transaction mode: %d failures (%v), want prepared statement errors", b.Version, len(errs), errs)
		}
		t.Logf("pgx's default exec mode: %d of 400 transactions failed, e.g. %v", len(errs), errs[0])
	}
	time.Sleep(1100 * time.Millisecond) // PgBouncer updates its figures every stats_period (1 s): one must pass
	st, err := b.Stats(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	// 400 transactions each way, the control's failures included.
	if st.Transactions < 400 || st.Queries < 400 || st.Servers < 1 || st.Servers > 2 {
		t.Errorf("PgBouncer's figures for database postgres: %+v; want ≥ 400 transactions and queries on 1–2 server connections", st)
	}
	t.Logf("PgBouncer: %+v", st)
	fi, err := os.Stat(b.Dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("bouncer directory: %v", err)
	}
	b.Stop()
	if _, err := os.Stat(b.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left %s (%v)", b.Dir, err)
	}
}

// sums runs Probe's 400 transactions on 8 connections of dsn.
func sums(t *testing.T, dsn string) []error {
	t.Helper()
	errs, err := Probe(context.Background(), dsn, 8, 50)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}
