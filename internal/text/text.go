// Package text holds small string helpers shared by packages that quote or
// store text people wrote.
package text

import (
	"strings"
	"unicode"
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

// Collapse makes text from an upstream source storable: invalid UTF-8
// replaced by U+FFFD, control characters turned into spaces, whitespace runs
// collapsed to one space, trimmed, and cut to at most maxRunes characters
// (no limit when maxRunes < 0) with no trailing space and no ellipsis.
func Collapse(s string, maxRunes int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
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
