package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"followfeed/auth"
	"followfeed/internal/testapp"
)

var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions}

// FuzzRequests sends arbitrary method, path, query, body and bearer token
// to the running service (real PostgreSQL, real HTTP stack): no input may
// get a 5xx, and every answer of a documented route must match
// openapi.json (the client checks). Seeds in testdata/fuzz/FuzzRequests
// cover every route family with hostile parameters.
func FuzzRequests(f *testing.F) {
	f.Log("hostile: decoders")
	env := testapp.Env(f)
	env["RATE_LIMIT_PER_IP"], env["RATE_LIMIT_PER_USER"] = "1000000", "1000000"
	a := testapp.Start(f, env)
	tokens := []string{
		"",
		testapp.Token(f, "fuzz-reader", "reader@example.org"),
		testapp.Token(f, "fuzz-site", "", auth.ScopePapersWrite),
	}
	// The user follows something, so feed and follow routes hit rows.
	c := a.Client(f)
	if r := c.Do(http.MethodPut, "/v1/me/follows/category/cs.LG", tokens[1], nil); r.Status >= 300 {
		f.Fatalf("seeding a follow: %d %s", r.Status, r.Body)
	}
	var feeds struct {
		Atom string `json:"atom"`
	}
	c.Do(http.MethodGet, "/v1/me/feeds", tokens[1], nil).JSON(f, &feeds)
	feedPath := "/feeds/none.atom"
	if u, err := url.Parse(feeds.Atom); err == nil && u.Path != "" {
		feedPath = u.Path
	}
	f.Add(uint8(0), feedPath, "limit=5", []byte(nil), uint8(0), "")
	f.Add(uint8(0), feedPath, "limit=0&limit=999999999999", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/v1/me/follows", "limit=-1&cursor=%00", []byte(nil), uint8(1), "")
	f.Add(uint8(2), "/v1/me/follows/researcher/openalex:A5023888391", "", []byte(`{"label":"x","include_cross_lists":true}`), uint8(1), "")
	f.Add(uint8(4), "/v1/me", "", []byte(`{"timezone":"Mars/Olympus","digest":{"frequency":"hourly","hour":25}}`), uint8(1), "")
	f.Add(uint8(1), "/v1/papers", "", []byte(`{"papers":[{"arxiv_id":"../../etc/passwd","title":"x"}]}`), uint8(2), "")
	f.Add(uint8(1), "/v1/papers", "", []byte("{\"papers\":[{\"arxiv_id\":\"2301.00001\"}]}\n{"), uint8(1), "")
	f.Add(uint8(0), "/v1/follows/category/cs.LG", "", []byte(nil), uint8(3), "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add(uint8(1), "/unsubscribe/ffl_AQEC.AAAA", "", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/confirm/ffl_", "", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/feeds/category/cs.LG.rss", "limit=abc", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/feeds/fft_x/category/cs.LG.json", "", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/settings", "token=ffl_AQ.AA", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/embed/follow-button.js", "v=../../x", []byte(nil), uint8(0), "")
	f.Add(uint8(0), "/admin/jobs/", "", []byte(nil), uint8(1), "")

	f.Fuzz(func(t *testing.T, method uint8, path, query string, body []byte, who uint8, rawToken string) {
		u := url.URL{Path: "/" + strings.TrimPrefix(path, "/")}
		vals, _ := url.ParseQuery(query) // keeps what parsed
		u.RawQuery = vals.Encode()
		target := u.EscapedPath()
		if u.RawQuery != "" {
			target += "?" + u.RawQuery
		}
		tok := rawToken
		if int(who) < len(tokens) {
			tok = tokens[who]
		}
		tok = strings.Map(func(r rune) rune {
			if r < 0x21 || r == 0x7f || r > 0x7e {
				return -1 // not sendable in a header
			}
			return r
		}, tok)
		var b any
		if len(body) > 0 {
			b = body
		}
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		r := a.Client(t).Do(m, target, tok, b)
		if r.Status >= 500 {
			t.Fatalf("%s %s answered %d: %.300s", m, target, r.Status, r.Body)
		}
	})
}
