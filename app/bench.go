package app

import (
	"context"
	"fmt"
	"io"
	"os"

	"followfeed/bench"
	"followfeed/config"
	"followfeed/migrations"
)

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("bench", stdout, "Builds scale S in DATABASE_URL (once; use a dedicated database) and measures the\nperformance targets, writing the report to --out.")
	out := fs.String("out", "BENCHMARKS.md", "where to write the report (- for stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	cfg.LogLevel = "warn"
	logger := newLogger(cfg, stdout)
	db, err := openDB(ctx, cfg, "bench")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrations.Up(ctx, db.Pool, logger); err != nil {
		return err
	}
	svc, err := newServices(ctx, cfg, db, logger)
	if err != nil {
		return err
	}
	rep, err := bench.Run(ctx, bench.Deps{DB: db, Ingester: svc.ingester, Matcher: svc.matcher, Log: stdout}, bench.ScaleS)
	if err != nil {
		return err
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := rep.Write(w); err != nil {
		return err
	}
	for _, f := range rep.Figures {
		fmt.Fprintf(stdout, "%-70s %-14s %s\n", f.Name, f.Target, f.Result)
	}
	return nil
}
