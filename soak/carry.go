package soak

import (
	"regexp"
	"slices"
	"strings"
)

// carried is a scenario's part of an earlier report: its summary row and
// its section, kept as they were.
type carried struct {
	row, section string
}

var (
	producedRE = regexp.MustCompile(`(?m)^Produced on (\d{4}-\d{2}-\d{2} \d{2}:\d{2} [A-Z]+) `)
	summaryRE  = regexp.MustCompile(`(?m)^\| \[([a-z0-9-]+)\]\(#[a-z0-9-]+\) \|.*$`)
	carriedRE  = regexp.MustCompile(`(?m)^\*Carried over from the run of [^*]+\.\*$`)
)

// carriedNote is the line a carried section gets after its heading.
func carriedNote(when string) string {
	return "*Carried over from the run of " + when + " (later runs did not run this scenario).*"
}

// Carry keeps, from the report written before (old, the file's content),
// the summary rows and sections of the scenarios this run did not run, so
// a run of some scenarios (--only) leaves the others' figures in place.
// A section carried for the first time is marked with the date of the run
// that produced it; one already marked keeps its mark. Scenarios this
// binary does not know are dropped.
func (r *Report) Carry(old string) {
	when := ""
	if m := producedRE.FindStringSubmatch(old); m != nil {
		when = m[1]
	}
	ran := map[string]bool{}
	for _, res := range r.Results {
		ran[res.Name] = true
	}
	rows := map[string]string{}
	for _, m := range summaryRE.FindAllStringSubmatch(old, -1) {
		rows[m[1]] = m[0]
	}
	for _, name := range Names() {
		if ran[name] || rows[name] == "" {
			continue
		}
		sec := section(old, name)
		if sec == "" {
			continue
		}
		if !carriedRE.MatchString(sec) && when != "" {
			head, body, _ := strings.Cut(sec, "\n\n")
			sec = head + "\n\n" + carriedNote(when) + "\n\n" + body
		}
		if r.carried == nil {
			r.carried = map[string]carried{}
		}
		r.carried[name] = carried{row: rows[name], section: sec}
	}
}

// section returns the "## name" section of doc, up to the next "## "
// heading, without surrounding blank lines ("" when there is none).
func section(doc, name string) string {
	start := strings.Index(doc, "\n## "+name+"\n")
	if start < 0 {
		return ""
	}
	rest := doc[start+1:]
	if end := strings.Index(rest[3:], "\n## "); end >= 0 {
		rest = rest[:end+3]
	}
	return strings.TrimSpace(rest)
}

// sections lists the scenarios the report shows, in the order they run:
// those of this run and those carried.
func (r *Report) sections() []string {
	var out []string
	for _, name := range Names() {
		if _, ok := r.carried[name]; ok || slices.ContainsFunc(r.Results, func(res *Result) bool { return res.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}
