package httpapi_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/config"
	"followfeed/database"
	"followfeed/internal/testapp"
	"followfeed/paper"
	"followfeed/worker"
)

// feedbackPath signs the feedback link (its path) a digest for sub would
// carry for the paper arxivID and value, as account.Addresses makes it.
func feedbackPath(t *testing.T, a *testapp.App, db *database.DB, sub, arxivID, value string) string {
	t.Helper()
	ctx := context.Background()
	var uid, epoch, pid int64
	if err := db.Pool.QueryRow(ctx, `SELECT id, link_epoch FROM users WHERE sub = $1`, sub).Scan(&uid, &epoch); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM papers WHERE arxiv_id = $1`, arxivID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(a.URL)
	link := account.NewAddresses(db, auth.NewLinkSigner([]byte(config.DevSecretKey)), base, nil).FeedbackURL(uid, epoch, pid, value)
	path, ok := strings.CutPrefix(link, a.URL)
	if !ok || !strings.HasPrefix(path, "/feedback/ffl_") {
		t.Fatalf("feedback link %s", link)
	}
	return path
}

// myFeedback is GET /v1/me/feedback as "arxiv_id=value" lines, newest first.
func myFeedback(t *testing.T, c *testapp.Client, tok string) string {
	t.Helper()
	var list struct {
		Feedback []struct {
			ArxivID string  `json:"arxiv_id"`
			Value   *string `json:"value"`
		} `json:"feedback"`
	}
	r := c.Do("GET", "/v1/me/feedback", tok, nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/me/feedback: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &list)
	var out []string
	for _, f := range list.Feedback {
		v := "null"
		if f.Value != nil {
			v = *f.Value
		}
		out = append(out, f.ArxivID+"="+v)
	}
	return strings.Join(out, " ")
}

// postLink sends a feedback link's form (its buttons' action field).
func postLink(c *testapp.Client, path, action string) *testapp.Response {
	body := ""
	if action != "" {
		body = "action=" + action
	}
	return c.Do("POST", path, "", body, "Content-Type", "application/x-www-form-urlencoded")
}

// TestFeedbackLinkPage: a feedback link's page shows the paper and a
// button, and loading it records nothing; the POST records the link's
// value and shows the page again with an undo button; undo clears it; the
// link works again; another value's link shows the value there is and
// changes it; an unknown action is a 422; a paper withdrawn since is a 404
// page, nothing recorded.
func TestFeedbackLinkPage(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	pushPaper(t, c, paperLine("2611.00101", "Sparse attention for long documents", "cs.LG"), paperLine("2611.00102", "Dense retrieval", "cs.LG"))
	tok := testapp.Token(t, "clicker", "clicker@example.org")
	c.Do("GET", "/v1/me", tok, nil)
	more := feedbackPath(t, a, db, "clicker", "2611.00101", "more")

	r := c.Do("GET", more, "", nil)
	page := string(r.Body)
	if r.Status != 200 || !strings.Contains(page, "Sparse attention for long documents") || !strings.Contains(page, "Ada Lovelace") ||
		!strings.Contains(page, `id="feedback-record"`) || strings.Contains(page, `id="feedback-undo"`) ||
		!strings.Contains(page, "no feedback on this paper yet") || !strings.Contains(page, "https://arxiv.org/abs/2611.00101") {
		t.Fatalf("the link's page: %d\n%s", r.Status, page)
	}
	if r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("the page of a link with a token has Referrer-Policy %q", r.Header.Get("Referrer-Policy"))
	}
	// Its settings link leads to the page that lists the feedback (the
	// single settings page's anchors led to the inbox).
	if !strings.Contains(page, `href="/settings/account#feedback"`) {
		t.Errorf("the link's page does not link the feedback list:\n%s", page)
	}
	b, _, _ := signIn(t, a, tok)
	if _, account := testapp.Form(t, b, "GET", a.URL+"/settings/account", nil); !strings.Contains(account, `id="feedback"`) {
		t.Errorf("the account page has no #feedback section")
	}
	if _, follows := testapp.Form(t, b, "GET", a.URL+"/settings/follows", nil); !strings.Contains(follows, `id="mutes"`) {
		t.Errorf("the follows page has no #mutes section")
	}
	if got := myFeedback(t, c, tok); got != "" {
		t.Fatalf("loading the page recorded %q", got)
	}

	r = postLink(c, more, "")
	page = string(r.Body)
	if r.Status != 200 || !strings.Contains(page, "Recorded: More like this.") || !strings.Contains(page, `id="feedback-undo"`) || strings.Contains(page, `id="feedback-record"`) {
		t.Fatalf("recording: %d\n%s", r.Status, page)
	}
	if got := myFeedback(t, c, tok); got != "2611.00101=more" {
		t.Fatalf("after the button: %q", got)
	}
	if page := string(c.Do("GET", more, "", nil).Body); !strings.Contains(page, `id="feedback-undo"`) || !strings.Contains(page, "you said <strong>More like this</strong>") {
		t.Errorf("the link again, once recorded: no undo\n%s", page)
	}

	r = postLink(c, more, "undo")
	if r.Status != 200 || !strings.Contains(string(r.Body), "Undone") || !strings.Contains(string(r.Body), `id="feedback-record"`) {
		t.Fatalf("undo: %d\n%s", r.Status, r.Body)
	}
	if got := myFeedback(t, c, tok); got != "" {
		t.Fatalf("after undo: %q", got)
	}
	// The link works again; then the "less" link of the same paper shows
	// what was said and changes it.
	postLink(c, more, "record")
	less := feedbackPath(t, a, db, "clicker", "2611.00101", "less")
	if page := string(c.Do("GET", less, "", nil).Body); !strings.Contains(page, "You said <strong>More like this</strong>") ||
		!strings.Contains(page, `id="feedback-record"`) || !strings.Contains(page, `id="feedback-clear"`) {
		t.Errorf("a less link after more:\n%s", page)
	}
	postLink(c, less, "")
	if got := myFeedback(t, c, tok); got != "2611.00101=less" {
		t.Fatalf("after less: %q", got)
	}
	save := feedbackPath(t, a, db, "clicker", "2611.00102", "saved")
	// An unknown action: the page again (HTML, for the browser that
	// posted it), saying what the actions are, nothing recorded.
	if r := postLink(c, save, "keep"); r.Status != 422 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.Body), "record, undo or mute") || !strings.Contains(string(r.Body), `id="feedback-record"`) {
		t.Errorf("an unknown action: %d %s", r.Status, r.Body)
	}
	if got := myFeedback(t, c, tok); got != "2611.00101=less" {
		t.Fatalf("after an unknown action: %q", got)
	}
	postLink(c, save, "")
	if got := myFeedback(t, c, tok); got != "2611.00102=saved 2611.00101=less" {
		t.Fatalf("after save: %q", got)
	}

	// Withdrawn: its link's page and button are a 404 page; nothing changes.
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.NewStore(db, worker.NewEnqueuer(ins)).Ingest(context.Background(),
		[]paper.Paper{{ArxivID: "2611.00101", Deleted: true}}, catalog.SourceOAI); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"GET", "POST"} {
		r := c.Do(method, more, "", nil)
		if r.Status != 404 || !strings.Contains(string(r.Body), "was withdrawn") || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s of a withdrawn paper's link: %d %s", method, r.Status, r.Body)
		}
	}
	if r := postLink(c, more, "undo"); r.Status != 404 {
		t.Errorf("undo on a withdrawn paper: %d", r.Status)
	}
	if got := myFeedback(t, c, tok); !strings.Contains(got, "2611.00102=saved") {
		t.Errorf("after the withdrawn paper's links: %q", got)
	}
}

// TestFeedbackLinkRefusesBadLinks: a forged link (another signature, or
// one signed with another key), an altered one (its user, paper or value
// changed), another action's link and every link after POST
// /v1/me/email-links/revoke are the bad-link page (404) for GET and POST,
// and nothing is recorded.
func TestFeedbackLinkRefusesBadLinks(t *testing.T) {
	t.Parallel()
	t.Log("hostile: access")
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	pushPaper(t, c, paperLine("2611.00201", "Graph kernels", "cs.LG"))
	alice, bob := testapp.Token(t, "alice", "alice@example.org"), testapp.Token(t, "bob", "bob@example.org")
	c.Do("GET", "/v1/me", alice, nil)
	c.Do("GET", "/v1/me", bob, nil)
	good := feedbackPath(t, a, db, "alice", "2611.00201", "more")
	tok := strings.TrimPrefix(good, "/feedback/")
	var aliceID, epoch, pid int64
	db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = 'alice'`).Scan(&aliceID, &epoch)
	db.Pool.QueryRow(context.Background(), `SELECT id FROM papers WHERE arxiv_id = '2611.00201'`).Scan(&pid)
	body, sig, _ := strings.Cut(strings.TrimPrefix(tok, auth.LinkPrefix), ".")
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	other := auth.NewLinkSigner([]byte("another key, another site, 32 bytes at least"))
	data := func(v string) []byte { return append(binary.AppendVarint(nil, pid), v...) }
	bad := map[string]string{
		"another signature":     auth.LinkPrefix + body + "." + flip(sig, 3),
		"an altered body":       auth.LinkPrefix + flip(body, len(body)/2) + "." + sig,
		"a truncated link":      tok[:len(tok)-5],
		"signed by another key": other.Sign(auth.Link{Action: auth.ActionFeedback, UserID: aliceID, Epoch: epoch, Data: data("more")}),
		"another action":        strings.TrimPrefix(unsubscribeLink(t, a, "alice"), a.URL+"/unsubscribe/"),
		"not a token":           "ffl_%3Cscript%3E",
	}
	check := func(name, path string) {
		t.Helper()
		for _, method := range []string{"GET", "POST"} {
			r := c.Do(method, path, "", nil)
			if r.Status != 404 || !strings.Contains(string(r.Body), "This link is not valid") {
				t.Errorf("%s, %s: %d\n%s", name, method, r.Status, r.Body)
			}
		}
	}
	for name, b := range bad {
		check(name, "/feedback/"+b)
	}
	if got := myFeedback(t, c, alice) + myFeedback(t, c, bob); got != "" {
		t.Fatalf("bad links recorded %q", got)
	}
	// Bob's link records for Bob only.
	if r := postLink(c, feedbackPath(t, a, db, "bob", "2611.00201", "less"), ""); r.Status != 200 {
		t.Fatalf("bob's link: %d", r.Status)
	}
	if got := myFeedback(t, c, alice) + "|" + myFeedback(t, c, bob); got != "|2611.00201=less" {
		t.Fatalf("bob's link: %q", got)
	}
	// Revoked: the old link is dead, a new one works.
	if r := c.Do("POST", "/v1/me/email-links/revoke", alice, nil); r.Status != 204 {
		t.Fatalf("revoke: %d", r.Status)
	}
	check("revoked", good)
	if got := myFeedback(t, c, alice); got != "" {
		t.Fatalf("a revoked link recorded %q", got)
	}
	if r := postLink(c, feedbackPath(t, a, db, "alice", "2611.00201", "more"), ""); r.Status != 200 {
		t.Errorf("a link made after revoking: %d", r.Status)
	}
	if got := myFeedback(t, c, alice); got != "2611.00201=more" {
		t.Errorf("a link made after revoking recorded %q", got)
	}
}

