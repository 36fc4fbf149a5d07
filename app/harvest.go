package app

import (
	"context"
	"fmt"
	"strings"

	"followfeed/config"
)

func runHarvest(ctx context.Context, args []string, inv invocation) error {
	getenv, stdout := inv.getenv, inv.stdout
	fs := newFlags("harvest", stdout, "Runs one arXiv OAI-PMH harvest pass of ARXIV_SETS from ARXIV_OAI_URL, by hand.\nNew papers get their match jobs queued, and each set its completeness check; running workers do them.")
	once := fs.Bool("once", false, "run one pass and exit (required: the periodic harvest runs inside serve and worker)")
	enrich := fs.Bool("enrich", false, "also run one OpenAlex enrichment pass afterwards")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return &UsageError{Msg: "harvest: pass --once (the periodic harvest runs inside `serve` or `worker`, every HARVEST_INTERVAL)"}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	logger := NewLogger(cfg, stdout)
	db, err := OpenDB(ctx, cfg, "harvest")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := checkSchema(ctx, db); err != nil {
		return err
	}
	svc, err := NewServices(ctx, cfg, db, logger, inv.hooks)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "harvest: sets %s from %s; each page is logged, and each retry of an upstream failure with its wait\n",
		strings.Join(cfg.ArxivSets, ","), cfg.ArxivOAIURL.Redacted())
	st, err := svc.harvester.RunOnce(ctx)
	fmt.Fprintf(stdout, "harvest: %d pages, %d records: %d new, %d replaced, %d updated, %d deleted, %d skipped\n",
		st.Pages, st.Records, st.New, st.Replaced, st.Updated, st.Deleted, st.Skipped)
	if err != nil {
		return err
	}
	if *enrich {
		es, err := svc.enricher.RunOnce(ctx)
		fmt.Fprintf(stdout, "enrich: looked up %d, found %d, missing %d, gave up %d, %d new keys\n", es.Looked, es.Found, es.Missing, es.GivenUp, es.Keys)
		if err != nil {
			return err
		}
	}
	return nil
}
