package httpapi_test

import (
	"context"
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mmcdole/gofeed"

	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
)

// paperWant is what every feed must say about one paper of feedFixture.
type paperWant struct {
	arxivID            string // without version
	title              string
	authors            []string
	categories         []string // primary first
	published, updated time.Time
}

// The stable item id, abstract page and PDF of the paper, written out here
// rather than taken from the feeds package so that the test can disagree.
func (p paperWant) id() string  { return "tag:arxiv.org,1991:" + p.arxivID }
func (p paperWant) abs() string { return "https://arxiv.org/abs/" + p.arxivID }
func (p paperWant) pdf() string { return "https://arxiv.org/pdf/" + p.arxivID }

// The papers feedFixture pushes.
var (
	wantDejaVu = paperWant{"2202.02326", "<b>Déjà vu</b> & $\\alpha$-reproducible 🧪 models",
		[]string{"Boyuan Chen", "Mingzhi Wen"}, []string{"cs.LG", "cs.AI", "cs.SE"},
		time.Date(2022, 2, 4, 0, 0, 0, 0, time.UTC), time.Date(2022, 2, 7, 10, 0, 0, 0, time.UTC)}
	wantPlainML = paperWant{"2301.00001", "Plain ML paper", []string{"Ann Author", "Bob Builder"}, []string{"cs.LG"},
		time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)}
	wantGalaxies = paperWant{"2301.00002", "Galaxies", []string{"Cee Dee"}, []string{"astro-ph.GA"},
		time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)}
)

// dejaVuV3 is a new version of 2202.02326 with a new title and date; the
// arXiv id, and so the item id, stay the same.
const dejaVuV3 = `[{"arxiv_id": "2202.02326v3", "title": "Déjà vu, revisited",
  "abstract": "We ask whether a < b & c > d holds.",
  "authors": [{"name": "Boyuan Chen"}, {"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}],
  "categories": ["cs.LG", "cs.AI", "cs.SE"], "primary_category": "cs.LG", "institutions": ["ror:03dbr7087"],
  "published": "2022-02-04T00:00:00Z", "updated": "2022-03-01T12:30:00Z"}]`

// feedKind is one feed (in its three formats) with what it must contain.
type feedKind struct {
	name    string
	urls    map[string]string // by format: atom, rss, json
	title   string
	private bool
	papers  func(dejaVu paperWant) []paperWant // newest first
}

func feedKinds(t *testing.T, a *testapp.App, links feedLinks) []feedKind {
	t.Helper()
	public := func(path string) map[string]string {
		m := map[string]string{}
		for _, f := range []string{"atom", "rss", "json"} {
			m[f] = a.URL + path + "." + f
		}
		return m
	}
	perFollow := func(kind, id string) map[string]string {
		for _, f := range links.Follows {
			if f.Kind == kind && f.ID == id {
				return map[string]string{"atom": f.Atom, "rss": f.RSS, "json": f.JSON}
			}
		}
		t.Fatalf("GET /v1/me/feeds lists no per-follow feed of %s %s: %+v", kind, id, links.Follows)
		return nil
	}
	both := func(d paperWant) []paperWant { return []paperWant{wantPlainML, d} }
	only := func(d paperWant) []paperWant { return []paperWant{d} }
	return []feedKind{
		{name: "private all follows", urls: map[string]string{"atom": links.Atom, "rss": links.RSS, "json": links.JSON},
			title: "Papers from your 2 follows", private: true, papers: both},
		{name: "private per-follow category", urls: perFollow("category", "cs.LG"),
			title: "New papers in cs.LG — Machine Learning", private: true, papers: both},
		{name: "private per-follow researcher", urls: perFollow("researcher", "openalex:A5023888391"),
			title: "New papers by Mingzhi Wen", private: true, papers: only},
		{name: "public researcher", urls: public("/feeds/researcher/openalex:A5023888391"),
			title: "New papers by Mingzhi Wen", papers: only},
		{name: "public category", urls: public("/feeds/category/cs.LG"),
			title: "New papers in cs.LG — Machine Learning", papers: both},
		{name: "public archive cs", urls: public("/feeds/category/cs"),
			title: "New papers in Computer Science (cs.*)", papers: both},
		{name: "public archive astro-ph", urls: public("/feeds/category/astro-ph"),
			title:  "New papers in Astrophysics (astro-ph.*)",
			papers: func(paperWant) []paperWant { return []paperWant{wantGalaxies} }},
		{name: "public institution", urls: public("/feeds/institution/ror:03dbr7087"),
			title: "New papers from ror:03dbr7087", papers: only},
	}
}

