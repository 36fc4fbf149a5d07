package httpapi_test

import (
	"encoding/json"
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
			matchIdle(t, db)
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
