package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"followfeed/config"
	"followfeed/harvest"
)

// harvest --once retries an upstream request twice by default (5 s and
// 10 s of back-off at most, without Retry-After), not the periodic job's
// five (2 m 35 s): a person at a terminal wants a verdict, and can run it
// again or pass --retries.
const (
	defaultOnceRetries = 2
	maxOnceRetries     = 20
)

func runHarvest(ctx context.Context, args []string, inv invocation) error {
	getenv, stdout := inv.getenv, inv.stdout
	fs := newFlags("harvest", stdout, "Runs one arXiv OAI-PMH harvest pass of ARXIV_SETS from ARXIV_OAI_URL, by hand.\nNew papers get their match jobs queued, and each set its completeness check; running workers do them.")
	once := fs.Bool("once", false, "run one pass and exit (required: the periodic harvest runs inside serve and worker)")
	enrich := fs.Bool("enrich", false, "also run one OpenAlex enrichment pass afterwards")
	retries := fs.Int("retries", defaultOnceRetries, "retries of each upstream request after HTTP 429, 5xx, a timeout or a dropped connection, each\nlogged with its wait (arXiv: 5 s, 10 s, ... or the server's Retry-After); 0 for none; the periodic\nharvest retries 5 times. A repository that cannot be reached (a name that does not resolve, a\nrefused connection, a certificate that does not verify) is never retried: its verdict comes at once")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*once {
		return &UsageError{Msg: "harvest: pass --once (the periodic harvest runs inside `serve` or `worker`, every HARVEST_INTERVAL)"}
	}
	if *retries < 0 || *retries > maxOnceRetries {
		return &UsageError{Msg: fmt.Sprintf("harvest: --retries must be between 0 and %d, got %d", maxOnceRetries, *retries)}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	svc, closeAll, err := commandServices(ctx, cfg, "harvest", stdout, inv.hooks, servicesOptions{upstreamRetries: retries})
	if err != nil {
		return err
	}
	defer closeAll()
	fmt.Fprintf(stdout, "harvest: sets %s from %s; each page is logged, and each retry of an upstream failure with its wait\n",
		strings.Join(cfg.ArxivSets, ","), cfg.ArxivOAIURL.Redacted())
	st, err := svc.harvester.RunOnce(ctx)
	fmt.Fprintf(stdout, "harvest: %d pages, %d records: %d new, %d replaced, %d updated, %d deleted, %d skipped\n",
		st.Pages, st.Records, st.New, st.Replaced, st.Updated, st.Deleted, st.Skipped)
	if errors.Is(err, harvest.ErrUnreachable) {
		fmt.Fprintf(stdout, "harvest: the repository %s cannot be reached (not retried); check ARXIV_OAI_URL, DNS and the network\n",
			cfg.ArxivOAIURL.Redacted())
	}
	if err != nil {
		return err
	}
	if *enrich {
		es, err := svc.enricher.RunOnce(ctx)
		fmt.Fprintf(stdout, "enrich: looked up %d, found %d, missing %d, refused as too large %d, gave up %d, %d new keys\n",
			es.Looked, es.Found, es.Missing, es.Refused, es.GivenUp, es.Keys)
		if err != nil {
			return err
		}
	}
	return nil
}
