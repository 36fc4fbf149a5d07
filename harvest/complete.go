package harvest

import (
	"context"
	"fmt"
	"time"

	"followfeed/paper"
)

// This file is the completeness check: after a run of a set, the
// repository's own list of each harvested day (OAI-PMH ListIdentifiers) is
// compared with what was stored, and a day with records missing is
// harvested again.

// IdentifierLister fetches OAI-PMH ListIdentifiers pages (OAIClient
// implements it). A Harvester whose Pager also implements it checks every
// harvested day for completeness.
type IdentifierLister interface {
	ListIdentifiers(ctx context.Context, req ListRequest) (*IdentifierPage, error)
}

// Bounds of the check.
const (
	// checkMaxDays is the most days one run checks (a long catch-up checks
	// its newest days).
	checkMaxDays = 31
	// checkRecheckDays is how far back a day found incomplete is checked
	// again on every run.
	checkRecheckDays = 14
	// checkMaxPages stops a list whose tokens never end.
	checkMaxPages = 1000
)

// checkDays checks the days from..to (UTC dates, inclusive) and the recent
// days found incomplete before. Failures of the check are logged and leave
// the day unchecked: the harvest itself succeeded.
func (h *Harvester) checkDays(ctx context.Context, set string, from, to time.Time) {
	lister, ok := h.pager.(IdentifierLister)
	if !ok {
		return
	}
	source := OAISource(set)
	from, to = from.UTC().Truncate(24*time.Hour), to.UTC().Truncate(24*time.Hour)
	if today := h.now().UTC().Truncate(24 * time.Hour); to.After(today) {
		to = today
	}
	if to.Sub(from) > checkMaxDays*24*time.Hour {
		from = to.Add(-(checkMaxDays - 1) * 24 * time.Hour)
	}
	days, err := h.incompleteDays(ctx, source, from)
	if err != nil {
		h.logger.WarnContext(ctx, "completeness check skipped", "source", source, "error", err)
		return
	}
	for d := from; !d.After(to); d = d.Add(24 * time.Hour) {
		days = append(days, d)
	}
	for _, d := range days {
		if ctx.Err() != nil {
			return
		}
		if err := h.checkDay(ctx, lister, set, d); err != nil {
			h.logger.WarnContext(ctx, "completeness check failed", "source", source, "day", d.Format(time.DateOnly), "error", err)
		}
	}
}

// incompleteDays are the days before from, within checkRecheckDays, that
// the last check found incomplete (served by the primary key's range).
func (h *Harvester) incompleteDays(ctx context.Context, source string, from time.Time) ([]time.Time, error) {
	rows, err := h.db.Pool.Query(ctx, `
		SELECT day FROM harvest_days WHERE source = $1 AND day >= $2 AND day < $3 AND missing > 0 ORDER BY day`,
		source, from.Add(-checkRecheckDays*24*time.Hour), from)
	if err != nil {
		return nil, fmt.Errorf("reading incomplete days: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var d time.Time
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out = append(out, d.UTC())
	}
	return out, rows.Err()
}

// checkDay compares the repository's list of set's day with the stored
// papers, harvests the day again when some are missing, and records the
// result in harvest_days.
func (h *Harvester) checkDay(ctx context.Context, lister IdentifierLister, set string, day time.Time) error {
	source := OAISource(set)
	date := day.Format(time.DateOnly)
	var ids []string
	req := ListRequest{From: date, Until: date, Set: set}
	for pages := 0; ; pages++ {
		if pages >= checkMaxPages {
			return fmt.Errorf("ListIdentifiers of %s did not end after %d pages", date, checkMaxPages)
		}
		page, err := lister.ListIdentifiers(ctx, req)
		if err != nil {
			return err
		}
		ids = append(ids, page.IDs...)
		if page.ResumptionToken == "" {
			break
		}
		if page.ResumptionToken == req.ResumptionToken {
			return fmt.Errorf("ListIdentifiers of %s answered resumptionToken %q with the same token", date, oaiShort(page.ResumptionToken))
		}
		req = ListRequest{ResumptionToken: page.ResumptionToken}
	}
	missing, err := h.papers.Missing(ctx, ids)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		h.logger.WarnContext(ctx, "records missing; harvesting the day again", "source", source, "day", date,
			"expected", len(ids), "missing", len(missing), "first_missing", missing[0])
		if err := h.harvestDay(ctx, set, date); err != nil {
			h.logger.WarnContext(ctx, "harvesting the day again failed", "source", source, "day", date, "error", err)
		}
		if missing, err = h.papers.Missing(ctx, missing); err != nil {
			return err
		}
		if len(missing) > 0 {
			h.logger.WarnContext(ctx, "records still missing after harvesting the day again", "source", source, "day", date,
				"missing", len(missing), "first_missing", missing[0])
		}
	}
	_, err = h.db.Pool.Exec(ctx, `
		INSERT INTO harvest_days (source, day, records, expected, missing, checked_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, day) DO UPDATE SET records = $3, expected = $4, missing = $5, checked_at = $6`,
		source, day, len(ids)-len(missing), len(ids), len(missing), h.now())
	if err != nil {
		return fmt.Errorf("recording the check of %s: %w", date, err)
	}
	return nil
}

// harvestDay harvests every record of set with datestamp date again (the
// ingest is idempotent), without touching the run's saved progress.
func (h *Harvester) harvestDay(ctx context.Context, set, date string) error {
	req := ListRequest{From: date, Until: date, Set: set}
	for pages := 0; pages < checkMaxPages; pages++ {
		page, err := h.pager.ListRecords(ctx, req)
		if err != nil {
			return err
		}
		if _, err := h.papers.Ingest(ctx, page.Papers, paper.SourceOAI); err != nil {
			return err
		}
		if page.ResumptionToken == "" || page.ResumptionToken == req.ResumptionToken {
			return nil
		}
		req = ListRequest{ResumptionToken: page.ResumptionToken}
	}
	return fmt.Errorf("ListRecords of %s did not end after %d pages", date, checkMaxPages)
}
