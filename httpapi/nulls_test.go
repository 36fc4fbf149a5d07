package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"followfeed/internal/testapp"
)

// TestNullWhereTheDocumentHasNone: a JSON null for a field the API
// document does not make nullable is a 422 naming the field by its JSON
// path and saying what it must be (PATCH /v1/me said 200 and changed
// nothing), on every /v1 body a user writes; a null in a list is answered
// as any other element of the wrong type. Nothing is changed.
func TestNullWhereTheDocumentHasNone(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "nulls", "nulls@example.org")
	if r := c.Do("PATCH", "/v1/me", tok, `{"timezone":"Europe/Paris","digest":{"frequency":"daily","hour":9,"order":"best","max_papers":20,"send_empty":true,"keep_followed":true}}`); r.Status != 200 {
		t.Fatalf("setting the profile: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, `{"label":"ML","include_cross_lists":false}`); r.Status != 201 {
		t.Fatalf("following: %d %s", r.Status, r.Body)
	}
	before := c.Do("GET", "/v1/me", tok, nil).Body
	const keep = "; leave the field out to keep it"
	for _, tc := range []struct{ method, path, body, field, detail string }{
		{"PATCH", "/v1/me", `{"digest":null}`, "digest", "must be an object, not null" + keep},
		{"PATCH", "/v1/me", `{"digest":{"order":null}}`, "digest.order", `must be "newest" or "best", not null` + keep},
		{"PATCH", "/v1/me", `{"digest":{"max_papers":null}}`, "digest.max_papers", "must be a whole number, not null" + keep},
		{"PATCH", "/v1/me", `{"digest":{"frequency":null,"send_empty":null,"hour":null,"keep_followed":null}}`, "digest.frequency", `must be "off", "instant", "daily" or "weekly", not null` + keep},
		{"PATCH", "/v1/me", `{"digest":{"send_empty":null}}`, "digest.send_empty", "must be true or false, not null" + keep},
		{"PATCH", "/v1/me", `{"digest":{"hour":null}}`, "digest.hour", "must be a whole number, not null" + keep},
		{"PATCH", "/v1/me", `{"digest":{"keep_followed":null}}`, "digest.keep_followed", "must be true or false, not null" + keep},
		{"PATCH", "/v1/me", `{"digest":{"skip_no_announcement":null}}`, "digest.skip_no_announcement", "must be true or false, not null" + keep},
		{"PATCH", "/v1/me", `{"digest":{"weekday":null}}`, "digest.weekday", `must be a day of the week, like "mon", not null` + keep},
		{"PATCH", "/v1/me", `{"timezone":null}`, "timezone", "must be a string, not null" + keep},
		{"PATCH", "/v1/me", `{"email":null}`, "email", `must be an address, or "" to remove it, not null` + keep},
		{"PATCH", "/v1/me", `{"pause":{"from":null}}`, "pause.from", "must be a date like 2026-12-24, not null"},
		{"PUT", "/v1/me/follows/category/cs.LG", `{"label":null}`, "label", `must be a string, or "" to remove the label, not null` + keep},
		{"PUT", "/v1/me/follows/category/cs.LG", `{"include_cross_lists":null}`, "include_cross_lists", "must be true or false, not null" + keep},
		{"PUT", "/v1/me/follows/category/cs.LG", `{"include_replacements":null}`, "include_replacements", "must be true or false, not null" + keep},
		{"POST", "/v1/me/channels", `{"type":null,"url":"https://example.org/h"}`, "type", "must be a string, not null"},
		{"POST", "/v1/me/channels", `{"type":"webhook","url":null}`, "url", "must be a string, not null"},
		{"POST", "/v1/me/channels", `{"type":"webhook","url":"https://example.org/h","mode":null}`, "mode", "must be a string, not null"},
		{"POST", "/v1/me/channels", `{"type":"webhook","url":"https://example.org/h","follows":[null]}`, "follows[0]", "must be an object"},
		{"POST", "/v1/me/channels", `{"type":"webhook","url":"https://example.org/h","follows":[{"kind":null,"id":"cs.LG"}]}`, "follows[0].kind", "must be a string, not null"},
		{"PATCH", "/v1/me/channels/1", `{"enabled":null}`, "enabled", "must be true or false, not null"},
		{"PATCH", "/v1/me/channels/1", `{"after_pause":null}`, "after_pause", "must be a string, not null"},
		{"POST", "/v1/me/mutes", `{"query":"dark matter","follow":null}`, "follow", "must be an object, not null"},
		{"POST", "/v1/me/mutes", `{"researcher":null}`, "researcher", "must be a string, not null"},
		{"POST", "/v1/me/mutes", `{"category":"cs.LG","cross_lists":null}`, "cross_lists", "must be true or false, not null"},
		{"POST", "/v1/me/papers/read", `{"follow":null}`, "follow", "must be an object, not null"},
		{"POST", "/v1/me/papers/read", `{"follow":{"kind":"category","id":null}}`, "follow.id", "must be a string, not null"},
		{"PUT", "/v1/me/remember-opened", `{"remember_opened":null}`, "remember_opened", "must be true or false, not null"},
	} {
		r := c.Do(tc.method, tc.path, tok, tc.body)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != tc.field || p.Detail != tc.detail {
			t.Errorf("%s %s %s: want 422 naming %s %q, got %d %s", tc.method, tc.path, tc.body, tc.field, tc.detail, r.Status, r.Body)
		}
	}
	if after := c.Do("GET", "/v1/me", tok, nil).Body; string(after) != string(before) {
		t.Errorf("the nulls changed the profile:\n%s\n%s", before, after)
	}
	var list struct{ Follows []followJSON }
	if c.Do("GET", "/v1/me/follows", tok, nil).JSON(t, &list); len(list.Follows) != 1 || list.Follows[0].Label != "ML" || list.Follows[0].IncludeCrossLists {
		t.Errorf("the nulls changed the follow: %+v", list.Follows)
	}
	var mutes struct{ Mutes []json.RawMessage }
	if c.Do("GET", "/v1/me/mutes", tok, nil).JSON(t, &mutes); len(mutes.Mutes) != 0 {
		t.Errorf("a null made a mute: %s", mutes.Mutes)
	}
}

