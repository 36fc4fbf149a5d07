// Package feeds produces followfeed's syndication documents: private per-user
// feeds and public per-researcher, per-category and per-institution feeds in
// Atom, RSS 2.0 and JSON Feed 1.1, plus OPML subscription lists.
//
// The renderers (render.go for what the formats share, atom.go, rss.go,
// jsonfeed.go, opml.go) are pure functions: no database, no
// HTTP, no clock, no randomness. The same input always renders to the same
// bytes, so callers may hash the output for ETags and cache it freely.
//
// RSS and JSON Feed are built from the github.com/gorilla/feeds document
// types (RssFeed, RssItem, JSONFeed, JSONItem, ...), extended by thin
// wrapper structs that embed them and add what gorilla/feeds v1.2.0 cannot
// express (several links and authors per entry, categories, rel="self"/"hub"
// links, a generator, xml:lang, Dublin Core creators). The wrappers shadow
// the conflicting gorilla fields, following the usual Go embedding rules
// that encoding/xml and encoding/json both apply. Atom, the format every
// private feed URL defaults to, is written directly into one buffer
// (atom.go), byte for byte what encoding/xml makes of gorilla's AtomFeed
// and AtomEntry extended the same way, at well under half the CPU; a test
// keeps that encoding/xml rendering as the reference and fuzzes the two
// against each other. We never call gorilla's Feed.ToAtom/ToRss/ToJSON:
// they derive the Atom id from the link and put random UUIDs on items
// without ids.
package feeds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"html"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Generator is the generator name written into every Atom and RSS document.
const Generator = "followfeed"

// MaxBytes is the upper bound on the size of any document returned by
// RenderAtom, RenderRSS or RenderJSON. Items are dropped from the end (the
// oldest by their shown date, see Feed.Items) until the document fits.
const MaxBytes = 1 << 20

// Content types to send with each rendered format.
const (
	// ContentTypeAtom is the Content-Type of RenderAtom output.
	ContentTypeAtom = "application/atom+xml; charset=utf-8"
	// ContentTypeRSS is the Content-Type of RenderRSS output.
	ContentTypeRSS = "application/rss+xml; charset=utf-8"
	// ContentTypeJSON is the Content-Type of RenderJSON output.
	ContentTypeJSON = "application/feed+json; charset=utf-8"
	// ContentTypeOPML is the Content-Type of RenderOPML output.
	ContentTypeOPML = "text/x-opml; charset=utf-8"
	// ContentTypeActivity is the type of the Atom and RSS link to a feed's
	// ActivityPub actor (Feed.ActorURL).
	ContentTypeActivity = "application/activity+json"
)

// JSONFeedVersion is the value of the "version" member of every JSON Feed
// rendered by RenderJSON.
const JSONFeedVersion = "https://jsonfeed.org/version/1.1"

// ErrTooLarge is returned when a document cannot be made to fit in MaxBytes
// even with no items at all (for example a multi-megabyte feed title).
var ErrTooLarge = errors.New("feeds: rendered document exceeds MaxBytes even without items")

// zeroUpdated is the <updated> of a feed whose Updated is zero. It is fixed, never
// time.Now(), so renders stay byte-identical.
var zeroUpdated = time.Unix(0, 0).UTC()

// fallbackAuthor is the Atom author of an entry that has no authors, so the
// entry stays valid Atom (RFC 4287 §4.1.2 requires one when the feed has none).
const fallbackAuthor = "arXiv"

