package arxivid

import (
	"strings"
	"testing"
)

// TestParse: the forms people and hosts write ids in, each read to its id
// and version; ids arXiv cannot have refused with a message naming the
// mistake.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in      string
		id      string
		version int
	}{
		{"2202.02326", "2202.02326", 0},
		{" 2202.02326v12 ", "2202.02326", 12},
		{"arXiv:2202.02326", "2202.02326", 0},
		{"ARXIV:0704.0001v2", "0704.0001", 2},
		{"https://arxiv.org/abs/1412.9999", "1412.9999", 0},
		{"http://arxiv.org/pdf/2202.02326v3.pdf", "2202.02326", 3},
		{"arxiv.org/abs/astro-ph/9901001v1", "astro-ph/9901001", 1},
		{"math.GT/0309136", "math.GT/0309136", 0},
	} {
		id, v, err := Parse(c.in)
		if err != nil || id != c.id || v != c.version {
			t.Errorf("Parse(%q) = %q, %d, %v; want %q, %d", c.in, id, v, err, c.id, c.version)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"2613.00001", "no month"},
		{"9999.99999", "no month"},
		{"2200.12345", "no month"},
		{"1412.00001", "4 digits after the dot until 1412"},
		{"1501.0001", "5 from 1501"},
		{"2202.02326v0", "versions start at v1"},
		{"2202.02326v12345", "not an arXiv id"},
		{"ASTRO-PH/9901001", "not an arXiv id"},
		{"../etc/passwd", "not an arXiv id"},
		{"", "not an arXiv id"},
		{strings.Repeat("9", 500), "…"},
	} {
		if _, _, err := Parse(c.in); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%.20q) = %v; want an error saying %q", c.in, err, c.says)
		}
	}
}

// TestNormalized: the shape of an id as Parse returns it, whatever its
// month or digits; a version, a prefix or another shape is not.
func TestNormalized(t *testing.T) {
	for s, want := range map[string]bool{
		"2202.02326": true, "9999.99999": true, "2613.00001": true, "astro-ph/9901001": true, "math.GT/0309136": true,
		"2202.02326v2": false, "arXiv:2202.02326": false, "2202.023": false, "ASTRO-PH/9901001": false, "": false, "../x": false,
	} {
		if got := Normalized(s); got != want {
			t.Errorf("Normalized(%q) = %v, want %v", s, got, want)
		}
	}
}
