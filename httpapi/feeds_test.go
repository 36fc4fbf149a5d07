package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"followfeed/internal/testapp"
	"followfeed/worker"
)

type feedLinks struct {
	Atom, RSS, JSON, OPML string
	OPMLPerFollow         string `json:"opml_per_follow"`
	Follows               []struct {
		Kind, ID, Name, Atom, RSS, JSON string
	}
}

// feedFixture: a user following cs.LG and a researcher, and three pushed
// papers, two of which match.
func feedFixture(t *testing.T) (*testapp.App, *testapp.Client, string, feedLinks) {
	t.Helper()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	reader := testapp.Token(t, "reader", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", reader, nil)
	svc := testapp.Token(t, "host", "", "papers:write")
	r := c.Do("POST", "/v1/papers", svc, `[
	 {"arxiv_id": "2202.02326v2", "title": "<b>Déjà vu</b> & $\\alpha$-reproducible 🧪 models",
	  "abstract": "We ask whether a < b & c > d holds.",
	  "authors": [{"name": "Boyuan Chen"}, {"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}],
	  "categories": ["cs.LG", "cs.AI", "cs.SE"], "primary_category": "cs.LG", "institutions": ["ror:03dbr7087"],
	  "published": "2022-02-04T00:00:00Z", "updated": "2022-02-07T10:00:00Z"},
	 {"arxiv_id": "2301.00001", "title": "Plain ML paper", "authors": "Ann Author, Bob Builder",
	  "categories": ["cs.LG"], "primary_category": "cs.LG", "published": "2023-01-01"},
	 {"arxiv_id": "2301.00002", "title": "Galaxies", "authors": "Cee Dee",
	  "categories": ["astro-ph.GA"], "primary_category": "astro-ph.GA", "published": "2023-01-02"}]`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	if !strings.HasPrefix(links.Atom, a.URL+"/feeds/fft_") || !strings.HasSuffix(links.Atom, ".atom") || len(links.Follows) != 2 {
		t.Fatalf("feed links: %+v", links)
	}
	return a, c, reader, links
}

func get(t *testing.T, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req) // no transparent gzip
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func TestPrivateFeedsParseInEveryFormat(t *testing.T) {
	t.Parallel()
	_, _, _, links := feedFixture(t)
	for _, url := range []string{links.Atom, links.RSS, links.JSON} {
		resp, body := get(t, url)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", url, resp.StatusCode, body)
		}
		f, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Fatalf("%s does not parse: %v\n%s", url, err, body)
		}
		if f.Title != "Papers from your 2 follows" || len(f.Items) != 2 {
			t.Fatalf("%s: title %q, %d items", url, f.Title, len(f.Items))
		}
		first := f.Items[1] // oldest match is last; the special one was pushed first
		for _, it := range f.Items {
			if it.GUID == "tag:arxiv.org,1991:2202.02326" {
				first = it
			}
		}
		if first.GUID != "tag:arxiv.org,1991:2202.02326" || first.Title != "<b>Déjà vu</b> & $\\alpha$-reproducible 🧪 models" {
			t.Errorf("%s: item %q %q", url, first.GUID, first.Title)
		}
		if first.Link != "https://arxiv.org/abs/2202.02326" {
			t.Errorf("%s: link %q", url, first.Link)
		}
		var names []string
		for _, p := range first.Authors {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, []string{"Boyuan Chen", "Mingzhi Wen"}) && !strings.HasSuffix(url, ".rss") {
			t.Errorf("%s: authors %v", url, names)
		}
		if first.PublishedParsed == nil || !first.PublishedParsed.Equal(time.Date(2022, 2, 4, 0, 0, 0, 0, time.UTC)) ||
			first.UpdatedParsed != nil && !first.UpdatedParsed.Equal(time.Date(2022, 2, 7, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: dates %v %v", url, first.PublishedParsed, first.UpdatedParsed)
		}
		if !slices.Contains(first.Categories, "cs.LG") || !slices.Contains(first.Categories, "cs.SE") {
			t.Errorf("%s: categories %v", url, first.Categories)
		}
		text := first.Content + first.Description
		if !strings.Contains(text, "Following: cs.LG · Mingzhi Wen") {
			t.Errorf("%s: reason missing in %q", url, text)
		}
		if !strings.Contains(text, "a &lt; b &amp; c &gt; d") && !strings.Contains(text, "a < b & c > d") {
			t.Errorf("%s: abstract lost its text: %q", url, text)
		}
		if f.FeedLink != url && !strings.HasSuffix(url, ".json") {
			t.Errorf("%s: self link %q", url, f.FeedLink)
		}
	}
}

// TestAtomStructure checks the Atom document's required elements directly.
func TestAtomStructure(t *testing.T) {
	t.Parallel()
	_, _, _, links := feedFixture(t)
	_, body := get(t, links.Atom)
	var doc struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Updated string `xml:"updated"`
		Links   []struct {
			Rel  string `xml:"rel,attr"`
			Href string `xml:"href,attr"`
			Type string `xml:"type,attr"`
		} `xml:"link"`
		Generator string `xml:"generator"`
		Entries   []struct {
			ID        string `xml:"id"`
			Title     string `xml:"title"`
			Updated   string `xml:"updated"`
			Published string `xml:"published"`
			Authors   []struct {
				Name string `xml:"name"`
			} `xml:"author"`
			Categories []struct {
				Term string `xml:"term,attr"`
			} `xml:"category"`
			Links []struct {
				Rel  string `xml:"rel,attr"`
				Href string `xml:"href,attr"`
				Type string `xml:"type,attr"`
			} `xml:"link"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	rels := map[string]string{}
	for _, l := range doc.Links {
		rels[l.Rel] = l.Href
	}
	if doc.ID == "" || doc.Title == "" || doc.Generator != "followfeed" || rels["self"] != links.Atom || rels["alternate"] == "" {
		t.Errorf("feed: id %q title %q generator %q links %v", doc.ID, doc.Title, doc.Generator, rels)
	}
	if _, err := time.Parse(time.RFC3339, doc.Updated); err != nil || !strings.HasSuffix(doc.Updated, "Z") {
		t.Errorf("feed updated %q", doc.Updated)
	}
	for _, e := range doc.Entries {
		if e.ID == "" || e.Title == "" || e.Updated == "" || len(e.Authors) == 0 || len(e.Categories) == 0 {
			t.Errorf("entry %+v", e)
		}
		pdf := false
		for _, l := range e.Links {
			pdf = pdf || (l.Type == "application/pdf" && strings.HasPrefix(l.Href, "https://arxiv.org/pdf/"))
		}
		if !pdf {
			t.Errorf("entry %s has no PDF link", e.ID)
		}
	}
}

func TestConditionalGetsAndStableRenders(t *testing.T) {
	t.Parallel()
	a, c, reader, links := feedFixture(t)
	resp1, body1 := get(t, links.Atom)
	resp2, body2 := get(t, links.Atom)
	etag := resp1.Header.Get("ETag")
	if etag == "" || resp2.Header.Get("ETag") != etag || !bytes.Equal(body1, body2) {
		t.Fatalf("re-render differs: etag %q vs %q, bodies equal %v", etag, resp2.Header.Get("ETag"), bytes.Equal(body1, body2))
	}
	h := resp1.Header
	if h.Get("Content-Type") != "application/atom+xml; charset=utf-8" || !strings.Contains(h.Get("Cache-Control"), "private") ||
		!strings.Contains(h.Get("Cache-Control"), "max-age=") || h.Get("Vary") != "Accept-Encoding" ||
		h.Get("X-Robots-Tag") == "" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("Last-Modified") == "" {
		t.Errorf("headers: %v", h)
	}
	resp, body := get(t, links.Atom, "If-None-Match", etag)
	if resp.StatusCode != 304 || len(body) != 0 {
		t.Errorf("If-None-Match: %d (%d bytes)", resp.StatusCode, len(body))
	}
	resp, _ = get(t, links.Atom, "If-Modified-Since", resp1.Header.Get("Last-Modified"))
	if resp.StatusCode != 304 {
		t.Errorf("If-Modified-Since: %d", resp.StatusCode)
	}
	resp, _ = get(t, links.Atom, "If-None-Match", `W/"something-else"`)
	if resp.StatusCode != 200 {
		t.Errorf("stale If-None-Match: %d", resp.StatusCode)
	}
	for name, ct := range map[string]string{links.RSS: "application/rss+xml; charset=utf-8", links.JSON: "application/feed+json; charset=utf-8",
		links.OPML: "text/x-opml; charset=utf-8"} {
		if resp, _ := get(t, name); resp.Header.Get("Content-Type") != ct {
			t.Errorf("%s: content type %q", name, resp.Header.Get("Content-Type"))
		}
	}
	// gzip when asked, identical content.
	resp, gz := get(t, links.Atom, "Accept-Encoding", "gzip")
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if resp.Header.Get("Content-Encoding") != "gzip" || err != nil {
		t.Fatalf("gzip: %v %v", resp.Header, err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, body1) {
		t.Error("gzipped body differs")
	}
	// HEAD: headers, no body.
	req, _ := http.NewRequest("HEAD", links.Atom, nil)
	hresp, err := http.DefaultClient.Do(req)
	if err != nil || hresp.StatusCode != 200 || hresp.Header.Get("ETag") != etag {
		t.Errorf("HEAD: %v %v", hresp, err)
	}
	// Following something changes the ETag; so does a new match.
	c.Do("PUT", "/v1/me/follows/category/cs.AI", reader, nil)
	resp, _ = get(t, links.Atom, "If-None-Match", etag)
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == etag {
		t.Fatalf("after a follow: %d %q", resp.StatusCode, resp.Header.Get("ETag"))
	}
	etag = resp.Header.Get("ETag")
	db := openDB(t, a.DatabaseURL)
	c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"),
		`[{"arxiv_id": "2301.00003", "title": "Another", "categories": ["cs.LG"], "primary_category": "cs.LG"}]`)
	matchIdle(t, a, db)
	if resp, _ := get(t, links.Atom, "If-None-Match", etag); resp.StatusCode != 200 {
		t.Errorf("after a new match: %d", resp.StatusCode)
	}
}

func TestPerFollowFeedsOPMLAndLimit(t *testing.T) {
	t.Parallel()
	_, _, _, links := feedFixture(t)
	var researcher string
	for _, f := range links.Follows {
		if f.Kind == "researcher" {
			researcher = f.RSS
		}
	}
	_, body := get(t, researcher)
	f, err := gofeed.NewParser().ParseString(string(body))
	if err != nil || f.Title != "New papers by Mingzhi Wen" || len(f.Items) != 1 || f.Items[0].GUID != "tag:arxiv.org,1991:2202.02326" {
		t.Fatalf("per-follow feed: %v %+v", err, f)
	}
	_, body = get(t, links.OPML)
	var opml struct {
		Version  string `xml:"version,attr"`
		Outlines []struct {
			XMLURL string `xml:"xmlUrl,attr"`
			Text   string `xml:"text,attr"`
		} `xml:"body>outline"`
	}
	if err := xml.Unmarshal(body, &opml); err != nil || opml.Version != "2.0" || len(opml.Outlines) != 1 || opml.Outlines[0].XMLURL != links.Atom {
		t.Fatalf("OPML: %v %+v, want only the combined feed", err, opml)
	}
	_, body = get(t, links.OPMLPerFollow)
	opml.Outlines = nil
	if err := xml.Unmarshal(body, &opml); err != nil || len(opml.Outlines) != 2 {
		t.Fatalf("per-follow OPML: %v %+v, want one outline per follow", err, opml)
	}
	for _, o := range opml.Outlines {
		if o.XMLURL == links.Atom {
			t.Errorf("per-follow OPML lists the combined feed too")
		}
	}
	for _, bad := range []string{"2", "yes", "%00"} {
		if resp, body := get(t, links.OPML+"?per_follow="+bad); resp.StatusCode != 422 || !strings.Contains(string(body), "per_follow") {
			t.Errorf("per_follow=%s: %d %s", bad, resp.StatusCode, body)
		}
	}
	_, body = get(t, links.Atom+"?limit=1")
	if f, _ := gofeed.NewParser().ParseString(string(body)); len(f.Items) != 1 {
		t.Errorf("limit=1: %d items", len(f.Items))
	}
	for _, bad := range []string{"0", "201", "abc"} {
		if resp, _ := get(t, links.Atom+"?limit="+bad); resp.StatusCode != 422 {
			t.Errorf("limit=%s: %d", bad, resp.StatusCode)
		}
	}
	// A per-follow feed of something the user does not follow is a 404.
	notFollowed := strings.Replace(researcher, "researcher/openalex:A5023888391", "category/math.AG", 1)
	if resp, _ := get(t, notFollowed); resp.StatusCode != 404 {
		t.Errorf("unfollowed per-follow feed: %d", resp.StatusCode)
	}
}

func TestPublicFeeds(t *testing.T) {
	t.Parallel()
	a, _, _, _ := feedFixture(t)
	cases := map[string]struct {
		title string
		items int
	}{
		"/feeds/category/cs.LG.atom":                 {"New papers in cs.LG — Machine Learning", 2},
		"/feeds/category/cs.json":                    {"", 2},
		"/feeds/category/astro-ph.rss":               {"", 1},
		"/feeds/researcher/openalex:A5023888391.rss": {"New papers by Mingzhi Wen", 1},
		"/feeds/institution/ror:03dbr7087.json":      {"New papers from ror:03dbr7087", 1},
		"/feeds/category/math.AG.atom":               {"", 0},
	}
	for path, want := range cases {
		resp, body := get(t, a.URL+path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "public") {
			t.Errorf("%s: %d %v", path, resp.StatusCode, resp.Header)
			continue
		}
		f, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(f.Items) != want.items || (want.title != "" && f.Title != want.title) {
			t.Errorf("%s: %q with %d items", path, f.Title, len(f.Items))
		}
		if len(f.Items) == 0 {
			emptyFeedDated(t, path, f, resp)
		}
		etag := resp.Header.Get("ETag")
		if r2, _ := get(t, a.URL+path, "If-None-Match", etag); r2.StatusCode != 304 {
			t.Errorf("%s: conditional GET %d", path, r2.StatusCode)
		}
	}
	if resp, _ := get(t, a.URL+"/feeds/category/cs.XX.atom"); resp.StatusCode != 422 {
		t.Errorf("unknown category: %d", resp.StatusCode)
	}
	if resp, _ := get(t, a.URL+"/feeds/category/cs.LG.xml"); resp.StatusCode != 404 {
		t.Errorf("unknown format: %d", resp.StatusCode)
	}
}

// emptyFeedDated: a feed without items is dated by its Last-Modified
// (it was 1970-01-01, a feed dead for decades to a reader). A public feed
// nothing ever reached has neither (nothing dates it); a private one
// always has one.
func emptyFeedDated(t *testing.T, path string, f *gofeed.Feed, resp *http.Response) {
	t.Helper()
	lm, err := http.ParseTime(resp.Header.Get("Last-Modified"))
	if err != nil {
		if strings.Contains(path, "/feeds/fft_") {
			t.Errorf("%s: no Last-Modified (%v)", path, err)
		}
		return
	}
	if f.UpdatedParsed == nil || !f.UpdatedParsed.Equal(lm) {
		t.Errorf("%s: an empty feed dated %v, its Last-Modified %v", path, f.UpdatedParsed, lm)
	}
}

// TestEmptyPrivateFeedIsDatedByItsLastModified: a reader whose follows
// matched nothing yet gets feeds dated by their Last-Modified.
func TestEmptyPrivateFeedIsDatedByItsLastModified(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	reader := testapp.Token(t, "quiet", "")
	c.Do("PUT", "/v1/me/follows/category/math.AG", reader, nil)
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	for _, u := range []string{links.Atom, links.RSS, links.JSON} {
		resp, body := get(t, u)
		f, err := gofeed.NewParser().ParseString(string(body))
		if resp.StatusCode != 200 || err != nil || len(f.Items) != 0 {
			t.Fatalf("%s: %d, %v", u, resp.StatusCode, err)
		}
		if !strings.HasSuffix(u, ".json") { // JSON Feed has no feed date
			emptyFeedDated(t, u, f, resp)
		}
	}
}

func TestRotationAndTokenSecrecy(t *testing.T) {
	t.Log("hostile: access")
	t.Parallel()
	a, c, reader, links := feedFixture(t)
	old := links.Atom
	var rotated feedLinks
	r := c.Do("POST", "/v1/me/feed-token", reader, nil)
	r.JSON(t, &rotated)
	if r.Status != 200 || rotated.Atom == old || rotated.Atom == "" {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	if resp, _ := get(t, old); resp.StatusCode != 404 {
		t.Errorf("old URL after rotation: %d", resp.StatusCode)
	}
	if resp, _ := get(t, old[:strings.LastIndex(old, ".")]+".opml"); resp.StatusCode != 404 {
		t.Errorf("old OPML after rotation: %d", resp.StatusCode)
	}
	if resp, _ := get(t, rotated.Atom); resp.StatusCode != 200 {
		t.Errorf("new URL: %d", resp.StatusCode)
	}
	// The same token is shown again until the next rotation.
	var again feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &again)
	if again.Atom != rotated.Atom {
		t.Errorf("GET after rotation shows %q, want %q", again.Atom, rotated.Atom)
	}
	// Guessing tokens from one address is throttled.
	limited := false
	for i := range 40 {
		resp, _ := get(t, a.URL+"/feeds/fft_"+strings.Repeat(string(rune('a'+i%26)), 43)+".atom")
		if resp.StatusCode == 429 {
			limited = true
			break
		}
		if resp.StatusCode != 404 {
			t.Fatalf("guess %d: %d", i, resp.StatusCode)
		}
	}
	if !limited {
		t.Error("40 wrong tokens from one address were never limited")
	}
	logs := a.Logs()
	for _, u := range []string{old, rotated.Atom} {
		tok := strings.TrimSuffix(u[strings.LastIndex(u, "/")+1:], ".atom")
		if strings.Contains(logs, tok) || strings.Contains(logs, tok[4:20]) {
			t.Errorf("a feed token appears in the logs")
		}
	}
	if !strings.Contains(logs, "/feeds/fft_REDACTED.atom") {
		t.Errorf("feed requests are not logged in redacted form")
	}
}

// TestWebSubHubLinkAndPing: with WEBSUB_HUB_URL set, public feeds announce
// the hub and a match publishes their URLs to it; private feeds (secret
// URLs) are never sent to the hub.
func TestWebSubHubLinkAndPing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var topics []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		if r.Form.Get("hub.mode") == "publish" {
			topics = append(topics, r.Form["hub.url"]...)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hub.Close()
	a, c := start(t, "WEBSUB_HUB_URL", hub.URL+"/hub")
	reader := testapp.Token(t, "reader", "")
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", reader, nil)
	c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"),
		`[{"arxiv_id": "2301.00001", "title": "T", "categories": ["cs.LG", "math.ST"], "primary_category": "cs.LG",
		   "authors": [{"name": "Josiah Carberry", "ids": ["orcid:0000-0002-1825-0097", "s2:999"]}]}]`)
	waitFor(t, "the hub ping", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(topics, a.URL+"/feeds/category/cs.LG.atom")
	})
	mu.Lock()
	got := slices.Clone(topics)
	mu.Unlock()
	for _, want := range []string{"/feeds/category/cs.json", "/feeds/category/math.ST.rss", "/feeds/researcher/orcid:0000-0002-1825-0097.atom"} {
		if !slices.Contains(got, a.URL+want) {
			t.Errorf("ping lacks %s: %v", want, got)
		}
	}
	for _, u := range got {
		if strings.Contains(u, "fft_") || strings.Contains(u, "s2:999") {
			t.Errorf("pinged %s (a private feed, or a researcher nobody follows)", u)
		}
	}
	_, body := get(t, a.URL+"/feeds/category/cs.LG.atom")
	if !bytes.Contains(body, []byte(`<link href="`+hub.URL+`/hub" rel="hub">`)) {
		t.Errorf("public feed has no hub link:\n%s", body)
	}
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	if _, body := get(t, links.Atom); bytes.Contains(body, []byte(`rel="hub"`)) {
		t.Error("a private feed announces the hub")
	}
}

// TestWebSubPingsOnlyTheFeedsABatchChanged: each match job announces
// exactly the public feeds its papers changed — their categories and
// archives, and the followed researcher and institution feeds that show
// them, including a feed under another id of the same person or
// institution (the registry links host:1955166 to the paper's s2: id, and
// ror: to the paper's OpenAlex institution id) — and nothing else.
func TestWebSubPingsOnlyTheFeedsABatchChanged(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	topics := map[string]bool{}
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		for _, u := range r.Form["hub.url"] {
			topics[u] = true
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hub.Close()
	a, c := start(t, "WEBSUB_HUB_URL", hub.URL+"/hub")
	db := openDB(t, a.DatabaseURL)
	svc := testapp.Token(t, "host", "", "papers:write")
	c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "s2:1741101"], "name": "Mingzhi Wen"}]`)
	c.Do("PUT", "/v1/institutions", svc, `[{"ids": ["ror:05ppvf150", "openalex:I4210166736"], "name": "Impactstory"}]`)
	reader, other := testapp.Token(t, "reader", ""), testapp.Token(t, "other", "")
	c.Do("PUT", "/v1/me/follows/researcher/host:1955166", reader, nil)
	c.Do("PUT", "/v1/me/follows/institution/ror:05ppvf150", reader, nil)
	c.Do("PUT", "/v1/me/follows/researcher/host:42", other, nil)
	c.Do("PUT", "/v1/me/follows/category/cs.AI", other, nil)
	urls := func(paths ...string) map[string]bool {
		out := map[string]bool{}
		for _, p := range paths {
			for _, f := range []string{"atom", "rss", "json"} {
				out[a.URL+p+"."+f] = true
			}
		}
		return out
	}
	batch := func(push string, want map[string]bool) {
		t.Helper()
		mu.Lock()
		clear(topics)
		mu.Unlock()
		if r := c.Do("POST", "/v1/papers", svc, push); r.Status != 200 {
			t.Fatalf("push %d %s", r.Status, r.Body)
		}
		waitFor(t, "the hub ping", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for u := range want {
				if !topics[u] {
					return false
				}
			}
			return true
		})
		// A ping of anything more would come from these match jobs' WebSub
		// jobs: once they are idle, the topics are final.
		a.Jobs().WaitIdle(t, db.Pool, worker.MatchArgs{}.Kind(), worker.WebSubArgs{}.Kind())
		mu.Lock()
		defer mu.Unlock()
		if !maps.Equal(topics, want) {
			t.Errorf("pinged %v\nwant exactly %v", slices.Sorted(maps.Keys(topics)), slices.Sorted(maps.Keys(want)))
		}
	}
	batch(`[{"arxiv_id": "2301.00001", "title": "T", "categories": ["cs.LG"], "primary_category": "cs.LG",
	   "institutions": ["openalex:I4210166736"], "authors": [{"name": "M. Wen", "ids": ["s2:1741101"]}]}]`,
		urls("/feeds/category/cs.LG", "/feeds/category/cs", "/feeds/researcher/host:1955166", "/feeds/institution/ror:05ppvf150"))
	batch(`[{"arxiv_id": "2301.00002", "title": "U", "categories": ["math.ST"], "primary_category": "math.ST",
	   "authors": [{"name": "Somebody", "ids": ["s2:5"]}]}]`,
		urls("/feeds/category/math.ST", "/feeds/category/math"))
}

