package relevance

import (
	"math/bits"
	"slices"
	"sync"
)

// Scoring a batch: a digest batch scores some 250 papers for each of 50
// users, and the papers are mostly the same day's. Score looks each
// feature of each paper up in the model's table, a random read of memory
// per feature; a Lexicon instead numbers the distinct features of the
// batch's papers once, and a Scorer looks each of one model's features up
// in them once (Use: a directory by top bits), after which a paper's
// score reads a dense array. The scores are Score's, to the bit: the same
// weights, summed in the same order; so are the reasons of the papers
// shown (Scorer.Explain, its words' weights read from the same array).

// Lexicon is the distinct features of a set of vectors, ascending, with
// each vector's features as positions in them. NewLexicon makes one; it is
// read-only and safe for concurrent use.
type Lexicon struct {
	feats []uint32
	vecs  []*Vector
	// Vector i's features are at positions at[off[i]:off[i+1]] of feats,
	// parallel to its own.
	off []int32
	at  []uint32
	// dir is a directory of feats by their top bits: the features whose
	// top bits (f >> dirShift) are d are feats[dir[d]:dir[d+1]], some two
	// (feature ids are hashes, spread evenly): Scorer.Use finds a model's
	// feature there in a step or two of a sequential read.
	dir      []int32
	dirShift uint8
}

// NewLexicon returns the lexicon of vs (a nil vector has no features).
// It sorts the vectors' features once, in time linear in their sum.
func NewLexicon(vs []*Vector) *Lexicon {
	l := &Lexicon{vecs: slices.Clone(vs), off: make([]int32, len(vs)+1)}
	n := 0
	for i, v := range vs {
		l.off[i] = int32(n)
		if v != nil {
			n += len(v.feats)
		}
	}
	l.off[len(vs)] = int32(n)
	// Each feature with the index of its occurrence: sorted by feature,
	// equal features are adjacent, and the occurrence says where its
	// position goes.
	buf := scratch.Get().(*[]uint64)
	defer func() {
		if cap(*buf) <= maxScratch {
			scratch.Put(buf)
		}
	}()
	if cap(*buf) < 2*n {
		*buf = make([]uint64, 2*n)
	}
	keys, tmp := (*buf)[:0:n], (*buf)[n:2*n]
	for _, v := range vs {
		if v == nil {
			continue
		}
		for _, f := range v.feats {
			keys = append(keys, uint64(f)<<32|uint64(len(keys)))
		}
	}
	keys = sortByFeature(keys, tmp)
	l.at = make([]uint32, n)
	l.feats = make([]uint32, 0, n/2)
	for _, k := range keys {
		if f := uint32(k >> 32); len(l.feats) == 0 || l.feats[len(l.feats)-1] != f {
			l.feats = append(l.feats, f)
		}
		l.at[uint32(k)] = uint32(len(l.feats) - 1)
	}
	b := max(bits.Len(uint(len(l.feats)/2)), 1) // 2^b buckets: some two features each
	l.dir = make([]int32, 1<<b+1)
	l.dirShift = uint8(32 - b)
	k := 0
	for d := range l.dir {
		for k < len(l.feats) && int(l.feats[k]>>l.dirShift) < d {
			k++
		}
		l.dir[d] = int32(k)
	}
	return l
}

// Vector returns the vector at index i of the vectors l was made of.
func (l *Lexicon) Vector(i int) *Vector { return l.vecs[i] }

// position returns feature f's position in l.feats, or -1.
func (l *Lexicon) position(f uint32) int {
	d := f >> l.dirShift
	for p := l.dir[d]; p < l.dir[d+1]; p++ {
		if g := l.feats[p]; g >= f {
			if g == f {
				return int(p)
			}
			break
		}
	}
	return -1
}

// scratch holds NewLexicon's sort buffers between batches (a digest
// batch's are some 100,000 keys: 1.6 MB to allocate and clear each time).
// Buffers beyond maxScratch keys (an odd batch of huge papers: 32 MB)
// are left to the collector rather than kept.
var scratch = sync.Pool{New: func() any { return new([]uint64) }}

const maxScratch = 4 << 20