// TestNullWeekdayIsNotAString: a null among digest.weekdays is answered
// as [1] is, by the element's path ("" is not a weekday, said of what the
// client did not send, was the answer).
func TestNullWeekdayIsNotAString(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	tok := testapp.Token(t, "days", "days@example.org")
	for _, body := range []string{`{"digest":{"weekdays":["mon",null]}}`, `{"digest":{"weekdays":["mon",1]}}`} {
		r := c.Do("PATCH", "/v1/me", tok, body)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != "digest.weekdays[1]" || p.Detail != "must be a string" {
			t.Errorf("%s: want 422 naming digest.weekdays[1] \"must be a string\", got %d %s", body, r.Status, r.Body)
		}
	}
}

// TestDocumentedNullsStillWork: the nulls the API document gives a
// meaning do what it says (feedback's value: feedback_test.go):
// digest.weekdays null is every day, pause null ends a pause, pause.until
// null is a pause without an end, snoozed_until null un-snoozes, and a
// channel's follows null is every follow, when it is created and when it
// is changed (a PATCH's null left the follows as they were).
func TestDocumentedNullsStillWork(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "documented", "documented@example.org")
	if r := c.Do("PATCH", "/v1/me", tok, `{"digest":{"weekdays":["mon","tue"]}}`); r.Status != 200 {
		t.Fatalf("weekdays: %d %s", r.Status, r.Body)
	}
	var me struct {
		Digest struct{ Weekdays []string }
		Pause  *json.RawMessage
	}
	r := c.Do("PATCH", "/v1/me", tok, `{"digest":{"weekdays":null},"pause":null}`)
	if r.JSON(t, &me); r.Status != 200 || len(me.Digest.Weekdays) != 7 || me.Pause != nil {
		t.Errorf("weekdays and pause null: %d %s", r.Status, r.Body)
	}
	today := time.Now().UTC().Format("2006-01-02") // the user's time zone
	r = c.Do("PATCH", "/v1/me", tok, `{"pause":{"from":"`+today+`","until":null}}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"until":null`) {
		t.Errorf("a pause without an end: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PATCH", "/v1/me", tok, `{"pause":null}`); r.Status != 200 || !strings.Contains(string(r.Body), `"pause":null`) {
		t.Errorf("ending it: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil); r.Status != 201 {
		t.Fatalf("following: %d %s", r.Status, r.Body)
	}
	until := time.Now().UTC().AddDate(0, 0, 30).Format("2006-01-02")
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, `{"snoozed_until":"`+until+`"}`); r.Status != 200 || !strings.Contains(string(r.Body), `"snoozed_until":"`+until+`"`) {
		t.Fatalf("snoozing: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, `{"snoozed_until":null,"label":"ML"}`); r.Status != 200 || !strings.Contains(string(r.Body), `"snoozed_until":null`) {
		t.Errorf("snoozed_until null: %d %s", r.Status, r.Body)
	}
	type channelOut struct {
		ID      int64
		Follows *[]struct{ Kind, ID string }
	}
	var ch channelOut
	r = c.Do("POST", "/v1/me/channels", tok, `{"type":"webhook","url":"https://example.org/h","follows":null}`)
	if r.JSON(t, &ch); r.Status != 201 || ch.Follows != nil {
		t.Fatalf("a channel with follows null: %d %s", r.Status, r.Body)
	}
	path := fmt.Sprintf("/v1/me/channels/%d", ch.ID)
	r = c.Do("PATCH", path, tok, `{"follows":[{"kind":"category","id":"cs.LG"}]}`)
	if r.JSON(t, &ch); r.Status != 200 || ch.Follows == nil || len(*ch.Follows) != 1 {
		t.Fatalf("restricting the channel to cs.LG: %d %s", r.Status, r.Body)
	}
	r = c.Do("PATCH", path, tok, `{"follows":null}`)
	if r.JSON(t, &ch); r.Status != 200 || ch.Follows != nil {
		t.Errorf("PATCH follows null, every follow again: %d %s", r.Status, r.Body)
	}
	r = c.Do("PATCH", path, tok, `{"mode":"daily"}`)
	if r.JSON(t, &ch); r.Status != 200 || ch.Follows != nil {
		t.Errorf("a PATCH without follows keeps every follow: %d %s", r.Status, r.Body)
	}
}

// TestNullBodyIsNotAnObject: a body that is JSON null is "not a JSON
// object", the 400 of [] or "x", on every route that reads an object (it
// was a 200 doing nothing, or {"marked": 0}); an empty body, where a route
// takes one, is still no body.
func TestNullBodyIsNotAnObject(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "nullbody", "nullbody@example.org")
	for _, tc := range []struct{ method, path string }{
		{"PATCH", "/v1/me"},
		{"PUT", "/v1/me/papers/2202.02326/state"},
		{"PUT", "/v1/me/papers/2202.02326/feedback"},
		{"POST", "/v1/me/papers/2202.02326/not-this-person"},
		{"POST", "/v1/me/channels"},
		{"PATCH", "/v1/me/channels/1"},
		{"POST", "/v1/me/mutes"},
		{"PUT", "/v1/me/remember-opened"},
	} {
		for _, body := range []string{`null`, " null\n", `[]`, `"x"`} {
			r := c.Do(tc.method, tc.path, tok, body)
			var p problem
			r.JSON(t, &p)
			if r.Status != 400 || p.Detail != "the body is not a JSON object" {
				t.Errorf("%s %s %q: want 400 \"the body is not a JSON object\", got %d %s", tc.method, tc.path, body, r.Status, r.Body)
			}
		}
	}
	// Where a route takes no body (a follow without options, mark all
	// read), null is no body, as it always was; an array is still no
	// object.
	for _, body := range []string{"", "null"} {
		c.Do("DELETE", "/v1/me/follows/researcher/host:1", tok, nil)
		if r := c.Do("PUT", "/v1/me/follows/researcher/host:1", tok, body); r.Status != 201 {
			t.Errorf("a follow with the body %q: %d %s", body, r.Status, r.Body)
		}
		if r := c.Do("POST", "/v1/me/papers/read", tok, body); r.Status != 200 {
			t.Errorf("mark all read with the body %q: %d %s", body, r.Status, r.Body)
		}
	}
	if r := c.Do("PUT", "/v1/me/follows/researcher/host:1", tok, "[]"); r.Status != 400 {
		t.Errorf("a follow with the body []: %d %s", r.Status, r.Body)
	}
}

