package relevance

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
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
	// posts[i] are the likes a word is in (slot.post, slot.npost index
	// them), postVal its value there; likeNorm is each like's length and
	// likeSign +1 (more, saved), -1 (less) or 0 (a followed paper).
	posts    []uint8
	postVal  []float32
	likeNorm []float32
	likeSign []int8

	// Score's open-addressing table of the features (built from the
	// above): a power of two of slots, at most half full.
	slots []slot
	shift uint8
}

type slot struct {
	f     uint32
	w     float32
	post  uint16 // the feature's first entry in posts
	npost uint16 // its number of entries
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

// set fills m's features from the learned weights (by feature, ascending)
// and the follows' fixed weights, quantised to 16 bits.
func (m *Model) set(feats []uint32, weights []float32, fixed map[uint32]fixedWeight) {
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

// build makes Score's table from m's features and the words of its
// feedback likes.
func (m *Model) build() {
	// The feedback likes' words, by word: posting lists.
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
	m.posts, m.postVal = make([]uint8, len(ps)), make([]float32, len(ps))
	for i, p := range ps {
		m.posts[i], m.postVal[i] = p.like, p.x
	}
	// Words of likes the weights lack get a slot of weight 0.
	extra := 0
	for i := 0; i < len(ps); i++ {
		if i == 0 || ps[i].f != ps[i-1].f {
			if _, ok := slices.BinarySearch(m.feats, ps[i].f); !ok {
				extra++
			}
		}
	}
	n := len(m.feats) + extra
	if n == 0 {
		m.slots = nil
		return
	}
	b := bits.Len(uint(2*n - 1)) // 2^b >= 2n
	b = max(b, 4)
	m.slots = make([]slot, 1<<b)
	m.shift = uint8(32 - b)
	mask := uint32(len(m.slots) - 1)
	find := func(f uint32) *slot {
		h := (f * 0x9E3779B1) >> m.shift
		for m.slots[h].f != 0 && m.slots[h].f != f {
			h = (h + 1) & mask
		}
		return &m.slots[h]
	}
	for i, f := range m.feats {
		*find(f) = slot{f: f, w: float32(m.q[i]) * m.scale}
	}
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].f == ps[i].f {
			j++
		}
		sl := find(ps[i].f)
		sl.f, sl.post, sl.npost = ps[i].f, uint16(i), uint16(j-i)
		i = j
	}
}

// Score is m's score of the paper of v: the bias plus, over v's features,
// the model's weight times the feature's value; plus, when the user
// marked papers, MoreLift times the sum over the papers marked more or
// saved of how far v's likeness to each goes beyond FeedbackLike (scaled
// to reach 1 at a likeness of 1; the sum capped at 1), minus LessPenalty
// times the same over the papers marked less. Higher ranks first; only the order of one model's scores means
// anything. It allocates nothing and costs one table probe (rarely more)
// per feature of v, plus one step per marked paper that shares a word
// with v.
func (m *Model) Score(v *Vector) float32 {
	s := m.bias
	slots := m.slots
	if len(slots) == 0 {
		return s
	}
	var dot [maxLikes]float32
	marked := false
	mask := uint32(len(slots) - 1)
	shift := m.shift
	vals := v.vals[:len(v.feats)]
	for i, f := range v.feats {
		h := (f * 0x9E3779B1) >> shift
		for {
			sl := slots[h&mask]
			if sl.f == f {
				s += sl.w * vals[i]
				if sl.npost > 0 && v.ns[i] == nsWord {
					marked = true
					for k := int(sl.post); k < int(sl.post)+int(sl.npost); k++ {
						dot[m.posts[k]] += m.postVal[k] * vals[i]
					}
				}
				break
			}
			if sl.f == 0 {
				break
			}
			h++
		}
	}
	if !marked {
		return s
	}
	var more, less float32
	for i, sign := range m.likeSign {
		if sign == 0 || m.likeNorm[i] == 0 {
			continue
		}
		c := max(dot[i]/m.likeNorm[i]-m.feedbackLike, 0) / (1 - m.feedbackLike)
		if sign > 0 {
			more += c
		} else {
			less += c
		}
	}
	return s + m.moreLift*min(more, 1) - m.lessPenalty*min(less, 1)
}

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
