package paper

import "testing"

// TestAbstractKeepsParagraphs: an abstract's paragraphs (arXiv marks them
// with a line break and indentation; pushes may use blank lines) survive
// normalisation as "\n\n"-separated lines, each collapsed; nothing else of
// its layout does.
func TestAbstractKeepsParagraphs(t *testing.T) {
	for in, want := range map[string]string{
		"  At the heart of the\ntheorem is a system.\n  Continuing their effort, we\nprove a bound.\n": "At the heart of the theorem is a system.\n\nContinuing their effort, we prove a bound.",
		"First.\r\n\r\n\r\nSecond\tpart.": "First.\n\nSecond part.",
		"One paragraph,\nwrapped.":        "One paragraph, wrapped.",
		"  \n \n":                         "",
		"a\x00b\n\n\x01\n\nc":             "a b\n\nc",
	} {
		p := Paper{ArxivID: "2301.00001", Title: "T", PrimaryCategory: "cs.LG", Categories: []string{"cs.LG"}, Abstract: in}
		if fe := p.Normalize(false); fe != nil {
			t.Fatalf("%q: %v", in, fe)
		}
		if p.Abstract != want {
			t.Errorf("abstract %q normalised to %q, want %q", in, p.Abstract, want)
		}
	}
}

// TestVersionIsBounded: a version fits what an arXiv id can say (v1 to
// v9999; 0 is unknown); a larger one (2147483648 overflowed the column
// into a 500) or a negative one is a problem of the field "version".
func TestVersionIsBounded(t *testing.T) {
	t.Log("hostile: limits")
	for v, ok := range map[int]bool{0: true, 1: true, MaxVersion: true, MaxVersion + 1: false, 2147483648: false, -1: false} {
		p := Paper{ArxivID: "2301.00001", Version: v, Title: "T", PrimaryCategory: "cs.LG", Categories: []string{"cs.LG"}}
		fe := p.Normalize(true)
		if ok != (fe == nil) || !ok && fe.Field != "version" {
			t.Errorf("version %d: %v", v, fe)
		}
	}
}

// TestNamesLoseBidirectionalControls: a host's push kept U+202E and line
// separators in titles and author names, which feeds, digests and chat
// posts then showed reordered (a security review finding).
func TestNamesLoseBidirectionalControls(t *testing.T) {
	t.Log("hostile: names")
	p := Paper{ArxivID: "2301.00001", Title: "Attention\u2028is \u202Eall\u202C you need", PrimaryCategory: "cs.LG", Categories: []string{"cs.LG"},
		Authors: []Author{{Name: "\u2067Ada\u2069 \u202ELovelace\u200F"}}}
	if fe := p.Normalize(true); fe != nil {
		t.Fatal(fe)
	}
	if p.Title != "Attention is all you need" || p.Authors[0].Name != "Ada Lovelace" {
		t.Errorf("title %q, author %q", p.Title, p.Authors[0].Name)
	}
}
