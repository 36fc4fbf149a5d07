package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseLevels(t *testing.T) {
	for spec, want := range map[string]string{"S": "S", "m": "M", "S,M": "S,M", "M,S": "S,M", " M , s ,M": "S,M"} {
		got, err := ParseLevels(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		var names []string
		for _, l := range got {
			names = append(names, l.Name)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("%q: %v, want %s", spec, names, want)
		}
	}
	for _, spec := range []string{"", ",", "L", "S,XL"} {
		if _, err := ParseLevels(spec); err == nil || !strings.Contains(err.Error(), "S, M") {
			t.Errorf("%q: error %v does not name the scales", spec, err)
		}
	}
}

// M's database is S's with _m appended, on the same server with the same
// parameters; S's is DATABASE_URL itself.
func TestLevelDatabaseURL(t *testing.T) {
	s, m := Levels[0], Levels[1]
	base := "postgres://postgres@127.0.0.1:5432/followfeed_bench?sslmode=disable"
	if got, err := s.DatabaseURL(base); err != nil || got != base {
		t.Errorf("S: %q %v", got, err)
	}
	if got, err := m.DatabaseURL(base); err != nil || got != "postgres://postgres@127.0.0.1:5432/followfeed_bench_m?sslmode=disable" {
		t.Errorf("M: %q %v", got, err)
	}
	for _, bad := range []string{"host=127.0.0.1 dbname=x", "postgres://127.0.0.1:5432/", "postgres://127.0.0.1:5432"} {
		if got, err := m.DatabaseURL(bad); err == nil {
			t.Errorf("M of %q: %q, want an error", bad, got)
		}
	}
}

// Two scales side by side: one row per figure key (the name from the
// first scale that has it), one target cell when the scales share it and
// each scale's otherwise, the M/S ratio of the values, a verdict per
// scale, "—" where a scale did not measure the figure, and each scale's
// dataset with its build time and disk size.
func TestWriteReportsSideBySide(t *testing.T) {
	when := time.Date(2026, 12, 1, 13, 4, 0, 0, time.UTC)
	s := &Report{When: when, Level: Levels[0], Postgres: "PostgreSQL 15", Dataset: "100 users", DiskBytes: 3 << 30,
		Meta: map[string]any{"build_seconds": 245.4, "disk_bytes": float64(2 << 30)},
		Figures: []Figure{
			{Key: "match", Name: "match a batch", Target: "≤ 2 s", Result: "0.55 s", Value: 0.55, Pass: true},
			{Key: "digests", Name: "digests", Target: "≥ 300 / s", Result: "310 / s", Value: 310, Pass: true},
			{Name: "queries", Target: "≤ 2 s", Result: "+9.03 s", Pass: false},
			{Key: "sign", Name: "sign one POST", Target: "—", Result: "0.97 ms", Value: 0.97, Pass: true},
		},
		Details:  []string{"S detail"},
		Sections: []string{"## S only\n"}}
	m := &Report{When: when, Level: Levels[1], Postgres: "PostgreSQL 15", Dataset: "1000 users", DiskBytes: 9 << 30,
		Figures: []Figure{
			{Key: "digests", Name: "digests (M)", Target: "≥ 1,000 / s", Result: "620 / s", Value: 620, Pass: false},
			{Key: "match", Name: "match a batch", Target: "≤ 2 s", Result: "4.40 s", Value: 4.4, Pass: false},
			{Key: "sign", Name: "sign one POST", Target: "—", Result: "0.99 ms", Value: 0.99, Pass: true},
		},
		Details: []string{"M detail"}}
	var b strings.Builder
	if err := WriteReports(&b, []*Report{s, m}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"--scale S,M",
		"| figure | target | S | M | M/S | S verdict | M verdict |",
		"| match a batch | ≤ 2 s | 0.55 s | 4.40 s | ×8.00 | pass | **fail** |",
		"| digests | S: ≥ 300 / s; M: ≥ 1,000 / s | 310 / s | 620 / s | ×2.00 | pass | **fail** |",
		"| queries | ≤ 2 s | +9.03 s | — | — | **fail** | — |",
		"| sign one POST | — | 0.97 ms | 0.99 ms | ×1.02 | no target | no target |",
		"A figure without a target (— in the target column) is measured, not judged: its verdict says \"no target\".",
		"- scale S: 100 users; built in 4m5s, 2.0 GiB on disk after the build, 3.0 GiB when this run began.",
		"- scale M: 1000 users; build time not recorded",
		"### Scale S\n\n- S detail", "### Scale M\n\n- M detail", "## S only",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "| match a batch") > strings.Index(out, "| digests") {
		t.Errorf("rows not in S's order:\n%s", out)
	}
	// One scale alone: the table it always had.
	b.Reset()
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "| figure | target | result | verdict |\n") ||
		!strings.Contains(out, "| digests (M) | ≥ 1,000 / s | 620 / s | **fail** |") || strings.Contains(out, "M/") {
		t.Errorf("single report:\n%s", out)
	}
}
