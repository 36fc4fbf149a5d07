package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"

	"followfeed/app"
	"followfeed/bench"
	"followfeed/config"
	"followfeed/httpapi"
	"followfeed/internal/cli"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/migrations"
)

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("bench", stdout, "Builds the datasets of the selected scales (once each; S in DATABASE_URL's database, M in the\n"+
		"same server's database named with _m appended, created when missing) and measures the\nperformance targets at each, "+
		"writing one report with the scales side by side to --out.\nThe memory figure starts the followfeed binary (--followfeed) as a separate `serve` process.")
	out := fs.String("out", "BENCHMARKS.md", "where to write the report (- for stdout)")
	scale := fs.String("scale", "S,M", "comma-separated scales to build and measure: S (100k users, 1M papers), M (1M users, 3M papers)")
	buildOnly := fs.Bool("build-only", false, "build the selected scales' missing datasets and measure nothing (no report)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark process to this file")
	memprofile := fs.String("memprofile", "", "write an allocation profile of the benchmark process to this file at the end")
	skip := fs.String("skip", "", "comma-separated parts to leave out while iterating: digests (with the controls' and best first's), best (best-first digests and their cold start, which also trains the sampled users' first models), controls (digests with read papers and mutes), feeds (with the ranking's), ranking, inbox (the inbox page), searches, fediverse")
	searches := fs.String("searches", "", "comma-separated numbers of queries to match the batch against (default 0,10000,30000,100000); measured at the smallest selected scale only")
	product := productFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	levels, err := bench.ParseLevels(*scale)
	if err != nil {
		return &cli.UsageError{Msg: "--scale: " + err.Error()}
	}
	sizes, err := searchSizes(*searches)
	if err != nil {
		return err
	}
	skipped := skipSet(*skip)
	for p := range skipped {
		if !slices.Contains(benchParts, p) {
			return &cli.UsageError{Msg: fmt.Sprintf("--skip: %q is not a part: use %s", p, strings.Join(benchParts, ", "))}
		}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	// Every scale's database, derived before anything is opened: a bad
	// DATABASE_URL fails here, not after S's measurements.
	urls := make([]string, len(levels))
	for i, l := range levels {
		if urls[i], err = l.DatabaseURL(cfg.DatabaseURL); err != nil {
			return err
		}
	}
	var exe string
	if !*buildOnly {
		if exe, err = productBinary(*product); err != nil {
			return err
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memprofile != "" {
		defer func() {
			if f, err := os.Create(*memprofile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	cfg.LogLevel = "warn"
	// The benchmark drives the service flat out from one address, and
	// hands its digests to a local SMTP sink.
	cfg.RateLimitPerIP, cfg.RateLimitPerUser = 0, 0
	var reps []*bench.Report
	for i, l := range levels {
		lc := *cfg
		lc.DatabaseURL = urls[i]
		// Figures that need one scale only (the queries) are
		// measured at the smallest selected one.
		sk := maps.Clone(skipped)
		if i > 0 {
			sk["searches"] = true
		}
		rep, err := benchLevel(ctx, &lc, l, *buildOnly, exe, sizes, sk, stdout)
		if err != nil {
			return fmt.Errorf("scale %s: %w", l.Name, err)
		}
		if rep != nil {
			reps = append(reps, rep)
		}
	}
	if *buildOnly {
		return nil
	}
	// Sections other commands write into the report (bench.KeptSections:
	// the ranking's quality) are carried over.
	var kept []string
	if old, err := os.ReadFile(*out); err == nil && *out != "-" {
		kept = bench.KeptSections(string(old))
	}
	if err := writeReport(*out, stdout, func(w io.Writer) error {
		if err := bench.WriteReports(w, reps); err != nil {
			return err
		}
		for _, k := range kept {
			if _, err := io.WriteString(w, "\n"+k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, r := range reps {
		for _, f := range r.Figures {
			fmt.Fprintf(stdout, "%s  %-70s %-14s %s\n", r.Level.Name, f.Name, f.Target, f.Result)
		}
	}
	return nil
}

// benchLevel opens (creating it when missing) and migrates cfg's database,
// builds level l's dataset there if missing and, unless buildOnly, measures
// it through freshly started services.
func benchLevel(ctx context.Context, cfg *config.Config, l bench.Level, buildOnly bool, exe string, sizes []int, skip map[string]bool, stdout io.Writer) (*bench.Report, error) {
	logger := app.NewLogger(cfg, stdout)
	db, err := app.OpenDB(ctx, cfg, "bench")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := migrations.Up(ctx, db.Pool, logger); err != nil {
		return nil, err
	}
	if buildOnly {
		return nil, bench.Build(ctx, db, l, stdout)
	}
	// The sink shares the two cores with the code under measurement: it
	// keeps no copies and skips go-smtp's per-byte line-length check (a
	// relay's policy, not part of handing a digest over).
	sink, err := fakesmtp.New(fakesmtp.Options{Discard: true, NoLineLimit: true})
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	if cfg.SMTPURL, err = url.Parse(sink.URL()); err != nil {
		return nil, err
	}
	// The services log at WARN: each of the digest runs' 9,000 digests
	// would otherwise write its INFO outcome line to the bench's output.
	quiet := *cfg
	quiet.LogLevel = "warn"
	svc, err := app.NewServices(ctx, cfg, db, app.NewLogger(&quiet, stdout), app.Hooks{})
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	handler := httpapi.NewHandler(httpapi.Options{Logger: logger, Routes: svc.Routes(cfg)})
	env := []string{"APP_ENV=development", "DATABASE_URL=" + cfg.DatabaseURL, "HTTP_ADDR=127.0.0.1:0", "HARVEST_INTERVAL=0",
		"RATE_LIMIT_PER_IP=0", "RATE_LIMIT_PER_USER=0", "LOG_LEVEL=info", "MAIL_DIR=" + os.TempDir()}
	return bench.Run(ctx, bench.Deps{SearchSizes: sizes, DB: db, Papers: svc.Papers(), Matcher: svc.Matcher(), Identities: svc.Identities(), Tokens: svc.FeedTokens(), Digester: svc.Digester(),
		Ranking: svc.Ranking(), Handler: handler, AuthSecret: cfg.Auth.HS256Secret, Exe: exe, Env: env, Log: stdout, Skip: skip}, l)
}

// searchSizes reads --searches.
func searchSizes(spec string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(spec, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 1_000_000 {
			return nil, &cli.UsageError{Msg: fmt.Sprintf("--searches: %q is not a number of searches from 0 to 1000000", f)}
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// benchParts are the parts --skip names.
var benchParts = []string{"digests", "best", "controls", "feeds", "ranking", "inbox", "searches", "fediverse"}

func skipSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
}
