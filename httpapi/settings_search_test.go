package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"followfeed/internal/testapp"
)

// TestSettingsQueryForm drives the settings page's queries section
// with plain forms (no JavaScript): a preview shows the count and the
// newest matches of the last 30 days, the same as GET /v1/search/preview;
// "Follow this query" needs the CSRF token, follows the normal form and
// says so; the section then says it is followed. Bad queries come back in
// the page as 422 with the position and what was expected.
func TestSettingsQueryForm(t *testing.T) {
	t.Log("hostile: csrf")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	reader := testapp.Token(t, "searcher", "")
	pushTitled(t, c, "Graph diffusion models", "Diffusion models for proteins", "Sparse diffusion models",
		"Diffusion models at scale", "Latent diffusion models", "Video diffusion models", "Tabular diffusion models",
		"Discrete diffusion models", "Guided diffusion models", "Masked diffusion models", "Consistency diffusion models",
		"Transformers for tables")
	b, _, csrf := signIn(t, a, reader)

	const q = `Diffusion Models -survey`
	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape(q), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("preview: %d", resp.StatusCode)
	}
	var api struct {
		Query  string
		Count  int
		Papers []struct{ Title string }
	}
	c.Do("GET", "/v1/search/preview?q="+url.QueryEscape(q), reader, nil).JSON(t, &api)
	if api.Count != 11 || len(api.Papers) != 10 {
		t.Fatalf("API preview: %+v", api)
	}
	if !strings.Contains(page, "<strong>11</strong> papers of the last 30 days match <code>diffusion models -survey</code>; the newest 10:") {
		t.Errorf("the page's count line is missing:\n%s", section(page))
	}
	for _, p := range api.Papers {
		if !strings.Contains(page, ">"+p.Title+"</a>") {
			t.Errorf("the page lacks the API's match %q", p.Title)
		}
	}
	if strings.Contains(page, "Transformers for tables") || strings.Count(page, `<li><a href="https://arxiv.org/abs/`) != 10 {
		t.Errorf("the page's list is not the newest 10 matches:\n%s", section(page))
	}
	if !strings.Contains(page, `value="Diffusion Models -survey"`) || !strings.Contains(page, `name="id" value="diffusion models -survey"`) {
		t.Errorf("the form does not keep the search or does not follow its normal form:\n%s", section(page))
	}

	// Following needs the page's CSRF token.
	form := url.Values{"action": {"follow"}, "kind": {"query"}, "id": {"diffusion models -survey"}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/follows", form); resp.StatusCode != 403 {
		t.Errorf("follow without the CSRF token: %d", resp.StatusCode)
	}
	form.Set("csrf", csrf)
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/follows", form)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/follows?done=search" {
		t.Fatalf("follow this search: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if body := string(c.Do("GET", "/v1/me/follows", reader, nil).Body); !strings.Contains(body, `"id":"diffusion models -survey"`) {
		t.Fatalf("the follow was not stored: %s", body)
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows?done=search", nil)
	if !strings.Contains(page, "You follow the query now.") || !strings.Contains(page, `data-follow="query/diffusion models -survey"`) {
		t.Errorf("after following: no flash or no follow in the list")
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape("diffusion   MODELS -Survey"), nil)
	if !strings.Contains(page, `id="search-following"`) || strings.Contains(page, `id="search-follow"`) {
		t.Errorf("a followed query (typed differently) still offers to follow:\n%s", section(page))
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape("quantum gravity"), nil)
	if !strings.Contains(page, "No paper of the last 30 days matches <code>quantum gravity</code>") || !strings.Contains(page, `id="search-follow"`) {
		t.Errorf("a search without matches:\n%s", section(page))
	}

	// Bad searches (hostile ones included) are 422 pages with the position
	// and what was expected, never a 500, and never echoed unescaped.
	for in, want := range map[string]string{
		`"diffusion model`:                     `at character 1: expected a closing "`,
		`(cat:cs.LG OR diffusion`:              `at character 1: expected a ) to close the ( here`,
		`diffusion OR`:                         `at character 13: expected a term after OR`,
		`-survey`:                              `only exclusions`,
		`the`:                                  `common words`,
		`nope:diff`:                            `unknown field "nope:"`,
		`x` + strings.Repeat(" diffusion", 40): `at character 301: a query may have at most 300 characters`,
		`<script>alert(1)</script> "`:          `expected a closing "`,
	} {
		resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape(in), nil)
		sec := section(page)
		if resp.StatusCode != 422 || !strings.Contains(sec, "This query cannot be used: ") || !strings.Contains(sec, htmlText(want)) {
			t.Errorf("%q: %d, want 422 saying %q:\n%s", in, resp.StatusCode, want, sec)
		}
		if !strings.Contains(sec, `aria-invalid="true"`) || !strings.Contains(sec, "<mark>") || strings.Contains(sec, `id="search-follow"`) {
			t.Errorf("%q: the error is not marked in the form, or a follow button shows:\n%s", in, sec)
		}
		if strings.Contains(page, "<script>alert") {
			t.Errorf("%q: the search reached the page unescaped", in)
		}
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape(`diffusion OR`), nil)
	if !strings.Contains(page, "<code>diffusion OR<mark>\u00a0</mark></code>") {
		t.Errorf("the mark is not at the end, where a term was expected:\n%s", section(page))
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows?q="+url.QueryEscape(`ti:x nope:diff`), nil)
	if !strings.Contains(page, "<code>ti:x <mark>n</mark>ope:diff</code>") {
		t.Errorf("the mark is not on the unknown prefix:\n%s", section(page))
	}
	// A forged follow of a bad search is a 422 page too, never a 500.
	form.Set("id", `"unbalanced`)
	if resp, page := testapp.Form(t, b, "POST", a.URL+"/settings/follows", form); resp.StatusCode != 422 || !strings.Contains(page, "expected a closing") {
		t.Errorf("follow of a bad search: %d", resp.StatusCode)
	}
	// Signed out, the search form is the login redirect; the manage link's
	// email-only page has no search section.
	if resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+"/settings/follows?q=diffusion", nil); resp.StatusCode != 303 {
		t.Errorf("signed out: %d", resp.StatusCode)
	}
}

