package ranking

// ReadThroughLexicon says whether b scored userID's papers through its
// lexicon (relevance.Scorer) rather than the model's table.
func ReadThroughLexicon(b *Batch, userID int64) bool { return b.dense[userID] }

// LexiconOf is the lexicon b scored through (nil: none) and whether it
// holds paper id.
func LexiconOf(b *Batch, id int64) (any, bool) {
	_, ok := b.at[id]
	return b.lex, ok
}
