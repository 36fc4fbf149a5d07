package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"followfeed/catalog"
	"followfeed/internal/testapp"
	"followfeed/worker"
)

type jsonFeedDoc struct {
	Items []struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		ContentText string `json:"content_text"`
	} `json:"items"`
}

func pushed(id, title, abstract, cat string, published time.Time) string {
	b, _ := json.Marshal(map[string]any{"arxiv_id": id, "title": title, "abstract": abstract, "authors": "Jörg Müller, Ana Núñez",
		"categories": []string{cat}, "primary_category": cat, "published": published.Format(time.RFC3339)})
	return string(b)
}

// TestFollowAQuery: a query previews, is followed with its
// normal form as id, shows the last 30 days' matches at once (backfill),
// then gets new matches from ingest through the match job, with the search
// as the reason; bad queries are 422s with a position.
func TestFollowAQuery(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	reader := testapp.Token(t, "reader", "")
	svc := testapp.Token(t, "host", "", "papers:write")
	recent := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
	old := time.Now().Add(-60 * 24 * time.Hour).UTC().Truncate(time.Second)
	r := c.Do("POST", "/v1/papers", svc, "["+strings.Join([]string{
		pushed("2609.00001", `Self-Supervised \emph{Diffusion} Models for Graphs`, "We train diffusion models.", "cs.LG", recent),
		pushed("2609.00002", "A Survey of Diffusion Models", "We survey diffusion models.", "cs.LG", recent),
		pushed("2609.00003", "Galaxies", "Stars and diffusion models.", "astro-ph.GA", recent),
		pushed("2607.00004", "Old Diffusion Models", "Diffusion models, long ago.", "cs.LG", old),
	}, ",")+"]")
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}

	const search = `"Diffusion Models" AND cat:cs -Survey`
	const norm = `"diffusion models" cat:cs -survey`
	var pv struct {
		Query  string
		Count  int
		Papers []struct {
			ArxivID string `json:"arxiv_id"`
		}
	}
	r = c.Do("GET", "/v1/search/preview?q="+url.QueryEscape(search), reader, nil)
	r.JSON(t, &pv)
	if r.Status != 200 || pv.Query != norm || pv.Count != 1 || len(pv.Papers) != 1 || pv.Papers[0].ArxivID != "2609.00001" {
		t.Fatalf("preview: %d %s", r.Status, r.Body)
	}
	// arXiv's ANDNOT is the same search (its normal form writes "-").
	r = c.Do("GET", "/v1/search/preview?q="+url.QueryEscape(`"Diffusion Models" AND cat:cs ANDNOT Survey`), reader, nil)
	r.JSON(t, &pv)
	if r.Status != 200 || pv.Query != norm || pv.Count != 1 {
		t.Errorf("preview with ANDNOT: %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/v1/search/preview?q=x", "", nil); r.Status != 401 {
		t.Errorf("preview without a token: %d", r.Status)
	}

	// The follow answers at once even while another writer (an ingest)
	// holds the writers' lock: the backfill is a job that runs after.
	holder, err := db.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(t.Context())
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1)`, catalog.WritersLock); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	r = c.Do("PUT", "/v1/me/follows/query/"+url.PathEscape(search), reader, nil)
	var f struct{ Kind, ID, Name string }
	r.JSON(t, &f)
	if r.Status != 201 || f.Kind != "query" || f.ID != norm {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the follow took %v while the writers' lock was held", took)
	}
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	feed := func(headers ...string) (jsonFeedDoc, *http.Response) {
		resp, body := get(t, links.JSON, headers...)
		var doc jsonFeedDoc
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("feed: %v %s", err, body)
			}
		}
		return doc, resp
	}
	doc, resp := feed()
	if len(doc.Items) != 0 {
		t.Fatalf("the backfill landed while the writers' lock was held: %+v", doc.Items)
	}
	etag := resp.Header.Get("ETag")
	if err := holder.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	// A render whose validator was read just before the backfill committed
	// shows the match under the old ETag (never the reverse: the snapshot
	// a render reads is at least as new as its validator); the next poll
	// has the new one. So wait for both.
	waitFor(t, "the backfill job's matches in the feed, under a new ETag", func() bool {
		doc, resp = feed()
		return len(doc.Items) > 0 && resp.Header.Get("ETag") != etag
	})
	t.Logf("the backfilled match reached the feed %v after the lock was released", time.Since(released).Round(time.Millisecond))
	if len(doc.Items) != 1 || !strings.HasSuffix(doc.Items[0].ID, "2609.00001") ||
		!strings.Contains(doc.Items[0].ContentText, "the query "+norm) {
		t.Fatalf("day-one feed of the search: %+v", doc.Items)
	}
	if _, resp := feed("If-None-Match", etag); resp.StatusCode != 200 {
		t.Errorf("conditional GET with the ETag from before the backfill: %d, want 200", resp.StatusCode)
	}

	// Following the same search again (another user) writes no rows.
	keys := func() int {
		var n int
		db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM search_matches WHERE key = $1`, "query:"+norm).Scan(&n)
		return n
	}
	c.Do("PUT", "/v1/me/follows/query/"+url.PathEscape(norm), testapp.Token(t, "other", ""), nil)
	a.Jobs().WaitCompleted(t, db.Pool, worker.BackfillArgs{}.Kind(), 2)
	if keys() != 1 {
		t.Errorf("a second follower's backfill wrote rows: %d", keys())
	}

	r = c.Do("POST", "/v1/papers", svc, "["+pushed("2609.00005", "Diffusion models in vision", "Schr\\\"odinger bridges.", "cs.CV", time.Now().UTC())+"]")
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)
	doc, _ = feed()
	if len(doc.Items) != 2 || !strings.HasSuffix(doc.Items[0].ID, "2609.00005") || !strings.Contains(doc.Items[0].ContentText, "the query "+norm) {
		t.Fatalf("feed after ingest: %+v", doc.Items)
	}

	t.Log("hostile: bad queries are 422s with the position and what was expected")
	for q, want := range map[string]string{
		`"diffusion`:                           `at character 1: expected a closing "`,
		`(a OR b`:                              `expected a )`,
		`-survey`:                              `only exclusions`,
		`the`:                                  `common words`,
		`nope:diff`:                            `unknown field "nope:"`,
		`x` + strings.Repeat(" diffusion", 40): `at most 300 characters`,
		`diffusion XOR survey`:                 `at character 11: "XOR" is not an operator`,
		`ANDNOT survey`:                        `at character 1: expected a term before ANDNOT`,
	} {
		for _, path := range []string{"/v1/me/follows/query/" + url.PathEscape(q), "/v1/search/preview?q=" + url.QueryEscape(q)} {
			method := "PUT"
			if strings.HasPrefix(path, "/v1/search") {
				method = "GET"
			}
			r := c.Do(method, path, reader, nil)
			var p problem
			r.JSON(t, &p)
			if r.Status != 422 || !strings.Contains(p.Detail, want) || len(p.Errors) != 1 || p.Errors[0].Index < 1 {
				t.Errorf("%s %s: %d %s, want 422 …%s…", method, path, r.Status, r.Body, want)
			}
		}
	}
	if r := c.Do("PUT", "/v1/me/follows/paper/"+url.PathEscape("astro-ph/9901001v2"), reader, nil); r.Status != 201 || !strings.Contains(string(r.Body), `"id":"astro-ph/9901001"`) {
		t.Errorf("follow an old-style paper id: %d %s", r.Status, r.Body)
	}

	// The per-follow feed URLs /v1/me/feeds hands out (and the OPML and
	// settings page use) answer, for ids that need escaping too: a search
	// with quotes and spaces, an old-style paper id with a slash.
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	seen := 0
	for _, f := range links.Follows {
		if f.ID != norm && f.ID != "astro-ph/9901001" {
			continue
		}
		seen++
		for _, u := range []string{f.Atom, f.RSS, f.JSON} {
			if strings.Contains(u, "%25") {
				t.Errorf("%s %s: URL escaped twice: %s", f.Kind, f.ID, u)
			}
			if resp, body := get(t, u); resp.StatusCode != 200 {
				t.Errorf("%s %s: GET %s: %d %s", f.Kind, f.ID, u, resp.StatusCode, body)
			}
		}
	}
	if seen != 2 {
		t.Errorf("feed links of the search and the paper: %d of 2 in %+v", seen, links.Follows)
	}
}
