package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A token is one word of a text: its folded form (lower case, accents
// removed), its stem, and its position (consecutive words have consecutive
// positions; the joined form of a hyphenated word shares its first part's
// position).
type token struct {
	fold, stem string
	pos        int32
}

// latexFormatting are LaTeX commands that only format their argument: they
// vanish, and their argument reads as ordinary text ("\emph{robust}" is
// "robust").
var latexFormatting = map[string]bool{
	"emph": true, "textit": true, "textbf": true, "textrm": true, "textsc": true, "texttt": true, "textsf": true,
	"textup": true, "textnormal": true, "text": true, "mathrm": true, "mathbf": true, "mathcal": true, "mathbb": true,
	"mathit": true, "mathsf": true, "mathtt": true, "mathfrak": true, "mathscr": true, "boldsymbol": true, "bm": true,
	"operatorname": true, "mbox": true, "hbox": true, "it": true, "bf": true, "rm": true, "em": true, "sc": true,
	"tt": true, "sf": true, "cal": true, "left": true, "right": true, "big": true, "Big": true, "bigg": true,
	"mathop": true, "textsuperscript": true, "textsubscript": true, "url": true,
}

// latexLetters are LaTeX commands that stand for a letter.
var latexLetters = map[string]string{
	"ss": "ss", "o": "o", "O": "o", "ae": "ae", "AE": "ae", "oe": "oe", "OE": "oe", "aa": "a", "AA": "a",
	"l": "l", "L": "l", "i": "i", "j": "j",
}

// detex rewrites the LaTeX of titles and abstracts into plain text without
// breaking words: accent commands become their letter (Schr\"odinger,
// M\"{u}ller, \'{e}), formatting commands vanish, braces and dollar signs
// disappear without separating what they join ({G}aussian), and other
// commands become their name as a word (\alpha-helix reads "alpha-helix").
func detex(s string) string {
	if !strings.ContainsAny(s, `\{}$~`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '{', '}', '$':
			continue
		case '~':
			b.WriteByte(' ')
			continue
		case '\\':
		default:
			b.WriteByte(c)
			continue
		}
		// A backslash.
		if i+1 >= len(s) {
			break
		}
		n := s[i+1]
		switch {
		case strings.IndexByte("\"'`^~=.", n) >= 0:
			// \"o, \"{o}, \'{e}: the accent goes (accents are folded away anyway).
			i++
			continue
		case isASCIILetter(n):
			j := i + 1
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			name := s[i+1 : j]
			if l, ok := latexLetters[name]; ok {
				b.WriteString(l)
			} else if len(name) == 1 && j < len(s) && (s[j] == '{' || s[j] == ' ') && strings.Contains("cvuHkrdbt", name) {
				// \v{s}, \c c: a letter accent.
			} else if !latexFormatting[name] {
				b.WriteByte(' ')
				b.WriteString(name)
			}
			// Skip the space that ends a command name ("\o ve" is "ove"
			// in TeX, but people write "\ss e" rarely; keep it simple).
			i = j - 1
		default:
			// \\, \%, \&, \_ and the like separate words.
			b.WriteByte(' ')
			i++
		}
	}
	return b.String()
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// foldSpecial are letters that have no decomposition but a plain form.
var foldSpecial = map[rune]string{
	'ß': "ss", 'æ': "ae", 'Æ': "ae", 'ø': "o", 'Ø': "o", 'ł': "l", 'Ł': "l", 'đ': "d", 'Đ': "d",
	'œ': "oe", 'Œ': "oe", 'ı': "i", 'þ': "th", 'ð': "d",
}

// fold lower-cases s and removes accents (NFKD, combining marks dropped):
// "Müller" and "MULLER" both fold to "muller".
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if f, ok := foldSpecial[r]; ok {
			b.WriteString(f)
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// isHyphen reports the characters that join the parts of a hyphenated word.
func isHyphen(r rune) bool { return r == '-' || r == '‐' || r == '‑' }

// tokenize splits text into words (runs of letters and digits, with
// apostrophes inside a word dropped: "don't" is "dont"). A hyphenated word
// ("self-supervised") gives its parts as consecutive words and, at the
// first part's position, the parts joined ("selfsupervised"), so it is
// found as written and by its parts (when joined is set: documents, not
// searches). Positions start at base. When stemmed
// is false the stem is the folded word (author names are not stemmed).
//
// Words are substrings of the folded text (no copy) unless an apostrophe
// was dropped from them, and stems come from stemCached: a paper's few
// hundred words cost a handful of allocations.
func tokenize(text string, base int32, stemmed, joined bool, out []token) ([]token, int32) {
	pos := eachToken(text, base, stemmed, joined, func(t token) { out = append(out, t) })
	return out, pos
}

// eachToken is tokenize handing each token to emit rather than to a
// slice: a caller that wants only the stems (Stems) makes no slice of
// tokens. It returns the position after the last word.
func eachToken(text string, base int32, stemmed, joined bool, emit func(token)) int32 {
	text = fold(detex(text))
	pos := base
	var partsBuf [8]string
	parts := partsBuf[:0]
	flush := func() {
		if len(parts) == 0 {
			return
		}
		if joined && len(parts) > 1 {
			j := strings.Join(parts, "")
			emit(token{fold: j, stem: stemOr(j, stemmed), pos: pos})
		}
		for _, p := range parts {
			emit(token{fold: p, stem: stemOr(p, stemmed), pos: pos})
			pos++
		}
		parts = parts[:0]
	}
	// The word being read is text[start:i], after buf (its part before a
	// dropped apostrophe, when dirty).
	start := -1
	var buf []byte
	dirty := false
	word := func(end int) string {
		if !dirty {
			return text[start:end]
		}
		buf = append(buf, text[start:end]...)
		w := string(buf)
		buf, dirty = buf[:0], false
		return w
	}
	prevHyphen := false
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		next := i + size
		switch {
		case isWordRune(r):
			if start < 0 {
				start = i
			}
			prevHyphen = false
		case (r == '\'' || r == '’') && start >= 0 && wordRuneAt(text, next):
			// inside a word: dropped
			buf = append(buf, text[start:i]...)
			dirty, start = true, next
		case isHyphen(r) && start >= 0 && wordRuneAt(text, next) && !prevHyphen:
			parts = append(parts, word(i))
			start = next
			prevHyphen = true
		default:
			if start >= 0 {
				parts = append(parts, word(i))
				start = -1
			}
			flush()
			prevHyphen = false
		}
		i = next
	}
	if start >= 0 {
		parts = append(parts, word(len(text)))
	}
	flush()
	return pos
}

// wordRuneAt reports whether a word rune starts at text[i].
func wordRuneAt(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	r := rune(text[i])
	if r >= utf8.RuneSelf {
		r, _ = utf8.DecodeRuneInString(text[i:])
	}
	return isWordRune(r)
}

func stemOr(w string, stemmed bool) string {
	if stemmed {
		return stemCached(w)
	}
	return w
}

// stemCache memoises stem for the words of searches being parsed (a Doc's
// words are stemmed once per vocab instead, see vocab). It is bounded
// (emptied when full) and safe for concurrent use.
var stemCache struct {
	sync.RWMutex
	m map[string]string
}

const maxStemCache = 1 << 17

// stemCached is stem, remembered.
func stemCached(w string) string {
	stemCache.RLock()
	s, ok := stemCache.m[w]
	stemCache.RUnlock()
	if ok {
		return s
	}
	s = stem(w)
	stemCache.Lock()
	if stemCache.m == nil || len(stemCache.m) >= maxStemCache {
		stemCache.m = make(map[string]string, 4096)
	}
	// Words are cut from whole texts: copy them, or the cache would keep
	// the texts alive (stem returns its argument when it changes nothing).
	k := strings.Clone(w)
	if s == w {
		s = k
	}
	stemCache.m[k] = s
	stemCache.Unlock()
	return s
}
