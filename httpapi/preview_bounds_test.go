package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"followfeed/app"
	"followfeed/internal/testapp"
)

// previewJSON is GET /v1/search/preview's answer.
type previewJSON struct {
	Query  string
	Count  int
	Papers []struct {
		ArxivID     string    `json:"arxiv_id"`
		AnnouncedAt time.Time `json:"announced_at"`
	}
	Complete      bool
	Searched      int
	SearchedSince *time.Time `json:"searched_since"`
}

// previewHold holds every search preview of a process at its first chunk
// (app.Hooks.PreviewChunk: the preview then holds no database connection)
// until released.
type previewHold struct {
	mu      sync.Mutex
	holding bool
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func newPreviewHold() *previewHold {
	return &previewHold{holding: true, arrived: make(chan struct{}, 64), release: make(chan struct{})}
}

func (h *previewHold) hook(ctx context.Context) {
	h.mu.Lock()
	holding := h.holding
	h.mu.Unlock()
	if !holding {
		return
	}
	h.arrived <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

// wait waits until n more previews are held.
func (h *previewHold) wait(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-h.arrived:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d previews reached the hold in 20 s (held previews that kept a connection would leave the rest waiting for the pool)", i, n)
		}
	}
}

// free lets every held preview and all later ones go on.
func (h *previewHold) free() {
	h.once.Do(func() {
		h.mu.Lock()
		h.holding = false
		h.mu.Unlock()
		close(h.release)
	})
}

// TestPreviewsAreBounded: a user's search previews run one at a time
// (a second one, from the API or the settings page, is a 429 with
// Retry-After while the first runs, and runs once it has answered), and a
// preview holds no database connection while it evaluates papers: with a
// pool of 2 connections (DB_MAX_CONNS) and 4 users' previews held in their
// evaluation, another user's GET /v1/me answers at once (it would wait for
// a connection until they end if they held theirs, as the 21 concurrent
// previews of the security review made GET /v1/me take 6.5 s). The held
// previews then answer in full.
func TestPreviewsAreBounded(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	hold := newPreviewHold()
	defer hold.free()
	env := testapp.Env(t)
	env["RATE_LIMIT_PER_IP"], env["RATE_LIMIT_PER_USER"], env["DB_MAX_CONNS"] = "0", "0", "2"
	a := testapp.StartWith(t, env, app.Hooks{PreviewChunk: hold.hook}, "api")
	c := a.Client(t)
	pushTitled(t, c, "Diffusion models for graphs", "Sparse diffusion models", "Transformers for tables")
	const q = "diffusion models"
	path := "/v1/search/preview?q=" + url.QueryEscape(q)

	type answer struct {
		who string
		pv  previewJSON
		err string
	}
	answers := make(chan answer, 8)
	preview := func(who string) {
		go func() {
			r := c.Do("GET", path, testapp.Token(t, who, ""), nil)
			var pv previewJSON
			if r.Status == 200 {
				r.JSON(t, &pv)
				answers <- answer{who: who, pv: pv}
				return
			}
			answers <- answer{who: who, err: fmt.Sprintf("%d %s", r.Status, r.Body)}
		}()
	}

	// One user: a second preview while the first runs is refused.
	preview("hasty")
	hold.wait(t, 1)
	hasty := testapp.Token(t, "hasty", "")
	// refused runs a second preview of hasty's, which must be refused at
	// once: one that ran would be held like the first.
	refused := func(what string, try func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); try() }()
		select {
		case <-done:
		case <-hold.arrived:
			hold.free()
			t.Fatalf("%s ran while the user's first preview ran", what)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not answer in 20 s", what)
		}
	}
	refused("a second API preview", func() {
		r := c.Do("GET", path, hasty, nil)
		if r.Status != 429 || r.Header.Get("Retry-After") != "2" || !strings.Contains(string(r.Body), "previews run one at a time per user") {
			t.Errorf("a second preview of the same user while the first runs: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
		}
	})
	// ... also from the settings page (the same user, signed in there).
	b, _, _ := signIn(t, a, hasty)
	refused("a settings page preview", func() {
		resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape(q), nil)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(section(page), "Not previewed: a preview of yours is still running") {
			t.Errorf("the settings page's preview while an API preview of the user runs: %d\n%s", resp.StatusCode, section(page))
		}
	})

	// Four more users' previews held in their evaluation, twice the pool.
	for i := range 4 {
		preview(fmt.Sprintf("user%d", i))
	}
	hold.wait(t, 4)
	me := make(chan *testapp.Response, 1)
	began := time.Now()
	go func() { me <- c.Do("GET", "/v1/me", testapp.Token(t, "bystander", ""), nil) }()
	select {
	case r := <-me:
		if r.Status != 200 {
			t.Errorf("GET /v1/me of another user: %d %s", r.Status, r.Body)
		}
		// A generous bound: the point is not waiting for the held previews.
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("GET /v1/me took %v while five previews were held", took)
		}
		t.Logf("another user's GET /v1/me answered in %v while 5 previews were held in their evaluation (pool of 2)", time.Since(began).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		hold.free()
		t.Fatal("GET /v1/me of another user did not answer in 15 s while previews were held: they hold the pool's connections")
	}

	hold.free()
	for range 5 {
		select {
		case ans := <-answers:
			if ans.err != "" || ans.pv.Count != 2 || !ans.pv.Complete || ans.pv.Searched != 3 || ans.pv.SearchedSince != nil {
				t.Errorf("%s's preview: %+v %s", ans.who, ans.pv, ans.err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the held previews did not answer within 20 s of their release")
		}
	}
	// The slot is free again once the preview answered.
	if r := c.Do("GET", path, hasty, nil); r.Status != 200 {
		t.Errorf("a preview after the first answered: %d %s", r.Status, r.Body)
	}
}

// TestPreviewBudget: past SEARCH_PREVIEW_BUDGET (here 1 ms) a preview
// stops after the chunk it is in (500 papers, newest first; the first is
// always searched) and answers for the papers it searched: complete false,
// searched 500, searched_since the oldest of them, the count and the
// newest matches exact for those. The settings page says the same.
func TestPreviewBudget(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "SEARCH_PREVIEW_BUDGET", "1ms")
	// 600 papers a minute apart, the newest first; every third is about
	// diffusion models.
	newest := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	var papers []string
	at := func(i int) time.Time { return newest.Add(-time.Duration(i) * time.Minute) }
	for i := range 600 {
		title := fmt.Sprintf("Graph kernels, part %d", i)
		if i%3 == 0 {
			title = fmt.Sprintf("Diffusion models, part %d", i)
		}
		papers = append(papers, pushed(fmt.Sprintf("2609.%05d", i+1), title, "We study them.", "cs.LG", at(i)))
	}
	if r := c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"), "["+strings.Join(papers, ",")+"]"); r.Status != 200 {
		t.Fatalf("push: %d %.300s", r.Status, r.Body)
	}
	reader := testapp.Token(t, "patient", "")
	var pv previewJSON
	r := c.Do("GET", "/v1/search/preview?q=diffusion", reader, nil)
	r.JSON(t, &pv)
	// The newest 500 are papers 0…499: 167 of them (0, 3, …, 498) match.
	if r.Status != 200 || pv.Complete || pv.Searched != 500 || pv.Count != 167 || pv.SearchedSince == nil || !pv.SearchedSince.Equal(at(499)) {
		t.Fatalf("a preview past its budget: %d %+v, want 167 matches of the newest 500 papers, since %s", r.Status, pv, at(499))
	}
	if len(pv.Papers) != 10 || pv.Papers[0].ArxivID != "2609.00001" || pv.Papers[9].ArxivID != "2609.00028" {
		t.Errorf("the newest matches: %+v", pv.Papers)
	}
	b, _, _ := signIn(t, a, reader)
	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?q=diffusion", nil)
	sec := section(page)
	if resp.StatusCode != 200 || !strings.Contains(sec, "<strong>167</strong> papers of the papers announced since "+at(499).Format("2 Jan 2006 15:04 MST")+" match") ||
		!strings.Contains(sec, `id="search-partial"`) || !strings.Contains(sec, "the newest 500 of the last 30 days") {
		t.Errorf("the settings page's preview past its budget: %d\n%s", resp.StatusCode, sec)
	}
}

