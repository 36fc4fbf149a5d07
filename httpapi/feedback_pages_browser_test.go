package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
)

// tabTo presses Tab until the element with id has the focus, as a person
// with a keyboard would reach it; it fails the test after 30 presses.
func tabTo(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	for range 30 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ''`))
		if err != nil {
			t.Fatal(err)
		}
		if got == id {
			return
		}
	}
	t.Fatalf("30 Tabs did not reach #%s", id)
}

// pressTo presses key on the focused element and waits for a new document
// with an element matching sel.
func pressTo(ctx context.Context, t *testing.T, key, sel string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__oldPage = true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(key)); err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(15*time.Second, func() bool {
		fresh, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__oldPage !== true && document.readyState === 'complete'`))
		return err == nil && fresh
	}) {
		t.Fatalf("no new page after pressing %q", key)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(sel)); err != nil {
		t.Fatal(err)
	}
}

// fitsTheScreen fails the test when anything on the page is wider than the
// viewport.
func fitsTheScreen(ctx context.Context, t *testing.T, width int64) {
	t.Helper()
	over, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Page, Screen int
		Wide         []string
	}](`({Page: document.documentElement.scrollWidth, Screen: innerWidth,
		Wide: [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 0.5).map(e => e.tagName + '.' + e.className)})`))
	if err != nil {
		t.Fatal(err)
	}
	if over.Page > over.Screen || len(over.Wide) > 0 {
		t.Errorf("at %d px the page is %d px wide; past the screen's edge: %v", width, over.Page, over.Wide)
	}
}