// importOPML does what a feed reader's import does: read the OPML's
// outlines, fetch every feed, parse it (gofeed) and return the item ids of
// all of them together, duplicates kept.
func importOPML(t *testing.T, opmlURL string) (ids []string, feeds int) {
	t.Helper()
	resp, body := get(t, opmlURL)
	if resp.StatusCode != 200 {
		t.Fatalf("OPML %s: %d", opmlURL, resp.StatusCode)
	}
	var opml struct {
		Outlines []struct {
			XMLURL string `xml:"xmlUrl,attr"`
		} `xml:"body>outline"`
	}
	if err := xml.Unmarshal(body, &opml); err != nil {
		t.Fatal(err)
	}
	for _, o := range opml.Outlines {
		resp, body := get(t, o.XMLURL)
		if resp.StatusCode != 200 {
			t.Fatalf("outline %s: %d", o.XMLURL, resp.StatusCode)
		}
		f, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Fatalf("outline %s: %v", o.XMLURL, err)
		}
		for _, it := range f.Items {
			ids = append(ids, it.GUID)
		}
	}
	return ids, len(opml.Outlines)
}

// TestOPMLImportShowsEachPaperOnce imports the default OPML as a feed reader
// would and finds each matched paper exactly once; the per-follow list,
// imported instead, holds the same papers (one matches both follows, so it
// shows there twice, which is why it is not the default).
func TestOPMLImportShowsEachPaperOnce(t *testing.T) {
	t.Parallel()
	_, _, _, links := feedFixture(t)
	ids, n := importOPML(t, links.OPML)
	slices.Sort(ids)
	want := []string{"tag:arxiv.org,1991:2202.02326", "tag:arxiv.org,1991:2301.00001"}
	if n != 1 || !slices.Equal(ids, want) {
		t.Errorf("default OPML imported: %d feeds with items %v, want 1 feed with %v, each once", n, ids, want)
	}
	perFollow, n := importOPML(t, links.OPMLPerFollow)
	slices.Sort(perFollow)
	if n != 2 || !slices.Equal(slices.Compact(slices.Clone(perFollow)), want) || len(perFollow) != 3 {
		t.Errorf("per-follow OPML imported: %d feeds with items %v, want 2 feeds covering %v", n, perFollow, want)
	}
}

