package harvest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/database"
	"followfeed/internal/upstream"
)

// Source names of the health records (harvest_state.source).
const (
	// SourceOpenAlex is the OpenAlex enrichment.
	SourceOpenAlex = "openalex"
	// SourcePush is POST /v1/papers.
	SourcePush = "push"
	// oaiSourcePrefix + set names one OAI-PMH set: "arxiv-oai:cs".
	oaiSourcePrefix = "arxiv-oai:"
)

// OAISource is the source name of an OAI-PMH set: "arxiv-oai:cs".
func OAISource(set string) string { return oaiSourcePrefix + set }

// BehindLag is the lag of an OAI-PMH set past which the harvest counts as
// behind: a digest then says that the papers will follow.
const BehindLag = 12 * time.Hour

// statusDays is how many of a source's newest days Status reports.
const statusDays = 14

// Health records and reports the health of every source: each OAI-PMH set
// (written by the Harvester), the OpenAlex enrichment (by the Enricher) and
// pushes (RecordPush). It is the one writer of harvest_days and, with the
// Harvester, of harvest_state; both live in this package.
type Health struct {
	db   *database.DB
	sets []string
	now  func() time.Time
	log  *slog.Logger
}

// NewHealth returns the health store of the configured OAI-PMH sets; now
// may be nil (time.Now).
func NewHealth(db *database.DB, sets []string, logger *slog.Logger, now func() time.Time) *Health {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Health{db: db, sets: sets, now: now, log: logger}
}

// recordSuccess marks a run of source successful now and adds records to
// the records of today (UTC). It is for sources without a completeness
// check (openalex, push).
func (h *Health) recordSuccess(ctx context.Context, source string, records int) error {
	now := h.now()
	return h.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO harvest_state (source, last_success_at, last_error, updated_at) VALUES ($1, $2, NULL, now())
			ON CONFLICT (source) DO UPDATE SET last_success_at = $2, last_error = NULL, updated_at = now()`,
			source, now); err != nil {
			return fmt.Errorf("recording the success of %s: %w", source, err)
		}
		if records <= 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO harvest_days (source, day, records) VALUES ($1, $2, $3)
			ON CONFLICT (source, day) DO UPDATE SET records = harvest_days.records + $3`,
			source, now.UTC().Truncate(24*time.Hour), records); err != nil {
			return fmt.Errorf("counting the records of %s: %w", source, err)
		}
		return nil
	})
}

// recordError stores cause as source's last error and counts it. A failure
// to store it is logged, not returned: the caller is already failing.
func (h *Health) recordError(ctx context.Context, source string, cause error) {
	saveSourceError(ctx, h.db, h.log, source, cause, h.now())
}

// saveSourceError is recordError for the Harvester and the Health alike.
// It stores PublicError(cause), which /v1/status shows to anyone; the
// cause itself goes only to the log, where each caller writes it (the
// harvest and the enrichment at WARN; a push's 5xx by the HTTP layer).
func saveSourceError(ctx context.Context, db *database.DB, logger *slog.Logger, source string, cause error, now time.Time) {
	msg := PublicError(cause)
	_, err := db.Pool.Exec(context.WithoutCancel(ctx), `
		INSERT INTO harvest_state (source, last_error, last_error_at, errors, updated_at) VALUES ($1, $2, $3, 1, now())
		ON CONFLICT (source) DO UPDATE SET last_error = $2, last_error_at = $3, errors = harvest_state.errors + 1, updated_at = now()`,
		source, msg, now)
	if err != nil {
		logger.WarnContext(ctx, "saving source error", "source", source, "error", err)
	}
}

// PublicError is what a source's health says of its last failure
// (SourceStatus.LastError, public on /v1/status and /status): a fixed
// sentence for the kind of failure, never the error's own text, which
// can carry internal detail (SQL errors, host names, upstream bodies) and
// belongs in the logs. Upstream failures are described by
// upstream.Public (unreachable, HTTP status, too large, malformed,
// timeout); an OAI-PMH error by its code; a refused push by its apperr
// code; anything else is an internal error.
func PublicError(err error) string {
	if msg, ok := upstream.Public(err); ok {
		return msg
	}
	var oaiErr *OAIError
	if errors.As(err, &oaiErr) {
		if oaiCodeRE.MatchString(oaiErr.Code) {
			return "the repository answered OAI-PMH error " + oaiErr.Code
		}
		return "the repository answered an OAI-PMH error"
	}
	switch apperr.CodeOf(err) {
	case apperr.Invalid:
		return "refused: invalid input (the response to the request listed the problems)"
	case apperr.BadRequest:
		return "refused: the request body could not be read"
	case apperr.TooLarge:
		return "refused: the request exceeded a size limit"
	case apperr.Unavailable:
		return "a dependency was unavailable; it is retried"
	}
	return "internal error (the service's log has the details)"
}

// oaiCodeRE is the shape of OAI-PMH's error codes (badArgument,
// noSetHierarchy, …): one a repository made up may be anything.
var oaiCodeRE = regexp.MustCompile(`^[A-Za-z]{1,40}$`)

// RecordPush records a push of records papers: err nil is a success, any
// other a failed push (refused or not stored), kept as the source's last
// error.
func (h *Health) RecordPush(ctx context.Context, records int, err error) {
	if err != nil {
		h.recordError(ctx, SourcePush, err)
		return
	}
	if rerr := h.recordSuccess(ctx, SourcePush, records); rerr != nil {
		h.log.WarnContext(ctx, "recording push", "source", SourcePush, "error", rerr)
	}
}

