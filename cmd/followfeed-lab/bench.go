package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"followfeed/app"
	"followfeed/bench"
	"followfeed/config"
	"followfeed/httpapi"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/migrations"
)

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("bench", stdout, "Builds scale S in DATABASE_URL (once; use a dedicated database) and measures the\nperformance targets, writing the report to --out. The memory figure starts the\nfollowfeed binary (--followfeed) as a separate `serve` process.")
	out := fs.String("out", "BENCHMARKS.md", "where to write the report (- for stdout)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the benchmark process to this file")
	memprofile := fs.String("memprofile", "", "write an allocation profile of the benchmark process to this file at the end")
	skip := fs.String("skip", "", "comma-separated parts to leave out while iterating: digests, feeds, searches")
	searches := fs.String("searches", "", "comma-separated numbers of saved searches to match the batch against (default 0,10000,30000,100000)")
	product := productFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	exe, err := productBinary(*product)
	if err != nil {
		return err
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
	logger := app.NewLogger(cfg, stdout)
	db, err := app.OpenDB(ctx, cfg, "bench")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrations.Up(ctx, db.Pool, logger); err != nil {
		return err
	}
	// The benchmark drives the service flat out from one address, and
	// hands its digests to a local SMTP sink.
	cfg.RateLimitPerIP, cfg.RateLimitPerUser = 0, 0
	// The sink shares the two cores with the code under measurement: it
	// keeps no copies and skips go-smtp's per-byte line-length check (a
	// relay's policy, not part of handing a digest over).
	sink, err := fakesmtp.New(fakesmtp.Options{Discard: true, NoLineLimit: true})
	if err != nil {
		return err
	}
	defer sink.Close()
	if cfg.SMTPURL, err = url.Parse(sink.URL()); err != nil {
		return err
	}
	svc, err := app.NewServices(ctx, cfg, db, logger, app.Hooks{})
	if err != nil {
		return err
	}
	handler := httpapi.NewHandler(httpapi.Options{Logger: logger, Routes: svc.Routes(cfg)})
	env := []string{"APP_ENV=development", "DATABASE_URL=" + cfg.DatabaseURL, "HTTP_ADDR=127.0.0.1:0", "HARVEST_INTERVAL=0",
		"RATE_LIMIT_PER_IP=0", "RATE_LIMIT_PER_USER=0", "LOG_LEVEL=info", "MAIL_DIR=" + os.TempDir()}
	defer svc.Close()
	var sizes []int
	for _, f := range strings.Split(*searches, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 1_000_000 {
			return fmt.Errorf("--searches: %q is not a number of searches from 0 to 1000000", f)
		}
		sizes = append(sizes, n)
	}
	rep, err := bench.Run(ctx, bench.Deps{SearchSizes: sizes, DB: db, Papers: svc.Papers(), Matcher: svc.Matcher(), Identities: svc.Identities(), Tokens: svc.FeedTokens(), Digester: svc.Digester(),
		Handler: handler, Exe: exe, Env: env, Log: stdout, Skip: skipSet(*skip)}, bench.ScaleS)
	if err != nil {
		return err
	}
	if err := writeReport(*out, stdout, rep.Write); err != nil {
		return err
	}
	for _, f := range rep.Figures {
		fmt.Fprintf(stdout, "%-70s %-14s %s\n", f.Name, f.Target, f.Result)
	}
	return nil
}

func skipSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
}