// TestLessLinkOffersNotThisPerson: the page of a "less like this" link of
// a paper by a researcher the user follows (through another id of the
// same person) offers that researcher's "Not by …?" link, which leads to
// the dispute page; a "more" link's page does not, nor a "less" link's of
// a paper by nobody the user follows.
func TestLessLinkOffersNotThisPerson(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	reader, stranger := testapp.Token(t, "reader", "reader@example.org"), testapp.Token(t, "stranger", "")
	c.Do("GET", "/v1/me", stranger, nil)
	c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "openalex:A5023888391"], "name": "Mingzhi Wen"}]`)
	c.Do("PUT", "/v1/me/follows/researcher/host:1955166", reader, nil)
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	pushPaper(t, c, `{"arxiv_id": "2202.02326", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "M. Wen", "ids": ["openalex:A5023888391"]}, {"name": "Ada Lovelace"}], "categories": ["cs.LG"], "primary_category": "cs.LG"}`,
		paperLine("2611.00301", "Someone else's paper", "cs.LG"))

	notBy := regexp.MustCompile(`<a class="button" href="([^"]+)"[^>]*>Not by ([^<]+)\?</a>`)
	page := string(c.Do("GET", feedbackPath(t, a, db, "reader", "2202.02326", "less"), "", nil).Body)
	m := notBy.FindAllStringSubmatch(page, -1)
	if len(m) != 1 || m[0][2] != "Mingzhi Wen" || !strings.HasPrefix(m[0][1], a.URL+"/not-this-person/ffl_") {
		t.Fatalf("the less link's page offers %v\n%s", m, page)
	}
	dispute := strings.TrimPrefix(m[0][1], a.URL)
	if r := c.Do("GET", dispute, "", nil); r.Status != 200 || !strings.Contains(string(r.Body), "2202.02326") || !strings.Contains(string(r.Body), "host:1955166") {
		t.Errorf("its Not by link: %d\n%s", r.Status, r.Body)
	}
	for name, path := range map[string]string{
		"a more link":                           feedbackPath(t, a, db, "reader", "2202.02326", "more"),
		"a less link of nobody followed":        feedbackPath(t, a, db, "reader", "2611.00301", "less"),
		"another user's less link of the paper": feedbackPath(t, a, db, "stranger", "2202.02326", "less"),
	} {
		if page := string(c.Do("GET", path, "", nil).Body); notBy.MatchString(page) {
			t.Errorf("%s offers Not by:\n%s", name, page)
		}
	}
	if got := myFeedback(t, c, reader); got != "" {
		t.Errorf("loading the pages recorded %q", got)
	}
}

