package feeds

import (
	"encoding/xml"
	"time"
)

// OPMLOutline is one subscription in an OPML document.
type OPMLOutline struct {
	// Title is shown by the feed reader; if empty, XMLURL is used.
	Title string
	// XMLURL is the feed URL (required by feed readers to subscribe).
	XMLURL string
	// HTMLURL is the human page for the feed; omitted when "".
	HTMLURL string
}

type opmlDoc struct {
	XMLName xml.Name `xml:"opml"`
	Version string   `xml:"version,attr"`
	Head    opmlHead `xml:"head"`
	Body    opmlBody `xml:"body"`
}

type opmlHead struct {
	Title       string `xml:"title"`
	DateCreated string `xml:"dateCreated,omitempty"`
	OwnerName   string `xml:"ownerName,omitempty"`
}

type opmlBody struct {
	Outlines []opmlOutline `xml:"outline"`
}

type opmlOutline struct {
	Type    string `xml:"type,attr"`
	Text    string `xml:"text,attr"`
	Title   string `xml:"title,attr"`
	XMLURL  string `xml:"xmlUrl,attr"`
	HTMLURL string `xml:"htmlUrl,attr,omitempty"`
}

// RenderOPML renders an OPML 2.0 subscription list for import into feed
// feed readers, byte-identical for identical input:
//
//	<opml version="2.0">
//	  <head><title/><dateCreated/><ownerName/></head>
//	  <body><outline type="rss" text=.. title=.. xmlUrl=.. htmlUrl=..></outline>…</body>
//	</opml>
//
// Outlines keep their order. dateCreated is created in RFC 1123 form with a
// numeric zone, in UTC (the RFC 822 form OPML asks for), and is omitted when
// created is zero; ownerName and htmlUrl are omitted when empty; text and
// title fall back to xmlUrl when Title is empty. type is "rss" for every
// outline whatever the feed format, as feed readers expect. Text is sanitised as
// for Feed. OPML documents are not subject to MaxBytes.
func RenderOPML(title string, owner string, created time.Time, outlines []OPMLOutline) ([]byte, error) {
	doc := opmlDoc{
		Version: "2.0",
		Head: opmlHead{
			Title:     cleanText(title),
			OwnerName: cleanText(owner),
		},
		Body: opmlBody{Outlines: make([]opmlOutline, len(outlines))},
	}
	if !created.IsZero() {
		doc.Head.DateCreated = rfc1123Z(utcSecond(created))
	}
	for i, o := range outlines {
		x := opmlOutline{
			Type:    "rss",
			Title:   cleanText(o.Title),
			XMLURL:  cleanText(o.XMLURL),
			HTMLURL: cleanText(o.HTMLURL),
		}
		if x.Title == "" {
			x.Title = x.XMLURL
		}
		x.Text = x.Title
		doc.Body.Outlines[i] = x
	}
	return marshalXML(doc)
}
