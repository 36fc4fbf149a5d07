package relevance

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Source is where a training example comes from; it sets the example's
// label and its weight (Params.SourceWeight).
type Source uint8

// The sources of examples. Own, Followed, More, Saved and Flow are
// positive; Less and Background are negative.
const (
	// Own is a paper by a followed person (one of Profile.People).
	Own Source = iota
	// Followed is a followed paper.
	Followed
	// More is a paper the user marked "more like this".
	More
	// Saved is a paper the user saved.
	Saved
	// Flow is a paper the user's other follows (categories, queries,
	// institutions) matched: what they chose to receive, weakly positive.
	// It gives a user who follows no person something to learn.
	Flow
	// Less is a paper the user marked "less like this".
	Less
	// Background is a paper from a sample of other papers: what the user
	// is assumed not to want, for contrast.
	Background
	numSources
)

// String is the source's name ("Own", "More", …).
func (s Source) String() string {
	if s < numSources {
		return [...]string{"Own", "Followed", "More", "Saved", "Flow", "Less", "Background"}[s]
	}
	return fmt.Sprintf("Source(%d)", uint8(s))
}

// Positive reports whether examples from s are positive.
func (s Source) Positive() bool { return s <= Flow }

// Example is one training example: a paper's vector and where it comes
// from. Train takes examples newest first: the model keeps the words of
// the newest 64 marked or followed papers, for Explain's "like … papers"
// and for the feedback's part of the score (Params.MoreLift).
type Example struct {
	Vector *Vector
	Source Source
}

// Person is a followed person.
type Person struct {
	// Name is the name reasons use ("by Ann One, whom you follow").
	Name string
	// OtherNames are further spellings; a paper's author is the person
	// when their NameKeys are equal to that of Name or of one of these.
	OtherNames []string
	// Self marks the person the user is (the host said so): their
	// co-authors are "your co-authors".
	Self bool
}

// Profile is what a user follows, as ranking uses it.
type Profile struct {
	People []Person
	// Institutions are followed institutions' ids, as Paper.Institutions.
	Institutions []string
	// Papers are followed papers' ids, as Paper.Cites names them.
	Papers []string
}

// Train returns the user's model: a linear SVM learned from examples (see
// the package comment), plus the follows' fixed weights: PersonBoost on
// each followed person's name, CoauthorBoost times 1 + ln n on each
// co-author of theirs (n: their papers together among the Own examples;
// the MaxCoauthors most frequent), InstitutionBoost on each followed
// institution and CiteBoost on each followed paper (a paper citing it);
// plus the feedback's bounded part (Params.MoreLift, LessPenalty): a
// paper like a More or Saved example rises by at most MoreLift, one like
// a Less example falls by at most LessPenalty, and a paper like none of
// them is scored as without them (unless SourceWeight makes them SVM
// examples too). A followed person's own name is never learned: every Own example has it,
// so it would stand for the whole difference and teach nothing else.
// Examples with a nil Vector are skipped; with no positive example the
// model holds the fixed weights only. The same Params, Profile and
// examples (in the same order) give the same model.
func Train(p Params, prof Profile, examples []Example) *Model {
	m := &Model{}
	// The followed persons' name features.
	persons := map[uint32]int{}
	for i, per := range prof.People {
		for _, n := range append([]string{per.Name}, per.OtherNames...) {
			if k := NameKey(n); k != "" {
				if _, ok := persons[hash(nsAuthor, k)]; !ok {
					persons[hash(nsAuthor, k)] = i
				}
			}
		}
		m.people = append(m.people, person{name: cut(per.Name, maxNameBytes), self: per.Self})
	}
	if len(m.people) > maxPeople {
		m.people = m.people[:maxPeople]
	}

	fixed := map[uint32]fixedWeight{}
	coauthors(p, persons, examples, fixed)
	topics := markedTopics(p, examples)
	for f, i := range persons {
		if i < len(m.people) {
			fixed[f] = fixedWeight{w: p.PersonBoost, kind: kindPerson, of: uint16(i)}
		}
	}
	for _, id := range limit(prof.Institutions, maxListItems) {
		if id != "" {
			fixed[hash(nsInstitution, id)] = fixedWeight{w: p.InstitutionBoost, kind: kindInstitution}
		}
	}
	for _, id := range limit(prof.Papers, maxListItems) {
		if id != "" {
			fixed[hash(nsCite, id)] = fixedWeight{w: p.CiteBoost, kind: kindCited}
		}
	}

	feats, weights, bias := learn(p, persons, examples)
	m.bias = bias
	m.set(feats, weights, fixed, topics)
	m.likes = signatures(examples)
	m.likeThreshold = p.LikeThreshold
	m.moreLift, m.lessPenalty, m.feedbackLike = max(p.MoreLift, 0), max(p.LessPenalty, 0), min(max(p.FeedbackLike, 0), 0.99)
	m.build()
	return m
}

