package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"followfeed/internal/testapp"
)

// TestPauseAndQuietDaysThroughTheAPI: PATCH /v1/me sets a pause and quiet
// days, GET /v1/me and the export show them, {"pause": null} ends it,
// {"digest": {"weekdays": null}} resets the quiet days to every day, and
// bad input is a 422 naming the field.
func TestPauseAndQuietDaysThroughTheAPI(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	tok := testapp.Token(t, "away", "away@example.org")
	day := func(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format("2006-01-02") }
	r := c.Do("PATCH", "/v1/me", tok, map[string]any{"timezone": "UTC",
		"pause": map[string]any{"from": day(2), "until": day(7)}, "digest": map[string]any{"frequency": "daily", "weekdays": []string{"mon", "Wednesday"}}})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"pause":{"from":"`+day(2)+`","until":"`+day(7)+`"`) ||
		!strings.Contains(string(r.Body), `"weekdays":["mon","wed"]`) {
		t.Fatalf("setting a pause and quiet days: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/v1/me", "/v1/me/export"} {
		r = c.Do("GET", path, tok, nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"from":"`+day(2)+`"`) || !strings.Contains(string(r.Body), `"weekdays":["mon","wed"]`) {
			t.Errorf("%s: %d %.600s", path, r.Status, r.Body)
		}
	}
	r = c.Do("PATCH", "/v1/me", tok, map[string]any{"pause": map[string]any{"from": day(1), "until": nil}})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"until":null`) || !strings.Contains(string(r.Body), `"ends_at":null`) {
		t.Fatalf("until I'm back: %d %s", r.Status, r.Body)
	}
	r = c.Do("PATCH", "/v1/me", tok, `{"digest": {"hour": 9}}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"from":"`+day(1)+`"`) || !strings.Contains(string(r.Body), `"weekdays":["mon","wed"]`) {
		t.Errorf("another change dropped the pause or the quiet days: %d %s", r.Status, r.Body)
	}
	// null resets the quiet days: every day again.
	r = c.Do("PATCH", "/v1/me", tok, `{"digest": {"weekdays": null}}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"weekdays":["mon","tue","wed","thu","fri","sat","sun"]`) {
		t.Errorf("weekdays null: %d %s", r.Status, r.Body)
	}
	if r = c.Do("GET", "/v1/me", tok, nil); !strings.Contains(string(r.Body), `"weekdays":["mon","tue","wed","thu","fri","sat","sun"]`) {
		t.Errorf("after weekdays null: %s", r.Body)
	}
	r = c.Do("PATCH", "/v1/me", tok, `{"pause": null}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"pause":null`) {
		t.Fatalf("ending a pause not begun: %d %s", r.Status, r.Body)
	}
	// A pause in effect, ended: no pause is shown (its catch-up follows).
	today := time.Now().UTC().Format("2006-01-02")
	if r = c.Do("PATCH", "/v1/me", tok, map[string]any{"pause": map[string]any{"from": today, "until": nil}}); r.Status != 200 || !strings.Contains(string(r.Body), `"starts_at"`) {
		t.Fatalf("a pause from today: %d %s", r.Status, r.Body)
	}
	if r = c.Do("PATCH", "/v1/me", tok, `{"pause": null}`); r.Status != 200 || !strings.Contains(string(r.Body), `"pause":null`) {
		t.Errorf("ending a pause in effect: %d %s", r.Status, r.Body)
	}
	if r = c.Do("GET", "/v1/me", tok, nil); !strings.Contains(string(r.Body), `"pause":null`) {
		t.Errorf("after ending a pause in effect: %s", r.Body)
	}
	for body, field := range map[string]string{
		`{"pause": {"from": "` + day(-1) + `"}}`:                           "pause.from",
		`{"pause": {"from": "next week"}}`:                                 "pause.from",
		`{"pause": {"until": "` + day(3) + `"}}`:                           "pause.from",
		`{"pause": {"from": "` + day(3) + `", "until": "` + day(2) + `"}}`: "pause.until",
		`{"pause": {"from": "` + day(3) + `", "until": "` + day(3) + `"}}`: "pause.until",
		`{"pause": {"from": "` + day(3) + `", "back": "` + day(5) + `"}}`:  "pause.back",
		`{"pause": {"from": 20261224}}`:                                    "pause.from",
		`{"pause": "tomorrow"}`:                                            "pause",
		`{"digest": {"weekdays": []}}`:                                     "digest.weekdays",
		`{"digest": {"weekdays": ["mon", "funday"]}}`:                      "digest.weekdays",
	} {
		r := c.Do("PATCH", "/v1/me", tok, body)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != field {
			t.Errorf("%s: want 422 naming %s, got %d %s", body, field, r.Status, r.Body)
		}
	}
}

// TestSnoozeAFollowThroughTheAPI: PUT /v1/me/follows/{kind}/{id} with
// snoozed_until snoozes a follow the user has (the list and the export
// show it), null un-snoozes, and bad dates or a follow the user does
// not have are 422s naming the field.
func TestSnoozeAFollowThroughTheAPI(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	tok := testapp.Token(t, "sleepy", "sleepy@example.org")
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil); r.Status != 201 {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	day := time.Now().UTC().AddDate(0, 0, 5).Format("2006-01-02")
	r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, map[string]any{"snoozed_until": day})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"snoozed_until":"`+day+`"`) {
		t.Fatalf("snooze: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/v1/me/follows", "/v1/me/export"} {
		if r := c.Do("GET", path, tok, nil); !strings.Contains(string(r.Body), `"snoozed_until":"`+day+`"`) {
			t.Errorf("%s does not show the snooze: %.500s", path, r.Body)
		}
	}
	r = c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, `{"snoozed_until": null, "label": "ML"}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"snoozed_until":null`) || !strings.Contains(string(r.Body), `"label":"ML"`) {
		t.Fatalf("un-snooze with a label: %d %s", r.Status, r.Body)
	}
	yesterday := time.Now().UTC().AddDate(0, 0, -2).Format("2006-01-02")
	for _, tc := range []struct{ path, body, field string }{
		{"/v1/me/follows/category/cs.LG", `{"snoozed_until": "` + yesterday + `"}`, "snoozed_until"},
		{"/v1/me/follows/category/cs.LG", `{"snoozed_until": "soon"}`, "snoozed_until"},
		{"/v1/me/follows/category/cs.LG", `{"snoozed_until": 5}`, "snoozed_until"},
		{"/v1/me/follows/category/cs.AI", `{"snoozed_until": "` + day + `"}`, "follow"},
	} {
		r := c.Do("PUT", tc.path, tok, tc.body)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != tc.field {
			t.Errorf("%s %s: want 422 naming %s, got %d %s", tc.path, tc.body, tc.field, r.Status, r.Body)
		}
	}
	if r := c.Do("GET", "/v1/me/follows", tok, nil); strings.Contains(string(r.Body), "cs.AI") {
		t.Error("snoozing an unfollowed category followed it")
	}
}

