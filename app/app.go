// Package app is the followfeed command: it parses the command line, loads
// the configuration and wires the packages together. Run is the whole program
// so tests can boot it exactly as main does.
package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/config"
	"followfeed/internal/cli"
)

// UsageError is a command-line mistake; the process exits 2 for it.
type UsageError = cli.UsageError

// ExitCode maps Run's error to a process exit status and writes a one-line
// message to w: 0 for nil, 2 for usage and configuration errors, 1 otherwise.
func ExitCode(err error, w io.Writer) int { return cli.ExitCode("followfeed", err, w) }

const usage = `followfeed: follow researchers, arXiv categories and institutions; get feeds and digests.

Usage:
  followfeed <command> [flags]

Commands:
  serve      run the HTTP server and the job workers in one process (--migrate to migrate first)
  api        run only the HTTP server (scale it apart from the workers)
  worker     run only the job workers (plus /healthz, /readyz, /metrics)
  migrate    apply the database migrations (app and River) and exit
  token      mint a development JWT: token --sub ID [--email E] [--scope S] [--ttl D]
  harvest    run one arXiv OAI-PMH harvest pass: harvest --once [--enrich]
  digest     print (or with --now send) a user's next digest: digest --user SUB [--now]
  activitypub  rotate the fediverse actors' signing key: activitypub rotate-key

Configuration comes from environment variables; see README.md or .env.example.
Run 'followfeed <command> --help' for a command's flags.
`

// Hooks let tests replace what the environment cannot: the clock, a point
// to hold search previews at, and the River client's events to wait on.
type Hooks struct {
	// Now replaces time.Now for scheduling (digests, instant alerts).
	Now func() time.Time
	// PreviewChunk, when set, is called by every search preview after
	// each chunk of papers it read, while it holds no database connection
	// (httpapi.Previews.OnChunk): tests hold previews in flight there.
	PreviewChunk func(ctx context.Context)
	// Jobs, when set, is called with the River client that works the
	// jobs (serve, worker) after it is made and before it starts: tests
	// subscribe to its events there, so that they miss none.
	Jobs func(*river.Client[pgx.Tx])
}

// invocation is what every command gets from Run.
type invocation struct {
	getenv func(string) string
	stdout io.Writer
	hooks  Hooks
}

// Run executes the command in args (without the program name). getenv reads
// configuration; stdout receives output and logs. It returns when the
// command finishes or ctx is cancelled (servers then shut down gracefully).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return RunWith(ctx, args, getenv, stdout, Hooks{})
}

// RunWith is Run with hooks (tests inject a clock).
func RunWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, hooks Hooks) error {
	if hooks.Now == nil {
		hooks.Now = time.Now
	}
	inv := invocation{getenv: getenv, stdout: stdout, hooks: hooks}
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return &UsageError{Msg: "no command given; see 'followfeed --help'"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "serve":
		return runService(ctx, rest, inv, modeServe)
	case "api":
		return runService(ctx, rest, inv, modeAPI)
	case "worker":
		return runService(ctx, rest, inv, modeWorker)
	case "migrate":
		return runMigrate(ctx, rest, inv)
	case "token":
		return runToken(ctx, rest, inv)
	case "harvest":
		return runHarvest(ctx, rest, inv)
	case "digest":
		return runDigest(ctx, rest, inv)
	case "activitypub":
		return runActivityPub(ctx, rest, inv)
	default:
		return &UsageError{Msg: fmt.Sprintf("unknown command %q; see 'followfeed --help'", cmd)}
	}
}

// newFlags returns a FlagSet for "followfeed name"; parse it with parseFlags.
func newFlags(name string, stdout io.Writer, help string) *flag.FlagSet {
	return cli.NewFlags("followfeed", name, stdout, help)
}

// parseFlags parses args, turning flag errors into *UsageError and --help
// into flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error { return cli.Parse(fs, args) }

// NewLogger builds a process logger writing to w at cfg.LogLevel, JSON
// when cfg.LogFormat is "json" and text otherwise.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
