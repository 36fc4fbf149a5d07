package bench

import "strings"

// Kept sections are parts of BENCHMARKS.md that another command writes
// (followfeed-lab rank-eval writes the ranking's quality): each runs from a
// line "<!-- kept: NAME -->" to a line "<!-- /kept: NAME -->". The bench
// rewrites the rest of the file; it carries the kept sections over as they
// are (KeptSections), after its own report. Their writer replaces its own
// section in place (ReplaceKept).

func keptStart(name string) string { return "<!-- kept: " + name + " -->" }
func keptEnd(name string) string   { return "<!-- /kept: " + name + " -->" }

// KeptSections returns the kept sections of doc, each from its start line
// to its end line inclusive, with a final newline, in the order they
// appear. A start line without its end line is not a section.
func KeptSections(doc string) []string {
	var out []string
	rest := doc
	for {
		i := strings.Index(rest, "<!-- kept: ")
		if i < 0 {
			return out
		}
		line := rest[i:]
		nl := strings.IndexByte(line, '\n')
		if nl < 0 {
			return out
		}
		name := strings.TrimSuffix(strings.TrimPrefix(line[:nl], "<!-- kept: "), " -->")
		end := strings.Index(line, keptEnd(name))
		if end < 0 {
			rest = line[nl:]
			continue
		}
		sec := line[:end+len(keptEnd(name))] + "\n"
		out = append(out, sec)
		rest = line[end+len(keptEnd(name)):]
	}
}

// ReplaceKept returns doc with its kept section name replaced by body
// (written between the section's start and end lines), or with the section
// appended when doc has none. The rest of doc is unchanged.
func ReplaceKept(doc, name, body string) string {
	sec := keptStart(name) + "\n" + strings.TrimRight(body, "\n") + "\n" + keptEnd(name) + "\n"
	start := strings.Index(doc, keptStart(name)+"\n")
	if start >= 0 {
		if end := strings.Index(doc[start:], keptEnd(name)); end >= 0 {
			after := doc[start+end+len(keptEnd(name)):]
			after = strings.TrimPrefix(after, "\n")
			return doc[:start] + sec + after
		}
	}
	if doc != "" && !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	if doc != "" {
		doc += "\n"
	}
	return doc + sec
}
