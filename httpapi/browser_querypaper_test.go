package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
)

// following asks the API whether tok's user follows kind/id (id as a
// host would put it in the button's target).
func following(t *testing.T, c *testapp.Client, tok, kind, id string) bool {
	t.Helper()
	var st struct {
		Following *bool `json:"following"`
	}
	r := c.Do("GET", "/v1/follows/"+kind+"/"+url.PathEscape(id), tok, nil)
	r.JSON(t, &st)
	if r.Status != 200 || st.Following == nil {
		t.Fatalf("follow status of %s %q: %d %s", kind, id, r.Status, r.Body)
	}
	return *st.Following
}

// buttonLabel is the accessible name of the button inside sel.
func buttonLabel(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	l, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`document.querySelector(%q).shadowRoot.querySelector('button').getAttribute('aria-label')`, sel)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestFollowButtonPaperAndQueryOnTheDemoPage drives the demo page's
// "Follow this paper" and "Alert me" buttons in Chromium against the real
// API: click → the pressed state with the count up by one (a query's
// count, below five followers, is not public: its button shows none) and
// the follow stored; a reload still shows it; click again → unfollowed. A search full
// of characters URLs care about (quotes, parentheses, ?, #, %, &, /, +,
// non-ASCII), set as the query button's target, is followed and unfollowed
// under its own normal form.
func TestFollowButtonPaperAndQueryOnTheDemoPage(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	const paperID, search = "2202.02326", `"reproducible deep learning" cat:cs.LG`
	// Someone else follows each already, so the counts start at 1.
	early := testapp.Token(t, "early-bird", "")
	c.Do("PUT", "/v1/me/follows/paper/"+paperID, early, nil)
	c.Do("PUT", "/v1/me/follows/query/"+url.PathEscape(search), early, nil)
	demo := testapp.Token(t, "demo-user", "")
	paperSel, querySel := `followfeed-button[kind="paper"]`, `followfeed-button[kind="query"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/embed/demo"), chromedp.WaitVisible(querySel)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ sel, off, label string }{
		{paperSel, "Follow this paper · 1", "Follow the paper Towards Training Reproducible Deep Learning Models (1 follower)"},
		{querySel, "Alert me", "Alert me of new papers matching " + search},
	} {
		if text, pressed := waitButton(t, ctx, s.sel, s.off); text != s.off || pressed != "false" {
			t.Fatalf("%s before: %q pressed=%q", s.sel, text, pressed)
		}
		if l := buttonLabel(t, ctx, s.sel); l != s.label {
			t.Errorf("%s: accessible name %q, want %q", s.sel, l, s.label)
		}
	}
	b.ElementScreenshot(ctx, t, "demo-paper-button-off", paperSel)
	b.ElementScreenshot(ctx, t, "demo-query-button-off", querySel)

	for _, s := range []struct{ sel, on, kind, id string }{
		{paperSel, "Following this paper · 2", "paper", paperID},
		{querySel, "Alert on", "query", search},
	} {
		if err := clickButton(ctx, s.sel); err != nil {
			t.Fatal(err)
		}
		if text, pressed := waitButton(t, ctx, s.sel, s.on); text != s.on || pressed != "true" {
			t.Fatalf("%s after the click: %q pressed=%q", s.sel, text, pressed)
		}
		waitFor(t, "the "+s.kind+" follow in the database", func() bool { return following(t, c, demo, s.kind, s.id) })
	}
	var list struct{ Follows []struct{ Kind, ID string } }
	c.Do("GET", "/v1/me/follows", demo, nil).JSON(t, &list)
	if len(list.Follows) != 2 || list.Follows[0].ID != search || list.Follows[1].ID != paperID {
		t.Errorf("the demo user's follows: %+v", list.Follows)
	}
	b.ElementScreenshot(ctx, t, "demo-paper-button-on", paperSel)
	b.ElementScreenshot(ctx, t, "demo-query-button-on", querySel)
	b.Screenshot(ctx, t, "demo-page-paper-and-query")

	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(querySel)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ sel, on, off string }{
		{paperSel, "Following this paper · 2", "Follow this paper · 1"},
		{querySel, "Alert on", "Alert me"},
	} {
		if text, pressed := waitButton(t, ctx, s.sel, s.on); text != s.on || pressed != "true" {
			t.Fatalf("%s after reload: %q pressed=%q", s.sel, text, pressed)
		}
		if err := clickButton(ctx, s.sel); err != nil {
			t.Fatal(err)
		}
		if text, pressed := waitButton(t, ctx, s.sel, s.off); text != s.off || pressed != "false" {
			t.Fatalf("%s after unfollow: %q pressed=%q", s.sel, text, pressed)
		}
	}
	waitFor(t, "both unfollows in the database", func() bool {
		return !following(t, c, demo, "paper", paperID) && !following(t, c, demo, "query", search)
	})

	// A search with every character a URL treats specially.
	const hostile = `"reproducible deep learning" (cat:cs.LG OR cat:cs.SE) -survey? C#/C++ 100% & Müller`
	var pv struct{ Query string }
	c.Do("GET", "/v1/search/preview?q="+url.QueryEscape(hostile), demo, nil).JSON(t, &pv)
	if pv.Query == "" {
		t.Fatal("the hostile search does not parse")
	}
	js, _ := json.Marshal(hostile)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).setAttribute('target', %s)`, querySel, js))); err != nil {
		t.Fatal(err)
	}
	waitButton(t, ctx, querySel, "Alert me")
	if err := clickButton(ctx, querySel); err != nil {
		t.Fatal(err)
	}
	waitButton(t, ctx, querySel, "Alert on")
	waitFor(t, "the hostile search's follow", func() bool { return following(t, c, demo, "query", hostile) })
	c.Do("GET", "/v1/me/follows", demo, nil).JSON(t, &list)
	if len(list.Follows) != 1 || list.Follows[0].Kind != "query" || list.Follows[0].ID != pv.Query {
		t.Errorf("the followed query %+v, want its normal form %q", list.Follows, pv.Query)
	}
	if err := clickButton(ctx, querySel); err != nil {
		t.Fatal(err)
	}
	waitButton(t, ctx, querySel, "Alert me")
	waitFor(t, "the hostile search's unfollow", func() bool { return !following(t, c, demo, "query", hostile) })

	// A search the service cannot use: the button says why, under it.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).setAttribute('target', '"diffusion')`, querySel))); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ctx, querySel, `the query cannot be used: at character 1: expected a closing " for the phrase that starts here`)
	b.ElementScreenshot(ctx, t, "demo-query-button-bad-search", querySel)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestSettingsQueryInABrowser: on the settings page a user types a
