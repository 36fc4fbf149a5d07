package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testwait"
)

// buttonJS is the element under test, read on every request so that the test
// always serves the file on disk.
const buttonJS = "../../web/static/follow-button.js"

// csp is the policy of every response of the test server: no inline script or
// style anywhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'"

const (
	goodToken   = "good-token"
	researcher  = "openalex:A5023888391"
	othersCount = 12 // followers other than the test user
)

// fakeAPI is an in-memory followfeed with the three endpoints the button uses.
type fakeAPI struct {
	mu        sync.Mutex
	following map[string]bool // "kind/id" followed by the user of goodToken
	putStatus int             // when not 0, PUT answers this status with a problem
	gate      chan struct{}   // when not nil, API requests wait for it
	requests  []string        // "METHOD path auth"
}

func newFakeAPI() *fakeAPI { return &fakeAPI{following: map[string]bool{}} }

func (a *fakeAPI) log(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, fmt.Sprintf("%s %s %s", r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization")))
}

func (a *fakeAPI) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

func (a *fakeAPI) isFollowing(kind, id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.following[kind+"/"+id]
}

func (a *fakeAPI) failPut(status int) {
	a.mu.Lock()
	a.putStatus = status
	a.mu.Unlock()
}

func (a *fakeAPI) setGate(ch chan struct{}) {
	a.mu.Lock()
	a.gate = ch
	a.mu.Unlock()
}

// user reports whether the request is signed in; ok is false (and a 401 is
// written) for a bearer token that is not goodToken, or for none when
// required.
func (a *fakeAPI) user(w http.ResponseWriter, r *http.Request, required bool) (signedIn, ok bool) {
	h := r.Header.Get("Authorization")
	switch {
	case h == "Bearer "+goodToken:
		return true, true
	case h == "" && !required:
		return false, true
	default:
		writeProblem(w, http.StatusUnauthorized, "Unauthorized", "The token is not valid.")
		return false, false
	}
}

func writeProblem(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail})
}

