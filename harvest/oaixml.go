package harvest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"followfeed/apperr"
	"followfeed/internal/text"
	"followfeed/internal/upstream"
	"followfeed/paper"
)

// This file is the OAI-PMH XML model and its parser: from a ListRecords
// body to a Page of papers, never expanding entities, every field capped.

// Per-field caps applied to every parsed record. Longer values are truncated
// (at a rune boundary), extra list entries dropped; a DOI or category that
// is too long is dropped, since a truncated one would be wrong.
const (
	oaiMaxTitleRunes      = 2000
	oaiMaxAbstractRunes   = 100_000
	oaiMaxCommentsRunes   = 10_000
	oaiMaxJournalRefRunes = 2000
	oaiMaxDOIBytes        = 256
	oaiMaxCategories      = 100
	oaiMaxCategoryBytes   = 64
	oaiMaxTokenBytes      = 4096
)

// ParseListRecords parses one ListRecords response body in format ("" means
// OAIFormatArXiv). It never expands entities: a body with a DOCTYPE is
// rejected, as is one over OAIMaxBodyBytes. Errors are as for ListRecords:
// nil with an empty Page for noRecordsMatch, an *OAIError for other OAI-PMH
// errors (matching ErrBadResumptionToken for that code), ErrMalformed for a
// body that is not a well-formed OAI-PMH ListRecords response, or whose
// records are in neither arXiv format (a record in the other arXiv format
// than format is parsed as such).
// Every returned Paper has a non-empty ArxivID; text fields are valid UTF-8,
// whitespace-collapsed and capped (see the package's caps).
func ParseListRecords(body []byte, format string) (*Page, error) {
	page, oaiErr, err := oaiParse(body, format)
	page, err = oaiOutcome(page, oaiErr, err)
	if err != nil {
		return nil, fmt.Errorf("parsing OAI-PMH ListRecords: %w", err)
	}
	return page, nil
}

// oaiOutcome maps oaiParse's results to ListRecords' contract.
func oaiOutcome(page *Page, oaiErr *OAIError, err error) (*Page, error) {
	switch {
	case err != nil:
		return nil, err
	case oaiErr != nil && oaiErr.Code == "noRecordsMatch":
		return &Page{Papers: []paper.Paper{}, CompleteListSize: 0, Cursor: 0, ResponseDate: page.ResponseDate}, nil
	case oaiErr != nil:
		return nil, oaiErr
	}
	return page, nil
}

// --- XML document model -----------------------------------------------------

type oaiEnvelope struct {
	ResponseDate string          `xml:"responseDate"`
	Errors       []oaiXMLError   `xml:"error"`
	ListRecords  *oaiListRecords `xml:"ListRecords"`
}

type oaiXMLError struct {
	Code    string `xml:"code,attr"`
	Message string `xml:",chardata"`
}

type oaiListRecords struct {
	Records []oaiRecord `xml:"record"`
	Token   *oaiToken   `xml:"resumptionToken"`
}

type oaiToken struct {
	Value            string `xml:",chardata"`
	Cursor           string `xml:"cursor,attr"`
	CompleteListSize string `xml:"completeListSize,attr"`
}

type oaiRecord struct {
	Header   oaiHeader    `xml:"header"`
	Metadata *oaiMetadata `xml:"metadata"`
}

type oaiHeader struct {
	Status     string `xml:"status,attr"`
	Identifier string `xml:"identifier"`
	Datestamp  string `xml:"datestamp"`
}

type oaiMetadata struct {
	ArXiv *oaiArXiv    `xml:"arXiv"`
	Raw   *oaiArXivRaw `xml:"arXivRaw"`
	Other []oaiAnyElem `xml:",any"`
}

type oaiAnyElem struct {
	XMLName xml.Name
}

type oaiArXiv struct {
	ID         string           `xml:"id"`
	Created    string           `xml:"created"`
	Updated    string           `xml:"updated"`
	Authors    []oaiArXivAuthor `xml:"authors>author"`
	Title      string           `xml:"title"`
	Categories string           `xml:"categories"`
	Comments   string           `xml:"comments"`
	JournalRef string           `xml:"journal-ref"`
	DOI        string           `xml:"doi"`
	Abstract   string           `xml:"abstract"`
}

