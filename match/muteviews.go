package match

import (
	"hash/maphash"
	"sync"

	"github.com/jackc/pgx/v5"

	"followfeed/internal/gencache"
	"followfeed/paper"
	"followfeed/search"
)

// What the mutes judge a paper by is derived from its stored row alone:
// its keys (authors' ids, categories and whether each is a cross-list)
// for researcher and category mutes, and its words (a search.Doc of its
// title, abstract, author names and categories) for search mutes. A
// digest batch's users share most of their window's papers, and the
// next batches share them again, so the process keeps that view of the
// papers it judged, under the paper's id and row version
// (catalog.QueueVersions): a cached view is used only while the row is the
// one it was made from, and a paper's row is read (with its abstract) and
// its words tokenised once per version, not once per user and batch.
// Measured before the cache, at scale S (BENCHMARKS.md): tokenising the
// candidates' text was 18% of a digest run's CPU with mutes, reading
// their rows 7.5%.

// maxMuteViews bounds the views kept: two generations of this many
// (views), some 3 KiB each with their words, a few days of arXiv's
// announcements.
const maxMuteViews = 8192

// muteView is one paper version as the mutes see it.
type muteView struct {
	version uint32
	keys    []paper.Key
	// keyHashes are the keys' viewKeyHash, keyBits the set of them: keep
	// skips the keys, or the paper, no mute can have.
	keyHashes []uint64
	keyBits   keySet

	// The words, made on first use by a search mute (text holds what
	// they are made of until then, and is dropped once they are).
	once sync.Once
	text *paper.Paper
	doc  *search.Doc
}

// newMuteView returns p's view at version.
func newMuteView(p *paper.Paper, version uint32) *muteView {
	v := &muteView{version: version, keys: p.Keys(), text: textOf(p)}
	v.keyHashes = make([]uint64, len(v.keys))
	for i, k := range v.keys {
		v.keyHashes[i] = viewKeyHash(k)
		v.keyBits.add(v.keyHashes[i])
	}
	return v
}

// keySeed is the process's seed of hashKey.
var keySeed = maphash.MakeSeed()

// hashKey is a paper key's hash, for keySet.
func hashKey(k string) uint64 { return maphash.String(keySeed, k) }

// crossMark marks the hash of a key a paper has as a cross-list
// (viewKeyHash): a category mute hides only those.
const crossMark = 0x9e3779b97f4a7c15

// viewKeyHash is the hash a view carries for its paper's key k: hashKey,
// marked (crossMark) when k is a cross-list. A category mute is indexed
// under its key's marked hash (userMutes.index), so the keys of the
// papers listed in a muted category as their own, which are most of a
// category follow's papers, miss the user's keySet and cost no map probe
// (they did, each, and found a rule that does not apply: a fifth of the
// key mutes' judging at scale M); a person's keys are never cross-lists.
func viewKeyHash(k paper.Key) uint64 {
	h := hashKey(k.Key)
	if k.Cross {
		h ^= crossMark
	}
	return h
}

// keySet is a set of keys' hashes as bits (a one-hash Bloom filter of
// 256 bits): a key whose bit is not set is not in the set. A user's mutes
// hold some 15 keys (a muted person's every id): with 64 bits a fifth of
// a paper's keys passed and cost a map probe, with 256 one in twenty.
type keySet [4]uint64

// add puts the key of hash h in s.
func (s *keySet) add(h uint64) { s[h>>6&3] |= 1 << (h & 63) }

// has reports whether the key of hash h may be in s.
func (s *keySet) has(h uint64) bool { return s[h>>6&3]&(1<<(h&63)) != 0 }

// meets reports whether s and o may share a key.
func (s *keySet) meets(o *keySet) bool {
	return s[0]&o[0]|s[1]&o[1]|s[2]&o[2]|s[3]&o[3] != 0
}

// textOf is the part of p its words are made of (paper.Paper.Doc).
func textOf(p *paper.Paper) *paper.Paper {
	return &paper.Paper{Title: p.Title, Abstract: p.Abstract, Authors: p.Authors,
		PrimaryCategory: p.PrimaryCategory, Categories: p.Categories}
}

// words returns the view's search document, made once.
func (v *muteView) words() *search.Doc {
	v.once.Do(func() {
		v.doc = v.text.Doc()
		v.text = nil
	})
	return v.doc
}

// views is a bounded cache of muteViews by paper id (a gencache.Cache): a view
// is found under its id and version only.
type views struct {
	c *gencache.Cache[int64, *muteView]
}

func newViews(max int) *views { return &views{c: gencache.New[int64, *muteView](max)} }

// muteViews are the process's views, per database (perDatabase).
var muteViews = newPerDatabase(func() *views { return newViews(maxMuteViews) })

// viewsOf returns the views of the database tx reads.
func viewsOf(tx pgx.Tx) *views { return muteViews.get(tx) }

// get returns the view of paper id at version, if kept.
func (c *views) get(id int64, version uint32) *muteView {
	if v, ok := c.c.Get(id); ok && v.version == version {
		return v
	}
	return nil
}

// put keeps v as paper id's view.
func (c *views) put(id int64, v *muteView) { c.c.Put(id, v) }
