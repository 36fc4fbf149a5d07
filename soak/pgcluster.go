package soak

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

// cluster is a throwaway PostgreSQL cluster under /tmp, run as the postgres
// user when this process is root. It exists for the postgres-restart
// scenario, which must not touch a shared server.
type cluster struct {
	bin   string // PostgreSQL's bin directory
	dir   string // everything lives here
	data  string
	port  int
	runas []string // runuser prefix, or empty
	log   string
}

// newCluster initialises and starts a cluster on a free port from 54400.
func newCluster(ctx context.Context, e *env) (*cluster, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(bins, func(a, b string) int { return versionOf(a) - versionOf(b) })
	if len(bins) == 0 {
		return nil, errors.New("no PostgreSQL binaries under /usr/lib/postgresql (install Debian's postgresql package)")
	}
	c := &cluster{bin: bins[len(bins)-1]}
	port, err := freePort(54400, 54499)
	if err != nil {
		return nil, err
	}
	c.port = port
	if c.dir, err = os.MkdirTemp("/tmp", "followfeed-soak-pg-"); err != nil {
		return nil, err
	}
	_ = os.Chmod(c.dir, 0o755)
	c.data = filepath.Join(c.dir, "data")
	c.log = filepath.Join(c.dir, "server.log")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			c.remove()
			return nil, errors.New("running as root needs a postgres user to own the throwaway cluster")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			c.remove()
			return nil, err
		}
		c.runas = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := c.run(ctx, filepath.Join(c.bin, "initdb"), "-D", c.data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--no-locale"); err != nil {
		c.remove()
		return nil, fmt.Errorf("initdb: %v: %s", err, lastBytes(out, 400))
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off -c shared_buffers=64MB", c.port, c.dir)
	if out, err := c.run(ctx, filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-l", c.log, "-w", "-t", "60", "start", "-o", opts); err != nil {
		c.remove()
		return nil, fmt.Errorf("pg_ctl start: %v: %s", err, lastBytes(out, 400))
	}
	e.logf("throwaway PostgreSQL cluster in %s on port %d", c.dir, c.port)
	return c, nil
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func freePort(from, to int) (int, error) {
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

func (c *cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	argv := append(slices.Clone(c.runas), name)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// url returns a connection string for database db.
func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", c.port, db)
}

// destroy stops the cluster at once and deletes its files.
func (c *cluster) destroy() {
	_, _ = c.run(context.Background(), filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-m", "immediate", "-w", "stop")
	c.remove()
}

func (c *cluster) remove() {
	if c.dir != "" && strings.HasPrefix(c.dir, "/tmp/followfeed-soak-pg-") {
		_ = os.RemoveAll(c.dir)
	}
}