// wait holds the request while a gate is set.
func (a *fakeAPI) wait(r *http.Request) bool {
	a.mu.Lock()
	gate := a.gate
	a.mu.Unlock()
	if gate == nil {
		return true
	}
	select {
	case <-gate:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (a *fakeAPI) status(w http.ResponseWriter, r *http.Request) {
	a.log(r)
	if !a.wait(r) {
		return
	}
	signedIn, ok := a.user(w, r, false)
	if !ok {
		return
	}
	kind, id := r.PathValue("kind"), r.PathValue("id")
	a.mu.Lock()
	following := a.following[kind+"/"+id]
	a.mu.Unlock()
	n := othersCount
	if following {
		n++
	}
	body := map[string]any{"kind": kind, "id": id, "name": "Mingzhi Wen", "followers": n}
	if signedIn {
		body["following"] = following
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "private, max-age=60") // the button must not trust caches
	json.NewEncoder(w).Encode(body)
}

func (a *fakeAPI) change(follow bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.log(r)
		if _, ok := a.user(w, r, true); !ok {
			return
		}
		if !a.wait(r) {
			return
		}
		a.mu.Lock()
		putStatus := a.putStatus
		a.mu.Unlock()
		if follow && putStatus != 0 {
			writeProblem(w, putStatus, http.StatusText(putStatus), "Following is paused for maintenance; try again in a minute.")
			return
		}
		a.mu.Lock()
		a.following[r.PathValue("kind")+"/"+r.PathValue("id")] = follow
		a.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mingzhi Wen</title>
<link rel="stylesheet" href="/page.css">
{{if .Token}}<script src="/token.js"></script>{{end}}
<script src="/follow-button.js" defer></script>
</head><body><main>
<h1>Mingzhi Wen</h1>
<p>Researcher page.</p>
<followfeed-button kind="researcher" target="{{.Target}}" label="Mingzhi Wen"
 {{- if .Token}} token-provider="hostAuth.token"{{end}}
 {{- if .Signin}} signin-url="/signin"{{end}}></followfeed-button>
</main></body></html>
`))

// pageCSS styles the host page (a file, as the CSP wants).
const pageCSS = `body{font:16px/1.5 system-ui,sans-serif;margin:2rem;background:#fff;color:#1f1f1f}
@media (prefers-color-scheme:dark){body{background:#121212;color:#e8eaed}}`

// tokenJS is the host's token hook, a separate file because the CSP forbids
// inline scripts. A dotted name exercises the token-provider lookup.
const tokenJS = `window.hostAuth = { token() { return Promise.resolve("` + goodToken + `"); } };`

// newServer serves the button, the test pages and the fake API.
func newServer(t *testing.T, api *fakeAPI) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /follow-button.js", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(buttonJS)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write(b)
	})
	mux.HandleFunc("GET /token.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write([]byte(tokenJS))
	})
	mux.HandleFunc("GET /page.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write([]byte(pageCSS))
	})
	mux.HandleFunc("GET /page/{mode}", func(w http.ResponseWriter, r *http.Request) {
		mode := r.PathValue("mode")
		data := struct {
			Target        string
			Token, Signin bool
		}{researcher, mode == "in", mode != "out-nosignin"}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page.Execute(w, data)
	})
	mux.HandleFunc("GET /signin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body><h1>Sign in</h1></body></html>`)
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /v1/follows/{kind}/{id}", api.status)
	mux.HandleFunc("PUT /v1/me/follows/{kind}/{id}", api.change(true))
	mux.HandleFunc("DELETE /v1/me/follows/{kind}/{id}", api.change(false))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// button selects the <button> inside the element's shadow root.
const button = chromedp.JSPath(`document.querySelector('followfeed-button').shadowRoot.querySelector('button')`)

// state is what the test reads from the element.
type state struct {
	Defined   bool   `json:"defined"`
	Text      string `json:"text"`
	Pressed   string `json:"pressed"`
	Label     string `json:"label"`
	Disabled  bool   `json:"disabled"`
	Busy      string `json:"busy"`
	Status    string `json:"status"`
	StatusSet bool   `json:"statusRole"`
	Live      string `json:"live"`
	Events    int    `json:"events"`
	Location  string `json:"location"`
}

const readState = `(() => {
  const el = document.querySelector('followfeed-button');
  const root = el && el.shadowRoot;
  const b = root && root.querySelector('button');
  const s = root && root.querySelector('[part=status]');
  if (!b || !s) return {defined: false, location: location.href};
  return {
    defined: !!customElements.get('followfeed-button'),
    text: b.textContent, pressed: b.getAttribute('aria-pressed') || '',
    label: b.getAttribute('aria-label') || '', disabled: b.disabled,
    busy: b.getAttribute('aria-busy') || '', status: s.textContent,
    statusRole: s.getAttribute('role') === 'status', live: s.getAttribute('aria-live') || '',
    events: (window.__ffEvents || []).length, location: location.href,
  };
})()`

func read(ctx context.Context, t *testing.T) state {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[state](readState))
	if err != nil {
		t.Fatalf("reading the button: %v", err)
	}
	return s
}

// waitState polls until ok holds, or fails the test after 10 s.
func waitState(ctx context.Context, t *testing.T, what string, ok func(state) bool) state {
	t.Helper()
	var s state
	if !testwait.Until(10*time.Second, func() bool { s = read(ctx, t); return ok(s) }) {
		t.Fatalf("waiting for %s; the button is %+v", what, s)
	}
	return s
}

// loaded waits until the element has read its state from the API.
func loaded(ctx context.Context, t *testing.T) state {
	t.Helper()
	return waitState(ctx, t, "the button to load", func(s state) bool {
		return s.Defined && !s.Disabled && s.Busy == ""
	})
}

// open navigates, records followfeed:change events, and waits for the button.
func open(ctx context.Context, t *testing.T, u string) state {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
	// DevTools evaluation is not subject to the page's CSP.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.__ffEvents = [];
document.addEventListener('followfeed:change', e => window.__ffEvents.push(e.detail));`))
	if err != nil {
		t.Fatal(err)
	}
	return loaded(ctx, t)
}

func click(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(button, chromedp.NodeVisible)); err != nil {
		t.Fatalf("click: %v", err)
	}
}

// lastEvent returns the detail of the newest followfeed:change event.
func lastEvent(ctx context.Context, t *testing.T) map[string]any {
	t.Helper()
	d, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`window.__ffEvents.at(-1)`))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// accessible returns the button's accessible name and description as
// Chromium's accessibility tree has them.
func accessible(ctx context.Context, t *testing.T) (name, description string) {
	t.Helper()
	obj, err := chromedp.Run(ctx, chromedp.Evaluate[*runtime.RemoteObject](`document.querySelector('followfeed-button').shadowRoot.querySelector('button')`))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	res, err := chromedp.Run(ctx, chromedp.Action[accessibility.GetPartialAXTreeResult](func(ctx context.Context, tg *chromedp.Target) (accessibility.GetPartialAXTreeResult, error) {
		return cdp.Call(ctx, tg, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj.ObjectID, FetchRelatives: &no})
	}))
	if err != nil || len(res.Nodes) == 0 {
		t.Fatalf("the button's accessibility node: %v %v", res, err)
	}
	text := func(v *accessibility.Value) string {
		var s string
		if v != nil {
			_ = json.Unmarshal(v.Value, &s)
		}
		return s
	}
	return text(res.Nodes[0].Name), text(res.Nodes[0].Description)
}

func noConsoleErrors(t *testing.T, b *browser.Browser) {
	t.Helper()
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

func expect(t *testing.T, s state, text, pressed, label string) {
	t.Helper()
	if s.Text != text || s.Pressed != pressed || (label != "" && s.Label != label) {
		t.Fatalf("button = %q pressed=%q label=%q; want %q pressed=%q label=%q", s.Text, s.Pressed, s.Label, text, pressed, label)
	}
}

// maxButtonBytes is the embeddable script's budget, in bytes as served:
// the file's, since it is served as it is, never compressed (httpapi's
// TestEmbedScriptAndDemo checks the response body over HTTP, asked with
// Accept-Encoding as a browser asks).
const maxButtonBytes = 10_000

// TestFollowButtonSize keeps the embeddable script small (under 10,000
// bytes) and CSP-clean.
func TestFollowButtonSize(t *testing.T) {
	fi, err := os.Stat(buttonJS)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= maxButtonBytes {
		t.Fatalf("%s is %d bytes; keep it under %d", buttonJS, fi.Size(), maxButtonBytes)
	}
	src, _ := os.ReadFile(buttonJS)
	for _, bad := range []string{"eval(", "new Function", "style=", "createElement('style')", `createElement("style")`, "console."} {
		if bytes.Contains(src, []byte(bad)) {
			t.Errorf("%s contains %q", buttonJS, bad)
		}
	}
}

// TestFollowButtonSignedOut: a visitor without a token sees the count and is
// sent to sign in.
func TestFollowButtonSignedOut(t *testing.T) {
	ctx, b := browser.Start(t)
	emulate(ctx, t, "light")
	api := newFakeAPI()
	srv := newServer(t, api)

	s := open(ctx, t, srv.URL+"/page/out")
	expect(t, s, "Follow · 12", "false", "Follow Mingzhi Wen (12 followers)")
	if !s.StatusSet || s.Live != "polite" || s.Status != "" {
		t.Fatalf("status line: role=status %v aria-live=%q text=%q", s.StatusSet, s.Live, s.Status)
	}
	reqs := api.seen()
	for _, r := range reqs {
		if strings.Contains(r, "Bearer") {
			t.Fatalf("signed-out request sent a token: %s", r)
		}
	}
	want := "GET /v1/follows/researcher/openalex%3AA5023888391 " // encodeURIComponent
	if len(reqs) == 0 || reqs[0] != want {
		t.Fatalf("requests %q; want %q", reqs, want)
	}

	// The constructable stylesheet applies under the strict CSP, and the
	// shadow root has no <style> and no style attributes.
	css, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
  const root = document.querySelector('followfeed-button').shadowRoot;
  const b = root.querySelector('button');
  const cs = getComputedStyle(b);
  return {sheets: root.adoptedStyleSheets.length, styleEls: root.querySelectorAll('style').length,
    styleAttrs: document.querySelectorAll('[style]').length + root.querySelectorAll('[style]').length,
    radius: cs.borderTopLeftRadius, bg: cs.backgroundColor, type: b.type, part: b.getAttribute('part')};
})()`))
	if err != nil {
		t.Fatal(err)
	}
	if css["sheets"] != 1.0 || css["styleEls"] != 0.0 || css["styleAttrs"] != 0.0 || css["radius"] != "999px" ||
		css["type"] != "button" || css["part"] != "button" {
		t.Fatalf("shadow styles: %v", css)
	}
	b.ElementScreenshot(ctx, t, "follow-button-signed-out", "followfeed-button")
	noConsoleErrors(t, b)

	// A click goes to the sign-in page with the way back.
	pageURL := srv.URL + "/page/out"
	click(ctx, t)
	var loc string
	if !testwait.Until(10*time.Second, func() bool {
		loc, err = chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.HasPrefix(loc, srv.URL+"/signin")
	}) {
		t.Fatalf("no navigation to /signin; at %s (%v)", loc, err)
	}
	u, _ := url.Parse(loc)
	if got := u.Query().Get("return"); got != pageURL {
		t.Fatalf("return = %q; want %q (%s)", got, pageURL, loc)
	}
	if !strings.Contains(loc, "return="+url.QueryEscape(pageURL)) {
		t.Fatalf("return not encoded: %s", loc)
	}

	// Without a signin-url, the status line says what to do.
	s = open(ctx, t, srv.URL+"/page/out-nosignin")
	click(ctx, t)
	s = waitState(ctx, t, "the sign-in hint", func(s state) bool { return s.Status != "" })
	if s.Status != "Sign in to follow" || s.Pressed != "false" || !strings.HasSuffix(s.Location, "/page/out-nosignin") {
		t.Fatalf("no signin-url: %+v", s)
	}
	noConsoleErrors(t, b)
}

