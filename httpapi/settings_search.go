package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/search"
)

// The settings page's query section: a GET form (?q=, so a preview
// is a plain link that changes nothing and needs no CSRF token) shows what
// the search would have found (Previews.run, as GET /v1/search/preview),
// or where and why it cannot be used; "Follow this query" is a POST to
// /settings/follows (action follow) with the page's CSRF token.

// searchData is the section's state.
type searchData struct {
	// Input is the search as the user typed it ("" before any).
	Input string
	Days  int
	// Query is the normal form of a valid search, "" otherwise.
	Query  string
	Count  int
	Papers []searchPaper
	// Window says which papers Count is of: "the last 30 days", or, when
	// the preview ran out of its budget (Partial), the newest Searched
	// papers, "the papers announced since 2 Dec 2026 15:04 UTC".
	Window   string
	Partial  bool
	Searched int
	// Following: the user follows Query already.
	Following bool
	// Error says why the query cannot be used ("This query cannot be
	// used: at character 3: expected …") or that previews come too fast;
	// Before, At and After
	// are Input around the position (At is a no-break space past the end).
	Error             string
	Before, At, After string
}

// searchPaper is one preview line.
type searchPaper struct{ Title, URL, Authors, Categories, Date string }

// searchSection previews raw for viewer v (whose follows are fs) and
// returns the section and the page's status: 200, 422 for a search that
// cannot be used, 429 when previews come faster than the user's API rate
// limit (shared with GET /v1/search/preview) or while another preview of
// the user runs (Previews: one at a time, from the page or the API).
func (s *Settings) searchSection(r *http.Request, w http.ResponseWriter, v *viewer, raw string, fs []followJSON) (*searchData, int, error) {
	d := &searchData{Input: raw, Days: catalog.BackfillDays}
	if strings.TrimSpace(raw) == "" {
		d.Input = ""
		return d, http.StatusOK, nil
	}
	if ok, retry := s.PerUser.Allow("u:" + v.sub); !ok {
		setRetryAfter(w, retry)
		d.Error = "Not previewed: you are previewing queries faster than your rate limit allows; wait a moment and try again."
		d.Before = raw
		return d, http.StatusTooManyRequests, nil
	}
	q, pv, err := s.Previews.run(r.Context(), "u:"+v.sub, raw, "q")
	if err != nil {
		var se *search.Error
		e, ok := apperr.As(err)
		switch {
		case ok && e.Code == apperr.RateLimited:
			setRetryAfter(w, e.RetryAfter)
			d.Error = "Not previewed: " + e.Message + "."
			d.Before = raw
			return d, statusFor(err), nil
		case !ok || e.Code != apperr.Invalid || !errors.As(err, &se):
			return nil, 0, err
		}
		d.Error = "This query cannot be used: " + se.Error()
		d.Before, d.At, d.After = splitAt(raw, se.Pos)
		return d, statusFor(err), nil
	}
	d.Query, d.Count, d.Searched = q.String(), pv.Count, pv.Searched
	d.Window = fmt.Sprintf("the last %d days", d.Days)
	if !pv.Complete {
		d.Partial = true
		d.Window = "the papers announced since " + pv.SearchedSince.Format("2 Jan 2006 15:04 MST")
	}
	for _, p := range pv.Newest {
		names := authorNames(p)
		if len(names) > 3 {
			names = append(names[:3], "et al.")
		}
		d.Papers = append(d.Papers, searchPaper{Title: p.Title, URL: p.AbsURL, Authors: strings.Join(names, ", "),
			Categories: strings.Join(p.Categories, ", "), Date: p.AnnouncedAt.Format("2 Jan 2006")})
	}
	for _, f := range fs {
		if f.Kind == string(follow.Query) && f.ID == d.Query {
			d.Following = true
		}
	}
	return d, http.StatusOK, nil
}

// splitAt cuts s around its pos-th character (1-based): before, the
// character, after. Past the end the character is a no-break space, so the
// mark still shows where something was expected.
func splitAt(s string, pos int) (before, at, after string) {
	rs := []rune(s)
	i := pos - 1
	switch {
	case i < 0:
		i = 0
	case i >= len(rs):
		return s, "\u00a0", ""
	}
	return string(rs[:i]), string(rs[i]), string(rs[i+1:])
}
