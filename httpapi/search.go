package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/paper"
	"followfeed/search"
)

// previewSize is how many of a preview's matches are listed.
const previewSize = 10

type previewPaperJSON struct {
	ArxivID     string    `json:"arxiv_id"`
	Title       string    `json:"title"`
	Authors     []string  `json:"authors"`
	Categories  []string  `json:"categories"`
	URL         string    `json:"url"`
	AnnouncedAt time.Time `json:"announced_at"`
}

// previewQuery compiles raw (a query as a user typed it) and
// previews it over the last catalog.BackfillDays days: how many papers match
// and the newest previewSize. The JSON route and the settings page share
// it. A search that cannot be used is an apperr Invalid naming field, with
// the position (Details[0].Index) and what was expected, wrapping the
// *search.Error.
func previewQuery(ctx context.Context, papers *catalog.Store, raw, field string) (*search.Query, catalog.Preview, error) {
	q, err := follow.CompileQuery(raw)
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return nil, catalog.Preview{}, se.AppError(field)
		}
		return nil, catalog.Preview{}, apperr.InvalidField(field, "%v", err)
	}
	pv, err := papers.PreviewSearch(ctx, q, time.Now().Add(-catalog.BackfillDays*24*time.Hour), previewSize, catalog.PreviewOptions{})
	if err != nil {
		return nil, catalog.Preview{}, err
	}
	return q, pv, nil
}

// authorNames are the names of a paper's authors, in order.
func authorNames(p paper.Paper) []string {
	names := make([]string, len(p.Authors))
	for i, au := range p.Authors {
		names[i] = au.Name
	}
	return names
}

// previewSearch serves GET /v1/search/preview?q=: how many papers of the
// last catalog.BackfillDays days the search matches, and the newest ten.
func (a *API) previewSearch(w http.ResponseWriter, r *http.Request, _ *account.User) error {
	q, pv, err := previewQuery(r.Context(), a.Papers, r.URL.Query().Get("q"), "q")
	if err != nil {
		return err
	}
	out := struct {
		Query  string             `json:"query"`
		Days   int                `json:"days"`
		Count  int                `json:"count"`
		Papers []previewPaperJSON `json:"papers"`
	}{Query: q.String(), Days: catalog.BackfillDays, Count: pv.Count, Papers: make([]previewPaperJSON, 0, len(pv.Newest))}
	for _, p := range pv.Newest {
		out.Papers = append(out.Papers, previewPaperJSON{ArxivID: p.ArxivID, Title: p.Title, Authors: authorNames(p),
			Categories: p.Categories, URL: p.AbsURL, AnnouncedAt: p.AnnouncedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
