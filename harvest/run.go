package harvest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
)

// Pager fetches OAI-PMH ListRecords pages (OAIClient implements it).
type Pager interface {
	ListRecords(ctx context.Context, req ListRequest) (*Page, error)
}

// Harvester runs incremental OAI-PMH harvests of arXiv sets. Its progress
// lives in harvest_state (one row per set): the last datestamp fully
// harvested and, while a run is under way, its start date and resumption
// token. A run that fails or is stopped resumes from there; a gap of days is
// caught up because the next run starts at the last harvested datestamp.
type Harvester struct {
	db     *database.DB
	pager  Pager
	papers *catalog.Store
	sets   []string
	logger *slog.Logger
	now    func() time.Time
	// followUps queues the check and enrichment after a run (nil: the
	// check runs inline).
	followUps FollowUps
	// Lookback is how far back the very first run of a set starts.
	Lookback time.Duration
	// CheckRequests is the most OAI-PMH requests one CheckSet call makes
	// (DefaultCheckRequests when not positive).
	CheckRequests int
}

// NewHarvester returns a Harvester of sets (e.g. "cs", "physics:hep-th").
func NewHarvester(db *database.DB, pager Pager, papers *catalog.Store, sets []string, logger *slog.Logger, now func() time.Time) *Harvester {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Harvester{db: db, pager: pager, papers: papers, sets: sets, logger: logger, now: now, Lookback: 48 * time.Hour,
		CheckRequests: DefaultCheckRequests}
}

// RunStats reports a harvest run.
type RunStats struct {
	Pages, Records, New, Replaced, Updated, Deleted, Skipped int
	// More says that the call stopped because half its context's time was
	// spent, with a set's list not yet exhausted: its progress (the
	// resumption token) is saved, and RunSince with the same since resumes
	// at the next page.
	More bool
}

// RunOnce harvests every configured set until its list is exhausted, the
// context ends, or an error occurs. It returns the combined stats and the
// first error; sets after a failed one are still harvested. A set's run
// that reaches the end of its list is recorded, in one transaction, with
// its days queued for the completeness check and the follow-up jobs
// (QueueFollowUps); without follow-ups the check runs here, after the
// set's run, and its failures are only logged.
func (h *Harvester) RunOnce(ctx context.Context) (RunStats, error) {
	return h.RunSince(ctx, time.Time{})
}

// RunSince is RunOnce in turns, for a job that must end before its
// deadline: a call starts no page once half its context's time is spent
// (the first page of a call always goes), and then returns with More set;
// sets whose run completed at or after since (an earlier turn of the same
// job: pass its creation time) are not run again. Every page is stored
// before the next is asked for, so no record is lost or fetched twice.
func (h *Harvester) RunSince(ctx context.Context, since time.Time) (RunStats, error) {
	var total RunStats
	var errs []error
	budget := newTurnBudget(ctx, math.MaxInt)
	for _, set := range h.sets {
		st, err := h.runSet(ctx, set, since, &budget)
		total.More = total.More || st.More
		total.Pages += st.Pages
		total.Records += st.Records
		total.New += st.New
		total.Replaced += st.Replaced
		total.Updated += st.Updated
		total.Deleted += st.Deleted
		total.Skipped += st.Skipped
		if err != nil {
			errs = append(errs, fmt.Errorf("harvesting set %s: %w", set, err))
			if ctx.Err() != nil {
				break
			}
		}
		if st.More {
			break
		}
	}
	return total, errors.Join(errs...)
}

type setState struct {
	until time.Time // harvested_until (zero: never)
	from  time.Time // run_from of the run under way
	token string
	done  time.Time // last_success_at (zero: never)
}

