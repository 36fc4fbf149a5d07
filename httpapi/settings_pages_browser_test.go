package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
)

// settingsPagesTall is the most a settings page may measure at 390 px with
// seven follows and four push channels (and no papers yet). The one page
// these pages replace measured 6,744 px at 1280 px and 8,260 px at 390 px
// with this user; at 390 px the pages measure about 1,800 (follows),
// 844 (feeds: the screen), 1,980 (channels), 1,670 (email) and 1,080
// (account), in this test's Chromium.
const settingsPagesTall = 2500

// browserSignIn opens tok's sign-in link, presses its button (a link
// opened directly asks first: login CSRF), checks that the sign-in landed
// on landing with the token gone from the address bar, then opens page
// (a path) and waits for sel in it.
func browserSignIn(ctx context.Context, t *testing.T, a *testapp.App, tok, page, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/login?token="+url.QueryEscape(tok)), chromedp.WaitVisible(`form[action="/login"] button`)); err != nil {
		t.Fatal(err)
	}
	// The confirm page takes the token out of the address bar and its
	// history entry (login.js); the form carries it.
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(loc, "token=") || !strings.HasSuffix(loc, "/login") {
		t.Errorf("the sign-in confirm page's address is %q (%v), want /login without the token", loc, err)
	}
	if err := submitTo(ctx, `form[action="/login"] button`, "main"); err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(loc); u == nil || u.Path != landing || strings.Contains(loc, "token=") {
		t.Errorf("the sign-in landed on %s, not %s", loc, landing)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+page), chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
}

// navPages are the settings session's pages the navigation leads to (the
// inbox, first in it, is served elsewhere), with an element each shows.
var navPages = []struct{ path, shows string }{
	{"/settings/follows", "#follows"},
	{"/settings/feeds", "#feeds"},
	{"/settings/channels", "#channels"},
	{"/settings/email", "#email"},
	{"/settings/account", "#your-data"},
}

