package upstream

import "testing"

func TestCleanArxivID(t *testing.T) {
	cases := map[string]string{
		"2202.02326":          "2202.02326",
		" 2202.02326v12 ":     "2202.02326",
		"hep-th/9504118v1":    "hep-th/9504118",
		"math.GT/0309136":     "math.GT/0309136",
		"0704.0001":           "0704.0001",
		"":                    "",
		"no-digits":           "",
		"2202.02326 junk":     "",
		"../../etc/passwd1":   "",
		"a|b1":                "",
		"2202.02326,2101.001": "",
	}
	for in, want := range cases {
		got, ok := CleanArxivID(in)
		if got != want || ok != (want != "") {
			t.Errorf("CleanArxivID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
