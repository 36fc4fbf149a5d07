package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

func TestSettingsLoginSessionAndCSRF(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "settler", "settler@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	b := testapp.FormClient(t)

	resp, _ := testapp.Form(t, b, "GET", a.URL+"/settings", nil)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Fatalf("signed out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/login", url.Values{"token": {tok}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != landing || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "ff_session" {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Secure {
		t.Fatalf("session cookie %+v (http PUBLIC_URL: not Secure)", cookie)
	}
	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "cs.LG — Machine Learning") {
		t.Fatalf("settings page: %d", resp.StatusCode)
	}
	if feeds, _ := settingsPage(t, a, b, "/settings/feeds"); !strings.Contains(feeds, "/feeds/fft_") {
		t.Error("no feed URL on the feeds page")
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("security headers: %v", resp.Header)
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "style=") {
		t.Error("inline script or style on the settings page")
	}
	csrf := testapp.CSRF.FindStringSubmatch(page)[1]

	// Without the CSRF token (or from another origin) nothing happens.
	form := url.Values{"action": {"unfollow"}, "kind": {"category"}, "id": {"cs.LG"}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/follows", form); resp.StatusCode != 403 {
		t.Errorf("POST without CSRF token: %d", resp.StatusCode)
	}
	form.Set("csrf", csrf)
	req, _ := http.NewRequest("POST", a.URL+"/settings/follows", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := b.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("cross-origin POST: %v %v", err, resp)
	}
	r := c.Do("GET", "/v1/me/follows", tok, nil)
	if !strings.Contains(string(r.Body), "cs.LG") {
		t.Fatal("a rejected form changed the follows")
	}
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/follows", form)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/follows?done=unfollowed" {
		t.Fatalf("unfollow form: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	r = c.Do("GET", "/v1/me/follows", tok, nil)
	if strings.Contains(string(r.Body), "cs.LG") {
		t.Fatal("unfollow form did not unfollow")
	}
	// Invalid input re-renders the form with a message, never a 500.
	bad := url.Values{"csrf": {csrf}, "email": {"settler@example.org"}, "timezone": {"Mars/Base"}, "frequency": {"daily"}, "hour": {"7"}, "weekday": {"monday"}}
	resp, page = testapp.Form(t, b, "POST", a.URL+"/settings/email", bad)
	if resp.StatusCode != 422 || !strings.Contains(page, "timezone") {
		t.Errorf("bad time zone: %d", resp.StatusCode)
	}
	// Sign out clears the cookie.
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/logout", url.Values{"csrf": {csrf}})
	if resp.StatusCode != 200 {
		t.Errorf("logout: %d", resp.StatusCode)
	}
	if resp, _ := testapp.Form(t, b, "GET", a.URL+"/settings", nil); resp.StatusCode != 303 {
		t.Errorf("settings after logout: %d", resp.StatusCode)
	}
	// A bad sign-in token is a page saying so, with 401.
	if resp, page := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+"/login?token=garbage", nil); resp.StatusCode != 401 || !strings.Contains(page, "not valid") {
		t.Errorf("bad login token: %d", resp.StatusCode)
	}
}

func TestEmbedScriptAndDemo(t *testing.T) {
	t.Parallel()
	a, _ := start(t, "CORS_ORIGINS", "https://papers.example.org")
	resp, page := get(t, a.URL+"/embed/demo")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'self' https://papers.example.org") {
		t.Fatalf("demo: %d %v", resp.StatusCode, resp.Header)
	}
	m := regexp.MustCompile(`src="(/embed/follow-button\.[0-9a-f]+\.js)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("the demo does not load a versioned script:\n%s", page)
	}
	// Asked as a browser asks: the script is served as it is, never
	// compressed, so its budget is the response body's bytes on the wire.
	resp, js := get(t, a.URL+string(m[1]), "Accept-Encoding", "gzip, deflate, br, zstd")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") ||
		resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("versioned script: %d %v", resp.StatusCode, resp.Header)
	}
	if len(js) >= 10_000 { // the Follow button's budget, as served (uncompressed)
		t.Errorf("the Follow button is %d bytes as served; its budget is under 10,000", len(js))
	}
	resp, _ = get(t, a.URL+"/embed/follow-button.js")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=300") {
		t.Errorf("unversioned script: %d %v", resp.StatusCode, resp.Header)
	}
	// Unknown scripts and assets are 404 problems, as every error the
	// service decides (they were net/http's plain text).
	for _, path := range []string{"/embed/follow-button.0000.js", "/embed/nope.js", "/static/nope.css"} {
		if resp, body := get(t, a.URL+path); resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(string(body), `"status":404`) {
			t.Errorf("GET %s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}
