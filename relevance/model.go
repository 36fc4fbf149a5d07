package relevance

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// kind is what a model's feature stands for, for Explain.
type kind uint8

const (
	kindLearned       kind = iota // learned only
	kindPerson                    // a followed person's name
	kindCoauthor                  // a co-author of a followed person
	kindInstitution               // a followed institution
	kindCited                     // a followed paper (cited)
	kindMarked                    // a like: a paper marked more or saved
	kindFollowedPaper             // a like: a followed paper
	kindLess                      // a like: a paper marked less
	numKinds
)

// The limits of a model (Train keeps to them; UnmarshalBinary refuses
// more).
const (
	maxModelFeatures = 1 << 16
	maxPeople        = 1000
	maxLikes         = 64
	likeWords        = 12
	maxNameBytes     = 1200
	maxIDBytes       = 200
)

// Model is one user's ranking model: a weight per feature (learned, plus
// the follows' fixed weights), a bias, the followed persons' names and the
// strongest words of the papers the user marked or follows, for Explain
// and for the feedback's bounded part of the score.
// Train makes one; MarshalBinary and UnmarshalBinary store it. A Model is
// read-only after Train or UnmarshalBinary and safe for concurrent use;
// the zero Model scores every paper 0 and explains nothing.
type Model struct {
	bias  float32
	scale float32 // weight i is q[i] × scale
	feats []uint32
	q     []int16
	kinds []kind
	of    []uint16 // the person of a kindPerson or kindCoauthor feature
	// people are the followed persons, by index.
	people []person
	likes  []like
	// like is the cosine at and above which a paper is like a like.
	likeThreshold float32
	// The feedback's part of the score (Params.MoreLift, LessPenalty,
	// FeedbackLike).
	moreLift, lessPenalty, feedbackLike float32

	// The words of the likes marked more, saved or less, for Score:
	// postWords are the distinct words, sorted, and word i's posting
	// list is posts[postAt[i]:postAt[i+1]] (a like it is in and its value
	// there, in the likes' order); postIndex is an open-addressing table
	// of them (1 + i at or after (f × bucketMul1) >> postShift for word
	// i, f; 0 empty; at most a quarter full), where most of a paper's
	// words find an empty slot on the first probe. likeNorm is each
	// like's length and likeSign +1 (more, saved), -1 (less) or 0 (a
	// followed paper, or feedback off).
	postWords []uint32
	postAt    []uint16
	posts     []postEntry
	postIndex []uint16
	postShift uint8
	likeNorm  []float32
	likeSign  []int8

	// tbl is Score's table of the features' weights, made from the above
	// the first time it is read (table): a model that only a batch's
	// lexicon reads (Scorer: a digest batch's) never makes it.
	tbl *table
	// likeFeats are the likes' words, sorted by feature (then position),
	// each with its position among the likes' words (like × likeWords +
	// word), and likeNorms each like's squared norm (summed as cosine
	// sums it): made with the posting lists, so that Explain reads a paper's
	// values of every like's words in one pass over its features.
	likeFeats []likeFeat
	likeNorms []float64
	// fixedBits has bit f % 512 set for every feature f of a follow
	// (kinds other than kindLearned: persons, co-authors, institutions,
	// cited papers): Explain skips, without a search of feats, the
	// authors, institutions and citations of a paper whose bit is clear
	// (in make bench's best-first digests, half the searches).
	fixedBits [8]uint64
}

// postEntry is an entry of Score's posting lists: the word is in like
// like, of value x.
type postEntry struct {
	like uint8
	x    float32
}

type likeFeat struct {
	f  uint32
	at uint16
}

type bucket [2]slot

// table is a model's table of its features' weights: a power of two of
// buckets of two slots, at most half full, each feature in one of its two
// buckets (cuckoo hashing), so that a lookup reads both and compares all
// four slots without a branch. It is made once, on first use.
type table struct {
	once    sync.Once
	buckets []bucket
	shift   uint8
	// plain: no table filled (see tableGrowth); Score reads each weight
	// by binary search in feats.
	plain bool
}

// table returns m's table, made the first time (Model.build leaves it to
// be made: a third of decoding a model, in make bench's best-first
// digests, which read the weights through a Scorer). A zero Model's is
// empty.
func (m *Model) table() *table {
	t := m.tbl
	if t == nil {
		return &noTable
	}
	t.once.Do(func() {
		if len(m.feats) == 0 {
			return
		}
		first := smallestTable(len(m.feats))
		for b := first; b <= first+tableGrowth; b++ {
			if t.fill(m, b) {
				return
			}
		}
		t.buckets, t.plain = nil, true
	})
	return t
}

