package httpapi_test

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

var openLinkRE = regexp.MustCompile(`https?://[^\s"<>]+/open/[A-Za-z0-9_.\-]+`)

// mailTo returns the text of every mail in the app's MAIL_DIR sent to
// address.
func mailTo(t *testing.T, a *testapp.App, address string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a.Env["MAIL_DIR"], "*.eml"))
	var out strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("To: "+address)) || bytes.Contains(b, []byte("<"+address+">")) {
			out.Write(b)
		}
	}
	return out.String()
}

// TestRememberWhatIOpened: with "remember what I opened" on (the API),
// a digest's papers carry an "Open" (and mark read) link that marks the
// paper read and redirects to arXiv (303); a user who left it off gets
// no such link; once turned off a link records nothing; an altered link
// is a 404.
func TestRememberWhatIOpened(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	toks := map[string]string{}
	for _, sub := range []string{"opener", "plain"} {
		tok := testapp.Token(t, sub, sub+"@example.org")
		toks[sub] = tok
		c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
		if r := c.Do("PATCH", "/v1/me", tok, map[string]any{"digest": map[string]any{"frequency": "daily"}}); r.Status != 200 {
			t.Fatalf("%s: digests on: %d %s", sub, r.Status, r.Body)
		}
	}
	// After the digests were turned on: their first window starts then.
	pushPaper(t, c, paperLine("2611.00501", "Sparse attention", "cs.LG"))
	opener := toks["opener"]
	if r := c.Do("GET", "/v1/me/remember-opened", opener, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"remember_opened":false`) {
		t.Fatalf("off by default: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/remember-opened", opener, `{"remember_opened": true}`); r.Status != 200 {
		t.Fatalf("turning it on: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/remember-opened", opener, `{"remember_opened": "yes"}`); r.Status != 422 {
		t.Errorf("a bad value: %d %s", r.Status, r.Body)
	}
	for _, sub := range []string{"opener", "plain"} {
		var out bytes.Buffer
		if err := testapp.RunCommand(t, a.Env, &out, "digest", "--user", sub, "--now"); err != nil || !strings.Contains(out.String(), "sent") {
			t.Fatalf("%s: digest --now: %v\n%s", sub, err, out.String())
		}

	}
	if m := mailTo(t, a, "plain@example.org"); m == "" || openLinkRE.MatchString(m) {
		t.Fatalf("the digest of a user who left it off: %d bytes, open link %v", len(m), openLinkRE.MatchString(m))
	}
	m := mailTo(t, a, "opener@example.org")
	link := openLinkRE.FindString(m)
	if link == "" || !strings.Contains(m, "Open, mark read: ") {
		t.Fatalf("the opener's digest has no open link:\n%s", m)
	}
	path := link[strings.Index(link, "/open/"):] // the mail's links are PUBLIC_URL's
	// A HEAD (a link checker's, a mail scanner's) is answered as the GET
	// and records nothing: it is not the reader opening the paper.
	head, _ := http.NewRequest("HEAD", a.URL+path, nil)
	if resp, err := http.DefaultTransport.RoundTrip(head); err != nil || resp.StatusCode != 303 {
		t.Fatalf("HEAD of the open link: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	var p inboxPage
	if c.Do("GET", "/v1/me/papers?state=read", opener, nil).JSON(t, &p); len(p.Papers) != 0 {
		t.Fatalf("a HEAD of the open link marked %v read", p.ids())
	}
	resp, _ := get(t, a.URL+path)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "https://arxiv.org/abs/2611.00501" {
		t.Fatalf("the open link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	c.Do("GET", "/v1/me/papers?state=read", opener, nil).JSON(t, &p)
	if len(p.Papers) != 1 || p.Papers[0].ArxivID != "2611.00501" {
		t.Errorf("read papers after the open link: %v", p.ids())
	}
	// Off: the link still leads to the paper and records nothing.
	c.Do("PUT", "/v1/me/papers/2611.00501/state", opener, `{"state": "unread"}`)
	c.Do("PUT", "/v1/me/remember-opened", opener, `{"remember_opened": false}`)
	if resp, _ := get(t, a.URL+path); resp.StatusCode != 303 {
		t.Errorf("the open link with it off: %d", resp.StatusCode)
	}
	c.Do("GET", "/v1/me/papers?state=read", opener, nil).JSON(t, &p)
	if len(p.Papers) != 0 {
		t.Errorf("with it off the link recorded %v", p.ids())
	}
	if resp, _ := get(t, a.URL+path[:len(path)-2]+"xx"); resp.StatusCode != 404 {
		t.Errorf("an altered link: %d", resp.StatusCode)
	}
}

// TestRememberOpenedOnTheSettingsPage: the settings page explains the
// choice and shows it off; its form needs the CSRF token and turns it on
// and off, as the API shows.
func TestRememberOpenedOnTheSettingsPage(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "chooser", "chooser@example.org")
	b, _, csrf := signIn(t, a, tok)
	state := func() string {
		t.Helper()
		return string(c.Do("GET", "/v1/me/remember-opened", tok, nil).Body)
	}
	_, page := testapp.Form(t, b, "GET", a.URL+"/settings/account", nil)
	if !strings.Contains(page, `id="remember-opened"`) || !strings.Contains(page, "Off unless you turn it on") || strings.Contains(page, `id="remember-opened-on" checked`) {
		t.Fatalf("the settings page's section is missing or not off")
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/remember-opened", url.Values{"on": {"1"}}); resp.StatusCode != 403 || !strings.Contains(state(), "false") {
		t.Errorf("without the CSRF token: %d, %s", resp.StatusCode, state())
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/remember-opened", url.Values{"csrf": {csrf}, "on": {"1"}}); resp.StatusCode != 303 || !strings.Contains(state(), "true") {
		t.Errorf("turning it on: %d, %s", resp.StatusCode, state())
	}
	if _, page := testapp.Form(t, b, "GET", a.URL+"/settings/account", nil); !strings.Contains(page, `id="remember-opened-on" checked`) {
		t.Errorf("the settings page does not show it on")
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/remember-opened", url.Values{"csrf": {csrf}}); resp.StatusCode != 303 || !strings.Contains(state(), "false") {
		t.Errorf("turning it off: %d, %s", resp.StatusCode, state())
	}
}
