package feeds

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/atom"
	"github.com/mmcdole/gofeed/rss"
	xhtml "golang.org/x/net/html"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite the testdata/render golden files")

var (
	feedUpdated = time.Date(2026, 3, 10, 20, 0, 0, 0, time.UTC)
	// A non-UTC zone and sub-second part, to check normalisation.
	cet = time.FixedZone("CET", 3600)
)

// sampleFeed is a small feed exercising every field.
func sampleFeed() Feed {
	return Feed{
		ID:       "tag:followfeed,2026:feed/researcher/mingzhi-wen",
		Title:    "New papers by Mingzhi Wen",
		Subtitle: "arXiv papers by Mingzhi Wen, newest first",
		SelfURL:  "https://followfeed.example/feeds/researcher/mingzhi-wen.atom",
		HTMLURL:  "https://followfeed.example/researcher/mingzhi-wen",
		HubURL:   "https://hub.followfeed.example/",
		Updated:  feedUpdated,
		Language: "en",
		Items: []Item{
			{
				ID:         "tag:arxiv.org,1991:2202.02326",
				Title:      "Sparse Attention Is All You Need",
				Authors:    []string{"Mingzhi Wen", "Ada Lovelace", "Alan Turing"},
				Summary:    "We study sparse attention.\nIt works.",
				Content:    "Following: Mingzhi Wen · cs.LG",
				AbsURL:     "https://arxiv.org/abs/2202.02326v2",
				PDFURL:     "https://arxiv.org/pdf/2202.02326v2",
				Categories: []string{"cs.LG", "stat.ML"},
				Published:  time.Date(2026, 3, 9, 18, 0, 0, 0, time.UTC),
				Updated:    time.Date(2026, 3, 10, 21, 0, 0, 500, cet), // 20:00:00Z
			},
			{
				// No authors, no content, no categories, no Updated.
				ID:        "tag:arxiv.org,1991:2201.00001",
				Title:     "An Anonymous Note",
				Summary:   "Short.",
				AbsURL:    "https://arxiv.org/abs/2201.00001v1",
				PDFURL:    "https://arxiv.org/pdf/2201.00001v1",
				Published: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
			},
		},
	}
}

