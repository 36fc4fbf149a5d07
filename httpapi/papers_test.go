package httpapi_test

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"

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

// TestUnreadFeeds: a private feed with ?unread=1 leaves out the papers
// the user marked read or done (the whole feed keeps them), with a new
// ETag after each mark; the ranked and per-follow feeds take it too; a
// bad value is a 422 naming unread.
func TestUnreadFeeds(t *testing.T) {
	t.Parallel()
	_, c, reader, links := feedFixture(t)
	items := func(url string) (etag string, ids []string) {
		t.Helper()
		resp, body := get(t, url)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", url, resp.StatusCode, body)
		}
		f, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range f.Items {
			ids = append(ids, strings.TrimPrefix(it.GUID, "tag:arxiv.org,1991:"))
		}
		return resp.Header.Get("ETag"), ids
	}
	before, all := items(links.Atom + "?unread=1")
	if len(all) != 2 {
		t.Fatalf("unread before any mark: %v", all)
	}
	if r := c.Do("PUT", "/v1/me/papers/2301.00001/state", reader, `{"state": "done"}`); r.Status != 200 {
		t.Fatalf("done: %d %s", r.Status, r.Body)
	}
	for _, url := range []string{links.Atom + "?unread=1", links.JSON + "?unread=true", strings.TrimSuffix(links.Atom, ".atom") + "/best.atom?unread=1", links.Follows[0].Atom + "?unread=1"} {
		etag, got := items(url)
		if slices.Contains(got, "2301.00001") {
			t.Errorf("%s lists the paper marked done: %v", url, got)
		}
		if url == links.Atom+"?unread=1" && (etag == before || !slices.Equal(got, []string{"2202.02326"})) {
			t.Errorf("%s after the mark: etag %s (was %s), items %v", url, etag, before, got)
		}
	}
	if _, got := items(links.Atom); len(got) != 2 {
		t.Errorf("the whole feed after the mark: %v, want both papers", got)
	}
	if r := c.Do("PUT", "/v1/me/papers/2301.00001/state", reader, `{"state": "unread"}`); r.Status != 200 {
		t.Fatalf("unread: %d %s", r.Status, r.Body)
	}
	if _, got := items(links.Atom + "?unread=1"); len(got) != 2 {
		t.Errorf("unread after marking it unread again: %v", got)
	}
	for _, url := range []string{links.Atom + "?unread=yes", strings.TrimSuffix(links.Atom, ".atom") + "/best.json?unread=2"} {
		resp, body := get(t, url)
		if resp.StatusCode != 422 || !strings.Contains(string(body), `"unread"`) {
			t.Errorf("%s: %d %s, want a 422 naming unread", url, resp.StatusCode, body)
		}
	}
}

type inboxPage struct {
	Papers []struct {
		ArxivID  string `json:"arxiv_id"`
		State    string
		Feedback *string
		Reasons  []struct{ Kind, ID, Name string }
	}
	Next string
}

func (p inboxPage) ids() (out []string) {
	for _, x := range p.Papers {
		out = append(out, x.ArxivID+"="+x.State)
	}
	return out
}