// noTable is a zero Model's table: empty, never filled.
var noTable table

// The multipliers of a feature's two buckets (the table's top bits of
// the products): feature ids are hashes already.
const (
	bucketMul1 = 0x9E3779B1
	bucketMul2 = 0x85EBCA77
)

// maxKicks bounds the evictions of one insertion into Score's table
// before build tries a larger one; tableGrowth bounds how many times
// larger than the smallest the table may grow (a power of two): features
// that collide in both buckets at every size (hashes of hostile texts,
// say) make the model read its weights by binary search instead
// (table.plain), never a huge table.
const (
	maxKicks    = 500
	tableGrowth = 4
)

// smallestTable is the smallest table build tries, as a power of two of
// buckets: a test makes it too small to fill, to reach the plain reading.
var smallestTable = func(n int) int { return max(bits.Len(uint(n)), 3) } // 2^b > n buckets

type slot struct {
	f uint32
	w float32
}

type person struct {
	name string
	self bool
}

// like is the strongest words (feature, value × 255) of a paper the user
// marked or follows.
type like struct {
	id    string
	kind  kind
	feats []uint32
	vals  []uint8
}

// Version is the model format: its features' hashing and encoding. A
// stored model of another version does not decode (ErrVersion): train it
// again.
const Version = 2

// Len is the number of weighted features of m.
func (m *Model) Len() int { return len(m.feats) }

// set fills m's features from the learned weights (by feature, ascending),
// the follows' fixed weights and the marks' topics' weights (markedTopics:
// added to the category's learned weight), quantised to 16 bits.
func (m *Model) set(feats []uint32, weights []float32, fixed map[uint32]fixedWeight, topics map[uint32]float32) {
	type entry struct {
		f    uint32
		w    float32
		kind kind
		of   uint16
	}
	es := make([]entry, 0, len(feats)+len(fixed))
	for i, f := range feats {
		es = append(es, entry{f: f, w: weights[i]})
	}
	for f, fw := range fixed {
		if i, ok := slices.BinarySearch(feats, f); ok {
			es[i].w += fw.w
			es[i].kind, es[i].of = fw.kind, fw.of
			continue
		}
		es = append(es, entry{f: f, w: fw.w, kind: fw.kind, of: fw.of})
	}
	for f, w := range topics {
		i, ok := slices.BinarySearch(feats, f)
		if !ok {
			i = len(es)
			es = append(es, entry{f: f})
		}
		es[i].w += w
	}
	slices.SortFunc(es, func(a, b entry) int { return int(int64(a.f) - int64(b.f)) })
	if len(es) > maxModelFeatures {
		es = es[:maxModelFeatures]
	}
	var top float64
	for _, e := range es {
		top = max(top, math.Abs(float64(e.w)))
	}
	m.scale = 1
	if top > 0 {
		m.scale = float32(top / math.MaxInt16)
	}
	m.feats = make([]uint32, len(es))
	m.q = make([]int16, len(es))
	m.kinds = make([]kind, len(es))
	m.of = make([]uint16, len(es))
	for i, e := range es {
		m.feats[i] = e.f
		m.q[i] = int16(math.Round(float64(e.w / m.scale)))
		m.kinds[i], m.of[i] = e.kind, e.of
	}
}

// build makes what Score and Explain read besides m's features: the
// posting lists of its feedback likes' words, Explain's sorted likes'
// words and its filter of follows' features, and an empty Score's table,
// which table fills on first use: the smallest that holds the features
// with buckets at most half full (in practice; else a larger one), the
// same table for the same features.
func (m *Model) build() {
	m.buildFeedback()
	m.likeFeats, m.likeNorms = nil, make([]float64, len(m.likes))
	for i, l := range m.likes {
		var norm float64
		for j, f := range l.feats {
			x := float64(l.vals[j]) / 255
			norm += x * x
			m.likeFeats = append(m.likeFeats, likeFeat{f: f, at: uint16(i*likeWords + j)})
		}
		m.likeNorms[i] = norm
	}
	slices.SortFunc(m.likeFeats, func(a, b likeFeat) int {
		if c := cmp.Compare(a.f, b.f); c != 0 {
			return c
		}
		return cmp.Compare(a.at, b.at)
	})
	m.fixedBits = [8]uint64{}
	for i, k := range m.kinds {
		if k != kindLearned {
			m.fixedBits[m.feats[i]>>6&7] |= 1 << (m.feats[i] & 63)
		}
	}
	m.tbl = &table{} // made on first use: table
}

