package soak

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestChaosFateIsPerAddress(t *testing.T) {
	c := newChaosSMTP(42)
	refused := 0
	for i := range 1000 {
		addr := "user" + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + "@soak.example"
		f := c.fate(addr)
		if f != c.fate(strings.ToUpper(addr)) {
			t.Fatalf("fate of %s depends on case", addr)
		}
		if f != "" {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no recipient is ever refused")
	}
}

func TestReportRenders(t *testing.T) {
	r := &Report{When: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), CPUs: 2, GoVersion: "go1.26", Postgres: "PostgreSQL 15",
		Command: "followfeed-lab soak --only smtp-chaos", ViaMake: true}
	res := &Result{Name: "smtp-chaos", What: "What it does.", Policy: "**Policies.**", Summary: "a | b"}
	res.figure("attempts", "%d", 3)
	res.check("no duplicates", true, "0 duplicates")
	res.check("all final", false, "1 pending")
	res.finish()
	r.Results = append(r.Results, res)
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"# Reliability", "`make soak` (`followfeed-lab soak --only smtp-chaos`)", "| [smtp-chaos](#smtp-chaos) | **fail** | a \\| b |",
		"## smtp-chaos", "| attempts | 3 |", "| all final | **fail** | 1 pending |", "**Policies.**"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if r.Passed() || len(r.Failed()) != 1 {
		t.Error("a failed check must fail the report")
	}
}

