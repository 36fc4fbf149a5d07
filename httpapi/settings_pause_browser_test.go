package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
)

// TestPauseOnTheSettingsPageInABrowser: in Chromium, the email page's
// pause card sets a pause (seen after a reload, and through the API),
// saves the digest's days and snoozes a follow, with plain CSRF-protected
// forms; a pause ending before it starts comes back naming the field; the
// card fits a 390 px screen.
func TestPauseOnTheSettingsPageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "browser-away", "away@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	day := func(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format("2006-01-02") }
	browserSignIn(ctx, t, a, tok, "/settings/email", `#pause`)
	// A pause ending before it starts: not saved, the field named.
	if err := choose(ctx, `#pause-from`, day(3)); err != nil {
		t.Fatal(err)
	}
	if err := choose(ctx, `#pause-until`, day(2)); err != nil {
		t.Fatal(err)
	}
	// The picker offers no day before the one after From (settings.js):
	// the browser holds the form back. Sent anyway (a browser without
	// the script, a form kept from before), the server refuses it.
	held, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const u = document.getElementById('pause-until'); return u.min + ' ' + u.validity.rangeUnderflow; })()`))
	if err != nil || held != day(4)+" true" {
		t.Errorf("Back on's picker after From %s: min and underflow %q (%v), want %q", day(3), held, err, day(4)+" true")
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('pause-form').noValidate = true`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-pause`); err != nil {
		t.Fatal(err)
	}
	// In the form's labels, not the API's paths (pause.until, pause.from).
	if msg := text(ctx, t, `p.flash`); !strings.Contains(msg, "Back on: must be after “From” (") {
		t.Errorf("flash %q, want it to name the fields by their labels, Back on and From", msg)
	}
	// The refused form has what was typed, and the field named the focus
	// (settings.js).
	refusedIn := func(what, wantFocus string, want map[string]string) {
		t.Helper()
		for sel, v := range want {
			if got, _ := chromedp.Run(ctx, chromedp.Value(sel)); got != v {
				t.Errorf("%s refused: %s holds %q, want %q", what, sel, got, v)
			}
		}
		if f, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); f != wantFocus {
			t.Errorf("%s refused: the focus is on %q, want %q", what, f, wantFocus)
		}
	}
	refusedIn("the pause", "pause-until", map[string]string{`#pause-from`: day(3), `#pause-until`: day(2)})
	if err := choose(ctx, `#pause-from`, day(1)); err != nil {
		t.Fatal(err)
	}
	if err := choose(ctx, `#pause-until`, day(6)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-pause`); err != nil {
		t.Fatal(err)
	}
	// After a reload the card shows the pause.
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings/email"), chromedp.WaitVisible(`#pause`)); err != nil {
		t.Fatal(err)
	}
	from, _ := chromedp.Run(ctx, chromedp.Value(`#pause-from`))
	until, _ := chromedp.Run(ctx, chromedp.Value(`#pause-until`))
	if from != day(1) || until != day(6) || !strings.Contains(text(ctx, t, `#pause-state`), "back on "+day(6)) {
		t.Errorf("after a reload: from %q until %q, state %q", from, until, text(ctx, t, `#pause-state`))
	}
	b.Screenshot(ctx, t, "settings-pause")
	// At 390 px the card fits the screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(a.URL+"/settings/email#pause"), chromedp.WaitVisible(`#pause`)); err != nil {
		t.Fatal(err)
	}
	fitsTheScreen(ctx, t, 390)
	b.ElementScreenshot(ctx, t, "settings-pause-390", "#pause")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	var me struct {
		Pause *struct {
			From  string  `json:"from"`
			Until *string `json:"until"`
		} `json:"pause"`
		Digest struct {
			Weekdays []string `json:"weekdays"`
		} `json:"digest"`
	}
	c.Do("GET", "/v1/me", tok, nil).JSON(t, &me)
	if me.Pause == nil || me.Pause.From != day(1) || me.Pause.Until == nil || *me.Pause.Until != day(6) {
		t.Fatalf("the API's pause: %+v", me.Pause)
	}
	// No day at all: refused, and the boxes as the reader left them, in
	// their own form (not the pause's, which posts to the same path).
	checked := func() string {
		l, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#weekdays-form input[name="day"]:checked')].map(b => b.value).join(",")`))
		return l
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#weekdays-form input[name="day"]').forEach(b => { b.checked = false; })`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#save-weekdays`); err != nil {
		t.Fatal(err)
	}
	if got := checked(); got != "" || text(ctx, t, `#weekdays-form .form-error`) == "" {
		t.Errorf("weekdays refused: the form shows %q checked, its message %q", got, text(ctx, t, `#weekdays-form .form-error`))
	}
	refusedIn("weekdays", "", map[string]string{`#pause-until`: day(6)})
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings/email"), chromedp.WaitVisible(`#pause`)); err != nil {
		t.Fatal(err)
	}
	// Weekdays only.
	for _, d := range []string{"sat", "sun"} {
		if err := chromedp.Do(ctx, chromedp.Click(`#weekdays-form input[value="`+d+`"]`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := submit(ctx, `#save-weekdays`); err != nil {
		t.Fatal(err)
	}
	c.Do("GET", "/v1/me", tok, nil).JSON(t, &me)
	if strings.Join(me.Digest.Weekdays, ",") != "mon,tue,wed,thu,fri" {
		t.Errorf("weekdays %v", me.Digest.Weekdays)
	}
	// Snooze cs.LG: the list is collapsed while nothing is snoozed. Today
	// is refused: the date comes back in cs.LG's row (opened), not in the
	// pause's form.
	snoozeDate := `li[data-snooze="category/cs.LG"] input[type="date"]`
	if err := chromedp.Do(ctx, chromedp.Click(`#snoozes > summary`)); err != nil {
		t.Fatal(err)
	}
	if err := choose(ctx, snoozeDate, day(0)); err != nil {
		t.Fatal(err)
	}
	// The picker's first day is tomorrow; sent anyway, the server
	// refuses today.
	held, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const u = document.querySelector('`+snoozeDate+`'); u.form.noValidate = true; return u.min + ' ' + u.validity.rangeUnderflow; })()`))
	if err != nil || held != day(1)+" true" {
		t.Errorf("the snooze's picker: min and underflow %q (%v), want %q", held, err, day(1)+" true")
	}
	if err := submit(ctx, `li[data-snooze="category/cs.LG"] button`); err != nil {
		t.Fatal(err)
	}
	snoozeID, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('li[data-snooze="category/cs.LG"] input[type="date"]').id`))
	refusedIn("the snooze", snoozeID, map[string]string{snoozeDate: day(0), `#pause-until`: day(6)})
	if err := choose(ctx, `li[data-snooze="category/cs.LG"] input[type="date"]`, day(4)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `li[data-snooze="category/cs.LG"] button`); err != nil {
		t.Fatal(err)
	}
	if r := c.Do("GET", "/v1/me/follows", tok, nil); !strings.Contains(string(r.Body), `"snoozed_until":"`+day(4)+`"`) {
		t.Errorf("the snooze: %s", r.Body)
	}
	// End the pause (not begun: it is removed).
	if err := submit(ctx, `#end-pause`); err != nil {
		t.Fatal(err)
	}
	c.Do("GET", "/v1/me", tok, nil).JSON(t, &me)
	if me.Pause != nil {
		t.Errorf("the pause outlived its removal: %+v", me.Pause)
	}
}