// buildFeedback makes Score's posting lists of the words of m's likes
// marked more, saved or less (none when MoreLift and LessPenalty are 0)
// and their index, each like's length and sign.
func (m *Model) buildFeedback() {
	type post struct {
		f    uint32
		like uint8
		x    float32
	}
	var ps []post
	m.likeNorm = make([]float32, len(m.likes))
	m.likeSign = make([]int8, len(m.likes))
	if m.moreLift > 0 || m.lessPenalty > 0 {
		for i, l := range m.likes {
			switch {
			case l.kind == kindMarked && m.moreLift > 0:
				m.likeSign[i] = 1
			case l.kind == kindLess && m.lessPenalty > 0:
				m.likeSign[i] = -1
			default:
				continue
			}
			var norm float64
			for j, f := range l.feats {
				x := float32(l.vals[j]) / 255
				norm += float64(x) * float64(x)
				ps = append(ps, post{f: f, like: uint8(i), x: x})
			}
			m.likeNorm[i] = float32(math.Sqrt(norm))
		}
	}
	slices.SortStableFunc(ps, func(a, b post) int { return cmp.Compare(a.f, b.f) })
	m.postWords, m.postAt, m.posts, m.postIndex = nil, nil, nil, nil
	if len(ps) == 0 {
		return
	}
	m.posts = make([]postEntry, len(ps))
	for i, p := range ps {
		m.posts[i] = postEntry{like: p.like, x: p.x}
		if i == 0 || p.f != ps[i-1].f {
			m.postWords = append(m.postWords, p.f)
			m.postAt = append(m.postAt, uint16(i))
		}
	}
	m.postAt = append(m.postAt, uint16(len(ps)))
	b := max(bits.Len(uint(4*len(m.postWords)-1)), 4) // 2^b >= 4 slots a word
	m.postIndex = make([]uint16, 1<<b)
	m.postShift = uint8(32 - b)
	mask := uint32(len(m.postIndex) - 1)
	for i, f := range m.postWords {
		h := (f * bucketMul1) >> m.postShift
		for m.postIndex[h] != 0 {
			h = (h + 1) & mask
		}
		m.postIndex[h] = uint16(i + 1)
	}
}

// fill puts every feature's weight in a new table of 2^b buckets; false
// when an insertion's evictions do not settle.
func (t *table) fill(m *Model, b int) bool {
	t.buckets = make([]bucket, 1<<b)
	t.shift = uint8(32 - b)
	for i, f := range m.feats {
		if !t.insert(slot{f: f, w: float32(m.q[i]) * m.scale}) {
			return false
		}
	}
	return true
}

// insert puts s in a free slot of one of its buckets, evicting, when both
// are full, a slot of one of them in turn and inserting its feature
// again, at most maxKicks times.
func (t *table) insert(s slot) bool {
	for kick := range maxKicks {
		h1, h2 := (s.f*bucketMul1)>>t.shift, (s.f*bucketMul2)>>t.shift
		for _, h := range [2]uint32{h1, h2} {
			for j := range t.buckets[h] {
				if t.buckets[h][j].f == 0 {
					t.buckets[h][j] = s
					return true
				}
			}
		}
		h := h1
		if kick&1 == 1 {
			h = h2
		}
		j := kick >> 1 & 1
		s, t.buckets[h][j] = t.buckets[h][j], s
	}
	return false
}

// is is a mask of f == g: all ones or zero.
func is(f, g uint32) uint32 {
	var x uint32
	if f == g {
		x = 1
	}
	return -x
}