// fixedWeight is a follow's weight on a feature.
type fixedWeight struct {
	w    float32
	kind kind
	of   uint16 // the person (kindPerson, kindCoauthor)
}

// Topic is what a user's marks do to one arXiv category: the papers whose
// first (primary) category it is, counted by source, and the weight the
// model puts on the category for them (MarkedTopics).
type Topic struct {
	// Category is the category as the papers list it ("cond-mat.mes-hall").
	Category string `json:"category"`
	// Less and More count the marked papers of the category ("less like
	// this"; "more like this" and saved); Follows the followed persons'
	// and followed papers' examples in it, which a "less" must outweigh.
	Less    int `json:"less"`
	More    int `json:"more"`
	Follows int `json:"follows"`
	// Share is how much of the whole effect the marks have reached (0 to
	// 1: a third at the third net mark of five, all from TopicMarks).
	Share float32 `json:"share"`
	// Weight is the weight on the category's feature: below 0 the
	// category's papers rank lower (fewer of them), above 0 higher, 0
	// when marks that would move it alone are cancelled (Held).
	Weight float32 `json:"weight"`
}

// Fewer says whether the marks move the category's papers down.
func (t Topic) Fewer() bool { return t.Weight < 0 }

// Held says whether the category's marks of one kind would move it on
// their own but the others (the opposite marks, for a "less" the follows'
// papers) cancel them: it does not move.
func (t Topic) Held() bool { return t.Weight == 0 }

// The effects of marks on a topic (Topic.Effect), as the API names them.
const (
	EffectFewer = "fewer"
	EffectMore  = "more"
	EffectNone  = "none"
)

// Effect is what the marks do to the category: EffectFewer (its papers
// rank lower), EffectMore (higher) or EffectNone (Held).
func (t Topic) Effect() string {
	switch {
	case t.Held():
		return EffectNone
	case t.Fewer():
		return EffectFewer
	}
	return EffectMore
}

// MarkedTopics returns what the marks among examples do to their topics
// (Params.LessTopic, MoreTopic), the categories they move, the strongest
// first (ties by category), then those they would move but for the
// others (Held, weight 0: a reader who marked five "less" learns why
// nothing moved): per primary category of the Less, More and
// Saved examples (a paper's first category), their net count n (less
// minus the others, and for a less minus the followed persons' and
// followed papers' examples there) puts −LessTopic × a share on the
// category, or MoreTopic × the same for a net of more and saved: nothing
// for one or two marks, all from TopicMarks on, in even steps between.
// Train puts each Weight on the category's feature (divided by
// CategoryWeight, its value in a vector); no reason names it (Explain
// names a category through no weight), so the settings page shows these.
func MarkedTopics(p Params, examples []Example) []Topic {
	if p.CategoryWeight <= 0 || p.TopicMarks <= 0 {
		return nil
	}
	// Per category: the marks less and more (with saved), and the papers
	// of the follows (a followed person's, a followed paper).
	counts := map[string]*Topic{}
	for _, e := range examples {
		if e.Vector == nil || len(e.Vector.paper.Categories) == 0 || e.Vector.paper.Categories[0] == "" {
			continue
		}
		cat := e.Vector.paper.Categories[0]
		c := counts[cat]
		if c == nil {
			c = &Topic{Category: cat}
			counts[cat] = c
		}
		switch e.Source {
		case Less:
			c.Less++
		case More, Saved:
			c.More++
		case Own, Followed:
			c.Follows++
		}
	}
	// One or two marks say the papers (the likeness of their words moves
	// their neighbours); a third in the category begins to say the topic.
	share := func(n int) float32 {
		if p.TopicMarks <= 2 {
			return float32(min(max(n, 0), 1))
		}
		return min(float32(max(n-2, 0))/float32(p.TopicMarks-2), 1)
	}
	var out []Topic
	for _, c := range counts {
		// "Less" of the topic the follows write in takes as many marks
		// again as they have papers there (it stays the words' affair);
		// the follows lift nothing themselves (their weights do).
		less, more := share(c.Less-c.More-c.Follows), share(c.More-c.Less)
		c.Weight = -max(p.LessTopic, 0)*less + max(p.MoreTopic, 0)*more
		c.Share = max(less, more)
		if c.Weight != 0 || share(c.Less) > 0 || share(c.More) > 0 {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b Topic) int {
		if c := cmp.Compare(abs32(b.Weight), abs32(a.Weight)); c != 0 {
			return c
		}
		return strings.Compare(a.Category, b.Category)
	})
	return out
}

