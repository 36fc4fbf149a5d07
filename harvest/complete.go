package harvest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
)

// This file is the completeness check: the repository's own list of each
// harvested day (OAI-PMH ListIdentifiers) is compared with what was stored,
// and a day with records missing is harvested again. It is work of its own,
// apart from the harvest run: a successful run queues its days in
// harvest_checks (in the transaction that records the run) and, through
// FollowUps, the set's harvest_check job, which works the days off in
// bounded, resumable steps (CheckSet). A slow or failing check therefore
// never fails, delays or times out the harvest run, nor the enrichment the
// run queued.

// IdentifierLister fetches OAI-PMH ListIdentifiers pages (OAIClient
// implements it). A Harvester whose Pager also implements it checks every
// harvested day for completeness.
type IdentifierLister interface {
	ListIdentifiers(ctx context.Context, req ListRequest) (*IdentifierPage, error)
}

// FollowUps queues the jobs that follow a successful harvest run of a set,
// inside the transaction that records the run (worker.Enqueuer implements
// it).
type FollowUps interface {
	// EnqueueCheck queues the completeness check of set (CheckSet). At most
	// one per set is queued, running or waiting at a time: a second is not
	// inserted, and the one there finds the new days in harvest_checks.
	EnqueueCheck(ctx context.Context, tx pgx.Tx, set string) error
	// EnqueueEnrichment queues an OpenAlex enrichment pass (at most one
	// waiting at a time).
	EnqueueEnrichment(ctx context.Context, tx pgx.Tx) error
}

// QueueFollowUps makes every successful run of a set queue, through f and
// in the transaction that records the run, the set's completeness check
// and, when papers are due for a lookup, an enrichment pass. A Harvester
// without follow-ups (tests, tools without a job queue) checks each set
// itself right after its run. Call it before the first run.
func (h *Harvester) QueueFollowUps(f FollowUps) { h.followUps = f }

// Bounds of the check.
const (
	// checkMaxDays is the most days one run queues for the check (a long
	// catch-up checks its newest days).
	checkMaxDays = 31
	// checkRecheckDays is how far back a day found incomplete is queued
	// again by every run.
	checkRecheckDays = 14
	// checkMaxPages stops a list whose tokens never end.
	checkMaxPages = 1000
	// DefaultCheckRequests is Harvester.CheckRequests' default.
	DefaultCheckRequests = 20
)

// The phases of a day's check (harvest_checks.phase).
const (
	phaseList      = "list"      // listing the day's identifiers
	phaseReharvest = "reharvest" // harvesting the day again: some were missing
	phaseRelist    = "relist"    // listing it once more: what is still missing
)

const oneDay = 24 * time.Hour

// CheckStats reports one CheckSet call.
type CheckStats struct {
	// Requests counts the OAI-PMH requests made (ListIdentifiers pages and
	// pages of re-harvests).
	Requests int
	// Days counts the days whose check ended, with the result in
	// harvest_days; Missing is how many records those days still lack.
	Days, Missing int
	// Reharvested counts the papers re-harvests stored that were new.
	Reharvested int
	// Dropped counts the days given up as uncheckable (the repository
	// refused the request or its list never ended).
	Dropped int
	// More says that days are left because the call's budget was spent:
	// call CheckSet again.
	More bool
}

// checkDays queues the days from..to (UTC dates, inclusive; at most the
// newest checkMaxDays, none after today) and the recent days found
// incomplete before, for the completeness check of source, in tx. A day
// whose check is under way keeps its progress.
func (h *Harvester) checkDays(ctx context.Context, tx pgx.Tx, source string, from, to time.Time) error {
	from, to = from.UTC().Truncate(oneDay), to.UTC().Truncate(oneDay)
	if today := h.now().UTC().Truncate(oneDay); to.After(today) {
		to = today
	}
	if to.Sub(from) > checkMaxDays*oneDay {
		from = to.Add(-(checkMaxDays - 1) * oneDay)
	}
	// The incomplete days come through harvest_days' primary key range.
	_, err := tx.Exec(ctx, `
		INSERT INTO harvest_checks (source, day)
		SELECT $1, d::date FROM generate_series($2::date, $3::date, interval '1 day') AS d
		UNION
		SELECT source, day FROM harvest_days WHERE source = $1 AND day >= $4 AND day < $2 AND missing > 0
		ON CONFLICT (source, day) DO NOTHING`,
		source, from, to, from.Add(-checkRecheckDays*oneDay))
	if err != nil {
		return fmt.Errorf("queueing the completeness check of %s: %w", source, err)
	}
	return nil
}

