package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"followfeed/arxivcal"
	"followfeed/harvest"
)

// StatusRoutes serve the public health of the sources: GET /v1/status (JSON)
// and GET /status (a small page). Both read harvest.Health; neither needs a
// token, and neither says anything about this process (that is /readyz).
type StatusRoutes struct {
	Logger   *slog.Logger
	Health   *harvest.Health
	Calendar *arxivcal.Calendar
	PerIP    *Limiter
	Now      func() time.Time // nil: time.Now
}

type statusDayJSON struct {
	Day          string `json:"day"`
	Records      int    `json:"records"`
	Expected     *int   `json:"expected"`
	Missing      *int   `json:"missing"`
	Completeness string `json:"completeness"`
}

type sourceJSON struct {
	Source         string          `json:"source"`
	State          string          `json:"state"`
	LastSuccessAt  *time.Time      `json:"last_success_at"`
	LastError      *string         `json:"last_error"`
	LastErrorAt    *time.Time      `json:"last_error_at"`
	Errors         int64           `json:"errors"`
	LagSeconds     *int64          `json:"lag_seconds"`
	HarvestedUntil *string         `json:"harvested_until,omitempty"`
	Days           []statusDayJSON `json:"days"`
}

type statusJSON struct {
	Sources          []sourceJSON `json:"sources"`
	HarvestBehind    *string      `json:"harvest_behind"`
	LastAnnouncement *time.Time   `json:"last_announcement"`
	NextAnnouncement *time.Time   `json:"next_announcement"`
}

// sourceState is one word for a source: "ok", "failing", "behind" (a set
// whose last success is over harvest.BehindLag ago) or "never": not asked
// yet, no run has reached it (a failed one would make it "failing"; an
// enrichment run with nothing to look up asks OpenAlex nothing).
func sourceState(s harvest.SourceStatus) string {
	switch {
	case s.Failing():
		return "failing"
	case s.Lag < 0:
		return "never"
	case s.OAI() && s.Lag > harvest.BehindLag:
		return "behind"
	}
	return "ok"
}

func (s *StatusRoutes) build(ctx context.Context) (statusJSON, error) {
	st, err := s.Health.Status(ctx)
	if err != nil {
		return statusJSON{}, err
	}
	behind, err := s.Health.HarvestBehind(ctx)
	if err != nil {
		return statusJSON{}, err
	}
	out := statusJSON{Sources: make([]sourceJSON, 0, len(st))}
	if behind != "" {
		out.HarvestBehind = &behind
	}
	if s.Calendar != nil {
		now := time.Now()
		if s.Now != nil {
			now = s.Now()
		}
		if t := s.Calendar.Last(now); !t.IsZero() {
			t = t.UTC()
			out.LastAnnouncement = &t
		}
		if t := s.Calendar.Next(now); !t.IsZero() {
			t = t.UTC()
			out.NextAnnouncement = &t
		}
	}
	for _, src := range st {
		j := sourceJSON{Source: src.Source, State: sourceState(src), Errors: src.Errors, Days: []statusDayJSON{}}
		if !src.LastSuccess.IsZero() {
			t := src.LastSuccess
			j.LastSuccessAt = &t
			lag := int64(src.Lag / time.Second)
			j.LagSeconds = &lag
		}
		if src.LastError != "" {
			e := src.LastError
			j.LastError = &e
		}
		if !src.LastErrorAt.IsZero() {
			t := src.LastErrorAt
			j.LastErrorAt = &t
		}
		if !src.HarvestedUntil.IsZero() {
			d := src.HarvestedUntil.Format(time.DateOnly)
			j.HarvestedUntil = &d
		}
		for _, d := range src.Days {
			dj := statusDayJSON{Day: d.Day.Format(time.DateOnly), Records: d.Records, Completeness: d.Completeness()}
			if d.Expected >= 0 {
				e, m := d.Expected, d.Missing
				dj.Expected, dj.Missing = &e, &m
			}
			j.Days = append(j.Days, dj)
		}
		out.Sources = append(out.Sources, j)
	}
	return out, nil
}

func (s *StatusRoutes) limited(w http.ResponseWriter, r *http.Request) bool {
	if s.PerIP == nil {
		return false
	}
	if ok, retry := s.PerIP.Allow(clientIP(r)); !ok {
		rateLimited(w, r, retry, "too many requests from this address; slow down")
		return true
	}
	return false
}

func (s *StatusRoutes) statusJSON(w http.ResponseWriter, r *http.Request) {
	if s.limited(w, r) {
		return
	}
	out, err := s.build(r.Context())
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=30")
	writeJSON(w, http.StatusOK, out)
}

// statusPageSource is one row of the /status page.
type statusPageSource struct {
	sourceJSON
	StateText string // the state as the page words it
	Lag       string // "3 minutes", "never"
	Days      []statusPageDay
}

// stateText words a source's state for the page: "never" is "not asked
// yet" ("nothing pushed yet" for push, which is never asked), the others
// are their own word.
func stateText(src sourceJSON) string {
	switch {
	case src.State != "never":
		return src.State
	case src.Source == harvest.SourcePush:
		return "nothing pushed yet"
	}
	return "not asked yet"
}

type statusPageDay struct {
	statusDayJSON
	Incomplete bool
}

func (s *StatusRoutes) statusPage(w http.ResponseWriter, r *http.Request) {
	if s.limited(w, r) {
		return
	}
	out, err := s.build(r.Context())
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	rows := make([]statusPageSource, 0, len(out.Sources))
	neverRan := false // an arXiv set that has never harvested: not "current"
	for _, src := range out.Sources {
		if strings.HasPrefix(src.Source, "arxiv-oai:") && src.State == "never" {
			neverRan = true
		}
		row := statusPageSource{sourceJSON: src, StateText: stateText(src), Lag: "never"}
		if src.LagSeconds != nil {
			row.Lag = humanDuration(time.Duration(*src.LagSeconds) * time.Second)
		}
		for _, d := range src.Days {
			row.Days = append(row.Days, statusPageDay{d, d.Missing != nil && *d.Missing > 0})
		}
		rows = append(rows, row)
	}
	data := struct {
		Status   statusJSON
		Sources  []statusPageSource
		NeverRan bool
	}{out, rows, neverRan}
	w.Header().Set("Refresh", "300")
	renderPage(w, r, s.Logger, http.StatusOK, "status.html", page{Title: "Source status", Data: data})
}

// humanDuration says d roughly: "just now", "5 minutes", "3 hours", "2 days".
func humanDuration(d time.Duration) string {
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.Itoa(n) + " " + unit + "s"
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int(d/time.Hour), "hour")
	}
	return plural(int(d/(24*time.Hour)), "day")
}
