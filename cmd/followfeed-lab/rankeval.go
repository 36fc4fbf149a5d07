package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"followfeed/bench"
	"followfeed/internal/cli"
	"followfeed/rankeval"
	"followfeed/relevance"
)

func runRankEval(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("rank-eval", stdout, "Evaluates the product's ranking (package relevance) on real arXiv listings, DIR/astro-ph-listings\n"+
		"(one file per month, YYMM), against arrival order, random order and a plain TF-IDF cosine, under the\n"+
		"protocol BENCHMARKS.md writes out, and rewrites BENCHMARKS.md's ranking section (nothing else of it).\n"+
		"The validation split (the months parameters are chosen on) prints its figures and writes nothing.")
	data := fs.String("data", "", "read `DIR`: the arxiv-metadata dataset, whose astro-ph-listings/ holds the listings (required)")
	out := fs.String("out", "BENCHMARKS.md", "the `FILE` whose ranking section to rewrite (- for the section on stdout)")
	split := fs.String("split", "test", "the months to evaluate: test (reported: "+strings.Join(rankeval.TestMonths, ",")+
		") or validation ("+strings.Join(rankeval.ValidationMonths, ",")+")")
	months := fs.String("months", "", "comma-separated `MONTHS` (YYMM) to evaluate instead of the split's; writes nothing")
	background := fs.Int("background", 300, "other earlier papers each user's model takes as negatives")
	seed := fs.Uint64("seed", 1, "seed of the random order, the background samples and the simulated feedback")
	set := fs.String("set", "", "comma-separated relevance.Params overrides `NAME=VALUE` (C=0.1,weight.More=0.2), for tuning on the validation split; writes nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *data == "" {
		return &cli.UsageError{Msg: "rank-eval: --data DIR is required (the arxiv-metadata dataset, e.g. ../shared/datasets/arxiv-metadata)"}
	}
	dir := filepath.Join(*data, "astro-ph-listings")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return &cli.UsageError{Msg: fmt.Sprintf("rank-eval: --data: no directory %s", dir)}
	}
	o := rankeval.Options{Dir: dir, Params: relevance.DefaultParams(), Background: *background, Seed: *seed, Log: stdout}
	write := true
	switch *split {
	case "test":
		o.Months = rankeval.TestMonths
	case "validation":
		o.Months, write = rankeval.ValidationMonths, false
	default:
		return &cli.UsageError{Msg: fmt.Sprintf("rank-eval: --split: %q is neither test nor validation", *split)}
	}
	if *months != "" {
		o.Months, write = strings.Split(*months, ","), false
	}
	if *background < 0 {
		return &cli.UsageError{Msg: "rank-eval: --background must be 0 or more"}
	}
	for _, kv := range strings.Split(*set, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return &cli.UsageError{Msg: fmt.Sprintf("rank-eval: --set: %q is not NAME=VALUE", kv)}
		}
		if err := rankeval.SetParam(&o.Params, k, v); err != nil {
			return &cli.UsageError{Msg: "rank-eval: --set: " + err.Error()}
		}
		write = false
	}
	res, err := rankeval.Run(ctx, o)
	if err != nil {
		return err
	}
	for i, name := range rankeval.Methods {
		m := res.Metrics[i]
		fmt.Fprintf(stdout, "%-26s recall@10 %.3f  recall@50 %.3f  MRR %.3f\n", name, m.Recall10, m.Recall50, m.MRR)
	}
	failed := 0
	for _, v := range res.Verdicts() {
		verdict := "pass"
		if !v.Pass {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(stdout, "%-5s %s: %s\n", verdict, v.Target, v.Result)
	}
	fmt.Fprintf(stdout, "%d users, %d months, %s\n", res.Users, len(res.Months), res.Elapsed.Round(1e9))
	command := strings.TrimSpace("followfeed-lab rank-eval " + strings.Join(args, " "))
	var sec strings.Builder
	if err := res.WriteSection(&sec, o, command); err != nil {
		return err
	}
	switch {
	case *out == "-":
		fmt.Fprint(stdout, sec.String())
	case write:
		old, err := os.ReadFile(*out)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.WriteFile(*out, []byte(bench.ReplaceKept(string(old), rankeval.Section, sec.String())), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "section %q of %s rewritten\n", rankeval.Section, *out)
	}
	if failed > 0 {
		return fmt.Errorf("rank-eval: %d of %d targets failed", failed, len(res.Verdicts()))
	}
	return nil
}
