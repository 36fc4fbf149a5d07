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

// choose sets a select's value as a person would, firing its change event.
func choose(ctx context.Context, sel, value string) error {
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event('change', {bubbles: true})); return s.value === %q; })()`,
		sel, value, value)))
	return err
}

func visible(ctx context.Context, t *testing.T, sel string) bool {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.offsetParent !== null; })()`, sel)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func text(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// TestChannelsOnTheSettingsPageInABrowser: in Chromium, the add form shows
// the fields of the chosen type; a refused URL comes back with the reason
// next to the form and the value kept; a Discord and a webhook channel are
// added (the webhook's secret shown once, on a page that a reload does not
// submit again, nor does a reload of its rotation's), a test event's delivery appears
// in the list and in the deliveries table, a channel is disabled and one
// deleted — all stored, as the JSON API shows.
func TestChannelsOnTheSettingsPageInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	discord := newReceiver(t)
	hook := newReceiver(t)
	tok := testapp.Token(t, "browser-pusher", "pusher@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", tok, map[string]any{"label": "Josiah Carberry"})
	list := func() channelList {
		var l channelList
		c.Do("GET", "/v1/me/channels", tok, nil).JSON(t, &l)
		return l
	}

	// A sign-in link opened directly asks first (login CSRF); the button
	// signs in.
	browserSignIn(ctx, t, a, tok, "/settings/channels", `#channels`)
	// The script shows the chosen type's fields only.
	if !visible(ctx, t, `#channel-url`) || visible(ctx, t, `#channel-homeserver`) {
		t.Error("webhook chosen: the URL field should show, the Matrix fields not")
	}
	if err := choose(ctx, `#channel-type`, "matrix"); err != nil {
		t.Fatal(err)
	}
	if visible(ctx, t, `#channel-url`) || !visible(ctx, t, `#channel-homeserver`) || !visible(ctx, t, `#channel-token`) {
		t.Error("matrix chosen: the Matrix fields should show, the URL not")
	}

	// A refused URL: the reason next to the form, the value kept.
	if err := choose(ctx, `#channel-type`, "discord"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(`#channel-url`, "https://10.0.0.8/api/webhooks/1/x")); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#add-channel`); err != nil {
		t.Fatal(err)
	}
	if msg := text(ctx, t, `#channel-add-error`); !strings.HasPrefix(msg, "URL: ") {
		t.Errorf("error next to the form: %q", msg)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(`#channel-url`)); v != "https://10.0.0.8/api/webhooks/1/x" {
		t.Errorf("the URL field holds %q after the error", v)
	}
	if typ, _ := chromedp.Run(ctx, chromedp.Value(`#channel-type`)); typ != "discord" || !visible(ctx, t, `#channel-url`) {
		t.Errorf("the type after the error: %q", typ)
	}
	b.ElementScreenshot(ctx, t, "settings-channels-error", `#channel-add`)

	// Discord, daily.
	if err := chromedp.Do(ctx, chromedp.SetValue(`#channel-url`, discord.URL+"/api/webhooks/1/x")); err != nil {
		t.Fatal(err)
	}
	if err := choose(ctx, `#channel-mode`, "daily"); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#add-channel`); err != nil {
		t.Fatal(err)
	}
	if f := text(ctx, t, `p.flash`); f != "Channel added." {
		t.Errorf("flash %q", f)
	}
	// A webhook for cs.LG only: its secret is shown once.
	if err := choose(ctx, `#channel-type`, "webhook"); err != nil {
		t.Fatal(err)
	}
	// Chosen follows opens the collapsed list (the script); cs.LG in it.
	if err := chromedp.Do(ctx, chromedp.SetValue(`#channel-url`, hook.URL+"/hook"),
		chromedp.Click(`#channel-add input[name="follows_scope"][value="chosen"]`),
		chromedp.Click(`#channel-add input[name="follow"][value="category/cs.LG"]`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, `#add-channel`); err != nil {
		t.Fatal(err)
	}
	secret, _ := chromedp.Run(ctx, chromedp.Value(`#secret-value`))
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret shown: %q", secret)
	}
	b.Screenshot(ctx, t, "settings-channels-secret")
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.Contains(loc, "/settings/channels/secret/ffr_") {
		t.Fatalf("the secret is not on its one-time page: %q %v", loc, err)
	}
	// Reloading the page neither adds a second channel nor shows the
	// secret again.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#channels`)); err != nil {
		t.Fatal(err)
	}
	if main := text(ctx, t, `main`); strings.Contains(main, "whsec_") || !strings.Contains(text(ctx, t, `p.flash`), "already shown") {
		t.Errorf("after a reload of the secret page: flash %q, secret shown again: %v", text(ctx, t, `p.flash`), strings.Contains(main, "whsec_"))
	}
	l := list()
	if len(l.Channels) != 2 || l.Channels[0].Type != "discord" || l.Channels[0].Mode != "daily" ||
		l.Channels[1].Type != "webhook" || len(l.Channels[1].Follows) != 1 || l.Channels[1].Follows[0].ID != "cs.LG" {
		t.Fatalf("stored: %+v", l)
	}
	dID, hID := l.Channels[0].ID, l.Channels[1].ID
	hookLi := fmt.Sprintf(`li[data-channel="%d"]`, hID)
	discordLi := fmt.Sprintf(`li[data-channel="%d"]`, dID)

	// Rotate: the new secret on its own one-time page; a reload rotates
	// nothing.
	if err := submit(ctx, hookLi+` button.rotate`); err != nil {
		t.Fatal(err)
	}
	rotated, _ := chromedp.Run(ctx, chromedp.Value(`#secret-value`))
	if !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("rotated secret shown: %q", rotated)
	}
	until := list().Channels[1].RotatingUntil
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#channels`)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text(ctx, t, `main`), "whsec_") || list().Channels[1].RotatingUntil != until {
		t.Errorf("a reload of the rotation's page showed the secret again or rotated again")
	}

	// A test event: the delivery shows on the page after a reload.
	if err := submit(ctx, hookLi+` button.test`); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text(ctx, t, `main`), "whsec_") {
		t.Error("the secret is still shown after another action")
	}
	if !testwait.Until(15*time.Second, func() bool {
		if strings.Contains(text(ctx, t, hookLi+` p.last`), "delivered") {
			return true
		}
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#channels`)); err != nil {
			t.Fatal(err)
		}
		return false
	}) {
		t.Fatalf("no delivery on the page: %q", text(ctx, t, hookLi+` p.last`))
	}
	if err := chromedp.Do(ctx, chromedp.Click(hookLi+` details.deliveries summary`), chromedp.WaitVisible(hookLi+` details.deliveries table`)); err != nil {
		t.Fatal(err)
	}
	if row := text(ctx, t, hookLi+` details.deliveries tbody tr`); !strings.Contains(row, "channel.test") || !strings.Contains(row, "HTTP 200") {
		t.Errorf("deliveries row %q", row)
	}
	if len(hook.got()) != 1 {
		t.Errorf("the receiver got %d requests", len(hook.got()))
	}

	// Disable the Discord channel.
	if err := chromedp.Do(ctx, chromedp.Click(discordLi+` details.channel-settings summary`), chromedp.Click(discordLi+` input[name="enabled"]`)); err != nil {
		t.Fatal(err)
	}
	if err := submit(ctx, discordLi+` button.save`); err != nil {
		t.Fatal(err)
	}
	if l := list(); l.Channels[0].Enabled || !strings.Contains(text(ctx, t, discordLi+` .channel-head`), "disabled") {
		t.Errorf("not disabled: %+v", l.Channels[0])
	}
	b.Screenshot(ctx, t, "settings-channels")

	// Delete it: two steps, the button shown only once "Delete…" is
	// opened, so one tap deletes nothing.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+discordLi+` button.delete').checkVisibility()`))
	if err != nil {
		t.Fatal(err)
	}
	if shown {
		t.Error("the delete button shows before Delete… is opened")
	}
	if err := chromedp.Do(ctx, chromedp.Click(discordLi+` details.confirm-delete summary`)); err != nil {
		t.Fatal(err)
	}
	if s := text(ctx, t, discordLi+` details.confirm-delete p`); !strings.Contains(s, "cannot be undone") {
		t.Errorf("the confirmation says %q", s)
	}
	if err := submit(ctx, discordLi+` button.delete`); err != nil {
		t.Fatal(err)
	}
	if l := list(); len(l.Channels) != 1 || l.Channels[0].ID != hID {
		t.Errorf("after delete: %+v", l)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

// TestChannelAfterPauseInABrowser: in Chromium at 390 px, a channel's
// "After a pause" select is labelled (its accessible label is the
// visible one), within the screen, and reached with the keyboard (Tab to
// the form's summary, Space opens it, Tab to the select); choosing "skip"
// and saving with Enter stores it, as the JSON API shows.
func TestChannelAfterPauseInABrowser(t *testing.T) {
	t.Parallel()
	ctx, b := browser.Start(t)
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	rc := newReceiver(t)
	tok := testapp.Token(t, "browser-pauser", "bp@example.org")
	var ch struct {
		ID         int64  `json:"id"`
		AfterPause string `json:"after_pause"`
	}
	if r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": rc.URL}); r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &ch)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	browserSignIn(ctx, t, a, tok, "/settings/channels", "#channels")
	id := fmt.Sprintf("after-pause-%d", ch.ID)
	tabToSelector(ctx, t, fmt.Sprintf(`li[data-channel="%d"] details.channel-settings > summary`, ch.ID))
	if err := chromedp.Do(ctx, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	tabTo(ctx, t, id)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Label, Value string
		Right        float64
		Width        int
	}](fmt.Sprintf(`(() => { const s = document.getElementById(%q); return {Label: s.labels.length === 1 ? s.labels[0].textContent : '', Value: s.value,
		Right: s.getBoundingClientRect().right, Width: innerWidth}; })()`, id)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Label != "After a pause" || got.Value != "catch_up" || got.Right > float64(got.Width) {
		t.Errorf("the after-pause select: %+v", got)
	}
	if !visible(ctx, t, "#"+id) {
		t.Errorf("#%s is not visible once its form is open", id)
	}
	fitsTheScreen(ctx, t, 390)
	b.ElementScreenshot(ctx, t, "settings-channel-after-pause-390", fmt.Sprintf(`li[data-channel="%d"]`, ch.ID))
	if err := choose(ctx, "#"+id, "skip"); err != nil {
		t.Fatal(err)
	}
	tabToSelector(ctx, t, fmt.Sprintf(`li[data-channel="%d"] button.save`, ch.ID))
	pressTo(ctx, t, "\r", "p.flash")
	waitFor(t, "after_pause skip stored", func() bool {
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d", ch.ID), tok, nil).JSON(t, &ch)
		return ch.AfterPause == "skip"
	})
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}
