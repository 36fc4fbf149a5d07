package match_test

import (
	"testing"

	"followfeed/catalog"
)

// TestLoadPapersReadsThePaperAsItIsNow: the details digests load (without
// abstracts) are kept by the process between loads, but a paper is always
// returned as its row is now: after an enrichment of the same version, a
// new version and a deletion, as after nothing.
func TestLoadPapersReadsThePaperAsItIsNow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	one, two := p("2611.00041v1", "cs.LG", []string{"cs.LG"}), p("2611.00042v1", "cs.LG", []string{"cs.LG"})
	one.Abstract = "We weigh dark matter."
	e.ingest(one, two)
	idOf := func(arxivID string) int64 {
		t.Helper()
		var id int64
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT id FROM papers WHERE arxiv_id = $1`, arxivID).Scan(&id); err != nil {
			t.Fatalf("paper %s: %v", arxivID, err)
		}
		return id
	}
	ids := []int64{idOf("2611.00042"), idOf("2611.00041"), 1 << 40} // the last is no paper
	load := func(f catalog.Fields) map[string]string {
		t.Helper()
		ps, err := e.m.LoadPapers(e.ctx, ids, f)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range ps {
			out[p.ArxivID] = p.Title + "|" + p.Abstract + "|" + p.Authors[0].Name
		}
		return out
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		for range 2 { // read, then (perhaps) kept
			got := load(catalog.WithoutAbstract)
			if len(got) != len(want) {
				t.Fatalf("%s: %v, want %v", when, got, want)
			}
			for a, w := range want {
				if got[a] != w {
					t.Errorf("%s: %s is %q, want %q", when, a, got[a], w)
				}
			}
		}
	}
	check("at first", map[string]string{"2611.00041": "Paper 2611.00041v1||Mingzhi Wen", "2611.00042": "Paper 2611.00042v1||Mingzhi Wen"})
	if got := load(catalog.AllFields)["2611.00041"]; got != "Paper 2611.00041v1|We weigh dark matter.|Mingzhi Wen" {
		t.Errorf("with every field: %q", got)
	}

	one.Title, one.Authors[0].Name = "Weighing dark matter", "Mingzhi Wen-Li" // the same version, corrected
	if res := e.ingest(one); res.Updated != 1 {
		t.Fatalf("the correction: %+v", res)
	}
	check("after a correction", map[string]string{"2611.00041": "Weighing dark matter||Mingzhi Wen-Li", "2611.00042": "Paper 2611.00042v1||Mingzhi Wen"})

	two.ArxivID, two.Title = "2611.00042v2", "Paper 2611.00042, second version"
	if res := e.ingest(two); res.Replaced != 1 {
		t.Fatalf("the new version: %+v", res)
	}
	check("after a new version", map[string]string{"2611.00041": "Weighing dark matter||Mingzhi Wen-Li", "2611.00042": "Paper 2611.00042, second version||Mingzhi Wen"})

	if _, err := e.db.Pool.Exec(e.ctx, `DELETE FROM papers WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	check("after a deletion", map[string]string{"2611.00041": "Weighing dark matter||Mingzhi Wen-Li"})
}