// TestFollowButtonSignedIn: follow, reload, unfollow, keyboard, attribute
// changes and the dark scheme, against the fake API.
func TestFollowButtonSignedIn(t *testing.T) {
	ctx, b := browser.Start(t)
	emulate(ctx, t, "light")
	api := newFakeAPI()
	srv := newServer(t, api)
	u := srv.URL + "/page/in"

	// While the status loads, the button is a disabled, busy "Follow".
	gate := make(chan struct{})
	api.setGate(gate)
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatal(err)
	}
	s := waitState(ctx, t, "the element", func(s state) bool { return s.Defined })
	if s.Text != "Follow" || !s.Disabled || s.Busy != "true" || s.Pressed != "false" {
		t.Fatalf("while loading: %+v", s)
	}
	close(gate)
	api.setGate(nil)

	s = open(ctx, t, u)
	expect(t, s, "Follow · 12", "false", "Follow Mingzhi Wen (12 followers)")
	if reqs := api.seen(); len(reqs) == 0 || !strings.HasSuffix(reqs[0], "Bearer "+goodToken) {
		t.Fatalf("status request without the token: %q", reqs)
	}

	b.ElementScreenshot(ctx, t, "follow-button-off", "followfeed-button")

	// Follow: the state changes at once, the server has it, an event tells.
	click(ctx, t)
	s = waitState(ctx, t, "the follow to finish", func(s state) bool { return s.Events == 1 })
	expect(t, s, "Following · 13", "true", "Follow Mingzhi Wen (13 followers)")
	if !api.isFollowing("researcher", researcher) {
		t.Fatal("the server has no follow")
	}
	if ev := lastEvent(ctx, t); ev["kind"] != "researcher" || ev["target"] != researcher || ev["following"] != true || ev["followers"] != 13.0 {
		t.Fatalf("followfeed:change detail = %v", ev)
	}
	b.ElementScreenshot(ctx, t, "follow-button-on", "followfeed-button")

	// A reload shows the stored state.
	s = open(ctx, t, u)
	expect(t, s, "Following · 13", "true", "")

	// Unfollow.
	click(ctx, t)
	s = waitState(ctx, t, "the unfollow to finish", func(s state) bool { return s.Events == 1 })
	expect(t, s, "Follow · 12", "false", "Follow Mingzhi Wen (12 followers)")
	if api.isFollowing("researcher", researcher) {
		t.Fatal("the server still has the follow")
	}
	if ev := lastEvent(ctx, t); ev["following"] != false || ev["followers"] != 12.0 {
		t.Fatalf("followfeed:change detail = %v", ev)
	}
	noConsoleErrors(t, b)

	// Keyboard: Tab reaches the button, with a visible focus ring; Enter and
	// Space toggle it.
	s = open(ctx, t, u)
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	focus, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
  const el = document.activeElement, b = el && el.shadowRoot && el.shadowRoot.activeElement;
  return {host: el ? el.localName : '', inner: b ? b.localName : '',
    visible: !!b && b.matches(':focus-visible'), outline: b ? getComputedStyle(b).outlineStyle : ''};
})()`))
	if err != nil {
		t.Fatal(err)
	}
	if focus["host"] != "followfeed-button" || focus["inner"] != "button" || focus["visible"] != true || focus["outline"] != "solid" {
		t.Fatalf("after Tab: %v", focus)
	}
	b.ElementScreenshot(ctx, t, "follow-button-focus", "followfeed-button")
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	s = waitState(ctx, t, "Enter to follow", func(s state) bool { return s.Events == 1 })
	expect(t, s, "Following · 13", "true", "")
	if !api.isFollowing("researcher", researcher) {
		t.Fatal("Enter: the server has no follow")
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	s = waitState(ctx, t, "Space to unfollow", func(s state) bool { return s.Events == 2 })
	expect(t, s, "Follow · 12", "false", "")
	if api.isFollowing("researcher", researcher) {
		t.Fatal("Space: the server still has the follow")
	}

	// Attribute changes: a new label re-renders, a new target reloads.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const el = document.querySelector('followfeed-button');
  el.setAttribute('label', 'M. Wen');
})()`))
	if err != nil {
		t.Fatal(err)
	}
	waitState(ctx, t, "the new label", func(s state) bool { return s.Label == "Follow M. Wen (12 followers)" })
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const el = document.querySelector('followfeed-button');
  el.setAttribute('kind', 'category'); el.setAttribute('target', 'cs.LG'); el.setAttribute('label', 'Machine Learning');
})()`))
	if err != nil {
		t.Fatal(err)
	}
	s = waitState(ctx, t, "the category", func(s state) bool {
		return s.Label == "Follow Machine Learning (12 followers)" && !s.Disabled
	})
	expect(t, s, "Follow · 12", "false", "")
	categoryGets := 0
	for _, r := range api.seen() {
		if r == "GET /v1/follows/category/cs.LG Bearer "+goodToken {
			categoryGets++
		}
	}
	if categoryGets != 1 {
		t.Fatalf("%d status reads of cs.LG after changing three attributes; want 1", categoryGets)
	}
	click(ctx, t)
	waitState(ctx, t, "the category follow", func(s state) bool { return s.Events == 3 })
	if !api.isFollowing("category", "cs.LG") || api.isFollowing("researcher", researcher) {
		t.Fatal("the follow went to the wrong target")
	}
	click(ctx, t)
	waitState(ctx, t, "the category unfollow", func(s state) bool { return s.Events == 4 })
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
  const el = document.querySelector('followfeed-button');
  el.setAttribute('kind', 'researcher'); el.setAttribute('target', '`+researcher+`'); el.setAttribute('label', 'Mingzhi Wen');
})()`))
	if err != nil {
		t.Fatal(err)
	}
	s = waitState(ctx, t, "the researcher again", func(s state) bool {
		return s.Label == "Follow Mingzhi Wen (12 followers)" && !s.Disabled
	})

	// Dark scheme: the dark styles apply and the button still renders.
	// Move the mouse off the button so that :hover does not colour it.
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 600, 600)); err != nil {
		t.Fatal(err)
	}
	waitColors(ctx, t, "light", "rgb(255, 255, 255)", "rgb(26, 95, 180)")
	emulate(ctx, t, "dark")
	waitColors(ctx, t, "dark", "rgb(31, 31, 31)", "rgb(138, 180, 248)")
	s = read(ctx, t)
	expect(t, s, "Follow · 12", "false", "")
	b.ElementScreenshot(ctx, t, "follow-button-dark-off", "followfeed-button")
	click(ctx, t)
	s = waitState(ctx, t, "the dark follow", func(s state) bool { return s.Events == 5 })
	expect(t, s, "Following · 13", "true", "")
	b.ElementScreenshot(ctx, t, "follow-button-dark-on", "followfeed-button")
	b.Screenshot(ctx, t, "follow-button-page-dark")
	noConsoleErrors(t, b)
}