// TestSettingsSearchPreviewRateLimit: previews from the page share the
// user's API rate limit; beyond it the page says so with 429.
func TestSettingsSearchPreviewRateLimit(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, _ := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "1")
	// A user cannot scan the last 30 days faster than the per-user rate
	// limit through the settings page.
	b, _, _ := signIn(t, a, testapp.Token(t, "hasty", ""))
	limited := 0
	for range 8 {
		resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?q=diffusion", nil)
		if resp.StatusCode == 429 {
			limited++
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(page, "faster than your rate limit") {
				t.Errorf("429 without Retry-After or message")
			}
		}
	}
	if limited == 0 {
		t.Error("eight previews in a row at 1 per second were never limited")
	}
}

// pushTitled pushes one cs.LG paper per title (ids 2609.00001, …),
// announced three days ago, a minute apart in the order given.
func pushTitled(t *testing.T, c *testapp.Client, titles ...string) {
	t.Helper()
	recent := time.Now().Add(-72 * time.Hour).UTC().Truncate(time.Second)
	var papers []string
	for i, title := range titles {
		papers = append(papers, pushed(fmt.Sprintf("2609.%05d", i+1), title, "We study generative models.", "cs.LG", recent.Add(time.Duration(i)*time.Minute)))
	}
	if r := c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"), "["+strings.Join(papers, ",")+"]"); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
}

// section is the settings page's search section, for messages.
func section(page string) string {
	i := strings.Index(page, `<section class="card" id="search"`)
	if i < 0 {
		return "(no search section)"
	}
	j := strings.Index(page[i:], "</section>")
	if j < 0 {
		return page[i:]
	}
	return page[i : i+j]
}

// htmlText is s as html/template escapes text.
func htmlText(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "<", "&lt;", ">", "&gt;").Replace(s)
}