func (h *Harvester) runSet(ctx context.Context, set string, since time.Time, budget *turnBudget) (RunStats, error) {
	var st RunStats
	source := OAISource(set)
	state, err := h.loadState(ctx, source)
	if err != nil {
		return st, err
	}
	if state.token == "" && !since.IsZero() && !state.done.Before(since) {
		return st, nil // done in an earlier turn of this job
	}
	if state.token == "" {
		state.from = state.until
		if state.from.IsZero() {
			state.from = h.now().UTC().Add(-h.Lookback).Truncate(24 * time.Hour)
		}
	}
	newest := state.until
	restarted := false
	for {
		if !budget.take() {
			st.More = true
			return st, nil
		}
		req := ListRequest{From: state.from.Format("2006-01-02"), Set: set}
		if state.token != "" {
			req = ListRequest{ResumptionToken: state.token}
		}
		page, err := h.pager.ListRecords(ctx, req)
		if errors.Is(err, ErrBadResumptionToken) && !restarted {
			// Tokens expire; the records are idempotent, so start the run
			// over from its first date.
			h.logger.WarnContext(ctx, "resumption token refused; restarting the run", "set", set, "from", state.from.Format(time.DateOnly))
			state.token, restarted = "", true
			continue
		}
		if err != nil {
			h.saveError(ctx, source, err)
			return st, err
		}
		res, err := h.papers.Ingest(ctx, page.Papers, catalog.SourceOAI)
		if err != nil {
			h.saveError(ctx, source, err)
			return st, err
		}
		st.Pages++
		st.Records += len(page.Papers)
		st.New += res.New
		st.Replaced += res.Replaced
		st.Updated += res.Updated
		st.Deleted += res.Deleted
		st.Skipped += len(res.Skipped) + page.Skipped
		for _, p := range page.Papers {
			if d := p.AnnouncedAt.UTC().Truncate(24 * time.Hour); d.After(newest) {
				newest = d
			}
		}
		if page.ResumptionToken != "" && page.ResumptionToken == req.ResumptionToken {
			// A broken repository that hands back the token it was given
			// would keep this loop going for ever; the page's records are
			// stored, and the next run asks again.
			err := fmt.Errorf("harvesting set %s: %w: the repository answered resumptionToken %q with the same token", set, ErrMalformed, oaiShort(page.ResumptionToken))
			h.saveError(ctx, source, err)
			return st, err
		}
		state.token = page.ResumptionToken
		if state.token == "" {
			// The list is exhausted. Records of the newest datestamp may
			// still grow today, so the next run starts at that date again
			// (OAI-PMH "from" is inclusive; re-reading is harmless).
			if newest.IsZero() || newest.Before(state.from) {
				newest = state.from
			}
			if err := h.saveDone(ctx, set, state.from, newest, len(page.Papers)); err != nil {
				return st, err
			}
			if h.followUps == nil {
				h.checkInline(ctx, set)
			}
			return st, nil
		}
		if err := h.saveProgress(ctx, source, state, len(page.Papers)); err != nil {
			return st, err
		}
		h.logger.InfoContext(ctx, "harvested page", "set", set, "records", len(page.Papers), "new", res.New,
			"cursor", page.Cursor, "complete_list_size", page.CompleteListSize)
	}
}

func (h *Harvester) loadState(ctx context.Context, source string) (setState, error) {
	var s setState
	var until, from, done *time.Time
	var token *string
	err := h.db.Pool.QueryRow(ctx, `
		SELECT harvested_until, run_from, resumption_token, last_success_at FROM harvest_state WHERE source = $1`, source).Scan(&until, &from, &token, &done)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading harvest state of %s: %w", source, err)
	}
	if until != nil {
		s.until = until.UTC()
	}
	if from != nil {
		s.from = from.UTC()
	}
	if token != nil && from != nil {
		s.token = *token
	}
	if done != nil {
		s.done = *done
	}
	return s, nil
}

func (h *Harvester) saveProgress(ctx context.Context, source string, s setState, records int) error {
	_, err := h.db.Pool.Exec(ctx, `
		INSERT INTO harvest_state (source, run_from, resumption_token, pages, records, last_error, updated_at)
		VALUES ($1, $2, $3, $4, $5, NULL, now())
		ON CONFLICT (source) DO UPDATE SET run_from = $2, resumption_token = $3,
			pages = harvest_state.pages + $4, records = harvest_state.records + $5, last_error = NULL, updated_at = now()`,
		source, s.from, s.token, 1, records)
	if err != nil {
		return fmt.Errorf("saving harvest progress of %s: %w", source, err)
	}
	return nil
}

// saveDone records the end of set's run from..until: the state, the days
// to check and the follow-up jobs, in one transaction.
func (h *Harvester) saveDone(ctx context.Context, set string, from, until time.Time, records int) error {
	source := OAISource(set)
	_, check := h.pager.(IdentifierLister)
	var due bool
	if h.followUps != nil {
		var err error
		if due, err = h.enrichmentDue(ctx); err != nil {
			return err
		}
	}
	return h.db.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO harvest_state (source, harvested_until, run_from, resumption_token, pages, records, last_error, last_success_at, updated_at)
			VALUES ($1, $2, NULL, NULL, 1, $3, NULL, $4, now())
			ON CONFLICT (source) DO UPDATE SET harvested_until = $2, run_from = NULL, resumption_token = NULL,
				pages = harvest_state.pages + 1, records = harvest_state.records + $3, last_error = NULL,
				last_success_at = $4, updated_at = now()`,
			source, until, records, h.now())
		if err != nil {
			return fmt.Errorf("saving harvest state of %s: %w", source, err)
		}
		if check {
			if err := h.checkDays(ctx, tx, source, from, until); err != nil {
				return err
			}
		}
		if h.followUps == nil {
			return nil
		}
		if check {
			if err := h.followUps.EnqueueCheck(ctx, tx, set); err != nil {
				return fmt.Errorf("queueing the completeness check of %s: %w", source, err)
			}
		}
		if due {
			if err := h.followUps.EnqueueEnrichment(ctx, tx); err != nil {
				return fmt.Errorf("queueing enrichment after %s: %w", source, err)
			}
		}
		return nil
	})
}

func (h *Harvester) saveError(ctx context.Context, source string, cause error) {
	h.logger.WarnContext(ctx, "harvest failed", "source", source, "error", cause)
	saveSourceError(ctx, h.db, h.logger, source, cause, h.now())
}