// CheckSet works off set's queued days: for each, oldest first, it lists
// the repository's identifiers of that datestamp page by page, counts those
// no stored paper has, and when some are missing harvests the day again and
// lists it once more; the result goes to harvest_days (Health reports it:
// "complete", "n missing, re-harvesting") and the day leaves the queue.
// Progress is saved after every request, so a call cut short (an error, a
// timeout, a crash) loses at most the page in flight and the next call
// resumes there. One call makes at most CheckRequests requests and starts
// none after half the time its context had left; it then returns with More
// set. A day the repository refuses to list (an OAI-PMH error, a response
// over the cap, a list that never ends) is dropped and logged, not retried;
// other failures return the error with the day still queued. A set that is
// not configured, or a Pager that cannot list identifiers, has its queue
// emptied.
func (h *Harvester) CheckSet(ctx context.Context, set string) (CheckStats, error) {
	var st CheckStats
	source := OAISource(set)
	lister, ok := h.pager.(IdentifierLister)
	if !ok || !slices.Contains(h.sets, set) {
		if _, err := h.db.Pool.Exec(ctx, `DELETE FROM harvest_checks WHERE source = $1`, source); err != nil {
			return st, fmt.Errorf("emptying the completeness check of %s: %w", source, err)
		}
		return st, nil
	}
	// Days no run would queue any more are forgotten.
	oldest := h.now().UTC().Truncate(oneDay).Add(-(checkMaxDays + checkRecheckDays) * oneDay)
	if _, err := h.db.Pool.Exec(ctx, `DELETE FROM harvest_checks WHERE source = $1 AND day < $2`, source, oldest); err != nil {
		return st, fmt.Errorf("pruning the completeness check of %s: %w", source, err)
	}
	requests := h.CheckRequests
	if requests <= 0 {
		requests = DefaultCheckRequests
	}
	budget := newTurnBudget(ctx, requests)
	for {
		c, ok, err := h.nextCheck(ctx, source)
		if err != nil || !ok {
			return st, err
		}
		if !budget.take() {
			st.More = true
			return st, nil
		}
		st.Requests++
		if err := h.checkStep(ctx, lister, set, c, &st); err != nil {
			return st, err
		}
	}
}

// turnBudget bounds one turn of a job (a CheckSet or RunSince call): a
// number of requests, and half the time left on its context when it
// started.
type turnBudget struct {
	left  int
	until time.Time // zero: no deadline
}

func newTurnBudget(ctx context.Context, requests int) turnBudget {
	b := turnBudget{left: requests}
	if d, ok := ctx.Deadline(); ok {
		b.until = time.Now().Add(time.Until(d) / 2)
	}
	return b
}

// take spends one request, or says that the budget is spent.
func (b *turnBudget) take() bool {
	if b.left <= 0 || !b.until.IsZero() && time.Now().After(b.until) {
		return false
	}
	b.left--
	return true
}

// dayCheck is one row of harvest_checks.
type dayCheck struct {
	day                    time.Time
	phase, token           string
	pages, listed, missing int
}

