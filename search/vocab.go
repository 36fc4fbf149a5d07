package search

import (
	"sync"
	"sync/atomic"
)

// A vocab numbers words (folded words, their stems, category keys): a Doc
// holds its fields as sorted word numbers (ids) of one vocab, so building
// a Doc is one string lookup per token and MatchBatch indexes the batch by
// id in slices instead of maps keyed by strings.
//
// The process's vocab (current) is bounded by being replaced, never
// emptied: once it holds maxVocab words the next Doc starts a fresh one,
// and the old one lives on as long as Docs made with it do. A Doc keeps
// the vocab its ids belong to; ids of two vocabs are never compared:
// Match looks a search's words up in the Doc's own vocab; MatchBatch
// first rewrites the Docs of a batch that straddles a replacement into
// the vocab most of them have (through the words' strings), so a
// replacement changes no answer; a Set remembers its words' ids with the
// vocab they belong to, and looks up again those that vocab lacked
// (Set.idsIn). The words are a wordTable (no pointer per word: a vocab
// lives as long as the process). A vocab is safe for concurrent use.
type vocab struct {
	mu    sync.RWMutex
	words wordTable
	// stems[id] is the id of the stem of word id plus one; 0 when not
	// known yet (the word was only seen unstemmed).
	stems []uint32
	// n is the number of words, readable without the lock: a search
	// term whose words v lacked is not looked up again while n is what
	// it was before that lookup (node.match).
	n atomic.Int64
}

// maxVocab is the number of words after which the process's vocab is
// replaced by a new one (some 10 MB of words and hash table at this size;
// author names and numbers keep adding words, so a long-running process
// does fill it).
var maxVocab = 1 << 19

var current atomic.Pointer[vocab]

func newVocab() *vocab {
	return &vocab{words: newWordTable(1 << 14)}
}

// currentVocab returns the vocab new Docs use, replacing it when full.
func currentVocab() *vocab {
	v := current.Load()
	if v != nil && v.size() < maxVocab {
		return v
	}
	nv := newVocab()
	if current.CompareAndSwap(v, nv) {
		return nv
	}
	return current.Load()
}

func (v *vocab) size() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.words.len()
}

// lookup returns the id of w, if v has it.
func (v *vocab) lookup(w string) (uint32, bool) {
	v.mu.RLock()
	id, ok := v.words.lookup(w)
	v.mu.RUnlock()
	return id, ok
}

// lookupAll appends the ids of words to out, or returns nil when v lacks
// one of them.
func (v *vocab) lookupAll(words []string, out []uint32) []uint32 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, w := range words {
		id, ok := v.words.lookup(w)
		if !ok {
			return nil
		}
		out = append(out, id)
	}
	return out
}

// word returns the word of id (a copy: it keeps nothing of v alive).
func (v *vocab) word(id uint32) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return string(v.words.word(id))
}

// intern returns the id of w, adding it (v's size bound is currentVocab's
// business: a vocab itself takes every word it is given).
func (v *vocab) intern(w string) uint32 {
	if id, ok := v.lookup(w); ok {
		return id
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.add(w)
}

// add is intern with v locked.
func (v *vocab) add(w string) uint32 {
	id, added := v.words.add(w)
	if added {
		v.stems = append(v.stems, 0)
		v.n.Add(1)
	}
	return id
}

// stemAll appends to ids the id of each token's stem (stemmed true) or
// folded word (false), adding those v lacks: one read lock for the words
// v has, the few others added after.
func (v *vocab) stemAll(toks []token, stemmed bool, ids []uint32) []uint32 {
	start := len(ids)
	missing := false
	v.mu.RLock()
	for _, t := range toks {
		id, ok := v.words.lookup(t.fold)
		if ok && stemmed {
			id = v.stems[id] - 1 // ^0 when not known
		} else if !ok {
			id = ^uint32(0)
		}
		missing = missing || id == ^uint32(0)
		ids = append(ids, id)
	}
	v.mu.RUnlock()
	if missing {
		for i, t := range toks {
			if ids[start+i] != ^uint32(0) {
				continue
			}
			if stemmed {
				ids[start+i] = v.stemmed(t.fold)
			} else {
				ids[start+i] = v.intern(t.fold)
			}
		}
	}
	return ids
}

// stemmed returns the id of the stem of the folded word w (stem(w)),
// adding both.
func (v *vocab) stemmed(w string) uint32 {
	v.mu.RLock()
	id, ok := v.words.lookup(w)
	var s uint32
	if ok {
		s = v.stems[id]
	}
	v.mu.RUnlock()
	if s != 0 {
		return s - 1
	}
	st := stem(w)
	v.mu.Lock()
	defer v.mu.Unlock()
	id = v.add(w)
	sid := v.add(st)
	v.stems[id] = sid + 1
	return sid
}