// Feed is one feed to render, already selected; the renderers order its
// items (see Items).
//
// Every string is sanitised before rendering: characters that are illegal in
// XML 1.0 (C0 controls other than tab, newline and carriage return, DEL and C1
// controls, U+FFFE, U+FFFF, and invalid UTF-8 including encoded surrogates)
// are removed, in all three formats alike.
type Feed struct {
	// ID is the stable feed id (a tag: URI), e.g.
	// "tag:followfeed,2026:feed/category/cs.LG". If empty, SelfURL is used;
	// if that is empty too, a tag: URI derived from Title.
	ID string
	// Title is the feed title, e.g. "New papers by Mingzhi Wen".
	Title string
	// Subtitle is an optional one-line description.
	Subtitle string
	// SelfURL is the absolute URL of this document (rel="self").
	SelfURL string
	// HTMLURL is a human page for the feed (rel="alternate"); may be "".
	HTMLURL string
	// HubURL is the WebSub hub (rel="hub"); omitted when "".
	HubURL string
	// ActorURL is the feed's ActivityPub actor (ACTIVITYPUB=on), which
	// Atom and RSS link as rel="alternate" type="application/activity+json"
	// (ContentTypeActivity); omitted when "". JSON Feed has no place for
	// it.
	ActorURL string
	// Updated is the newest item's Updated, computed by the caller. Zero
	// renders as 1970-01-01T00:00:00Z (never the current time).
	Updated time.Time
	// Language is a BCP 47 tag such as "en"; omitted when "".
	Language string
	// Items are rendered newest first by the date every format shows as
	// the item's date (its Published after the fallbacks Item describes:
	// Atom's <published>, RSS's <pubDate>, JSON Feed's date_published),
	// items of one date in the order given (callers give theirs newest
	// match first), so that a feed reader showing the document's order shows
	// the dates in order; in a Ranked feed, in the order given. The tail
	// is dropped first when the document would exceed MaxBytes.
	Items []Item
	// Ranked keeps Items in the order given (a ranked feed: best first)
	// instead of newest first, for feed readers that show a document's
	// order; the size cap then drops the lowest ranked first.
	Ranked bool
}

// Link is a labelled link of an item's body: one of the feedback links of
// a private feed's items.
type Link struct {
	// Label is the link's text, e.g. "More like this".
	Label string
	// URL is absolute.
	URL string
}

// Item is one paper in a Feed.
type Item struct {
	// ID is stable across versions of the paper, e.g.
	// "tag:arxiv.org,1991:2202.02326". If empty, AbsURL is used; if that is
	// empty too, a tag: URI derived from title, authors and Published. It is
	// never a random value.
	ID string
	// Title is plain text (may contain <, &, LaTeX, emoji).
	Title string
	// Authors are author names in order. Empty names are skipped.
	Authors []string
	// Summary is the abstract, plain text.
	Summary string
	// Content is optional extra plain text, e.g. "Following: Mingzhi Wen
	// · cs.LG"; blank lines separate its paragraphs.
	Content string
	// Feedback are the user's one-click feedback links of the paper (More
	// like this, Less like this, Save), signed for one user: set on
	// private feeds' items only, never on a public feed's. They end the
	// HTML body (a paragraph of links) and the text ("Label: URL" lines).
	Feedback []Link
	// AbsURL is the abstract page (the item's permalink).
	AbsURL string
	// PDFURL is the PDF; see RenderAtom, RenderRSS and RenderJSON for where
	// each format puts it.
	PDFURL string
	// Categories are arXiv categories such as "cs.LG". Empty ones are skipped.
	Categories []string
	// Published is the first-version date; zero falls back to Updated.
	Published time.Time
	// Updated is the latest-version date; zero falls back to Published, and
	// if both are zero to the feed's Updated.
	Updated time.Time
}

// ---------------------------------------------------------------------------
// Sanitising and normalisation.

// legalRune reports whether r (decoded with width w) may appear in an XML 1.0
// document and is not a control character other than tab, LF and CR.
func legalRune(r rune, w int) bool {
	switch {
	case r == utf8.RuneError && w == 1: // invalid UTF-8, including encoded surrogates
		return false
	case r == '\t', r == '\n', r == '\r':
		return true
	case r < 0x20: // C0 controls
		return false
	case r >= 0x7f && r <= 0x9f: // DEL and C1 controls
		return false
	case r >= 0xd800 && r <= 0xdfff: // surrogates (unreachable via utf8, kept for clarity)
		return false
	case r == 0xfffe, r == 0xffff:
		return false
	}
	return true
}

// cleanText removes every character that legalRune rejects. It does not
// allocate when s is already clean.
func cleanText(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if !legalRune(r, w) {
			return cleanSlow(s, i)
		}
		i += w
	}
	return s
}

