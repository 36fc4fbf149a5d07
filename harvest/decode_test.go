package harvest_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/harvest"
)

const hostPaper = `{"arxiv_id": "2202.02326v2", "title": "Towards Training Reproducible Deep Learning Models",
 "abstract": "Reproducibility is an increasing concern.",
 "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391", "orcid:0000-0002-1825-0097"]}, {"name": "Boyuan Chen"}],
 "categories": ["cs.LG", "cs.AI", "cs.SE"], "primary_category": "cs.LG", "institutions": ["ror:03dbr7087"],
 "doi": "10.48550/arXiv.2202.02326", "published": "2022-02-04T00:00:00Z", "updated": "2022-02-07T00:00:00Z",
 "abs_url": "https://arxiv.org/abs/2202.02326", "pdf_url": "https://arxiv.org/pdf/2202.02326",
 "slug": "2202.02326-towards", "cited_by_count": 47}`

func TestDecodePushShapes(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"array":          "[" + hostPaper + "]",
		"ndjson":         strings.ReplaceAll(hostPaper, "\n", "") + "\n" + strings.ReplaceAll(strings.ReplaceAll(hostPaper, "\n", ""), "2202.02326", "2202.02327") + "\n",
		"host string":    `[{"arxiv_id":"2202.02326","title":"T","primary_category":"cs.LG","authors":"Boyuan Chen, Mingzhi Wen, Yong Shi, and Dayi Lin","published":"2022-02-04T00:00:00+00:00"}]`,
		"names as array": `[{"arxiv_id":"astro-ph/9901001","title":"T","primary_category":"astro-ph","authors":["A. B", "C. D"],"published":"1999-01-04"}]`,
	}
	for name, body := range cases {
		ps, err := harvest.DecodePush(strings.NewReader(body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(ps) == 0 || ps[0].Title == "" {
			t.Errorf("%s: %+v", name, ps)
		}
	}
	ps, _ := harvest.DecodePush(strings.NewReader("[" + hostPaper + "]"))
	got := ps[0]
	if got.ArxivID != "2202.02326" || got.Version != 2 || len(got.Authors) != 2 || got.Authors[0].IDs[1] != "orcid:0000-0002-1825-0097" ||
		got.SubmittedAt.Day() != 4 || got.UpdatedAt.Day() != 7 || got.Institutions[0] != "ror:03dbr7087" {
		t.Errorf("decoded: %+v", got)
	}
	ps, _ = harvest.DecodePush(strings.NewReader(cases["host string"]))
	if len(ps[0].Authors) != 4 || ps[0].Authors[3].Name != "Dayi Lin" {
		t.Errorf("host author string: %+v", ps[0].Authors)
	}
}

// malformed returns 200 malformed push bodies: broken JSON, wrong types,
// invalid ids and dates, truncations, oversized fields, hostile shapes.
func malformed() []string {
	good := strings.ReplaceAll(hostPaper, "\n", "")
	var out []string
	// Truncations of a valid array body.
	arr := "[" + good + "," + strings.ReplaceAll(good, "2202.02326", "2202.02327") + "]"
	for i := 1; i < len(arr) && len(out) < 90; i += len(arr) / 90 {
		out = append(out, arr[:i])
	}
	replace := func(old, new string) string { return "[" + strings.Replace(good, old, new, 1) + "]" }
	fieldBreaks := []string{
		replace(`"2202.02326v2"`, `"2202.2326"`), replace(`"2202.02326v2"`, `"v2"`), replace(`"2202.02326v2"`, `""`),
		replace(`"2202.02326v2"`, `12345`), replace(`"2202.02326v2"`, `null`), replace(`"2202.02326v2"`, `"2202.02326v0"`),
		replace(`"Towards Training Reproducible Deep Learning Models"`, `""`), replace(`"Towards Training Reproducible Deep Learning Models"`, `["t"]`),
		replace(`"Towards Training Reproducible Deep Learning Models"`, `"`+strings.Repeat("x", 2001)+`"`),
		replace(`"openalex:A5023888391"`, `"openalex:B1"`), replace(`"orcid:0000-0002-1825-0097"`, `"orcid:0000-0002-1825-0098"`),
		replace(`"ror:03dbr7087"`, `"ror:03dbr7088"`), replace(`"ror:03dbr7087"`, `42`),
		replace(`"cs.LG", "cs.AI", "cs.SE"`, `"cs LG"`), replace(`"primary_category": "cs.LG"`, `"primary_category": "not a category!"`),
		replace(`"primary_category": "cs.LG"`, `"primary_category": 7`), replace(`"2022-02-04T00:00:00Z"`, `"yesterday"`),
		replace(`"2022-02-04T00:00:00Z"`, `"2022-13-45"`), replace(`"2022-02-07T00:00:00Z"`, `1644192000`),
		replace(`"https://arxiv.org/abs/2202.02326"`, `"javascript:alert(1)"`), replace(`"https://arxiv.org/pdf/2202.02326"`, `"ftp://x"`),
		replace(`[{"name": "Mingzhi Wen"`, `[{"name": ["Mingzhi Wen"]`), replace(`{"name": "Boyuan Chen"}`, `{"ids": []}`),
		replace(`{"name": "Boyuan Chen"}`, `7`), replace(`"authors": [`, `"authors": {"a": [`) + "}",
		replace(`"categories": [`, `"categories": "cs.LG", "x": [`),
	}
	out = append(out, fieldBreaks...)
	hostile := []string{
		"", " ", "null", "true", "42", `"string"`, "{}", "[]x", "[1,2,3]", "[[]]", `[null]`, `[{}]`, `{"a":1}`,
		strings.Repeat("[", 10000), "[" + strings.Repeat(`{"arxiv_id":"2202.02326",`, 50) + "]",
		"\x00\x01\x02", "\xff\xfe[]", `[{"arxiv_id":"2202.02326","title":"\ud800","primary_category":"cs.LG"}]` + "garbage",
		"{" + strings.Repeat(`"k":1,`, 1000) + "}\n{", `[{"arxiv_id":"2202.02326","title":"t","primary_category":"cs.LG"}]]`,
		`<?xml version="1.0"?><papers/>`, "arxiv_id=2202.02326&title=t",
	}
	out = append(out, hostile...)
	for i := 0; len(out) < 200; i++ {
		// NDJSON with one bad line among good ones.
		lines := []string{good, strings.ReplaceAll(good, "2202.02326", fmt.Sprintf("2202.1%04d", i))}
		lines = append(lines, lines[1][:len(lines[1])/(i%5+2)])
		out = append(out, strings.Join(lines, "\n"))
	}
	return out[:200]
}

// TestTwoHundredMalformedInputsNeverPanicOrWrite feeds 200 malformed bodies
// through the decoder and, when one decodes, the ingest: none may panic,
// each must be refused with a client error, and the database stays empty.
func TestTwoHundredMalformedInputsNeverPanicOrWrite(t *testing.T) {
	t.Log("hostile: malformed")
	t.Parallel()
	in, db := newStore(t)
	bodies := malformed()
	if len(bodies) != 200 {
		t.Fatalf("%d inputs", len(bodies))
	}
	for i, body := range bodies {
		papers, err := harvest.DecodePush(strings.NewReader(body))
		if err == nil {
			_, err = in.Ingest(context.Background(), papers, catalog.SourcePush)
		}
		code := apperr.CodeOf(err)
		if code != apperr.BadRequest && code != apperr.Invalid && code != apperr.TooLarge {
			t.Errorf("input %d (%.60q): want a client error, got %v", i, body, err)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM papers`) + count(t, db, `SELECT count(*) FROM paper_keys`); n != 0 {
		t.Errorf("%d rows written from malformed input", n)
	}
}

func TestDecodePushLimits(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	big := bytes.Repeat([]byte(" "), harvest.MaxPushBytes+10)
	big[0] = '['
	if _, err := harvest.DecodePush(bytes.NewReader(big)); apperr.CodeOf(err) != apperr.TooLarge {
		t.Errorf("over 20 MiB: %v", err)
	}
	var sb strings.Builder
	for i := range catalog.MaxBatch + 1 {
		fmt.Fprintf(&sb, `{"arxiv_id":"2301.%05d","title":"t","primary_category":"cs.LG"}`+"\n", i)
	}
	if _, err := harvest.DecodePush(strings.NewReader(sb.String())); apperr.CodeOf(err) != apperr.TooLarge {
		t.Errorf("over 10,000 papers: %v", err)
	}
}

func FuzzDecodePush(f *testing.F) {
	f.Log("hostile: decoders")
	f.Add([]byte("[" + hostPaper + "]"))
	f.Add([]byte(strings.ReplaceAll(hostPaper, "\n", "") + "\n"))
	for _, m := range malformed()[90:130] {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		papers, err := harvest.DecodePush(bytes.NewReader(body))
		if err != nil {
			if _, ok := apperr.As(err); !ok {
				t.Fatalf("non-domain error %v", err)
			}
			return
		}
		for _, p := range papers {
			if p.ArxivID == "" || p.Title == "" || p.PrimaryCategory == "" {
				t.Fatalf("decoded an incomplete paper: %+v", p)
			}
		}
	})
}

// TestPushedIntegersAreValidatedByField: the push's integer field
// (version) out of range, fractional, not a number or too large for any
// integer is an Invalid naming the field and the paper, never a database
// error.
func TestPushedIntegersAreValidatedByField(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	for _, v := range []string{"2147483648", "10000", "-1", "1.5", "1e100", `"2"`, "99999999999999999999"} {
		body := `[{"arxiv_id": "2202.02326", "title": "t", "primary_category": "cs.LG"}, {"arxiv_id": "2202.02327", "version": ` + v + `, "title": "t", "primary_category": "cs.LG"}]`
		_, err := harvest.DecodePush(strings.NewReader(body))
		ae, ok := apperr.As(err)
		if !ok || ae.Code != apperr.Invalid || len(ae.Details) != 1 || ae.Details[0].Index != 1 || ae.Details[0].Field != "version" {
			t.Errorf("version %s: %v %+v", v, err, ae)
			continue
		}
		if r := ae.Details[0].Reason; !strings.Contains(r, "integer") && !strings.Contains(r, "between 1 and 9999") {
			t.Errorf("version %s: reason %q does not say what a version is", v, r)
		}
	}
}

// TestPushedDatesArePlausible: a pushed paper's dates run from 1991,
// arXiv's first year, to two days ahead; 3026 or 0001 is an Invalid naming
// the field and the paper, not a paper first in every feed for a thousand
// years or one without a date.
func TestPushedDatesArePlausible(t *testing.T) {
	t.Parallel()
	soon := time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		field, value string
		ok           bool
	}{
		{"published", "1991-08-14", true},
		{"published", soon, true},
		{"updated", "2022-02-07T00:00:00", true},
		{"published", "3026-01-01", false},
		{"published", "0001-01-01", false},
		{"published", "1990-12-31T23:59:59Z", false},
		{"updated", time.Now().UTC().AddDate(0, 0, 5).Format("2006-01-02"), false},
	} {
		body := `[{"arxiv_id": "2202.02326", "title": "t", "primary_category": "cs.LG"}, {"arxiv_id": "2202.02327", "title": "t", "primary_category": "cs.LG", "` + c.field + `": "` + c.value + `"}]`
		ps, err := harvest.DecodePush(strings.NewReader(body))
		if c.ok {
			if err != nil || len(ps) != 2 {
				t.Errorf("%s %s: %v", c.field, c.value, err)
			}
			continue
		}
		ae, ok := apperr.As(err)
		if !ok || ae.Code != apperr.Invalid || len(ae.Details) != 1 || ae.Details[0].Index != 1 || ae.Details[0].Field != c.field ||
			!strings.Contains(ae.Details[0].Reason, "from 1991") {
			t.Errorf("%s %s: %v %+v, want an Invalid naming paper 1's %s and the dates allowed", c.field, c.value, err, ae, c.field)
		}
	}
}
