package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"followfeed/internal/testapp"
)

// authoredLine is a pushed paper in cs.LG by one author with the given
// researcher id.
func authoredLine(id, title, authorID string) string {
	return fmt.Sprintf(`{"arxiv_id": %q, "title": %q, "authors": [{"name": "Ann Author", "ids": [%q]}], "abstract": "An abstract about dark matter.", "categories": ["cs.LG"], "primary_category": "cs.LG"}`, id, title, authorID)
}

type muteOut struct {
	ID         int64
	Kind       string
	Researcher string
	Query      string
	Category   string
	CrossLists *bool `json:"cross_lists"`
	Follow     *struct{ Kind, ID string }
}

// TestMutesAPI: POST /v1/me/mutes (201 with its id, 200 for the same
// again, 422 naming the field for bad input, the search's position for a
// query that does not parse), GET /v1/me/mutes, DELETE (another user's:
// 404), a muted author's paper leaving the private feed and coming back
// when the mute goes, and the "why" naming the mute.
func TestMutesAPI(t *testing.T) {
	t.Parallel()
	a, c := start(t)
	ada, bob := testapp.Token(t, "ada", "ada@example.org"), testapp.Token(t, "bob", "bob@example.org")
	for _, tok := range []string{ada, bob} {
		if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil); r.Status != 201 {
			t.Fatalf("follow: %d %s", r.Status, r.Body)
		}
	}
	pushPaper(t, c, authoredLine("2612.00001", "Muted author's paper", "openalex:A9"), authoredLine("2612.00002", "Another author's paper", "openalex:A8"))
	matchIdle(t, a, openDB(t, a.DatabaseURL))

	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "researcher"},
		{map[string]any{"researcher": "nobody:1"}, "researcher"},
		{map[string]any{"query": `abs:"dark matter`}, "query"},
		{map[string]any{"category": "cs.LG"}, "cross_lists"},
		{map[string]any{"category": "cs.LG", "cross_lists": true}, "cross_lists"},
		{map[string]any{"query": "survey", "follow": map[string]any{"kind": "category", "id": "cs.CV"}}, "follow"},
		{map[string]any{"query": "survey", "follow": map[string]any{"kind": "planet", "id": "x"}}, "follow.kind"},
		{map[string]any{"query": "survey", "colour": "red"}, "colour"},
	} {
		r := c.Do("POST", "/v1/me/mutes", ada, bad.body)
		var p struct {
			Field  string
			Errors []struct{ Index int }
		}
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != bad.field || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("POST %v: %d field %q, want 422 naming %q: %s", bad.body, r.Status, p.Field, bad.field, r.Body)
		}
		if bad.field == "query" && (len(p.Errors) != 1 || p.Errors[0].Index != 5) {
			t.Errorf("a query that does not parse: %s, want the position", r.Body)
		}
	}

	r := c.Do("POST", "/v1/me/mutes", ada, map[string]any{"researcher": "https://openalex.org/A9"})
	var m muteOut
	r.JSON(t, &m)
	if r.Status != 201 || m.ID == 0 || m.Kind != "researcher" || m.Researcher != "openalex:A9" || m.Follow != nil {
		t.Fatalf("POST a researcher mute: %d %s", r.Status, r.Body)
	}
	var again muteOut
	if r := c.Do("POST", "/v1/me/mutes", ada, map[string]any{"researcher": "openalex:A9"}); r.Status != 200 {
		t.Errorf("the same mute again: %d, want 200", r.Status)
	} else if r.JSON(t, &again); again.ID != m.ID {
		t.Errorf("the same mute again: id %d, want %d", again.ID, m.ID)
	}
	r = c.Do("POST", "/v1/me/mutes", ada, map[string]any{"category": "cs.LG", "cross_lists": false, "follow": map[string]any{"kind": "category", "id": "cs.lg"}})
	var cross muteOut
	r.JSON(t, &cross)
	if r.Status != 201 || cross.Category != "cs.LG" || cross.CrossLists == nil || *cross.CrossLists || cross.Follow == nil || cross.Follow.ID != "cs.LG" {
		t.Errorf("POST a cross-list mute: %d %s", r.Status, r.Body)
	}
	var list struct{ Mutes []muteOut }
	c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list)
	if len(list.Mutes) != 2 || list.Mutes[0].ID != m.ID || list.Mutes[1].ID != cross.ID {
		t.Errorf("GET /v1/me/mutes: %+v", list.Mutes)
	}
	c.Do("GET", "/v1/me/mutes", bob, nil).JSON(t, &list)
	if len(list.Mutes) != 0 {
		t.Errorf("bob's mutes: %+v", list.Mutes)
	}

	feed := func(tok string) string {
		var f struct{ Atom string }
		c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &f)
		r := c.Do("GET", strings.TrimPrefix(f.Atom, a.URL), "", nil)
		if r.Status != 200 {
			t.Fatalf("the feed: %d", r.Status)
		}
		return string(r.Body)
	}
	if body := feed(ada); strings.Contains(body, "Muted author") || !strings.Contains(body, "Another author") {
		t.Errorf("ada's feed with the mute: the muted paper is in it, or the other is not")
	}
	if body := feed(bob); !strings.Contains(body, "Muted author") {
		t.Errorf("bob's feed (no mutes) lacks the paper")
	}

	var why struct {
		Shown       bool
		Mutes       []muteOut
		Explanation string
	}
	r = c.Do("GET", "/v1/me/papers/2612.00001v1/why", ada, nil)
	r.JSON(t, &why)
	if r.Status != 200 || why.Shown || len(why.Mutes) != 1 || why.Mutes[0].ID != m.ID || !strings.Contains(why.Explanation, "hidden by your mute of researcher Ann Author (openalex:A9)") {
		t.Errorf("why not 2612.00001: %d %s", r.Status, r.Body)
	}
	c.Do("GET", "/v1/me/papers/2612.00002/why", ada, nil).JSON(t, &why)
	if !why.Shown || len(why.Mutes) != 0 {
		t.Errorf("why 2612.00002: %+v", why)
	}
	if r := c.Do("GET", "/v1/me/papers/2612.09999/why", ada, nil); r.Status != 404 {
		t.Errorf("why of an unknown paper: %d", r.Status)
	}

	for _, path := range []string{fmt.Sprintf("/v1/me/mutes/%d", m.ID), "/v1/me/mutes/x"} {
		if r := c.Do("DELETE", path, bob, nil); r.Status != 404 {
			t.Errorf("bob DELETE %s: %d, want 404", path, r.Status)
		}
	}
	if r := c.Do("DELETE", fmt.Sprintf("/v1/me/mutes/%d", m.ID), ada, nil); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if body := feed(ada); !strings.Contains(body, "Muted author") {
		t.Errorf("ada's feed after the mute went: the paper is not back")
	}
}