func parseFeed(t testing.TB, b []byte) *gofeed.Feed {
	t.Helper()
	p := gofeed.NewParser()
	p.KeepOriginalFeed = true
	f, err := p.ParseString(string(b))
	if err != nil {
		t.Fatalf("gofeed cannot parse output: %v\n%s", err, clip(b))
	}
	return f
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

func mustRender(t testing.TB, r func(Feed) ([]byte, error), f Feed) []byte {
	t.Helper()
	b, err := r(f)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if len(b) > MaxBytes {
		t.Fatalf("render: %d bytes > MaxBytes", len(b))
	}
	if !utf8.Valid(b) {
		t.Fatalf("render: output is not valid UTF-8")
	}
	return b
}

var allFormats = []struct {
	name   string
	render func(Feed) ([]byte, error)
	typ    string // gofeed FeedType
}{
	{"atom", RenderAtom, "atom"},
	{"rss", RenderRSS, "rss"},
	{"json", RenderJSON, "json"},
}

func personNames(ps []*gofeed.Person) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func wantTime(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: missing, want %v", what, want)
		return
	}
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func wantEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func eqSlice(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestRenderAtomParses(t *testing.T) {
	src := sampleFeed()
	f := parseFeed(t, mustRender(t, RenderAtom, src))
	a := f.OriginalFeed().(*atom.Feed)

	wantEq(t, "type", f.FeedType, "atom")
	wantEq(t, "id", a.ID, src.ID)
	wantEq(t, "title", f.Title, src.Title)
	wantEq(t, "subtitle", f.Description, src.Subtitle)
	wantEq(t, "language", f.Language, "en")
	wantEq(t, "generator", f.Generator, Generator)
	wantEq(t, "updated text", a.Updated, "2026-03-10T20:00:00Z")
	wantTime(t, "updated", f.UpdatedParsed, feedUpdated)
	wantEq(t, "self", f.FeedLink, src.SelfURL)
	wantEq(t, "alternate", f.Link, src.HTMLURL)
	links := map[string]*atom.Link{}
	for _, l := range a.Links {
		links[l.Rel] = l
	}
	if l := links["self"]; l == nil || l.Type != "application/atom+xml" {
		t.Errorf("self link = %+v", l)
	}
	if l := links["alternate"]; l == nil || l.Type != "text/html" {
		t.Errorf("alternate link = %+v", l)
	}
	if l := links["hub"]; l == nil || l.Href != src.HubURL {
		t.Errorf("hub link = %+v", l)
	}
	if len(f.Items) != 2 {
		t.Fatalf("items = %d, want 2", len(f.Items))
	}

	it, e, s := f.Items[0], a.Entries[0], src.Items[0]
	wantEq(t, "item id", it.GUID, s.ID)
	wantEq(t, "item title", it.Title, s.Title)
	eqSlice(t, "item authors", personNames(it.Authors), s.Authors)
	eqSlice(t, "item categories", it.Categories, s.Categories)
	wantEq(t, "item summary", it.Description, s.Summary)
	wantEq(t, "item content", it.Content, wantBody(s.Summary, s.Content, s.AbsURL, s.PDFURL))
	wantEq(t, "item content type", e.Content.Type, "html")
	wantEq(t, "item link", it.Link, s.AbsURL)
	wantTime(t, "item published", it.PublishedParsed, s.Published)
	wantTime(t, "item updated", it.UpdatedParsed, feedUpdated)
	wantEq(t, "item updated text", e.Updated, "2026-03-10T20:00:00Z")
	var pdf *atom.Link
	for _, l := range e.Links {
		if l.Rel == "related" {
			pdf = l
		}
	}
	if pdf == nil || pdf.Href != s.PDFURL || pdf.Type != "application/pdf" || pdf.Title != "pdf" {
		t.Errorf("pdf link = %+v", pdf)
	}

	// Second entry: no authors -> "arXiv"; no reasons, so the content is the
	// abstract and the links; Updated falls back to Published.
	it2, s2 := f.Items[1], src.Items[1]
	eqSlice(t, "fallback author", personNames(it2.Authors), []string{"arXiv"})
	wantEq(t, "content without reasons", it2.Content, wantBody(s2.Summary, "", s2.AbsURL, s2.PDFURL))
	wantTime(t, "item2 updated", it2.UpdatedParsed, src.Items[1].Published)
	if a.Entries[1].Categories != nil {
		t.Errorf("item2 categories = %v", a.Entries[1].Categories)
	}
}

func TestRenderRSSParses(t *testing.T) {
	src := sampleFeed()
	out := mustRender(t, RenderRSS, src)
	f := parseFeed(t, out)
	r := f.OriginalFeed().(*rss.Feed)

	wantEq(t, "type", f.FeedType, "rss")
	wantEq(t, "version", f.FeedVersion, "2.0")
	wantEq(t, "title", f.Title, src.Title)
	wantEq(t, "link", f.Link, src.HTMLURL)
	wantEq(t, "description", f.Description, src.Subtitle)
	wantEq(t, "language", f.Language, "en")
	wantEq(t, "generator", f.Generator, Generator)
	wantEq(t, "lastBuildDate", r.LastBuildDate, "Tue, 10 Mar 2026 20:00:00 +0000")
	wantTime(t, "updated", f.UpdatedParsed, feedUpdated)
	wantEq(t, "self", f.FeedLink, src.SelfURL)
	var hub, self map[string]string
	for _, l := range r.Extensions["atom"]["link"] {
		switch l.Attrs["rel"] {
		case "hub":
			hub = l.Attrs
		case "self":
			self = l.Attrs
		}
	}
	if hub["href"] != src.HubURL {
		t.Errorf("atom:link rel=hub = %v", hub)
	}
	if self["type"] != "application/rss+xml" {
		t.Errorf("atom:link rel=self = %v", self)
	}
	if len(f.Items) != 2 {
		t.Fatalf("items = %d, want 2", len(f.Items))
	}

	it, ri, s := f.Items[0], r.Items[0], src.Items[0]
	wantEq(t, "guid", it.GUID, s.ID)
	wantEq(t, "guid isPermaLink", ri.GUID.IsPermalink, "false")
	wantEq(t, "item title", it.Title, s.Title)
	wantEq(t, "item link", it.Link, s.AbsURL)
	// One dc:creator with every name, as arXiv's RSS: newsboat and Miniflux
	// show only one creator.
	eqSlice(t, "dc:creator", it.DublinCoreExt.Creator, []string{strings.Join(s.Authors, ", ")})
	eqSlice(t, "categories", it.Categories, s.Categories)
	wantEq(t, "pubDate", ri.PubDate, "Mon, 09 Mar 2026 18:00:00 +0000")
	wantTime(t, "published", it.PublishedParsed, s.Published)
	wantEq(t, "description", it.Description, wantBody(s.Summary, s.Content, s.AbsURL, s.PDFURL))
	if it.Enclosures != nil {
		t.Errorf("enclosures = %v, want none", it.Enclosures)
	}
	if bytes.Contains(out, []byte("<author>")) {
		t.Errorf("RSS must not use <author> (e-mail only)")
	}
	if r.Items[1].DublinCoreExt != nil && len(r.Items[1].DublinCoreExt.Creator) != 0 {
		t.Errorf("item2 creators = %v", r.Items[1].DublinCoreExt.Creator)
	}
}

// TestActorLink: a feed's ActivityPub actor (ACTIVITYPUB=on) is, as an
// independent parser (gofeed) reads the documents, an Atom <link
// rel="alternate" type="application/activity+json"> after the HTML page's
// (feed readers take the first alternate as the feed's site, which stays
// the page) and an RSS <atom:link> of the same rel and type; JSON Feed has
// no place for it. Without an ActorURL no document names the type.
func TestActorLink(t *testing.T) {
	const actor = "https://followfeed.example/ap/actors/orcid_0000-0002-1825-0097"
	src := sampleFeed()
	src.ActorURL = actor

	f := parseFeed(t, mustRender(t, RenderAtom, src))
	var alternates []*atom.Link
	for _, l := range f.OriginalFeed().(*atom.Feed).Links {
		if l.Rel == "alternate" {
			alternates = append(alternates, l)
		}
	}
	if len(alternates) != 2 || alternates[0].Type != "text/html" || alternates[0].Href != src.HTMLURL ||
		alternates[1].Type != "application/activity+json" || alternates[1].Href != actor {
		t.Errorf("atom alternate links = %+v %+v, want the page's then the actor's", alternates[0], alternates[len(alternates)-1])
	}
	wantEq(t, "atom site link", f.Link, src.HTMLURL)
	wantEq(t, "atom self link", f.FeedLink, src.SelfURL)

	f = parseFeed(t, mustRender(t, RenderRSS, src))
	var got []map[string]string
	for _, l := range f.OriginalFeed().(*rss.Feed).Extensions["atom"]["link"] {
		if l.Attrs["rel"] == "alternate" {
			got = append(got, l.Attrs)
		}
	}
	if len(got) != 1 || got[0]["href"] != actor || got[0]["type"] != "application/activity+json" {
		t.Errorf("rss atom:link rel=alternate = %v, want the actor's", got)
	}
	wantEq(t, "rss site link", f.Link, src.HTMLURL)

	if with, without := mustRender(t, RenderJSON, src), mustRender(t, RenderJSON, sampleFeed()); !bytes.Equal(with, without) {
		t.Error("JSON Feed changed with an ActorURL")
	}
	for _, r := range allFormats {
		if out := mustRender(t, r.render, sampleFeed()); bytes.Contains(out, []byte("activity+json")) {
			t.Errorf("%s names an actor without ActorURL", r.name)
		}
	}
}

func TestRenderJSONParses(t *testing.T) {
	src := sampleFeed()
	out := mustRender(t, RenderJSON, src)
	f := parseFeed(t, out)

	wantEq(t, "type", f.FeedType, "json")
	wantEq(t, "version", f.FeedVersion, JSONFeedVersion)
	wantEq(t, "title", f.Title, src.Title)
	wantEq(t, "home_page_url", f.Link, src.HTMLURL)
	wantEq(t, "feed_url", f.FeedLink, src.SelfURL)
	wantEq(t, "description", f.Description, src.Subtitle)
	wantEq(t, "language", f.Language, "en")
	if len(f.Items) != 2 {
		t.Fatalf("items = %d, want 2", len(f.Items))
	}
	it, s := f.Items[0], src.Items[0]
	wantEq(t, "id", it.GUID, s.ID)
	wantEq(t, "url", it.Link, s.AbsURL)
	eqSlice(t, "links (url, external_url)", it.Links, []string{s.AbsURL, s.PDFURL})
	wantEq(t, "title", it.Title, s.Title)
	wantEq(t, "summary", it.Description, s.Summary)
	wantEq(t, "content_html", it.Content, wantBody(s.Summary, s.Content, s.AbsURL, s.PDFURL))
	eqSlice(t, "authors", personNames(it.Authors), s.Authors)
	eqSlice(t, "tags", it.Categories, s.Categories)
	wantTime(t, "date_published", it.PublishedParsed, s.Published)
	wantTime(t, "date_modified", it.UpdatedParsed, feedUpdated)
	if len(it.Enclosures) != 1 || it.Enclosures[0].URL != s.PDFURL || it.Enclosures[0].Type != "application/pdf" {
		t.Errorf("attachments = %+v", it.Enclosures)
	}
	if f.Items[1].Authors != nil {
		t.Errorf("item2 authors = %v, want none", personNames(f.Items[1].Authors))
	}

	// gofeed ignores hubs and the raw date strings; check them directly.
	var raw struct {
		Version string `json:"version"`
		Hubs    []struct{ Type, URL string }
		Items   []struct {
			ExternalURL   string `json:"external_url"`
			DatePublished string `json:"date_published"`
			DateModified  string `json:"date_modified"`
			Author        any    `json:"author"`
			ContentText   string `json:"content_text"`
		}
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Hubs) != 1 || raw.Hubs[0].Type != "WebSub" || raw.Hubs[0].URL != src.HubURL {
		t.Errorf("hubs = %+v", raw.Hubs)
	}
	wantEq(t, "external_url", raw.Items[0].ExternalURL, s.PDFURL)
	wantEq(t, "content_text", raw.Items[0].ContentText, s.Summary+"\n\n"+s.Content)
	wantEq(t, "date_published", raw.Items[0].DatePublished, "2026-03-09T18:00:00Z")
	wantEq(t, "date_modified", raw.Items[0].DateModified, "2026-03-10T20:00:00Z")
	if raw.Items[0].Author != nil {
		t.Errorf("deprecated 1.0 author member present: %v", raw.Items[0].Author)
	}
}

func TestFeedWithoutOptionalURLs(t *testing.T) {
	src := sampleFeed()
	src.HTMLURL, src.HubURL, src.Subtitle, src.Language = "", "", "", ""
	for _, r := range allFormats {
		t.Run(r.name, func(t *testing.T) {
			out := mustRender(t, r.render, src)
			f := parseFeed(t, out)
			if strings.Contains(string(out), "hub") {
				t.Errorf("hub present although HubURL is empty")
			}
			if r.name == "rss" {
				wantEq(t, "channel link falls back to self", f.Link, src.SelfURL)
				wantEq(t, "description falls back to title", f.Description, src.Title)
			} else {
				wantEq(t, "alternate", f.Link, "")
			}
			wantEq(t, "language", f.Language, "")
		})
	}
}

// Text with markup, entities, LaTeX, accents, emoji and illegal characters.
const (
	nasty      = "<b>Bold</b> &amp; $\\alpha$ Déjà vu 🧪\x01 a<b && c>d \"q\" 'a'"
	nastyClean = "<b>Bold</b> &amp; $\\alpha$ Déjà vu 🧪 a<b && c>d \"q\" 'a'"
)

func nastyFeed() Feed {
	f := sampleFeed()
	f.Title = nasty
	f.Subtitle = nasty
	it := &f.Items[0]
	it.Title = nasty
	it.Summary = "Abstract: " + nasty + "\nSecond line with x^2 < y_1 & \x0b\x7f\u0085\ufffe\uffff\xed\xa0\x80done."
	it.Content = "Following: " + nasty
	it.Authors = []string{"Ren\xe9e \x02O'Brien & Søn", "Déjà Vu 🧪"}
	it.Categories = []string{"cs.LG", "q-bio.NC & <x>"}
	return f
}

func TestSpecialCharactersRoundTrip(t *testing.T) {
	src := nastyFeed()
	wantSummary := "Abstract: " + nastyClean + "\nSecond line with x^2 < y_1 & done."
	wantContent := "Following: " + nastyClean
	// A lone "\xe9" is invalid UTF-8 and is dropped, not guessed as Latin-1.
	wantAuthors := []string{"Rene O'Brien & Søn", "Déjà Vu 🧪"}
	wantCats := []string{"cs.LG", "q-bio.NC & <x>"}

	for _, r := range allFormats {
		t.Run(r.name, func(t *testing.T) {
			out := mustRender(t, r.render, src)
			for _, bad := range []string{"\x01", "\x02", "\x0b", "\x7f", "\u0085", "\ufffe", "\uffff", "&#x1;", "&#1;", "\ufffd"} {
				if bytes.Contains(out, []byte(bad)) {
					t.Errorf("output contains %q", bad)
				}
			}
			f := parseFeed(t, out)
			wantEq(t, "feed title", f.Title, nastyClean)
			wantEq(t, "feed description", f.Description, nastyClean)
			it := f.Items[0]
			wantEq(t, "item title", it.Title, nastyClean)
			eqSlice(t, "categories", it.Categories, wantCats)
			switch r.name {
			case "atom", "json":
				wantEq(t, "summary", it.Description, wantSummary)
				wantEq(t, "content text", htmlText(it.Content), wantSummary+"\n"+wantContent+"\nAbstract · PDF")
				eqSlice(t, "authors", personNames(it.Authors), wantAuthors)
			case "rss":
				eqSlice(t, "dc:creator", it.DublinCoreExt.Creator, []string{strings.Join(wantAuthors, ", ")})
				wantEq(t, "description text", htmlText(it.Description),
					wantSummary+"\n"+wantContent+"\nAbstract · PDF")
			}
		})
	}

	// Exact round trip through encoding/xml too (gofeed trims and decodes
	// entities a second time in some places; encoding/xml does not).
	var a struct {
		Title   string `xml:"title"`
		Entries []struct {
			Title   string `xml:"title"`
			Summary string `xml:"summary"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(mustRender(t, RenderAtom, src), &a); err != nil {
		t.Fatal(err)
	}
	wantEq(t, "xml feed title", a.Title, nastyClean)
	wantEq(t, "xml entry title", a.Entries[0].Title, nastyClean)
	wantEq(t, "xml entry summary", a.Entries[0].Summary, wantSummary)
}

// wantBody is the HTML body every format carries, written out here
// independently of the renderer: escaped paragraphs, then the links.
func wantBody(summary, content, abs, pdf string) string {
	var b strings.Builder
	for _, p := range strings.Split(summary, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			b.WriteString("<p>" + html.EscapeString(p) + "</p>")
		}
	}
	if content != "" {
		b.WriteString("<p>" + html.EscapeString(content) + "</p>")
	}
	b.WriteString(`<p><a href="` + html.EscapeString(abs) + `">Abstract</a> · <a href="` + html.EscapeString(pdf) + `">PDF</a></p>`)
	return b.String()
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// htmlText turns an RSS description fragment back into the text a feed reader
// displays: paragraphs become lines, tags go, entities are decoded.
func htmlText(s string) string {
	s = strings.ReplaceAll(s, "</p><p>", "\n")
	return html.UnescapeString(tagRE.ReplaceAllString(s, ""))
}

func TestCleanText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain ascii", "plain ascii"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"a\x00b\x01c\x1fd\x7fe", "abcde"},
		{"c1\u0080\u009f.", "c1."},
		{"nonchar\ufffe\uffff.", "nonchar."},
		{"lone surrogate \xed\xa0\x80.", "lone surrogate ."},
		{"bad \xff\xfe bytes", "bad  bytes"},
		{"truncated \xe2\x82", "truncated "},
		{"keep \ufffd replacement", "keep \ufffd replacement"},
		{"emoji 🧪 and 中文 and \U0010FFFD", "emoji 🧪 and 中文 and \U0010FFFD"},
	}
	for _, c := range cases {
		if got := cleanText(c.in); got != c.want {
			t.Errorf("cleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { cleanText("already clean: Déjà vu 🧪 $x^2$") }); n != 0 {
		t.Errorf("cleanText allocates %v times on clean input", n)
	}
}

func TestDeterministic(t *testing.T) {
	src := nastyFeed()
	src.Items[1].ID = "" // derived id must be stable too
	// The oldest, so it stays last (items are rendered newest first).
	src.Items = append(src.Items, Item{Title: "No id, no URL", Published: time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)})
	before := fmt.Sprintf("%#v", src)
	for _, r := range allFormats {
		t.Run(r.name, func(t *testing.T) {
			first := mustRender(t, r.render, src)
			for range 5 {
				if again := mustRender(t, r.render, copyFeed(src)); !bytes.Equal(first, again) {
					t.Fatalf("re-render differs:\n%s\n---\n%s", first, again)
				}
			}
			f := parseFeed(t, first)
			wantEq(t, "id falls back to AbsURL", f.Items[1].GUID, src.Items[1].AbsURL)
			if g := f.Items[2].GUID; !strings.HasPrefix(g, "tag:followfeed,2026:item/") {
				t.Errorf("derived id = %q", g)
			}
		})
	}
	if after := fmt.Sprintf("%#v", src); after != before {
		t.Errorf("render modified the caller's Feed")
	}
	// The zero Updated renders as the fixed epoch, never the clock.
	z := Feed{ID: "tag:x,2026:z", Title: "z"}
	out := mustRender(t, RenderAtom, z)
	if !bytes.Contains(out, []byte("<updated>1970-01-01T00:00:00Z</updated>")) {
		t.Errorf("zero Updated not rendered as epoch:\n%s", out)
	}
}

// copyFeed copies f and its slices, so re-renders cannot share state with the first.
func copyFeed(f Feed) Feed {
	g := f
	g.Items = make([]Item, len(f.Items))
	for i, it := range f.Items {
		it.Authors = slices.Clone(it.Authors)
		it.Categories = slices.Clone(it.Categories)
		g.Items[i] = it
	}
	return g
}

func TestEmptyFeed(t *testing.T) {
	for _, items := range [][]Item{nil, {}} {
		src := sampleFeed()
		src.Items = items
		for _, r := range allFormats {
			t.Run(r.name, func(t *testing.T) {
				out := mustRender(t, r.render, src)
				f := parseFeed(t, out)
				wantEq(t, "type", f.FeedType, r.typ)
				wantEq(t, "items", len(f.Items), 0)
				wantEq(t, "title", f.Title, src.Title)
				if r.name == "json" && !bytes.Contains(out, []byte(`"items": []`)) {
					t.Errorf("JSON Feed requires an items array:\n%s", out)
				}
				if r.name == "atom" {
					checkAtomStructure(t, out, 0)
				}
			})
		}
	}
}

// atomDocCheck is an independent minimal model of the Atom we promise.
type atomDocCheck struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	Lang    string   `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
	ID      string   `xml:"id"`
	Title   string   `xml:"title"`
	Updated string   `xml:"updated"`
	Gen     string   `xml:"generator"`
	Links   []struct {
		Rel  string `xml:"rel,attr"`
		Href string `xml:"href,attr"`
		Type string `xml:"type,attr"`
	} `xml:"link"`
	Entries []struct {
		ID        string   `xml:"id"`
		Title     string   `xml:"title"`
		Updated   string   `xml:"updated"`
		Published string   `xml:"published"`
		Authors   []string `xml:"author>name"`
		Summary   struct {
			Type string `xml:"type,attr"`
		} `xml:"summary"`
	} `xml:"entry"`
}

func checkAtomStructure(t *testing.T, out []byte, wantEntries int) {
	t.Helper()
	var d atomDocCheck
	if err := xml.Unmarshal(out, &d); err != nil {
		t.Fatalf("encoding/xml: %v", err)
	}
	if d.ID == "" || d.Title == "" || d.Gen != Generator {
		t.Errorf("feed id/title/generator missing: %+v", d)
	}
	if _, err := time.Parse(time.RFC3339, d.Updated); err != nil || !strings.HasSuffix(d.Updated, "Z") {
		t.Errorf("feed updated %q not RFC 3339 UTC", d.Updated)
	}
	self := false
	for _, l := range d.Links {
		self = self || (l.Rel == "self" && l.Href != "" && l.Type == "application/atom+xml")
	}
	if !self {
		t.Errorf("no rel=self link: %+v", d.Links)
	}
	if len(d.Entries) != wantEntries {
		t.Fatalf("entries = %d, want %d", len(d.Entries), wantEntries)
	}
	for i, e := range d.Entries {
		if e.ID == "" || e.Title == "" || len(e.Authors) == 0 || slices.Contains(e.Authors, "") {
			t.Errorf("entry %d missing id/title/author: %+v", i, e)
		}
		for _, ts := range []string{e.Updated, e.Published} {
			if _, err := time.Parse(time.RFC3339, ts); err != nil || !strings.HasSuffix(ts, "Z") {
				t.Errorf("entry %d date %q not RFC 3339 UTC", i, ts)
			}
		}
	}
}

func TestAtomStructure(t *testing.T) {
	out := mustRender(t, RenderAtom, sampleFeed())
	checkAtomStructure(t, out, 2)
	var d atomDocCheck
	if err := xml.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	wantEq(t, "xml:lang", d.Lang, "en")
	wantEq(t, "summary type", d.Entries[0].Summary.Type, "text")
}

// bigFeed has n items whose abstracts are about absBytes long, newest first.
func bigFeed(n, absBytes int) Feed {
	f := sampleFeed()
	f.Items = make([]Item, n)
	sentence := "We propose a method for $\\mathcal{O}(n \\log n)$ attention & show it beats <baseline> on 7 benchmarks. "
	abs := strings.Repeat(sentence, absBytes/len(sentence)+1)[:absBytes]
	for i := range f.Items {
		id := fmt.Sprintf("2603.%05d", 99999-i)
		f.Items[i] = Item{
			ID:         "tag:arxiv.org,1991:" + id,
			Title:      fmt.Sprintf("Paper %d: Scaling Laws for Sparse Mixtures", i),
			Authors:    []string{"Mingzhi Wen", "Ada Lovelace", "Alan Turing", "Grace Hopper", "Emmy Noether"},
			Summary:    abs,
			Content:    "Following: Mingzhi Wen · cs.LG",
			AbsURL:     "https://arxiv.org/abs/" + id + "v1",
			PDFURL:     "https://arxiv.org/pdf/" + id + "v1",
			Categories: []string{"cs.LG", "cs.CL", "stat.ML"},
			Published:  feedUpdated.Add(-time.Duration(i) * time.Hour),
		}
	}
	return f
}

func TestSizeCap(t *testing.T) {
	src := bigFeed(200, 20_000)
	for _, r := range allFormats {
		t.Run(r.name, func(t *testing.T) {
			out := mustRender(t, r.render, src)
			f := parseFeed(t, out)
			k := len(f.Items)
			if k < 10 || k >= 200 {
				t.Fatalf("kept %d items", k)
			}
			for i, it := range f.Items {
				if it.GUID != src.Items[i].ID {
					t.Fatalf("item %d = %s, want %s (newest must be kept, in order)", i, it.GUID, src.Items[i].ID)
				}
			}
			if r.name == "atom" {
				checkAtomStructure(t, out, k)
			}
			// Maximal: one more item would not fit.
			more := src
			more.Items = src.Items[:k+1]
			n := normalizeFeed(more)
			full, err := map[string]func(*Feed) ([]byte, error){"atom": atomDoc, "rss": rssDocument, "json": jsonDoc}[r.name](&n)
			if err != nil {
				t.Fatal(err)
			}
			if len(full) <= MaxBytes {
				t.Errorf("kept %d items but %d fit (%d bytes)", k, k+1, len(full))
			}
			t.Logf("%s: kept %d/200 items, %d bytes", r.name, k, len(out))
		})
	}
}

func TestSizeCapSingleHugeItem(t *testing.T) {
	// 2 MB abstract of multi-byte runes and characters that grow when escaped.
	src := bigFeed(3, 100)
	src.Items[0].Summary = strings.Repeat("Déjà <vu> & 🧪 ", 2<<20/20)
	for _, r := range allFormats {
		t.Run(r.name, func(t *testing.T) {
			out := mustRender(t, r.render, src)
			f := parseFeed(t, out)
			if len(f.Items) != 1 || f.Items[0].GUID != src.Items[0].ID {
				t.Fatalf("want only the first item, got %d", len(f.Items))
			}
			if len(out) < MaxBytes*9/10 {
				t.Errorf("summary cut far too much: %d bytes", len(out))
			}
			var summary string
			if r.name == "rss" {
				summary = htmlText(f.Items[0].Description)
			} else {
				summary = f.Items[0].Description
			}
			if !strings.Contains(summary, ellipsis) || !strings.HasPrefix(src.Items[0].Summary, strings.TrimRight(strings.SplitN(summary, ellipsis, 2)[0], " ")) {
				t.Errorf("summary not a truncated prefix with ellipsis: …%q", summary[max(0, len(summary)-80):])
			}
		})
	}
}

func TestSizeCapItemThatCannotFit(t *testing.T) {
	// The newest item's title alone exceeds MaxBytes: shortening the summary
	// cannot help, so the feed renders with no items rather than fail.
	src := bigFeed(3, 100)
	src.Items[0].Title = strings.Repeat("t", MaxBytes)
	for _, r := range allFormats {
		out := mustRender(t, r.render, src)
		if f := parseFeed(t, out); len(f.Items) != 0 {
			t.Errorf("%s: %d items, want 0", r.name, len(f.Items))
		}
	}
}

func TestTooLarge(t *testing.T) {
	src := sampleFeed()
	src.Title = strings.Repeat("x", MaxBytes)
	for _, r := range allFormats {
		if _, err := r.render(src); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: err = %v, want ErrTooLarge", r.name, err)
		}
	}
}

func TestCutText(t *testing.T) {
	cases := []struct {
		in   string
		over int
		want string
	}{
		{"hello world", 6, "hello" + ellipsis},
		{"hello world", 11, ""},
		{"hello world", 50, ""},
		{"ab🧪cd", 4, "ab" + ellipsis}, // cut inside the emoji backs off to its start
		{"   x", 1, ""},
		{"unchanged", 0, "unchanged"},
	}
	for _, c := range cases {
		if got := cutText(c.in, c.over); got != c.want {
			t.Errorf("cutText(%q, %d) = %q, want %q", c.in, c.over, got, c.want)
		}
	}
}

func TestRenderOPML(t *testing.T) {
	outlines := []OPMLOutline{
		{Title: "Papers from your 12 follows", XMLURL: "https://followfeed.example/u/abc.atom", HTMLURL: "https://followfeed.example/"},
		{Title: "cs.LG <new> & \x01notable", XMLURL: "https://followfeed.example/feeds/category/cs.LG.atom?a=1&b=2"},
		{XMLURL: "https://followfeed.example/feeds/institution/mit.rss"},
	}
	created := time.Date(2026, 3, 10, 21, 30, 0, 0, cet)
	out, err := RenderOPML("followfeed subscriptions", "Ada <ada@example.org>", created, outlines)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		XMLName xml.Name `xml:"opml"`
		Version string   `xml:"version,attr"`
		Head    struct {
			Title       string `xml:"title"`
			DateCreated string `xml:"dateCreated"`
			OwnerName   string `xml:"ownerName"`
		} `xml:"head"`
		Outlines []struct {
			Type    string `xml:"type,attr"`
			Text    string `xml:"text,attr"`
			Title   string `xml:"title,attr"`
			XMLURL  string `xml:"xmlUrl,attr"`
			HTMLURL string `xml:"htmlUrl,attr"`
		} `xml:"body>outline"`
	}
	if err := xml.Unmarshal(out, &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wantEq(t, "version", d.Version, "2.0")
	wantEq(t, "title", d.Head.Title, "followfeed subscriptions")
	wantEq(t, "ownerName", d.Head.OwnerName, "Ada <ada@example.org>")
	wantEq(t, "dateCreated", d.Head.DateCreated, "Tue, 10 Mar 2026 20:30:00 +0000")
	if len(d.Outlines) != len(outlines) {
		t.Fatalf("outlines = %d, want %d", len(d.Outlines), len(outlines))
	}
	wantTitles := []string{outlines[0].Title, "cs.LG <new> & notable", outlines[2].XMLURL}
	for i, o := range d.Outlines {
		wantEq(t, "type", o.Type, "rss")
		wantEq(t, "title", o.Title, wantTitles[i])
		wantEq(t, "text", o.Text, wantTitles[i])
		wantEq(t, "xmlUrl", o.XMLURL, outlines[i].XMLURL)
		wantEq(t, "htmlUrl", o.HTMLURL, outlines[i].HTMLURL)
	}
	if bytes.Contains(out, []byte(`htmlUrl=""`)) {
		t.Errorf("empty htmlUrl rendered")
	}
	again, _ := RenderOPML("followfeed subscriptions", "Ada <ada@example.org>", created, outlines)
	if !bytes.Equal(out, again) {
		t.Errorf("OPML not deterministic")
	}
	empty, err := RenderOPML("none", "", time.Time{}, nil)
	if err != nil || bytes.Contains(empty, []byte("dateCreated")) || bytes.Contains(empty, []byte("ownerName")) {
		t.Errorf("empty OPML: %v\n%s", err, empty)
	}
}

// TestRenderGolden pins the exact bytes of each format. Run with -update-golden after an
// intended change and review the diff.
func TestRenderGolden(t *testing.T) {
	cases := []struct {
		file   string
		render func() ([]byte, error)
	}{
		{"sample.atom", func() ([]byte, error) { return RenderAtom(sampleFeed()) }},
		{"sample.rss", func() ([]byte, error) { return RenderRSS(sampleFeed()) }},
		{"sample.json", func() ([]byte, error) { return RenderJSON(sampleFeed()) }},
		{"nasty.atom", func() ([]byte, error) { return RenderAtom(nastyFeed()) }},
		{"nasty.rss", func() ([]byte, error) { return RenderRSS(nastyFeed()) }},
		{"nasty.json", func() ([]byte, error) { return RenderJSON(nastyFeed()) }},
		{"subscriptions.opml", func() ([]byte, error) {
			return RenderOPML("followfeed subscriptions", "Ada", feedUpdated, []OPMLOutline{
				{Title: "New papers by Mingzhi Wen", XMLURL: "https://followfeed.example/feeds/researcher/mingzhi-wen.atom", HTMLURL: "https://followfeed.example/researcher/mingzhi-wen"},
				{Title: "cs.LG", XMLURL: "https://followfeed.example/feeds/category/cs.LG.atom"},
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, err := c.render()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "render", c.file)
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./feeds/ -run TestRenderGolden -update-golden)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from golden file; rerun with -update-golden if intended\ngot:\n%s", path, got)
			}
		})
	}
}

// FuzzRender checks that arbitrary text renders to well-formed documents in
// every format and round-trips exactly (minus illegal characters).
func FuzzRender(f *testing.F) {
	f.Log("hostile: decoders")
	f.Add("Déjà vu 🧪", "$\\alpha$ <b> &amp;", "Ada", "cs.LG")
	f.Add("\x01\x00\xff", "\r\n\t x", "", "")
	f.Add("]]>", "<![CDATA[ x ]]>", "&#1;", "\ufffe")
	f.Add("\xed\xa0\x80", "\u2028\u2029", "\"'", "a b")
	f.Fuzz(func(t *testing.T, title, summary, author, category string) {
		src := Feed{
			ID: "tag:followfeed,2026:feed/fuzz", Title: title, SelfURL: "https://x/f",
			Items: []Item{{ID: "tag:x,2026:1", Title: title, Summary: summary, Content: author,
				Authors: []string{author}, Categories: []string{category}, AbsURL: "https://x/1"}},
		}
		for _, r := range allFormats {
			out, err := r.render(src)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			if !utf8.Valid(out) {
				t.Fatalf("%s: invalid UTF-8", r.name)
			}
			if _, err := gofeed.NewParser().ParseString(string(out)); err != nil {
				t.Fatalf("%s: gofeed: %v\n%s", r.name, err, out)
			}
		}
		atomOut, _ := RenderAtom(src)
		var a struct {
			Title   string `xml:"title"`
			Entries []struct {
				Title   string `xml:"title"`
				Summary string `xml:"summary"`
			} `xml:"entry"`
		}
		if err := xml.Unmarshal(atomOut, &a); err != nil {
			t.Fatalf("encoding/xml: %v\n%s", err, atomOut)
		}
		if a.Title != cleanText(title) || a.Entries[0].Title != cleanText(title) || a.Entries[0].Summary != cleanText(summary) {
			t.Fatalf("atom round trip: %q %q %q", a.Title, a.Entries[0].Title, a.Entries[0].Summary)
		}
		jsonOut, _ := RenderJSON(src)
		var j struct {
			Title string `json:"title"`
			Items []struct {
				Title, Summary string
			} `json:"items"`
		}
		if err := json.Unmarshal(jsonOut, &j); err != nil {
			t.Fatal(err)
		}
		if j.Title != cleanText(title) || j.Items[0].Summary != cleanText(summary) {
			t.Fatalf("json round trip: %q %q", j.Title, j.Items[0].Summary)
		}
	})
}

func benchRender(b *testing.B, render func(Feed) ([]byte, error), f Feed) {
	b.ReportAllocs()
	var n int
	for b.Loop() {
		out, err := render(f)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	b.ReportMetric(float64(n), "bytes/doc")
}

// BenchmarkRenderAtom50 renders a typical feed: 50 items with ~1.5 KB abstracts.
func BenchmarkRenderAtom50(b *testing.B) { benchRender(b, RenderAtom, bigFeed(50, 1500)) }

// BenchmarkRenderRSS50 is BenchmarkRenderAtom50 for RSS.
func BenchmarkRenderRSS50(b *testing.B) { benchRender(b, RenderRSS, bigFeed(50, 1500)) }

// BenchmarkRenderJSON50 is BenchmarkRenderAtom50 for JSON Feed.
func BenchmarkRenderJSON50(b *testing.B) { benchRender(b, RenderJSON, bigFeed(50, 1500)) }

// BenchmarkRenderAtomCapped200 exercises the size cap: 200 items with 20 KB
// abstracts, of which about 50 fit.
func BenchmarkRenderAtomCapped200(b *testing.B) { benchRender(b, RenderAtom, bigFeed(200, 20_000)) }

func TestDerivedIDStable(t *testing.T) {
	a := Feed{ID: "tag:x,2026:f", Title: "f", Updated: feedUpdated,
		Items: []Item{{Title: "No id, no URL, no dates", Authors: []string{"Ada"}}}}
	b := a
	b.Updated = feedUpdated.Add(time.Hour) // feed-level fallbacks change…
	na, nb := normalizeFeed(a), normalizeFeed(b)
	if na.Items[0].ID != nb.Items[0].ID || !strings.HasPrefix(na.Items[0].ID, "tag:followfeed,2026:item/") {
		t.Errorf("derived ids differ or malformed: %q vs %q", na.Items[0].ID, nb.Items[0].ID) // …the id must not
	}
	noID := Feed{Title: "Untitled"}
	if got := normalizeFeed(noID).ID; !strings.HasPrefix(got, "tag:followfeed,2026:feed/") {
		t.Errorf("derived feed id = %q", got)
	}
	noID.SelfURL = "https://x/f.atom"
	wantEq(t, "feed id falls back to SelfURL", normalizeFeed(noID).ID, noID.SelfURL)
}

// TestBodyHTMLParagraphs: an abstract with blank lines becomes one <p> per
// paragraph in every format's HTML body, and markup in it stays text.
func TestBodyHTMLParagraphs(t *testing.T) {
	it := Item{Summary: "First <b>para</b>.\n\n  Second\npara.\n\n\n", Content: "Following: cs.LG",
		AbsURL: "https://arxiv.org/abs/1?a=1&b=2", PDFURL: "https://arxiv.org/pdf/1"}
	got := it.bodyHTML()
	want := `<p>First &lt;b&gt;para&lt;/b&gt;.</p><p>Second` + "\n" + `para.</p><p>Following: cs.LG</p>` +
		`<p><a href="https://arxiv.org/abs/1?a=1&amp;b=2">Abstract</a> · <a href="https://arxiv.org/pdf/1">PDF</a></p>`
	wantEq(t, "body", got, want)
	if (&Item{}).bodyHTML() != "" {
		t.Errorf("empty item has a body")
	}
}

// TestGoldensShowWhatUsersNeed reads the RSS and Atom golden files as a
// feed reader does (gofeed) and checks what feed readers display, so a golden
// cannot be regenerated into something wrong unnoticed: every author of
// each paper (RSS: in its one dc:creator, as newsboat and Miniflux show
// only one), and the abstract and PDF links in the HTML content.
func TestGoldensShowWhatUsersNeed(t *testing.T) {
	src := sampleFeed()
	for _, name := range []string{"sample.rss", "sample.atom"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "render", name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := gofeed.NewParser().ParseString(string(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, it := range f.Items {
			s := src.Items[i]
			var shown []string
			if strings.HasSuffix(name, ".rss") {
				if it.DublinCoreExt != nil {
					shown = it.DublinCoreExt.Creator
				}
			} else {
				shown = personNames(it.Authors)
			}
			all := strings.Join(shown, ", ")
			for _, a := range s.Authors {
				if !strings.Contains(all, a) {
					t.Errorf("%s item %d: author %q not shown (%q)", name, i, a, shown)
				}
			}
			if strings.HasSuffix(name, ".rss") && len(s.Authors) > 1 && len(shown) != 1 {
				t.Errorf("%s item %d: %d dc:creator elements, want one naming all", name, i, len(shown))
			}
			body := it.Content
			if body == "" {
				body = it.Description
			}
			for _, link := range []string{`<a href="` + s.AbsURL + `">Abstract</a>`, `<a href="` + s.PDFURL + `">PDF</a>`} {
				if !strings.Contains(body, link) {
					t.Errorf("%s item %d: content lacks %s:\n%s", name, i, link, body)
				}
			}
		}
	}
}

// TestItemsNewestFirstByShownDate: items given in match order (a harvest's
// seq order, whose submission dates run Nov 28, 27, 29, 28, 27) come out
// newest first by the date each format shows, as gofeed reads it (Atom
// <published>, RSS <pubDate>, JSON Feed date_published), items of one date
// in the order given; an item without a Published date is placed by the
// date it is shown with (its Updated; with neither, the feed's Updated).
// The caller's items keep their order.
func TestItemsNewestFirstByShownDate(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 19, 0, 0, 0, time.UTC) }
	src := sampleFeed()
	src.Updated = day(30)
	src.Items = nil
	for i, it := range []struct {
		id                 string
		published, updated time.Time
	}{
		{"a", day(28), time.Time{}},
		{"b", day(27), day(29).Add(time.Hour)}, // a new version: shown as first published
		{"c", day(29), time.Time{}},
		{"d", day(28), time.Time{}}, // the same date as a: after it
		{"e", day(27), time.Time{}},
		{"f", time.Time{}, day(28).Add(time.Hour)}, // shown with its Updated
		{"g", time.Time{}, time.Time{}},            // shown with the feed's Updated
	} {
		src.Items = append(src.Items, Item{ID: "tag:arxiv.org,1991:2611.0000" + strconv.Itoa(i) + it.id, Title: "Paper " + it.id,
			AbsURL: "https://arxiv.org/abs/2611.0000" + strconv.Itoa(i), Published: it.published, Updated: it.updated})
	}
	given := copyFeed(src)
	const want = "g c f a d b e"
	for _, r := range allFormats {
		f := parseFeed(t, mustRender(t, r.render, src))
		var order []string
		for i, it := range f.Items {
			order = append(order, strings.TrimPrefix(it.Title, "Paper "))
			if it.PublishedParsed == nil {
				t.Fatalf("%s: item %d has no date gofeed reads", r.name, i)
			}
			if i > 0 && it.PublishedParsed.After(*f.Items[i-1].PublishedParsed) {
				t.Errorf("%s: item %d (%s) is dated %v, after the item before it (%v)", r.name, i, it.Title, it.PublishedParsed, f.Items[i-1].PublishedParsed)
			}
		}
		if got := strings.Join(order, " "); got != want {
			t.Errorf("%s: items in the order %s, want %s", r.name, got, want)
		}
	}
	if !reflect.DeepEqual(src, given) {
		t.Errorf("rendering reordered the caller's items")
	}
}

// feedbackItem is an item with feedback links whose URLs and labels carry
// what HTML must escape.
func feedbackItem(id string, published time.Time) Item {
	return Item{ID: "tag:arxiv.org,1991:" + id, Title: "Paper " + id, Summary: "An abstract.", Content: "Following: cs.LG",
		AbsURL: "https://arxiv.org/abs/" + id, PDFURL: "https://arxiv.org/pdf/" + id, Published: published,
		Feedback: []Link{
			{Label: "More like this", URL: "https://ff.test/feedback/ffl_more?" + id + "&a=<1>"},
			{Label: "Less like this", URL: "https://ff.test/feedback/ffl_less" + id},
			{Label: `Save "<it>"`, URL: "https://ff.test/feedback/ffl_save" + id},
			{Label: "dropped: no URL"},
		}}
}

// TestFeedbackLinksInEveryFormat: an item's feedback links end its HTML
// body, one paragraph of escaped links after the Abstract · PDF one, in
// Atom's content, RSS's description and JSON Feed's content_html, as a
// feed reader (gofeed, then an HTML parser) reads them; JSON Feed's
// content_text ends with one "Label: URL" line each. A link without a URL
// is dropped; an item without links renders as before.
func TestFeedbackLinksInEveryFormat(t *testing.T) {
	it := feedbackItem("2611.00001", time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))
	type link struct{ label, url string }
	want := []link{{"Abstract", it.AbsURL}, {"PDF", it.PDFURL}}
	for _, l := range it.Feedback[:3] {
		want = append(want, link{l.Label, l.URL})
	}
	f := Feed{Title: "Feed", SelfURL: "https://ff.test/feeds/x.atom", Items: []Item{it}}
	for _, r := range allFormats {
		out := parseFeed(t, mustRender(t, r.render, f))
		body := out.Items[0].Content
		if r.name == "rss" {
			body = out.Items[0].Description
		}
		doc, err := xhtml.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var got []link
		var paras []int // links per <p>
		for n := range doc.Descendants() {
			switch {
			case n.Type == xhtml.ElementNode && n.Data == "p":
				paras = append(paras, 0)
			case n.Type == xhtml.ElementNode && n.Data == "a":
				paras[len(paras)-1]++
				href := ""
				for _, a := range n.Attr {
					if a.Key == "href" {
						href = a.Val
					}
				}
				got = append(got, link{n.FirstChild.Data, href})
			}
		}
		if !slices.Equal(got, want) || !slices.Equal(paras, []int{0, 0, 2, 3}) {
			t.Errorf("%s: links %q in paragraphs %v\n%s", r.name, got, paras, body)
		}
		if r.name == "json" {
			var doc struct {
				Items []struct {
					ContentText string `json:"content_text"`
				} `json:"items"`
			}
			if err := json.Unmarshal(mustRender(t, r.render, f), &doc); err != nil {
				t.Fatal(err)
			}
			wantText := "An abstract.\n\nFollowing: cs.LG\n\nMore like this: " + it.Feedback[0].URL + "\nLess like this: " +
				it.Feedback[1].URL + "\nSave \"<it>\": " + it.Feedback[2].URL
			wantEq(t, "content_text", doc.Items[0].ContentText, wantText)
		}
	}
	sameAsReference(t, f)
	plain := it
	plain.Feedback = nil
	if b := plain.bodyHTML(); strings.Contains(b, "feedback") || !strings.HasSuffix(b, ">PDF</a></p>") {
		t.Errorf("without links: %s", b)
	}
}

// TestRankedFeedKeepsItsOrder: a Ranked feed's items come out in the order
// given (best first), not by date, in every format; when the size cap
// drops items, the lowest ranked go first.
func TestRankedFeedKeepsItsOrder(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	f := Feed{Title: "Ranked", SelfURL: "https://ff.test/feeds/x/best.atom", Ranked: true}
	for i, d := range []int{3, 9, 1, 5} {
		f.Items = append(f.Items, feedbackItem(fmt.Sprintf("2611.0000%d", i), day(d)))
	}
	for _, r := range allFormats {
		out := parseFeed(t, mustRender(t, r.render, f))
		var order []string
		for _, it := range out.Items {
			order = append(order, it.Title)
		}
		if want := []string{"Paper 2611.00000", "Paper 2611.00001", "Paper 2611.00002", "Paper 2611.00003"}; !slices.Equal(order, want) {
			t.Errorf("%s: %q", r.name, order)
		}
	}
	big := bigFeed(400, 5000)
	big.Ranked = true
	slices.Reverse(big.Items) // oldest first: a ranking that is not by date
	out := parseFeed(t, mustRender(t, RenderAtom, big))
	if n := len(out.Items); n == 0 || n == len(big.Items) || out.Items[0].GUID != big.Items[0].ID || out.Items[n-1].GUID != big.Items[n-1].ID {
		t.Errorf("capped ranked feed: %d of %d items, first %s, last %s", n, len(big.Items), out.Items[0].GUID, out.Items[n-1].GUID)
	}
}
