package search

// Stems appends to dst the words of text as a Doc indexes a title or an
// abstract, in order: LaTeX rewritten to plain text (detex), lower-cased
// and accent-folded, split into words (a hyphenated word gives its joined
// form, then its parts), each Porter-stemmed. These are exactly the words
// a title or abstract search term is compared with, so another package
// that weighs a paper's words (package relevance) counts the words
// searches see. The strings are shared with a bounded process-wide stem
// cache; dst is returned grown.
func Stems(text string, dst []string) []string {
	eachToken(text, 0, true, true, func(t token) { dst = append(dst, t.stem) })
	return dst
}

// Fold returns text as searches compare author names: LaTeX accents and
// formatting removed (M\"uller is Muller), lower-cased, accents folded
// (Müller and MULLER are both muller), everything else kept as it was
// (spaces, punctuation). It is what an author: term and a Doc's author
// words are built from.
func Fold(text string) string { return fold(detex(text)) }
