package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 5, ""},
		{"short", 5, "short"},
		{"longer", 5, "longe…"},
		{"héllo", 5, "héllo"},        // 6 bytes, 5 characters: not cut
		{"héllo wörld", 5, "héllo…"}, // a byte cut at 5 would keep "héll"
		{"日本語のテキスト", 3, "日本語…"},      // a byte cut at 4 would split "本"
		{"日本語", 3, "日本語"},
		{"abc", 0, "…"},
		{"", 0, ""},
	} {
		got := Truncate(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q is not valid UTF-8", tc.in, tc.max, got)
		}
	}
}

// TestTruncateNeverSplitsASequence cuts a string of 2-, 3- and 4-byte
// characters at every length: the result is always valid UTF-8 and has at
// most max characters before the ellipsis.
func TestTruncateNeverSplitsASequence(t *testing.T) {
	s := strings.Repeat("é日𝄞a", 10)
	for max := 0; max <= utf8.RuneCountInString(s)+1; max++ {
		got := Truncate(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("Truncate(_, %d) = %q is not valid UTF-8", max, got)
		}
		body := strings.TrimSuffix(got, Ellipsis)
		if n := utf8.RuneCountInString(body); n > max || !strings.HasPrefix(s, body) {
			t.Fatalf("Truncate(_, %d) = %q: %d characters, or not a prefix", max, got, n)
		}
	}
}

// TestShorten cuts at a word boundary when one falls in the second half of
// the allowed characters, and inside the word otherwise.
func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"Attention is all you need", 40, "Attention is all you need"},
		{"Attention is all you need", 25, "Attention is all you need"},
		{"Attention is all you need", 24, "Attention is all you…"},
		{"Attention is all you need", 20, "Attention is all you…"}, // the cut falls on the space
		{"Graphs, networks: and more", 17, "Graphs, networks…"},    // ":" would dangle
		{"Supercalifragilistic expialidocious", 10, "Supercalif…"}, // no space in reach: cut in the word
		{"a verylongwordindeed", 12, "a verylongwo…"},              // the only space is too early
		{"日本語 のテキスト です", 8, "日本語 のテキス…"},                           // the space is in the first half
		{"日本語 のテキスト です", 9, "日本語 のテキスト…"},
		{"", 5, ""},
	} {
		got := Shorten(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > tc.max+1 || !utf8.ValidString(got) {
			t.Errorf("Shorten(%q, %d) = %q: %d characters", tc.in, tc.max, got, n)
		}
	}
}

func TestCollapse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"  a \t b\n\nc  ", -1, "a b c"},
		{"a\x00b\x1fc", -1, "a b c"},
		{"bad \xff byte", -1, "bad \uFFFD byte"},
		{"héllo wörld", 6, "héllo"}, // cut after the space, which is trimmed
		{"日本語のテキスト", 3, "日本語"},
		{"abc", 0, ""},
		// Names and labels read as they are stored (a security review
		// finding): no bidirectional control, no line break of any kind.
		{"evil\u202Etxt.exe", -1, "eviltxt.exe"},
		{"\u2067Ada\u2069 \u202ALovelace\u202C\u200E\u200F\u061C", -1, "Ada Lovelace"},
		{"line\u2028separator\u2029paragraph", -1, "line separator paragraph"},
		{"\u202B\u202D\u2066\u2068", -1, ""},
		{"عربي\u200Dنص", -1, "عربي\u200Dنص"}, // a joiner is not a direction control
	} {
		if got := Collapse(tc.in, tc.max); got != tc.want {
			t.Errorf("Collapse(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestStripParens(t *testing.T) {
	for in, want := range map[string]string{
		"A. Person":                  "A. Person",
		"A. Person (MIT)":            "A. Person  ",
		"B. Jones ((1) X, (2) Y) Jr": "B. Jones     Jr",
		"Smith(1)Jones":              "Smith Jones",
		"open (never closed":         "open ",
		"stray ) paren":              "stray   paren",
	} {
		if got := StripParens(in); got != want {
			t.Errorf("StripParens(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStripBidi(t *testing.T) {
	t.Log("hostile: names")
	for _, r := range []rune{0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C} {
		if !IsBidiControl(r) {
			t.Errorf("%U is a bidirectional control", r)
		}
	}
	// Their neighbours, and the joiners some scripts need, are not.
	for _, r := range []rune{0x2029, 0x202F, 0x2065, 0x206A, 0x200B, 0x200C, 0x200D, 0x061B, 0x061D, 'a', 'ع'} {
		if IsBidiControl(r) {
			t.Errorf("%U is not a bidirectional control", r)
		}
	}
	if s := "plain text"; StripBidi(s) != s {
		t.Error("StripBidi changed text without controls")
	}
	if got := StripBidi("a\u202Eb\u2069c\u200Fd"); got != "abcd" {
		t.Errorf("StripBidi = %q", got)
	}
}
