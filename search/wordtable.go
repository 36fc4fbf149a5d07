package search

import "hash/maphash"

// A wordTable numbers distinct words 0, 1, 2, … in the order they are
// added, without a pointer per word: the words' bytes lie end to end in
// one arena, ends[id] is where word id ends there (it starts where word
// id−1 ends), and an open-addressing hash table (linear probing, at most
// half full, doubled when it would be more) holds in each slot the word's
// hash (high 32 bits) and its id plus one (low 32 bits; 0 is an empty
// slot). A table of any size is a handful of pointer-free arrays, which
// the garbage collector does not scan, where a map[string]uint32 with a
// string per word is two pointers per word to follow on every cycle. It
// is not safe for concurrent use (vocab locks it).
type wordTable struct {
	seed maphash.Seed
	// hashMask is ANDed to every hash: all ones, but in the tests that
	// make words collide (in slot and tag) on purpose.
	hashMask uint64
	arena    []byte
	ends     []uint32
	slots    []uint64
}

func newWordTable(capacity int) wordTable {
	n := 16
	for n < 2*capacity {
		n *= 2
	}
	return wordTable{seed: maphash.MakeSeed(), hashMask: ^uint64(0), slots: make([]uint64, n)}
}

// len returns the number of words in t.
func (t *wordTable) len() int { return len(t.ends) }

// word returns the bytes of word id (part of the arena: not to be
// modified, and only valid to read while t is).
func (t *wordTable) word(id uint32) []byte {
	start := uint32(0)
	if id > 0 {
		start = t.ends[id-1]
	}
	return t.arena[start:t.ends[id]]
}

// hash returns w's hash in t; its high 32 bits are what a slot keeps.
func (t *wordTable) hash(w string) uint64 { return maphash.String(t.seed, w) & t.hashMask }

// find returns the slot of w (hash h): the one holding it, or the empty
// slot where it would go.
func (t *wordTable) find(w string, h uint64) (slot int, found bool) {
	mask := len(t.slots) - 1
	tag := h >> 32
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return i, false
		}
		if s>>32 == tag && string(t.word(uint32(s)-1)) == w {
			return i, true
		}
	}
}

// lookup returns the id of w, if t has it.
func (t *wordTable) lookup(w string) (uint32, bool) {
	i, ok := t.find(w, t.hash(w))
	if !ok {
		return 0, false
	}
	return uint32(t.slots[i]) - 1, true
}

// add returns the id of w, adding w (a copy of its bytes) when t lacks
// it, and whether it did.
func (t *wordTable) add(w string) (uint32, bool) {
	h := t.hash(w)
	i, ok := t.find(w, h)
	if ok {
		return uint32(t.slots[i]) - 1, false
	}
	if 2*(len(t.ends)+1) > len(t.slots) {
		t.grow()
		i, _ = t.find(w, h)
	}
	id := uint32(len(t.ends))
	t.arena = append(t.arena, w...)
	t.ends = append(t.ends, uint32(len(t.arena)))
	t.slots[i] = h>>32<<32 | uint64(id+1)
	return id, true
}

// grow doubles the slots, placing every word again. A slot keeps only
// the high half of a hash, so a word's start slot is hashed again (the
// words themselves do not move).
func (t *wordTable) grow() {
	slots := make([]uint64, 2*len(t.slots))
	mask := len(slots) - 1
	for id := range t.ends {
		h := maphash.Bytes(t.seed, t.word(uint32(id))) & t.hashMask // = t.hash of the word
		i := int(h) & mask
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = h>>32<<32 | uint64(id+1)
	}
	t.slots = slots
}
