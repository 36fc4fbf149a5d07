package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

// TestOversizedFormShowsItsPage: a signed-in user's settings or inbox
// form over 16 KiB — said by its Content-Length or cut off while read
// (chunked) — is a 413 page: the settings page the form lives on saying
// why (the inbox's: a page linking back), not a problem document; nothing
// is stored. Without a session it stays the 413 problem.
func TestOversizedFormShowsItsPage(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	ada := testapp.Token(t, "ada", "ada@example.org")
	b, _, csrf := signIn(t, a, ada)
	big := url.Values{"csrf": {csrf}, "what": {"words"}, "value": {strings.Repeat("dark ", 17<<10/5)}}.Encode()
	for _, tc := range []struct{ path, marker string }{
		{"/settings/mutes", `id="mutes"`},
		{"/settings/email", `name="frequency"`},
		{"/settings/channels", `id="channels"`},
		{"/inbox/state", `href="/inbox"`},
	} {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(strings.NewReader(big)) // no length: sent chunked
			}
			req, _ := http.NewRequest("POST", a.URL+tc.path, body)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
				!strings.Contains(string(page), "Not saved — the form is larger than 16 KiB") || !strings.Contains(string(page), tc.marker) {
				t.Errorf("%s over 16 KiB (chunked %v): %d %s\n%.400s", tc.path, chunked, resp.StatusCode, resp.Header.Get("Content-Type"), page)
			}
		}
	}
	var list struct{ Mutes []muteOut }
	if c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list); len(list.Mutes) != 0 {
		t.Errorf("an oversized form stored %+v", list.Mutes)
	}
	r := c.Do("POST", "/settings/mutes", "", big, "Content-Type", "application/x-www-form-urlencoded")
	if r.Status != 413 || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("without a session: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
}

// TestNotFromAtTheMuteLimitShowsThePage: the "less like this" page's
// "Not from <author>" button, pressed by a user who has the most mutes
// one may, and with an id not the paper's, shows the link's page again
// saying why it was not muted (422), not a problem document.
func TestNotFromAtTheMuteLimitShowsThePage(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	reader := testapp.Token(t, "reader", "reader@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	pushPaper(t, c, authoredLine("2612.00101", "A paper I like less", "openalex:A77"))
	matchIdle(t, a, db)
	less := feedbackPath(t, a, db, "reader", "2612.00101", "less")
	form := func(body string) *testapp.Response {
		return c.Do("POST", less, "", body, "Content-Type", "application/x-www-form-urlencoded")
	}
	if r := form("action=mute&researcher=openalex:A1"); r.Status != 422 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.Body), "Not muted — must be the id of one of the paper") || !strings.Contains(string(r.Body), "Not from Ann Author") {
		t.Errorf("an id not the paper's: %d %s\n%.400s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	for i := range 100 {
		if r := c.Do("POST", "/v1/me/mutes", reader, map[string]any{"query": fmt.Sprintf("ti:word%d", i)}); r.Status != 201 {
			t.Fatalf("mute %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := form("action=mute&researcher=openalex:A77")
	if r.Status != 422 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.Body), "Not muted — you already have 100 mutes") || !strings.Contains(string(r.Body), "A paper I like less") {
		t.Errorf("Not from at the limit: %d %s\n%.600s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var list struct{ Mutes []muteOut }
	if c.Do("GET", "/v1/me/mutes", reader, nil).JSON(t, &list); len(list.Mutes) != 100 {
		t.Errorf("%d mutes after the refused one", len(list.Mutes))
	}
}

// TestOriginNullSessionFormsAreRefused: every form a session posts —
// settings, inbox, erase, sign-out — with its valid CSRF token but
// Origin: null (a sandboxed frame, a data: or file: page, a cross-site
// redirect) is a 403 page saying why, as the sign-in form refuses it,
// and changes nothing; Origin: null with Sec-Fetch-Site: same-origin (our
// own no-referrer pages, as the one-time secret page) is accepted.
//
// A form from another site's origin is refused too, its page saying so.
func TestOriginNullSessionFormsAreRefused(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	ada := testapp.Token(t, "ada", "ada@example.org")
	b, _, csrf := signIn(t, a, ada)
	post := func(path string, form url.Values, headers ...string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", a.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		page, _ := io.ReadAll(resp.Body)
		return resp, string(page)
	}
	mute := url.Values{"csrf": {csrf}, "what": {"words"}, "value": {"ti:cats"}}
	for _, path := range []string{
		"/settings/follows", "/settings/feed-token", "/settings/email", "/settings/channels", "/settings/channels/1",
		"/settings/not-this-person", "/settings/feedback", "/settings/pause", "/settings/remember-opened",
		"/settings/mutes", "/settings/mutes/1", "/settings/erase", "/inbox/state", "/inbox/read", "/inbox/feedback", "/logout",
	} {
		for _, h := range [][]string{{"Origin", "null"}, {"Origin", "null", "Sec-Fetch-Site", "cross-site"}} {
			resp, page := post(path, mute, h...)
			if resp.StatusCode != 403 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(page, "without an origin") {
				t.Errorf("POST %s with %v: %d\n%.300s", path, h, resp.StatusCode, page)
			}
		}
		// Another site's origin, with a good token: refused, saying so
		// (reloading, as the expired form's page advises, would not help).
		if resp, page := post(path, mute, "Origin", "https://evil.example"); resp.StatusCode != 403 || !strings.Contains(page, "sent from another site") {
			t.Errorf("POST %s from another site: %d\n%.300s", path, resp.StatusCode, page)
		}
	}
	var list struct{ Mutes []muteOut }
	if c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list); len(list.Mutes) != 0 {
		t.Errorf("a refused form stored %+v", list.Mutes)
	}
	if resp, _ := testapp.Form(t, b, "GET", a.URL+"/settings/follows", nil); resp.StatusCode != 200 {
		t.Errorf("the session did not survive the refused sign-out and erase: %d", resp.StatusCode)
	}
	if resp, _ := post("/settings/mutes", mute, "Origin", "null", "Sec-Fetch-Site", "same-origin"); resp.StatusCode != 303 {
		t.Errorf("Origin: null from our own page (Sec-Fetch-Site: same-origin): %d", resp.StatusCode)
	}
	if c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list); len(list.Mutes) != 1 {
		t.Errorf("the same-origin form stored %+v", list.Mutes)
	}
}
