package feeds

import (
	"encoding/xml"
	"time"

	gorilla "github.com/gorilla/feeds"
)

// rssDoc is the <rss> root with the atom and dc namespaces declared.
// (gorilla's RssFeedXml only declares the content namespace.)
type rssDoc struct {
	XMLName xml.Name `xml:"rss"`
	Version string   `xml:"version,attr"`
	NSAtom  string   `xml:"xmlns:atom,attr"`
	NSDC    string   `xml:"xmlns:dc,attr"`
	Channel *rssChannel
}

// rssChannel extends gorilla's RssFeed (title, link, description, language,
// lastBuildDate, generator) with atom:link elements and our own items
// (shadowing RssFeed.Items).
type rssChannel struct {
	gorilla.RssFeed
	AtomLinks []rssAtomLink `xml:"atom:link"`
	Items     []*rssItem    `xml:"item"`
}

type rssAtomLink struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
}

// rssItem extends gorilla's RssItem (title, link, description, guid, pubDate)
// with one dc:creator naming every author and a <category> per category
// (shadowing RssItem.Category).
type rssItem struct {
	gorilla.RssItem
	Creator    string   `xml:"dc:creator,omitempty"`
	Categories []string `xml:"category"`
}

func rfc1123Z(t time.Time) string { return t.Format(time.RFC1123Z) }

func newRSSItem(it *Item) *rssItem {
	return &rssItem{
		RssItem: gorilla.RssItem{
			Title:       it.Title,
			Link:        it.AbsURL,
			Description: it.bodyHTML(),
			Guid:        &gorilla.RssGuid{Id: it.ID, IsPermaLink: "false"},
			PubDate:     rfc1123Z(it.Published),
		},
		Creator:    authorLine(it.Authors),
		Categories: it.Categories,
	}
}

func rssDocument(f *Feed) ([]byte, error) {
	desc := f.Subtitle
	if desc == "" {
		desc = f.Title
	}
	home := f.HTMLURL
	if home == "" {
		home = f.SelfURL
	}
	ch := &rssChannel{
		RssFeed: gorilla.RssFeed{
			Title:         f.Title,
			Link:          home,
			Description:   desc,
			Language:      f.Language,
			LastBuildDate: rfc1123Z(f.Updated),
			Generator:     Generator,
		},
		Items: make([]*rssItem, len(f.Items)),
	}
	if f.SelfURL != "" {
		ch.AtomLinks = append(ch.AtomLinks, rssAtomLink{Href: f.SelfURL, Rel: "self", Type: "application/rss+xml"})
	}
	if f.ActorURL != "" {
		ch.AtomLinks = append(ch.AtomLinks, rssAtomLink{Href: f.ActorURL, Rel: "alternate", Type: ContentTypeActivity})
	}
	if f.HubURL != "" {
		ch.AtomLinks = append(ch.AtomLinks, rssAtomLink{Href: f.HubURL, Rel: "hub"})
	}
	for i := range f.Items {
		ch.Items[i] = newRSSItem(&f.Items[i])
	}
	return marshalXML(rssDoc{Version: "2.0", NSAtom: nsAtom, NSDC: nsDC, Channel: ch})
}

func rssItemCost(_ *Feed, it *Item) (int, error) {
	return xmlElementCost(newRSSItem(it), 2)
}

// RenderRSS renders f as an RSS 2.0 document of at most MaxBytes,
// byte-identical for identical input.
//
// The channel has title, link (HTMLURL, else SelfURL), description
// (Subtitle, else Title), language (when set), lastBuildDate (RFC 1123 with
// numeric zone, UTC), generator, <atom:link rel="self"
// type="application/rss+xml">, the ActivityPub actor as <atom:link
// rel="alternate" type="application/activity+json"> and <atom:link
// rel="hub"> (each when set).
// Each item has <guid isPermaLink="false">ID</guid>, title (plain text), link
// (AbsURL), one <dc:creator> with every author, comma-separated, as arXiv's
// own RSS does (feed readers such as newsboat and Miniflux show only one creator;
// RSS <author> must be an e-mail address), a <category> per category,
// pubDate (Published), and a description that is the HTML body described at
// Item.bodyHTML: the abstract's paragraphs, the Content line, and the
// Abstract and PDF links.
// There is no enclosure: the PDF is a document, not media.
func RenderRSS(f Feed) ([]byte, error) {
	return renderCapped(f, docFormat{doc: rssDocument, itemCost: rssItemCost})
}
