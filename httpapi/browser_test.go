package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"followfeed/auth"
	"followfeed/config"
	"followfeed/internal/browser"
	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
)

// buttonState reads the Follow button inside its shadow root.
func buttonState(ctx context.Context, sel string) (text, pressed string, err error) {
	js := fmt.Sprintf(`(() => { const b = document.querySelector(%q).shadowRoot.querySelector('button');
		return [b.textContent.trim(), b.getAttribute('aria-pressed') || '', b.getAttribute('aria-busy') || '']; })()`, sel)
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
	if err != nil {
		return "", "", err
	}
	if out[2] == "true" {
		return "", "", fmt.Errorf("still loading")
	}
	return out[0], out[1], nil
}

// waitButton waits until the button's text starts with want.
func waitButton(t *testing.T, ctx context.Context, sel, want string) (string, string) {
	t.Helper()
	var text, pressed string
	var err error
	if !testwait.Until(10*time.Second, func() bool {
		text, pressed, err = buttonState(ctx, sel)
		return err == nil && strings.HasPrefix(text, want)
	}) {
		t.Fatalf("button %s: %q (pressed %q, err %v), want %q…", sel, text, pressed, err, want)
	}
	return text, pressed
}

func clickButton(ctx context.Context, sel string) error {
	_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).shadowRoot.querySelector('button').click()`, sel)))
	return err
}

// TestFollowButtonOnTheDemoPage: click Follow → Following with the count up
// by one and the follow stored; a reload keeps it; click again → unfollowed.
func TestFollowButtonOnTheDemoPage(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	// Someone else already follows, so the count starts at 1.
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", testapp.Token(t, "early-bird", ""), nil)
	sel := `followfeed-button[kind="researcher"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/embed/demo"), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
	text, pressed := waitButton(t, ctx, sel, "Follow")
	if pressed != "false" || !strings.HasSuffix(text, "1") {
		t.Fatalf("before: %q pressed=%q", text, pressed)
	}
	b.ElementScreenshot(ctx, t, "demo-button-off", sel)
	if err := clickButton(ctx, sel); err != nil {
		t.Fatal(err)
	}
	text, pressed = waitButton(t, ctx, sel, "Following")
	if pressed != "true" || !strings.HasSuffix(text, "2") {
		t.Fatalf("after follow: %q pressed=%q", text, pressed)
	}
	demo := testapp.Token(t, "demo-user", "")
	waitFor(t, "the follow in the database", func() bool {
		return strings.Contains(string(c.Do("GET", "/v1/me/follows", demo, nil).Body), "openalex:A5023888391")
	})
	b.ElementScreenshot(ctx, t, "demo-button-on", sel)
	b.Screenshot(ctx, t, "demo-page")
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
	if text, pressed := waitButton(t, ctx, sel, "Following"); pressed != "true" || !strings.HasSuffix(text, "2") {
		t.Fatalf("after reload: %q pressed=%q", text, pressed)
	}
	if err := clickButton(ctx, sel); err != nil {
		t.Fatal(err)
	}
	if text, pressed := waitButton(t, ctx, sel, "Follow ·"); pressed != "false" || !strings.HasSuffix(text, "1") {
		t.Fatalf("after unfollow: %q pressed=%q", text, pressed)
	}
	waitFor(t, "the unfollow in the database", func() bool {
		return !strings.Contains(string(c.Do("GET", "/v1/me/follows", demo, nil).Body), "openalex:A5023888391")
	})
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// submit clicks a form's button and waits for the page the form's POST
// redirects to: a flash from an earlier form may still be showing, so the
// wait is for a new document, then for its flash.
func submit(ctx context.Context, button string) error { return submitTo(ctx, button, `p.flash`) }

// submitTo clicks a form's button and waits for a new document, then for
// an element matching sel in it.
func submitTo(ctx context.Context, button, sel string) error {
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__oldPage = true`)); err != nil {
		return err
	}
	if err := chromedp.Do(ctx, chromedp.Click(button)); err != nil {
		return err
	}
	var err error
	if !testwait.Until(15*time.Second, func() bool {
		var fresh bool
		fresh, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__oldPage !== true && document.readyState === 'complete'`))
		return err == nil && fresh
	}) {
		return fmt.Errorf("no new page after clicking %s (last error %v)", button, err)
	}
	return chromedp.Do(ctx, chromedp.WaitVisible(sel))
}