func cleanSlow(s string, from int) string {
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:from])
	for i := from; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if legalRune(r, w) {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}

// cleanList cleans every element and drops the ones that are blank.
func cleanList(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		s = cleanText(s)
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// utcSecond normalises t to UTC with whole seconds, so all formats print the
// same instant the same way.
func utcSecond(t time.Time) time.Time {
	return t.UTC().Truncate(time.Second)
}

// derivedID returns a deterministic tag: URI for kind from parts.
func derivedID(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "tag:followfeed,2026:" + kind + "/" + hex.EncodeToString(h.Sum(nil)[:16])
}

// normalizeFeed returns a sanitised copy of f with ids and dates filled in. The
// caller's Feed and its slices are never modified.
func normalizeFeed(f Feed) Feed {
	n := Feed{
		ID:       cleanText(f.ID),
		Title:    cleanText(f.Title),
		Subtitle: cleanText(f.Subtitle),
		SelfURL:  cleanText(f.SelfURL),
		HTMLURL:  cleanText(f.HTMLURL),
		HubURL:   cleanText(f.HubURL),
		ActorURL: cleanText(f.ActorURL),
		Updated:  utcSecond(f.Updated),
		Language: cleanText(f.Language),
	}
	if f.Updated.IsZero() {
		n.Updated = zeroUpdated
	}
	if n.ID == "" {
		n.ID = n.SelfURL
	}
	if n.ID == "" {
		n.ID = derivedID("feed", n.Title)
	}
	n.Items = make([]Item, len(f.Items))
	for i, it := range f.Items {
		c := Item{
			ID:         cleanText(it.ID),
			Title:      cleanText(it.Title),
			Authors:    cleanList(it.Authors),
			Summary:    cleanText(it.Summary),
			Content:    cleanText(it.Content),
			AbsURL:     cleanText(it.AbsURL),
			PDFURL:     cleanText(it.PDFURL),
			Categories: cleanList(it.Categories),
			Feedback:   cleanLinks(it.Feedback),
			Published:  it.Published,
			Updated:    it.Updated,
		}
		if c.ID == "" {
			c.ID = c.AbsURL
		}
		if c.ID == "" {
			// From the item's own data only (not the feed-dependent date
			// fallbacks below), so it is stable across renders and feeds.
			c.ID = derivedID("item", append([]string{c.Title, utcSecond(it.Published).Format(time.RFC3339)}, c.Authors...)...)
		}
		if c.Updated.IsZero() {
			c.Updated = c.Published
		}
		if c.Updated.IsZero() {
			c.Updated = n.Updated
		}
		if c.Published.IsZero() {
			c.Published = c.Updated
		}
		c.Published, c.Updated = utcSecond(c.Published), utcSecond(c.Updated)
		n.Items[i] = c
	}
	// A feed's items mostly come in date order already: one pass finds
	// out, a stable sort (one date keeps the order given) runs otherwise.
	// A ranked feed keeps its order.
	n.Ranked = f.Ranked
	for i := 1; i < len(n.Items) && !f.Ranked; i++ {
		if n.Items[i].Published.After(n.Items[i-1].Published) {
			slices.SortStableFunc(n.Items, func(a, b Item) int { return b.Published.Compare(a.Published) })
			break
		}
	}
	return n
}

// cleanLinks cleans every link's label and URL and drops the ones without
// a URL; nil stays nil (no allocation for items without links).
func cleanLinks(in []Link) []Link {
	if len(in) == 0 {
		return nil
	}
	out := make([]Link, 0, len(in))
	for _, l := range in {
		if l.URL = cleanText(l.URL); l.URL != "" {
			out = append(out, Link{Label: cleanText(l.Label), URL: l.URL})
		}
	}
	return out
}

// rawSize is a lower bound on the bytes that item contributes to any format:
// escaping only ever grows text.
func (it *Item) rawSize() int {
	n := len(it.ID) + len(it.Title) + len(it.Summary) + len(it.Content) + len(it.AbsURL) + len(it.PDFURL)
	for _, s := range it.Authors {
		n += len(s)
	}
	for _, s := range it.Categories {
		n += len(s)
	}
	for _, l := range it.Feedback {
		n += len(l.Label) + len(l.URL)
	}
	return n
}

// fullText is the item's body text: the summary, then Content as a separate
// paragraph, then the feedback links, one "Label: URL" line each.
func (it *Item) fullText() string {
	var parts []string
	if it.Summary != "" {
		parts = append(parts, it.Summary)
	}
	if it.Content != "" {
		parts = append(parts, it.Content)
	}
	if len(it.Feedback) > 0 {
		lines := make([]string, len(it.Feedback))
		for i, l := range it.Feedback {
			lines[i] = l.Label + ": " + l.URL
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	return strings.Join(parts, "\n\n")
}

// paragraphs splits plain text into paragraphs at blank lines, trimming each
// and dropping empty ones. Line breaks inside a paragraph are kept (HTML
// shows them as spaces, as the abstract's own line wrapping intends).
func paragraphs(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// bodyHTML is the item's body as an HTML fragment, the same in Atom
// <content type="html">, RSS <description> and JSON Feed content_html:
// each paragraph of the abstract in its own <p>, each paragraph of Content
// ("Following: …") in its own <p>, then one <p> with the links,
// "<a href=AbsURL>Abstract</a> · <a href=PDFURL>PDF</a>" (each when set),
// then one <p> with the feedback links ("<a href=…>More like this</a> ·
// …"), when there are any. Every piece of text is HTML-escaped, so feed
// readers display exactly the original text; nothing from the paper is
// ever markup.
func (it *Item) bodyHTML() string {
	var b strings.Builder
	para := func(s string) {
		b.WriteString("<p>")
		b.WriteString(html.EscapeString(s))
		b.WriteString("</p>")
	}
	for _, p := range paragraphs(it.Summary) {
		para(p)
	}
	for _, p := range paragraphs(it.Content) {
		para(p)
	}
	var links []Link
	if it.AbsURL != "" {
		links = append(links, Link{"Abstract", it.AbsURL})
	}
	if it.PDFURL != "" {
		links = append(links, Link{"PDF", it.PDFURL})
	}
	linkPara(&b, links)
	linkPara(&b, it.Feedback)
	return b.String()
}

// linkPara writes links as one paragraph, " · " between them; nothing
// for none.
func linkPara(b *strings.Builder, links []Link) {
	for i, l := range links {
		if i == 0 {
			b.WriteString("<p>")
		} else {
			b.WriteString(" · ")
		}
		b.WriteString(`<a href="`)
		b.WriteString(html.EscapeString(l.URL))
		b.WriteString(`">`)
		b.WriteString(html.EscapeString(l.Label))
		b.WriteString("</a>")
	}
	if len(links) > 0 {
		b.WriteString("</p>")
	}
}

// authorLine is every author in one string, "A, B and C" style as arXiv's
// own RSS does ("A, B, C"): feed readers that show one creator show them all.
func authorLine(authors []string) string { return strings.Join(authors, ", ") }

// ---------------------------------------------------------------------------
// Size cap.

// docFormat renders one document kind from a normalised Feed.
type docFormat struct {
	// doc renders the whole document.
	doc func(f *Feed) ([]byte, error)
	// itemCost returns the number of bytes it adds to doc: exact for XML,
	// at most a few bytes low for JSON (renderCapped verifies and steps down).
	itemCost func(f *Feed, it *Item) (int, error)
}

// renderCapped normalises f and renders it with fm, dropping items from the end
// until the document fits in MaxBytes. If not even the first item fits on its
// own, its summary (then its Content) is shortened until it does; if that
// cannot work, the document is rendered with no items; if even that is too
// large, ErrTooLarge is returned.
func renderCapped(f Feed, fm docFormat) ([]byte, error) {
	n := normalizeFeed(f)
	all := n.Items

	// Common case: everything fits. Skip this render when the raw text alone
	// already exceeds the cap.
	raw := 0
	for i := range all {
		raw += all[i].rawSize()
	}
	if raw <= MaxBytes {
		out, err := fm.doc(&n)
		if err != nil || len(out) <= MaxBytes {
			return out, err
		}
	}

	n.Items = []Item{}
	base, err := fm.doc(&n)
	if err != nil {
		return nil, err
	}
	if len(base) > MaxBytes {
		return nil, ErrTooLarge
	}
	if len(all) == 0 {
		return base, nil
	}

	// Estimate the longest prefix that fits from per-item costs, computed
	// only as far as needed, then verify with a real render and step down if
	// the estimate was optimistic.
	budget := MaxBytes - len(base)
	k, size := 0, 0
	for k < len(all) {
		c := all[k].rawSize() // lower bound; skips marshaling huge items
		if c <= budget {
			if c, err = fm.itemCost(&n, &all[k]); err != nil {
				return nil, err
			}
		}
		if c > budget {
			size = len(base) + c // only used when k == 0
			break
		}
		budget -= c
		k++
	}
	for ; k >= 1; k-- {
		n.Items = all[:k]
		out, err := fm.doc(&n)
		if err != nil {
			return nil, err
		}
		if len(out) <= MaxBytes {
			return out, nil
		}
		size = len(out)
	}
	// Not even the newest item fits on its own.
	return shrinkSingle(&n, all[0], size, fm, base)
}

// ellipsis marks a shortened summary.
const ellipsis = "…"

// shrinkSingle renders n with only it, shortening its Summary (then its
// Content) until the document fits. size is the size (or a lower bound on the
// size) of the document with it as is, which is larger than MaxBytes; base is
// the render without items, returned when even the item with no summary and
// no content does not fit.
//
// Escaping makes output size a non-linear function of text length, so each
// round keeps the share of the text that the remaining room allows, measured
// from the last render, with a 1% margin; rounds repeat until it fits (one to
// three in practice). Every round cuts more than the ellipsis adds back, so the
// text strictly shrinks and the loop ends, at the latest with the bare item.
func shrinkSingle(n *Feed, it Item, size int, fm docFormat, base []byte) ([]byte, error) {
	bare := it
	bare.Summary, bare.Content = "", ""
	n.Items = []Item{bare}
	bareOut, err := fm.doc(n)
	if err != nil {
		return nil, err
	}
	if len(bareOut) > MaxBytes {
		return base, nil
	}
	room := MaxBytes - len(bareOut) // bytes available to the text
	for {
		text := len(it.Summary) + len(it.Content)
		if text == 0 {
			return bareOut, nil // defensive: the bare item is known to fit
		}
		used := max(size-len(bareOut), 1)
		keep := int(float64(text)*float64(room)/float64(used)*0.99) - 2*len(ellipsis)
		// Cut more than the ellipsis adds back, so the text strictly shrinks.
		cut := max(text-keep, len(ellipsis)+1)
		if cut < len(it.Summary) {
			it.Summary = cutText(it.Summary, cut)
		} else {
			cut -= len(it.Summary)
			it.Summary = ""
			it.Content = cutText(it.Content, cut)
		}
		n.Items = []Item{it}
		out, err := fm.doc(n)
		if err != nil {
			return nil, err
		}
		if size = len(out); size <= MaxBytes {
			return out, nil
		}
	}
}

// cutText removes at least over bytes from the end of s (on a rune boundary)
// and appends an ellipsis, or returns "" when that leaves nothing. It returns
// s unchanged when over <= 0.
func cutText(s string, over int) string {
	if over <= 0 {
		return s
	}
	keep := len(s) - over
	if keep <= 0 {
		return ""
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	s = strings.TrimRight(s[:keep], " \t\r\n")
	if s == "" {
		return ""
	}
	return s + ellipsis
}

// ---------------------------------------------------------------------------
// XML helpers.

const xmlIndent = "  "

// marshalXML writes the XML declaration, v indented, and a final newline.
func marshalXML(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", xmlIndent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// xmlElementCost is the exact number of bytes that element v adds to a
// document rendered by marshalXML when v sits at the given nesting depth:
// a newline, the indentation and the indented element.
func xmlElementCost(v any, depth int) (int, error) {
	prefix := strings.Repeat(xmlIndent, depth)
	b, err := xml.MarshalIndent(v, prefix, xmlIndent)
	if err != nil {
		return 0, err
	}
	return 1 + len(b), nil
}
