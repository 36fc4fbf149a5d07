// Package testapp boots the whole followfeed process in a test, exactly as
// main does (app.Run), on 127.0.0.1:0 against a fresh database.
package testapp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/app"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
)

// App is a running service.
type App struct {
	URL         string // base URL, e.g. http://127.0.0.1:43121
	DatabaseURL string
	Env         map[string]string
	logs        *syncBuffer
	cancel      context.CancelFunc
	done        chan error
	once        sync.Once
	stopErr     error
	// unsubscribe ends the subscriptions of the process's working client
	// (Jobs), once it stopped: River closes them when the client stops,
	// but not when it never started.
	mu          sync.Mutex
	unsubscribe []func()
}

// databaseJobs are, by DATABASE_URL, the events of every working process
// (serve, worker) the test binary started on that database: a job of the
// database may be worked by any of them, and River tells a subscriber only
// of its own client's jobs. An entry lives while an App started on its
// database has not been cleaned up (apps counts them), so the events of
// the tests that ended are not kept for the rest of the binary.
var databaseJobs = struct {
	sync.Mutex
	by map[string]*dbJobs
}{by: map[string]*dbJobs{}}

type dbJobs struct {
	events *testjobs.Events
	apps   int
}

// jobsOf returns the Events of the working processes on databaseURL: a
// new, empty one when no App runs there (its waits fail at once).
func jobsOf(databaseURL string) *testjobs.Events {
	databaseJobs.Lock()
	defer databaseJobs.Unlock()
	if d := databaseJobs.by[databaseURL]; d != nil {
		return d.events
	}
	return testjobs.NewEvents()
}

// holdJobs counts one more App on databaseURL and returns its database's
// Events; releaseJobs, at the App's cleanup, counts it out.
func holdJobs(databaseURL string) *testjobs.Events {
	databaseJobs.Lock()
	defer databaseJobs.Unlock()
	d := databaseJobs.by[databaseURL]
	if d == nil {
		d = &dbJobs{events: testjobs.NewEvents()}
		databaseJobs.by[databaseURL] = d
	}
	d.apps++
	return d.events
}

func releaseJobs(databaseURL string) {
	databaseJobs.Lock()
	defer databaseJobs.Unlock()
	if d := databaseJobs.by[databaseURL]; d != nil {
		if d.apps--; d.apps <= 0 {
			delete(databaseJobs.by, databaseURL)
		}
	}
}

// Jobs returns the events of the jobs of a's database worked in this test
// process: by a itself in a working mode (serve, worker), and by every
// other working process Start started on the same database, each
// subscribed before its client started. Its waits (WaitCompleted,
// WaitIdle, WaitRan, Until) wake on them; they fail at once when no such
// process runs (an api process's jobs wait for a worker).
func (a *App) Jobs() *testjobs.Events { return jobsOf(a.DatabaseURL) }

// Logs returns everything the process has logged so far.
func (a *App) Logs() string { return a.logs.String() }

// Stop cancels the process (as SIGTERM does) and returns Run's error. It is
// also called at test cleanup.
func (a *App) Stop() error {
	a.once.Do(func() {
		a.cancel()
		select {
		case a.stopErr = <-a.done:
		case <-time.After(60 * time.Second):
			a.stopErr = fmt.Errorf("testapp: process did not stop within 60s")
		}
		a.mu.Lock()
		for _, f := range a.unsubscribe {
			f()
		}
		a.unsubscribe = nil
		a.mu.Unlock()
	})
	return a.stopErr
}

// Env returns the default environment of a test process; tests override
// entries before calling Start.
func Env(t testing.TB) map[string]string {
	t.Helper()
	return map[string]string{
		"APP_ENV":          "development",
		"DATABASE_URL":     testdb.URL(t),
		"HTTP_ADDR":        "127.0.0.1:0",
		"HARVEST_INTERVAL": "0",
		"MAIL_DIR":         t.TempDir(),
		"LOG_LEVEL":        "info",
		"SHUTDOWN_TIMEOUT": "10s",
		"ARXIV_OAI_URL":    "http://127.0.0.1:1/oai",   // never the public service
		"OPENALEX_URL":     "http://127.0.0.1:1/works", // from a test
	}
}

var listening = regexp.MustCompile(`msg=listening .*?\baddr=(\S+)`)

// Start runs `followfeed <args...>` (default: serve) with env and waits until
// it listens. The process is stopped at test cleanup.
func Start(t testing.TB, env map[string]string, args ...string) *App {
	t.Helper()
	return StartWith(t, env, app.Hooks{}, args...)
}

// StartWith is Start with hooks (an injected clock). The process's working
// River client, if it has one, is added to Jobs before it starts.
func StartWith(t testing.TB, env map[string]string, hooks app.Hooks, args ...string) *App {
	t.Helper()
	if env == nil {
		env = Env(t)
	}
	if len(args) == 0 {
		args = []string{"serve"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{DatabaseURL: env["DATABASE_URL"], Env: env, logs: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	jobs := holdJobs(a.DatabaseURL)
	made := hooks.Jobs
	hooks.Jobs = func(c *river.Client[pgx.Tx]) {
		unsubscribe := jobs.Add(c) // until the process stops
		a.mu.Lock()
		a.unsubscribe = append(a.unsubscribe, unsubscribe)
		a.mu.Unlock()
		if made != nil {
			made(c)
		}
	}
	getenv := func(k string) string { return env[k] }
	go func() { a.done <- app.RunWith(ctx, args, getenv, a.logs, hooks) }()
	t.Cleanup(func() {
		defer releaseJobs(a.DatabaseURL)
		if err := a.Stop(); err != nil {
			t.Errorf("testapp: stopping: %v", err)
		}
		if t.Failed() {
			t.Logf("process logs:\n%s", a.Logs())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(a.logs.String()); m != nil {
			a.URL = "http://" + m[1]
			return a
		}
		select {
		case err := <-a.done:
			a.done <- err
			t.Fatalf("testapp: process exited before listening: %v\n%s", err, a.Logs())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("testapp: process not listening after 30s:\n%s", a.Logs())
	return nil
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Clone(b.buf.String())
}

// RunCommand runs a one-shot command (`followfeed <args…>`, e.g. digest) with
// env to completion, writing its output to out.
func RunCommand(t testing.TB, env map[string]string, out io.Writer, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return app.Run(ctx, args, func(k string) string { return env[k] }, out)
}