// TestCombinedFeedInDateOrder: papers stored in an order their dates do not
// follow (one push whose submission dates run Nov 28, 27, 29, 28, 27, as an
// announcement's do) are served in the combined feed newest first by the
// date each format shows, as gofeed reads it.
func TestCombinedFeedInDateOrder(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	user := testapp.Token(t, "date-order", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", user, nil)
	var recs []any
	for i, d := range []int{28, 27, 29, 28, 27} {
		recs = append(recs, map[string]any{"arxiv_id": fmt.Sprintf("2611.0010%d", i), "version": 1, "title": fmt.Sprintf("Paper %d", i),
			"abstract": "About it.", "authors": "Ada Lovelace", "categories": []string{"cs.LG"}, "primary_category": "cs.LG",
			"published": time.Date(2026, 11, d, 15, 0, 0, 0, time.UTC).Format(time.RFC3339)})
	}
	b, _ := json.Marshal(recs)
	if r := c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"), string(b)); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	matchIdle(t, a, db)
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", user, nil).JSON(t, &links)
	for _, u := range []string{links.Atom, links.RSS, links.JSON} {
		_, body := get(t, u)
		f, err := gofeed.NewParser().ParseString(string(body))
		if err != nil || len(f.Items) != 5 {
			t.Fatalf("%s: %v, %d items", u, err, len(f.Items))
		}
		var days []string
		for i, it := range f.Items {
			days = append(days, it.PublishedParsed.Format("Jan 2"))
			if i > 0 && it.PublishedParsed.After(*f.Items[i-1].PublishedParsed) {
				t.Errorf("%s: the items are dated %s, not newest first", u, strings.Join(days, ", "))
				break
			}
		}
	}
}
