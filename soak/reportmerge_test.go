package soak

import (
	"strings"
	"testing"
	"time"
)

func renderReport(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func testResult(name, summary, figure string, pass bool) *Result {
	res := &Result{Name: name, What: "What " + name + " does.", Summary: summary}
	res.figure("figure", "%s", figure)
	res.check("check", pass, "detail")
	res.finish()
	return res
}

// TestOnlyKeepsTheOtherSections: a report of one scenario merged into an
// earlier report of three replaces that scenario's row and section, keeps
// the other two as they were (in Names order), and says so.
func TestOnlyKeepsTheOtherSections(t *testing.T) {
	before := &Report{When: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), CPUs: 2, CPUModel: "Old CPU", GoVersion: "go1.25", Postgres: "PostgreSQL 15", Command: "followfeed-lab soak"}
	before.Results = []*Result{
		testResult("load", "old load figures", "old load value", true),
		testResult("worker-killed", "old worker figures", "old worker value", false),
		testResult("hostile-input", "old hostile figures", "old hostile value", true),
	}
	prev := renderReport(t, before)
	now := &Report{When: time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC), CPUs: 2, CPUModel: "New CPU", GoVersion: "go1.26", Postgres: "PostgreSQL 15", Command: "followfeed-lab soak --only worker-killed"}
	now.Results = []*Result{testResult("worker-killed", "new worker figures", "new worker value", true)}
	var b strings.Builder
	if err := now.WriteMerged(&b, prev); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Produced on 2026-12-04 09:30 UTC",
		"`followfeed-lab soak --only worker-killed`",
		"the sections of load, hostile-input are kept from earlier runs",
		"| [load](#load) | pass | old load figures |",
		"| [worker-killed](#worker-killed) | pass | new worker figures |",
		"| [hostile-input](#hostile-input) | pass | old hostile figures |",
		"| figure | old load value |", "| figure | new worker value |", "| figure | old hostile value |",
		"(ran 0s on 2026-11-29 12:00 UTC; 2 CPUs (Old CPU), go1.25, PostgreSQL 15)", "(ran 0s on 2026-12-04 09:30 UTC; 2 CPUs (New CPU), go1.26, PostgreSQL 15)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("merged report lacks %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{"old worker figures", "old worker value"} {
		if strings.Contains(out, gone) {
			t.Errorf("merged report still has the replaced section's %q", gone)
		}
	}
	// Names order: load, worker-killed, …, hostile-input; each once.
	order := []string{"\n## load\n", "\n## worker-killed\n", "\n## hostile-input\n"}
	last := -1
	for _, h := range order {
		if strings.Count(out, h) != 1 {
			t.Fatalf("%q appears %d times:\n%s", h, strings.Count(out, h), out)
		}
		i := strings.Index(out, h)
		if i < last {
			t.Errorf("%q out of Names order", h)
		}
		last = i
	}
	// Merging again with the same run changes nothing.
	var again strings.Builder
	if err := now.WriteMerged(&again, out); err != nil {
		t.Fatal(err)
	}
	if again.String() != out {
		t.Errorf("a second merge changed the report:\n%s\n---\n%s", out, again.String())
	}
}

// TestMergeDatesSectionsOfOlderReports: a section written before verdict
// lines carried their date and machine gets those of the report it came
// from; no previous report leaves this run's alone.
func TestMergeDatesSectionsOfOlderReports(t *testing.T) {
	prev := "# Reliability\n\nProduced on 2026-12-01 19:36 UTC on a machine with 2 CPUs (Intel(R) Xeon(R) Processor), go1.26.8, PostgreSQL 15.20, by `make soak`.\n\n" +
		"| scenario | verdict | key figures |\n| --- | --- | --- |\n| [load](#load) | pass | 850 req/s |\n\n" +
		"## load\n\n*Load at scale S.* Verdict: **pass** (ran 5m15s).\n\nText.\n"
	now := &Report{When: time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC), Command: "followfeed-lab soak --only replica"}
	now.Results = []*Result{testResult("replica", "replica figures", "v", true)}
	var b strings.Builder
	if err := now.WriteMerged(&b, prev); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Verdict: **pass** (ran 5m15s on 2026-12-01 19:36 UTC; 2 CPUs (Intel(R) Xeon(R) Processor), go1.26.8, PostgreSQL 15.20).\n") || !strings.Contains(b.String(), "| [load](#load) | pass | 850 req/s |") {
		t.Errorf("the kept section is not dated or its row lost:\n%s", b.String())
	}
	var fresh strings.Builder
	if err := now.WriteMerged(&fresh, ""); err != nil {
		t.Fatal(err)
	}
	if fresh.String() != renderReport(t, now) {
		t.Errorf("with no previous report the merge must be this run's report")
	}
}
