// Package soak runs followfeed's reliability scenarios against the real
// binary: `followfeed serve`, `api` and `worker` started as separate
// processes, driven from this process over loopback, with fake upstreams
// (OAI-PMH, OpenAlex, SMTP) it controls and faults it injects (killed
// workers, a restarted PostgreSQL, a misbehaving mail server, failing
// upstreams). Every scenario records figures and a pass/fail verdict;
// `followfeed-lab soak` (make soak) writes them to RELIABILITY.md.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Options configure a soak run.
type Options struct {
	// Exe is the followfeed (product) binary the scenarios start.
	Exe string
	// DatabaseURL names the PostgreSQL server on which fresh scenario
	// databases are created (its database part is ignored).
	DatabaseURL string
	// ScaleDB is the database holding the scale-S dataset (make bench) that
	// the load scenario runs on.
	ScaleDB string
	// Duration is how long the load scenario drives traffic (default 5m).
	Duration time.Duration
	// Only lists the scenarios to run; empty runs all of them.
	Only []string
	// Scripts is the directory holding pg-restart.sh; empty looks in
	// ./scripts and next to the binary (../scripts).
	Scripts string
	// WorkDir receives the logs of every started process; empty makes a
	// temporary directory.
	WorkDir string
	// Seed makes the random choices (load mix, SMTP faults) repeatable.
	Seed uint64
	// Command is how the run was invoked, for the report; ViaMake says it
	// ran under make (make soak).
	Command string
	ViaMake bool
	// TestResults is a `go test -json` output of the whole suite, for the
	// hostile-input scenario (make soak produces it).
	TestResults string
	// Log receives progress lines.
	Log io.Writer
	// PreviousRelease is the commit the rolling-upgrade scenario upgrades
	// from; empty is migrations.PreviousRelease.
	PreviousRelease string
	// CaptureQueries, when set, is where the rolling-upgrade scenario
	// writes the previous release's statements it captured (the file
	// migrations' TestPreviousReleaseQueries reads).
	CaptureQueries string
}

// Names returns the scenario names in the order they run.
func Names() []string {
	return []string{"load", "worker-killed", "postgres-restart", "replica", "processes", "leader-failover", "restore", "rolling-upgrade", "smtp-chaos", "upstream-faults", "fediverse-outage", "retention", "hostile-input"}
}

// scenarioFunc runs one scenario, filling res; an error means the scenario
// could not be carried out (it then fails).
type scenarioFunc func(ctx context.Context, e *env, res *Result) error

func scenarios() map[string]scenarioFunc {
	return map[string]scenarioFunc{
		"load":             runLoad,
		"worker-killed":    runWorkerKilled,
		"postgres-restart": runPostgresRestart,
		"replica":          runReplica,
		"processes":        runProcesses,
		"leader-failover":  runLeaderFailover,
		"restore":          runRestore,
		"rolling-upgrade":  runRollingUpgrade,
		"smtp-chaos":       runSMTPChaos,
		"upstream-faults":  runUpstreamFaults,
		"fediverse-outage": runFediverseOutage,
		"retention":        runRetention,
		"hostile-input":    runHostile,
	}
}

// env is what every scenario gets: the options and helpers around them.
type env struct {
	opts    Options
	log     io.Writer
	workDir string
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "soak: "+format+"\n", args...)
}

// Run runs the selected scenarios one after the other and returns the
// report. A scenario that fails does not stop the others; the caller checks
// Report.Passed.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Exe == "" {
		return nil, errors.New("soak: no followfeed binary given")
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Seed == 0 {
		o.Seed = 20261129
	}
	names := Names()
	selected := names
	if len(o.Only) > 0 {
		selected = nil
		for _, n := range o.Only {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("soak: unknown scenario %q (known: %s)", n, strings.Join(names, ", "))
			}
		}
		for _, n := range names { // run order, whatever the flag's order
			if slices.Contains(o.Only, n) {
				selected = append(selected, n)
			}
		}
	}
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "followfeed-soak-")
		if err != nil {
			return nil, err
		}
		o.WorkDir = d
	}
	e := &env{opts: o, log: o.Log, workDir: o.WorkDir}
	rep := &Report{When: time.Now(), CPUs: runtime.NumCPU(), CPUModel: cpuModel(), GoVersion: runtime.Version(), Command: o.Command, ViaMake: o.ViaMake, Duration: o.Duration}
	rep.Postgres = serverVersion(ctx, o.DatabaseURL)
	e.logf("process logs go to %s", o.WorkDir)
	run := scenarios()
	for _, name := range selected {
		res := &Result{Name: name}
		e.logf("=== %s", name)
		start := time.Now()
		sctx, cancel := context.WithCancel(ctx)
		err := run[name](sctx, e, res)
		cancel()
		res.Elapsed = time.Since(start)
		if err != nil {
			res.Err = err
			e.logf("%s: could not complete: %v", name, err)
		}
		res.finish()
		verdict := "PASS"
		if !res.Pass {
			verdict = "FAIL"
		}
		e.logf("%s: %s in %s — %s", name, verdict, res.Elapsed.Round(time.Second), res.Summary)
		for _, c := range res.Checks {
			mark := "ok  "
			if !c.Pass {
				mark = "FAIL"
			}
			e.logf("  [%s] %s: %s", mark, c.Name, c.Detail)
		}
		rep.Results = append(rep.Results, res)
		if ctx.Err() != nil {
			break
		}
	}
	return rep, nil
}

// logPath is where a started process's output goes.
func (e *env) logPath(scenario, name string) string {
	return filepath.Join(e.workDir, fmt.Sprintf("%s-%s-%d.log", scenario, name, time.Now().UnixNano()%1e6))
}

// baseEnv is the environment every started process gets: development mode,
// loopback listener, no periodic harvest, quiet mail directory. Nothing is
// inherited from this process except PATH, so a developer's .env cannot
// change a scenario.
func (e *env) baseEnv(dbURL string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"APP_ENV=development",
		"DATABASE_URL=" + dbURL,
		"HTTP_ADDR=127.0.0.1:0",
		"HARVEST_INTERVAL=0",
		"RATE_LIMIT_PER_IP=0",
		"LOG_LEVEL=info",
		"LOG_FORMAT=text",
		"SHUTDOWN_TIMEOUT=10s",
		"MAIL_DIR=" + filepath.Join(e.workDir, "mail"),
	}
}

// scriptPath finds a script of the repository's scripts directory.
func (e *env) scriptPath(name string) (string, error) {
	var dirs []string
	if e.opts.Scripts != "" {
		dirs = append(dirs, e.opts.Scripts)
	}
	dirs = append(dirs, "scripts", filepath.Join(filepath.Dir(e.opts.Exe), "..", "scripts"))
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("cannot find scripts/%s (run from the repository root)", name)
}