// TestEveryFeedKindInEveryFormat renders every kind of feed in Atom, RSS and
// JSON Feed, twice, checks each item against the papers pushed, then pushes
// a new version of one paper and checks again: item ids never change.
func TestEveryFeedKindInEveryFormat(t *testing.T) {
	t.Parallel()
	a, c, _, links := feedFixture(t)
	kinds := feedKinds(t, a, links)

	// render fetches a feed twice: the two renders must be byte-identical
	// with the same ETag.
	render := func(t *testing.T, url string) []byte {
		t.Helper()
		r1, b1 := get(t, url)
		r2, b2 := get(t, url)
		if r1.StatusCode != 200 || r2.StatusCode != 200 {
			t.Fatalf("%s: %d, %d\n%s", url, r1.StatusCode, r2.StatusCode, b1)
		}
		if e := r1.Header.Get("ETag"); e == "" || r2.Header.Get("ETag") != e || string(b1) != string(b2) {
			t.Errorf("%s: two renders differ: ETag %q vs %q, bodies equal %v", url, e, r2.Header.Get("ETag"), string(b1) == string(b2))
		}
		return b1
	}

	ids := map[string][]string{} // by URL, from the first round
	etags := map[string]string{} // by URL, from the first round
	dejaVu := wantDejaVu
	for round := range 2 {
		if round == 0 {
			for _, k := range kinds {
				for _, url := range k.urls {
					r, _ := get(t, url)
					etags[url] = r.Header.Get("ETag")
				}
			}
		}
		if round == 1 {
			r := c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"), dejaVuV3)
			if r.Status != 200 || !strings.Contains(string(r.Body), `"replaced":1`) {
				t.Fatalf("pushing v3: %d %s", r.Status, r.Body)
			}
			dejaVu.title = "Déjà vu, revisited"
			dejaVu.updated = time.Date(2022, 3, 1, 12, 30, 0, 0, time.UTC)
			// The new version changes what every feed showing the paper
			// shows (none of the follows includes replacements): a user's
			// conditional GET with the old ETag must get it (once the
			// match job has run), not a 304. The astro-ph feed is the
			// control: unchanged, it must still answer 304.
			for _, k := range kinds {
				shows := slices.ContainsFunc(k.papers(dejaVu), func(p paperWant) bool { return p.arxivID == dejaVu.arxivID })
				for _, url := range k.urls {
					if !shows {
						if r, _ := get(t, url, "If-None-Match", etags[url]); r.StatusCode != 304 {
							t.Errorf("%s (%s): %d for a feed the new version does not touch, want 304", k.name, url, r.StatusCode)
						}
						continue
					}
					var code int
					if !testwait.Until(10*time.Second, func() bool {
						r, _ := get(t, url, "If-None-Match", etags[url])
						code = r.StatusCode
						return code == 200
					}) {
						t.Fatalf("%s (%s): still %d for the ETag from before the new version", k.name, url, code)
					}
				}
			}
		}
		for _, k := range kinds {
			for _, format := range []string{"atom", "rss", "json"} {
				url := k.urls[format]
				t.Run(k.name+"/"+format, func(t *testing.T) {
					body := render(t, url)
					got := checkFeed(t, url, format, body, k.title, k.papers(dejaVu))
					if round == 0 {
						ids[url] = got
					} else if !slices.Equal(got, ids[url]) {
						t.Errorf("%s: item ids changed with a new version of a paper: %v, then %v", url, ids[url], got)
					}
				})
			}
		}
	}
}

