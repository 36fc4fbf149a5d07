package httpapi_test

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"followfeed/httpapi"
	"followfeed/internal/browser"
	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
)

// hostSite serves a host's profile page on 127.0.0.2 (another origin than
// the service on 127.0.0.1), embedding the Follow button the way the README
// tells hosts to: the hashed script from the service and a token provider.
// The provider hands out good or, after window.hostExpire(), expired tokens.
func hostSite(t *testing.T, ln net.Listener, serviceURL, good, expired string) string {
	t.Helper()
	page := fmt.Sprintf(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Papers · cs.LG</title>
<script>
let hostToken = %q;
window.followfeedToken = () => Promise.resolve(hostToken);
window.hostExpire = () => { hostToken = %q; };
window.hostChanges = 0;
document.addEventListener('followfeed:change', () => { window.hostChanges++; });
</script>
<script src="%s%s" defer></script></head>
<body style="font-family:sans-serif;margin:2em">
<h1>cs.LG — Machine Learning</h1>
<p>New papers in machine learning, on the host's own page.</p>
<p>Follow this field: <followfeed-button kind="category" target="cs.LG" label="cs.LG — Machine Learning" signin-url="/signin"></followfeed-button></p>
</body></html>`, good, expired, html.EscapeString(serviceURL), httpapi.ButtonURL())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// buttonStatus is the text of the button's status line (its messages).
func buttonStatus(ctx context.Context, sel string) string {
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`document.querySelector(%q).shadowRoot.querySelector('[part=status]').textContent`, sel)))
	return s
}

func waitStatus(t *testing.T, ctx context.Context, sel, want string) string {
	t.Helper()
	var s string
	if !testwait.Until(10*time.Second, func() bool { s = buttonStatus(ctx, sel); return strings.Contains(s, want) }) {
		t.Fatalf("status of %s: %q, want %q", sel, s, want)
	}
	return s
}

// TestFollowButtonOnAHostPage drives the button as a host embeds it: a page
// on another origin (127.0.0.2, listed in CORS_ORIGINS) loads the hashed
// script from the real service; follow and unfollow are clicked against the
// real API and database (checked afterwards through the API); a request
// that fails (an expired token) is rolled back with a visible message; and
// a page on an origin not in CORS_ORIGINS shows a message saying so instead
// of failing silently.
func TestFollowButtonOnAHostPage(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	tok := testapp.Token(t, "host-reader", "")
	expired := testapp.ExpiredToken(t, "host-reader")
	// The hosts listen first: the allowed one's origin goes into
	// CORS_ORIGINS before the service starts.
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			t.Fatalf("listening on 127.0.0.2, another loopback origin: %v", err)
		}
		return ln
	}
	allowedLn, otherLn := listen(), listen()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "CORS_ORIGINS", "http://"+allowedLn.Addr().String())
	host := hostSite(t, allowedLn, a.URL, tok, expired)
	status := func() (followers int, following bool) {
		t.Helper()
		var st struct {
			Followers int  `json:"followers"`
			Following bool `json:"following"`
		}
		c.Do("GET", "/v1/follows/category/cs.LG", tok, nil).JSON(t, &st)
		return st.Followers, st.Following
	}
	sel := `followfeed-button[kind="category"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(host+"/papers/cs.LG"), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
	if text, pressed := waitButton(t, ctx, sel, "Follow"); text != "Follow · 0" || pressed != "false" {
		t.Fatalf("on the host page before: %q pressed=%q", text, pressed)
	}
	b.Screenshot(ctx, t, "host-button-before")

	if err := clickButton(ctx, sel); err != nil {
		t.Fatal(err)
	}
	if text, pressed := waitButton(t, ctx, sel, "Following"); text != "Following · 1" || pressed != "true" {
		t.Fatalf("after follow: %q pressed=%q", text, pressed)
	}
	waitFor(t, "the follow stored", func() bool { n, f := status(); return n == 1 && f })
	b.Screenshot(ctx, t, "host-button-following")

	if err := clickButton(ctx, sel); err != nil {
		t.Fatal(err)
	}
	if text, _ := waitButton(t, ctx, sel, "Follow ·"); text != "Follow · 0" {
		t.Fatalf("after unfollow: %q", text)
	}
	waitFor(t, "the unfollow stored", func() bool { n, f := status(); return n == 0 && !f })
	// The button takes clicks again once it has re-read the count and told
	// the page (followfeed:change).
	waitFor(t, "two followfeed:change events", func() bool {
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.hostChanges`))
		return n == 2
	})

	// The host's session runs out: the click is rolled back, visibly.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.hostExpire()`)); err != nil {
		t.Fatal(err)
	}
	if err := clickButton(ctx, sel); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ctx, sel, "Your session expired")
	if text, pressed := waitButton(t, ctx, sel, "Follow"); text != "Follow · 0" || pressed != "false" {
		t.Errorf("after the refused follow: %q pressed=%q, want it rolled back", text, pressed)
	}
	if n, f := status(); n != 0 || f {
		t.Errorf("the refused follow was stored: %d followers, following %v", n, f)
	}
	b.Screenshot(ctx, t, "host-button-rolled-back")

	// A page on an origin not in CORS_ORIGINS: a message, not silence.
	other := hostSite(t, otherLn, a.URL, tok, expired)
	if err := chromedp.Do(ctx, chromedp.Navigate(other+"/papers/cs.LG"), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
	msg := waitStatus(t, ctx, sel, "not allowed to use followfeed's Follow button")
	if !strings.Contains(msg, other) || !strings.Contains(msg, "CORS_ORIGINS") {
		t.Errorf("message on a disallowed origin: %q, want the origin and CORS_ORIGINS named", msg)
	}
	b.Screenshot(ctx, t, "host-button-origin-not-allowed")
}