// TestFollowButtonFailure: an optimistic change rolls back with the problem
// detail, clicks in flight are ignored, and a 401 asks to sign in again.
func TestFollowButtonFailure(t *testing.T) {
	ctx, b := browser.Start(t)
	emulate(ctx, t, "light")
	api := newFakeAPI()
	srv := newServer(t, api)
	u := srv.URL + "/page/in"

	open(ctx, t, u)
	api.failPut(http.StatusServiceUnavailable)
	gate := make(chan struct{})
	api.setGate(gate)

	// The change shows at once; a second click while the PUT is in flight is
	// ignored.
	click(ctx, t)
	s := waitState(ctx, t, "the optimistic follow", func(s state) bool { return s.Pressed == "true" })
	expect(t, s, "Following · 13", "true", "Follow Mingzhi Wen (13 followers)")
	click(ctx, t)
	// A click the button took would show within a frame or two; nothing
	// signals one it ignored.
	time.Sleep(100 * time.Millisecond)
	expect(t, read(ctx, t), "Following · 13", "true", "")
	close(gate)

	// The 503 rolls back and shows the problem's detail.
	s = waitState(ctx, t, "the roll-back", func(s state) bool { return s.Status != "" })
	expect(t, s, "Follow · 12", "false", "Follow Mingzhi Wen (12 followers)")
	if s.Status != "Following is paused for maintenance; try again in a minute." {
		t.Fatalf("status = %q", s.Status)
	}
	// The message is the button's accessible description (aria-describedby).
	if name, desc := accessible(ctx, t); name != "Follow Mingzhi Wen (12 followers)" || desc != s.Status {
		t.Fatalf("the button's accessible name %q, description %q; want the message %q", name, desc, s.Status)
	}
	if s.Events != 0 || api.isFollowing("researcher", researcher) {
		t.Fatalf("a failed follow changed something: events %d", s.Events)
	}
	puts := 0
	for _, r := range api.seen() {
		if strings.HasPrefix(r, "PUT ") {
			puts++
		}
	}
	if puts != 1 {
		t.Fatalf("%d PUTs; want 1 (the second click is ignored): %q", puts, api.seen())
	}
	vis, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
  const s = document.querySelector('followfeed-button').shadowRoot.querySelector('[role=status]');
  const r = s.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(s).visibility === 'visible';
})()`))
	if err != nil || !vis {
		t.Fatalf("the status line is not visible (%v)", err)
	}
	b.ElementScreenshot(ctx, t, "follow-button-error", "followfeed-button")

	// An expired session says so.
	api.setGate(nil)
	api.failPut(http.StatusUnauthorized)
	click(ctx, t)
	s = waitState(ctx, t, "the 401 message", func(s state) bool {
		return s.Status == "Your session expired; sign in again." && s.Pressed == "false"
	})
	expect(t, s, "Follow · 12", "false", "")
	if _, desc := accessible(ctx, t); desc != s.Status {
		t.Fatalf("the button's description %q; want %q", desc, s.Status)
	}

	// A working API clears the message on the next try.
	api.failPut(0)
	s = open(ctx, t, u)
	click(ctx, t)
	s = waitState(ctx, t, "the follow", func(s state) bool { return s.Events == 1 })
	if s.Status != "" || s.Pressed != "true" {
		t.Fatalf("after recovery: %+v", s)
	}
	if _, desc := accessible(ctx, t); desc != "" {
		t.Fatalf("the button is still described by %q", desc)
	}
	noConsoleErrors(t, b)
}

// TestConsoleErrorsRecords checks the recorder itself: console errors and
// warnings, uncaught exceptions and CSP violations are seen; logs are not.
func TestConsoleErrorsRecords(t *testing.T) {
	t.Setenv("SCREENSHOT_DIR", t.TempDir())
	ctx, b := browser.Start(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>t</title>
<script src="/noisy.js"></script><style>body{color:red}</style></head><body><p>noisy</p></body></html>`)
		case "/noisy.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `console.log("fine"); console.info("fine"); console.warn("careful");
