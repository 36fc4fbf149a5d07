package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"followfeed/auth"
	"followfeed/config"
	"followfeed/internal/testapp"
)

// settingsPage GETs the settings page at path (/settings/follows, …) with
// the signed-in client b and returns it and its CSRF token; anything but a
// 200 fails the test.
func settingsPage(t *testing.T, a *testapp.App, b *http.Client, path string) (string, string) {
	t.Helper()
	resp, page := testapp.Form(t, b, "GET", a.URL+path, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Location"))
	}
	m := testapp.CSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on %s", path)
	}
	return page, m[1]
}

// landing is the page a sign-in lands on: httpapi's landingPage (switch
// the two together).
const landing = "/inbox"

var ariaCurrentRE = regexp.MustCompile(`<a href="([^"]+)" aria-current="page">`)

// TestSettingsPagesAndTheirRoutes: a sign-in lands on the follows page;
// /settings (the URL mails and the host link to) redirects to it, or to
// the page its query belongs to, the query kept; each page is its own,
// marked in the one navigation, and shows its forms and not the others';
// every old form route returns to the page its form is on with the same
// message, and a rejected field renders that page again; signed out, every
// page is a 303 to /login; a mail's manage link opens the email page alone.
func TestSettingsPagesAndTheirRoutes(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "pages-routes", "routes@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	c.Do("PUT", "/v1/me/follows/category/cs.AI", tok, nil)

	// Signed out: every page sends to /login.
	out := testapp.FormClient(t)
	for _, p := range []string{"/settings", "/settings/follows", "/settings/feeds", "/settings/channels", "/settings/email", "/settings/account"} {
		if resp, _ := testapp.Form(t, out, "GET", a.URL+p, nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
			t.Errorf("signed out, %s: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	b := testapp.FormClient(t)
	resp, _ := testapp.Form(t, b, "POST", a.URL+"/login", url.Values{"token": {tok}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != landing {
		t.Fatalf("login lands on %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	for from, to := range map[string]string{
		"/settings":                landing,
		"/settings?done=saved":     landing + "?done=saved",
		"/settings?q=diffusion":    "/settings/follows?q=diffusion",
		"/settings?feedback=abc":   "/settings/account?feedback=abc",
		"/":                        "/settings",
		"/settings?done=email&x=1": landing + "?done=email&x=1",
	} {
		if resp, _ := testapp.Form(t, b, "GET", a.URL+from, nil); resp.StatusCode != 303 || resp.Header.Get("Location") != to {
			t.Errorf("GET %s: %d %s, want 303 to %s", from, resp.StatusCode, resp.Header.Get("Location"), to)
		}
	}

	// Each page: its own, marked in the navigation, with its forms only.
	pages := map[string]struct{ has, hasNot []string }{
		"/settings/follows":  {[]string{`id="follows"`, `id="search"`, `data-follow="category/cs.LG"`}, []string{`id="feeds"`, `id="email-form"`, `id="channels"`}},
		"/settings/feeds":    {[]string{`id="feed-atom"`, `id="rotate"`, `id="opml"`}, []string{`id="follows"`, `id="email-form"`}},
		"/settings/channels": {[]string{`id="channel-add"`, `name="follows_scope"`}, []string{`id="follows"`, `id="feed-atom"`}},
		"/settings/email":    {[]string{`id="email-form"`, `id="preview"`}, []string{`id="follows"`, `id="channel-add"`}},
		"/settings/account":  {[]string{`id="export"`, `id="erase-account"`, `id="feedback"`, `id="sign-out-everywhere"`}, []string{`id="email-form"`, `id="follows"`}},
	}
	csrf := ""
	for p, want := range pages {
		page, token := settingsPage(t, a, b, p)
		csrf = token
		if n := strings.Count(page, "<nav "); n != 1 {
			t.Errorf("%s has %d nav elements", p, n)
		}
		if cur := ariaCurrentRE.FindAllStringSubmatch(page, -1); len(cur) != 1 || cur[0][1] != p {
			t.Errorf("%s: aria-current on %v", p, cur)
		}
		if !strings.Contains(page, `<a href="/inbox"`) {
			t.Errorf("%s: no link to the inbox", p)
		}
		for _, s := range want.has {
			if !strings.Contains(page, s) {
				t.Errorf("%s lacks %s", p, s)
			}
		}
		for _, s := range want.hasNot {
			if strings.Contains(page, s) {
				t.Errorf("%s shows %s, another page's", p, s)
			}
		}
	}

	// The old form routes return to their form's page, same messages.
	post := func(path string, form url.Values) *http.Response {
		t.Helper()
		form.Set("csrf", csrf)
		resp, _ := testapp.Form(t, b, "POST", a.URL+path, form)
		return resp
	}
	for _, tc := range []struct {
		path string
		form url.Values
		to   string
	}{
		{"/settings/follows", url.Values{"action": {"options"}, "kind": {"category"}, "id": {"cs.LG"}}, "/settings/follows?done=saved"},
		{"/settings/feed-token", url.Values{}, "/settings/feeds?done=rotated"},
		{"/settings/email", url.Values{"frequency": {"weekly"}}, "/settings/email?done="},
		{"/settings/channels", url.Values{"type": {"slack"}, "url": {"https://hooks.slack.com/services/T0/B0/x"}, "follows_scope": {"all"}}, "/settings/channels?done=channel-added"},
	} {
		// (the email form's message depends on the address: a prefix)
		if resp := post(tc.path, tc.form); resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), tc.to) {
			t.Errorf("POST %s: %d %s, want 303 to %s", tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.to)
		}
	}
	if page, _ := settingsPage(t, a, b, "/settings/feeds?done=rotated"); !strings.Contains(page, "Your feed token was replaced") {
		t.Error("the feeds page does not show the rotation's message")
	}

	// A rejected field: the form's page again, marked, with the message.
	resp, page := testapp.Form(t, b, "POST", a.URL+"/settings/email", url.Values{"csrf": {csrf}, "hour": {"noon"}})
	if cur := ariaCurrentRE.FindStringSubmatch(page); resp.StatusCode != 422 || cur == nil || cur[1] != "/settings/email" || !strings.Contains(page, "digest.hour") {
		t.Errorf("a bad hour: %d, page %v", resp.StatusCode, cur)
	}

	// The channel's follow choice: Chosen follows with none chosen, or
	// an unknown choice, is refused, naming the field; Chosen follows
	// keeps the boxes, All follows drops them.
	var list channelList
	c.Do("GET", "/v1/me/channels", tok, nil).JSON(t, &list)
	if len(list.Channels) != 1 {
		t.Fatalf("channels: %+v", list)
	}
	ch := "/settings/channels/" + strconv.FormatInt(list.Channels[0].ID, 10)
	// (Both fields are the one control the page labels "Follows it carries".)
	for scope, field := range map[string]string{"chosen": "Follows it carries: ", "some": "Follows it carries: "} {
		resp, page := testapp.Form(t, b, "POST", a.URL+ch, url.Values{"csrf": {csrf}, "action": {"save"}, "mode": {"instant"}, "enabled": {"1"}, "follows_scope": {scope}})
		if resp.StatusCode != 422 || !strings.Contains(page, field) {
			t.Errorf("follows_scope %s with no follow: %d", scope, resp.StatusCode)
		}
	}
	save := func(scope string) {
		t.Helper()
		resp, _ := testapp.Form(t, b, "POST", a.URL+ch, url.Values{"csrf": {csrf}, "action": {"save"}, "mode": {"instant"}, "enabled": {"1"},
			"follows_scope": {scope}, "follow": {"category/cs.AI"}})
		if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/channels?done=channel-saved" {
			t.Fatalf("save %s: %d %s", scope, resp.StatusCode, resp.Header.Get("Location"))
		}
		list = channelList{}
		c.Do("GET", "/v1/me/channels", tok, nil).JSON(t, &list)
	}
	save("chosen")
	if fs := list.Channels[0].Follows; len(fs) != 1 || fs[0].ID != "cs.AI" {
		t.Errorf("Chosen follows stored %+v", fs)
	}
	page, _ = settingsPage(t, a, b, "/settings/channels")
	if !strings.Contains(page, `value="chosen" checked`) || !strings.Contains(page, "(1 of 2 chosen)") {
		t.Error("the channels page does not show Chosen follows, 1 of 2")
	}
	save("all")
	if fs := list.Channels[0].Follows; fs != nil {
		t.Errorf("All follows stored %+v", fs)
	}

	// A mail's manage link: the email page alone, no navigation; its form
	// returns to the link's page.
	db := openDB(t, a.DatabaseURL)
	var id, epoch int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = 'pages-routes'`).Scan(&id, &epoch); err != nil {
		t.Fatal(err)
	}
	manage := auth.NewLinkSigner([]byte(config.DevSecretKey)).Sign(auth.Link{Action: auth.ActionManage, UserID: id, Epoch: epoch})
	m := testapp.FormClient(t)
	for _, p := range []string{"/settings?token=", "/settings/email?token="} {
		resp, page := testapp.Form(t, m, "GET", a.URL+p+url.QueryEscape(manage), nil)
		if resp.StatusCode != 200 || !strings.Contains(page, `id="email-form"`) || strings.Contains(page, "<nav ") || strings.Contains(page, `id="follows"`) {
			t.Errorf("manage link at %s: %d", p, resp.StatusCode)
		}
	}
	if resp, _ := testapp.Form(t, m, "GET", a.URL+"/settings/follows?token="+url.QueryEscape(manage), nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("a manage link opened the follows page: %d", resp.StatusCode)
	}
}

// TestAMistypedPageAddressIsAPage: a browser's GET of an address under
// the settings pages or the inbox that is no page (mistyped, or a form's,
// which takes POST only) is an HTML page with the way back, not a problem
// document; the same miss elsewhere (the API) stays problem+json.
func TestAMistypedPageAddressIsAPage(t *testing.T) {
	t.Parallel()
	a, _ := start(t, "RATE_LIMIT_PER_IP", "0")
	for path, want := range map[string]int{"/settings/nope": 404, "/inbox/nope": 404, "/settings/pause": 405} {
		resp, page := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+path, nil)
		if resp.StatusCode != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(page, "Page not found") || !strings.Contains(page, `href="/settings"`) {
			t.Errorf("GET %s: %d %s, want %d and a page with the way back:\n%.300s", path, resp.StatusCode, resp.Header.Get("Content-Type"), want, page)
		}
	}
	resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+"/v1/nope", nil)
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("GET /v1/nope: %d %s, want the problem document", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
