// Package pgcluster runs throwaway PostgreSQL clusters for tests and the
// soak: initdb into a temporary directory, a server on a free local port, a
// streaming standby made with pg_basebackup -R, and a private PgBouncer in
// front of a server. When the process is root the servers run as the
// postgres user (runuser), as PostgreSQL and PgBouncer require. It is never
// linked into the product binary.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// dirPrefix names every directory this package creates, so that Destroy
// can never remove anything else.
const dirPrefix = "followfeed-pg-"

// ErrNoBinaries is returned (wrapped) when no PostgreSQL server binaries are
// installed under /usr/lib/postgresql.
var ErrNoBinaries = errors.New("no PostgreSQL binaries under /usr/lib/postgresql (install Debian's postgresql package)")

// Cluster is one throwaway PostgreSQL server: its data directory, port and
// log live under Dir, which Destroy deletes.
type Cluster struct {
	Bin  string // PostgreSQL's bin directory
	Dir  string // everything lives here
	Data string // the data directory
	Port int
	Log  string // the server log
	// runas is the runuser prefix, or empty.
	runas []string
}

// Bin returns the bin directory of the newest installed PostgreSQL, or
// ErrNoBinaries.
func Bin() (string, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	bins = slices.DeleteFunc(bins, func(b string) bool {
		_, err := os.Stat(filepath.Join(b, "initdb"))
		return err != nil
	})
	slices.SortFunc(bins, func(a, b string) int { return versionOf(a) - versionOf(b) })
	if len(bins) == 0 {
		return "", ErrNoBinaries
	}
	return bins[len(bins)-1], nil
}

// newDir makes an empty cluster directory (owned by postgres when root).
func newDir() (*Cluster, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Bin: bin}
	if c.Port, err = FreePort(firstPort, lastPort); err != nil {
		return nil, err
	}
	if c.Dir, c.runas, err = ownDir(); err != nil {
		return nil, err
	}
	c.Data = filepath.Join(c.Dir, "data")
	c.Log = filepath.Join(c.Dir, "server.log")
	return c, nil
}

// ownDir makes a directory under /tmp named with dirPrefix for a server to
// run in: when the process is root it belongs to the postgres user and
// runas is the runuser prefix that runs commands as that user.
func ownDir() (dir string, runas []string, err error) {
	if dir, err = os.MkdirTemp("/tmp", dirPrefix); err != nil {
		return "", nil, err
	}
	_ = os.Chmod(dir, 0o755)
	if os.Geteuid() != 0 {
		return dir, nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		removeDir(dir)
		return "", nil, errors.New("running as root needs a postgres user to own the throwaway cluster")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		removeDir(dir)
		return "", nil, err
	}
	return dir, []string{"runuser", "-u", "postgres", "--"}, nil
}

// New initialises and starts a cluster on a free port from 54400, with
// trust authentication for local TCP (replication included) and fsync off.
func New(ctx context.Context) (*Cluster, error) {
	c, err := newDir()
	if err != nil {
		return nil, err
	}
	if out, err := c.run(ctx, filepath.Join(c.Bin, "initdb"), "-D", c.Data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--no-locale"); err != nil {
		c.remove()
		return nil, fmt.Errorf("initdb: %v: %s", err, LastBytes(out, 400))
	}
	if err := c.startNew(ctx); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// Standby makes a streaming hot standby of c with pg_basebackup -R (which
// writes primary_conninfo and standby.signal) and starts it on its own port.
func (c *Cluster) Standby(ctx context.Context) (*Cluster, error) {
	s, err := newDir()
	if err != nil {
		return nil, err
	}
	if out, err := s.run(ctx, filepath.Join(s.Bin, "pg_basebackup"), "-D", s.Data, "-h", "127.0.0.1",
		"-p", strconv.Itoa(c.Port), "-U", "postgres", "-R", "-X", "stream", "-c", "fast"); err != nil {
		s.remove()
		return nil, fmt.Errorf("pg_basebackup: %v: %s", err, LastBytes(out, 400))
	}
	if err := s.startNew(ctx); err != nil {
		s.remove()
		return nil, err
	}
	return s, nil
}

// The ports clusters are started on.
const firstPort, lastPort = 54400, 54599

// startNew starts a new cluster's server for the first time. Its port was
// free when newDir chose it, but every cluster takes the first free port,
// so another one made at the same time (a parallel test, another package's
// test binary, the soak) may have bound it since: the server then moves to
// the port that is first free now, a few times at most.
func (c *Cluster) startNew(ctx context.Context) error {
	for tries := 1; ; tries++ {
		err := c.Start(ctx)
		if err == nil || tries == 5 || !portTaken(c.Port) {
			return err
		}
		if c.Port, err = FreePort(firstPort, lastPort); err != nil {
			return err
		}
	}
}

// portTaken reports whether something listens on port of 127.0.0.1.
func portTaken(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return true
	}
	ln.Close()
	return false
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off -c shared_buffers=64MB", c.Port, c.Dir)
	if out, err := c.run(ctx, filepath.Join(c.Bin, "pg_ctl"), "-D", c.Data, "-l", c.Log, "-w", "-t", "60", "start", "-o", opts); err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, LastBytes(out, 400))
	}
	return nil
}

// Stop stops the server with mode ("fast" or "immediate") and waits.
func (c *Cluster) Stop(ctx context.Context, mode string) error {
	if out, err := c.run(ctx, filepath.Join(c.Bin, "pg_ctl"), "-D", c.Data, "-m", mode, "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, LastBytes(out, 400))
	}
	return nil
}

// PID is the server's postmaster process id (the first line of
// postmaster.pid), or 0 when it is not running.
func (c *Cluster) PID() int {
	b, err := os.ReadFile(filepath.Join(c.Data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return n
}

// URL returns a connection string for database db.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", c.Port, db)
}

// Destroy stops the cluster at once and deletes its files.
func (c *Cluster) Destroy() {
	_ = c.Stop(context.Background(), "immediate")
	c.remove()
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := asUser(ctx, c.runas, name, args...).CombinedOutput()
	return string(out), err
}

// asUser is the command name args run through the runas prefix, from /.
func asUser(ctx context.Context, runas []string, name string, args ...string) *exec.Cmd {
	argv := append(slices.Clone(runas), name)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = "/"
	return cmd
}

func (c *Cluster) remove() { removeDir(c.Dir) }

// removeDir deletes dir, only if it is one of this package's.
func removeDir(dir string) {
	if dir != "" && strings.HasPrefix(dir, filepath.Join("/tmp", dirPrefix)) {
		_ = os.RemoveAll(dir)
	}
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// FreePort returns the first port in [from, to] free on 127.0.0.1.
func FreePort(from, to int) (int, error) {
	for p := from; p <= to; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", from, to)
}

// LastBytes returns the last n bytes of s, for error messages.
func LastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