// TestFollowParamQueryErrorSaidOnce: ?follow=query: with a query that
// cannot be used says why once ("… (at character 1: …)" repeated it).
func TestFollowParamQueryErrorSaidOnce(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	tok := testapp.Token(t, "once", "once@example.org")
	for _, q := range []string{"query:", "query:%22open"} {
		r := c.Do("GET", "/v1/me/papers?follow="+q, tok, nil)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != "follow" || !strings.HasPrefix(p.Detail, "id: the query cannot be used: at character ") ||
			strings.Count(p.Detail, "at character") != 1 || strings.Contains(p.Detail, "(") {
			t.Errorf("?follow=%s: want 422 naming follow, the reason once, got %d %s", q, r.Status, r.Body)
		}
	}
}

// TestNegativeIDsAreNotWholeNumbersSaid: a mute's or a channel's id that
// is no positive whole number is a 404 that says ids are positive ("mute
// ids are whole numbers" was said of -1).
func TestNegativeIDsAreNotWholeNumbersSaid(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "ids", "ids@example.org")
	for _, tc := range []struct{ method, path, detail string }{
		{"DELETE", "/v1/me/mutes/-1", `mute "-1" does not exist; mute ids are positive whole numbers (GET /v1/me/mutes)`},
		{"DELETE", "/v1/me/mutes/0", `mute "0" does not exist; mute ids are positive whole numbers (GET /v1/me/mutes)`},
		{"DELETE", "/v1/me/mutes/x", `mute "x" does not exist; mute ids are positive whole numbers (GET /v1/me/mutes)`},
		{"GET", "/v1/me/channels/-1", `channel "-1" does not exist; channel ids are positive whole numbers`},
	} {
		r := c.Do(tc.method, tc.path, tok, nil)
		var p problem
		r.JSON(t, &p)
		if r.Status != 404 || p.Detail != tc.detail {
			t.Errorf("%s %s: want 404 %q, got %d %s", tc.method, tc.path, tc.detail, r.Status, r.Body)
		}
	}
}
