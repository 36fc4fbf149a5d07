package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"followfeed/config"
	"followfeed/internal/cli"
	"followfeed/soak"
)

func runSoak(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("soak", stdout, "Runs the reliability scenarios ("+strings.Join(soak.Names(), ", ")+")\n"+
		"against the followfeed binary (--followfeed), started as separate processes, and writes figures and verdicts to --out.\n"+
		"Scenario databases are created (and dropped) on DATABASE_URL's server; the load scenario needs\n"+
		"the scale-S dataset of `make bench`. Exits non-zero when any verdict fails.")
	out := fs.String("out", "RELIABILITY.md", "where to write the report (- for stdout)")
	duration := fs.Duration("duration", 5*time.Minute, "how long the load scenario drives traffic")
	only := fs.String("only", "", "comma-separated scenarios to run (default all: "+strings.Join(soak.Names(), ",")+"); the other sections of --out are kept")
	scaleDB := fs.String("scale-db", "", "database holding scale S (default: DATABASE_URL's server, database followfeed_bench)")
	tests := fs.String("tests", "", "read `FILE`: the go test -json output of the suite, for the hostile-input scenario (make soak makes it)")
	previous := fs.String("previous-release", "", "the commit the rolling-upgrade scenario upgrades from (default migrations.PreviousRelease)")
	capture := fs.String("capture-queries", "", "write `FILE`: the previous release's statements the rolling-upgrade scenario captured (migrations/testdata/previous-release-queries.sql)")
	product := productFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *duration <= 0 {
		return &cli.UsageError{Msg: "soak: --duration must be positive (e.g. 5m)"}
	}
	var selected []string
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !slices.Contains(soak.Names(), n) {
			return &cli.UsageError{Msg: fmt.Sprintf("soak: --only: unknown scenario %q (known: %s)", n, strings.Join(soak.Names(), ", "))}
		}
		selected = append(selected, n)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	scale := *scaleDB
	if scale == "" {
		u, err := url.Parse(cfg.DatabaseURL)
		if err != nil {
			return &config.Error{Var: "DATABASE_URL", Reason: "not a postgres:// URL"}
		}
		u.Path = "/followfeed_bench"
		scale = u.String()
	}
	exe, err := productBinary(*product)
	if err != nil {
		return err
	}
	command := strings.TrimSpace("followfeed-lab soak " + strings.Join(args, " "))
	rep, err := soak.Run(ctx, soak.Options{
		Exe: exe, DatabaseURL: cfg.DatabaseURL, ScaleDB: scale, Duration: *duration, Only: selected,
		Command: command, ViaMake: getenv("MAKELEVEL") != "", Log: stdout, TestResults: *tests,
		PreviousRelease: *previous, CaptureQueries: *capture,
	})
	if err != nil {
		return err
	}
	// A run of some scenarios keeps the others' sections of the report.
	if old, err := os.ReadFile(*out); err == nil && *out != "-" {
		rep.Carry(string(old))
	}
	if err := writeReport(*out, stdout, rep.Write); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	for _, r := range rep.Results {
		v := "pass"
		if !r.Pass {
			v = "FAIL"
		}
		fmt.Fprintf(stdout, "%-18s %-5s %s\n", r.Name, v, r.Summary)
	}
	if *out != "-" {
		fmt.Fprintf(stdout, "report written to %s\n", *out)
	}
	if failed := rep.Failed(); len(failed) > 0 {
		return fmt.Errorf("soak: %d of %d scenarios failed: %s", len(failed), len(rep.Results), strings.Join(failed, ", "))
	}
	return ctx.Err()
}