// TestHostileInputReadsGoTestResults: a requirement passes only when every
// test tagged for it ran and passed; a failed test, or no test at all, fails
// it; a tag no requirement knows fails the report.
func TestHostileInputReadsGoTestResults(t *testing.T) {
	var b strings.Builder
	for _, r := range requirements {
		for i, name := range []string{"TestA", "FuzzB"} {
			name += r.ID
			action := "pass"
			switch {
			case r.ID == "access" && i == 0:
				action = "fail"
			case r.ID == "ssrf":
				continue // no test carries the tag
			}
			fmt.Fprintf(&b, `{"Action":"run","Package":"followfeed/x","Test":%q}`+"\n", name)
			fmt.Fprintf(&b, `{"Action":"output","Package":"followfeed/x","Test":%q,"Output":"=== RUN   %s\n"}`+"\n", name, name)
			fmt.Fprintf(&b, `{"Action":"output","Package":"followfeed/x","Test":%q,"Output":"    x_test.go:12: hostile: %s\n"}`+"\n", name, r.ID)
			fmt.Fprintf(&b, `{"Action":%q,"Package":"followfeed/x","Test":%q,"Elapsed":0.25}`+"\n", action, name)
			fmt.Fprintf(&b, `{"Action":"fail","Package":"followfeed/x","Test":%q}`+"\n", name+"/sub") // subtests do not count
		}
	}
	// A subtest's tag does not count: its parent shows nothing.
	fmt.Fprintf(&b, `{"Action":"output","Package":"followfeed/x","Test":"TestC/sub","Output":"    x_test.go:3: hostile: ssrf\n"}`+"\n")
	fmt.Fprintf(&b, `{"Action":"pass","Package":"followfeed/x","Test":"TestC","Elapsed":0.1}`+"\n")
	path := filepath.Join(t.TempDir(), "tests.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res := &Result{Name: "hostile-input"}
	if err := runHostile(context.Background(), &env{opts: Options{TestResults: path}}, res); err != nil {
		t.Fatal(err)
	}
	res.finish()
	failed := map[string]bool{}
	for _, c := range res.Checks {
		if !c.Pass {
			failed[c.Name] = true
		}
	}
	if res.Pass || len(failed) != 2 || !failed[requirements[3].Text] || !failed[requirements[4].Text] {
		t.Errorf("verdict %v, failed checks %v; want exactly access control and SSRF failed", res.Pass, failed)
	}
	if want := fmt.Sprintf("%d requirements, %d/%d tests passed", len(requirements), 2*(len(requirements)-1)-1, 2*(len(requirements)-1)); res.Summary != want {
		t.Errorf("summary %q, want %q", res.Summary, want)
	}

	unknown := `{"Action":"output","Package":"followfeed/x","Test":"TestD","Output":"    x_test.go:3: hostile: limts\n"}` + "\n" +
		`{"Action":"pass","Package":"followfeed/x","Test":"TestD"}` + "\n"
	if err := os.WriteFile(path, []byte(unknown), 0o644); err != nil {
		t.Fatal(err)
	}
	res = &Result{Name: "hostile-input"}
	if err := runHostile(context.Background(), &env{opts: Options{TestResults: path}}, res); err != nil {
		t.Fatal(err)
	}
	if c := res.Checks[len(res.Checks)-1]; c.Pass || !strings.Contains(c.Detail, `"limts"`) {
		t.Errorf("an unknown tag must fail a check naming it; last check %+v", c)
	}

	res = &Result{Name: "hostile-input"}
	if err := runHostile(context.Background(), &env{opts: Options{}}, res); err == nil {
		t.Error("no results file: no error")
	}
}

// Every requirement has tests in the repository, and every tag in a test
// file names a requirement (a typo would drop the test from the report).
func TestHostileTagsInTheSources(t *testing.T) {
	tag := regexp.MustCompile(`\b[tf]\.Log\("hostile: ([a-z0-9-]+)"\)`)
	count := map[string]int{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "var" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && d.Name() != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range tag.FindAllStringSubmatch(string(src), -1) {
			count[m[1]]++
			if !slices.ContainsFunc(requirements, func(r requirement) bool { return r.ID == m[1] }) {
				t.Errorf("%s: tag %q names no requirement", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range requirements {
		if count[r.ID] == 0 {
			t.Errorf("no test logs \"hostile: %s\"", r.ID)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP followfeed_replica_reads_total Reads by where they went.
# TYPE followfeed_replica_reads_total counter
followfeed_replica_reads_total{outcome="replica",read="checked"} 12
followfeed_replica_reads_total{outcome="stale",read="checked"} 3
followfeed_replica_up 1
go_info{version="go1.26 (devel) x"} 1
not a sample
broken{a="b"} notanumber
`
	m := parseMetrics(text)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"followfeed_replica_reads_total", []string{"outcome", "replica", "read", "checked"}, 12},
		{"followfeed_replica_reads_total", []string{"read", "checked", "outcome", "stale"}, 3}, // label order does not matter
		{"followfeed_replica_reads_total", []string{"outcome", "down", "read", "checked"}, 0},  // absent
		{"followfeed_replica_up", nil, 1},
		{"go_info", []string{"version", "go1.26 (devel) x"}, 1},
	} {
		if got := m.get(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if len(m) != 4 {
		t.Errorf("parsed %d samples, want 4: %v", len(m), m)
	}
	later := parseMetrics(strings.Replace(text, "} 12", "} 20", 1))
	if d := later.sub(m).get("followfeed_replica_reads_total", "outcome", "replica", "read", "checked"); d != 8 {
		t.Errorf("increase %v, want 8", d)
	}
}

// TestPromises: a request is owed exactly the batches matched before it
// started, newest first, and the check names what a feed lacks.
func TestPromises(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := &promises{}
	p.add(promiseBatch{ids: map[string][]string{"cs.LG": {"a1", "a2"}, "cs.CV": {"v1"}}, matchedAt: t0})
	p.add(promiseBatch{ids: map[string][]string{"cs.LG": {"b1"}}, matchedAt: t0.Add(time.Second)})
	p.add(promiseBatch{ids: map[string][]string{"cs.LG": {"c1"}}, matchedAt: t0.Add(2 * time.Second)})
	for _, c := range []struct {
		at   time.Time
		n    int
		want []string
	}{
		{t0, 10, nil}, // matched at the very moment: not before
		{t0.Add(time.Millisecond), 10, []string{"a2", "a1"}},
		{t0.Add(1500 * time.Millisecond), 10, []string{"b1", "a2", "a1"}},
		{t0.Add(time.Hour), 2, []string{"c1", "b1"}},
	} {
		if got := p.expected("cs.LG", c.at, c.n); !slices.Equal(got, c.want) {
			t.Errorf("at %s, newest %d: %v, want %v", c.at.Sub(t0), c.n, got, c.want)
		}
	}
	if got := p.expected("cs.CV", t0.Add(time.Hour), 10); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("cs.CV: %v", got)
	}
	have := map[string]bool{"c1": true, "a1": true}
	if got := missingFrom(have, p.expected("cs.LG", t0.Add(time.Hour), 10)); !slices.Equal(got, []string{"b1", "a2"}) {
		t.Errorf("missing %v, want [b1 a2]", got)
	}
	if got := missingFrom(nil, nil); len(got) != 0 {
		t.Errorf("nothing owed, nothing missing: %v", got)
	}
}

func TestLeaderLog(t *testing.T) {
	l := &leaderLog{samples: 5, ids: []string{"w1", "w1", "w2", "w2", "w1"}}
	ids, changes := l.summary()
	if !slices.Equal(ids, []string{"w1", "w2"}) || changes != 2 {
		t.Errorf("leaders %v, %d changes; want [w1 w2], 2", ids, changes)
	}
	l = &leaderLog{samples: 3, ids: []string{"w1", "w1", "w1"}}
	if ids, changes := l.summary(); len(ids) != 1 || changes != 0 {
		t.Errorf("one leader: %v, %d changes", ids, changes)
	}
}

func TestPeriodicRun(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := &periodicRun{by: map[string]int{}}
	p.add(t0, "w1")
	if p.n != 1 || p.minGap != 0 || !p.first.Equal(t0) {
		t.Fatalf("one insert: %+v", p)
	}
	for i, gap := range []time.Duration{2 * time.Second, 2100 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second} {
		t0 = t0.Add(gap)
		p.add(t0, []string{"w1", "w2"}[i%2])
	}
	if p.n != 5 || p.minGap != 300*time.Millisecond || p.by["w1"] != 3 || p.by["w2"] != 2 {
		t.Errorf("after five inserts: n %d, closest %s, by %v; want 5, 300ms, w1 3 w2 2", p.n, p.minGap, p.by)
	}
}

// A run of some scenarios keeps the others' sections, marked with the date
// of the run that produced them, and a later run keeps that mark.
func TestCarryKeepsOtherSections(t *testing.T) {
	render := func(r *Report) string {
		var b strings.Builder
		if err := r.Write(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	result := func(name, summary string) *Result {
		res := &Result{Name: name, What: "What " + name + " does.", Summary: summary}
		res.check("a check", true, "detail of %s", summary)
		res.finish()
		return res
	}
	day1 := &Report{When: time.Date(2026, 12, 1, 19, 36, 0, 0, time.UTC), Command: "followfeed-lab soak"}
	day1.Results = []*Result{result("load", "load of day 1"), result("processes", "processes of day 1"), result("smtp-chaos", "chaos of day 1")}
	old := render(day1)

	day2 := &Report{When: time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC), Command: "followfeed-lab soak --only processes"}
	day2.Results = []*Result{result("processes", "processes of day 2")}
	day2.Carry(old)
	out := render(day2)
	for _, want := range []string{"Produced on 2026-12-04 20:00 UTC", "the others are carried over from earlier runs",
		"| [load](#load) | pass | load of day 1 |", "| [processes](#processes) | pass | processes of day 2 |", "| [smtp-chaos](#smtp-chaos) | pass | chaos of day 1 |",
		"## load\n\n" + carriedNote("2026-12-01 19:36 UTC") + "\n\n*Load at scale S.*", "detail of load of day 1", "detail of chaos of day 1", "detail of processes of day 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "processes of day 1") {
		t.Error("the section of the scenario that ran again was carried too")
	}
	if i, j, k := strings.Index(out, "\n## load\n"), strings.Index(out, "\n## processes\n"), strings.Index(out, "\n## smtp-chaos\n"); !(i < j && j < k) {
		t.Errorf("sections out of order: %d %d %d", i, j, k)
	}

	day3 := &Report{When: time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC), Command: "followfeed-lab soak --only smtp-chaos"}
	day3.Results = []*Result{result("smtp-chaos", "chaos of day 3")}
	day3.Carry(out)
	out3 := render(day3)
	if strings.Count(out3, "*Carried over") != 2 || !strings.Contains(out3, "## load\n\n"+carriedNote("2026-12-01 19:36 UTC")) ||
		!strings.Contains(out3, "## processes\n\n"+carriedNote("2026-12-04 20:00 UTC")) || !strings.Contains(out3, "chaos of day 3") {
		t.Errorf("a second partial run does not keep the marks:\n%s", out3)
	}
	full := &Report{When: day3.When, Command: "followfeed-lab soak"}
	full.Results = []*Result{result("load", "x")}
	if full.Carry(""); len(full.carried) != 0 {
		t.Error("carried something from no report")
	}
}

// The balancer resends a request the first api refused to the other; a
// broken connection is resent for idempotent methods only.
func TestBalancerResends(t *testing.T) {
	ctx := context.Background()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer ok.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // no response at all
		}
	}))
	defer broken.Close()
	ports, err := freePorts(1) // nothing listens there any more
	if err != nil {
		t.Fatal(err)
	}
	up := &slot{name: "up", c: newClient(ok.URL, 2, 5*time.Second), release: "new"}
	down := &slot{name: "down", c: newClient(fmt.Sprintf("http://127.0.0.1:%d", ports[0]), 2, 5*time.Second), release: "previous"}
	b := &balancer{}
	b.add(down)
	b.add(up)
	for i := range 4 {
		r := b.do(ctx, "POST", "/x", "", map[string]int{"i": i}, nil)
		if r.err != nil || r.status != http.StatusNoContent || r.slot != up || r.release != "new" {
			t.Fatalf("POST %d: %v %d via %s", i, r.err, r.status, r.slot.name)
		}
		if wantRetry := i%2 == 0; (r.retried == retryRefused) != wantRetry {
			t.Errorf("POST %d: retried %q", i, r.retried)
		}
	}
	cut := &slot{name: "cut", c: newClient(broken.URL, 2, 5*time.Second)}
	b = &balancer{}
	b.add(cut)
	b.add(up)
	if r := b.do(ctx, "PUT", "/x", "", []byte("{}"), nil); r.err != nil || r.retried != retryBroken {
		t.Errorf("PUT over a broken connection: %v, retried %q", r.err, r.retried)
	}
	b.next = 0
	if r := b.do(ctx, "POST", "/x", "", []byte("{}"), nil); r.err == nil || r.retried != "" {
		t.Errorf("POST over a broken connection: %v, retried %q; want the error, not resent", r.err, r.retried)
	}
}

// The rolling-upgrade scenario names a previous release that is not in the
// repository's history, before building anything.
func TestBuildReleaseNamesAMissingCommit(t *testing.T) {
	ctx := context.Background()
	e := &env{opts: Options{Exe: filepath.Join(t.TempDir(), "bin", "followfeed")}, log: io.Discard, workDir: t.TempDir()}
	root, err := repoRoot(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	const missing = "0123456789abcdef0123456789abcdef01234567"
	if _, err := buildRelease(ctx, e, root, missing); err == nil || !strings.Contains(err.Error(), `"`+missing+`" is not a commit of the repository`) {
		t.Errorf("a missing commit: %v", err)
	}
}
