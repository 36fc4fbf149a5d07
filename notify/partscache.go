package notify

import (
	"slices"

	"followfeed/internal/gencache"
)

// partsCacheSize is how many papers' renderings a Digester keeps between
// its batches, per generation (gencache keeps two): a day's digests show
// that day's papers, some hundreds to a thousand or two, in every batch
// of the run. Two generations of ~2 KB renderings are some 16 MiB at
// most.
const partsCacheSize = 4096

// partsCache keeps papers' renderings (paperParts) across the batches of
// a Digester, so that a digest run renders each paper once, not once per
// batch of 50 digests: a run's batches show the same day's papers, and
// the digests whose shown papers differ most from their neighbours' (best
// first, or with read papers and mutes left out) rendered the most.
//
// A rendering is used only for a paper whose every rendered field equals
// what it was rendered from (sameRendering): a paper corrected or
// replaced since is rendered again, so the cache never shows a stale
// title. Safe for concurrent use (a Digester's send jobs run at once);
// the renderings never change once made (paperParts).
type partsCache struct {
	c *gencache.Cache[int64, cachedParts]
}

// cachedParts is a rendering and the paper it was rendered from.
type cachedParts struct {
	from  DigestPaper
	parts *paperParts
}

// newPartsCache returns a cache of size entries per generation.
func newPartsCache(size int) *partsCache {
	return &partsCache{c: gencache.New[int64, cachedParts](size)}
}

// get returns p's rendering when the cache holds one made from the same
// fields (nil otherwise).
func (c *partsCache) get(p DigestPaper) *paperParts {
	if e, ok := c.c.Get(p.ID); ok && sameRendering(e.from, p) {
		return e.parts
	}
	return nil
}

// put keeps pp as p's rendering.
func (c *partsCache) put(p DigestPaper, pp *paperParts) {
	// Only what the rendering reads is kept: the per-user fields would
	// hold a user's links and reasons in memory for nothing.
	from := DigestPaper{ID: p.ID, Title: p.Title, Authors: p.Authors, AbsURL: p.AbsURL, PDFURL: p.PDFURL,
		Categories: p.Categories, Published: p.Published}
	c.c.Put(p.ID, cachedParts{from: from, parts: pp})
}

// sameRendering says whether a and b render alike: every field
// newPaperParts reads is equal.
func sameRendering(a, b DigestPaper) bool {
	return a.Title == b.Title && a.AbsURL == b.AbsURL && a.PDFURL == b.PDFURL &&
		a.Published.Equal(b.Published) && slices.Equal(a.Authors, b.Authors) &&
		slices.Equal(a.Categories, b.Categories)
}