// checkFeed parses body (a feed in format, served at url) with gofeed and
// checks its title, self link and items against want, in order; Atom also
// passes checkAtomStructure. It returns the item ids.
func checkFeed(t *testing.T, url, format string, body []byte, title string, want []paperWant) []string {
	t.Helper()
	f, err := gofeed.NewParser().ParseString(string(body))
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", url, err, body)
	}
	if f.FeedType != format {
		t.Errorf("%s: parsed as %q", url, f.FeedType)
	}
	if f.Title != title {
		t.Errorf("%s: title %q, want %q", url, f.Title, title)
	}
	if f.FeedLink != url {
		t.Errorf("%s: self link %q", url, f.FeedLink)
	}
	var atom atomDocument
	if format == "atom" {
		atom = checkAtomStructure(t, url, body)
	}
	var ids []string
	for _, it := range f.Items {
		ids = append(ids, it.GUID)
	}
	var wantIDs []string
	for _, p := range want {
		wantIDs = append(wantIDs, p.id())
	}
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("%s: items %v, want %v", url, ids, wantIDs)
	}
	for i, it := range f.Items {
		p := want[i]
		if it.Title != p.title {
			t.Errorf("%s %s: title %q, want %q", url, p.arxivID, it.Title, p.title)
		}
		var authors []string
		if format == "rss" {
			// RSS <author> must be an e-mail address: names are one
			// dc:creator with every author, as arXiv's own RSS (newsboat
			// and Miniflux show only one creator).
			if it.DublinCoreExt != nil && len(it.DublinCoreExt.Creator) == 1 {
				authors = strings.Split(it.DublinCoreExt.Creator[0], ", ")
			} else if it.DublinCoreExt != nil {
				t.Errorf("%s %s: %d dc:creator elements, want one with every name", url, p.arxivID, len(it.DublinCoreExt.Creator))
			}
		} else {
			for _, a := range it.Authors {
				authors = append(authors, a.Name)
			}
		}
		if !slices.Equal(authors, p.authors) {
			t.Errorf("%s %s: authors %q, want %q", url, p.arxivID, authors, p.authors)
		}
		if !slices.Equal(it.Categories, p.categories) {
			t.Errorf("%s %s: categories %q, want %q", url, p.arxivID, it.Categories, p.categories)
		}
		// Dates: the instant, and written in UTC ("Z", or "+0000" in RSS).
		utc := "Z"
		if format == "rss" {
			utc = "+0000"
		}
		if it.PublishedParsed == nil || !it.PublishedParsed.Equal(p.published) || !strings.HasSuffix(it.Published, utc) {
			t.Errorf("%s %s: published %q, want %s", url, p.arxivID, it.Published, p.published)
		}
		// RSS 2.0 items have no updated date (pubDate only).
		if format != "rss" && (it.UpdatedParsed == nil || !it.UpdatedParsed.Equal(p.updated) || !strings.HasSuffix(it.Updated, utc)) {
			t.Errorf("%s %s: updated %q, want %s", url, p.arxivID, it.Updated, p.updated)
		}
		// Links: the abstract page is the item link; the PDF is where
		// each format puts it.
		if it.Link != p.abs() {
			t.Errorf("%s %s: link %q, want %q", url, p.arxivID, it.Link, p.abs())
		}
		pdf := false
		switch format {
		case "atom":
			for _, l := range atom.Entries[i].Links {
				pdf = pdf || (l.Rel == "related" && l.Type == "application/pdf" && l.Href == p.pdf())
			}
		case "rss":
			pdf = strings.Contains(it.Description, `<a href="`+p.pdf()+`">`)
		case "json":
			for _, e := range it.Enclosures {
				pdf = pdf || (e.URL == p.pdf() && e.Type == "application/pdf")
			}
			pdf = pdf && slices.Equal(it.Links, []string{p.abs(), p.pdf()})
		}
		if !pdf {
			t.Errorf("%s %s: no link to the PDF %s", url, p.arxivID, p.pdf())
		}
	}
	return ids
}

