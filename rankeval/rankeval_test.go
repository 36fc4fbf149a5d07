package rankeval

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"followfeed/bench"
	"followfeed/relevance"
)

// testdata/astro-ph-listings holds a few real records of each month from
// 9701 to 9801 (arXiv's browse test data, CC0): Esther M. Hu's three
// papers of 1997 and three of 9801 among others, the 9801 ones last.

func TestParseListing(t *testing.T) {
	f, err := os.Open("testdata/astro-ph-listings/9801")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ParseListing(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 14 {
		t.Fatalf("%d records, want 14", len(recs))
	}
	last := recs[len(recs)-3]
	if last.ID != "astro-ph/9801003" || !strings.HasPrefix(last.Title, "High-z Lyman-alpha Emitters. I. A Blank-Field Search") ||
		!strings.HasSuffix(last.Title, "Hawaii Deep Field SSA22") || !slices.Equal(last.Authors, []string{"Lennox L. Cowie", "Esther M. Hu"}) ||
		!slices.Equal(last.Categories, []string{"astro-ph"}) {
		t.Errorf("record %+v", last)
	}
	var cross int
	for _, r := range recs {
		if !strings.Contains(r.ID, "/") || strings.ContainsAny(r.ID, " (") {
			t.Errorf("id %q", r.ID)
		}
		if !strings.HasPrefix(r.ID, "astro-ph/") {
			cross++
		}
	}
	if cross != 1 {
		t.Errorf("%d cross-listed records, want the one", cross)
	}
	recs, err = ParseListing(strings.NewReader("head\n\\\\\narXiv:0712.2171 (*cross-listing*)\nTitle: A\n  B\nAuthors: X. Y & Z. W\nCategories: hep-ph\n  astro-ph.CO\n\\\\\nPaper: 1\nAuthors: no title\n\\\\\n"))
	if err != nil || len(recs) != 1 || recs[0].ID != "0712.2171" || recs[0].Title != "A B" || !slices.Equal(recs[0].Authors, []string{"X. Y", "Z. W"}) ||
		!slices.Equal(recs[0].Categories, []string{"hep-ph", "astro-ph.CO"}) {
		t.Errorf("arXiv: form: %+v, %v", recs, err)
	}
}

func TestMonthNames(t *testing.T) {
	for _, s := range []string{"9204", "9912", "0001", "0712", "1811"} {
		m, err := parseMonth(s)
		if err != nil || m.String() != s {
			t.Errorf("parseMonth(%q) = %v, %v", s, m, err)
		}
	}
	a, _ := parseMonth("9912")
	b, _ := parseMonth("0001")
	if b != a+1 {
		t.Errorf("0001 is not the month after 9912")
	}
	for _, s := range []string{"", "981", "9813", "98ab", "9800"} {
		if _, err := parseMonth(s); err == nil {
			t.Errorf("parseMonth(%q) accepted", s)
		}
	}
	// The reported months are disjoint from the validation months, and
	// each has its 12 months before it in the listings' contiguous runs.
	for _, s := range TestMonths {
		if slices.Contains(ValidationMonths, s) {
			t.Errorf("%s is a test and a validation month", s)
		}
	}
}

func TestRunOnAFewRecords(t *testing.T) {
	o := Options{Dir: "testdata/astro-ph-listings", Months: []string{"9801"}, Params: relevance.DefaultParams(), Background: 20, Seed: 1}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 2 || res.Months[0].Candidates != 14 {
		t.Fatalf("%d users, %d candidates: want Esther M. Hu and Lennox L. Cowie, among 14", res.Users, res.Months[0].Candidates)
	}
	arrival, cold := res.Metrics[0], res.Metrics[3]
	// Their papers come last (Cowie's is with Hu); from their co-authors
	// and words the product ranks them near the top.
	if arrival.MRR != 1.0/12 || cold.MRR < 0.5 {
		t.Errorf("MRR arrival %v, product %v: want 1/12 and at least 1/2", arrival.MRR, cold.MRR)
	}
	for i, m := range res.Metrics {
		if m.Recall10 < 0 || m.Recall10 > 1 || m.Recall50 != 1 {
			t.Errorf("%s: %+v", Methods[i], m)
		}
	}
	again, _ := Run(context.Background(), o)
	if !reflect.DeepEqual(res.Metrics, again.Metrics) {
		t.Errorf("two runs differ: %+v / %+v", res.Metrics, again.Metrics)
	}
	o.Months = []string{"9701"}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "12 months before") {
		t.Errorf("a month without its history: %v", err)
	}

	// The section replaces its own part of BENCHMARKS.md only.
	var sec strings.Builder
	if err := res.WriteSection(&sec, o, "followfeed-lab rank-eval --data testdata"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Ranking quality", "| product, cold start | ", "### Protocol", "### How the parameters were chosen", "| 9801 | 14 | 2 |"} {
		if !strings.Contains(sec.String(), want) {
			t.Errorf("section lacks %q", want)
		}
	}
	doc := bench.ReplaceKept("# Benchmarks\n\nthe bench's figures\n", Section, sec.String())
	if !strings.HasPrefix(doc, "# Benchmarks\n\nthe bench's figures\n") || len(bench.KeptSections(doc)) != 1 {
		t.Errorf("document:\n%s", doc)
	}
	if _, err := os.Stat(filepath.Join("testdata", "astro-ph-listings", "9712")); err != nil {
		t.Fatal(err)
	}
}

func TestSetParam(t *testing.T) {
	p := relevance.DefaultParams()
	for k, v := range map[string]string{"C": "0.5", "CoauthorBoost": "2", "MaxLearned": "10", "Seed": "9", "weight.More": "0.3"} {
		if err := SetParam(&p, k, v); err != nil {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	if p.C != 0.5 || p.CoauthorBoost != 2 || p.MaxLearned != 10 || p.Seed != 9 || p.SourceWeight[relevance.More] != 0.3 {
		t.Errorf("params %+v", p)
	}
	for k, v := range map[string]string{"Nope": "1", "C": "x", "weight.Nope": "1", "SourceWeight": "1", "MaxLearned": "1.5"} {
		if err := SetParam(&p, k, v); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}
