package feeds

import (
	"bytes"
	"encoding/json"

	gorilla "github.com/gorilla/feeds"
)

// jsonFeed is gorilla's JSONFeed with Items shadowed by a field without
// omitempty: JSON Feed requires "items", even when empty.
type jsonFeed struct {
	*gorilla.JSONFeed
	Items []*gorilla.JSONItem `json:"items"`
}

func newJSONItem(it *Item) *gorilla.JSONItem {
	j := &gorilla.JSONItem{
		Id:            it.ID,
		Url:           it.AbsURL,
		ExternalUrl:   it.PDFURL,
		Title:         it.Title,
		Summary:       it.Summary,
		ContentText:   it.fullText(),
		ContentHTML:   it.bodyHTML(),
		PublishedDate: &it.Published,
		ModifiedDate:  &it.Updated,
		Tags:          it.Categories,
	}
	if j.ContentText == "" {
		// content_text or content_html is required; the title is all we have.
		j.ContentText = it.Title
	}
	if len(it.Authors) > 0 {
		j.Authors = make([]*gorilla.JSONAuthor, len(it.Authors))
		for i, a := range it.Authors {
			j.Authors[i] = &gorilla.JSONAuthor{Name: a}
		}
	}
	if it.PDFURL != "" {
		j.Attachments = []gorilla.JSONAttachment{{Url: it.PDFURL, MIMEType: "application/pdf", Title: "PDF"}}
	}
	return j
}

func jsonDoc(f *Feed) ([]byte, error) {
	doc := jsonFeed{
		JSONFeed: &gorilla.JSONFeed{
			Version:     JSONFeedVersion,
			Title:       f.Title,
			Language:    f.Language,
			HomePageUrl: f.HTMLURL,
			FeedUrl:     f.SelfURL,
			Description: f.Subtitle,
		},
		Items: make([]*gorilla.JSONItem, len(f.Items)),
	}
	if f.HubURL != "" {
		doc.Hubs = []*gorilla.JSONHub{{Type: "WebSub", Url: f.HubURL}}
	}
	for i := range f.Items {
		doc.Items[i] = newJSONItem(&f.Items[i])
	}
	return marshalJSON(doc, "")
}

// marshalJSON encodes v indented, without HTML escaping (this is not
// embedded in HTML), ending in a newline.
func marshalJSON(v any, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// jsonItemCost is the bytes an item adds inside "items": a comma, a newline,
// two levels of indentation and the indented object (whose trailing newline
// from Encode stands in for the comma). Summed over k items it is 2 bytes
// short of the real growth (the "\n  " before "]" minus the last comma);
// renderCapped's verification step absorbs that.
func jsonItemCost(_ *Feed, it *Item) (int, error) {
	b, err := marshalJSON(newJSONItem(it), "    ")
	if err != nil {
		return 0, err
	}
	return len(b) + len("\n    "), nil
}

// RenderJSON renders f as a JSON Feed 1.1 document of at most MaxBytes,
// byte-identical for identical input.
//
// The feed has version (JSONFeedVersion), title, home_page_url (HTMLURL),
// feed_url (SelfURL), description (Subtitle), language, hubs
// [{"type":"WebSub","url":HubURL}] and items (always present, possibly []).
// Each item has id, url (AbsURL), external_url (PDFURL), title, summary,
// content_text (summary, a blank line, then Content; the title when both are
// empty, since content_text is required), content_html (the HTML body
// described at Item.bodyHTML, when there is one), date_published and
// date_modified (RFC 3339, UTC), authors [{"name"}], tags (categories), and
// the PDF again as an attachment {"url", "mime_type":"application/pdf",
// "title":"PDF"} so feed readers that list attachments offer it for download.
// Empty optional members are omitted.
func RenderJSON(f Feed) ([]byte, error) {
	return renderCapped(f, docFormat{doc: jsonDoc, itemCost: jsonItemCost})
}