type oaiArXivAuthor struct {
	Keyname   string `xml:"keyname"`
	Forenames string `xml:"forenames"`
	Suffix    string `xml:"suffix"`
}

type oaiArXivRaw struct {
	ID         string          `xml:"id"`
	Versions   []oaiRawVersion `xml:"version"`
	Title      string          `xml:"title"`
	Authors    string          `xml:"authors"`
	Categories string          `xml:"categories"`
	Comments   string          `xml:"comments"`
	JournalRef string          `xml:"journal-ref"`
	DOI        string          `xml:"doi"`
	Abstract   string          `xml:"abstract"`
}

type oaiRawVersion struct {
	Version string `xml:"version,attr"`
	Date    string `xml:"date"`
}

// --- parsing ----------------------------------------------------------------

func oaiMalformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// oaiParse parses a response body. It returns a page (only ResponseDate set
// when oaiErr is not nil), the repository's OAI-PMH error if any, or an
// error wrapping ErrMalformed (or an invalid-format error).
func oaiParse(body []byte, format string) (*Page, *OAIError, error) {
	switch format {
	case "":
		format = OAIFormatArXiv
	case OAIFormatArXiv, OAIFormatArXivRaw:
	default:
		return nil, nil, apperr.InvalidField("format", "must be %q or %q, got %q", OAIFormatArXiv, OAIFormatArXivRaw, format)
	}
	var env oaiEnvelope
	if err := oaiDecode(body, &env); err != nil {
		return nil, nil, err
	}

	page := &Page{Papers: []paper.Paper{}, CompleteListSize: -1, Cursor: -1}
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(env.ResponseDate)); err == nil {
		page.ResponseDate = t.UTC()
	}
	if len(env.Errors) > 0 {
		e := env.Errors[0]
		for _, x := range env.Errors {
			if x.Code == "badResumptionToken" {
				e = x
			}
		}
		return page, &OAIError{
			Code:    text.Collapse(e.Code, 100),
			Message: text.Collapse(e.Message, 1000),
		}, nil
	}
	if env.ListRecords == nil {
		return nil, nil, oaiMalformed("response has neither <ListRecords> nor <error>")
	}
	if tok := env.ListRecords.Token; tok != nil {
		page.ResumptionToken = strings.TrimSpace(tok.Value)
		if len(page.ResumptionToken) > oaiMaxTokenBytes || !utf8.ValidString(page.ResumptionToken) {
			return nil, nil, oaiMalformed("resumptionToken is longer than %d bytes or not UTF-8", oaiMaxTokenBytes)
		}
		page.Cursor = oaiAttrInt(tok.Cursor)
		page.CompleteListSize = oaiAttrInt(tok.CompleteListSize)
	}
	for i := range env.ListRecords.Records {
		rec := &env.ListRecords.Records[i]
		p, ok, err := oaiPaper(rec, format)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			page.Skipped++
			continue
		}
		page.Papers = append(page.Papers, p)
	}
	return page, nil, nil
}

// oaiRoot reads the prolog and returns the root element's start tag. It
// rejects any directive (DOCTYPE): OAI-PMH responses have none, and one that
// declares entities is an attack, even though encoding/xml never expands them.
func oaiRoot(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return xml.StartElement{}, oaiMalformed("no root element")
		}
		if err != nil {
			return xml.StartElement{}, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.Directive:
			return xml.StartElement{}, oaiMalformed("DOCTYPE or other <!…> directive is not allowed")
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return xml.StartElement{}, oaiMalformed("text before the root element")
			}
		case xml.EndElement:
			return xml.StartElement{}, oaiMalformed("end tag before the root element")
		}
	}
}

// oaiEpilogue checks that nothing but whitespace, comments and processing
// instructions follows the root element.
func oaiEpilogue(d *xml.Decoder) error {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return oaiMalformed("text after the root element")
			}
		case xml.Comment, xml.ProcInst:
		default:
			return oaiMalformed("content after the root element")
		}
	}
}

