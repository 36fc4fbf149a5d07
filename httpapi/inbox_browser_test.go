package httpapi_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
)

// TestInboxPageInABrowser: in Chromium at 1280 and 390 px, the settings
// page links to the inbox, which lists the user's papers with their
// reasons within the screen; a paper's "Mark done" is reached with Tab and
// pressed with Enter, and after a reload the paper shows done and is gone
// from the unread filter (as the API shows); "Mark all read" leaves no
// unread paper.
func TestInboxPageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	pushPaper(t, c, paperLine("2611.00301", "Sparse attention for long documents", "cs.LG"),
		paperLine("2611.00302", "Dense retrieval with a rather long title that has to wrap on a phone screen", "cs.LG"))
	for _, width := range []int64{1280, 390} {
		sub := fmt.Sprintf("inbox-%d", width)
		tok := testapp.Token(t, sub, sub+"@example.org")
		c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(a.URL+"/login?token="+url.QueryEscape(tok)),
			chromedp.Click(`form[action="/login"] button`), chromedp.WaitVisible(`nav.pages a[href="/inbox"]`),
			chromedp.Click(`nav.pages a[href="/inbox"]`), chromedp.WaitVisible(`#inbox`)); err != nil {
			t.Fatal(err)
		}
		main := text(ctx, t, "main")
		for _, want := range []string{"Sparse attention for long documents", "Dense retrieval", "because you follow cs.LG", "Unread", "Mark all read"} {
			if !strings.Contains(main, want) {
				t.Errorf("%d px: the inbox lacks %q:\n%s", width, want, main)
			}
		}
		fitsTheScreen(ctx, t, width)
		// A paper's five buttons take at most two lines, on a phone too.
		lines, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
			const tops = new Set([...document.querySelectorAll('li[data-paper="2611.00302"] .inbox-actions button')].map(b => b.offsetTop));
			return tops.size; })()`))
		if err != nil || lines < 1 || lines > 2 {
			t.Errorf("%d px: a paper's buttons take %d lines (%v)", width, lines, err)
		}
		b.Screenshot(ctx, t, fmt.Sprintf("inbox-%d", width))

		tabToSelector(ctx, t, `li[data-paper="2611.00302"] button.mark-done`)
		pressTo(ctx, t, "\r", "#inbox")
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#inbox`)); err != nil {
			t.Fatal(err)
		}
		if st := text(ctx, t, `#state-2611\.00302`); st != "Done" {
			t.Errorf("%d px: after a reload the paper marked done shows %q", width, st)
		}
		var p inboxPage
		c.Do("GET", "/v1/me/papers?state=done", tok, nil).JSON(t, &p)
		if got := p.ids(); !slices.Equal(got, []string{"2611.00302=done"}) {
			t.Errorf("%d px: the API's done papers: %v", width, got)
		}
		// A feedback button of the paper's one form, sent with Enter to
		// its own action (formaction), pressed after the reload; pressed
		// again, it takes the feedback back.
		more := `li[data-paper="2611.00301"] button.feedback-more`
		for _, want := range []string{"2611.00301=more", ""} {
			tabToSelector(ctx, t, more)
			pressTo(ctx, t, "\r", "#inbox")
			// The flash says what happened (taking it back said "saved").
			if f, wantFlash := text(ctx, t, `p.flash`), map[bool]string{true: "Thanks: “Sparse attention for long documents” is marked “More like this”.", false: "Your feedback on that paper is taken back."}[want != ""]; f != wantFlash {
				t.Errorf("%d px: flash %q after pressing More like this (want %q)", width, f, wantFlash)
			}
			// Pressed, the page offers its undo (with a name that says
			// which paper); taken back, none.
			if undo := visible(ctx, t, `#feedback-undo button`); undo != (want != "") {
				t.Errorf("%d px: an undo shown %v after pressing More like this (want %q)", width, undo, want)
			}
			if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#inbox`)); err != nil {
				t.Fatal(err)
			}
			attr, err := chromedp.Run(ctx, chromedp.AttributeValue(more, "aria-pressed"))
			if err != nil {
				t.Fatal(err)
			}
			pressed := attr.Value
			if got := c.Do("GET", "/v1/me/feedback", tok, nil); !strings.Contains(string(got.Body), `"value":"more"`) != (want == "") || pressed != fmt.Sprint(want != "") {
				t.Errorf("%d px: after pressing More like this (want %q): aria-pressed %q, the API's feedback %s", width, want, pressed, got.Body)
			}
		}
		// The unread filter, chosen with the keyboard and sent with Enter.
		if err := chromedp.Do(ctx, chromedp.Focus(`#inbox-state`), chromedp.SetValue(`#inbox-state`, "unread")); err != nil {
			t.Fatal(err)
		}
		tabToSelector(ctx, t, `#inbox-show`)
		pressTo(ctx, t, "\r", "#inbox")
		main = text(ctx, t, "#inbox")
		if strings.Contains(main, "Dense retrieval") || !strings.Contains(main, "Sparse attention") {
			t.Errorf("%d px: the unread filter:\n%s", width, main)
		}
		fitsTheScreen(ctx, t, width)
		b.Screenshot(ctx, t, fmt.Sprintf("inbox-unread-%d", width))
		tabToSelector(ctx, t, `#mark-all-read`)
		pressTo(ctx, t, "\r", "#inbox")
		if err := chromedp.Do(ctx, chromedp.WaitVisible(`#inbox-none`)); err != nil {
			t.Fatal(err)
		}
		c.Do("GET", "/v1/me/papers?state=read", tok, nil).JSON(t, &p)
		if got := p.ids(); !slices.Equal(got, []string{"2611.00301=read"}) {
			t.Errorf("%d px: after mark all read the API's read papers: %v", width, got)
		}
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestInboxLessOffersNotFrom: in Chromium at 390 px, a paper marked "Less
// like this" in the inbox offers "Not from …" for its authors with an id
// but the one the user follows, as the feedback link's page does; pressed
// (with Enter), it mutes that author for every follow (as the API's list
// shows) and the paper leaves the inbox.
func TestInboxLessOffersNotFrom(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	pushPaper(t, c, `{"arxiv_id": "2611.00303", "title": "Attention from two authors", "authors": [{"name": "Grace Hopper", "ids": ["openalex:A5000000001"]}, {"name": "Ann Followed", "ids": ["openalex:A5000000002"]}, {"name": "Nobody Known"}], "abstract": "An abstract.", "categories": ["cs.LG"], "primary_category": "cs.LG"}`)
	tok := testapp.Token(t, "inbox-not-from", "nf@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5000000002", tok, nil)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 900), chromedp.Navigate(a.URL+"/login?token="+url.QueryEscape(tok)),
		chromedp.Click(`form[action="/login"] button`), chromedp.WaitVisible(`#inbox`)); err != nil {
		t.Fatal(err)
	}
	row := `li[data-paper="2611.00303"]`
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('form.inbox-mute').length`)); n != 0 {
		t.Errorf("%d 'Not from' forms before any feedback", n)
	}
	tabToSelector(ctx, t, row+` button.feedback-less`)
	pressTo(ctx, t, "\r", "#inbox")
	offered, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('li[data-paper="2611.00303"] form.inbox-mute button')].map(b => b.textContent + '=' + b.value)`))
	if !slices.Equal(offered, []string{"Grace Hopper=openalex:A5000000001"}) {
		t.Fatalf("'Not from' offers after Less like this: %q (want only the unfollowed author with an id)", offered)
	}
	fitsTheScreen(ctx, t, 390)
	b.Screenshot(ctx, t, "inbox-not-from-390")
	tabToSelector(ctx, t, row+` form.inbox-mute button`)
	pressTo(ctx, t, "\r", "#inbox")
	if f := text(ctx, t, `p.flash`); !strings.HasPrefix(f, "Muted:") {
		t.Errorf("flash after Not from: %q", f)
	}
	var l struct{ Mutes []muteOut }
	c.Do("GET", "/v1/me/mutes", tok, nil).JSON(t, &l)
	if len(l.Mutes) != 1 || l.Mutes[0].Researcher != "openalex:A5000000001" || l.Mutes[0].Follow != nil {
		t.Errorf("the mutes after Not from: %+v", l.Mutes)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('li[data-paper="2611.00303"]').length`)); n != 0 {
		t.Error("the muted author's paper is still in the inbox")
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