func abs32(x float32) float32 { return max(x, -x) }

// markedTopics is MarkedTopics as Model.set takes it: each moved
// category's weight on its feature.
func markedTopics(p Params, examples []Example) map[uint32]float32 {
	topics := MarkedTopics(p, examples)
	if len(topics) == 0 {
		return nil
	}
	out := make(map[uint32]float32, len(topics))
	for _, t := range topics {
		if !t.Held() {
			out[hash(nsCategory, t.Category)] = t.Weight / p.CategoryWeight
		}
	}
	return out
}

// coauthors adds to fixed the co-authors of the followed persons: the
// other authors of Own examples, by number of papers together.
func coauthors(p Params, persons map[uint32]int, examples []Example, fixed map[uint32]fixedWeight) {
	type co struct {
		f  uint32
		n  int
		of int
	}
	var list []co
	at := map[uint32]int{}
	for _, e := range examples {
		if e.Vector == nil || e.Source != Own {
			continue
		}
		v := e.Vector
		of := -1
		for i, f := range v.feats {
			if j, ok := persons[f]; ok && v.ns[i] == nsAuthor {
				of = j
				break
			}
		}
		if of < 0 {
			of = 0 // an Own example that does not name its person: the first
		}
		for i, f := range v.feats {
			if v.ns[i] != nsAuthor {
				continue
			}
			if _, ok := persons[f]; ok {
				continue
			}
			if k, ok := at[f]; ok {
				list[k].n++
				continue
			}
			at[f] = len(list)
			list = append(list, co{f: f, n: 1, of: of})
		}
	}
	slices.SortStableFunc(list, func(a, b co) int { return b.n - a.n })
	if len(list) > p.MaxCoauthors {
		list = list[:max(p.MaxCoauthors, 0)]
	}
	for _, c := range list {
		fixed[c.f] = fixedWeight{w: p.CoauthorBoost * float32(1+math.Log(float64(c.n))), kind: kindCoauthor, of: uint16(c.of)}
	}
}