func oaiAttrInt(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// oaiPaper converts one record. ok is false for records to skip; err is set
// when the record's metadata is in neither arXiv format.
func oaiPaper(rec *oaiRecord, format string) (p paper.Paper, ok bool, err error) {
	metaID := ""
	if m := rec.Metadata; m != nil {
		if m.ArXiv != nil {
			metaID = m.ArXiv.ID
		} else if m.Raw != nil {
			metaID = m.Raw.ID
		}
	}
	id, ok := oaiArxivID(rec.Header.Identifier, metaID)
	if !ok {
		return paper.Paper{}, false, nil
	}
	p = paper.Paper{ArxivID: id, AnnouncedAt: oaiDate(rec.Header.Datestamp)}
	if strings.TrimSpace(rec.Header.Status) == "deleted" {
		p.Deleted = true
		return p, true, nil
	}
	m := rec.Metadata
	if m == nil {
		return paper.Paper{}, false, nil
	}
	p.AbsURL = "https://arxiv.org/abs/" + id
	p.PDFURL = "https://arxiv.org/pdf/" + id
	// Both arXiv formats describe a paper fully, so a record in the other one
	// is parsed rather than rejected; anything else (oai_dc, …) is not ours.
	switch {
	case m.Raw != nil && (format == OAIFormatArXivRaw || m.ArXiv == nil):
		oaiFillArXivRaw(&p, m.Raw)
	case m.ArXiv != nil:
		oaiFillArXiv(&p, m.ArXiv)
	default:
		got := "no"
		if len(m.Other) > 0 {
			got = "<" + oaiShort(m.Other[0].XMLName.Local) + ">"
		}
		return paper.Paper{}, false, oaiMalformed("record %s: expected %s metadata, got %s", id, format, got)
	}
	return p, true, nil
}

// oaiArxivID takes the id from the header identifier "oai:arXiv.org:<id>",
// else from the metadata's <id>.
func oaiArxivID(identifier, metaID string) (string, bool) {
	s := strings.TrimSpace(identifier)
	const prefix = "oai:arxiv.org:"
	if len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return upstream.CleanArxivID(s[len(prefix):])
	}
	return upstream.CleanArxivID(metaID)
}

// oaiDate parses a YYYY-MM-DD (or full UTC) datestamp to UTC; zero if bad.
func oaiDate(s string) time.Time {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
}

// oaiRawDateLayouts are the forms of arXivRaw's <date> (RFC 1123, with one-
// or two-digit days).
var oaiRawDateLayouts = [...]string{
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
}