// DayStatus is one announcement day of a source.
type DayStatus struct {
	Day     time.Time // UTC midnight
	Records int       // records held (for a set: of those the repository lists)
	// Expected is the repository's count of the day (ListIdentifiers), -1
	// when not checked (and for openalex and push).
	Expected int
	// Missing is how many of Expected were still not stored after
	// re-harvesting, -1 when not checked.
	Missing   int
	CheckedAt time.Time
}

// Completeness is "complete", "n missing, re-harvesting" or "not checked".
func (d DayStatus) Completeness() string {
	switch {
	case d.Expected < 0:
		return "not checked"
	case d.Missing == 0:
		return "complete"
	}
	return strconv.Itoa(d.Missing) + " missing, re-harvesting"
}

// SourceStatus is one source's health.
type SourceStatus struct {
	Source string // arxiv-oai:cs, openalex, push
	// LastSuccess is the end of the last successful run (for a set: a
	// harvest that reached the end of its list); zero when never.
	LastSuccess time.Time
	// LastError is the last failure's public message (PublicError), ""
	// when the last run succeeded; LastErrorAt is when it happened (kept
	// after a success).
	LastError   string
	LastErrorAt time.Time
	Errors      int64 // failures ever recorded
	// HarvestedUntil is the newest datestamp fully harvested (sets only).
	HarvestedUntil time.Time
	// Lag is how long ago LastSuccess was (-1 when never).
	Lag  time.Duration
	Days []DayStatus // newest first, at most 14
}

// Failing reports whether the source's last run failed.
func (s SourceStatus) Failing() bool { return s.LastError != "" }

// OAI reports whether the source is an OAI-PMH set.
func (s SourceStatus) OAI() bool { return strings.HasPrefix(s.Source, oaiSourcePrefix) }

// Sources lists the source names Status reports, in order.
func (h *Health) Sources() []string {
	out := make([]string, 0, len(h.sets)+2)
	for _, set := range h.sets {
		out = append(out, OAISource(set))
	}
	return append(out, SourceOpenAlex, SourcePush)
}

// Status reports every source (each configured set, openalex, push), also
// those that never ran.
func (h *Health) Status(ctx context.Context) ([]SourceStatus, error) {
	sources := h.Sources()
	now := h.now()
	byName := make(map[string]*SourceStatus, len(sources))
	out := make([]SourceStatus, len(sources))
	for i, s := range sources {
		out[i] = SourceStatus{Source: s, Lag: -1}
		byName[s] = &out[i]
	}
	// harvest_state is a handful of rows; the days come through the
	// primary key (source, day), newest first per source.
	rows, err := h.db.Pool.Query(ctx, `
		SELECT source, last_success_at, coalesce(last_error, ''), last_error_at, errors, harvested_until
		FROM harvest_state WHERE source = ANY($1)`, sources)
	if err != nil {
		return nil, fmt.Errorf("reading source health: %w", err)
	}
	for rows.Next() {
		var name, lastErr string
		var ok, errAt, until *time.Time
		var n int64
		if err := rows.Scan(&name, &ok, &lastErr, &errAt, &n, &until); err != nil {
			rows.Close()
			return nil, err
		}
		s := byName[name]
		s.LastError, s.Errors = lastErr, n
		if ok != nil {
			s.LastSuccess, s.Lag = ok.UTC(), max(now.Sub(*ok), 0)
		}
		if errAt != nil {
			s.LastErrorAt = errAt.UTC()
		}
		if until != nil {
			s.HarvestedUntil = until.UTC()
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading source health: %w", err)
	}
	drows, err := h.db.Pool.Query(ctx, `
		SELECT s.source, d.day, d.records, coalesce(d.expected, -1), coalesce(d.missing, -1), d.checked_at
		FROM unnest($1::text[]) AS s(source)
		CROSS JOIN LATERAL (SELECT * FROM harvest_days d WHERE d.source = s.source ORDER BY d.day DESC LIMIT $2) d`,
		sources, statusDays)
	if err != nil {
		return nil, fmt.Errorf("reading source days: %w", err)
	}
	defer drows.Close()
	for drows.Next() {
		var name string
		var d DayStatus
		var checked *time.Time
		if err := drows.Scan(&name, &d.Day, &d.Records, &d.Expected, &d.Missing, &checked); err != nil {
			return nil, err
		}
		d.Day = d.Day.UTC()
		if checked != nil {
			d.CheckedAt = checked.UTC()
		}
		byName[name].Days = append(byName[name].Days, d)
	}
	if err := drows.Err(); err != nil {
		return nil, fmt.Errorf("reading source days: %w", err)
	}
	return out, nil
}

// HarvestBehind says whether the arXiv harvest is behind now: some set's
// last run failed, or its last success is more than BehindLag ago (or it
// never succeeded although it was tried). It returns a sentence for
// users ("" when the harvest is current).
func (h *Health) HarvestBehind(ctx context.Context) (string, error) {
	st, err := h.Status(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range st {
		if !s.OAI() {
			continue
		}
		switch {
		case s.Failing():
			return "The arXiv harvest is failing at the moment", nil
		case s.Lag > BehindLag:
			return fmt.Sprintf("The arXiv harvest is %d hours behind", int(s.Lag.Hours())), nil
		case s.Lag < 0 && s.Errors > 0:
			return "The arXiv harvest has not completed yet", nil
		}
	}
	return "", nil
}
