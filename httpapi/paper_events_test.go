package httpapi_test

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"followfeed/internal/testapp"
)

// TestPaperFollowFeed: a user follows a paper before it is known; its
// new version and its publication each reach the user's feed as their own
// item (own id, own reason), through the real push route and match job; the
// item ids stay the same across renders, and a record that changes nothing
// adds no item.
func TestPaperFollowFeed(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	reader := testapp.Token(t, "reader", "")
	svc := testapp.Token(t, "host", "", "papers:write")
	if r := c.Do("PUT", "/v1/me/follows/paper/2609.00010v1", reader, nil); r.Status != 201 {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	push := func(wait bool, fields map[string]any) {
		t.Helper()
		rec := map[string]any{"arxiv_id": "2609.00010", "title": "Graph diffusion at scale", "abstract": "We scale it.",
			"authors": "Jörg Müller", "categories": []string{"cs.LG"}, "primary_category": "cs.LG",
			"published": time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}
		for k, v := range fields {
			rec[k] = v
		}
		b, _ := json.Marshal([]any{rec})
		if r := c.Do("POST", "/v1/papers", svc, string(b)); r.Status != 200 {
			t.Fatalf("push: %d %s", r.Status, r.Body)
		}
		if wait {
			matchIdle(t, a, db)
		}
	}
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	feed := func() jsonFeedDoc {
		_, body := get(t, links.JSON)
		var doc jsonFeedDoc
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("feed: %v %s", err, body)
		}
		return doc
	}
	push(false, map[string]any{"version": 1, "comments": "8 pages"})
	if doc := feed(); len(doc.Items) != 0 {
		t.Fatalf("the first version is no event: %+v", doc.Items)
	}
	push(true, map[string]any{"version": 2, "comments": "12 pages, code released"})
	doc := feed()
	if len(doc.Items) != 1 || doc.Items[0].ID != "tag:arxiv.org,1991:2609.00010/v2" ||
		!strings.Contains(doc.Items[0].ContentText, "New version v2 of Graph diffusion at scale (comments: 12 pages, code released)") {
		t.Fatalf("feed after v2: %+v", doc.Items)
	}
	if again := feed(); again.Items[0].ID != doc.Items[0].ID {
		t.Errorf("the item id changed between renders: %s, %s", doc.Items[0].ID, again.Items[0].ID)
	}
	push(true, map[string]any{"version": 2, "comments": "12 pages, code released", "journal_ref": "J. Mach. Learn. Res. 27 (2026) 1-30"})
	doc = feed()
	if len(doc.Items) != 1 || doc.Items[0].ID != "tag:arxiv.org,1991:2609.00010/published" ||
		!strings.Contains(doc.Items[0].ContentText, "Published in J. Mach. Learn. Res. 27 (2026) 1-30") {
		t.Fatalf("feed after publication: %+v", doc.Items)
	}
	var events int
	count := func() int {
		db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM paper_keys WHERE key = 'paper:2609.00010'`).Scan(&events)
		return events
	}
	n := count()
	push(false, nil) // an older, plainer record of the same version: nothing new
	push(false, map[string]any{"version": 2, "comments": "12 pages, code released", "journal_ref": "J. Mach. Learn. Res. 27 (2026) 1-30"})
	if count() != n {
		t.Errorf("records that change nothing wrote %d event rows", count()-n)
	}
}

// TestPaperFollowNamedEverywhere: a followed paper is named by its arXiv id
// until it is stored, then by its title (shortened at a word) wherever its
// owner reads the follow: the follow list, the Follow button's status, the
// settings page (the follow list and a channel's checkboxes), the
// per-follow OPML, the per-follow feed's title and a channel's follows.
func TestPaperFollowNamedEverywhere(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	db := openDB(t, a.DatabaseURL)
	user := testapp.Token(t, "paper-namer", "paper-namer@example.org")
	if r := c.Do("PUT", "/v1/me/follows/paper/arXiv:2609.00011", user, nil); r.Status != 201 {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	c.Do("PUT", "/v1/me/follows/category/cs.LG", user, nil)
	rc := newReceiver(t)
	var ch struct {
		ID int64 `json:"id"`
	}
	r := c.Do("POST", "/v1/me/channels", user, map[string]any{"type": "webhook", "url": rc.URL + "/hook",
		"follows": []map[string]string{{"kind": "paper", "id": "2609.00011"}}})
	if r.Status != 201 {
		t.Fatalf("channel: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &ch)
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", user, nil).JSON(t, &links)
	perFollow := strings.Replace(links.Atom, ".atom", "/paper/2609.00011.atom", 1)

	names := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		var list struct {
			Follows []struct{ Kind, ID, Name string } `json:"follows"`
		}
		c.Do("GET", "/v1/me/follows", user, nil).JSON(t, &list)
		for _, f := range list.Follows {
			if f.Kind == "paper" {
				out["follow list"] = f.Name
			}
		}
		var st struct{ Name string }
		c.Do("GET", "/v1/follows/paper/2609.00011", user, nil).JSON(t, &st)
		out["Follow button"] = st.Name
		var chj struct {
			Follows []struct{ Kind, ID, Name string } `json:"follows"`
		}
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d", ch.ID), user, nil).JSON(t, &chj)
		if len(chj.Follows) == 1 {
			out["channel"] = chj.Follows[0].Name
		}
		b, page, _ := signIn(t, a, user)
		channelsPage, _ := settingsPage(t, a, b, "/settings/channels")
		if m := regexp.MustCompile(`value="paper/2609\.00011"[^>]*>\s*([^<]*)<`).FindStringSubmatch(channelsPage); m != nil {
			out["channel checkbox"] = html.UnescapeString(strings.TrimSpace(m[1]))
		}
		out["settings"] = page
		_, opml := get(t, links.OPMLPerFollow)
		out["OPML"] = string(opml)
		_, feed := get(t, perFollow)
		if m := regexp.MustCompile(`<title>([^<]*)</title>`).FindSubmatch(feed); m != nil {
			out["feed title"] = html.UnescapeString(string(m[1]))
		}
		return out
	}
	check := func(when, want string) {
		t.Helper()
		got := names()
		for _, what := range []string{"follow list", "Follow button", "channel", "channel checkbox"} {
			if got[what] != want {
				t.Errorf("%s, the %s names the paper %q, want %q", when, what, got[what], want)
			}
		}
		if got["feed title"] != "Updates to "+want {
			t.Errorf("%s, the per-follow feed is titled %q", when, got["feed title"])
		}
		esc := html.EscapeString(want)
		if !strings.Contains(got["settings"], esc) {
			t.Errorf("%s, the settings page does not name the paper %q", when, want)
		}
		if !strings.Contains(got["OPML"], `title="Updates to `+esc+`"`) && !strings.Contains(got["OPML"], `text="`+esc+`"`) {
			t.Errorf("%s, the OPML does not name the paper %q:\n%s", when, want, got["OPML"])
		}
	}
	check("before the paper is stored", "arXiv:2609.00011")

	svc := testapp.Token(t, "host", "", "papers:write")
	title := "Graph diffusion at scale: sparse operators, learned preconditioners and what they cost on real hardware"
	b, _ := json.Marshal([]any{map[string]any{"arxiv_id": "2609.00011", "version": 1, "title": title, "abstract": "We scale it.",
		"authors": "Jörg Müller", "categories": []string{"cs.LG"}, "primary_category": "cs.LG",
		"published": time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)}})
	if r := c.Do("POST", "/v1/papers", svc, string(b)); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)
	check("once stored", "Graph diffusion at scale: sparse operators, learned preconditioners and what…")
}