func oaiRawDate(s string) time.Time {
	s = strings.Join(strings.Fields(s), " ")
	for _, layout := range oaiRawDateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

func oaiFillArXiv(p *paper.Paper, m *oaiArXiv) {
	p.Title = text.Collapse(m.Title, oaiMaxTitleRunes)
	p.Abstract = text.Collapse(m.Abstract, oaiMaxAbstractRunes)
	p.Comments = text.Collapse(m.Comments, oaiMaxCommentsRunes)
	p.JournalRef = text.Collapse(m.JournalRef, oaiMaxJournalRefRunes)
	p.DOI = oaiFirstDOI(m.DOI)
	p.SubmittedAt = oaiDate(m.Created)
	p.UpdatedAt = oaiDate(m.Updated)
	p.Categories, p.PrimaryCategory = oaiCategories(m.Categories)
	for _, a := range m.Authors {
		if len(p.Authors) == upstream.MaxAuthors {
			break
		}
		name := text.Collapse(a.Forenames+" "+a.Keyname+" "+a.Suffix, upstream.MaxNameRunes)
		if name != "" {
			p.Authors = append(p.Authors, paper.Author{Name: name})
		}
	}
}

func oaiFillArXivRaw(p *paper.Paper, m *oaiArXivRaw) {
	p.Title = text.Collapse(m.Title, oaiMaxTitleRunes)
	p.Abstract = text.Collapse(m.Abstract, oaiMaxAbstractRunes)
	p.Comments = text.Collapse(m.Comments, oaiMaxCommentsRunes)
	p.JournalRef = text.Collapse(m.JournalRef, oaiMaxJournalRefRunes)
	p.DOI = oaiFirstDOI(m.DOI)
	p.Categories, p.PrimaryCategory = oaiCategories(m.Categories)
	lowest := 0
	for _, v := range m.Versions {
		n, err := strconv.Atoi(strings.TrimLeft(strings.TrimSpace(v.Version), "vV"))
		if err != nil || n <= 0 || n > 100_000 {
			continue
		}
		date := oaiRawDate(v.Date)
		if n > p.Version {
			p.Version = n
			p.UpdatedAt = date
		}
		if lowest == 0 || n < lowest {
			lowest = n
			p.SubmittedAt = date
		}
	}
	for _, name := range SplitRawAuthors(m.Authors, upstream.MaxAuthors) {
		p.Authors = append(p.Authors, paper.Author{Name: name})
	}
}

func oaiFirstDOI(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 || len(f[0]) > oaiMaxDOIBytes || !utf8.ValidString(f[0]) {
		return ""
	}
	return f[0]
}

// oaiCategories splits the space-separated list, dropping duplicates and
// implausible entries; the first is the primary.
func oaiCategories(s string) ([]string, string) {
	var cats []string
	for _, c := range strings.Fields(s) {
		if len(cats) == oaiMaxCategories {
			break
		}
		if len(c) > oaiMaxCategoryBytes || !oaiValidCategory(c) || slices.Contains(cats, c) {
			continue
		}
		cats = append(cats, c)
	}
	if len(cats) == 0 {
		return nil, ""
	}
	return cats, cats[0]
}

func oaiValidCategory(c string) bool {
	for i := 0; i < len(c); i++ {
		if b := c[i]; !upstream.IsAlnum(b) && b != '.' && b != '-' && b != '_' {
			return false
		}
	}
	return true
}

// oaiNameSuffixes are pieces that follow a name after a comma ("Smith, Jr.")
// rather than being names themselves.
var oaiNameSuffixes = map[string]bool{"Jr": true, "Jr.": true, "Sr": true, "Sr.": true, "II": true, "III": true, "IV": true}

// SplitRawAuthors splits a free-text author list as arXivRaw and arXiv's
// listings write it ("A. One (MIT), B. Two and C. Three ((1) X, (2) Y)")
// into at most max names: on commas, semicolons, the word "and" and "&"
// outside parentheses, dropping parenthesised affiliations, "et al." and
// empty pieces, and re-attaching suffixes such as "Jr.". The names are
// as written (package relevance's NameKey compares spellings).
func SplitRawAuthors(s string, max int) []string {
	s = text.Collapse(s, -1)
	var pieces []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',', ';':
			if depth == 0 {
				pieces = append(pieces, s[start:i])
				start = i + 1
			}
		case ' ':
			if depth > 0 {
				break
			}
			for _, sep := range [...]string{" and ", " & "} {
				if strings.HasPrefix(s[i:], sep) {
					pieces = append(pieces, s[start:i])
					start = i + len(sep)
					i += len(sep) - 1
					break
				}
			}
		}
		if len(pieces) > 2*max {
			break
		}
	}
	if start <= len(s) {
		pieces = append(pieces, s[start:])
	}
	var names []string
	for _, piece := range pieces {
		name := text.Collapse(text.StripParens(piece), upstream.MaxNameRunes)
		name = strings.TrimPrefix(name, "and ")
		switch {
		case name == "", name == "et al", name == "et al.", name == "others":
			continue
		case oaiNameSuffixes[name] && len(names) > 0:
			names[len(names)-1] += " " + name
			continue
		}
		if len(names) == max {
			break
		}
		names = append(names, name)
	}
	return names
}

func oaiShort(s string) string {
	return text.Collapse(s, 40)
}

// oaiDecode decodes an OAI-PMH response into env (an envelope struct): the
// body cap, strict XML, an <OAI-PMH> root and nothing but whitespace after
// it; any other shape is ErrMalformed.
func oaiDecode(body []byte, env any) error {
	if len(body) > OAIMaxBodyBytes {
		return oaiMalformed("body of %d bytes exceeds the %d-byte cap", len(body), OAIMaxBodyBytes)
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	root, err := oaiRoot(d)
	if err != nil {
		return err
	}
	if root.Name.Local != "OAI-PMH" {
		return oaiMalformed("root element is <%s>, not <OAI-PMH>", oaiShort(root.Name.Local))
	}
	if err := d.DecodeElement(env, &root); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return oaiEpilogue(d)
}