// TestSettingsFeedbackList: the settings page lists the user's feedback
// newest first, a page of 20 with a link to the older ones; a row's Undo
// removes it (a POST without the CSRF token, or from another origin, is
// refused and removes nothing); a cursor that is not the list's is a 422
// page showing the newest.
func TestSettingsFeedbackList(t *testing.T) {
	t.Parallel()
	t.Log("hostile: csrf")
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	var lines []string
	for i := 1; i <= 22; i++ {
		lines = append(lines, paperLine(fmt.Sprintf("2611.%05d", 400+i), fmt.Sprintf("Paper number %d", i), "cs.LG"))
	}
	pushPaper(t, c, lines...)
	tok := testapp.Token(t, "settler", "settler@example.org")
	for i := 1; i <= 22; i++ {
		v := "more"
		if i%2 == 0 {
			v = "less"
		}
		if r := c.Do("PUT", fmt.Sprintf("/v1/me/papers/2611.%05d/feedback", 400+i), tok, map[string]any{"value": v}); r.Status != 200 {
			t.Fatalf("feedback %d: %d %s", i, r.Status, r.Body)
		}
	}
	b, _, csrf := signIn(t, a, tok)
	page, _ := settingsPage(t, a, b, "/settings/account")
	rows := regexp.MustCompile(`data-feedback="([^"]+)"`)
	ids := func(page string) []string {
		var out []string
		for _, m := range rows.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return out
	}
	first := ids(page)
	if len(first) != 20 || first[0] != "2611.00422" || first[19] != "2611.00403" || !strings.Contains(page, `id="feedback-more"`) ||
		!strings.Contains(page, "Paper number 22") || !strings.Contains(page, "Less like this") {
		t.Fatalf("the first page lists %v\n%s", first, page)
	}
	more := regexp.MustCompile(`href="(/settings/account\?feedback=[^"]+)" id="feedback-more"`).FindStringSubmatch(page)
	resp, older := testapp.Form(t, b, "GET", a.URL+strings.ReplaceAll(more[1], "&amp;", "&"), nil)
	if got := ids(older); resp.StatusCode != 200 || strings.Join(got, ",") != "2611.00402,2611.00401" || strings.Contains(older, `id="feedback-more"`) {
		t.Errorf("the second page: %d %v", resp.StatusCode, got)
	}
	resp, bad := testapp.Form(t, b, "GET", a.URL+"/settings/account?feedback=nonsense", nil)
	if got := ids(bad); resp.StatusCode != 422 || len(got) != 20 || got[0] != "2611.00422" || !strings.Contains(bad, `id="feedback-error"`) {
		t.Errorf("a bad cursor: %d %v", resp.StatusCode, got)
	}

	undo := url.Values{"arxiv_id": {"2611.00422"}, "value": {""}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/feedback", undo); resp.StatusCode != 403 {
		t.Errorf("undo without the CSRF token: %d", resp.StatusCode)
	}
	undo.Set("csrf", csrf)
	req, _ := http.NewRequest("POST", a.URL+"/settings/feedback", strings.NewReader(undo.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := b.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("undo from another origin: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if got := myFeedback(t, c, tok); !strings.HasPrefix(got, "2611.00422=less ") {
		t.Fatalf("a refused undo removed feedback: %q", got)
	}
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/feedback", undo)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/account?done=feedback#feedback" {
		t.Fatalf("undo: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := myFeedback(t, c, tok); strings.Contains(got, "2611.00422") || !strings.HasPrefix(got, "2611.00421=more ") {
		t.Errorf("after undo: %q", got)
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/account?done=feedback", nil)
	if got := ids(page); len(got) != 20 || got[0] != "2611.00421" || !strings.Contains(page, "Feedback removed") {
		t.Errorf("the page after undo lists %v", got)
	}
	// An Undo on an older page comes back to that page, which then
	// lists what is left of it.
	cursor := regexp.MustCompile(`name="page" value="([^"]+)"`).FindStringSubmatch(older)
	if cursor == nil || strings.Contains(page, `name="page"`) {
		t.Fatalf("the page cursor: on the second page %v; on the first %v", cursor, strings.Contains(page, `name="page"`))
	}
	was := regexp.MustCompile(`name="arxiv_id" value="2611.00402"><input type="hidden" name="value" value=""><input type="hidden" name="was" value="([^"]*)"`).FindStringSubmatch(older)
	if was == nil || was[1] != "less" {
		t.Fatalf("the row's Undo does not carry the value it removes: %v", was)
	}
	olderUndo := url.Values{"csrf": {csrf}, "arxiv_id": {"2611.00402"}, "value": {""}, "was": {was[1]}, "page": {html.UnescapeString(cursor[1])}}
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/feedback", olderUndo)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.HasPrefix(loc, "/settings/account?done=feedback&feedback=") || !strings.HasSuffix(loc, "#feedback") {
		t.Fatalf("undo on the second page: %d %s", resp.StatusCode, loc)
	}
	resp, older = testapp.Form(t, b, "GET", a.URL+strings.TrimSuffix(loc, "#feedback"), nil)
	if got := ids(older); resp.StatusCode != 200 || strings.Join(got, ",") != "2611.00401" || !strings.Contains(older, "Feedback removed") {
		t.Errorf("the second page after its undo: %d %v", resp.StatusCode, got)
	}
	// The page offers the removed feedback back ("Put it back"), which
	// puts it back as the newest feedback and shows the first page,
	// where it now is.
	if !strings.Contains(older, `id="feedback-restore"`) || !strings.Contains(older, "Removed “Less like this” on “Paper number 2”") {
		t.Fatalf("no offer to put the feedback back:\n%s", older)
	}
	restore := url.Values{"csrf": {csrf}}
	for _, m := range regexp.MustCompile(`<form method="post" action="/settings/feedback" id="feedback-restore"[^>]*>([\s\S]*?)</form>`).FindAllStringSubmatch(older, 1) {
		for _, in := range regexp.MustCompile(`name="(arxiv_id|value)" value="([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
			restore.Set(in[1], html.UnescapeString(in[2]))
		}
	}
	restore.Set("page", html.UnescapeString(cursor[1])) // a page sent anyway is not where it is
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/feedback", restore)
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || loc != "/settings/account?done=feedback-set#feedback" {
		t.Errorf("put it back: %d %s", resp.StatusCode, loc)
	}
	if _, first := testapp.Form(t, b, "GET", a.URL+"/settings/account?done=feedback-set", nil); len(ids(first)) == 0 || ids(first)[0] != "2611.00402" {
		t.Errorf("the first page after putting it back lists %v, want 2611.00402 first", ids(first))
	}
	if got := myFeedback(t, c, tok); !strings.Contains(got, "2611.00402=less") {
		t.Errorf("after putting it back: %q", got)
	}
	// Not offered again once the paper has feedback, nor for a value or
	// a paper that is none.
	for _, q := range []string{"undone=2611.00402&was=less", "undone=2611.00402&was=bogus", "undone=not-an-id&was=less", "undone=2611.09999&was=more"} {
		if _, p := testapp.Form(t, b, "GET", a.URL+"/settings/account?done=feedback&"+q, nil); strings.Contains(p, `id="feedback-restore"`) {
			t.Errorf("?%s offers feedback back", q)
		}
	}
	undoAgain := url.Values{"csrf": {csrf}, "arxiv_id": {"2611.00402"}, "value": {""}, "was": {"less"}}
	if resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/feedback", undoAgain); resp.StatusCode != 303 {
		t.Fatalf("the undo again: %d", resp.StatusCode)
	}
	// A refused Undo on an older page shows that page again with the
	// problem.
	olderUndo.Set("arxiv_id", "2611.00401")
	olderUndo.Set("value", "bogus")
	if resp, again := testapp.Form(t, b, "POST", a.URL+"/settings/feedback", olderUndo); resp.StatusCode != 422 || strings.Join(ids(again), ",") != "2611.00401" {
		t.Errorf("a refused undo on the second page: %d, lists %v", resp.StatusCode, ids(again))
	}
	olderUndo.Set("value", "")
	// A page cursor that is not the list's: back to the first page, with
	// the list's own message, nothing lost.
	olderUndo.Set("arxiv_id", "2611.00401")
	olderUndo.Set("page", strings.Repeat("x", 201)) // longer than any cursor of the list
	if resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/feedback", olderUndo); resp.Header.Get("Location") != "/settings/account?done=feedback&undone=2611.00401&was=less#feedback" {
		t.Errorf("undo with an overlong page: %s", resp.Header.Get("Location"))
	}
	olderUndo.Set("page", "nonsense")
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/feedback", olderUndo)
	if resp, bad := testapp.Form(t, b, "GET", a.URL+strings.TrimSuffix(resp.Header.Get("Location"), "#feedback"), nil); resp.StatusCode != 422 || !strings.Contains(bad, `id="feedback-error"`) {
		t.Errorf("undo with a page that is not the list's, then its page: %d", resp.StatusCode)
	}
	undo.Set("arxiv_id", "not-an-id")
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/feedback", undo); resp.StatusCode != 422 {
		t.Errorf("undo of no arXiv id: %d", resp.StatusCode)
	}
	undo.Set("arxiv_id", "2611.00421")
	undo.Set("value", "bogus")
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/feedback", undo); resp.StatusCode != 422 {
		t.Errorf("a bogus value: %d", resp.StatusCode)
	}
	// A manage link from a mail opens the email settings only: no
	// feedback list, and no undo with its token.
	db := openDB(t, a.DatabaseURL)
	var uid, epoch int64
	db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = 'settler'`).Scan(&uid, &epoch)
	manage := auth.NewLinkSigner([]byte(config.DevSecretKey)).Sign(auth.Link{Action: auth.ActionManage, UserID: uid, Epoch: epoch})
	m := testapp.FormClient(t)
	resp, page = testapp.Form(t, m, "GET", a.URL+"/settings?token="+url.QueryEscape(manage), nil)
	if resp.StatusCode != 200 || strings.Contains(page, `id="feedback"`) || !strings.Contains(page, `id="budget"`) {
		t.Errorf("the manage link's page: %d, feedback shown or budget not", resp.StatusCode)
	}
	resp, _ = testapp.Form(t, m, "POST", a.URL+"/settings/feedback", url.Values{"csrf": {testapp.CSRF.FindStringSubmatch(page)[1]},
		"token": {manage}, "arxiv_id": {"2611.00421"}, "value": {""}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("undo with a manage link: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := myFeedback(t, c, tok); !strings.HasPrefix(got, "2611.00421=more ") {
		t.Errorf("a manage link removed feedback: %q", got)
	}
}

// TestSettingsBudgetControls: the email form's order, max papers and keep
// followed controls show the stored settings and save them (as PATCH
// /v1/me shows); a count out of range or not a number is a 422 page and
// changes nothing; a form without the controls leaves them as they are.
func TestSettingsBudgetControls(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "budgeter", "budgeter@example.org")
	b, _, csrf := signIn(t, a, tok)
	page, _ := settingsPage(t, a, b, "/settings/email")
	if !strings.Contains(page, `<option value="newest" selected>`) || !strings.Contains(page, `id="max-papers" type="number" name="max_papers" min="0" max="75" step="1" inputmode="numeric" value="0"`) ||
		!regexp.MustCompile(`id="keep-followed" name="keep_followed" value="1" checked`).MatchString(page) {
		t.Fatalf("the budget controls at first:\n%s", page)
	}
	digest := func() map[string]any {
		t.Helper()
		var me struct {
			Digest map[string]any `json:"digest"`
		}
		c.Do("GET", "/v1/me", tok, nil).JSON(t, &me)
		return me.Digest
	}
	form := url.Values{"csrf": {csrf}, "email": {"budgeter@example.org"}, "frequency": {"daily"}, "order": {"best"}, "max_papers": {"30"}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/email", form); resp.StatusCode != 303 {
		t.Fatalf("saving: %d", resp.StatusCode)
	}
	if d := digest(); d["order"] != "best" || d["max_papers"] != float64(30) || d["keep_followed"] != false {
		t.Fatalf("saved: %v", d)
	}
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/email", nil)
	if !strings.Contains(page, `<option value="best" selected>`) || !strings.Contains(page, `value="30"`) ||
		regexp.MustCompile(`id="keep-followed" name="keep_followed" value="1" checked`).MatchString(page) {
		t.Errorf("the page after saving does not show the budget")
	}
	for _, n := range []string{"76", "-1", "lots", ""} {
		form.Set("max_papers", n)
		form.Set("keep_followed", "1")
		if resp, page := testapp.Form(t, b, "POST", a.URL+"/settings/email", form); resp.StatusCode != 422 || !strings.Contains(page, "max_papers") {
			t.Errorf("max_papers %q: %d", n, resp.StatusCode)
		}
	}
	form.Set("max_papers", "30")
	form.Set("order", "sideways")
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/email", form); resp.StatusCode != 422 {
		t.Errorf("order sideways: %d", resp.StatusCode)
	}
	if d := digest(); d["order"] != "best" || d["max_papers"] != float64(30) || d["keep_followed"] != false {
		t.Fatalf("refused forms changed the budget: %v", d)
	}
	// An email form without the budget controls leaves them alone.
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/email", url.Values{"csrf": {csrf}, "frequency": {"weekly"}}); resp.StatusCode != 303 {
		t.Fatalf("a form without the controls: %d", resp.StatusCode)
	}
	if d := digest(); d["frequency"] != "weekly" || d["order"] != "best" || d["max_papers"] != float64(30) || d["keep_followed"] != false {
		t.Errorf("a form without the controls changed the budget: %v", d)
	}
	form.Set("order", "newest")
	form.Set("max_papers", "0")
	form.Set("keep_followed", "1")
	testapp.Form(t, b, "POST", a.URL+"/settings/email", form)
	if d := digest(); d["order"] != "newest" || d["max_papers"] != float64(0) || d["keep_followed"] != true {
		t.Errorf("back to newest: %v", d)
	}
}
