package httpapi_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
)

// TestErasePageInABrowser: in Chromium at 390 px, the settings page's
// "Your data" section links to the erase page, which says what goes and
// fits the screen; its button is reached with Tab and pressed with Enter,
// and the account is gone (the API shows no follower left), the next page
// saying so.
func TestErasePageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "phone-user", "phone@example.org")
	c.Do("PUT", "/v1/me/follows/category/astro-ph.GA", tok, nil)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	browserSignIn(ctx, t, a, tok, "/settings/account", `#your-data`)
	fitsTheScreen(ctx, t, 390)
	b.ElementScreenshot(ctx, t, "settings-your-data-390", "#your-data")
	if err := chromedp.Do(ctx, chromedp.Click(`#erase-account`), chromedp.WaitVisible(`#erase`)); err != nil {
		t.Fatal(err)
	}
	main := text(ctx, t, "main")
	for _, want := range []string{"Erase your account?", "your follows (1)", "phone@example.org asked us to stop mailing it", "download your data"} {
		if !strings.Contains(main, want) {
			t.Errorf("the erase page lacks %q:\n%s", want, main)
		}
	}
	fitsTheScreen(ctx, t, 390)
	b.Screenshot(ctx, t, "erase-page-390")
	tabTo(ctx, t, "erase")
	pressTo(ctx, t, "\r", "h1")
	if h := text(ctx, t, "h1"); h != "Account erased" {
		t.Errorf("the page after the button: %q", h)
	}
	var st struct{ Followers int64 }
	c.Do("GET", "/v1/follows/category/astro-ph.GA", "", nil).JSON(t, &st)
	if st.Followers != 0 {
		t.Errorf("%d followers after the erasure", st.Followers)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
