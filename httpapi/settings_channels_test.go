package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

var secretOnPage = regexp.MustCompile(`id="secret-value" type="text" readonly value="(whsec_[^"]+)"`)

// secretRedirect is the one-time secret page a form's 303 points to.
func secretRedirect(t *testing.T, resp *http.Response) string {
	t.Helper()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !secretPageURL.MatchString(loc) {
		t.Fatalf("want a 303 to a secret page, got %d %q", resp.StatusCode, loc)
	}
	return strings.TrimSuffix(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+loc, "#new-secret")
}

var secretPageURL = regexp.MustCompile(`^/settings/channels/secret/ffr_[A-Za-z0-9_-]{32}#new-secret$`)

type channelList struct {
	Channels []struct {
		ID      int64  `json:"id"`
		Type    string `json:"type"`
		URL     string `json:"url"`
		Mode    string `json:"mode"`
		Enabled bool   `json:"enabled"`
		Follows []struct {
			Kind, ID string
		} `json:"follows"`
		RotatingUntil string `json:"rotating_until"`
	} `json:"channels"`
}

// TestSettingsPageManagesChannels drives the channels section with plain
// forms (no JavaScript): add with validation errors next to the form
// (entered values kept and escaped, the Matrix token never echoed), a
// webhook's secret shown once, edit mode/follows/enabled, a test event and
// its delivery result on the page (the receiver's response escaped),
// rotation, another user's channel, delete. Every change is checked
// through the JSON API.
func TestSettingsPageManagesChannels(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0", "RATE_LIMIT_PER_IP", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	rc := newReceiver(t, status(200, `<img src=x onerror=alert(1)>`))
	tok := testapp.Token(t, "pusher", "pusher@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", tok, map[string]any{"label": "Josiah Carberry"})
	b, _, csrf := signIn(t, a, tok)
	page, _ := settingsPage(t, a, b, "/settings/channels")
	if !strings.Contains(page, `id="channels"`) || !strings.Contains(page, "Push channels (0 of 10)") || !strings.Contains(page, `id="channel-add"`) {
		t.Fatalf("no channels section on the settings page")
	}
	list := func() channelList {
		var l channelList
		c.Do("GET", "/v1/me/channels", tok, nil).JSON(t, &l)
		return l
	}

	// Without the CSRF token nothing is created.
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/channels", url.Values{"type": {"webhook"}, "url": {rc.URL}}); resp.StatusCode != 403 {
		t.Errorf("add without CSRF: %d", resp.StatusCode)
	}

	t.Log("hostile: a channel URL pointing inside is refused on the settings page with the reason next to the form, escaped")
	hostile := `https://10.0.0.8/"><script>alert(1)</script>`
	resp, page := testapp.Form(t, b, "POST", a.URL+"/settings/channels", url.Values{"csrf": {csrf}, "type": {"webhook"}, "url": {hostile}, "mode": {"instant"}})
	if resp.StatusCode != 422 || !strings.Contains(page, `id="channel-add-error"`) || !strings.Contains(page, "URL: ") {
		t.Fatalf("internal URL: %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, `value="https://10.0.0.8/&#34;&gt;&lt;script&gt;`) {
		t.Errorf("the entered URL is not kept escaped in the form")
	}
	if !strings.Contains(page, `aria-invalid="true" aria-describedby="channel-add-error"`) {
		t.Errorf("the URL field is not marked invalid")
	}
	for _, tc := range []struct {
		form  url.Values
		field string
	}{
		{url.Values{"type": {"slack"}, "url": {"https://example.org/services/T/B/x"}}, "URL: must be a Slack incoming webhook URL"},
		{url.Values{"type": {"discord"}, "url": {"https://discord.com/not-a-webhook"}}, "URL: must be a Discord webhook URL"},
		{url.Values{"type": {"matrix"}, "homeserver": {"https://matrix.org"}, "room_id": {"!room:matrix.org"}, "access_token": {"with space"}}, "Access token: "},
		{url.Values{"type": {"matrix"}, "homeserver": {"https://matrix.org"}, "room_id": {"#alias:matrix.org"}, "access_token": {"syt_x"}}, "Room id: "},
		{url.Values{"type": {"pager"}, "url": {"https://example.org/h"}}, "Type: "},
		{url.Values{"type": {"webhook"}, "url": {"https://example.org/h"}, "mode": {"hourly"}}, "When: "},
		{url.Values{"type": {"webhook"}, "url": {"https://example.org/h"}, "follow": {"planet/mars"}}, "kind"},
		{url.Values{"type": {"webhook"}, "url": {"https://example.org/h"}, "follow": {"category/astro-ph.GA"}}, "you do not follow"},
	} {
		tc.form.Set("csrf", csrf)
		resp, page := testapp.Form(t, b, "POST", a.URL+"/settings/channels", tc.form)
		if resp.StatusCode != 422 || !strings.Contains(page, tc.field) {
			t.Errorf("%v: %d, want 422 with %q: %s", tc.form, resp.StatusCode, tc.field, regexp.MustCompile(`id="channel-add-error"[^>]*>[^<]*`).FindString(page))
		}
		if tok := tc.form.Get("access_token"); tok != "" && strings.Contains(page, tok) {
			t.Errorf("the Matrix access token was echoed into the page")
		}
	}
	if n := len(list().Channels); n != 0 {
		t.Fatalf("rejected forms created %d channels", n)
	}

	// A webhook for one follow: a redirect to a one-time page that shows
	// the secret; reloading it shows "already shown" and adds nothing.
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/channels", url.Values{"csrf": {csrf}, "type": {"webhook"},
		"url": {rc.URL + "/hook"}, "mode": {"instant"}, "follow": {"category/cs.LG"}, "homeserver": {"ignored for a webhook"}})
	secretPage := secretRedirect(t, resp)
	resp, page = testapp.Form(t, b, "GET", secretPage, nil)
	m := secretOnPage.FindStringSubmatch(page)
	if resp.StatusCode != 200 || m == nil || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Referrer-Policy") != "no-referrer" ||
		!strings.Contains(page, "Webhook channel added. Copy its signing secret now") {
		t.Fatalf("the secret page: %d, secret shown: %v, headers %v", resp.StatusCode, m != nil, resp.Header)
	}
	for range 2 { // reload, twice
		resp, page = testapp.Form(t, b, "GET", secretPage, nil)
		if resp.StatusCode != 404 || strings.Contains(page, "whsec_") || !strings.Contains(page, "already shown") {
			t.Errorf("the secret page reloaded: %d, secret shown again: %v", resp.StatusCode, strings.Contains(page, "whsec_"))
		}
	}
	l := list()
	if len(l.Channels) != 1 || l.Channels[0].Type != "webhook" || l.Channels[0].URL != rc.URL+"/hook" ||
		len(l.Channels[0].Follows) != 1 || l.Channels[0].Follows[0].ID != "cs.LG" {
		t.Fatalf("stored: %+v", l)
	}
	id := l.Channels[0].ID
	chPath := fmt.Sprintf("%s/settings/channels/%d", a.URL, id)
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/channels", nil)
	if strings.Contains(page, m[1]) || strings.Contains(page, "whsec_") {
		t.Error("the secret is shown again after a reload")
	}
	if !strings.Contains(page, "Carries: cs.LG — Machine Learning") || !strings.Contains(page, "No deliveries yet.") {
		t.Errorf("listed channel lacks its follows or delivery state")
	}

	// A Matrix channel: added with a redirect; the token never appears.
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/channels", url.Values{"csrf": {csrf}, "type": {"matrix"},
		"homeserver": {"https://matrix.example.org"}, "room_id": {"!abc:example.org"}, "access_token": {"syt_topsecret"}, "mode": {"weekly"}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/channels?done=channel-added" {
		t.Fatalf("add matrix: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/channels?done=channel-added", nil)
	if !strings.Contains(page, "Channel added.") || !strings.Contains(page, "!abc:example.org on https://matrix.example.org") || strings.Contains(page, "syt_topsecret") {
		t.Errorf("matrix channel on the page (token must not show)")
	}

	// Edit: daily, every follow (none checked), disabled.
	resp, _ = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"save"}, "mode": {"daily"}})
	if resp.StatusCode != 303 {
		t.Fatalf("save: %d", resp.StatusCode)
	}
	if ch := list().Channels[0]; ch.Mode != "daily" || ch.Enabled || ch.Follows != nil {
		t.Errorf("after save: %+v", ch)
	}
	resp, page = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"save"}, "mode": {"monthly"}, "enabled": {"1"}})
	if resp.StatusCode != 422 || !strings.Contains(page, fmt.Sprintf(`id="channel-%d-error"`, id)) || !strings.Contains(page, "When: must be instant, daily or weekly") {
		t.Errorf("bad mode: %d", resp.StatusCode)
	}
	resp, _ = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"save"}, "mode": {"instant"}, "enabled": {"1"},
		"follow": {"researcher/orcid:0000-0002-1825-0097"}})
	if ch := list().Channels[0]; resp.StatusCode != 303 || ch.Mode != "instant" || !ch.Enabled || len(ch.Follows) != 1 || ch.Follows[0].Kind != "researcher" {
		t.Errorf("save again: %d %+v", resp.StatusCode, ch)
	}

	// Test event: its delivery shows on the page, the receiver's answer escaped.
	resp, _ = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"test"}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/channels?done=channel-test" {
		t.Fatalf("test: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	waitFor(t, "the test event on the page", func() bool {
		_, page = testapp.Form(t, b, "GET", a.URL+"/settings/channels", nil)
		return strings.Contains(page, "Last delivery:")
	})
	t.Log("hostile: a receiver's response body is shown escaped on the settings page")
	if !strings.Contains(page, `delivered</span> (HTTP 200: &lt;img src=x onerror=alert(1)&gt;)`) || strings.Contains(page, "<img src=x") ||
		!strings.Contains(page, "channel.test, 1 paper (delivered)") {
		t.Errorf("delivery on the page:\n%s", page)
	}
	if got := rc.got(); len(got) != 1 || !strings.Contains(string(got[0].body), `"channel.test"`) {
		t.Errorf("receiver got %d requests", len(got))
	}

	// Tests are limited per channel: the sixth in ten minutes comes back
	// as the page with the reason beside the channel (429, Retry-After).
	for i := 2; i <= 5; i++ {
		if resp, _ := testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"test"}}); resp.StatusCode != 303 {
			t.Fatalf("test %d: %d", i, resp.StatusCode)
		}
	}
	resp, page = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"test"}})
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(page, fmt.Sprintf(`id="channel-%d-error"`, id)) ||
		!strings.Contains(page, "5 test events in the last 10 minutes") {
		t.Errorf("a sixth test: %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// Rotate: the new secret once, the old one still signing; reloading
	// rotates nothing. Another user cannot open (or use up) the page.
	resp, _ = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"rotate"}})
	secretPage = secretRedirect(t, resp)
	b2, _, csrf2 := signIn(t, a, testapp.Token(t, "intruder", ""))
	if resp, page := testapp.Form(t, b2, "GET", secretPage, nil); resp.StatusCode != 404 || strings.Contains(page, "whsec_") {
		t.Errorf("another user opened the secret page: %d", resp.StatusCode)
	}
	if resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", secretPage, nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("the secret page signed out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, page = testapp.Form(t, b, "GET", secretPage, nil)
	m2 := secretOnPage.FindStringSubmatch(page)
	if resp.StatusCode != 200 || m2 == nil || m2[1] == m[1] || !strings.Contains(page, "keeps signing alongside it for 24 hours") {
		t.Fatalf("rotate: %d", resp.StatusCode)
	}
	ch := list().Channels[0]
	if ch.RotatingUntil == "" {
		t.Error("rotation not stored")
	}
	if resp, page := testapp.Form(t, b, "GET", secretPage, nil); resp.StatusCode != 404 || strings.Contains(page, m2[1]) {
		t.Errorf("the rotated secret's page reloaded: %d", resp.StatusCode)
	}
	if again := list().Channels[0]; again.RotatingUntil != ch.RotatingUntil {
		t.Errorf("reloading rotated again: until %s, then %s", ch.RotatingUntil, again.RotatingUntil)
	}
	for _, bad := range []string{"ffr_nope", "nope", "ffr_" + strings.Repeat("A", 200), "%00"} {
		if resp, _ := testapp.Form(t, b, "GET", a.URL+"/settings/channels/secret/"+bad, nil); resp.StatusCode != 404 {
			t.Errorf("secret page %q: %d", bad, resp.StatusCode)
		}
	}
	matrixPath := fmt.Sprintf("%s/settings/channels/%d", a.URL, list().Channels[1].ID)
	// A conflict is shown beside its form with the API's status (409).
	if resp, page := testapp.Form(t, b, "POST", matrixPath, url.Values{"csrf": {csrf}, "action": {"rotate"}}); resp.StatusCode != 409 ||
		!strings.Contains(page, "only webhook channels") || !strings.Contains(page, fmt.Sprintf(`id="channel-%d-error"`, list().Channels[1].ID)) {
		t.Errorf("rotating a Matrix channel: %d", resp.StatusCode)
	}
	if resp, _ := testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"explode"}}); resp.StatusCode != 422 {
		t.Errorf("unknown action: %d", resp.StatusCode)
	}

	t.Log("hostile: another user cannot touch a channel through the settings forms")
	for _, act := range []string{"delete", "test", "rotate", "save"} {
		if resp, _ := testapp.Form(t, b2, "POST", chPath, url.Values{"csrf": {csrf2}, "action": {act}, "mode": {"daily"}}); resp.StatusCode != 404 {
			t.Errorf("%s another user's channel: %d", act, resp.StatusCode)
		}
	}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/channels/nope", url.Values{"csrf": {csrf}, "action": {"delete"}}); resp.StatusCode != 404 {
		t.Errorf("a bad channel id: %d", resp.StatusCode)
	}

	// Delete.
	resp, _ = testapp.Form(t, b, "POST", chPath, url.Values{"csrf": {csrf}, "action": {"delete"}})
	if resp.StatusCode != 303 || len(list().Channels) != 1 {
		t.Errorf("delete: %d, %d left", resp.StatusCode, len(list().Channels))
	}

	// At the limit (the page was opened below it: another tab added the
	// tenth), the add form's post is the API's 409: the page again, saying
	// so.
	for i := len(list().Channels); i < 10; i++ {
		if r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": fmt.Sprintf("%s/hook%d", rc.URL, i)}); r.Status != 201 {
			t.Fatalf("channel %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	resp, page = testapp.Form(t, b, "POST", a.URL+"/settings/channels", url.Values{"csrf": {csrf}, "type": {"webhook"}, "url": {rc.URL + "/eleventh"}})
	if resp.StatusCode != 409 || !strings.Contains(page, "Not saved — the form below says why.") || !strings.Contains(page, "You have the most channels allowed") {
		t.Errorf("an eleventh channel: %d", resp.StatusCode)
	}
	if n := len(list().Channels); n != 10 {
		t.Errorf("%d channels after the refused eleventh", n)
	}
}

// TestChannelAfterPauseOnTheSettingsPage: each channel's form has a
// labelled "After a pause" select showing the channel's after_pause; the
// form's save stores a new choice (as the JSON API shows), a form without
// the field (an older page) leaves it, and a value that is neither is a
// 422 with the reason next to that channel's form.
func TestChannelAfterPauseOnTheSettingsPage(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0", "RATE_LIMIT_PER_IP", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	rc := newReceiver(t)
	tok := testapp.Token(t, "pauser", "pauser@example.org")
	var ch struct {
		ID         int64  `json:"id"`
		AfterPause string `json:"after_pause"`
	}
	r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": rc.URL})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &ch)
	afterPause := func() string {
		t.Helper()
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d", ch.ID), tok, nil).JSON(t, &ch)
		return ch.AfterPause
	}
	b, _, csrf := signIn(t, a, tok)
	sel := regexp.MustCompile(fmt.Sprintf(`<label for="after-pause-%d">After a pause</label>\s*<select id="after-pause-%d" name="after_pause">(.*?)</select>`, ch.ID, ch.ID))
	selected := func(page string) string {
		t.Helper()
		m := sel.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no labelled after-pause select for channel %d:\n%s", ch.ID, page)
		}
		s := regexp.MustCompile(`<option value="(\w+)" selected>`).FindStringSubmatch(m[1])
		if s == nil || strings.Count(m[1], "<option") != 2 {
			t.Fatalf("the select's options: %s", m[1])
		}
		return s[1]
	}
	page, _ := settingsPage(t, a, b, "/settings/channels")
	if got := selected(page); got != "catch_up" || afterPause() != "catch_up" {
		t.Errorf("a new channel: the page selects %q, the API says %q", got, ch.AfterPause)
	}
	path := fmt.Sprintf("%s/settings/channels/%d", a.URL, ch.ID)
	save := url.Values{"csrf": {csrf}, "action": {"save"}, "mode": {"instant"}, "enabled": {"1"}, "after_pause": {"skip"}}
	if resp, _ := testapp.Form(t, b, "POST", path, save); resp.StatusCode != 303 {
		t.Fatalf("save skip: %d", resp.StatusCode)
	}
	if got := afterPause(); got != "skip" {
		t.Errorf("after saving skip the API says %q", got)
	}
	if page, _ = settingsPage(t, a, b, "/settings/channels"); selected(page) != "skip" {
		t.Errorf("after saving skip the page selects %q", selected(page))
	}
	save.Del("after_pause") // an older page's form
	if resp, _ := testapp.Form(t, b, "POST", path, save); resp.StatusCode != 303 || afterPause() != "skip" {
		t.Errorf("a save without after_pause: %d, after_pause %q", resp.StatusCode, ch.AfterPause)
	}
	save.Set("after_pause", "later")
	resp, page := testapp.Form(t, b, "POST", path, save)
	if resp.StatusCode != 422 || !strings.Contains(page, fmt.Sprintf(`id="channel-%d-error" tabindex="-1" autofocus>After a pause: `, ch.ID)) || afterPause() != "skip" {
		t.Errorf("a bad after_pause: %d, after_pause %q\n%s", resp.StatusCode, ch.AfterPause, page)
	}
}