// Score is m's score of the paper of v: the bias plus, over v's features,
// the model's weight times the feature's value; plus, when the user
// marked papers, MoreLift times the sum over the papers marked more or
// saved of how far v's likeness to each goes beyond FeedbackLike (scaled
// to reach 1 at a likeness of 1; the sum capped at 1), minus LessPenalty
// times the same over the papers marked less. Higher ranks first; only
// the order of one model's scores means anything. It allocates nothing
// and costs one lookup of two buckets per feature of v, without a
// branch; plus, when the user marked papers, one probe (rarely more) per
// feature of an index of the marked papers' words.
func (m *Model) Score(v *Vector) float32 {
	s := m.bias
	switch t := m.table(); {
	case t.plain:
		for i, f := range v.feats {
			s += float32(m.plainWeight(f) * v.vals[i])
		}
	case len(t.buckets) > 0:
		bs, shift := t.buckets, t.shift
		vals := v.vals[:len(v.feats)]
		for i, f := range v.feats {
			// f's weight: the four slots of its two buckets compared and
			// combined without a branch (f is in one slot at most; in
			// none, the weight is 0, and 0 × value leaves s as it was).
			b1, b2 := &bs[(f*bucketMul1)>>shift], &bs[(f*bucketMul2)>>shift]
			w := math.Float32bits(b1[0].w)&is(b1[0].f, f) | math.Float32bits(b1[1].w)&is(b1[1].f, f) |
				math.Float32bits(b2[0].w)&is(b2[0].f, f) | math.Float32bits(b2[1].w)&is(b2[1].f, f)
			s += float32(math.Float32frombits(w) * vals[i])
		}
	}
	if len(m.postWords) == 0 {
		return s
	}
	return m.feedback(v, s)
}

// feedback is score s of the paper of v plus the feedback's part (see
// Score): v's dot product with each marked like, each of v's words
// looked up in the index of the likes' words (each like's sum taken in
// the order of v's features).
func (m *Model) feedback(v *Vector, s float32) float32 {
	var dot [maxLikes]float32
	marked := false
	posts, at, words, index, shift := m.posts, m.postAt, m.postWords, m.postIndex, m.postShift
	mask := uint32(len(index) - 1)
	vals, ns := v.vals[:len(v.feats)], v.ns[:len(v.feats)]
	for i, f := range v.feats {
		h := (f * bucketMul1) >> shift
		k := int(index[h]) - 1
		for k >= 0 && words[k] != f {
			h = (h + 1) & mask
			k = int(index[h]) - 1
		}
		if k < 0 || ns[i] != nsWord {
			continue
		}
		marked = true
		for p := at[k]; p < at[k+1]; p++ {
			dot[posts[p].like] += posts[p].x * vals[i]
		}
	}
	if !marked {
		return s
	}
	var more, less float32
	itself := false // v's paper is one the user marked less
	for i, sign := range m.likeSign {
		if sign == 0 || m.likeNorm[i] == 0 {
			continue
		}
		c := max(dot[i]/m.likeNorm[i]-m.feedbackLike, 0) / (1 - m.feedbackLike)
		if sign > 0 {
			more += c
		} else {
			less += c
			// A paper shares its words with its own mark: the ids are
			// compared only then.
			itself = itself || dot[i] > 0 && m.likes[i].id == v.paper.ID && v.paper.ID != ""
		}
	}
	s = s + m.moreLift*min(more, 1) - m.lessPenalty*min(less, 1)
	if itself {
		s -= MarkedLessDrop
	}
	return s
}

// MarkedLessDrop is how far the score of a paper the user marked "less"
// itself falls (beyond LessPenalty, which moves the papers like it): far
// enough that it ranks below every paper they did not mark so (a score
// moves a few units at most), whatever its authors and follows give it.
// Among such papers the order is their scores'.
const MarkedLessDrop = 1000

// plainWeight is m's weight of feature f, 0 when m lacks it, read by
// binary search (a plain model's Score and words).
func (m *Model) plainWeight(f uint32) float32 {
	w, _, _, _ := m.weight(f)
	return w
}

// mayBeFixed reports whether f may be a follow's feature (fixedBits):
// false, it is surely not.
func (m *Model) mayBeFixed(f uint32) bool { return m.fixedBits[f>>6&7]&(1<<(f&63)) != 0 }

// weight returns m's weight of feature f, its kind and its person.
func (m *Model) weight(f uint32) (float32, kind, uint16, bool) {
	i, ok := slices.BinarySearch(m.feats, f)
	if !ok {
		return 0, 0, 0, false
	}
	return float32(m.q[i]) * m.scale, m.kinds[i], m.of[i], true
}

func quantiseUnit(x float32) uint8 {
	return uint8(math.Round(float64(min(max(x, 0), 1)) * 255))
}