// TestPreviewsShareTheRateLimit: the settings page's previews take from
// the user's API rate limit (RATE_LIMIT_PER_USER), the same bucket as
// every /v1 request of the user: at 0.1 a second (a burst of one), one
// API request leaves no preview on the page, and one preview on the page
// leaves no API preview; another user is not limited by them.
func TestPreviewsShareTheRateLimit(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0.1")
	pushTitled(t, c, "Diffusion models for graphs")
	page := func(who string) (int, string, string) {
		t.Helper()
		b, _, _ := signIn(t, a, testapp.Token(t, who, ""))
		resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?q=diffusion", nil)
		return resp.StatusCode, resp.Header.Get("Retry-After"), section(page)
	}
	if r := c.Do("GET", "/v1/me", testapp.Token(t, "api-first", ""), nil); r.Status != 200 {
		t.Fatalf("GET /v1/me: %d", r.Status)
	}
	if status, retry, sec := page("api-first"); status != 429 || retry == "" || !strings.Contains(sec, "faster than your rate limit") {
		t.Errorf("a page preview after the user's one API request: %d Retry-After %q\n%s", status, retry, sec)
	}
	if status, _, sec := page("page-first"); status != 200 || !strings.Contains(sec, "<strong>1</strong> paper of the last 30 days matches") {
		t.Fatalf("another user's page preview: %d\n%s", status, sec)
	}
	if r := c.Do("GET", "/v1/search/preview?q=diffusion", testapp.Token(t, "page-first", ""), nil); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Errorf("an API preview after the user's page preview: %d %s", r.Status, r.Body)
	}
}
