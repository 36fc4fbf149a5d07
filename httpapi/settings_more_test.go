package httpapi_test

import (
	"encoding/xml"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

// sessionCookieOf returns the ff_session cookie a response sets, or nil.
func sessionCookieOf(resp *http.Response) *http.Cookie {
	for _, ck := range resp.Cookies() {
		if ck.Name == "ff_session" {
			return ck
		}
	}
	return nil
}

// signIn hands tok over with POST /login (checking it lands on landing)
// and returns the signed-in client, the follows page and its CSRF token
// (the session's: every settings page carries the same).
func signIn(t *testing.T, a *testapp.App, tok string) (*http.Client, string, string) {
	t.Helper()
	b := testapp.FormClient(t)
	resp, _ := testapp.Form(t, b, "POST", a.URL+"/login", url.Values{"token": {tok}})
	if resp.StatusCode != 303 || sessionCookieOf(resp) == nil {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
	}
	if loc := resp.Header.Get("Location"); loc != landing {
		t.Fatalf("login landed on %s, not %s", loc, landing)
	}
	page, csrf := settingsPage(t, a, b, "/settings/follows")
	return b, page, csrf
}

// TestSessionCookieSecureWithHTTPSPublicURL: with an https PUBLIC_URL the
// session cookie (and the one logout uses to clear it) is Secure, HttpOnly
// and SameSite=Lax, and it is a working session.
func TestSessionCookieSecureWithHTTPSPublicURL(t *testing.T) {
	t.Parallel()
	a, c := start(t, "PUBLIC_URL", "https://follow.example.org", "RATE_LIMIT_PER_IP", "0")
	tok := testapp.Token(t, "secure-reader", "secure@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)

	resp, _ := testapp.Form(t, testapp.FormClient(t), "POST", a.URL+"/login", url.Values{"token": {tok}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != landing {
		t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := sessionCookieOf(resp)
	if ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" || ck.MaxAge <= 0 || ck.Value == "" {
		t.Fatalf("session cookie with https PUBLIC_URL: %+v (Set-Cookie %q)", ck, resp.Header.Values("Set-Cookie"))
	}

	// The cookie is a session (sent by hand: a jar keeps Secure cookies
	// off plain http).
	req, _ := http.NewRequest("GET", a.URL+"/settings/feeds", nil)
	req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	resp, err := testapp.FormClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(raw)
	if resp.StatusCode != 200 || !strings.Contains(body, "aria-current") {
		t.Fatalf("settings with the Secure cookie: %d", resp.StatusCode)
	}
	if !strings.Contains(body, "https://follow.example.org/feeds/fft_") {
		t.Error("feed links on the page do not use the https PUBLIC_URL")
	}
	m := testapp.CSRF.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the settings page")
	}

	// Logout clears it with the same attributes.
	req, _ = http.NewRequest("POST", a.URL+"/logout", strings.NewReader(url.Values{"csrf": {m[1]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	resp, err = testapp.FormClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cleared := sessionCookieOf(resp)
	if resp.StatusCode != 200 || cleared == nil || cleared.MaxAge >= 0 || !cleared.Secure || !cleared.HttpOnly {
		t.Errorf("logout with https PUBLIC_URL: %d %+v", resp.StatusCode, cleared)
	}
}

// TestLoginFormPost: POST /login with the token in the form field "token"
// signs in like the GET handoff; bad, expired and service tokens are
// refused with a page and no cookie.
func TestLoginFormPost(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "poster", "poster@example.org")
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", tok, map[string]any{"label": "Mingzhi Wen"})

	// Without a token the page is the sign-in page, with no cookie.
	resp, page := testapp.Form(t, testapp.FormClient(t), "POST", a.URL+"/login", url.Values{"token": {""}})
	if resp.StatusCode != 200 || sessionCookieOf(resp) != nil || !strings.Contains(page, "Sign in") {
		t.Errorf("POST /login without a token: %d %v", resp.StatusCode, resp.Header)
	}

	b := testapp.FormClient(t)
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/login", url.Values{"token": {tok}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != landing || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("POST /login: %d %v", resp.StatusCode, resp.Header)
	}
	ck := sessionCookieOf(resp)
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure {
		t.Fatalf("session cookie from POST /login: %+v", ck)
	}
	resp, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "Mingzhi Wen") || !testapp.CSRF.MatchString(page) {
		t.Fatalf("settings after POST /login: %d", resp.StatusCode)
	}

	refused := []struct {
		name, token string
		status      int
		says        string
	}{
		{"garbage", "garbage", 401, "not valid"},
		{"bad signature", tok[:len(tok)-4] + "AAAA", 401, "not valid"},
		{"expired", testapp.ExpiredToken(t, "poster"), 401, "expired"},
		{"service token", testapp.Token(t, "host-site", "", "papers:write"), 403, "Service tokens cannot sign in"},
	}
	for _, tc := range refused {
		for _, method := range []string{"POST", "GET"} {
			fresh := testapp.FormClient(t)
			var resp *http.Response
			var page string
			if method == "POST" {
				resp, page = testapp.Form(t, fresh, "POST", a.URL+"/login", url.Values{"token": {tc.token}})
			} else {
				resp, page = testapp.Form(t, fresh, "GET", a.URL+"/login?token="+url.QueryEscape(tc.token), nil)
			}
			if resp.StatusCode != tc.status || !strings.Contains(page, tc.says) {
				t.Errorf("%s /login with a %s token: %d, want %d saying %q\n%.400s", method, tc.name, resp.StatusCode, tc.status, tc.says, page)
			}
			if ck := sessionCookieOf(resp); ck != nil {
				t.Errorf("%s /login with a %s token set a cookie: %+v", method, tc.name, ck)
			}
			if resp, _ := testapp.Form(t, fresh, "GET", a.URL+"/settings", nil); resp.StatusCode != 303 {
				t.Errorf("%s /login with a %s token: /settings answers %d", method, tc.name, resp.StatusCode)
			}
		}
	}
}

var (
	followItemRE        = regexp.MustCompile(`(?s)<li data-follow="([^"]+)">.*?</li>`)
	checkboxRE          = regexp.MustCompile(`<input type="checkbox" name="(include_[a-z_]+)" value="1"( checked)?>`)
	opmlLinkRE          = regexp.MustCompile(`<a href="([^"]+)" download="followfeed.opml" id="opml">`)
	opmlPerFollowLinkRE = regexp.MustCompile(`<a href="([^"]+)" download="followfeed-per-follow.opml" id="opml-per-follow">`)
	previewRE           = regexp.MustCompile(`(?s)<section class="card" id="preview".*?</section>`)
)

// pageOptions reads the options checkboxes of each follow on the page.
func pageOptions(page string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, li := range followItemRE.FindAllStringSubmatch(page, -1) {
		opts := map[string]bool{}
		for _, m := range checkboxRE.FindAllStringSubmatch(li[0], -1) {
			opts[m[1]] = m[2] != ""
		}
		out[html.UnescapeString(li[1])] = opts
	}
	return out
}

func apiFollows(t *testing.T, c *testapp.Client, tok string) map[string]followJSON {
	t.Helper()
	var list struct {
		Follows []followJSON `json:"follows"`
	}
	c.Do("GET", "/v1/me/follows", tok, nil).JSON(t, &list)
	out := map[string]followJSON{}
	for _, f := range list.Follows {
		out[f.Kind+"/"+f.ID] = f
	}
	return out
}

// TestSettingsFollowOptionsForm: the options form of a follow stores its
// cross-lists / new-versions checkboxes (both ways), keeps the label, and
// the page shows the stored state.
func TestSettingsFollowOptionsForm(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "toggler", "toggler@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, map[string]any{"include_cross_lists": true, "include_replacements": false, "label": "ML"})
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", tok, map[string]any{"include_replacements": false})
	b, page, csrf := signIn(t, a, tok)

	opts := pageOptions(page)
	if cat := opts["category/cs.LG"]; len(cat) != 2 || !cat["include_cross_lists"] || cat["include_replacements"] {
		t.Fatalf("cs.LG checkboxes before: %v", cat)
	}
	if r := opts["researcher/openalex:A5023888391"]; len(r) != 1 || r["include_replacements"] {
		t.Fatalf("researcher checkboxes before (no cross-lists box for researchers): %v", r)
	}

	send := func(kind, id string, checked ...string) {
		t.Helper()
		form := url.Values{"csrf": {csrf}, "action": {"options"}, "kind": {kind}, "id": {id}}
		for _, name := range checked {
			form.Set(name, "1")
		}
		resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/follows", form)
		if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/follows?done=saved" {
			t.Fatalf("options form for %s/%s: %d %s", kind, id, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	// Uncheck cross-lists, check new versions.
	send("category", "cs.LG", "include_replacements")
	f := apiFollows(t, c, tok)["category/cs.LG"]
	if f.IncludeCrossLists || !f.IncludeReplacements || f.Label != "ML" {
		t.Errorf("cs.LG after the form: %+v", f)
	}
	if r := apiFollows(t, c, tok)["researcher/openalex:A5023888391"]; r.IncludeReplacements {
		t.Errorf("another follow changed: %+v", r)
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows?done=saved", nil)
	if cat := pageOptions(page)["category/cs.LG"]; cat["include_cross_lists"] || !cat["include_replacements"] {
		t.Errorf("the page does not show the saved options: %v", cat)
	}
	if !strings.Contains(page, "Saved.") {
		t.Error("no confirmation after saving")
	}

	// And back.
	send("category", "cs.LG", "include_cross_lists")
	f = apiFollows(t, c, tok)["category/cs.LG"]
	if !f.IncludeCrossLists || f.IncludeReplacements {
		t.Errorf("cs.LG after the second form: %+v", f)
	}
	send("researcher", "openalex:A5023888391", "include_replacements")
	if r := apiFollows(t, c, tok)["researcher/openalex:A5023888391"]; !r.IncludeReplacements {
		t.Errorf("researcher new versions not stored: %+v", r)
	}

	// Without the CSRF token nothing changes.
	form := url.Values{"action": {"options"}, "kind": {"category"}, "id": {"cs.LG"}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/follows", form); resp.StatusCode != 403 {
		t.Errorf("options without CSRF token: %d", resp.StatusCode)
	}
	if f := apiFollows(t, c, tok)["category/cs.LG"]; !f.IncludeCrossLists {
		t.Error("a rejected options form changed the follow")
	}
}

// TestSettingsOptionsOfUnfollowedTarget: the options form of something
// not followed (e.g. unfollowed in another tab) creates no follow and is a
// 4xx, never a 500.
func TestSettingsOptionsOfUnfollowedTarget(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "stale-tab", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	b, _, csrf := signIn(t, a, tok)
	form := url.Values{"csrf": {csrf}, "action": {"options"}, "kind": {"category"}, "id": {"math.AG"}, "include_cross_lists": {"1"}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/follows", form); resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("options of an unfollowed category: %d, want a 4xx", resp.StatusCode)
	}
	if _, ok := apiFollows(t, c, tok)["category/math.AG"]; ok {
		t.Error("the options form created a follow")
	}
}

// TestSettingsOPMLDownload: the page's OPML link answers text/x-opml with
// the all-follows feed and one outline per follow.
func TestSettingsOPMLDownload(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "opml-reader", "")
	follows := []string{"category/cs.LG", "researcher/openalex:A5023888391", "institution/ror:03dbr7087"}
	for _, f := range follows {
		c.Do("PUT", "/v1/me/follows/"+f, tok, nil)
	}
	b, _, _ := signIn(t, a, tok)
	page, _ := settingsPage(t, a, b, "/settings/feeds")
	m := opmlLinkRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no OPML download link on the settings page")
	}
	link := html.UnescapeString(m[1])
	if !strings.HasPrefix(link, a.URL+"/feeds/fft_") || !strings.HasSuffix(link, ".opml") {
		t.Fatalf("OPML link %q", link)
	}
	token := strings.TrimSuffix(strings.TrimPrefix(link, a.URL+"/feeds/"), ".opml")

	resp, body := get(t, link)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 200 || mt != "text/x-opml" {
		t.Fatalf("OPML download: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var opml struct {
		Version  string `xml:"version,attr"`
		Outlines []struct {
			XMLURL string `xml:"xmlUrl,attr"`
			Text   string `xml:"text,attr"`
		} `xml:"body>outline"`
	}
	if err := xml.Unmarshal(body, &opml); err != nil || opml.Version != "2.0" {
		t.Fatalf("OPML: %v %s", err, body)
	}
	// The default list holds the combined feed only; the page's second
	// link, one feed per follow and not the combined one.
	if len(opml.Outlines) != 1 || opml.Outlines[0].XMLURL != a.URL+"/feeds/"+token+".atom" {
		t.Fatalf("default OPML: %s, want the combined feed only", body)
	}
	if !strings.Contains(page, "not both") {
		t.Errorf("the settings page does not say to import only one of the lists")
	}
	m = opmlPerFollowLinkRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no per-follow OPML link on the settings page")
	}
	if resp, body = get(t, html.UnescapeString(m[1])); resp.StatusCode != 200 {
		t.Fatalf("per-follow OPML: %d", resp.StatusCode)
	}
	opml.Outlines = nil
	if err := xml.Unmarshal(body, &opml); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range follows {
		want[a.URL+"/feeds/"+token+"/"+f+".atom"] = true
	}
	got := map[string]bool{}
	for _, o := range opml.Outlines {
		if got[o.XMLURL] {
			t.Errorf("outline %s twice", o.XMLURL)
		}
		got[o.XMLURL] = true
		if !want[o.XMLURL] {
			t.Errorf("unexpected outline %q (%q)", o.XMLURL, o.Text)
		}
	}
	if len(opml.Outlines) != len(follows) || len(got) != len(want) {
		t.Errorf("per-follow OPML has %d outlines, want %d (one per follow): %s", len(opml.Outlines), len(follows), body)
	}
	for _, o := range opml.Outlines {
		if resp, _ := get(t, o.XMLURL); resp.StatusCode != 200 {
			t.Errorf("OPML outline %s: %d", o.XMLURL, resp.StatusCode)
		}
	}
}

// TestSettingsDigestPreview: the next-digest preview on the page shows a
// pushed paper matching the user's follows, not one that does not.
func TestSettingsDigestPreview(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	tok := testapp.Token(t, "previewer", "previewer@example.org")
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", tok, map[string]any{"label": "Mingzhi Wen"})
	b, _, _ := signIn(t, a, tok)
	page, _ := settingsPage(t, a, b, "/settings/email")
	if sec := previewRE.FindString(page); sec == "" || strings.Contains(sec, "Reproducible") {
		t.Fatalf("the preview shows the paper before it was pushed:\n%s", sec)
	}

	svc := testapp.Token(t, "host-site", "", "papers:write")
	body := `{"arxiv_id": "2202.02326v2", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}` + "\n" +
		`{"arxiv_id": "2301.00002", "title": "Unrelated Galaxies Survey", "authors": "Cee Dee", "categories": ["astro-ph.GA"], "primary_category": "astro-ph.GA"}` + "\n"
	r := c.Do("POST", "/v1/papers", svc, body, "Content-Type", "application/x-ndjson")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"new":2`) {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)

	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/email", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("settings: %d", resp.StatusCode)
	}
	sec := previewRE.FindString(page)
	if sec == "" {
		t.Fatal("no next-digest preview section on the settings page")
	}
	if !strings.Contains(sec, "Towards Training Reproducible Deep Learning Models") || !strings.Contains(sec, "https://arxiv.org/abs/2202.02326") {
		t.Errorf("the preview does not show the matched paper:\n%s", sec)
	}
	if !strings.Contains(sec, "Mingzhi Wen") {
		t.Errorf("the preview does not group the paper under the follow:\n%s", sec)
	}
	if strings.Contains(sec, "Galaxies") || strings.Contains(sec, "Nothing new") {
		t.Errorf("the preview shows an unmatched paper or says nothing is new:\n%s", sec)
	}

	// Digests are off: the page says these papers are not mailed, and
	// that turning digests on starts from then, the rest being in the feed.
	if !strings.Contains(sec, `id="backlog"`) || !strings.Contains(sec, "only papers matched afterwards are mailed") {
		t.Errorf("the preview while digests are off does not say what turning them on mails:\n%s", sec)
	}
	csrf := testapp.CSRF.FindStringSubmatch(page)
	if csrf == nil {
		t.Fatal("no CSRF token")
	}
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/email", url.Values{"csrf": {csrf[1]}, "email": {"previewer@example.org"},
		"timezone": {"UTC"}, "frequency": {"daily"}, "hour": {"7"}, "weekday": {"monday"}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/email?done=started" {
		t.Fatalf("turning digests on: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/email?done=started", nil)
	if !strings.Contains(page, "everything that came before is in your feed") {
		t.Errorf("after turning digests on, the page does not say where the earlier papers are")
	}
	// Nothing new to mail: said once, by the subject (the digest's), as
	// "No new papers", or, when the window holds no arXiv announcement by
	// the calendar (a Friday or Saturday evening in New York, when this
	// test may run), as the no-announcement line.
	if sec := previewRE.FindString(page); strings.Contains(sec, `id="backlog"`) ||
		strings.Count(sec, "No new papers since your last digest")+strings.Count(sec, "arXiv made no announcement since your last digest") != 1 {
		t.Errorf("after turning digests on, the preview:\n%s", sec)
	}
	// Weekdays read as people write them; the form value stays the API's.
	if !strings.Contains(page, `<option value="monday" selected>Monday</option>`) {
		t.Errorf("the weekday options are not capitalised (or Monday is not selected)")
	}

	// Best first within a budget: the preview lists what the mail would,
	// each paper saying why it ranks, and counts the rest as the mail does.
	body = `{"arxiv_id": "2301.00003", "title": "Reproducible Training Again", "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}` + "\n" +
		`{"arxiv_id": "2301.00004", "title": "Deep Learning Reproducibility Once More", "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}` + "\n"
	if r := c.Do("POST", "/v1/papers", svc, body, "Content-Type", "application/x-ndjson"); r.Status != 200 {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)
	if r := c.Do("PATCH", "/v1/me", tok, map[string]any{"digest": map[string]any{"order": "best", "max_papers": 1, "keep_followed": false}}); r.Status != 200 {
		t.Fatalf("best first: %d %s", r.Status, r.Body)
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/email", nil)
	sec = previewRE.FindString(page)
	if strings.Count(sec, "<li><a href=") != 1 || !strings.Contains(sec, `<span class="muted why">Why first: `) ||
		!strings.Contains(sec, `<p class="muted" id="preview-more">…and 1 more paper in your feed (1 from Mingzhi Wen)</p>`) {
		t.Errorf("the preview of a best-first digest of one paper:\n%s", sec)
	}
}
