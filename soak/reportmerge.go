package soak

import (
	"io"
	"regexp"
	"strings"
)

// WriteMerged renders the report as Write does, keeping from previous (an
// earlier RELIABILITY.md, as Write or WriteMerged made it) the summary rows
// and sections of the scenarios this run did not run, so a run of some
// scenarios (--only) rewrites their sections and nothing else. Scenarios
// are listed in Names order; those of the previous report that Names no
// longer knows are dropped. A kept section whose verdict line does not say
// when and where it ran gets the previous report's date and machine. An
// empty or unreadable previous report leaves just this run's.
func (r *Report) WriteMerged(w io.Writer, previous string) error {
	var cur strings.Builder
	if err := r.Write(&cur); err != nil {
		return err
	}
	now := parseReport(cur.String())
	old := parseReport(previous)
	if len(old.sections) == 0 {
		_, err := io.WriteString(w, cur.String())
		return err
	}
	var kept []string
	for _, name := range Names() {
		if _, ran := now.sections[name]; ran {
			continue
		}
		if sec, ok := old.sections[name]; ok {
			now.sections[name] = dateSection(sec, old.date, old.machine)
			now.rows[name] = old.rows[name]
			kept = append(kept, name)
		}
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(now.head, "\n"))
	if len(kept) > 0 {
		b.WriteString(" This run rewrote the sections of " + strings.Join(r.names(), ", ") +
			"; the sections of " + strings.Join(kept, ", ") + " are kept from earlier runs (each section's verdict line says when and where it ran).")
	}
	b.WriteString("\n\n| scenario | verdict | key figures |\n| --- | --- | --- |\n")
	for _, name := range Names() {
		if row, ok := now.rows[name]; ok {
			b.WriteString(row + "\n")
		}
	}
	for _, name := range Names() {
		if sec, ok := now.sections[name]; ok {
			b.WriteString("\n" + strings.TrimRight(sec, "\n") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// names lists the scenarios of the report, in the order they ran.
func (r *Report) names() []string {
	out := make([]string, len(r.Results))
	for i, res := range r.Results {
		out[i] = res.Name
	}
	return out
}

// parsedReport is a rendered report cut into its parts.
type parsedReport struct {
	head     string // from the title to the summary table
	date     string // "Produced on <date> on a machine with <machine>, by"
	machine  string
	rows     map[string]string // scenario → its summary table row
	sections map[string]string // scenario → "## name" to the next section
}

var (
	summaryRowRE = regexp.MustCompile(`^\| \[([a-z0-9-]+)\]\(#[a-z0-9-]+\) \|`)
	producedRE   = regexp.MustCompile(`Produced on (.+?) on a machine with (.+?), by `)
)

// parseReport cuts a report as Write renders it: the head, the summary
// table's rows, and each "## scenario" section.
func parseReport(s string) parsedReport {
	p := parsedReport{rows: map[string]string{}, sections: map[string]string{}}
	if !strings.HasPrefix(s, "# Reliability") {
		return p
	}
	if m := producedRE.FindStringSubmatch(s); m != nil {
		p.date, p.machine = m[1], m[2]
	}
	body, rest, _ := strings.Cut(s, "\n## ")
	table := strings.Index(body, "\n| scenario | verdict |")
	if table < 0 {
		return parsedReport{rows: map[string]string{}, sections: map[string]string{}}
	}
	p.head = body[:table]
	for _, line := range strings.Split(body[table:], "\n") {
		if m := summaryRowRE.FindStringSubmatch(line); m != nil {
			p.rows[m[1]] = line
		}
	}
	if rest == "" {
		return p
	}
	for _, sec := range strings.Split("\n## "+rest, "\n## ")[1:] {
		name, _, _ := strings.Cut(sec, "\n")
		name = strings.TrimSpace(name)
		if _, ok := p.rows[name]; ok {
			p.sections[name] = "## " + sec
		}
	}
	return p
}

// dateSection completes a section's verdict line, "Verdict: **pass** (ran
// 5m15s).", with the date and the machine it ran on when it lacks them:
// "(ran 5m15s on <date>; <machine>)."
func dateSection(sec, date, machine string) string {
	i := strings.Index(sec, "Verdict: **")
	if i < 0 || date == "" {
		return sec
	}
	end := strings.Index(sec[i:], "\n")
	if end < 0 {
		end = len(sec) - i
	}
	line := sec[i : i+end]
	open := strings.Index(line, "(ran ")
	if open < 0 || !strings.HasSuffix(line, ").") {
		return sec
	}
	inner := line[open+len("(ran ") : len(line)-len(").")]
	if !strings.Contains(inner, " on ") {
		inner += " on " + date
	}
	if !strings.Contains(inner, "; ") && machine != "" {
		inner += "; " + machine
	}
	return sec[:i] + line[:open] + "(ran " + inner + ")." + sec[i+end:]
}
