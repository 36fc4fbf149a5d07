package httpapi_test

import (
	"fmt"
	"slices"
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

// TestFeedbackListSaysWhichTopicsTheMarksMove: GET /v1/me/feedback and
// the settings page's feedback section list the arXiv categories the
// user's marks move as a whole, as the training job (run by the service's
// own worker) found them: five "less" on papers of cs.CL make it "fewer",
// whole; a "more" on one of them takes a mark back (two thirds); two
// marks in another category move nothing of it, and three "less" with
// three "more" in a third are said to cancel. A change not learnt yet
// (a mark, a "not this person") is said. Another user sees none of it.
func TestFeedbackListSaysWhichTopicsTheMarksMove(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	var lines []string
	for i := range 14 {
		cat := "cs.CL"
		switch {
		case i >= 8:
			cat = "cs.CV"
		case i >= 6:
			cat = "cs.LG"
		}
		lines = append(lines, paperLine(fmt.Sprintf("2611.%05d", 200+i), fmt.Sprintf("Paper %d on parsing", i), cat))
	}
	pushPaper(t, c, lines...)
	alice, bob := testapp.Token(t, "alice", ""), testapp.Token(t, "bob", "")
	type topic struct {
		Category, Name, Effect string
		Less, More, Follows    int
		Share                  float64
	}
	var list struct {
		Topics        []topic `json:"topics"`
		TopicsPending bool    `json:"topics_pending"`
	}
	// topics waits until the model learnt every change (the job runs in
	// the service's worker) and returns its topics.
	topics := func(tok string) []topic {
		t.Helper()
		waitFor(t, "the model to learn the marks", func() bool {
			list.Topics, list.TopicsPending = nil, true
			c.Do("GET", "/v1/me/feedback", tok, nil).JSON(t, &list)
			return !list.TopicsPending
		})
		return list.Topics
	}
	mark := func(id int, value string) {
		t.Helper()
		if r := c.Do("PUT", fmt.Sprintf("/v1/me/papers/2611.%05d/feedback", 200+id), alice, `{"value": `+value+`}`); r.Status != 200 {
			t.Fatalf("feedback %s on paper %d: %d %s", value, id, r.Status, r.Body)
		}
	}
	for i := range 5 {
		mark(i, `"less"`)
	}
	mark(6, `"less"`)
	mark(7, `"less"`)
	for i := 8; i < 11; i++ {
		mark(i, `"less"`)
		mark(i+3, `"more"`)
	}
	got := topics(alice)
	want := []topic{
		{Category: "cs.CL", Name: "Computation and Language", Effect: "fewer", Less: 5, Share: 1},
		{Category: "cs.CV", Name: "Computer Vision and Pattern Recognition", Effect: "none", Less: 3, More: 3},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after five less on cs.CL, two on cs.LG, three less and three more on cs.CV: topics %+v, want %+v", got, want)
	}
	b, _, _ := signIn(t, a, alice)
	section := func() string {
		t.Helper()
		page, _ := settingsPage(t, a, b, "/settings/account")
		_, page, _ = strings.Cut(page, `id="feedback-h"`)
		page, _, _ = strings.Cut(page, `<ul class="feedback-list">`)
		return page
	}
	if s := section(); !strings.Contains(s, "<li><strong>Fewer</strong> papers of Computation and Language (cs.CL): 5 marked “Less like this”.</li>") ||
		!strings.Contains(s, "<li><strong>Not moved:</strong> papers of Computer Vision and Pattern Recognition (cs.CV): 3 marked “Less like this”, 3 “More like this” or saved.</li>") ||
		strings.Contains(s, "cs.LG") || strings.Contains(s, "full effect") || strings.Contains(s, `id="feedback-topics-pending"`) {
		t.Errorf("the settings page's feedback section says:\n%s", s)
	}
	mark(5, `"more"`)
	if got := topics(alice); len(got) != 2 || got[0].Less != 5 || got[0].More != 1 || got[0].Share != 0.67 || got[0].Effect != "fewer" {
		t.Errorf("after a more on cs.CL: topics %+v, want 5 less, 1 more, share 0.67", got)
	}
	if s := section(); !strings.Contains(s, "papers of Computation and Language (cs.CL): 5 marked “Less like this”, 1 “More like this” or saved — 67% of the full effect so far.") {
		t.Errorf("after a more, the settings page's feedback section says:\n%s", s)
	}
	// A change the model has yet to learn (counted, its job not run).
	db := openDB(t, a.DatabaseURL)
	if _, err := db.Pool.Exec(t.Context(), `UPDATE ranking_models SET changes = changes + 1 WHERE user_id = (SELECT id FROM users WHERE sub = 'alice')`); err != nil {
		t.Fatal(err)
	}
	if s := section(); !strings.Contains(s, `id="feedback-topics-pending"`) || !strings.Contains(s, "67% of the full effect") {
		t.Errorf("with a change not learnt yet, the feedback section says:\n%s", s)
	}
	// "Not this person" is such a change too: the followed person's
	// papers are the model's examples.
	if _, err := db.Pool.Exec(t.Context(), `UPDATE ranking_models SET trained = changes`); err != nil {
		t.Fatal(err)
	}
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", alice, nil)
	if _, err := db.Pool.Exec(t.Context(), `UPDATE ranking_models SET trained = changes`); err != nil { // the follow's change, as if learnt
		t.Fatal(err)
	}
	pushPaper(t, c, `{"arxiv_id": "2611.00290", "title": "Parsing by a namesake", "authors": [{"name": "Josiah Carberry", "ids": ["orcid:0000-0002-1825-0097"]}], "categories": ["cs.CL"], "primary_category": "cs.CL"}`)
	if r := c.Do("POST", "/v1/me/papers/2611.00290/not-this-person", alice, `{"id": "orcid:0000-0002-1825-0097"}`); r.Status != 204 {
		t.Fatalf("not this person: %d %s", r.Status, r.Body)
	}
	c.Do("GET", "/v1/me/feedback", alice, nil).JSON(t, &list)
	if !list.TopicsPending {
		t.Error("after a \"not this person\" the topics are not pending: the model was not asked to learn it")
	}
	var none struct {
		Topics []topic `json:"topics"`
	}
	r := c.Do("GET", "/v1/me/feedback", bob, nil)
	if r.JSON(t, &none); none.Topics == nil || len(none.Topics) != 0 {
		t.Errorf("bob's topics: %s; want []", r.Body)
	}
}
