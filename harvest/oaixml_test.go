package harvest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"followfeed/apperr"
	"followfeed/internal/upstream"
	"followfeed/paper"
)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func mustParseList(t *testing.T, file, format string) *Page {
	t.Helper()
	page, err := ParseListRecords(readTestdata(t, file), format)
	if err != nil {
		t.Fatalf("ParseListRecords(%s): %v", file, err)
	}
	return page
}

func TestParseListRecordsArXivCompleteList(t *testing.T) {
	page := mustParseList(t, "oai/listrecords-arXiv-complete-list.xml", OAIFormatArXiv)
	if page.ResumptionToken != "" || page.CompleteListSize != -1 || page.Cursor != -1 || page.Skipped != 0 {
		t.Errorf("page token/size/cursor/skipped = %q/%d/%d/%d, want \"\"/-1/-1/0",
			page.ResumptionToken, page.CompleteListSize, page.Cursor, page.Skipped)
	}
	if want := time.Date(2018, 6, 21, 14, 31, 4, 0, time.UTC); !page.ResponseDate.Equal(want) {
		t.Errorf("ResponseDate = %v, want %v", page.ResponseDate, want)
	}
	if len(page.Papers) != 2 {
		t.Fatalf("got %d papers, want 2", len(page.Papers))
	}

	p := page.Papers[0]
	if !strings.HasPrefix(p.Abstract, "At the heart of the Conway-Kochen Free Will theorem and Kochen and Specker's argument") ||
		!strings.HasSuffix(p.Abstract, "embeddability to improve the lower bound to 22.") ||
		strings.ContainsAny(p.Abstract, "\n\t") || strings.Contains(p.Abstract, "  ") {
		t.Errorf("abstract not collapsed and trimmed: %q", p.Abstract)
	}
	p.Abstract = ""
	want := paper.Paper{
		ArxivID:         "1412.8544",
		Title:           "A Kochen-Specker system has at least 22 vectors (extended abstract)",
		Authors:         []paper.Author{{Name: "Sander Uijlen"}, {Name: "Bas Westerbaan"}},
		PrimaryCategory: "cs.DM",
		Categories:      []string{"cs.DM"},
		DOI:             "10.4204/EPTCS.172.11",
		JournalRef:      "EPTCS 172, 2014, pp. 154-164",
		Comments:        "In Proceedings QPL 2014, arXiv:1412.8102",
		SubmittedAt:     date(2014, 12, 29),
		AnnouncedAt:     date(2015, 1, 3),
		AbsURL:          "https://arxiv.org/abs/1412.8544",
		PDFURL:          "https://arxiv.org/pdf/1412.8544",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("paper 0:\n got %+v\nwant %+v", p, want)
	}

	p = page.Papers[1]
	if !strings.Contains(p.Abstract, `the "strength" of the bonds`) {
		t.Errorf("entities not decoded in abstract: %q", p.Abstract)
	}
	p.Abstract = ""
	want = paper.Paper{
		ArxivID:         "hep-th/9504118",
		Title:           "Discrete Mathematics and Physics on the Planck-Scale",
		Authors:         []paper.Author{{Name: "M. Requardt"}},
		PrimaryCategory: "hep-th",
		Categories:      []string{"hep-th"},
		Comments:        "21 pages, Latex",
		SubmittedAt:     date(1995, 4, 24),
		AnnouncedAt:     date(2015, 1, 3),
		AbsURL:          "https://arxiv.org/abs/hep-th/9504118",
		PDFURL:          "https://arxiv.org/pdf/hep-th/9504118",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("paper 1:\n got %+v\nwant %+v", p, want)
	}
}

