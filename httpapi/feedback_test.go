package httpapi_test

import (
	"strings"
	"testing"

	"followfeed/database"
	"followfeed/internal/testapp"
)

// TestFeedbackAPI: PUT /v1/me/papers/{id}/feedback records, changes and
// clears a user's word on a paper, GET /v1/me/feedback lists it newest
// first, page by page; nobody else sees it; bad input is a 4xx naming what
// to fix, and nothing is recorded.
func TestFeedbackAPI(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	pushPaper(t, c, paperLine("2611.00101", "Sparse attention", "cs.LG"), paperLine("2611.00102", "Dense retrieval", "cs.LG"))
	alice, bob := testapp.Token(t, "alice", ""), testapp.Token(t, "bob", "")

	var fb struct {
		ArxivID   string  `json:"arxiv_id"`
		Title     string  `json:"title"`
		Value     *string `json:"value"`
		UpdatedAt *string `json:"updated_at"`
	}
	r := c.Do("PUT", "/v1/me/papers/2611.00101/feedback", alice, `{"value": "more"}`)
	r.JSON(t, &fb)
	if r.Status != 200 || fb.Value == nil || *fb.Value != "more" || fb.Title != "Sparse attention" || fb.UpdatedAt == nil {
		t.Fatalf("more: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/papers/arXiv:2611.00102v2/feedback", alice, `{"value": "save"}`); r.Status != 200 || !strings.Contains(string(r.Body), `"value":"saved"`) {
		t.Fatalf("save (an id with prefix and version): %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/papers/2611.00101/feedback", alice, `{"value": "less"}`); r.Status != 200 || !strings.Contains(string(r.Body), `"value":"less"`) {
		t.Fatalf("less: %d %s", r.Status, r.Body)
	}
	var list struct {
		Feedback []struct {
			ArxivID string  `json:"arxiv_id"`
			Value   *string `json:"value"`
		} `json:"feedback"`
		Next string `json:"next"`
	}
	c.Do("GET", "/v1/me/feedback?limit=1", alice, nil).JSON(t, &list)
	if len(list.Feedback) != 1 || list.Feedback[0].ArxivID != "2611.00101" || *list.Feedback[0].Value != "less" || list.Next == "" {
		t.Fatalf("first page: %+v", list)
	}
	next := list.Next
	list.Next = ""
	c.Do("GET", "/v1/me/feedback?limit=1&cursor="+next, alice, nil).JSON(t, &list)
	if len(list.Feedback) != 1 || list.Feedback[0].ArxivID != "2611.00102" || list.Next != "" {
		t.Fatalf("second page: %+v", list)
	}
	c.Do("GET", "/v1/me/feedback", bob, nil).JSON(t, &list)
	if len(list.Feedback) != 0 {
		t.Errorf("bob sees alice's feedback: %+v", list)
	}
	if r := c.Do("PUT", "/v1/me/papers/2611.00101/feedback", alice, `{"value": null}`); r.Status != 200 || !strings.Contains(string(r.Body), `"value":null`) {
		t.Fatalf("clear: %d %s", r.Status, r.Body)
	}

	before := count(t, db, `SELECT count(*) FROM feedback`)
	for _, c2 := range []struct {
		path, body string
		status     int
		field      string
	}{
		{"/v1/me/papers/2611.00101/feedback", `{"value": "love"}`, 422, "value"},
		{"/v1/me/papers/2611.00101/feedback", `{"value": 1}`, 422, "value"},
		{"/v1/me/papers/2611.00101/feedback", `{}`, 422, "value"},
		{"/v1/me/papers/2611.00101/feedback", `{"value": "more", "why": "x"}`, 422, "why"},
		{"/v1/me/papers/2611.99999/feedback", `{"value": "more"}`, 404, ""},
		{"/v1/me/papers/not-an-id/feedback", `{"value": "more"}`, 422, "arxiv_id"},
	} {
		r := c.Do("PUT", c2.path, alice, c2.body)
		var p problem
		r.JSON(t, &p)
		if r.Status != c2.status || p.Field != c2.field || p.Detail == "" {
			t.Errorf("PUT %s %s: %d %s, want %d naming %q", c2.path, c2.body, r.Status, r.Body, c2.status, c2.field)
		}
	}
	if r := c.Do("GET", "/v1/me/feedback?cursor=nope", alice, nil); r.Status != 422 {
		t.Errorf("a bad cursor: %d %s", r.Status, r.Body)
	}
	if after := count(t, db, `SELECT count(*) FROM feedback`); after != before {
		t.Errorf("bad input recorded feedback: %d rows, were %d", after, before)
	}
}

// TestFeedbackIsRateLimited: feedback is a write like the others, under
// the per-user limit.
func TestFeedbackIsRateLimited(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "1")
	pushPaper(t, c, paperLine("2611.00103", "Rate limits", "cs.LG"))
	alice := testapp.Token(t, "alice", "")
	limited := 0
	for range 8 {
		if r := c.Do("PUT", "/v1/me/papers/2611.00103/feedback", alice, `{"value": "more"}`); r.Status == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Error("eight feedback writes at once were never limited")
	}
}

// count runs a count(*) query on db.
func count(t *testing.T, db *database.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
