package feeds

import (
	"encoding/xml"
	"time"

	gorilla "github.com/gorilla/feeds"
)

const (
	nsAtom = "http://www.w3.org/2005/Atom"
	nsDC   = "http://purl.org/dc/elements/1.1/"
)

// atomFeed extends gorilla's AtomFeed (xmlns, title, id, updated, subtitle)
// with xml:lang (the attribute in the XML namespace, which encoding/xml
// writes with the reserved "xml" prefix), several links (shadowing
// AtomFeed.Link), a generator and our own entries (shadowing
// AtomFeed.Entries).
type atomFeed struct {
	gorilla.AtomFeed
	Lang      string       `xml:"http://www.w3.org/XML/1998/namespace lang,attr,omitempty"`
	Links     []atomLink   `xml:"link"`
	Generator string       `xml:"generator"`
	Entries   []*atomEntry `xml:"entry"`
}

// atomEntry extends gorilla's AtomEntry (title, id, updated, published,
// summary, content) with several authors, links and categories, shadowing
// AtomEntry.Author, AtomEntry.Links and AtomEntry.Category.
type atomEntry struct {
	gorilla.AtomEntry
	Authors    []gorilla.AtomAuthor `xml:"author"`
	Links      []atomLink           `xml:"link"`
	Categories []atomCategory       `xml:"category"`
}

// atomLink is gorilla's AtomLink plus the title attribute.
type atomLink struct {
	gorilla.AtomLink
	Title string `xml:"title,attr,omitempty"`
}

type atomCategory struct {
	XMLName xml.Name `xml:"category"`
	Term    string   `xml:"term,attr"`
}

func newAtomLink(href, rel, typ, title string) atomLink {
	return atomLink{AtomLink: gorilla.AtomLink{Href: href, Rel: rel, Type: typ}, Title: title}
}

func rfc3339(t time.Time) string { return t.Format(time.RFC3339) }

func newAtomEntry(it *Item) *atomEntry {
	e := &atomEntry{AtomEntry: gorilla.AtomEntry{
		Title:     it.Title,
		Id:        it.ID,
		Updated:   rfc3339(it.Updated),
		Published: rfc3339(it.Published),
	}}
	if it.Summary != "" {
		e.Summary = &gorilla.AtomSummary{Content: it.Summary, Type: "text"}
	}
	if body := it.bodyHTML(); body != "" {
		// Readers show <content> in preference to <summary>, so content
		// carries the abstract too, with the reasons and the links.
		e.Content = &gorilla.AtomContent{Content: body, Type: "html"}
	}
	authors := it.Authors
	if len(authors) == 0 {
		authors = []string{fallbackAuthor}
	}
	e.Authors = make([]gorilla.AtomAuthor, len(authors))
	for i, a := range authors {
		e.Authors[i].Name = a
	}
	if it.AbsURL != "" {
		e.Links = append(e.Links, newAtomLink(it.AbsURL, "alternate", "text/html", ""))
	}
	if it.PDFURL != "" {
		e.Links = append(e.Links, newAtomLink(it.PDFURL, "related", "application/pdf", "pdf"))
	}
	for _, c := range it.Categories {
		e.Categories = append(e.Categories, atomCategory{Term: c})
	}
	return e
}

func atomDoc(f *Feed) ([]byte, error) {
	doc := atomFeed{
		AtomFeed: gorilla.AtomFeed{
			Xmlns:    nsAtom,
			Title:    f.Title,
			Id:       f.ID,
			Updated:  rfc3339(f.Updated),
			Subtitle: f.Subtitle,
		},
		Lang:      f.Language,
		Generator: Generator,
		Entries:   make([]*atomEntry, len(f.Items)),
	}
	if f.SelfURL != "" {
		doc.Links = append(doc.Links, newAtomLink(f.SelfURL, "self", "application/atom+xml", ""))
	}
	if f.HTMLURL != "" {
		doc.Links = append(doc.Links, newAtomLink(f.HTMLURL, "alternate", "text/html", ""))
	}
	if f.HubURL != "" {
		doc.Links = append(doc.Links, newAtomLink(f.HubURL, "hub", "", ""))
	}
	for i := range f.Items {
		doc.Entries[i] = newAtomEntry(&f.Items[i])
	}
	return marshalXML(doc)
}

func atomItemCost(_ *Feed, it *Item) (int, error) {
	return xmlElementCost(newAtomEntry(it), 1)
}

// RenderAtom renders f as an Atom 1.0 (RFC 4287) document of at most
// MaxBytes, byte-identical for identical input.
//
// The feed has <id>=ID, <title>, <subtitle> (when set), <updated> (RFC 3339,
// UTC), xml:lang=Language (when set), <link rel="self"
// type="application/atom+xml">, <link rel="alternate" type="text/html"> and
// <link rel="hub"> (each when its URL is set) and <generator>followfeed</generator>.
// Each entry has <id>, <title>, <updated>, <published>, one <author><name>
// per author (a single "arXiv" author when there are none), <summary
// type="text"> (when set), <content type="html"> holding the HTML body
// described at Item.bodyHTML (the abstract's paragraphs, the Content line,
// the Abstract and PDF links; readers prefer content over summary), <link rel="alternate" type="text/html" href=AbsURL>, the PDF as
// <link rel="related" type="application/pdf" title="pdf" href=PDFURL>, and a
// <category term=...> per category.
func RenderAtom(f Feed) ([]byte, error) {
	return renderCapped(f, docFormat{doc: atomDoc, itemCost: atomItemCost})
}
