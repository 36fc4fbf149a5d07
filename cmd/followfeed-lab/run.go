package main

import (
	"context"
	"flag"
	"fmt"
	"followfeed/internal/cli"
	"io"
	"os"
	"path/filepath"
)

const usage = `followfeed-lab: measure and stress followfeed (not part of the product binary).

Usage:
  followfeed-lab <command> [flags]

Commands:
  bench      build scale S and measure the targets of BENCHMARKS.md
  soak       run the reliability scenarios against the followfeed binary and write RELIABILITY.md
  rank-eval  evaluate the ranking on real arXiv listings and write BENCHMARKS.md's ranking section

Configuration comes from environment variables, as for followfeed (README.md).
Run 'followfeed-lab <command> --help' for a command's flags.
`

// run executes the command in args (without the program name), reading
// configuration with getenv and writing output and logs to stdout.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return &cli.UsageError{Msg: "no command given; see 'followfeed-lab --help'"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "bench":
		return runBench(ctx, rest, getenv, stdout)
	case "soak":
		return runSoak(ctx, rest, getenv, stdout)
	case "rank-eval":
		return runRankEval(ctx, rest, getenv, stdout)
	default:
		return &cli.UsageError{Msg: fmt.Sprintf("unknown command %q; see 'followfeed-lab --help'", cmd)}
	}
}

// exitCode maps run's error to a process exit status and writes a one-line
// message to w: 0 for nil, 2 for usage and configuration errors, 1 otherwise.
func exitCode(err error, w io.Writer) int { return cli.ExitCode("followfeed-lab", err, w) }

// newFlags returns a FlagSet whose usage names followfeed-lab.
func newFlags(name string, stdout io.Writer, help string) *flag.FlagSet {
	return cli.NewFlags("followfeed-lab", name, stdout, help)
}

// parseFlags parses args, turning flag errors into *cli.UsageError and
// --help into flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error { return cli.Parse(fs, args) }

// productFlag adds --followfeed, the product binary the command starts as
// separate processes; by default the followfeed next to this binary (make
// bench and make soak build both into bin/).
func productFlag(fs *flag.FlagSet) *string {
	def := "followfeed"
	if exe, err := os.Executable(); err == nil {
		def = filepath.Join(filepath.Dir(exe), "followfeed")
	}
	return fs.String("followfeed", def, "the followfeed binary to start (build it with go build -o bin/followfeed ./cmd/followfeed)")
}

// productBinary checks that path is an executable file and returns it
// absolute.
func productBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", &cli.UsageError{Msg: fmt.Sprintf("--followfeed: no followfeed binary at %s (go build -o bin/followfeed ./cmd/followfeed, or pass --followfeed)", abs)}
	}
	return abs, nil
}

// writeReport writes a report with write to the file out (created or
// truncated, closed before it returns) or, when out is "-", to stdout.
func writeReport(out string, stdout io.Writer, write func(io.Writer) error) error {
	if out == "-" {
		return write(stdout)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