// search and previews it (the count and newest matches, as the JSON
// preview says), follows it with "Follow this query" (the follow list and
// soon the feed have it), and a bad search comes back in the page saying at
// which character and what was expected, the character marked.
func TestSettingsQueryInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "search-reader", "")
	pushTitled(t, c, "Graph Diffusion Models", "Self-Supervised Diffusion Models for Proteins", "A Survey of Diffusion Models",
		"Latent Diffusion Models at Scale", "Transformers for Tables")
	browserSignIn(ctx, t, a, tok, "/settings/follows", `#search-q`)

	const search = `"diffusion models" -survey`
	if err := chromedp.Do(ctx, chromedp.SendKeys(`#search-q`, search)); err != nil {
		t.Fatal(err)
	}
	if err := submitTo(ctx, `#search-preview`, `#search-result`); err != nil {
		t.Fatal(err)
	}
	var pv struct {
		Query  string
		Count  int
		Papers []struct{ Title string }
	}
	c.Do("GET", "/v1/search/preview?q="+url.QueryEscape(search), tok, nil).JSON(t, &pv)
	if pv.Count != 3 {
		t.Fatalf("the API preview: %+v", pv)
	}
	count, _ := chromedp.Run(ctx, chromedp.Text(`#search-count`))
	if want := fmt.Sprintf("%d papers of the last 30 days match %s:", pv.Count, pv.Query); count != want {
		t.Errorf("the page says %q, want %q", count, want)
	}
	titles, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('ol.search-papers li a')].map(a => a.textContent)`))
	if len(titles) != len(pv.Papers) {
		t.Fatalf("the page lists %v, the API %+v", titles, pv.Papers)
	}
	for i, p := range pv.Papers {
		if titles[i] != p.Title {
			t.Errorf("match %d: the page %q, the API %q", i, titles[i], p.Title)
		}
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(`#search-q`)); v != search {
		t.Errorf("the search box holds %q after the preview", v)
	}
	b.Screenshot(ctx, t, "settings-search-preview")
	b.ElementScreenshot(ctx, t, "settings-search-preview-section", `#search`)

	if err := submit(ctx, `#search-follow button`); err != nil {
		t.Fatal(err)
	}
	if flash, _ := chromedp.Run(ctx, chromedp.Text(`p.flash`)); !strings.HasPrefix(flash, "You follow the query now.") {
		t.Errorf("flash after following: %q", flash)
	}
	if names, _ := chromedp.Run(ctx, chromedp.Text(`li[data-follow^="query/"] .follow-name`)); names != "Query: "+pv.Query {
		t.Errorf("the follow list shows %q", names)
	}
	if !following(t, c, tok, "query", search) {
		t.Fatal("the follow was not stored")
	}
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &links)
	waitFor(t, "the search's backfilled matches in the feed", func() bool {
		_, body := get(t, links.JSON)
		var doc jsonFeedDoc
		return json.Unmarshal(body, &doc) == nil && len(doc.Items) == pv.Count
	})
	b.ElementScreenshot(ctx, t, "settings-search-followed", `main`)

	const bad = `"diffusion models" (cat:cs.LG OR cat:cs.CV`
	if err := chromedp.Do(ctx, chromedp.SetValue(`#search-q`, bad)); err != nil {
		t.Fatal(err)
	}
	if err := submitTo(ctx, `#search-preview`, `#search-error`); err != nil {
		t.Fatal(err)
	}
	msg, _ := chromedp.Run(ctx, chromedp.Text(`#search-error p.error`))
	if want := "This query cannot be used: at character 20: expected a ) to close the ( here"; msg != want {
		t.Errorf("the error says %q, want %q", msg, want)
	}
	marked, _ := chromedp.Run(ctx, chromedp.Text(`#search-error mark`))
	invalid, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('search-q').getAttribute('aria-invalid')`))
	if marked != "(" || invalid != "true" {
		t.Errorf("marked %q, aria-invalid %q", marked, invalid)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(`#search-q`)); v != bad {
		t.Errorf("the search box holds %q after the error", v)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#search-follow').length`)); n != 0 {
		t.Error("a bad search offers to follow it")
	}
	b.ElementScreenshot(ctx, t, "settings-search-error", `#search`)
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