// TestEmailPageSaysAPauseHoldsTheNextDigest: with a pause from today, the
// email page's "Next digest" names the catch-up when the pause ends (it
// named the regular digest the pause holds), or, for a pause until the
// reader is back, says none comes until they end it; GET /v1/me's
// digest.next_at says the same (it gave the digest the pause holds).
func TestEmailPageSaysAPauseHoldsTheNextDigest(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "holiday", "holiday@example.org")
	day := func(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format("2006-01-02") }
	if r := c.Do("PATCH", "/v1/me", tok, map[string]any{"timezone": "UTC", "digest": map[string]any{"frequency": "daily", "hour": 7},
		"pause": map[string]any{"from": day(0), "until": day(3)}}); r.Status != 200 {
		t.Fatalf("a daily digest and a pause: %d %s", r.Status, r.Body)
	}
	b, _, _ := signIn(t, a, tok)
	back := time.Now().UTC().AddDate(0, 0, 3)
	want := "a catch-up digest " + time.Date(back.Year(), back.Month(), back.Day(), 7, 0, 0, 0, time.UTC).Format("Monday 2 January 15:04 MST") + ", when the pause ends"
	if _, page := testapp.Form(t, b, "GET", a.URL+"/settings/email", nil); !strings.Contains(page, "Next digest: "+want) {
		t.Errorf("the email page during a pause does not say %q", want)
	}
	catchUp := time.Date(back.Year(), back.Month(), back.Day(), 7, 0, 0, 0, time.UTC).Format(time.RFC3339)
	if r := c.Do("GET", "/v1/me", tok, nil); !strings.Contains(string(r.Body), `"next_at":"`+catchUp+`"`) {
		t.Errorf("GET /v1/me during a pause: want next_at %s (the catch-up), got %s", catchUp, r.Body)
	}
	if r := c.Do("PATCH", "/v1/me", tok, map[string]any{"pause": map[string]any{"from": day(0), "until": nil}}); r.Status != 200 {
		t.Fatalf("until I'm back: %d %s", r.Status, r.Body)
	}
	if _, page := testapp.Form(t, b, "GET", a.URL+"/settings/email", nil); !strings.Contains(page, "Next digest: none while you are away") {
		t.Errorf("the email page during an open pause does not say no digest comes")
	}
	if r := c.Do("GET", "/v1/me", tok, nil); r.Status != 200 || strings.Contains(string(r.Body), "next_at") {
		t.Errorf("GET /v1/me during a pause until I'm back: want no next_at, got %d %s", r.Status, r.Body)
	}
	// Ended, the pause holds nothing: the next digest is the regular one.
	if r := c.Do("PATCH", "/v1/me", tok, `{"pause": null}`); r.Status != 200 || !strings.Contains(string(r.Body), `"next_at":"`) {
		t.Errorf("after the pause: want a next_at, got %d %s", r.Status, r.Body)
	}
}