// TestSettingsPageInABrowser: after the /login handoff, unfollow from the
// list, change frequency and time zone, rotate the feed token — all with
// plain forms — and see each stored.
func TestSettingsPageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "browser-reader", "browser@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", tok, map[string]any{"label": "Josiah Carberry"})
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &links)
	oldFeed := links.Atom

	// A sign-in link opened directly (no referrer from the host) asks
	// first (login CSRF); the button signs in.
	browserSignIn(ctx, t, a, tok, "/settings/follows", `#follows`)
	b.Screenshot(ctx, t, "settings-page")

	// Unfollow cs.LG.
	if err := submit(ctx, `li[data-follow="category/cs.LG"] button.unfollow`); err != nil {
		t.Fatal(err)
	}
	page, _ := chromedp.Run(ctx, chromedp.OuterHTML("main"))
	if strings.Contains(page, `data-follow="category/cs.LG"`) || !strings.Contains(page, "Josiah Carberry") {
		t.Errorf("after unfollow the list still shows cs.LG")
	}
	if strings.Contains(string(c.Do("GET", "/v1/me/follows", tok, nil).Body), `"cs.LG"`) {
		t.Error("unfollow was not stored")
	}

	// Frequency and time zone, on the email page.
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings/email"), chromedp.WaitVisible(`#email`),
		chromedp.SetValue(`#frequency`, "weekly"),
		chromedp.SetValue(`#timezone`, "Asia/Tokyo"),
		chromedp.SetValue(`#weekday`, "friday"),
	); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-email`); err != nil {
		t.Fatal(err)
	}
	me := string(c.Do("GET", "/v1/me", tok, nil).Body)
	if !strings.Contains(me, `"frequency":"weekly"`) || !strings.Contains(me, `"timezone":"Asia/Tokyo"`) || !strings.Contains(me, `"weekday":"friday"`) {
		t.Errorf("email settings not stored: %s", me)
	}

	// Rotate the feed token, on the feeds page: the old URL answers 404
	// at once.
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings/feeds"), chromedp.WaitVisible(`#feeds`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#rotate`); err != nil {
		t.Fatal(err)
	}
	newFeed, _ := chromedp.Run(ctx, chromedp.Value(`#feed-atom`))
	if resp, _ := get(t, oldFeed); resp.StatusCode != 404 {
		t.Errorf("old feed URL after rotating in the browser: %d", resp.StatusCode)
	}
	if newFeed == oldFeed || !strings.HasPrefix(newFeed, a.URL+"/feeds/fft_") {
		t.Errorf("the page shows %q", newFeed)
	}
	if resp, _ := get(t, newFeed); resp.StatusCode != 200 {
		t.Errorf("new feed URL: %d", resp.StatusCode)
	}
	b.Screenshot(ctx, t, "settings-page-after")
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestUnsubscribePageInABrowser: loading the page changes nothing; its
// button unsubscribes.
func TestUnsubscribePageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t)
	tok := testapp.Token(t, "leaver", "leaver@example.org")
	c.Do("PATCH", "/v1/me", tok, map[string]any{"digest": map[string]any{"frequency": "daily"}})
	link := unsubscribeLink(t, a, "leaver")
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(`#unsubscribe`)); err != nil {
		t.Fatal(err)
	}
	// A script of the page would post once it has loaded: nothing signals
	// that none will, so the page gets a moment to.
	time.Sleep(300 * time.Millisecond)
	if me := string(c.Do("GET", "/v1/me", tok, nil).Body); !strings.Contains(me, `"frequency":"daily"`) {
		t.Fatalf("loading the page unsubscribed: %s", me)
	}
	b.Screenshot(ctx, t, "unsubscribe-page")
	if err := chromedp.Do(ctx, chromedp.Click(`#unsubscribe`), chromedp.WaitVisible(`h1`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unsubscribe", func() bool {
		return strings.Contains(string(c.Do("GET", "/v1/me", tok, nil).Body), `"frequency":"off"`)
	})
	h1, _ := chromedp.Run(ctx, chromedp.Text(`h1`))
	if h1 != "You are unsubscribed" {
		t.Errorf("page after the button: %q", h1)
	}
	// The page leads on: to the settings, where digests come back on.
	if onward, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('main a[href="/settings"]') !== null`)); err != nil || !onward {
		t.Errorf("no link to the settings after unsubscribing (%v)", err)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// unsubscribeLink signs the unsubscribe link a digest for sub would carry.
func unsubscribeLink(t *testing.T, a *testapp.App, sub string) string {
	t.Helper()
	db := openDB(t, a.DatabaseURL)
	var id, epoch int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = $1`, sub).Scan(&id, &epoch); err != nil {
		t.Fatal(err)
	}
	signer := auth.NewLinkSigner([]byte(config.DevSecretKey))
	return a.URL + "/unsubscribe/" + signer.Sign(auth.Link{Action: auth.ActionUnsubscribe, UserID: id, Epoch: epoch})
}