func TestParseListRecordsArXivRaw(t *testing.T) {
	page := mustParseList(t, "oai/listrecords-arXivRaw-with-resumptiontoken.xml", OAIFormatArXivRaw)
	if page.ResumptionToken != "726959|1001" || page.CompleteListSize != 58011 || page.Cursor != 0 {
		t.Errorf("token/size/cursor = %q/%d/%d", page.ResumptionToken, page.CompleteListSize, page.Cursor)
	}
	var ids []string
	for _, p := range page.Papers {
		ids = append(ids, p.ArxivID)
	}
	if want := []string{"0704.0471", "0704.0716", "0704.0874", "0704.1109", "0704.1114", "0704.1586"}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	byID := map[string]paper.Paper{}
	for _, p := range page.Papers {
		byID[p.ArxivID] = p
	}

	p := byID["0704.0716"]
	if p.Version != 4 {
		t.Errorf("0704.0716 Version = %d, want 4", p.Version)
	}
	if want := time.Date(2007, 4, 5, 12, 45, 3, 0, time.UTC); !p.SubmittedAt.Equal(want) || p.SubmittedAt.Location() != time.UTC {
		t.Errorf("0704.0716 SubmittedAt = %v, want %v", p.SubmittedAt, want)
	}
	if want := time.Date(2008, 11, 14, 9, 7, 25, 0, time.UTC); !p.UpdatedAt.Equal(want) {
		t.Errorf("0704.0716 UpdatedAt = %v, want %v", p.UpdatedAt, want)
	}
	if p.PrimaryCategory != "math-ph" || !slices.Equal(p.Categories, []string{"math-ph", "math.MP"}) {
		t.Errorf("0704.0716 categories = %q %v", p.PrimaryCategory, p.Categories)
	}
	if p.AnnouncedAt != date(2014, 12, 22) || p.DOI != "" || p.Authors[0].Name != "Christoph Richard" {
		t.Errorf("0704.0716 = %+v", p)
	}
	if want := "Polygons, polyominoes and polycubes, 247-299, Lecture Notes in Phys., 775, Springer, Dordrecht, 2009"; p.JournalRef != want {
		t.Errorf("JournalRef = %q, want %q", p.JournalRef, want)
	}

	p = byID["0704.0471"]
	if got, want := authorNames(p.Authors), []string{"D.V. Shetty", "S.J. Yennello", "G.A. Souliotis"}; !slices.Equal(got, want) {
		t.Errorf("0704.0471 authors = %q, want %q", got, want)
	}
	if p.DOI != "10.1103/PhysRevC.76.024606" {
		t.Errorf("0704.0471 DOI = %q (want the first of two)", p.DOI)
	}
	if want := "Density dependence of the symmetry energy and the nuclear equation of state: A Dynamical and Statistical model perspective"; p.Title != want {
		t.Errorf("title = %q", p.Title)
	}
	if p.Version != 1 || !p.SubmittedAt.Equal(p.UpdatedAt) || p.SubmittedAt.IsZero() {
		t.Errorf("single-version paper: Version %d, Submitted %v, Updated %v", p.Version, p.SubmittedAt, p.UpdatedAt)
	}
	if got, want := authorNames(byID["0704.1109"].Authors), []string{"Valeria M. Rosa", "Patricio S. letelier"}; !slices.Equal(got, want) {
		t.Errorf("0704.1109 authors = %q, want %q", got, want)
	}
	if byID["0704.0874"].Version != 3 || byID["0704.1586"].DOI != "10.1103/PhysRevC.76.014611" {
		t.Errorf("0704.0874 version %d, 0704.1586 DOI %q", byID["0704.0874"].Version, byID["0704.1586"].DOI)
	}
}

func authorNames(as []paper.Author) []string {
	var names []string
	for _, a := range as {
		names = append(names, a.Name)
	}
	return names
}

