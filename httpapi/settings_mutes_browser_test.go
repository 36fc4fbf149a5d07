package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"followfeed/internal/browser"
	"followfeed/internal/testapp"
)

// TestMutesOnTheSettingsPageInABrowser: in Chromium, without any script
// of the section's own, a researcher is muted for every follow, a search
// that does not parse comes back with the parser's position, a category's
// cross-lists are muted in one follow, and a mute is removed — each
// stored, as the JSON API shows, and still so after a reload.
func TestMutesOnTheSettingsPageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "browser-muter", "muter@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	list := func() []muteOut {
		var l struct{ Mutes []muteOut }
		c.Do("GET", "/v1/me/mutes", tok, nil).JSON(t, &l)
		return l.Mutes
	}
	browserSignIn(ctx, t, a, tok, "/settings/follows", `#mutes`)
	if !visible(ctx, t, `#mutes-none`) {
		t.Error("no 'Nothing muted' before the first mute")
	}

	// A researcher, in every follow.
	if err := choose(ctx, `#mute-what`, "researcher"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(`#mute-value`, "openalex:A5023888391")); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#mute-add button[type="submit"]`); err != nil {
		t.Fatal(err)
	}
	if f := text(ctx, t, `p.flash`); !strings.HasPrefix(f, "Muted:") {
		t.Errorf("flash after muting: %q", f)
	}
	if ms := list(); len(ms) != 1 || ms[0].Researcher != "openalex:A5023888391" || ms[0].Follow != nil {
		t.Fatalf("after the researcher mute: %+v", ms)
	}

	// Words that do not parse: the problem, with its position.
	if err := choose(ctx, `#mute-what`, "words"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(`#mute-value`, `abs:"dark matter`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#mute-add button[type="submit"]`); err != nil {
		t.Fatal(err)
	}
	if f := text(ctx, t, `p.flash`); !strings.Contains(f, "Not saved") || !strings.Contains(f, "Words: the query cannot be used: at character 5") {
		t.Errorf("flash after a search that does not parse: %q", f)
	}
	// The refused form keeps what was typed, says the problem at its top
	// and holds the focus (settings.js).
	typed, _ := chromedp.Run(ctx, chromedp.Value(`#mute-value`))
	what, _ := chromedp.Run(ctx, chromedp.Value(`#mute-what`))
	focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	if typed != `abs:"dark matter` || what != "words" || focused != "mute-value" {
		t.Errorf("the refused form after its page: value %q, what %q, focus on %q", typed, what, focused)
	}
	if e := text(ctx, t, `#mute-add .form-error`); !strings.Contains(e, "at character 5") {
		t.Errorf("the refused form's own message: %q", e)
	}
	b.ElementScreenshot(ctx, t, "settings-mute-refused", `#mute-add`)

	// cs.LG's cross-lists, in the cs.LG follow only.
	if err := choose(ctx, `#mute-what`, "cross-lists"); err != nil {
		t.Fatal(err)
	}
	if err := choose(ctx, `#mute-follow`, "category/cs.LG"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(`#mute-value`, "cs.LG")); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#mute-add button[type="submit"]`); err != nil {
		t.Fatal(err)
	}
	ms := list()
	if len(ms) != 2 || ms[1].Category != "cs.LG" || ms[1].Follow == nil || ms[1].Follow.ID != "cs.LG" {
		t.Fatalf("after the cross-list mute: %+v", ms)
	}
	if n := text(ctx, t, `#mutes-h`); n != "Mutes (2 of 100)" {
		t.Errorf("heading %q", n)
	}
	b.ElementScreenshot(ctx, t, "settings-mutes", `#mutes`)

	// Remove the researcher mute.
	if err := submit(ctx, fmt.Sprintf(`li[data-mute="%d"] button.unmute`, ms[0].ID)); err != nil {
		t.Fatal(err)
	}
	if f := text(ctx, t, `p.flash`); f != "Mute removed." {
		t.Errorf("flash after removing: %q", f)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#mutes`)); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 1 || got[0].ID != ms[1].ID {
		t.Errorf("after the removal: %+v", got)
	}
	if n := text(ctx, t, `#mutes-h`); n != "Mutes (1 of 100)" || !strings.Contains(text(ctx, t, `#mutes .mute-list`), "cross-lists to cs.LG") {
		t.Errorf("after a reload: heading %q", n)
	}
}