// TestAnEndedPauseSentAgainThroughTheAPI: a pause ended with {"pause":
// null} is no ongoing pause, while its catch-up waits too: after a move
// to a time zone where its start is in the past, setting it again is
// the 422 naming pause.from a user who never paused gets, not the ended
// pause back with its old start.
func TestAnEndedPauseSentAgainThroughTheAPI(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	tok := testapp.Token(t, "islands", "islands@example.org")
	fresh := testapp.Token(t, "kiritimati", "kiritimati@example.org")
	pago, err := time.LoadLocation("Pacific/Pago_Pago")
	if err != nil {
		t.Fatal(err)
	}
	// Kiritimati (UTC+14) is a day or two ahead of Pago Pago (UTC-11):
	// Pago Pago's today is in the past there.
	today := time.Now().In(pago)
	pause := map[string]any{"pause": map[string]any{"from": today.Format("2006-01-02"), "until": today.AddDate(0, 0, 2).Format("2006-01-02")}}
	if r := c.Do("PATCH", "/v1/me", tok, map[string]any{"timezone": "Pacific/Pago_Pago"}); r.Status != 200 {
		t.Fatalf("Pago Pago: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PATCH", "/v1/me", tok, pause); r.Status != 200 || !strings.Contains(string(r.Body), `"starts_at"`) {
		t.Fatalf("a pause from today: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PATCH", "/v1/me", tok, `{"pause": null}`); r.Status != 200 || !strings.Contains(string(r.Body), `"pause":null`) {
		t.Fatalf("ending it: %d %s", r.Status, r.Body)
	}
	for _, tk := range []string{tok, fresh} {
		if r := c.Do("PATCH", "/v1/me", tk, map[string]any{"timezone": "Pacific/Kiritimati"}); r.Status != 200 {
			t.Fatalf("Kiritimati: %d %s", r.Status, r.Body)
		}
	}
	var again, first problem
	r := c.Do("PATCH", "/v1/me", tok, pause)
	r.JSON(t, &again)
	rf := c.Do("PATCH", "/v1/me", fresh, pause)
	rf.JSON(t, &first)
	if r.Status != 422 || again.Field != "pause.from" || !strings.Contains(again.Detail, "is in the past") || again.Detail != first.Detail || rf.Status != 422 {
		t.Errorf("the ended pause set again: %d %s; a user who never paused: %d %s", r.Status, r.Body, rf.Status, rf.Body)
	}
	if r := c.Do("GET", "/v1/me", tok, nil); !strings.Contains(string(r.Body), `"pause":null`) {
		t.Errorf("after the refused pause: %s", r.Body)
	}
}