// nextCheck is source's oldest queued day (the primary key's range).
func (h *Harvester) nextCheck(ctx context.Context, source string) (dayCheck, bool, error) {
	var c dayCheck
	err := h.db.Pool.QueryRow(ctx, `
		SELECT day, phase, coalesce(token, ''), pages, listed, missing FROM harvest_checks
		WHERE source = $1 ORDER BY day LIMIT 1`, source).Scan(&c.day, &c.phase, &c.token, &c.pages, &c.listed, &c.missing)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("reading the completeness check of %s: %w", source, err)
	}
	c.day = c.day.UTC()
	return c, true, nil
}

// checkStep makes the next request of day c's check and saves where it
// leaves the check.
func (h *Harvester) checkStep(ctx context.Context, lister IdentifierLister, set string, c dayCheck, st *CheckStats) error {
	source := OAISource(set)
	date := c.day.Format(time.DateOnly)
	req := ListRequest{From: date, Until: date, Set: set}
	if c.token != "" {
		req = ListRequest{ResumptionToken: c.token}
	}
	var ids []string
	var next string
	var err error
	if c.phase == phaseReharvest {
		var page *Page
		if page, err = h.pager.ListRecords(ctx, req); err == nil {
			var res *catalog.IngestResult
			if res, err = h.papers.Ingest(ctx, page.Papers, catalog.SourceOAI); err == nil {
				st.Reharvested += res.New
				next = page.ResumptionToken
			}
		}
	} else {
		var page *IdentifierPage
		if page, err = lister.ListIdentifiers(ctx, req); err == nil {
			ids, next = page.IDs, page.ResumptionToken
		}
	}
	var oaiErr *OAIError
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, ErrBadResumptionToken) && c.token != "":
		// The token expired between two calls: the phase starts over.
		h.logger.WarnContext(ctx, "resumption token refused; checking the day from its start", "source", source, "day", date, "phase", c.phase)
		c.token, c.pages, c.listed, c.missing = "", 0, 0, 0
		return h.saveCheck(ctx, source, c)
	case err != nil && ctx.Err() == nil && (errors.As(err, &oaiErr) || errors.Is(err, ErrTooLarge)):
		if c.phase == phaseReharvest {
			// What could not be harvested again is counted by the relist.
			h.logger.WarnContext(ctx, "harvesting the day again failed", "source", source, "day", date, "error", err)
			return h.saveCheck(ctx, source, dayCheck{day: c.day, phase: phaseRelist})
		}
		return h.dropCheck(ctx, source, c, err, st)
	case err != nil:
		return fmt.Errorf("completeness check of %s, %s: %w", source, date, err)
	}
	c.pages++
	if c.phase == phaseReharvest {
		if next == "" || next == req.ResumptionToken || c.pages >= checkMaxPages {
			return h.saveCheck(ctx, source, dayCheck{day: c.day, phase: phaseRelist})
		}
		c.token = next
		return h.saveCheck(ctx, source, c)
	}
	missing, err := h.papers.Missing(ctx, ids)
	if err != nil {
		return err
	}
	c.listed += len(ids)
	c.missing += len(missing)
	switch {
	case next != "" && next == req.ResumptionToken:
		return h.dropCheck(ctx, source, c, fmt.Errorf("ListIdentifiers of %s answered resumptionToken %q with the same token", date, oaiShort(next)), st)
	case next != "" && c.pages >= checkMaxPages:
		return h.dropCheck(ctx, source, c, fmt.Errorf("ListIdentifiers of %s did not end after %d pages", date, checkMaxPages), st)
	case next != "":
		c.token = next
		return h.saveCheck(ctx, source, c)
	}
	return h.endListing(ctx, set, c, st)
}

