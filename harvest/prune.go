package harvest

import (
	"context"
	"time"
)

// DaysRetention is how long harvest_days keeps a source's day: longer
// than anything reads back (the status reports a source's newest
// statusDays days, the completeness check queues days up to
// checkMaxDays + checkRecheckDays old), a season for an operator's look.
const DaysRetention = 90 * 24 * time.Hour

// Prune deletes what the sources' record keeps past its use and returns
// how many rows: days of harvest_days older than DaysRetention, except
// each source's newest statusDays days (what Status shows, however old:
// a source used rarely keeps its last days), and queued completeness
// checks of days no run queues any more (checkMaxDays +
// checkRecheckDays old; CheckSet forgets them for the sets it checks, this
// for every source, so a set no longer configured leaves nothing behind).
// It deletes in batches (database.DeleteBatches); run again, it deletes
// nothing more.
func (h *Health) Prune(ctx context.Context) (int64, error) {
	today := h.now().UTC().Truncate(oneDay)
	// harvest_days_pkey (source, day): the table holds a few rows per
	// source and day, read whole; the newest kept day of a source is one
	// backward probe of its primary key range.
	days, err := h.db.DeleteBatches(ctx, "the sources' days", `
		DELETE FROM harvest_days WHERE (source, day) IN (
			SELECT d.source, d.day FROM harvest_days d
			WHERE d.day < $2 AND d.day < (SELECT n.day FROM harvest_days n WHERE n.source = d.source
			                              ORDER BY n.day DESC OFFSET $3 LIMIT 1)
			ORDER BY d.source, d.day LIMIT $1)`, today.Add(-DaysRetention), statusDays-1)
	if err != nil {
		return days, err
	}
	checks, err := h.db.DeleteBatches(ctx, "the completeness checks", `
		DELETE FROM harvest_checks WHERE (source, day) IN (
			SELECT source, day FROM harvest_checks WHERE day < $2 ORDER BY source, day LIMIT $1)`,
		today.Add(-(checkMaxDays+checkRecheckDays)*oneDay))
	return days + checks, err
}