// TestFeedbackLinkPageInABrowser: in Chromium at 390 and 1280 px, a "less
// like this" link's page shows the paper, its button and the followed
// researcher's "Not by …?" link, all within the screen; the button is
// reached with Tab and pressed with Enter (recorded), and the undo button
// that replaces it with Space (cleared), as the API shows.
func TestFeedbackLinkPageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	reader := testapp.Token(t, "keyboard-reader", "kr@example.org")
	c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "openalex:A5023888391"], "name": "Mingzhi Wen"}]`)
	c.Do("PUT", "/v1/me/follows/researcher/host:1955166", reader, nil)
	pushPaper(t, c, `{"arxiv_id": "2202.02326", "title": "Towards Training Reproducible Deep Learning Models: a long title that has to wrap on a phone's narrow screen", "authors": [{"name": "Boyuan Chen"}, {"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}, {"name": "Yong Shi"}, {"name": "Dayi Lin"}, {"name": "Gopi Krishnan Rajbahadur"}, {"name": "Zhen Ming Jiang"}], "categories": ["cs.LG"], "primary_category": "cs.LG"}`)
	link := a.URL + feedbackPath(t, a, db, "keyboard-reader", "2202.02326", "less")

	for i, width := range []int64{390, 1280} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate(link), chromedp.WaitVisible(`#feedback-h`)); err != nil {
			t.Fatal(err)
		}
		main := text(ctx, t, "main")
		for _, want := range []string{"Less like this", "Towards Training Reproducible", "Mingzhi Wen", "arXiv 2202.02326", "Not by Mingzhi Wen?"} {
			if !strings.Contains(main, want) {
				t.Errorf("at %d px the page lacks %q:\n%s", width, want, main)
			}
		}
		fitsTheScreen(ctx, t, width)
		b.Screenshot(ctx, t, fmt.Sprintf("feedback-link-page-%d", width))
		if i == 0 {
			// Record with the keyboard: Tab to the button, Enter.
			tabTo(ctx, t, "feedback-record")
			pressTo(ctx, t, "\r", "#feedback-undo")
			waitFor(t, "the feedback recorded", func() bool { return myFeedback(t, c, reader) == "2202.02326=less" })
			if f := text(ctx, t, "p.flash"); f != "Recorded: Less like this." {
				t.Errorf("the flash after recording: %q", f)
			}
			fitsTheScreen(ctx, t, width)
			b.Screenshot(ctx, t, fmt.Sprintf("feedback-link-recorded-%d", width))
			continue
		}
		// Reloaded, the link shows what is recorded; undo with Space.
		if !visible(ctx, t, "#feedback-undo") || visible(ctx, t, "#feedback-record") {
			t.Fatal("the link's page once recorded: no undo button, or the record button still")
		}
		tabTo(ctx, t, "feedback-undo")
		pressTo(ctx, t, " ", "#feedback-record")
		waitFor(t, "the feedback cleared", func() bool { return myFeedback(t, c, reader) == "" })
		b.Screenshot(ctx, t, fmt.Sprintf("feedback-link-undone-%d", width))
	}

	// The settings page lists it, and its Undo works with the keyboard;
	// the budget controls save.
	if r := c.Do("PUT", "/v1/me/papers/2202.02326/feedback", reader, map[string]any{"value": "more"}); r.Status != 200 {
		t.Fatalf("feedback through the API: %d", r.Status)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	browserSignIn(ctx, t, a, reader, "/settings/account", `#feedback`)
	if row := text(ctx, t, `li[data-feedback="2202.02326"]`); !strings.Contains(row, "More like this") || !strings.Contains(row, "Towards Training") {
		t.Errorf("the settings page's feedback row: %q", row)
	}
	fitsTheScreen(ctx, t, 390)
	b.ElementScreenshot(ctx, t, "settings-feedback-390", "#feedback")
	tabToSelector(ctx, t, `li[data-feedback="2202.02326"] button.undo`)
	pressTo(ctx, t, "\r", "p.flash")
	waitFor(t, "the settings page's undo", func() bool { return myFeedback(t, c, reader) == "" })
	if !visible(ctx, t, "#feedback-none") {
		t.Error("the list after undo is not empty")
	}
	// The outcome stands in the list's section, where the page comes back
	// to (#feedback), not at the top of the page out of view.
	if got := text(ctx, t, "#feedback p.flash"); !strings.Contains(got, "Feedback removed") {
		t.Errorf("the undo's outcome in the feedback section: %q", got)
	}
	b.ElementScreenshot(ctx, t, "settings-feedback-undone-390", "#feedback")
	// It offers the feedback back; the keyboard puts it back.
	if got := text(ctx, t, "#feedback-restore"); !strings.Contains(got, "Removed “More like this” on “Towards Training") {
		t.Errorf("the offer to put it back: %q", got)
	}
	tabTo(ctx, t, "feedback-restore-button")
	pressTo(ctx, t, "\r", `li[data-feedback="2202.02326"]`)
	waitFor(t, "the feedback put back", func() bool { return strings.HasPrefix(myFeedback(t, c, reader), "2202.02326=more") })
	// The budget controls are on the email page.
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings/email"), chromedp.WaitVisible(`#budget`)); err != nil {
		t.Fatal(err)
	}
	b.ElementScreenshot(ctx, t, "settings-budget-390", "#budget")
	if err := chromedp.Do(ctx, chromedp.SetValue(`#order`, "best"), chromedp.SetValue(`#max-papers`, "12"), chromedp.Click(`#keep-followed`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-email`); err != nil {
		t.Fatal(err)
	}
	if me := string(c.Do("GET", "/v1/me", reader, nil).Body); !strings.Contains(me, `"order":"best"`) || !strings.Contains(me, `"max_papers":12`) || !strings.Contains(me, `"keep_followed":false`) {
		t.Errorf("the budget controls saved %s", me)
	}
	// A budget the server refuses (sent past the browser's own check):
	// the problem stands just above the field, which has the focus, not
	// some 900 px above it at the top of the form on a phone.
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings/email"), chromedp.WaitVisible(`#budget`),
		chromedp.SetValue(`#max-papers`, "76")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#save-email').form.noValidate = true`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-email`); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`#form-error`)); err != nil {
		t.Fatal(err)
	}
	gap, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(function () {
		var note = document.getElementById('form-error'), field = document.getElementById('max-papers');
		if (document.activeElement !== field || note.nextElementSibling !== document.querySelector('label[for="max-papers"]')) { return -1; }
		return field.getBoundingClientRect().top - note.getBoundingClientRect().top;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if gap < 0 || gap > 200 {
		t.Errorf("the refused budget's problem: %v px above the field (-1: not above its label, or the field has no focus)", gap)
	}
	if e := text(ctx, t, `#form-error`); !strings.Contains(e, "At most this many papers") {
		t.Errorf("the problem above the field: %q", e)
	}
	b.ElementScreenshot(ctx, t, "settings-budget-refused-390", "#budget")
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// tabToSelector is tabTo for an element without an id.
func tabToSelector(ctx context.Context, t *testing.T, sel string) {
	t.Helper()
	for range 30 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		on, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		if on {
			return
		}
	}
	t.Fatalf("30 Tabs did not reach %s", sel)
}
