package httpapi

import (
	"errors"
	"net/http"
	"time"

	"followfeed/account"
	"followfeed/apperr"
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

// previewSearch serves GET /v1/search/preview?q=: how many papers of the
// last paper.BackfillDays days the search matches, and the newest ten.
func (a *API) previewSearch(w http.ResponseWriter, r *http.Request, _ *account.User) error {
	raw := r.URL.Query().Get("q")
	q, err := follow.CompileQuery(raw)
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return se.AppError("q")
		}
		return apperr.InvalidField("q", "%v", err)
	}
	pv, err := a.Papers.PreviewSearch(r.Context(), q, time.Now().Add(-paper.BackfillDays*24*time.Hour), previewSize)
	if err != nil {
		return err
	}
	out := struct {
		Query  string             `json:"query"`
		Days   int                `json:"days"`
		Count  int                `json:"count"`
		Papers []previewPaperJSON `json:"papers"`
	}{Query: q.String(), Days: paper.BackfillDays, Count: pv.Count, Papers: make([]previewPaperJSON, 0, len(pv.Newest))}
	for _, p := range pv.Newest {
		names := make([]string, len(p.Authors))
		for i, au := range p.Authors {
			names[i] = au.Name
		}
		out.Papers = append(out.Papers, previewPaperJSON{ArxivID: p.ArxivID, Title: p.Title, Authors: names,
			Categories: p.Categories, URL: p.AbsURL, AnnouncedAt: p.AnnouncedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