console.error("bad", 42); setTimeout(() => { throw new Error("uncaught boom"); });`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { t.Logf("recorded:\n%s", strings.Join(b.ConsoleErrors(), "\n")) })
	want := []string{"console.warning: careful", "console.error: bad 42", "uncaught boom", "Content Security Policy"}
	var all, missing string
	if !testwait.Until(10*time.Second, func() bool {
		all, missing = strings.Join(b.ConsoleErrors(), "\n"), ""
		for _, w := range want {
			if !strings.Contains(all, w) {
				missing = w
			}
		}
		return missing == ""
	}) {
		t.Fatalf("missing %q in:\n%s", missing, all)
	}
	if strings.Contains(all, "fine") {
		t.Fatalf("logs recorded as errors:\n%s", all)
	}

	path := b.Screenshot(ctx, t, "noisy/page")
	png, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if filepath.Dir(path) != os.Getenv("SCREENSHOT_DIR") || filepath.Base(path) != "noisy-page.png" {
		t.Fatalf("screenshot path %s", path)
	}
}

// waitColors waits until the button has the background and text colours.
func waitColors(ctx context.Context, t *testing.T, scheme, bg, color string) {
	t.Helper()
	var c map[string]string
	if !testwait.Until(5*time.Second, func() bool {
		var err error
		c, err = chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`(() => {
  const cs = getComputedStyle(document.querySelector('followfeed-button').shadowRoot.querySelector('button'));
  return {bg: cs.backgroundColor, color: cs.color};
})()`))
		if err != nil {
			t.Fatal(err)
		}
		return c["bg"] == bg && c["color"] == color
	}) {
		t.Fatalf("%s scheme: button colours %v; want background %s, text %s", scheme, c, bg, color)
	}
}

// emulate sets prefers-color-scheme, and prefers-reduced-motion: reduce so
// that the button's colour transition does not blur screenshots.
func emulate(ctx context.Context, t *testing.T, scheme string) {
	t.Helper()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{
				{Name: "prefers-color-scheme", Value: scheme},
				{Name: "prefers-reduced-motion", Value: "reduce"},
			},
		})
		return err
	}))
	if err != nil {
		t.Fatalf("emulating %s: %v", scheme, err)
	}
}