// learn trains the SVM on examples, leaving out the features in skip, and
// returns its MaxLearned largest weights (by feature, ascending) and its
// bias, quantised as MarshalBinary stores them.
func learn(p Params, skip map[uint32]int, examples []Example) ([]uint32, []float32, float32) {
	// The examples' features numbered densely, in order of appearance.
	type sparse struct {
		idx []int32
		val []float32
	}
	local := map[uint32]int32{}
	var feats []uint32
	var xs []sparse
	var ys []float64
	var cs []float64
	var srcs []Source
	var wPos, wNeg, wLess float64
	for _, e := range examples {
		if e.Vector == nil || e.Source >= numSources {
			continue
		}
		w := float64(p.SourceWeight[e.Source])
		if w <= 0 {
			continue
		}
		v := e.Vector
		x := sparse{idx: make([]int32, 0, len(v.feats)), val: make([]float32, 0, len(v.feats))}
		for i, f := range v.feats {
			if _, ok := skip[f]; ok {
				continue
			}
			if e.Source == Less && v.ns[i] == nsAuthor {
				// "Less like this" is about what the paper is about: who
				// wrote it is the follows' business ("not this person").
				continue
			}
			j, ok := local[f]
			if !ok {
				j = int32(len(feats))
				local[f] = j
				feats = append(feats, f)
			}
			x.idx = append(x.idx, j)
			x.val = append(x.val, v.vals[i])
		}
		xs = append(xs, x)
		if e.Source.Positive() {
			ys = append(ys, 1)
			wPos += w
		} else {
			ys = append(ys, -1)
			wNeg += w
			if e.Source == Less {
				wLess += w
			}
		}
		cs = append(cs, w)
		srcs = append(srcs, e.Source)
	}
	if wPos == 0 {
		return nil, nil, 0
	}
	// Balanced classes (as arxiv-sanity-lite's class_weight="balanced"):
	// the positives weigh as much in all as the background, whatever the
	// background sample's size. A "less" is the user's word, not a sample:
	// it weighs on the positives' scale (SourceWeight[Less] positives'
	// worth), outside the background's share.
	wBg := wNeg - wLess
	for i, src := range srcs {
		switch {
		case ys[i] > 0 || src == Less || wBg == 0:
			cs[i] *= p.C * (wPos + wBg) / (2 * wPos)
		default:
			cs[i] *= p.C * (wPos + wBg) / (2 * wBg)
		}
	}

	// Dual coordinate descent for the L2-regularised L2-loss SVM
	// (liblinear's solve_l2r_l1l2_svc, without shrinking): minimise
	// ½αᵀ(Q+D)α − Σα over α ≥ 0, D_ii = 1/(2C_i), with w = Σ α_i y_i x_i
	// kept up to date; the bias is a feature of value 1 on every example.
	const biasValue = 1.0
	w := make([]float64, len(feats))
	var b float64
	alpha := make([]float64, len(xs))
	qd := make([]float64, len(xs))
	diag := make([]float64, len(xs))
	for i, x := range xs {
		diag[i] = 0.5 / cs[i]
		qd[i] = diag[i] + biasValue*biasValue
		for _, v := range x.val {
			qd[i] += float64(v) * float64(v)
		}
	}
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(p.Seed, 0x7265_6c65_7661_6e63))
	for range max(p.Epochs, 1) {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		pgMax, pgMin := math.Inf(-1), math.Inf(1)
		for _, i := range order {
			x := xs[i]
			dot := b * biasValue
			for k, j := range x.idx {
				dot += w[j] * float64(x.val[k])
			}
			g := ys[i]*dot - 1 + alpha[i]*diag[i]
			pg := g
			if alpha[i] == 0 && g > 0 {
				pg = 0
			}
			pgMax, pgMin = max(pgMax, pg), min(pgMin, pg)
			if math.Abs(pg) < 1e-12 {
				continue
			}
			old := alpha[i]
			alpha[i] = max(old-g/qd[i], 0)
			d := (alpha[i] - old) * ys[i]
			for k, j := range x.idx {
				w[j] += d * float64(x.val[k])
			}
			b += d * biasValue
		}
		if pgMax-pgMin <= p.Tolerance {
			break
		}
	}

	// The MaxLearned largest weights, by feature.
	keep := make([]int, 0, len(w))
	for j, x := range w {
		if x != 0 {
			keep = append(keep, j)
		}
	}
	// A total order (features are distinct), so an unstable sort gives
	// the stable one's order; and with no more than MaxLearned weights
	// none is cut, so only the order by feature below matters. (The
	// stable sort's merges were a tenth of a feedback click's training.)
	if len(keep) > p.MaxLearned {
		slices.SortFunc(keep, func(a, c int) int {
			x, y := math.Abs(w[a]), math.Abs(w[c])
			switch {
			case x > y:
				return -1
			case x < y:
				return 1
			}
			return int(int64(feats[a]) - int64(feats[c]))
		})
		keep = keep[:max(p.MaxLearned, 0)]
	}
	slices.SortFunc(keep, func(a, c int) int { return int(int64(feats[a]) - int64(feats[c])) })
	outF := make([]uint32, len(keep))
	outW := make([]float32, len(keep))
	for i, j := range keep {
		outF[i], outW[i] = feats[j], float32(w[j])
	}
	return outF, outW, float32(b)
}

// signatures returns the strongest words of the marked and followed
// examples (the newest maxLikes: examples come newest first), for
// "like 3 papers you marked" and the feedback's part of the score.
func signatures(examples []Example) []like {
	var out []like
	for _, e := range examples {
		if e.Vector == nil || len(out) == maxLikes {
			continue
		}
		var kind kind
		switch e.Source {
		case More, Saved:
			kind = kindMarked
		case Followed:
			kind = kindFollowedPaper
		case Less:
			kind = kindLess
		default:
			continue
		}
		v := e.Vector
		idx := make([]int, 0, len(v.feats))
		for i := range v.feats {
			if v.ns[i] == nsWord {
				idx = append(idx, i)
			}
		}
		// A total order (a vector's features are distinct): unstable
		// is stable here.
		slices.SortFunc(idx, func(a, b int) int {
			switch {
			case v.vals[a] > v.vals[b]:
				return -1
			case v.vals[a] < v.vals[b]:
				return 1
			}
			return int(int64(v.feats[a]) - int64(v.feats[b]))
		})
		if len(idx) > likeWords {
			idx = idx[:likeWords]
		}
		l := like{id: cut(v.paper.ID, maxIDBytes), kind: kind}
		for _, i := range idx {
			l.feats = append(l.feats, v.feats[i])
			l.vals = append(l.vals, quantiseUnit(v.vals[i]))
		}
		out = append(out, l)
	}
	return out
}
