package ranking

import (
	"sync"

	"followfeed/relevance"
)

// A digest run ranks its users in batches of some 50, and their
// candidates are mostly the same day's papers: each batch made a lexicon
// of its papers' features (relevance.Lexicon: a radix sort of some
// 100,000 (feature, occurrence) pairs), a quarter of Rank's work in make
// bench's best-first digests. lexicons keeps the last lexicon made, and a
// batch whose papers it holds, each with the vector the batch has (the
// same pointer: the positions are that vector's), is scored through it
// as it is; otherwise a new one is made of the batch's papers and, when
// it held at least half of them (a batch of the same run), of the kept
// one's others (up to maxLexiconPapers), so that the next batches of the
// run find theirs in it; a batch of other papers (an instant alert's, or
// after a new corpus) gets a lexicon of its own papers, as before. The
// scores are the same whichever lexicon holds a paper: a Scorer's are
// Score's, to the bit.

// maxLexiconPapers bounds the papers a kept lexicon grows to: a few
// days' announcements of arXiv, some 3 MB of positions and features.
const maxLexiconPapers = 4096

// lexicons is the kept lexicon; safe for concurrent use.
type lexicons struct {
	mu  sync.Mutex
	lex *relevance.Lexicon
	at  map[int64]int // paper id → index in lex; read-only once made
}

// of returns a lexicon holding the vectors of ids (vecs[id]; a paper
// without one, nil) and each paper's index in it: the kept one when it
// holds them all, else a new one, kept from then on.
func (c *lexicons) of(ids []int64, vecs map[int64]*relevance.Vector) (*relevance.Lexicon, map[int64]int) {
	c.mu.Lock()
	lex, at := c.lex, c.at
	c.mu.Unlock()
	held := 0
	if lex != nil {
		held = holds(lex, at, ids, vecs)
	}
	if held == len(ids) {
		return lex, at
	}
	if 2*held < len(ids) {
		at = nil // another run's papers (an instant alert's, a new corpus): the batch's alone
	}
	// The batch's papers first, then the kept lexicon's others while
	// they fit (their vectors as it holds them: a stale one is only
	// found stale by the batch that meets it, which makes a new lexicon).
	vs := make([]*relevance.Vector, 0, len(ids)+len(at))
	next := make(map[int64]int, cap(vs))
	for _, id := range ids {
		if _, dup := next[id]; !dup {
			next[id] = len(vs)
			vs = append(vs, vecs[id])
		}
	}
	for id, i := range at {
		if len(vs) >= maxLexiconPapers {
			break
		}
		if _, dup := next[id]; !dup {
			next[id] = len(vs)
			vs = append(vs, lex.Vector(i))
		}
	}
	made := relevance.NewLexicon(vs)
	c.mu.Lock()
	c.lex, c.at = made, next
	c.mu.Unlock()
	return made, next
}

// holds counts the papers of ids that lex holds with the vector vecs
// gives them (a paper without a vector: none).
func holds(lex *relevance.Lexicon, at map[int64]int, ids []int64, vecs map[int64]*relevance.Vector) int {
	n := 0
	for _, id := range ids {
		if i, ok := at[id]; ok && lex.Vector(i) == vecs[id] {
			n++
		}
	}
	return n
}
