package ranking

// ReadThroughLexicon says whether b scored userID's papers through its
// lexicon (relevance.Scorer) rather than the model's table.
func ReadThroughLexicon(b *Batch, userID int64) bool { return b.dense[userID] }
