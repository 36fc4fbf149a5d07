package soak

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Check is one verdict item of a scenario.
type Check struct {
	Name   string
	Pass   bool
	Detail string
}

// Figure is one measured value of a scenario.
type Figure struct {
	Name  string
	Value string
}

// Result is what one scenario found.
type Result struct {
	Name    string
	Pass    bool
	Summary string // the key figures, one line
	// What describes the scenario (Markdown paragraphs).
	What string
	// Tables are extra Markdown tables (per-class load figures, …).
	Tables  []string
	Figures []Figure
	Checks  []Check
	// Policy describes the service policies the scenario checks.
	Policy string
	// Err is set when the scenario could not be carried out.
	Err     error
	Elapsed time.Duration
}

func (r *Result) figure(name, format string, args ...any) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: fmt.Sprintf(format, args...)})
}

func (r *Result) check(name string, pass bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Pass: pass, Detail: fmt.Sprintf(format, args...)})
}

// finish sets the verdict: every check passed and nothing went wrong.
func (r *Result) finish() {
	r.Pass = r.Err == nil && len(r.Checks) > 0
	for _, c := range r.Checks {
		r.Pass = r.Pass && c.Pass
	}
	if r.Summary == "" && r.Err != nil {
		r.Summary = "did not complete: " + oneLine(r.Err.Error())
	}
}

// Report is the content of RELIABILITY.md.
type Report struct {
	When      time.Time
	CPUs      int
	CPUModel  string
	GoVersion string
	Postgres  string
	Command   string
	ViaMake   bool
	Duration  time.Duration
	Results   []*Result
	// carried are the parts of an earlier report this run keeps (Carry).
	carried map[string]carried
}

// Passed reports whether every scenario that ran passed.
func (r *Report) Passed() bool {
	for _, res := range r.Results {
		if !res.Pass {
			return false
		}
	}
	return len(r.Results) > 0
}

// Failed lists the scenarios that failed.
func (r *Report) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if !res.Pass {
			out = append(out, res.Name)
		}
	}
	return out
}

// reportTime is how the report writes when it was produced.
const reportTime = "2006-01-02 15:04 MST"

var titles = map[string]string{
	"load":             "Load at scale S",
	"worker-killed":    "Worker killed mid-harvest and mid-send",
	"postgres-restart": "PostgreSQL restarted under traffic",
	"replica":          "A streaming read replica lagging, stopped and started under traffic",
	"processes":        "Two api processes through PgBouncer and two workers on one database",
	"leader-failover":  "The River leader of two workers SIGKILLed under load",
	"restore":          "pg_dump of a running service restored into a new database",
	"rolling-upgrade":  "Two api and two worker processes upgraded one at a time from the previous release, with its migration, under load",
	"smtp-chaos":       "Misbehaving SMTP server",
	"upstream-faults":  "Failing OAI-PMH and OpenAlex upstreams",
	"fediverse-outage": "A fediverse inbox failing and recovering",
	"retention":        "A year of data at arXiv's rate, pruned",
	"hostile-input":    "Hostile input and access control (tests of make test)",
}

// Write renders the report as Markdown.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Reliability\n\n")
	by := "`" + r.Command + "`"
	if r.ViaMake {
		by = "`make soak` (" + by + ")"
	}
	fmt.Fprintf(&b, "Produced on %s on a machine with %s, by %s. ", r.When.UTC().Format(reportTime), r.machine(), by)
	b.WriteString("`make soak` builds the binaries (followfeed, followfeed-lab), provisions PostgreSQL (scripts/pg-ensure.sh) and runs every scenario; " +
		"`followfeed-lab soak --only load,smtp-chaos` runs a subset (`--duration` sets the load duration, `--scale-db` the scale-S database). " +
		"Each scenario starts the real binary (`serve`, `api`, `worker`) as separate processes and drives it from the soak process over loopback; " +
		"the command exits non-zero when any verdict fails.\n\n")
	if len(r.carried) > 0 {
		b.WriteString("This run's scenarios replaced their sections; the others are carried over from earlier runs, each marked with its date.\n\n")
	}
	byName := map[string]*Result{}
	for _, res := range r.Results {
		byName[res.Name] = res
	}
	b.WriteString("| scenario | verdict | key figures |\n| --- | --- | --- |\n")
	for _, name := range r.sections() {
		if res := byName[name]; res != nil {
			fmt.Fprintf(&b, "| [%s](#%s) | %s | %s |\n", res.Name, anchor(res.Name), verdict(res.Pass), cell(res.Summary))
		} else {
			b.WriteString(r.carried[name].row + "\n")
		}
	}
	for _, name := range r.sections() {
		res := byName[name]
		if res == nil {
			b.WriteString("\n" + r.carried[name].section + "\n")
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", res.Name)
		if t := titles[res.Name]; t != "" {
			fmt.Fprintf(&b, "*%s.* ", t)
		}
		fmt.Fprintf(&b, "Verdict: %s (ran %s on %s; %s).\n\n", verdictWord(res.Pass), res.Elapsed.Round(time.Second), r.When.UTC().Format(reportTime), r.machine())
		if res.What != "" {
			b.WriteString(strings.TrimSpace(res.What) + "\n\n")
		}
		if res.Err != nil {
			fmt.Fprintf(&b, "The scenario could not be completed: %s\n\n", oneLine(res.Err.Error()))
		}
		for _, t := range res.Tables {
			b.WriteString(strings.TrimSpace(t) + "\n\n")
		}
		if len(res.Figures) > 0 {
			b.WriteString("| figure | value |\n| --- | --- |\n")
			for _, f := range res.Figures {
				fmt.Fprintf(&b, "| %s | %s |\n", cell(f.Name), cell(f.Value))
			}
			b.WriteString("\n")
		}
		if len(res.Checks) > 0 {
			b.WriteString("| check | result | detail |\n| --- | --- | --- |\n")
			for _, c := range res.Checks {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(c.Name), verdict(c.Pass), cell(c.Detail))
			}
			b.WriteString("\n")
		}
		if res.Policy != "" {
			b.WriteString(strings.TrimSpace(res.Policy) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// machine describes where the report was produced: CPUs, Go, PostgreSQL.
func (r *Report) machine() string {
	cpu := fmt.Sprintf("%d CPUs", r.CPUs)
	if r.CPUModel != "" {
		cpu += " (" + r.CPUModel + ")"
	}
	return fmt.Sprintf("%s, %s, %s", cpu, r.GoVersion, r.Postgres)
}

func verdict(pass bool) string {
	if pass {
		return "pass"
	}
	return "**fail**"
}

func anchor(name string) string { return strings.ToLower(name) }

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", "\\|")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cpuModel reads the processor's name from /proc/cpuinfo ("" if unknown).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return oneLine(v)
		}
	}
	return ""
}

// verdictWord is the verdict in bold, for prose.
func verdictWord(pass bool) string {
	if pass {
		return "**pass**"
	}
	return "**fail**"
}
