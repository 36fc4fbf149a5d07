package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
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

// Previews runs the search previews of GET /v1/search/preview and the
// settings page's search section (one value shared by both): each user
// one at a time, each within Budget. A preview reads the last
// catalog.BackfillDays days in chunks and evaluates them on one core
// without holding a database connection (catalog.Store.PreviewSearch).
type Previews struct {
	Papers *catalog.Store
	// Budget bounds a preview's time (SEARCH_PREVIEW_BUDGET; 0: no
	// bound). Once it is spent the answer covers the newest papers only,
	// marked incomplete (catalog.Preview.Complete).
	Budget time.Duration
	// OnChunk, when set, is called by every preview after each chunk of
	// papers it read, with no connection held (tests hold previews there).
	OnChunk func(ctx context.Context)

	mu      sync.Mutex
	running map[string]bool
}

// run compiles raw (a query as a user typed it) and previews it over the
// last catalog.BackfillDays days for the user key (one preview at a time
// per key): how many papers match and the newest previewSize. A search
// that cannot be used is an apperr Invalid naming field, with the position
// (Details[0].Index) and what was expected, wrapping the *search.Error; a
// second preview while one of the same user runs is an apperr RateLimited
// whose RetryAfter is the budget (the running one ends within it).
func (pr *Previews) run(ctx context.Context, user, raw, field string) (*search.Query, catalog.Preview, error) {
	q, err := follow.CompileQuery(raw)
	if err != nil {
		var se *search.Error
		if errors.As(err, &se) {
			return nil, catalog.Preview{}, se.AppError(field)
		}
		return nil, catalog.Preview{}, apperr.InvalidField(field, "%v", err)
	}
	if !pr.enter(user) {
		return nil, catalog.Preview{}, &apperr.Error{Code: apperr.RateLimited, RetryAfter: max(pr.Budget, time.Second),
			Message: "a preview of yours is still running: previews run one at a time per user; try again once it has answered"}
	}
	defer pr.leave(user)
	pv, err := pr.Papers.PreviewSearch(ctx, q, time.Now().Add(-catalog.BackfillDays*24*time.Hour), previewSize,
		catalog.PreviewOptions{Budget: pr.Budget, OnChunk: pr.OnChunk})
	if err != nil {
		return nil, catalog.Preview{}, err
	}
	return q, pv, nil
}

// enter takes user's preview slot, or reports that a preview of the user
// holds it.
func (pr *Previews) enter(user string) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.running[user] {
		return false
	}
	if pr.running == nil {
		pr.running = map[string]bool{}
	}
	pr.running[user] = true
	return true
}

// leave gives user's preview slot back.
func (pr *Previews) leave(user string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	delete(pr.running, user)
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
// last catalog.BackfillDays days the search matches, and the newest ten;
// when the budget ran out first, complete is false and the answer is that
// of the papers announced since searched_since.
func (a *API) previewSearch(w http.ResponseWriter, r *http.Request, u *account.User) error {
	q, pv, err := a.Previews.run(r.Context(), "u:"+u.Sub, r.URL.Query().Get("q"), "q")
	if err != nil {
		return err
	}
	out := struct {
		Query    string             `json:"query"`
		Days     int                `json:"days"`
		Count    int                `json:"count"`
		Papers   []previewPaperJSON `json:"papers"`
		Complete bool               `json:"complete"`
		Searched int                `json:"searched"`
		// SearchedSince: only when incomplete, the announcement time of
		// the oldest paper searched.
		SearchedSince *time.Time `json:"searched_since,omitempty"`
	}{Query: q.String(), Days: catalog.BackfillDays, Count: pv.Count, Papers: make([]previewPaperJSON, 0, len(pv.Newest)),
		Complete: pv.Complete, Searched: pv.Searched}
	if !pv.Complete {
		out.SearchedSince = &pv.SearchedSince
	}
	for _, p := range pv.Newest {
		out.Papers = append(out.Papers, previewPaperJSON{ArxivID: p.ArxivID, Title: p.Title, Authors: authorNames(p),
			Categories: p.Categories, URL: p.AbsURL, AnnouncedAt: p.AnnouncedAt})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
