package bench

import (
	"strings"
	"testing"
)

func TestKeptSectionsSurviveARewrite(t *testing.T) {
	doc := "# Benchmarks\n\nold figures\n"
	doc = ReplaceKept(doc, "rank-eval", "## Ranking\n\nfirst\n")
	want := "# Benchmarks\n\nold figures\n\n<!-- kept: rank-eval -->\n## Ranking\n\nfirst\n<!-- /kept: rank-eval -->\n"
	if doc != want {
		t.Fatalf("appended:\n%q\nwant\n%q", doc, want)
	}
	// Replaced in place, the rest unchanged.
	doc += "\ntrailer\n"
	doc = ReplaceKept(doc, "rank-eval", "## Ranking\n\nsecond")
	if !strings.Contains(doc, "second\n<!-- /kept: rank-eval -->\n\ntrailer\n") || strings.Contains(doc, "first") || !strings.HasPrefix(doc, "# Benchmarks\n\nold figures\n\n<!-- kept: rank-eval -->\n") {
		t.Fatalf("replaced:\n%s", doc)
	}
	if again := ReplaceKept(doc, "rank-eval", "## Ranking\n\nsecond"); again != doc {
		t.Errorf("replacing with the same body changed the document:\n%s", again)
	}
	// The bench's rewrite carries the section over.
	secs := KeptSections(doc + "<!-- kept: broken -->\nno end\n")
	if len(secs) != 1 || secs[0] != "<!-- kept: rank-eval -->\n## Ranking\n\nsecond\n<!-- /kept: rank-eval -->\n" {
		t.Errorf("KeptSections = %q", secs)
	}
	if secs := KeptSections("nothing kept\n"); len(secs) != 0 {
		t.Errorf("KeptSections of a plain report = %q", secs)
	}
}
