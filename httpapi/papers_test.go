package httpapi_test

import (
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

// TestPaperStateAPI: PUT /v1/me/papers/{id}/state marks a paper read or
// done and unread again, for this user only; bad input is a 4xx naming
// what to fix, and nothing is recorded.
func TestPaperStateAPI(t *testing.T) {
	t.Parallel()
	t.Log("hostile: limits")
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	pushPaper(t, c, paperLine("2611.00201", "Sparse attention", "cs.LG"))
	alice := testapp.Token(t, "alice", "")
	bob := testapp.Token(t, "bob", "")
	var st struct {
		ArxivID   string  `json:"arxiv_id"`
		Title     string  `json:"title"`
		State     string  `json:"state"`
		ChangedAt *string `json:"changed_at"`
	}
	r := c.Do("PUT", "/v1/me/papers/arXiv:2611.00201v2/state", alice, `{"state": "done"}`)
	r.JSON(t, &st)
	if r.Status != 200 || st.State != "done" || st.ArxivID != "2611.00201" || st.Title != "Sparse attention" || st.ChangedAt == nil {
		t.Fatalf("done: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/papers/2611.00201/state", bob, `{"state": "read"}`); r.Status != 200 {
		t.Fatalf("bob's read: %d %s", r.Status, r.Body)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_states s JOIN users u ON u.id = s.user_id WHERE u.sub = 'alice' AND s.state = 'done'`); n != 1 {
		t.Errorf("alice's done rows: %d (bob's mark changed hers?)", n)
	}
	if r := c.Do("PUT", "/v1/me/papers/2611.00201/state", alice, `{"state": "unread"}`); r.Status != 200 || !strings.Contains(string(r.Body), `"state":"unread"`) || strings.Contains(string(r.Body), "changed_at") {
		t.Fatalf("unread: %d %s", r.Status, r.Body)
	}
	before := count(t, db, `SELECT count(*) FROM paper_states`)
	for _, c2 := range []struct {
		path, body string
		status     int
		field      string
	}{
		{"/v1/me/papers/2611.00201/state", `{"state": "seen"}`, 422, "state"},
		{"/v1/me/papers/2611.00201/state", `{"state": 1}`, 422, "state"},
		{"/v1/me/papers/2611.00201/state", `{"state": null}`, 422, "state"},
		{"/v1/me/papers/2611.00201/state", `{}`, 422, "state"},
		{"/v1/me/papers/2611.00201/state", `{"state": "read", "x": 1}`, 422, "x"},
		{"/v1/me/papers/2611.99999/state", `{"state": "read"}`, 404, ""},
		{"/v1/me/papers/not-an-id/state", `{"state": "read"}`, 422, "arxiv_id"},
	} {
		r := c.Do("PUT", c2.path, alice, c2.body)
		var p problem
		r.JSON(t, &p)
		if r.Status != c2.status || p.Field != c2.field || p.Detail == "" {
			t.Errorf("PUT %s %s: %d %s, want %d naming %q", c2.path, c2.body, r.Status, r.Body, c2.status, c2.field)
		}
	}
	if r := c.Do("PUT", "/v1/me/papers/2611.00201/state", "", `{"state": "read"}`); r.Status != 401 {
		t.Errorf("without a token: %d", r.Status)
	}
	if after := count(t, db, `SELECT count(*) FROM paper_states`); after != before {
		t.Errorf("bad input recorded states: %d rows, were %d", after, before)
	}
}