// sortByFeature sorts keys by their top 32 bits (a feature; the order of
// equal ones is kept), using tmp (as long as keys) and returning the
// sorted slice, which is one of the two: a radix sort of three passes of
// 11 bits, where a comparison sort's mispredicted branches made the
// lexicon cost more than the scoring it spares (300 papers of 100
// features: 2.5 ms against some 0.3 ms).
func sortByFeature(keys, tmp []uint64) []uint64 {
	const bits, buckets, passes = 11, 1 << 11, 3
	// Every pass's counts in one read of the keys.
	var at [passes][buckets]int
	for _, k := range keys {
		at[0][k>>32&(buckets-1)]++
		at[1][k>>(32+bits)&(buckets-1)]++
		at[2][k>>(32+2*bits)&(buckets-1)]++
	}
	for p := range passes {
		sum := 0
		for d, c := range at[p] {
			at[p][d] = sum
			sum += c
		}
		shift := 32 + p*bits
		for _, k := range keys {
			d := k >> shift & (buckets - 1)
			tmp[at[p][d]] = k
			at[p][d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// LexiconPays says whether making a Lexicon of vectors with features
// features in all (their Len summed) pays for itself when models score
// them scored features in all (each model's papers' Len summed): making
// it costs some three times what Score reads for a paper, and Scorer
// spares most of that read, so it pays when some four models share each
// paper (a digest batch's users and the day's papers), not for one
// user's papers.
func LexiconPays(features, scored int) bool { return scored >= 4*features }

// Pays says whether scoring papers with features features in all (the sum
// of their Len) by m through a Scorer of l costs less than m.Score:
// Scorer.Use looks each feature of m up in l's directory (a short
// sequential read), where Score reads two buckets of m's table (two
// random reads of memory) for each of the papers' features, counted here
// as twice a look's cost (an estimate, not measured apart).
func (l *Lexicon) Pays(m *Model, features int) bool {
	return len(m.feats) <= 2*features
}

// Scorer scores a Lexicon's vectors by one model at a time, as Score
// would: Use puts the model's weights of the lexicon's features (0 for
// those it lacks) in a dense array, which Score reads. It reuses that
// array from model to model; it is not safe for concurrent use.
type Scorer struct {
	l *Lexicon
	m *Model
	w []float32
	// set are the positions of w that the model in use set (the rest
	// are 0): the next Use zeroes them rather than all of w.
	set []uint32
}

// Scorer returns a Scorer of l's vectors, with no model in use (every
// vector scores 0).
func (l *Lexicon) Scorer() *Scorer {
	return &Scorer{l: l, m: &Model{}, w: make([]float32, len(l.feats))}
}

// Use makes m the model s scores by: one look in the lexicon's directory
// per feature of m. (A merge of the two sorted lists, which read every
// feature of the lexicon for each user, was a quarter of a best-first
// digest batch's ranking in make bench's profile at scale S; the
// directory's look-ups, a third of that.)
func (s *Scorer) Use(m *Model) {
	s.clear()
	s.m = m
	q, scale := m.q, m.scale
	for i, f := range m.feats {
		if p := s.l.position(f); p >= 0 {
			s.w[p] = float32(q[i]) * scale // as Score's table holds it
			s.set = append(s.set, uint32(p))
		}
	}
}

// clear zeroes the weights the model in use set (the rest are 0 already).
func (s *Scorer) clear() {
	for _, p := range s.set {
		s.w[p] = 0
	}
	s.set = s.set[:0]
}

// Weights are a Scorer's weights of one model (Scorer.Weights): the model
// in use again without looking its features up in the lexicon again.
type Weights struct {
	l   *Lexicon
	m   *Model
	set []uint32
	w   []float32
}

// Weights returns the weights the model in use put in s's array.
func (s *Scorer) Weights() Weights {
	w := Weights{l: s.l, m: s.m, set: slices.Clone(s.set), w: make([]float32, len(s.set))}
	for i, p := range s.set {
		w.w[i] = s.w[p]
	}
	return w
}

// UseWeights is Use of the model whose weights w are: the same scores and
// reasons, for a copy of the weights rather than a look in the lexicon
// per feature when a Scorer of the same lexicon gave them (weights of
// another lexicon's positions are looked up again, by Use).
func (s *Scorer) UseWeights(w Weights) {
	if w.l != s.l {
		if w.m == nil {
			w.m = &Model{}
		}
		s.Use(w.m)
		return
	}
	s.clear()
	s.set = append(s.set, w.set...)
	s.m = w.m
	for i, p := range w.set {
		s.w[p] = w.w[i]
	}
}

// Score is the model's Score of the lexicon's vector i, to the bit (0
// for a nil vector).
func (s *Scorer) Score(i int) float32 {
	v := s.l.vecs[i]
	if v == nil {
		return 0
	}
	sum := s.m.bias
	at := s.l.at[s.l.off[i]:s.l.off[i+1]]
	vals := v.vals[:len(at)]
	w := s.w
	for k, p := range at {
		sum += float32(w[p] * vals[k]) // Score's sum, in Score's order
	}
	if len(s.m.postWords) == 0 {
		return sum
	}
	return s.m.feedback(v, sum)
}

// Explain is the model's Explain of the lexicon's vector i (nil for a nil
// vector), to the bit: the words reason's parts read the model's weights
// from the dense array Use made, through the vector's positions in the
// lexicon, rather than from the model's table (two random reads of
// memory per word, a third of a best-first digest's explaining in make
// bench's profile at scale S).
func (s *Scorer) Explain(i int) []Reason { return s.AppendExplain(nil, i) }

// AppendExplain appends Explain(i)'s reasons to dst and returns it: the
// reasons of the papers a user is shown in one array (one allocation for
// a digest's rather than some three per paper).
func (s *Scorer) AppendExplain(dst []Reason, i int) []Reason {
	v := s.l.vecs[i]
	if v == nil {
		return dst
	}
	return s.m.explain(dst, v, func(v *Vector) topWords {
		var t topWords // as Model.topWords, the weights from s.w
		least := anyPart
		at := s.l.at[s.l.off[i]:s.l.off[i+1]]
		vals, nameable, w := v.vals[:len(at)], v.nameable[:len(at)], s.w
		for k, p := range at {
			if !nameable[k] {
				continue
			}
			if x := float32(w[p] * vals[k]); x >= least {
				least = t.offer(part{v.feats[k], uint32(k), x}, least)
			}
		}
		return t
	})
}