// endListing records the count of a day whose listing ended: a day with
// records missing is harvested again first (its status says so
// meanwhile); otherwise, or after the relist, the day leaves the queue.
func (h *Harvester) endListing(ctx context.Context, set string, c dayCheck, st *CheckStats) error {
	source := OAISource(set)
	date := c.day.Format(time.DateOnly)
	if c.missing > 0 && c.phase == phaseList {
		h.logger.WarnContext(ctx, "records missing; harvesting the day again", "source", source, "day", date,
			"expected", c.listed, "missing", c.missing)
		return h.db.InTx(ctx, func(tx pgx.Tx) error {
			if err := h.recordDay(ctx, tx, source, c); err != nil {
				return err
			}
			return h.updateCheck(ctx, tx, source, dayCheck{day: c.day, phase: phaseReharvest})
		})
	}
	if c.missing > 0 {
		h.logger.WarnContext(ctx, "records still missing after harvesting the day again", "source", source, "day", date,
			"expected", c.listed, "missing", c.missing)
	}
	var due bool
	if c.phase == phaseRelist && h.followUps != nil {
		var err error
		if due, err = h.enrichmentDue(ctx); err != nil {
			return err
		}
	}
	err := h.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := h.recordDay(ctx, tx, source, c); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM harvest_checks WHERE source = $1 AND day = $2`, source, c.day); err != nil {
			return fmt.Errorf("ending the completeness check of %s, %s: %w", source, date, err)
		}
		if due {
			// The re-harvest may have stored papers to enrich.
			return h.followUps.EnqueueEnrichment(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.Days++
	st.Missing += c.missing
	return nil
}

// recordDay writes the count of day c to harvest_days.
func (h *Harvester) recordDay(ctx context.Context, tx pgx.Tx, source string, c dayCheck) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO harvest_days (source, day, records, expected, missing, checked_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (source, day) DO UPDATE SET records = $3, expected = $4, missing = $5, checked_at = $6`,
		source, c.day, c.listed-c.missing, c.listed, c.missing, h.now())
	if err != nil {
		return fmt.Errorf("recording the check of %s, %s: %w", source, c.day.Format(time.DateOnly), err)
	}
	return nil
}

// saveCheck saves the progress of day c's check.
func (h *Harvester) saveCheck(ctx context.Context, source string, c dayCheck) error {
	return h.db.InTx(ctx, func(tx pgx.Tx) error { return h.updateCheck(ctx, tx, source, c) })
}

func (h *Harvester) updateCheck(ctx context.Context, tx pgx.Tx, source string, c dayCheck) error {
	_, err := tx.Exec(ctx, `
		UPDATE harvest_checks SET phase = $3, token = NULLIF($4, ''), pages = $5, listed = $6, missing = $7
		WHERE source = $1 AND day = $2`,
		source, c.day, c.phase, c.token, c.pages, c.listed, c.missing)
	if err != nil {
		return fmt.Errorf("saving the completeness check of %s, %s: %w", source, c.day.Format(time.DateOnly), err)
	}
	return nil
}

// dropCheck gives up day c: the repository will not list it. The day
// keeps the result of its last check, if any.
func (h *Harvester) dropCheck(ctx context.Context, source string, c dayCheck, cause error, st *CheckStats) error {
	h.logger.WarnContext(ctx, "completeness check of the day given up", "source", source, "day", c.day.Format(time.DateOnly), "error", cause)
	if _, err := h.db.Pool.Exec(ctx, `DELETE FROM harvest_checks WHERE source = $1 AND day = $2`, source, c.day); err != nil {
		return fmt.Errorf("dropping the completeness check of %s: %w", source, err)
	}
	st.Dropped++
	return nil
}

// checkInline runs set's check to its end, for a Harvester without
// follow-ups. Failures are logged: the harvest itself succeeded.
func (h *Harvester) checkInline(ctx context.Context, set string) {
	for ctx.Err() == nil {
		st, err := h.CheckSet(ctx, set)
		if err != nil {
			h.logger.WarnContext(ctx, "completeness check failed", "source", OAISource(set), "error", err)
			return
		}
		if !st.More {
			return
		}
	}
}

// enrichmentDue reports whether any paper waits for an OpenAlex lookup.
func (h *Harvester) enrichmentDue(ctx context.Context) (bool, error) {
	ids, err := h.papers.DueForEnrichment(ctx, h.now(), 1)
	return len(ids) > 0, err
}
