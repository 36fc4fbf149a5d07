package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"followfeed/internal/cli"
)

func TestHelpPrintsEveryCommand(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bench", "soak", "rank-eval"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSubcommandHelpPrintsFlags(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"bench":     {"-out", "-scale", "-build-only", "-cpuprofile", "-memprofile", "-skip", "-searches", "-followfeed"},
		"soak":      {"-out", "-duration", "-only", "-scale-db", "-tests", "-followfeed"},
		"rank-eval": {"-data", "-out", "-split", "-months", "-background", "-seed", "-set"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), []string{cmd, "--help"}, func(string) string { return "" }, &out)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s --help: err = %v, want flag.ErrHelp", cmd, err)
		}
		if code := exitCode(err, &bytes.Buffer{}); code != 0 {
			t.Errorf("%s --help exits %d", cmd, code)
		}
		if !strings.HasPrefix(out.String(), "Usage: followfeed-lab "+cmd) {
			t.Errorf("%s --help does not start with its usage line:\n%s", cmd, out.String())
		}
		for _, f := range flags {
			if !strings.Contains(out.String(), f) {
				t.Errorf("%s --help lacks %s:\n%s", cmd, f, out.String())
			}
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{nil, {"serve"}, {"soak", "--only", "nope"}, {"soak", "--duration", "0s"}, {"bench", "extra"},
		{"bench", "--scale", "L"}, {"bench", "--scale", ","}, {"bench", "--skip", "feed"}, {"bench", "--searches", "ten"},
		{"rank-eval"}, {"rank-eval", "--data", "/nonexistent"}, {"rank-eval", "--data", "../../rankeval/testdata", "--split", "all"},
		{"rank-eval", "--data", "../../rankeval/testdata", "--set", "Nope=1"}, {"rank-eval", "--data", "../../rankeval/testdata", "--set", "C"}} {
		var out, stderr bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out)
		if code := exitCode(err, &stderr); code != 2 {
			t.Errorf("%q: exit %d (%v), want 2", args, code, err)
		}
		if !strings.HasPrefix(stderr.String(), "followfeed-lab: ") {
			t.Errorf("%q: message %q", args, stderr.String())
		}
	}
}

func TestMissingProductBinaryIsAUsageError(t *testing.T) {
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
		}
		return ""
	}
	err := run(context.Background(), []string{"soak", "--followfeed", t.TempDir() + "/none"}, getenv, &bytes.Buffer{})
	if code := exitCode(err, &bytes.Buffer{}); code != 2 || !strings.Contains(err.Error(), "--followfeed") {
		t.Errorf("err = %v (exit %d), want a --followfeed usage error", err, code)
	}
}

// The product binary holds the product: nothing it links reaches the
// benchmark, the soak or the fakes.
func TestProductDoesNotLinkTheLab(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "followfeed/cmd/followfeed").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "followfeed/bench" || pkg == "followfeed/soak" || pkg == "followfeed/rankeval" || strings.HasPrefix(pkg, "followfeed/internal/fake") {
			t.Errorf("followfeed links %s", pkg)
		}
	}
}

// TestHelpNamesArguments: no command's --help shows prose as a flag's
// argument name (the flag package reads backquoted words so: "-tests go
// test -json" once).
func TestHelpNamesArguments(t *testing.T) {
	for _, cmd := range []string{"bench", "soak", "rank-eval"} {
		var out bytes.Buffer
		_ = run(context.Background(), []string{cmd, "--help"}, func(string) string { return "" }, &out)
		for _, p := range cli.HelpProblems(out.String()) {
			t.Errorf("followfeed-lab %s --help: %s", cmd, p)
		}
	}
}

// TestRankEvalWritesOnlyTheReportedMonths runs rank-eval on the few records
// of rankeval/testdata: a run of other months (--months) prints its section
// and leaves the report alone, and so does a run that fails (bench.ReplaceKept
// and rankeval's tests check the section a run of the reported months
// writes).
func TestRankEvalWritesOnlyTheReportedMonths(t *testing.T) {
	out := t.TempDir() + "/BENCHMARKS.md"
	if err := os.WriteFile(out, []byte("# Benchmarks\n\nthe bench's figures\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The reported months are not in the few records.
	err := run(context.Background(), []string{"rank-eval", "--data", "../../rankeval/testdata", "--out", out}, func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "12 months before") {
		t.Fatalf("rank-eval on the test split of a few records: %v", err)
	}
	var stdout bytes.Buffer
	err = run(context.Background(), []string{"rank-eval", "--data", "../../rankeval/testdata", "--months", "9801", "--out", out}, func(string) string { return "" }, &stdout)
	if err != nil && !strings.Contains(err.Error(), "targets failed") {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "product, cold start ") || strings.Contains(stdout.String(), "rewritten") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	b, _ := os.ReadFile(out)
	if string(b) != "# Benchmarks\n\nthe bench's figures\n" {
		t.Errorf("a run that failed, or wrote to stdout, changed the report:\n%s", b)
	}
}
