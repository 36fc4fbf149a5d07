package httpapi_test

import (
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

// TestDecodeNamesFieldByPath: a JSON body's bad field — of the wrong
// type, unknown at any depth, sent twice, or differing from a known field
// only by case — is a 422 naming it by its JSON path, in words rather than
// Go's type names, on every kind of route that reads a body.
func TestDecodeNamesFieldByPath(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	tok := testapp.Token(t, "strict", "strict@example.org")
	for _, tc := range []struct{ method, path, body, field, detail string }{
		{"PATCH", "/v1/me", `{"digest":{"weekdays":"mon"}}`, "digest.weekdays", `must be a list of weekday names, like ["mon", "tue"], or null for every day`},
		{"PATCH", "/v1/me", `{"digest":{"weekdays":["mon",2]}}`, "digest.weekdays[1]", "must be a string"},
		{"PATCH", "/v1/me", `{"digest":{"bogus":1}}`, "digest.bogus", "is not a known field"},
		{"PATCH", "/v1/me", `{"digest":[]}`, "digest", "must be an object"},
		{"PATCH", "/v1/me", `{"digest":{"hour":"9"}}`, "digest.hour", "must be a whole number"},
		{"PATCH", "/v1/me", `{"digest":{"send_empty":"yes"}}`, "digest.send_empty", "must be true or false"},
		{"PATCH", "/v1/me", `{"timezone":5}`, "timezone", "must be a string"},
		{"PATCH", "/v1/me", `{"Timezone":"UTC"}`, "Timezone", `is not a known field; names are exact: did you mean "timezone"?`},
		{"PATCH", "/v1/me", `{"timezone":"UTC","timezone":"Europe/Paris"}`, "timezone", "appears more than once; send each field once"},
		{"PATCH", "/v1/me", `{"digest":{"hour":8,"hour":9}}`, "digest.hour", "appears more than once; send each field once"},
		{"PATCH", "/v1/me", `{"pause":{"from":"2030-01-01","back":"2030-01-05"}}`, "pause.back", "is not a known field"},
		{"PATCH", "/v1/me", `{"pause":{"from":"2030-01-01","from":"2030-01-02"}}`, "pause.from", "appears more than once; send each field once"},
		{"PATCH", "/v1/me", `{"pause":{"from":20301224}}`, "pause.from", "must be a date like 2026-12-24"},
		{"PUT", "/v1/me/papers/2202.02326/state", `{"state":"read","state":"done"}`, "state", "appears more than once; send each field once"},
		{"PUT", "/v1/me/papers/2202.02326/state", `{"State":"read"}`, "State", `is not a known field; names are exact: did you mean "state"?`},
		{"POST", "/v1/me/channels", `{"type":"webhook","url":"https://hooks.example.org/x","follows":[{"kind":"category","id":"cs.LG","bogus":1}]}`, "follows[0].bogus", "is not a known field"},
		{"POST", "/v1/me/channels", `{"type":"webhook","follows":{"kind":"category"}}`, "follows", "must be a list of objects"},
		{"POST", "/v1/me/mutes", `{"follow":"category/cs.LG","query":"x"}`, "follow", "must be an object"},
		{"PUT", "/v1/me/remember-opened", `{"remember_opened":"true"}`, "remember_opened", "must be true or false"},
	} {
		r := c.Do(tc.method, tc.path, tok, tc.body)
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != tc.field || p.Detail != tc.detail {
			t.Errorf("%s %s %s: want 422 naming %s %q, got %d %s", tc.method, tc.path, tc.body, tc.field, tc.detail, r.Status, r.Body)
		}
	}
	// A body cut off is not valid JSON, said as such (it is not "not an
	// object"), a 400 with where it ends.
	cut := testapp.Token(t, "cut", "cut@example.org") // its own rate limit
	for _, body := range []string{`{"state":`, `{"state":"read"`, `{`} {
		r := c.Do("PUT", "/v1/me/papers/2202.02326/state", cut, body)
		var p problem
		r.JSON(t, &p)
		if r.Status != 400 || !strings.HasPrefix(p.Detail, "the body is not valid JSON: it ends at byte ") {
			t.Errorf("a body cut off, %s: %d %s", body, r.Status, r.Body)
		}
	}
	// What passed before still passes: exact keys, the nulls that mean
	// something (the others: nulls_test.go), empty bodies where allowed.
	if r := c.Do("PATCH", "/v1/me", tok, `{"timezone":"UTC","digest":{"hour":7,"weekdays":null},"pause":null}`); r.Status != 200 {
		t.Errorf("a good patch: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/v1/me/papers/read", tok, nil); r.Status != 200 {
		t.Errorf("an empty optional body: %d %s", r.Status, r.Body)
	}
}
