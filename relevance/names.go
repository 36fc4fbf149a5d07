package relevance

import (
	"strings"
	"unicode"

	"followfeed/internal/text"
	"followfeed/search"
)

// nameSuffixes are words that follow a name without being part of the
// person's surname ("Smith Jr.", "Wade III").
var nameSuffixes = map[string]bool{"jr": true, "sr": true, "ii": true, "iii": true, "iv": true}

// groupWords make a name a group's ("the MACHO Collaboration", "HESS
// Team"): its key is the whole folded name, not a surname and an initial.
var groupWords = map[string]bool{
	"collaboration": true, "collaborations": true, "team": true, "consortium": true, "group": true,
	"project": true, "survey": true, "experiment": true, "observatory": true, "telescope": true,
}

// NameKey returns the key under which different spellings of one
// person's name compare equal, for matching authors across records that
// carry no researcher ids: the surname and the first initial, folded, as
// "person a". It reads names as arXiv's listings write them:
//
//   - initials or given names, dotted or not, spaced or not: "A. Person",
//     "Alice Person", "A.B. Person", "A.Person", "Alice B. Person" and
//     "ALICE PERSON" are all "person a";
//   - hyphens and apostrophes inside a word vanish: "C.-A. Faucher-Giguere"
//     is "fauchergiguere c", "O'Dell" is "odell";
//   - LaTeX and accents fold as searches fold them (search.Fold):
//     `M\"uller` and "Müller" are "muller";
//   - parenthesised affiliations and footnote marks are dropped ("A. Person
//     (MIT)", "A. Person(1,2)");
//   - "Surname, Given" is read as "Given Surname", and suffixes (Jr., Sr.,
//     II–IV) are dropped;
//   - particles belong to neither part ("E. F. van Dishoeck" and "Ewine
//     van Dishoeck" are "dishoeck e");
//   - a single word is its own key ("Alves" is "alves"), and a group's name
//     (a word like Collaboration, Team or Consortium in it) is the whole
//     folded name without "the": "the MACHO Collaboration" is "macho
//     collaboration".
//
// Two people who share a surname and an initial share a key ("J. Wang"
// and "Jun Wang"): the price of matching "A. Person" with "Alice Person".
// A name with no letter or digit has the key "".
func NameKey(name string) string {
	s := search.Fold(text.StripParens(name))
	// "Surname, Given": the part after the comma is the given names unless
	// it is a suffix.
	if i := strings.IndexByte(s, ','); i >= 0 {
		before, after := s[:i], strings.TrimSpace(s[i+1:])
		if j := strings.IndexByte(after, ','); j >= 0 {
			after = after[:j] // "Smith, John, Jr."
		}
		if nameSuffixes[strings.Trim(after, ". ")] || after == "" {
			s = before
		} else {
			s = after + " " + before
		}
	}
	words := nameWords(s)
	for len(words) > 1 && nameSuffixes[words[len(words)-1]] {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return ""
	}
	for _, w := range words {
		if groupWords[w] {
			if words[0] == "the" {
				words = words[1:]
			}
			return strings.Join(words, " ")
		}
	}
	surname := words[len(words)-1]
	if len(words) == 1 {
		return surname
	}
	first, _ := firstRune(words[0])
	return surname + " " + first
}

// nameWords splits a folded name into words of letters and digits: dots,
// spaces and other punctuation separate words; hyphens and apostrophes
// inside a word are dropped ("faucher-giguere" is one word).
func nameWords(s string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		case (r == '-' || r == '\'' || r == '’' || r == '‐') && b.Len() > 0:
			// inside a word: dropped (a leading one is punctuation)
		default:
			flush()
		}
	}
	flush()
	return words
}

func firstRune(s string) (string, bool) {
	for i := range s {
		if i > 0 {
			return s[:i], true
		}
	}
	return s, s != ""
}
