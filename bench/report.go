package bench

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

// Report is the content of BENCHMARKS.md.
type Report struct {
	When     time.Time
	Scale    Scale
	Dataset  string // counts as built
	Postgres string
	Figures  []Figure
	Details  []string
	// Sections are further Markdown sections, after the details.
	Sections   []string
	GenerateAt string
}

// Write renders the report as Markdown.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Produced by `make bench` (`followfeed-lab bench`) on %s: %d CPUs, %s, %s.\n",
		r.When.UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.Version(), r.Postgres)
	fmt.Fprintf(&b, "Dataset (scale S, seeded generator, kept in its own database between runs): %s.\n\n", r.Dataset)
	fmt.Fprintf(&b, "| figure | target | result | verdict |\n| --- | --- | --- | --- |\n")
	for _, f := range r.Figures {
		verdict := "**fail**"
		if f.Pass {
			verdict = "pass"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Name, f.Target, f.Result, verdict)
	}
	b.WriteString("\nMachines of the same size differ (this workplace's 2-core machines have differed by 2× in the bare handler's req/s): " +
		"compare the bare `net/http` handler's req/s in the 304 row before comparing two runs.\n")
	if len(r.Details) > 0 {
		fmt.Fprintf(&b, "\n## How each figure is measured\n\n")
		for _, d := range r.Details {
			fmt.Fprintf(&b, "- %s\n", d)
		}
	}
	for _, sec := range r.Sections {
		b.WriteString("\n" + sec)
	}
	b.WriteString("\nRerun with `make bench`; the first run builds the dataset (several minutes), later runs reuse it.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