// TestLessLinkOffersNotFromThisAuthor: a "less like this" link's page
// offers "Not from <author>" for the paper's authors with an id; the
// button mutes that author for every follow (their other paper leaves
// the feed), refuses an id that is not one of the paper's authors', and a
// "more" link's page does not offer it, nor a page of a reader who follows
// the author.
func TestLessLinkOffersNotFromThisAuthor(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	reader := testapp.Token(t, "reader", "reader@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	pushPaper(t, c, authoredLine("2612.00101", "A paper I like less", "openalex:A77"), authoredLine("2612.00102", "Same author again", "openalex:A77"))
	matchIdle(t, a, db)

	less := feedbackPath(t, a, db, "reader", "2612.00101", "less")
	page := string(c.Do("GET", less, "", nil).Body)
	if !strings.Contains(page, `name="researcher" value="openalex:A77"`) || !strings.Contains(page, "Not from Ann Author") {
		t.Fatalf("the less link's page offers no Not from:\n%s", page)
	}
	if page := string(c.Do("GET", feedbackPath(t, a, db, "reader", "2612.00101", "more"), "", nil).Body); strings.Contains(page, "Not from") {
		t.Errorf("a more link's page offers Not from")
	}
	form := func(body string) *testapp.Response {
		return c.Do("POST", less, "", body, "Content-Type", "application/x-www-form-urlencoded")
	}
	if r := form("action=mute&researcher=openalex:A1"); r.Status != 422 {
		t.Errorf("muting an id that is not the paper's: %d", r.Status)
	}
	// A link does what its page offers: a "more" link's, sent the mute
	// form anyway, mutes nothing.
	more := feedbackPath(t, a, db, "reader", "2612.00101", "more")
	if r := c.Do("POST", more, "", "action=mute&researcher=openalex:A77", "Content-Type", "application/x-www-form-urlencoded"); r.Status != 422 || !strings.Contains(string(r.Body), "Less like this") {
		t.Errorf("muting through a more link: %d\n%s", r.Status, r.Body)
	}
	var none struct{ Mutes []muteOut }
	if c.Do("GET", "/v1/me/mutes", reader, nil).JSON(t, &none); len(none.Mutes) != 0 {
		t.Errorf("a more link muted: %+v", none.Mutes)
	}
	r := form("action=mute&researcher=openalex:A77")
	if r.Status != 200 || !strings.Contains(string(r.Body), "Muted Ann Author") {
		t.Fatalf("Not from: %d\n%s", r.Status, r.Body)
	}
	// Muted: the page (after the button, and opened again) says so and
	// offers the button no more.
	for _, page := range []string{string(r.Body), string(c.Do("GET", less, "", nil).Body)} {
		if strings.Contains(page, `name="researcher" value="openalex:A77"`) || !strings.Contains(page, "Ann Author is muted") {
			t.Errorf("the less page after Not from Ann Author:\n%s", page)
		}
	}
	var list struct{ Mutes []muteOut }
	c.Do("GET", "/v1/me/mutes", reader, nil).JSON(t, &list)
	if len(list.Mutes) != 1 || list.Mutes[0].Researcher != "openalex:A77" || list.Mutes[0].Follow != nil {
		t.Errorf("mutes after Not from: %+v", list.Mutes)
	}
	var f struct{ Atom string }
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &f)
	if body := string(c.Do("GET", strings.TrimPrefix(f.Atom, a.URL), "", nil).Body); strings.Contains(body, "Same author again") {
		t.Errorf("the muted author's other paper is still in the feed")
	}
	if got := myFeedback(t, c, reader); got != "" {
		t.Errorf("muting recorded feedback %q", got)
	}
	// An author the reader follows is not offered (muting them took
	// their papers away without a word); "Not by …?" is.
	fan := testapp.Token(t, "fan", "fan@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", fan, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A77", fan, nil)
	fanLess := feedbackPath(t, a, db, "fan", "2612.00101", "less")
	page = string(c.Do("GET", fanLess, "", nil).Body)
	if strings.Contains(page, "Not from Ann Author") || !strings.Contains(page, "Not by") {
		t.Errorf("the less page of a reader who follows the author:\n%s", page)
	}
	// Nor is the form's POST, sent anyway, a mute of them.
	if r := c.Do("POST", fanLess, "", "action=mute&researcher=openalex:A77", "Content-Type", "application/x-www-form-urlencoded"); r.Status != 422 || !strings.Contains(string(r.Body), "someone you follow") {
		t.Errorf("muting a followed author through the less link: %d\n%s", r.Status, r.Body)
	}
	if c.Do("GET", "/v1/me/mutes", fan, nil).JSON(t, &list); len(list.Mutes) != 0 {
		t.Errorf("the fan muted the author they follow: %+v", list.Mutes)
	}
}

// TestSettingsMuteForms: the settings page's mute forms refuse a POST
// without the CSRF token (403, nothing stored), add a mute (303 to
// /settings#mutes, listed on the page), show a bad search again with the
// problem (422), and refuse to remove another user's mute (404).
func TestSettingsMuteForms(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	ada, bob := testapp.Token(t, "ada", "ada@example.org"), testapp.Token(t, "bob", "bob@example.org")
	b, _, csrf := signIn(t, a, ada)
	add := url.Values{"what": {"words"}, "value": {`abs:"dark matter"`}, "follow": {""}}
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/mutes", add); resp.StatusCode != 403 {
		t.Errorf("a mute without the CSRF token: %d", resp.StatusCode)
	}
	var list struct{ Mutes []muteOut }
	if c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list); len(list.Mutes) != 0 {
		t.Fatalf("a refused form stored %+v", list.Mutes)
	}
	add.Set("csrf", csrf)
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/settings/mutes", add); resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/follows?done=muted#mutes" {
		t.Fatalf("add: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows?done=muted", nil); !strings.Contains(page, `the words abs:&#34;dark matter&#34;`) || !strings.Contains(page, "Mutes (1 of 100)") {
		t.Errorf("the settings page does not list the mute")
	}
	bad := url.Values{"csrf": {csrf}, "what": {"words"}, "value": {`abs:"dark`}}
	if resp, page := testapp.Form(t, b, "POST", a.URL+"/settings/mutes", bad); resp.StatusCode != 422 || !strings.Contains(page, "at character 5") {
		t.Errorf("a search that does not parse: %d", resp.StatusCode)
	}
	c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list)
	if len(list.Mutes) != 1 {
		t.Fatalf("ada's mutes: %+v", list.Mutes)
	}
	bb, _, bcsrf := signIn(t, a, bob)
	if resp, _ := testapp.Form(t, bb, "POST", fmt.Sprintf("%s/settings/mutes/%d", a.URL, list.Mutes[0].ID), url.Values{"csrf": {bcsrf}}); resp.StatusCode != 404 {
		t.Errorf("bob removes ada's mute: %d", resp.StatusCode)
	}
	if resp, _ := testapp.Form(t, b, "POST", fmt.Sprintf("%s/settings/mutes/%d", a.URL, list.Mutes[0].ID), url.Values{"csrf": {csrf}}); resp.StatusCode != 303 || resp.Header.Get("Location") != "/settings/follows?done=unmuted#mutes" {
		t.Errorf("ada removes it: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Pressed again (a second tab): the follows page, saying so, not a
	// problem document.
	if resp, page := testapp.Form(t, b, "POST", fmt.Sprintf("%s/settings/mutes/%d", a.URL, list.Mutes[0].ID), url.Values{"csrf": {csrf}}); resp.StatusCode != 404 ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(page, "Not saved") || !strings.Contains(page, `id="mutes"`) {
		t.Errorf("ada removes it again: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list); len(list.Mutes) != 0 {
		t.Errorf("after the removal: %+v", list.Mutes)
	}
}

// TestMutesNameTheResearcher: a researcher mute is named by the person's
// name where the identity registry knows it — the name a follow of them
// shows — with the id kept beside it, in GET /v1/me/mutes, a new mute's
// answer, the export and the Follows page's mutes list; an id the
// registry does not know stays the id alone.
func TestMutesNameTheResearcher(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	svc := testapp.Token(t, "host-site", "", "papers:write")
	if r := c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:77", "openalex:A77"], "name": "Ann Registry"}]`); r.Status != 200 {
		t.Fatalf("registry: %d %s", r.Status, r.Body)
	}
	ada := testapp.Token(t, "ada", "ada@example.org")
	r := c.Do("POST", "/v1/me/mutes", ada, map[string]any{"researcher": "openalex:A77"})
	var m muteOut
	var named struct{ Name string }
	r.JSON(t, &m)
	r.JSON(t, &named)
	if r.Status != 201 || named.Name != "researcher Ann Registry (openalex:A77)" {
		t.Errorf("the new mute: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/v1/me/mutes", ada, map[string]any{"researcher": "openalex:A999"}); r.Status != 201 {
		t.Fatalf("a second mute: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PUT", "/v1/me/follows/researcher/host:77", ada, nil); r.Status != 201 || !strings.Contains(string(r.Body), `"name":"Ann Registry"`) {
		t.Fatalf("a follow of the same person: %d %s", r.Status, r.Body)
	}
	var list struct {
		Mutes []struct{ Researcher, Name string }
	}
	c.Do("GET", "/v1/me/mutes", ada, nil).JSON(t, &list)
	if len(list.Mutes) != 2 || list.Mutes[0].Name != "researcher Ann Registry (openalex:A77)" || list.Mutes[1].Name != "researcher openalex:A999" {
		t.Errorf("GET /v1/me/mutes: %+v", list.Mutes)
	}
	if body := string(c.Do("GET", "/v1/me/export", ada, nil).Body); !strings.Contains(body, `"name":"researcher Ann Registry (openalex:A77)"`) {
		t.Errorf("the export does not name the muted researcher: %.800s", body)
	}
	b, _, _ := signIn(t, a, ada)
	_, page := testapp.Form(t, b, "GET", a.URL+"/settings/follows", nil)
	if !strings.Contains(page, `<span class="mute-name">researcher Ann Registry (openalex:A77)</span>`) ||
		!strings.Contains(page, `<span class="mute-name">researcher openalex:A999</span>`) ||
		!strings.Contains(page, `aria-label="Remove the mute of researcher Ann Registry (openalex:A77)"`) {
		t.Errorf("the Follows page's mutes:\n%s", page)
	}
}
