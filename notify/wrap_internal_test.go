package notify

import (
	"bytes"
	htmlstd "html"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkWrap fails t unless out is s wrapped as the mail's text part is
// specified: s's fields (strings.Fields) in order, single-spaced, on
// lines that start with first (the first) or indent (the others), each at
// most textWidth runes unless it holds one word alone, and greedy: each
// line's first word would not have fit on the line before.
func checkWrap(t *testing.T, first, indent, s, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	var words []string
	for i, line := range lines {
		prefix := indent
		if i == 0 {
			prefix = first
		}
		rest, ok := strings.CutPrefix(line, prefix)
		ws := strings.Split(rest, " ")
		if !ok || rest == "" && (i > 0 || len(lines) > 1) || rest != "" && slices.Contains(ws, "") {
			t.Fatalf("wrap(%q): line %d %q is not %q and single-spaced words", s, i, line, prefix)
		}
		if rest == "" {
			continue
		}
		if n := utf8.RuneCountInString(line); n > textWidth && len(ws) > 1 {
			t.Fatalf("wrap(%q): line %d %q has %d runes", s, i, line, n)
		}
		if i > 0 && utf8.RuneCountInString(lines[i-1])+1+utf8.RuneCountInString(ws[0]) <= textWidth {
			t.Fatalf("wrap(%q): %q would have fit on line %d %q", s, ws[0], i-1, lines[i-1])
		}
		words = append(words, ws...)
	}
	if want := strings.Fields(s); !slices.Equal(words, want) {
		t.Fatalf("wrap(%q) has the words %q, want %q", s, words, want)
	}
}

// wrapCases are strings a title, a name or a reason may be: line breaks,
// tabs, Unicode spaces (no-break, ideographic), accents, invalid UTF-8,
// words longer than a line.
func wrapCases() []string {
	cases := []string{"", " ", "a", "  a  b  ", "a  b", "Ann  One", "a \u00a0b", "a b ", " a b", "Hélène\u2009Dupont", "Dark matter\n  halos of\tdwarf galaxies", "\u00a0nbsp\u00a0inside\u3000ideographic\u2003em",
		"Hélène Dupont-Aignan, Ørsted", "bad \xff\xfe utf8 \x80 here", strings.Repeat("x", 90) + " y " + strings.Repeat("é", 80),
		"Why first: with <b>Ann</b> & \"Bob\" · it's about 'x'"}
	r := rand.New(rand.NewPCG(1, 2))
	parts := []string{"galaxy", "é", "\u00a0", " ", "\n", "\t", "cluster-lensing", "&", "<", "\xff", "·", "a", strings.Repeat("w", 30),
		"\u0085", "\u1680", "\u205f", "\u2028", "\u3000", "\u2009", "\u00c2", "\xc2", "\xe2\x80", "ş"}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		cases = append(cases, b.String())
	}
	// ASCII alone (wrapLine's own way for it): words of every length up
	// to beyond a line, so breaks fall at, before and after the width.
	for range 3000 {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(strings.Repeat("abcdefghij", 9)[:1+r.IntN(r.IntN(90)+1)])
			b.WriteString([]string{" ", " ", " ", "  ", "\t", "\n"}[r.IntN(6)])
		}
		cases = append(cases, b.String())
	}
	return cases
}

// TestWrapAndOneLineAsSpecified: wrap, appendOneLine and escapeTo, made
// in one pass over bytes for the Why lines of best-first digests, say
// what strings.Fields, the word wrap checkWrap specifies and
// html.EscapeString say, on any text.
func TestWrapAndOneLineAsSpecified(t *testing.T) {
	for _, s := range wrapCases() {
		if got, want := string(appendOneLine([]byte("x "), s)), "x "+strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("appendOneLine(%q) = %q, want %q", s, got, want)
		}
		if got, want := oneLine(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("oneLine(%q) = %q, want %q", s, got, want)
		}
		checkWrap(t, "12. ", "   ", s, wrap("12. ", "   ", s))
		checkWrap(t, "   ", "   ", s, wrap("   ", "   ", s))
		checkWrap(t, strings.Repeat("-", textWidth+2), "", s, wrap(strings.Repeat("-", textWidth+2), "", s))
		var b bytes.Buffer
		if escapeTo(&b, []byte(s)); b.String() != htmlstd.EscapeString(s) {
			t.Fatalf("escapeTo(%q) = %q, want %q", s, b.String(), htmlstd.EscapeString(s))
		}
	}
}

// TestWriteWhy: the first maxWhy texts that are not blank, made one line,
// after "Why first:", wrapped in the text part and escaped in the HTML.
func TestWriteWhy(t *testing.T) {
	var tx, h bytes.Buffer
	writeWhy(&tx, &h, []string{" \n ", "with your co-author\n Ann <One>", "like 3 papers you marked", "about galaxy, cluster and lensing", "a fourth"})
	line := "Why first: with your co-author Ann <One> · like 3 papers you marked · about galaxy, cluster and lensing"
	if text, ok := strings.CutPrefix(tx.String(), "\n"); !ok || text != wrap("   ", "   ", line) {
		t.Errorf("text part %q, want a line break and %q wrapped", tx.String(), line)
	}
	if want := "\n" + `<div style="font-size:14px;color:#4b5563">` + htmlstd.EscapeString(line) + `</div>`; h.String() != want {
		t.Errorf("HTML part %q, want %q", h.String(), want)
	}
	tx.Reset()
	h.Reset()
	if writeWhy(&tx, &h, []string{"", "  "}); tx.Len()+h.Len() != 0 {
		t.Errorf("blank reasons wrote %q and %q", tx.String(), h.String())
	}
}