// atomDocument is what checkAtomStructure reads of an Atom document.
type atomDocument struct {
	ID      string     `xml:"id"`
	Title   string     `xml:"title"`
	Updated string     `xml:"updated"`
	Links   []atomLink `xml:"link"`
	Entries []struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Updated string `xml:"updated"`
		Authors []struct {
			Name string `xml:"name"`
		} `xml:"author"`
		Links []atomLink `xml:"link"`
	} `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Href string `xml:"href,attr"`
	Type string `xml:"type,attr"`
}

// checkAtomStructure checks the elements RFC 4287 requires: feed id,
// title, updated (the newest entry's) and link rel=self (the URL it was
// served at); each entry's id, title, updated and author.
func checkAtomStructure(t *testing.T, url string, body []byte) atomDocument {
	t.Helper()
	var doc atomDocument
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	self := ""
	for _, l := range doc.Links {
		if l.Rel == "self" {
			self = l.Href
		}
	}
	if doc.ID == "" || doc.Title == "" || self != url {
		t.Errorf("%s: feed id %q, title %q, self link %q", url, doc.ID, doc.Title, self)
	}
	updated, err := time.Parse(time.RFC3339, doc.Updated)
	if err != nil || !strings.HasSuffix(doc.Updated, "Z") {
		t.Errorf("%s: feed updated %q", url, doc.Updated)
	}
	var newest time.Time
	for _, e := range doc.Entries {
		u, err := time.Parse(time.RFC3339, e.Updated)
		named := len(e.Authors) > 0
		for _, a := range e.Authors {
			named = named && a.Name != ""
		}
		if e.ID == "" || e.Title == "" || err != nil || !strings.HasSuffix(e.Updated, "Z") || !named {
			t.Errorf("%s: entry %+v", url, e)
		}
		if u.After(newest) {
			newest = u
		}
	}
	if len(doc.Entries) > 0 && !updated.Equal(newest) {
		t.Errorf("%s: feed updated %s, newest entry %s", url, doc.Updated, newest.Format(time.RFC3339))
	}
	return doc
}

// TestNotModifiedWithoutTheFeedQuery proves with the database that a
// conditional GET of a private feed answers 304 without the feed query:
// while another transaction holds ACCESS EXCLUSIVE locks on the tables the
// feed query reads (paper_keys, papers), a GET with If-None-Match still
// answers 304 at once, whereas an unconditional GET of the same feed (the
// control, proving that the lock bites) cannot complete.
//
// The service sets no statement or lock timeout of its own; the locking
// transaction sets its own so that a server default cannot end it (or let
// the control fail fast) early.
func TestNotModifiedWithoutTheFeedQuery(t *testing.T) {
	t.Parallel()
	a, _, _, links := feedFixture(t)
	var perFollow string
	for _, f := range links.Follows {
		if f.Kind == "researcher" {
			perFollow = f.JSON
		}
	}
	urls := []string{links.Atom, links.RSS, perFollow}
	etags := map[string]string{}
	for _, u := range urls {
		resp, body := get(t, u)
		if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
			t.Fatalf("%s: %d, ETag %q\n%s", u, resp.StatusCode, resp.Header.Get("ETag"), body)
		}
		etags[u] = resp.Header.Get("ETag")
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := func() {
		if err := tx.Rollback(context.Background()); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Errorf("releasing the lock: %v", err)
		}
	}
	t.Cleanup(release) // runs before the cleanups above: the lock never outlives the test
	// The background match job may still read these tables: wait for it,
	// but not forever.
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '20s'; SET LOCAL statement_timeout = 0;
		SET LOCAL idle_in_transaction_session_timeout = 0;
		LOCK TABLE paper_keys, papers IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatalf("locking: %v", err)
	}
	var held int
	db := openDB(t, a.DatabaseURL)
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE c.relname IN ('paper_keys', 'papers') AND l.mode = 'AccessExclusiveLock' AND l.granted
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held); err != nil || held != 2 {
		t.Fatalf("locks held: %d (%v), want 2", held, err)
	}

	send := func(url string, timeout time.Duration, headers ...string) (*http.Response, time.Duration, error) {
		tr := &http.Transport{DisableCompression: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Timeout: timeout, Transport: tr}
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, time.Since(start), err
	}
	for _, u := range urls {
		resp, took, err := send(u, 3*time.Second, "If-None-Match", etags[u])
		if err != nil {
			t.Errorf("%s: conditional GET while papers are locked: %v after %v (it waits for the feed query)", u, err, took)
			continue
		}
		if resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != etags[u] {
			t.Errorf("%s: conditional GET while papers are locked: %d, ETag %q, want 304 with %q", u, resp.StatusCode, resp.Header.Get("ETag"), etags[u])
		}
	}
	// The control: the same feed without a validator must render, and so
	// wait for the lock.
	for _, u := range urls {
		resp, took, err := send(u, time.Second)
		var nerr net.Error
		if err == nil {
			t.Errorf("%s: unconditional GET answered %d in %v while papers were locked: the lock does not bite, so the 304s prove nothing", u, resp.StatusCode, took)
		} else if !errors.As(err, &nerr) || !nerr.Timeout() {
			t.Errorf("%s: unconditional GET failed other than by timing out: %v", u, err)
		}
	}
	release()
	// Unlocked, the feeds render again, unchanged.
	for _, u := range urls {
		resp, took, err := send(u, 10*time.Second)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("ETag") != etags[u] {
			t.Errorf("%s after the lock: %v %v in %v", u, resp, err, took)
		}
	}
}

// TestQueriesAndPapersHaveNoPublicFeed: a query or a followed paper is a
// user's own, so /feeds/query/… and /feeds/paper/… are 404s with
// a message that points at the private feeds, while a category's public
// feed still answers.
func TestQueriesAndPapersHaveNoPublicFeed(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	for _, path := range []string{"/feeds/query/au:muller.atom", "/feeds/paper/2202.02326.rss", "/feeds/paper/astro-ph%2F9901001.json"} {
		r := c.Do("GET", path, "", nil)
		if r.Status != 404 || !strings.Contains(string(r.Body), "public feeds exist for researchers, categories and institutions") {
			t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}
	if r := c.Do("GET", "/feeds/category/cs.LG.atom", "", nil); r.Status != 200 {
		t.Errorf("category feed: %d %s", r.Status, r.Body)
	}
}