// The deleted-record file is synthetic (see its comment): no recording of a
// deleted record or of an empty final resumptionToken was found.
func TestParseListRecordsDeletedAndEmptyToken(t *testing.T) {
	page := mustParseList(t, "oai/synthetic-deleted-record.xml", OAIFormatArXiv)
	if page.ResumptionToken != "" || page.Cursor != 2001 || page.CompleteListSize != 2003 {
		t.Errorf("token/cursor/size = %q/%d/%d, want \"\"/2001/2003", page.ResumptionToken, page.Cursor, page.CompleteListSize)
	}
	if len(page.Papers) != 2 {
		t.Fatalf("got %d papers, want 2", len(page.Papers))
	}
	if want := (paper.Paper{ArxivID: "2403.01234", Deleted: true, AnnouncedAt: date(2024, 3, 4)}); !reflect.DeepEqual(page.Papers[0], want) {
		t.Errorf("deleted record = %+v, want %+v", page.Papers[0], want)
	}
	want := paper.Paper{
		ArxivID:         "2403.05678",
		Title:           "A synthetic record",
		Abstract:        "Line one. Line two.",
		Authors:         []paper.Author{{Name: "Jane Doe Jr"}, {Name: "ATLAS Collaboration"}},
		PrimaryCategory: "cs.LG",
		Categories:      []string{"cs.LG", "stat.ML"},
		DOI:             "10.1000/one",
		SubmittedAt:     date(2024, 3, 1),
		UpdatedAt:       date(2024, 3, 3),
		AnnouncedAt:     date(2024, 3, 4),
		AbsURL:          "https://arxiv.org/abs/2403.05678",
		PDFURL:          "https://arxiv.org/pdf/2403.05678",
	}
	if !reflect.DeepEqual(page.Papers[1], want) {
		t.Errorf("record:\n got %+v\nwant %+v", page.Papers[1], want)
	}
}

func TestParseListRecordsOAIErrors(t *testing.T) {
	page, err := ParseListRecords(readTestdata(t, "oai/error-noRecordsMatch.xml"), OAIFormatArXivRaw)
	if err != nil || page == nil || len(page.Papers) != 0 || page.ResumptionToken != "" || page.CompleteListSize != 0 {
		t.Errorf("noRecordsMatch: page %+v, err %v; want empty page, nil", page, err)
	}

	_, err = ParseListRecords(readTestdata(t, "oai/error-badResumptionToken.xml"), "")
	if !errors.Is(err, ErrBadResumptionToken) {
		t.Errorf("badResumptionToken: err = %v, want ErrBadResumptionToken", err)
	}

	_, err = ParseListRecords(readTestdata(t, "oai/error-idDoesNotExist.xml"), "")
	var oe *OAIError
	if !errors.As(err, &oe) || oe.Code != "idDoesNotExist" || !strings.Contains(oe.Message, "0813.2274") {
		t.Errorf("idDoesNotExist: err = %v, want *OAIError idDoesNotExist", err)
	}
	if errors.Is(err, ErrBadResumptionToken) || errors.Is(err, ErrMalformed) {
		t.Errorf("idDoesNotExist matches the wrong sentinel: %v", err)
	}
}

func TestParseListRecordsMalformed(t *testing.T) {
	complete := readTestdata(t, "oai/listrecords-arXiv-complete-list.xml")
	cases := map[string]struct {
		body   []byte
		format string
	}{
		"truncated in half":    {complete[:len(complete)/2], OAIFormatArXiv},
		"truncated at the end": {complete[:len(complete)-3], OAIFormatArXiv},
		"empty":                {nil, OAIFormatArXiv},
		"html":                 {[]byte("<html><body>\n<h1>Retry after 10 seconds</h1>\n</body></html>\n"), OAIFormatArXiv},
		"not xml":              {[]byte("Service Unavailable"), OAIFormatArXiv},
		"trailing element":     {append(slices.Clone(complete), "<x/>"...), OAIFormatArXiv},
		"oai_dc page":          {readTestdata(t, "oai/listrecords-oai_dc-set-cs-with-resumptiontoken.xml"), OAIFormatArXiv},
		"no ListRecords":       {[]byte(`<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2020-01-01T00:00:00Z</responseDate></OAI-PMH>`), ""},
		"undefined entity":     {bytes.Replace(complete, []byte("<title>A Kochen"), []byte("<title>&lol; A Kochen"), 1), OAIFormatArXiv},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			page, err := ParseListRecords(tc.body, tc.format)
			if !errors.Is(err, ErrMalformed) || page != nil {
				t.Errorf("got page %v, err %v; want ErrMalformed", page, err)
			}
		})
	}
	// Every cut of a real page is malformed, never a panic or a partial page.
	raw := readTestdata(t, "oai/listrecords-arXivRaw-with-resumptiontoken.xml")
	for cut := 0; cut < len(raw)-len("</OAI-PMH>\n"); cut += 97 {
		if _, err := ParseListRecords(raw[:cut], OAIFormatArXivRaw); !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: err = %v, want ErrMalformed", cut, err)
		}
	}
	if _, err := ParseListRecords(complete, "oai_dc"); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("unknown format: err = %v, want apperr.Invalid", err)
	}
}

