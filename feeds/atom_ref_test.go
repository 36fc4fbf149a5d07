package feeds

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/feeds"
)

// The reference rendering: the Atom document as encoding/xml marshals
// gorilla/feeds' AtomFeed and AtomEntry extended with what they lack
// (several links, authors and categories, xml:lang, a generator), which
// the Atom renderer used to be. atomDoc writes the same bytes directly;
// these tests hold it to that.

type refAtomFeed struct {
	gorilla.AtomFeed
	Lang      string          `xml:"http://www.w3.org/XML/1998/namespace lang,attr,omitempty"`
	Links     []refAtomLink   `xml:"link"`
	Generator string          `xml:"generator"`
	Entries   []*refAtomEntry `xml:"entry"`
}

type refAtomEntry struct {
	gorilla.AtomEntry
	Authors    []gorilla.AtomAuthor `xml:"author"`
	Links      []refAtomLink        `xml:"link"`
	Categories []refAtomCategory    `xml:"category"`
}

type refAtomLink struct {
	gorilla.AtomLink
	Title string `xml:"title,attr,omitempty"`
}

type refAtomCategory struct {
	XMLName xml.Name `xml:"category"`
	Term    string   `xml:"term,attr"`
}

func newRefAtomLink(href, rel, typ, title string) refAtomLink {
	return refAtomLink{AtomLink: gorilla.AtomLink{Href: href, Rel: rel, Type: typ}, Title: title}
}

func newRefAtomEntry(it *Item) *refAtomEntry {
	e := &refAtomEntry{AtomEntry: gorilla.AtomEntry{
		Title:     it.Title,
		Id:        it.ID,
		Updated:   rfc3339(it.Updated),
		Published: rfc3339(it.Published),
	}}
	if it.Summary != "" {
		e.Summary = &gorilla.AtomSummary{Content: it.Summary, Type: "text"}
	}
	if body := it.bodyHTML(); body != "" {
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
		e.Links = append(e.Links, newRefAtomLink(it.AbsURL, "alternate", "text/html", ""))
	}
	if it.PDFURL != "" {
		e.Links = append(e.Links, newRefAtomLink(it.PDFURL, "related", "application/pdf", "pdf"))
	}
	for _, c := range it.Categories {
		e.Categories = append(e.Categories, refAtomCategory{Term: c})
	}
	return e
}

func refAtomDoc(f *Feed) ([]byte, error) {
	doc := refAtomFeed{
		AtomFeed: gorilla.AtomFeed{
			Xmlns:    nsAtom,
			Title:    f.Title,
			Id:       f.ID,
			Updated:  rfc3339(f.Updated),
			Subtitle: f.Subtitle,
		},
		Lang:      f.Language,
		Generator: Generator,
		Entries:   make([]*refAtomEntry, len(f.Items)),
	}
	if f.SelfURL != "" {
		doc.Links = append(doc.Links, newRefAtomLink(f.SelfURL, "self", "application/atom+xml", ""))
	}
	if f.HTMLURL != "" {
		doc.Links = append(doc.Links, newRefAtomLink(f.HTMLURL, "alternate", "text/html", ""))
	}
	if f.ActorURL != "" {
		doc.Links = append(doc.Links, newRefAtomLink(f.ActorURL, "alternate", "application/activity+json", ""))
	}
	if f.HubURL != "" {
		doc.Links = append(doc.Links, newRefAtomLink(f.HubURL, "hub", "", ""))
	}
	for i := range f.Items {
		doc.Entries[i] = newRefAtomEntry(&f.Items[i])
	}
	return marshalXML(doc)
}

// sameAsReference fails t unless atomDoc and the encoding/xml reference
// render f identically, and atomItemCost is each entry's exact size, raw
// (not normalised: the writer must escape what normalisation would have
// removed exactly as encoding/xml does) and normalised.
func sameAsReference(t *testing.T, f Feed) {
	t.Helper()
	for _, g := range []Feed{f, normalizeFeed(f)} {
		got, err := atomDoc(&g)
		if err != nil {
			t.Fatal(err)
		}
		want, err := refAtomDoc(&g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("atomDoc differs from encoding/xml:\ngot:\n%s\nwant:\n%s", got, want)
		}
		for i := range g.Items {
			c, _ := atomItemCost(&g, &g.Items[i])
			ref, err := xmlElementCost(newRefAtomEntry(&g.Items[i]), 1)
			if err != nil || c != ref {
				t.Fatalf("item %d cost %d, encoding/xml %d (%v)", i, c, ref, err)
			}
		}
	}
}

func TestAtomWriterMatchesEncodingXML(t *testing.T) {
	sameAsReference(t, sampleFeed())
	sameAsReference(t, nastyFeed())
	sameAsReference(t, bigFeed(50, 1500))
	sameAsReference(t, Feed{})
	sameAsReference(t, Feed{Title: "no items", Language: "en-GB", HubURL: "https://hub/"})
	sameAsReference(t, Feed{Title: "an actor", ActorURL: "https://f.example/ap/actors/cs.LG?<&>"})
	sameAsReference(t, Feed{Items: []Item{{}, {Authors: []string{"", "A"}, Categories: []string{"", "x"}}}})
	sameAsReference(t, Feed{Title: strings.Repeat("\x00\x7f\u0085\ufffd\ufffe\uffff\xed\xa0\x80\xff<&>\"'\t\r\n", 3),
		Items: []Item{{Title: "\U0010FFFF\U00010000", Summary: "\x01 \u2028", Published: time.Unix(1, 0)}}})
}

// FuzzAtomWriter: for any text in any field the direct writer and
// encoding/xml agree byte for byte.
func FuzzAtomWriter(f *testing.F) {
	f.Add("Déjà vu 🧪", "$\\alpha$ <b> &amp;", "Ada", "cs.LG", "en")
	f.Add("\x01\x00\xff", "\r\n\t x", "", "", "")
	f.Add("]]>", "<![CDATA[ x ]]>", "&#1;", "\ufffe", "\"")
	f.Add("\xed\xa0\x80", "\u2028\u2029", "\"'", "a b", "\x7f")
	f.Fuzz(func(t *testing.T, title, summary, author, category, lang string) {
		sameAsReference(t, Feed{
			ID: title, Title: title, Subtitle: summary, SelfURL: author, HTMLURL: category, HubURL: lang, Language: lang, ActorURL: summary,
			Items: []Item{{ID: summary, Title: title, Summary: summary, Content: author,
				Authors: []string{author, title}, Categories: []string{category}, AbsURL: lang, PDFURL: category}},
		})
	})
}
