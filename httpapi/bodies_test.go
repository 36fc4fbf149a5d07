package httpapi_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

// bigBody is a JSON array of n bytes in all, as a user.
func bigBody(n int) io.Reader {
	return io.MultiReader(strings.NewReader("["), strings.NewReader(strings.Repeat(" ", n-2)), strings.NewReader("]"))
}

// TestOversizedBodiesAre413: the 17 MiB PUT /v1/researchers (it
// was a 400), and every body over its route's cap on the routes that read
// one — the host's pushes, a user's JSON, a form — is a 413 problem,
// whether the body says its length (answered before it is sent: Expect:
// 100-continue, as curl sends for a large body) or arrives chunked and is
// cut off while read.
func TestOversizedBodiesAre413(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	_, c := start(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	user := testapp.Token(t, "reader", "")
	for _, tc := range []struct {
		method, path, token string
		limit               int
	}{
		{"PUT", "/v1/researchers", svc, 16 << 20},
		{"PUT", "/v1/institutions", svc, 16 << 20},
		{"POST", "/v1/papers", svc, 20 << 20},
		{"PATCH", "/v1/me", user, 64 << 10},
		{"PUT", "/v1/me/follows/category/cs.LG", user, 64 << 10},
		{"POST", "/login", "", 16 << 10}, // a form, read before the token in it is checked
	} {
		for _, chunked := range []bool{false, true} {
			var body any = strings.Repeat(" ", tc.limit+1<<20) // the 17 MiB for the registry
			headers := []string{"Expect", "100-continue"}
			if chunked {
				body, headers = bigBody(tc.limit+1024), nil
			}
			if tc.path == "/login" {
				headers = append(headers, "Content-Type", "application/x-www-form-urlencoded")
			}
			r := c.Do(tc.method, tc.path, tc.token, body, headers...)
			var p struct {
				Type, Detail string
				Status       int
			}
			if r.Status != 413 || r.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(r.Body, &p) != nil ||
				p.Type != "urn:followfeed:problem:too-large" || !strings.Contains(p.Detail, "exceeds") {
				t.Errorf("%s %s, %s over the cap (chunked %v): %d %s", tc.method, tc.path, strconv.Itoa(tc.limit), chunked, r.Status, r.Body)
			}
		}
	}
}

// TestPushedVersionOutOfRangeIs422AndStaysPrivate: the security review's
// "version": 2147483648 (an integer overflow in PostgreSQL, a 500, and the
// raw SQL error as the push source's public last_error) is a 422 naming
// the paper and the field, and /v1/status says only that a push was
// refused as invalid.
func TestPushedVersionOutOfRangeIs422AndStaysPrivate(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	t.Log("hostile: leaks")
	_, c := start(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	body := `{"arxiv_id": "2202.02326", "version": 2147483648, "title": "T", "authors": [{"name": "Mingzhi Wen"}], "categories": ["cs.LG"], "primary_category": "cs.LG"}`
	r := c.Do("POST", "/v1/papers", svc, body, "Content-Type", "application/x-ndjson")
	var p struct {
		Errors []struct {
			Index  int
			Field  string
			Reason string
		}
	}
	if r.Status != 422 || json.Unmarshal(r.Body, &p) != nil || len(p.Errors) != 1 || p.Errors[0].Field != "version" ||
		!strings.Contains(p.Errors[0].Reason, "between 1 and 9999") {
		t.Fatalf("push with version 2147483648: %d %s", r.Status, r.Body)
	}
	push := getStatus(t, c).Sources[2]
	if push.Source != "push" || push.State != "failing" || push.LastError == nil ||
		*push.LastError != "refused: invalid input (the response to the request listed the problems)" {
		t.Fatalf("push source: %+v", push)
	}
}