const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE OAI-PMH [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2020-01-01T00:00:00Z</responseDate>
<ListRecords><record><header><identifier>oai:arXiv.org:2001.00001</identifier><datestamp>2020-01-01</datestamp></header>
<metadata><arXiv xmlns="http://arxiv.org/OAI/arXiv/"><id>2001.00001</id><title>&lol9;</title></arXiv></metadata></record></ListRecords></OAI-PMH>`

const externalEntity = `<?xml version="1.0"?>
<!DOCTYPE OAI-PMH [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2020-01-01T00:00:00Z</responseDate>
<ListRecords><record><header><identifier>oai:arXiv.org:2001.00001</identifier><datestamp>2020-01-01</datestamp></header>
<metadata><arXiv xmlns="http://arxiv.org/OAI/arXiv/"><id>2001.00001</id><title>&xxe;</title></arXiv></metadata></record></ListRecords></OAI-PMH>`

func TestParseListRecordsRejectsEntityTricks(t *testing.T) {
	for name, body := range map[string]string{
		"billion laughs":  billionLaughs,
		"external entity": externalEntity,
		"DOCTYPE without entities": strings.Replace(billionLaughs, billionLaughs[strings.Index(billionLaughs, "<!DOCTYPE"):strings.Index(billionLaughs, "]>")+2],
			`<!DOCTYPE OAI-PMH SYSTEM "http://example.invalid/oai.dtd">`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			page, err := ParseListRecords([]byte(body), OAIFormatArXiv)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrMalformed) || page != nil {
				t.Errorf("got page %+v, err %v; want ErrMalformed", page, err)
			}
			if elapsed > time.Second {
				t.Errorf("took %v", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("allocated %d bytes", alloc)
			}
		})
	}
}

func TestParseListRecordsSizeCaps(t *testing.T) {
	t.Log("hostile: malformed")
	if _, err := ParseListRecords(make([]byte, OAIMaxBodyBytes+1), OAIFormatArXiv); !errors.Is(err, ErrMalformed) {
		t.Errorf("oversized body: err = %v, want ErrMalformed", err)
	}

	var authors strings.Builder
	for i := range upstream.MaxAuthors + 10 {
		fmt.Fprintf(&authors, "<author><keyname>K%d</keyname><forenames>F</forenames></author>", i)
	}
	body := `<OAI-PMH><ListRecords><record><header><identifier>oai:arXiv.org:2001.00001</identifier></header>` +
		`<metadata><arXiv><title>` + strings.Repeat("é", 3000) + `</title><authors>` + authors.String() + `</authors>` +
		`<abstract>` + strings.Repeat("ab ", 40_000) + `</abstract><doi>10.1/` + strings.Repeat("x", 300) + `</doi>` +
		`<categories>` + strings.Repeat("cs.LG ", 3) + strings.Repeat("y", 100) + `</categories></arXiv></metadata></record></ListRecords></OAI-PMH>`
	page, err := ParseListRecords([]byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	p := page.Papers[0]
	if n := utf8.RuneCountInString(p.Title); n != oaiMaxTitleRunes {
		t.Errorf("title has %d runes, want %d", n, oaiMaxTitleRunes)
	}
	if n := utf8.RuneCountInString(p.Abstract); n > oaiMaxAbstractRunes {
		t.Errorf("abstract has %d runes", n)
	}
	if len(p.Authors) != upstream.MaxAuthors || p.Authors[0].Name != "F K0" {
		t.Errorf("%d authors, first %q", len(p.Authors), p.Authors[0].Name)
	}
	if p.DOI != "" || !slices.Equal(p.Categories, []string{"cs.LG"}) {
		t.Errorf("DOI %q, categories %v: over-long values must be dropped", p.DOI, p.Categories)
	}
}

func TestParseListRecordsSkipsUnidentifiableRecords(t *testing.T) {
	body := `<OAI-PMH><ListRecords>
<record><header><identifier></identifier></header><metadata><arXiv><title>no id</title></arXiv></metadata></record>
<record><header><identifier>oai:arXiv.org:bad id!</identifier></header><metadata><arXiv><title>bad id</title></arXiv></metadata></record>
<record><header><identifier>oai:arXiv.org:2001.00002</identifier></header></record>
<record><header><identifier>something-else</identifier></header><metadata><arXiv><id>2001.00003v2</id><title>metadata id</title></arXiv></metadata></record>
<record><header status="deleted"><identifier>oai:arXiv.org:2001.00004</identifier></header></record>
</ListRecords></OAI-PMH>`
	page, err := ParseListRecords([]byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	if page.Skipped != 3 || len(page.Papers) != 2 || page.Papers[0].ArxivID != "2001.00003" || !page.Papers[1].Deleted {
		t.Errorf("skipped %d, papers %+v", page.Skipped, page.Papers)
	}
}

func TestSplitRawAuthors(t *testing.T) {
	cases := map[string][]string{
		"D.V. Shetty, S.J. Yennello, and G.A. Souliotis": {"D.V. Shetty", "S.J. Yennello", "G.A. Souliotis"},
		"Valeria M. Rosa and Patricio S. letelier":       {"Valeria M. Rosa", "Patricio S. letelier"},
		"T. S. Barman": {"T. S. Barman"},
		"A. Smith (MIT, USA), B. Jones (1 and 2) ((1) X, (2) Y)": {"A. Smith", "B. Jones"},
		"John Smith, Jr., Jane\n  Roe; C. Anderson and others":   {"John Smith Jr.", "Jane Roe", "C. Anderson"},
		"A. Alexander, et al.":                                   {"A. Alexander"},
		"C.G. Tinney & I.N. Reid (AAO & JPL)":                    {"C.G. Tinney", "I.N. Reid"},
		"X and and Y":                                            {"X", "Y"},
		"":                                                       nil,
		" , and ,":                                               nil,
		"ATLAS Collaboration: G. Aad (CPPM), B. Abbott ((2) Oklahoma)": {"ATLAS Collaboration: G. Aad", "B. Abbott"},
	}
	for in, want := range cases {
		if got := SplitRawAuthors(in, 100); !slices.Equal(got, want) {
			t.Errorf("SplitRawAuthors(%q) = %q, want %q", in, got, want)
		}
	}
	if got := SplitRawAuthors(strings.Repeat("A. B, ", 20), 5); len(got) != 5 {
		t.Errorf("cap: got %d names", len(got))
	}
}

// FuzzParseListRecords checks that no input makes the parser panic, and that
// a successful parse only yields identified, capped, valid-UTF-8 papers.
// Seeds: testdata/fuzz/FuzzParseListRecords.
func FuzzParseListRecords(f *testing.F) {
	f.Log("hostile: decoders")
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, format := range []string{OAIFormatArXiv, OAIFormatArXivRaw} {
			page, err := ParseListRecords(body, format)
			if err != nil {
				if page != nil {
					t.Fatalf("page and error both returned")
				}
				continue
			}
			if page == nil {
				t.Fatal("nil page with nil error")
			}
			for _, p := range page.Papers {
				if p.ArxivID == "" {
					t.Fatalf("paper without ArxivID: %+v", p)
				}
				if utf8.RuneCountInString(p.Title) > oaiMaxTitleRunes || utf8.RuneCountInString(p.Abstract) > oaiMaxAbstractRunes ||
					len(p.Authors) > upstream.MaxAuthors || len(p.Categories) > oaiMaxCategories {
					t.Fatalf("caps exceeded: %d title runes, %d authors", utf8.RuneCountInString(p.Title), len(p.Authors))
				}
				for _, s := range append([]string{p.ArxivID, p.Title, p.Abstract, p.Comments, p.JournalRef, p.DOI}, authorNames(p.Authors)...) {
					if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
						t.Fatalf("invalid text %q", s)
					}
				}
				if p.Deleted && (p.Title != "" || len(p.Authors) > 0) {
					t.Fatalf("deleted paper carries metadata: %+v", p)
				}
			}
		}
	})
}
