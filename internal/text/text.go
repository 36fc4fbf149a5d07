// Package text holds small string helpers shared by packages that quote or
// store text people wrote.
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis is appended by Truncate when it cuts.
const Ellipsis = "…"

// Truncate returns s unchanged when it has at most maxChars characters
// (runes, as PostgreSQL's length() counts them); otherwise its first
// maxChars characters followed by Ellipsis. It never splits a UTF-8
// sequence, so valid UTF-8 in gives valid UTF-8 out. maxChars <= 0 gives
// Ellipsis for any non-empty s.
func Truncate(s string, maxChars int) string {
	if len(s) <= maxChars {
		return s // at most maxChars bytes, so at most maxChars characters
	}
	n := 0
	for i := range s {
		if n == maxChars {
			return s[:i] + Ellipsis
		}
		n++
	}
	return s
}

// Shorten is Truncate at a word boundary, for names and excerpts people
// read: s unchanged when it has at most maxChars characters; otherwise its
// longest prefix of at most maxChars characters that ends before a space
// (trailing spaces and punctuation that would dangle, ",;:", dropped),
// followed by Ellipsis, so that the result has at most maxChars+1
// characters. When no space falls in the second half of that prefix (one
// very long word), it cuts inside the word, as Truncate does. It never
// splits a UTF-8 sequence.
func Shorten(s string, maxChars int) string {
	cut := Truncate(s, maxChars)
	if cut == s {
		return s
	}
	body := strings.TrimSuffix(cut, Ellipsis)
	next, _ := utf8.DecodeRuneInString(s[len(body):])
	if !unicode.IsSpace(next) { // the cut is inside a word: back to its start
		if i := strings.LastIndexFunc(body, unicode.IsSpace); i > 0 && utf8.RuneCountInString(body[:i]) >= maxChars/2 {
			body = body[:i]
		}
	}
	return strings.TrimRightFunc(body, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",;:", r) }) + Ellipsis
}

// Collapse makes text a person or an upstream source gave storable and
// safe to show on one line (names, labels, titles): invalid UTF-8
// replaced by U+FFFD, bidirectional controls removed (IsBidiControl),
// control characters turned into spaces, whitespace runs (line and
// paragraph separators U+2028 and U+2029 among them) collapsed to one
// space, trimmed, and cut to at most maxRunes characters (no limit when
// maxRunes < 0) with no trailing space and no ellipsis. It is the one
// sanitiser of every name and label the service stores.
func Collapse(s string, maxRunes int) string {
	s = StripBidi(strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if maxRunes >= 0 && len(s) > maxRunes {
		n := 0
		for i := range s {
			if n == maxRunes {
				s = strings.TrimRight(s[:i], " ")
				break
			}
			n++
		}
	}
	return s
}

// IsBidiControl reports whether r is an invisible character that changes
// the order or direction in which the text around it is shown: the
// embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069 and
// the marks LRM, RLM and ALM (U+200E, U+200F, U+061C). In a name or a
// label they make it read as something else (U+202E shows
// "evil\u202Etxt.exe" as "evilexe.txt") and can reorder the text that
// follows it in a feed reader or a mail.
func IsBidiControl(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

// StripBidi returns s without its bidirectional controls (IsBidiControl);
// s itself when it has none.
func StripBidi(s string) string {
	if !strings.ContainsFunc(s, IsBidiControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if IsBidiControl(r) {
			return -1
		}
		return r
	}, s)
}

// StripParens removes parenthesised text (affiliations, footnote marks),
// nested or not, leaving a space where each closing parenthesis was (so
// "A. Person(1)B" keeps two words); an unclosed parenthesis removes the
// rest. Callers collapse the spaces (Collapse) when they matter.
func StripParens(s string) string {
	if !strings.ContainsAny(s, "()") {
		return s
	}
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			if depth > 0 {
				depth--
			}
			b.WriteByte(' ')
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