// TestInboxAPI: GET /v1/me/papers lists the user's matched papers with
// reasons, state and feedback, newest first in keyset pages or best
// first, filtered by follow and state; POST /v1/me/papers/read marks the
// unread ones read (done stays done); bad parameters are a 422 naming
// them.
func TestInboxAPI(t *testing.T) {
	t.Parallel()
	_, c, reader, _ := feedFixture(t)
	list := func(query string) inboxPage {
		t.Helper()
		r := c.Do("GET", "/v1/me/papers"+query, reader, nil)
		if r.Status != 200 {
			t.Fatalf("GET /v1/me/papers%s: %d %s", query, r.Status, r.Body)
		}
		var p inboxPage
		r.JSON(t, &p)
		return p
	}
	if got := list("").ids(); !slices.Equal(got, []string{"2301.00001=unread", "2202.02326=unread"}) {
		t.Fatalf("the inbox: %v", got)
	}
	c.Do("PUT", "/v1/me/papers/2202.02326/feedback", reader, `{"value": "more"}`)
	c.Do("PUT", "/v1/me/papers/2202.02326/state", reader, `{"state": "done"}`)
	first := list("?limit=1")
	if got := first.ids(); !slices.Equal(got, []string{"2301.00001=unread"}) || first.Next == "" {
		t.Fatalf("first page: %v next %q", got, first.Next)
	}
	second := list("?limit=1&cursor=" + first.Next)
	if got := second.ids(); !slices.Equal(got, []string{"2202.02326=done"}) || second.Next != "" {
		t.Fatalf("second page: %v next %q", got, second.Next)
	}
	p := second.Papers[0]
	if p.Feedback == nil || *p.Feedback != "more" || len(p.Reasons) != 2 || p.Reasons[0].Name == "" {
		t.Errorf("the done paper: %+v", p)
	}
	if got := list("?state=done").ids(); !slices.Equal(got, []string{"2202.02326=done"}) {
		t.Errorf("state=done: %v", got)
	}
	if got := list("?state=unread").ids(); !slices.Equal(got, []string{"2301.00001=unread"}) {
		t.Errorf("state=unread: %v", got)
	}
	if got := list("?follow=researcher:openalex:A5023888391").ids(); !slices.Equal(got, []string{"2202.02326=done"}) {
		t.Errorf("one follow: %v", got)
	}
	if got := list("?order=best&state=all").ids(); len(got) != 2 {
		t.Errorf("best first: %v", got)
	}
	// The parameters' values in any case, as the bodies' are.
	if got, want := list("?order=BEST&state=All").ids(), list("?order=best&state=all").ids(); !slices.Equal(got, want) {
		t.Errorf("order=BEST&state=All: %v, want %v", got, want)
	}
	r := c.Do("POST", "/v1/me/papers/read", reader, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"marked":1`) {
		t.Fatalf("mark all read: %d %s", r.Status, r.Body)
	}
	if got := list("").ids(); !slices.Equal(got, []string{"2301.00001=read", "2202.02326=done"}) {
		t.Errorf("after mark all read: %v", got)
	}
	for _, q := range []struct{ query, field string }{
		{"?state=seen", "state"}, {"?order=oldest", "order"}, {"?limit=0", "limit"}, {"?cursor=zzz", "cursor"},
		{"?follow=category:astro-ph.GA", "follow"}, {"?follow=nonsense", "follow"},
		{"?order=best&cursor=" + first.Next, "cursor"},
	} {
		r := c.Do("GET", "/v1/me/papers"+q.query, reader, nil)
		var pr problem
		r.JSON(t, &pr)
		if r.Status != 422 || pr.Field != q.field {
			t.Errorf("GET /v1/me/papers%s: %d %s, want a 422 naming %s", q.query, r.Status, r.Body, q.field)
		}
	}
	// The body's follow is named as a mute's: follow.kind, follow.id, or
	// follow for one the user does not have.
	for _, q := range []struct{ body, field string }{
		{`{"follow": {"kind": "category", "id": "astro-ph.GA"}}`, "follow"},
		{`{"follow": {"kind": "planet", "id": "x"}}`, "follow.kind"},
		{`{"follow": {"kind": "category", "id": ""}}`, "follow.id"},
		{`{"follow": {"kind": "category", "id": "no.such"}}`, "follow.id"},
	} {
		r := c.Do("POST", "/v1/me/papers/read", reader, q.body)
		var pr problem
		r.JSON(t, &pr)
		if r.Status != 422 || pr.Field != q.field {
			t.Errorf("mark all read of %s: %d %s, want a 422 naming %s", q.body, r.Status, r.Body, q.field)
		}
		r = c.Do("POST", "/v1/me/mutes", reader, `{"query": "survey", `+q.body[1:])
		var mp problem
		r.JSON(t, &mp)
		if r.Status != 422 || mp.Field != q.field {
			t.Errorf("a mute scoped to %s: %d %s, want a 422 naming %s as mark all read does", q.body, r.Status, r.Body, q.field)
		}
	}
}

// TestInboxFormsAreCSRFProtected: the inbox's forms change nothing
// without the page's CSRF token (403) and with it redirect back to the
// view they came from; a bad state is a 422 page naming it, a paper not
// stored a 404.
func TestInboxFormsAreCSRFProtected(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	pushPaper(t, c, paperLine("2611.00401", "Sparse attention", "cs.LG"))
	tok := testapp.Token(t, "former", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	b, _, csrf := signIn(t, a, tok)
	for _, path := range []string{"/inbox/state", "/inbox/read", "/inbox/feedback"} {
		resp, _ := testapp.Form(t, b, "POST", a.URL+path, url.Values{"arxiv_id": {"2611.00401"}, "state": {"done"}, "value": {"more"}, "up_to": {"0"}})
		if resp.StatusCode != 403 {
			t.Errorf("POST %s without the CSRF token: %d", path, resp.StatusCode)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM paper_states`) + count(t, db, `SELECT count(*) FROM feedback`); n != 0 {
		t.Fatalf("forms without the CSRF token recorded %d rows", n)
	}
	resp, _ := testapp.Form(t, b, "POST", a.URL+"/inbox/state", url.Values{"csrf": {csrf}, "arxiv_id": {"2611.00401"}, "state": {"done"},
		"return": {"state=unread&follow=category%3Acs.LG&evil=https%3A%2F%2Fexample.org"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || loc != "/inbox?follow=category%3Acs.LG&state=unread&done=state#paper-2611.00401" {
		t.Errorf("marking done: %d to %q", resp.StatusCode, loc)
	}
	if n := count(t, db, `SELECT count(*) FROM paper_states WHERE state = 'done'`); n != 1 {
		t.Errorf("%d done rows after the form, want 1", n)
	}
	// From the inbox's first view (no filter), back to it with no stray "&".
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/inbox/state", url.Values{"csrf": {csrf}, "arxiv_id": {"2611.00401"}, "state": {"read"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || loc != "/inbox?done=state#paper-2611.00401" {
		t.Errorf("marking read from the unfiltered inbox: %d to %q", resp.StatusCode, loc)
	}
	for _, f := range []struct {
		values url.Values
		status int
		says   string
	}{
		{url.Values{"arxiv_id": {"2611.00401"}, "state": {"gone"}}, 422, "State:"},
		{url.Values{"arxiv_id": {"2611.99999"}, "state": {"read"}}, 404, "arXiv:2611.99999"},
	} {
		f.values.Set("csrf", csrf)
		resp, body := testapp.Form(t, b, "POST", a.URL+"/inbox/state", f.values)
		if resp.StatusCode != f.status || !strings.Contains(body, f.says) {
			t.Errorf("POST /inbox/state %v: %d, want %d saying %q", f.values, resp.StatusCode, f.status, f.says)
		}
	}
	// Feedback from the inbox: back to the view, which names the paper
	// with an undo (best first, a paper marked less goes last, off the
	// page); the undo takes it back, and the page then offers none.
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/inbox/feedback", url.Values{"csrf": {csrf}, "arxiv_id": {"2611.00401"}, "value": {"less"}, "return": {"order=best"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || loc != "/inbox?order=best&done=feedback&paper=2611.00401#paper-2611.00401" {
		t.Fatalf("less from the inbox: %d to %q", resp.StatusCode, loc)
	}
	_, page := testapp.Form(t, b, "GET", a.URL+loc, nil)
	undo := regexp.MustCompile(`(?s)<form method="post" action="/inbox/feedback" id="feedback-undo".*?</form>`).FindString(page)
	if !strings.Contains(page, "Thanks: “Sparse attention” is marked “Less like this”.") || !strings.Contains(undo, `name="arxiv_id" value="2611.00401"`) ||
		!strings.Contains(undo, `name="value" value=""`) || !strings.Contains(undo, `name="return" value="order=best"`) {
		t.Fatalf("the inbox after less: undo form %q\n%s", undo, page)
	}
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/inbox/feedback", url.Values{"csrf": {csrf}, "arxiv_id": {"2611.00401"}, "value": {""}, "return": {"order=best"}})
	if resp.StatusCode != 303 || count(t, db, `SELECT count(*) FROM feedback`) != 0 {
		t.Errorf("the undo: %d, %d feedback rows", resp.StatusCode, count(t, db, `SELECT count(*) FROM feedback`))
	}
	for _, q := range []string{"done=feedback&paper=2611.00401", "done=feedback&paper=nonsense", "done=feedback&paper=2611.99999"} {
		if resp, page := testapp.Form(t, b, "GET", a.URL+"/inbox?"+q, nil); resp.StatusCode != 200 || strings.Contains(page, `id="feedback-undo"`) {
			t.Errorf("the inbox ?%s: %d, an undo offered: %v", q, resp.StatusCode, strings.Contains(page, `id="feedback-undo"`))
		}
	}
	if resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", a.URL+"/inbox", nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("the inbox signed out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := testapp.Form(t, b, "GET", a.URL+"/inbox?state=bogus", nil); resp.StatusCode != 422 {
		t.Errorf("the inbox with a bad filter: %d", resp.StatusCode)
	}
}