// unlabelled lists the page's controls without an accessible name: a form
// field without a <label> (or aria-label / aria-labelledby), a button or
// summary without text or aria-label.
func unlabelled(ctx context.Context, t *testing.T) []string {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('input:not([type=hidden]), select, textarea, button, summary, a[href]')].filter(e => {
		if (e.getAttribute('aria-label') || e.getAttribute('aria-labelledby')) return false;
		if (e.matches('input, select, textarea')) return !(e.labels && e.labels.length && [...e.labels].some(l => l.textContent.trim()));
		return !e.textContent.trim();
	}).map(e => e.outerHTML.slice(0, 120))`))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ariaCurrent is the href of the navigation's aria-current link(s).
func ariaCurrent(ctx context.Context, t *testing.T) []string {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('nav[aria-label] [aria-current]')].map(a => a.getAttribute('href'))`))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pageHeight(ctx context.Context, t *testing.T) int {
	t.Helper()
	h, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func locPath(ctx context.Context, t *testing.T) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// TestSettingsPagesInABrowser: in Chromium, a user with seven follows and
// four push channels signs in and lands on the follows page; at 1280 and
// 390 px the navigation (one nav landmark) is walked with Tab and Enter to
// every page, each marked aria-current, every control labelled, nothing
// wider than the screen and each page at 390 px shorter than
// settingsPagesTall; then a form of each page is sent and what it saved
// is on that page after a reload (and in the API): a follow's option, the
// feed token, a channel's follow choice (the compact control: All follows /
// Chosen follows with a collapsed list), the digest frequency, and the
// account page's sign-out everywhere.
func TestSettingsPagesInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "pages-user", "pages@example.org")
	for _, f := range []string{"category/cs.LG", "category/cs.AI", "category/astro-ph.GA", "researcher/openalex:A5023888391",
		"institution/ror:05ppvf150", "query/" + url.PathEscape(`"diffusion model" cat:cs.LG`)} {
		if r := c.Do("PUT", "/v1/me/follows/"+f, tok, nil); r.Status != 200 && r.Status != 201 {
			t.Fatalf("follow %s: %d %s", f, r.Status, r.Body)
		}
	}
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", tok, map[string]any{"label": "Josiah Carberry"})
	for _, ch := range []map[string]any{
		{"type": "webhook", "url": "https://example.org/hook", "mode": "instant"},
		{"type": "slack", "url": "https://hooks.slack.com/services/T0/B0/secretpart", "mode": "daily"},
		{"type": "discord", "url": "https://discord.com/api/webhooks/1/tok", "mode": "weekly", "follows": []map[string]string{{"kind": "category", "id": "cs.LG"}}},
		{"type": "matrix", "homeserver": "https://matrix.example.org", "room_id": "!room:example.org", "access_token": "syt_secret", "mode": "instant"},
	} {
		if r := c.Do("POST", "/v1/me/channels", tok, ch); r.Status != 201 {
			t.Fatalf("channel %v: %d %s", ch["type"], r.Status, r.Body)
		}
	}
	// A title without a space, in the email page's digest preview: it
	// wraps rather than widening the page (it scrolled sideways).
	pushPaper(t, c, paperLine("2611.00991", "Scaling"+strings.Repeat("_laws", 11), "cs.LG"))
	var follows struct{ Follows []struct{ Kind, ID string } }
	if c.Do("GET", "/v1/me/follows", tok, nil).JSON(t, &follows); len(follows.Follows) != 7 {
		t.Fatalf("%d follows", len(follows.Follows))
	}

	// A sign-in lands on the session's first page (browserSignIn checks).
	browserSignIn(ctx, t, a, tok, "/settings/follows", `#follows`)

	heights := map[string]int{}
	for _, width := range []int64{1280, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate(a.URL+"/settings/follows"), chromedp.WaitVisible(`#follows`)); err != nil {
			t.Fatal(err)
		}
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('nav').length`)); n != 1 {
			t.Errorf("%d nav landmarks", n)
		}
		for _, pg := range navPages {
			if p := locPath(ctx, t); p != pg.path {
				// The keyboard: Tab to the page's link, Enter.
				tabToSelector(ctx, t, fmt.Sprintf(`nav a[href=%q]`, pg.path))
				pressTo(ctx, t, "\r", pg.shows)
			}
			if p := locPath(ctx, t); p != pg.path {
				t.Fatalf("at %d px Enter on the link to %s opened %s", width, pg.path, p)
			}
			if cur := ariaCurrent(ctx, t); len(cur) != 1 || cur[0] != pg.path {
				t.Errorf("at %d px on %s aria-current marks %v", width, pg.path, cur)
			}
			if bad := unlabelled(ctx, t); len(bad) > 0 {
				t.Errorf("at %d px on %s controls without a label: %v", width, pg.path, bad)
			}
			fitsTheScreen(ctx, t, width)
			h := pageHeight(ctx, t)
			heights[fmt.Sprintf("%s@%d", pg.path, width)] = h
			if width == 390 && h > settingsPagesTall {
				t.Errorf("at 390 px %s is %d px tall (at most %d)", pg.path, h, settingsPagesTall)
			}
			name := "settings-" + strings.TrimPrefix(pg.path, "/settings/") + fmt.Sprintf("-%d", width)
			b.Screenshot(ctx, t, name)
		}
	}
	t.Logf("page heights: %v", heights)

	// Each page's form round-trips: sent, back on its page with the flash,
	// and what it saved still shown after a reload.
	reload := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(sel)); err != nil {
			t.Fatal(err)
		}
	}
	checked := func(sel string) bool {
		t.Helper()
		on, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).checked`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return on
	}
	// shown: a closed <details> hides its content (content-visibility,
	// which offsetParent does not see).
	shown := func(sel string) bool {
		t.Helper()
		on, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).checkVisibility()`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return on
	}
	// textOf is an element's text, shown or not (textContent).
	textOf := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	open := func(p, sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+p), chromedp.WaitVisible(sel)); err != nil {
			t.Fatal(err)
		}
	}
	back := func(want, flash string) {
		t.Helper()
		if p := locPath(ctx, t); p != want {
			t.Errorf("the form returned to %s, not %s", p, want)
		}
		if f := text(ctx, t, `p.flash`); f != flash {
			t.Errorf("flash on %s: %q", want, f)
		}
	}

	// Follows: cs.LG's "new versions" off.
	open("/settings/follows", "#follows")
	box := `li[data-follow="category/cs.LG"] input[name="include_replacements"]`
	was := checked(box)
	if err := chromedp.Do(ctx, chromedp.Click(box)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `li[data-follow="category/cs.LG"] form.options button`); err != nil {
		t.Fatal(err)
	}
	back("/settings/follows", "Saved.")
	reload("#follows")
	if checked(box) == was {
		t.Error("the follow's option is as it was after a reload")
	}

	// Feeds: rotating the token.
	open("/settings/feeds", "#feeds")
	oldFeed, _ := chromedp.Run(ctx, chromedp.Value(`#feed-atom`))
	if err := submit(ctx, `#rotate`); err != nil {
		t.Fatal(err)
	}
	back("/settings/feeds", "Your feed token was replaced: the old feed links stop working now. Update your feed reader.")
	reload("#feeds")
	if newFeed, _ := chromedp.Run(ctx, chromedp.Value(`#feed-atom`)); newFeed == oldFeed || newFeed == "" {
		t.Errorf("the feed URL after rotating and a reload: %q", newFeed)
	}

	// Channels: the Discord channel carries cs.LG (Chosen follows, 1 of
	// 7, the list collapsed); the webhook is switched from all follows to
	// two chosen ones, with the keyboard.
	open("/settings/channels", "#channels")
	channelsNow := func() channelList {
		var l channelList
		c.Do("GET", "/v1/me/channels", tok, nil).JSON(t, &l)
		return l
	}
	list := channelsNow()
	hook := fmt.Sprintf(`li[data-channel="%d"]`, list.Channels[0].ID)
	disc := fmt.Sprintf(`li[data-channel="%d"]`, list.Channels[2].ID)
	if !checked(disc+` input[name="follows_scope"][value="chosen"]`) || !strings.Contains(textOf(disc+` details.follow-pick summary`), "1 of 7") ||
		shown(disc+` input[name="follow"]`) {
		t.Errorf("the Discord channel's follow choice: %q", textOf(disc+` details.follow-pick summary`))
	}
	if !checked(hook + ` input[name="follows_scope"][value="all"]`) {
		t.Error("the webhook (all follows) does not show All follows")
	}
	// Open the webhook's settings with the keyboard.
	tabToSelector(ctx, t, hook+` details.channel-settings summary`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	tabToSelector(ctx, t, hook+` input[name="follows_scope"][value="all"]`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.ArrowDown)); err != nil { // arrow keys move within a radio group
		t.Fatal(err)
	}
	if !checked(hook+` input[name="follows_scope"][value="chosen"]`) || !shown(hook+` input[name="follow"]`) {
		t.Fatal("Chosen follows picked with the keyboard does not open the list")
	}
	for _, n := range []int{1, 2} {
		tabToSelector(ctx, t, hook+fmt.Sprintf(` details.follow-pick label:nth-of-type(%d) input`, n))
		if err := chromedp.Do(ctx, chromedp.KeyEvent(" ")); err != nil {
			t.Fatal(err)
		}
	}
	tabToSelector(ctx, t, hook+` button.save`)
	pressTo(ctx, t, "\r", `p.flash`)
	back("/settings/channels", "Channel saved.")
	reload("#channels")
	if !checked(hook+` input[name="follows_scope"][value="chosen"]`) || !strings.Contains(textOf(hook+` details.follow-pick summary`), "2 of 7") {
		t.Errorf("the webhook after a reload: %q", textOf(hook+` details.follow-pick summary`))
	}
	list = channelsNow()
	if fs := list.Channels[0].Follows; len(fs) != 2 {
		t.Errorf("stored follows of the webhook: %+v", fs)
	}
	// Back to All follows: the checked boxes are ignored.
	if err := chromedp.Do(ctx, chromedp.Click(hook+` details.channel-settings summary`), chromedp.Click(hook+` input[name="follows_scope"][value="all"]`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, hook+` button.save`); err != nil {
		t.Fatal(err)
	}
	list = channelsNow()
	if list.Channels[0].Follows != nil {
		t.Errorf("All follows stored %+v", list.Channels[0].Follows)
	}
	b.Screenshot(ctx, t, "settings-channels-choice-390")

	// Email: weekly digests.
	open("/settings/email", "#email")
	if err := choose(ctx, `#frequency`, "weekly"); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-email`); err != nil {
		t.Fatal(err)
	}
	back("/settings/email", text(ctx, t, `p.flash`)) // saved: the flash depends on the address's state
	if f := text(ctx, t, `p.flash`); !strings.HasPrefix(f, "Email settings saved") && !strings.HasPrefix(f, "Digests are on") {
		t.Errorf("flash after saving the email form: %q", f)
	}
	reload("#email")
	if f, _ := chromedp.Run(ctx, chromedp.Value(`#frequency`)); f != "weekly" {
		t.Errorf("frequency after a reload: %q", f)
	}

	// Account: signing out everywhere; a reload is signed out.
	open("/settings/account", "#your-data")
	if err := submitTo(ctx, `#sign-out-everywhere`, `h1`); err != nil {
		t.Fatal(err)
	}
	if h := text(ctx, t, `h1`); h != "Signed out" {
		t.Errorf("after signing out everywhere: %q", h)
	}
	open("/settings/account", `form[action="/login"], h1`)
	if p := locPath(ctx, t); p != "/login" {
		t.Errorf("the account page after signing out: %s", p)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
