package bench

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

// Report is one scale's part of BENCHMARKS.md.
type Report struct {
	When  time.Time
	Level Level
	Scale Scale
	// Dataset is the dataset's counts as built.
	Dataset  string
	Postgres string
	// DiskBytes is the database's size when the run began
	// (pg_database_size); Meta is its bench_meta row (scale, built_at and,
	// from generators that record them, build_seconds and disk_bytes).
	DiskBytes int64
	Meta      map[string]any
	Figures   []Figure
	Details   []string
	// Sections are further Markdown sections, after the details.
	Sections   []string
	GenerateAt string
}

// Write renders the report alone as Markdown (WriteReports of r).
func (r *Report) Write(w io.Writer) error { return WriteReports(w, []*Report{r}) }

// WriteReports renders the reports of one run, one per scale and smallest
// first, as one Markdown document: a table with a row per figure and, per
// scale, its target (one column when every scale has the same), result
// and verdict, plus the ratio of the last scale's value to the first's;
// then each scale's dataset, build time and disk size, and how each figure
// was measured. A figure measured at one scale only has "—" at the others.
func WriteReports(w io.Writer, reps []*Report) error {
	if len(reps) == 0 {
		return fmt.Errorf("no report to write")
	}
	var b strings.Builder
	first, last := reps[0], reps[len(reps)-1]
	names := make([]string, len(reps))
	for i, r := range reps {
		names[i] = r.Level.Name
	}
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Produced by `make bench` (`followfeed-lab bench --scale %s`) on %s: %d CPUs, %s, %s.\n",
		strings.Join(names, ","), first.When.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.Version(), first.Postgres)
	b.WriteString("Datasets (seeded generator, each scale kept in its own database between runs):\n\n")
	for _, r := range reps {
		fmt.Fprintf(&b, "- scale %s: %s; %s.\n", r.Level.Name, r.Dataset, r.built())
	}
	b.WriteString("\n")

	// Rows in first-seen order over the scales.
	type row struct {
		name string
		figs []*Figure // per report, nil where not measured
	}
	var rows []*row
	byKey := map[string]*row{}
	for i, r := range reps {
		for j := range r.Figures {
			f := &r.Figures[j]
			rw := byKey[f.key()]
			if rw == nil {
				rw = &row{name: f.Name, figs: make([]*Figure, len(reps))}
				byKey[f.key()] = rw
				rows = append(rows, rw)
			}
			rw.figs[i] = f
		}
	}
	ratio := len(reps) > 1
	header := append([]string{"figure", "target"}, names...)
	if ratio {
		header = append(header, last.Level.Name+"/"+first.Level.Name)
	}
	for _, n := range names {
		if len(reps) == 1 {
			header = append(header, "verdict")
		} else {
			header = append(header, n+" verdict")
		}
	}
	if len(reps) == 1 {
		header[2] = "result"
	}
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, rw := range rows {
		cells := []string{rw.name, targets(names, rw.figs)}
		for _, f := range rw.figs {
			if f == nil {
				cells = append(cells, "—")
			} else {
				cells = append(cells, f.Result)
			}
		}
		if ratio {
			cells = append(cells, ratioCell(rw.figs[0], rw.figs[len(rw.figs)-1]))
		}
		for _, f := range rw.figs {
			switch {
			case f == nil:
				cells = append(cells, "—")
			case f.Pass && f.untargeted():
				cells = append(cells, "no target")
			case f.Pass:
				cells = append(cells, "pass")
			default:
				cells = append(cells, "**fail**")
			}
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	b.WriteString("\nMachines of the same size differ (this workplace's 2-core machines have differed by 2× in the bare handler's req/s): " +
		"compare the bare `net/http` handler's req/s in the 304 row before comparing two runs.\n" +
		"A figure without a target (— in the target column) is measured, not judged: its verdict says \"no target\".\n")
	if ratio {
		fmt.Fprintf(&b, "The %s/%s column divides the figures' numbers (seconds, rates, p99s, the 304 share, MiB): above 1 is more of it at %s. "+
			"A figure measured at one scale only (the queries, whose cost grows with the number of searches and the batch, not with the users) has — at the others.\n",
			last.Level.Name, first.Level.Name, last.Level.Name)
	}
	if len(first.Details) > 0 || len(last.Details) > 0 {
		fmt.Fprintf(&b, "\n## How each figure is measured\n")
		for _, r := range reps {
			if len(r.Details) == 0 {
				continue
			}
			if len(reps) > 1 {
				fmt.Fprintf(&b, "\n### Scale %s\n", r.Level.Name)
			}
			b.WriteString("\n")
			for _, d := range r.Details {
				fmt.Fprintf(&b, "- %s\n", d)
			}
		}
	}
	for _, r := range reps {
		for _, sec := range r.Sections {
			b.WriteString("\n" + sec)
		}
	}
	b.WriteString("\nRerun with `make bench`; the first run builds each dataset (several minutes for S, longer for M), later runs reuse them.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// built says how long r's dataset took to build and how much disk it uses.
func (r *Report) built() string {
	var parts []string
	if s, ok := r.Meta["build_seconds"].(float64); ok && s > 0 {
		parts = append(parts, "built in "+time.Duration(s*float64(time.Second)).Round(time.Second).String())
	} else {
		parts = append(parts, "build time not recorded (built before the generator recorded it)")
	}
	if n, ok := r.Meta["disk_bytes"].(float64); ok && n > 0 {
		parts = append(parts, fmt.Sprintf("%s on disk after the build", gib(int64(n))))
	}
	parts = append(parts, fmt.Sprintf("%s when this run began", gib(r.DiskBytes)))
	return strings.Join(parts, ", ")
}

// targets is a row's target cell: the one target when every scale that
// measured the figure has the same, else each scale's.
func targets(names []string, figs []*Figure) string {
	var seen []string
	var each []string
	for i, f := range figs {
		if f == nil {
			continue
		}
		if len(seen) == 0 || seen[len(seen)-1] != f.Target {
			seen = append(seen, f.Target)
		}
		each = append(each, names[i]+": "+f.Target)
	}
	if len(seen) <= 1 {
		return strings.Join(seen, "")
	}
	return strings.Join(each, "; ")
}

// ratioCell is last's value over first's, or — when either has none.
func ratioCell(first, last *Figure) string {
	if first == nil || last == nil || first.Value == 0 || last.Value == 0 {
		return "—"
	}
	return fmt.Sprintf("×%.2f", last.Value/first.Value)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", msf(d)) }

// msf is d in milliseconds.
func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// msTarget formats a target duration as "15 ms".
func msTarget(d time.Duration) string { return fmt.Sprintf("%g ms", msf(d)) }

// seconds formats a target duration as "2 s" or "0.5 s".
func seconds(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }

// count formats n with thousands separators ("1,000").
func count(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
