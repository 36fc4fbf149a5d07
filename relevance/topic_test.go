package relevance

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// realAbstracts reads testdata/condmat-abstracts.jsonl: real arXiv records
// (title, categories, abstract) from arXiv's browse test data, every
// cond-mat one of its 1,132 full records and a third of the others (see
// testdata/README.md).
func realAbstracts(t *testing.T) []*Paper {
	t.Helper()
	f, err := os.Open("testdata/condmat-abstracts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*Paper
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			ID, Title, Abstract string
			Categories          []string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, &Paper{ID: r.ID, Title: r.Title, Abstract: r.Abstract, Categories: r.Categories})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// condMatReader is a reader who follows cond-mat (a flow): every other
// cond-mat record is of their flow, the rest are the candidates; the other
// archives' records are the background.
type condMatReader struct {
	flow  map[string][]*Vector // by primary category
	base  []Example
	cands []*Vector
}

func newCondMatReader(t *testing.T) condMatReader {
	ps := realAbstracts(t)
	c := NewCorpus(DefaultParams())
	c.Add(ps...)
	r := condMatReader{flow: map[string][]*Vector{}}
	k := 0
	for _, p := range ps {
		v := c.Vector(p)
		switch {
		case !strings.HasPrefix(p.Categories[0], "cond-mat"):
			r.base = append(r.base, Example{Vector: v, Source: Background})
		case k%2 == 0:
			r.flow[p.Categories[0]] = append(r.flow[p.Categories[0]], v)
			r.base = append(r.base, Example{Vector: v, Source: Flow})
			k++
		default:
			r.cands = append(r.cands, v)
			k++
		}
	}
	return r
}

// inTop counts the candidates of primary category cat among m's first n.
func (r condMatReader) inTop(m *Model, cat string, n int) int {
	x := 0
	for _, id := range ranked(m, r.cands)[:n] {
		i := slices.IndexFunc(r.cands, func(v *Vector) bool { return v.paper.ID == id })
		if r.cands[i].paper.Categories[0] == cat {
			x++
		}
	}
	return x
}

// TestTopicMarksMoveASubcategoryOnRealAbstracts: a reader of cond-mat who
// marks five papers of one subcategory "less" sees that subcategory leave
// the top of their ranking, and marking five "more" brings more of it in,
// on real abstracts, where the words of five papers alone move nothing
// (LessTopic, MoreTopic 0: the counts stay as they were).
func TestTopicMarksMoveASubcategoryOnRealAbstracts(t *testing.T) {
	r := newCondMatReader(t)
	p := DefaultParams()
	words := p
	words.LessTopic, words.MoreTopic = 0, 0
	cold := Train(p, Profile{}, r.base)
	tried := 0
	for _, cat := range []string{"cond-mat.mes-hall", "cond-mat.str-el", "cond-mat.supr-con", "cond-mat.mtrl-sci"} {
		marks := r.flow[cat][:5]
		was10, was20 := r.inTop(cold, cat, 10), r.inTop(cold, cat, 20)
		if was20 < 2 {
			continue
		}
		tried++
		less := Train(p, Profile{}, slices.Concat(examples(Less, marks), r.base))
		if n10, n20 := r.inTop(less, cat, 10), r.inTop(less, cat, 20); n10 != 0 || n20 > was20/2 {
			t.Errorf("%s: after five marked less, %d in the top 10 and %d in the top 20 (before: %d and %d)", cat, n10, n20, was10, was20)
		}
		more := Train(p, Profile{}, slices.Concat(examples(More, marks), r.base))
		if n20 := r.inTop(more, cat, 20); n20 <= was20 {
			t.Errorf("%s: after five marked more, %d in the top 20 (before: %d)", cat, n20, was20)
		}
		// The words alone: the likeness of five papers' words reaches too
		// few of their subcategory's papers to move it.
		if n20 := r.inTop(Train(words, Profile{}, slices.Concat(examples(Less, marks), r.base)), cat, 20); n20 < was20-1 {
			t.Logf("%s: the words alone moved the subcategory (%d → %d in the top 20)", cat, was20, n20)
		}
	}
	if tried < 2 {
		t.Fatalf("%d subcategories with two or more papers in the cold top 20: the test shows nothing", tried)
	}
}

// TestTopicMarksCountNetAndFromTheThird: a category's topic weight counts
// its marks net (less minus more and saved, less also minus the followed
// persons' papers there), begins at the third and is whole at TopicMarks,
// and moves a paper of that category by exactly LessTopic or MoreTopic.
func TestTopicMarksCountNetAndFromTheThird(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	bg := vectors(c, w.background(60))
	own := vectors(c, []*Paper{w.paper("lensing", ann), w.paper("lensing", ann), w.paper("lensing", ann)})
	pulsars := vectors(c, []*Paper{w.paper("pulsar"), w.paper("pulsar"), w.paper("pulsar"), w.paper("pulsar"), w.paper("pulsar"), w.paper("pulsar")})
	lensings := vectors(c, []*Paper{w.paper("lensing"), w.paper("lensing"), w.paper("lensing"), w.paper("lensing"), w.paper("lensing")})
	// A paper of the category alone: no words, so no likeness to a mark.
	probe := c.Vector(&Paper{ID: "probe", Categories: []string{"astro-ph.pulsar"}})
	p := DefaultParams()
	prof := Profile{People: []Person{{Name: ann}}}
	base := slices.Concat(examples(Own, own), examples(Background, bg))
	cold := Train(p, prof, base).Score(probe)
	moved := func(ex ...[]Example) float32 {
		return Train(p, prof, slices.Concat(append(ex, base)...)).Score(probe) - cold
	}
	const eps = 1e-3
	near := func(got, want float32) bool { return got > want-eps && got < want+eps }
	for _, tc := range []struct {
		name string
		ex   [][]Example
		want float32
	}{
		{"two less", [][]Example{examples(Less, pulsars[:2])}, 0},
		{"three less", [][]Example{examples(Less, pulsars[:3])}, -p.LessTopic / 3},
		{"five less", [][]Example{examples(Less, pulsars[:5])}, -p.LessTopic},
		{"six less", [][]Example{examples(Less, pulsars[:6])}, -p.LessTopic},
		{"five less, one more", [][]Example{examples(Less, pulsars[:5]), examples(More, pulsars[5:6])}, -p.LessTopic * 2 / 3},
		{"five less, two saved", [][]Example{examples(Less, pulsars[:5]), examples(Saved, pulsars[5:6]), examples(Saved, pulsars[4:5])}, -p.LessTopic / 3},
		{"five more", [][]Example{examples(More, pulsars[:5])}, p.MoreTopic},
		{"five less of another category", [][]Example{examples(Less, lensings)}, 0},
	} {
		if got := moved(tc.ex...); !near(got, tc.want) {
			t.Errorf("%s: the category's paper moved by %v, want %v", tc.name, got, tc.want)
		}
	}
	// Less of the followed person's category: each of their papers there
	// takes a mark back (three own lensing papers, five less: two left,
	// nothing moves).
	lprobe := c.Vector(&Paper{ID: "lprobe", Categories: []string{"astro-ph.lensing"}})
	base0 := Train(p, prof, base).Score(lprobe)
	if d := Train(p, prof, slices.Concat(examples(Less, lensings), base)).Score(lprobe) - base0; !near(d, 0) {
		t.Errorf("five less in the followed person's category (three of their papers): moved by %v, want 0", d)
	}
}

// TestMarkedTopicsSayWhatTrainApplies: MarkedTopics names the categories
// the marks move, with their counts, share and weight, the strongest
// first, and each weight is what Train puts on the category (a paper of
// it alone moves by exactly that); a category whose "less" the follows
// outweigh comes last, held (weight 0, and it does not move); two marks
// are not listed.
func TestMarkedTopicsSayWhatTrainApplies(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	bg := vectors(c, w.background(60))
	own := vectors(c, []*Paper{w.paper("lensing", ann), w.paper("lensing", ann), w.paper("lensing", ann)})
	mk := func(topic string, n int) []*Vector {
		var ps []*Paper
		for range n {
			ps = append(ps, w.paper(topic))
		}
		return vectors(c, ps)
	}
	p := DefaultParams()
	prof := Profile{People: []Person{{Name: ann}}}
	base := slices.Concat(examples(Own, own), examples(Background, bg))
	ex := slices.Concat(
		examples(Less, mk("pulsar", 6)), examples(More, mk("pulsar", 1)), // net 5 less: whole
		examples(More, mk("solar", 3)),   // 3 more: a third
		examples(Less, mk("lensing", 4)), // 4 less, 3 of the person's: net 1, nothing
		examples(Less, mk("dust", 2)),    // two marks: nothing
		base)
	got := MarkedTopics(p, ex)
	want := []Topic{
		{Category: "astro-ph.pulsar", Less: 6, More: 1, Share: 1, Weight: -p.LessTopic},
		{Category: "astro-ph.solar", More: 3, Share: 1.0 / 3, Weight: p.MoreTopic / 3},
		{Category: "astro-ph.lensing", Less: 4, Follows: 3},
	}
	if len(got) != len(want) {
		t.Fatalf("MarkedTopics: %+v, want %+v", got, want)
	}
	for i := range want {
		g, wt := got[i], want[i]
		if g.Category != wt.Category || g.Less != wt.Less || g.More != wt.More || g.Follows != wt.Follows ||
			math.Abs(float64(g.Share-wt.Share)) > 1e-6 || math.Abs(float64(g.Weight-wt.Weight)) > 1e-6 {
			t.Errorf("topic %d: %+v, want %+v", i, g, wt)
		}
	}
	if !got[0].Fewer() || got[1].Fewer() || got[2].Fewer() || got[0].Held() || got[1].Held() || !got[2].Held() {
		t.Errorf("Fewer: %v, %v, %v; want true, false, false; Held: %v, %v, %v, want false, false, true",
			got[0].Fewer(), got[1].Fewer(), got[2].Fewer(), got[0].Held(), got[1].Held(), got[2].Held())
	}
	if e := []string{got[0].Effect(), got[1].Effect(), got[2].Effect()}; !slices.Equal(e, []string{EffectFewer, EffectMore, EffectNone}) {
		t.Errorf("Effect: %q, want fewer, more, none", e)
	}
	// What Train applies is what MarkedTopics says.
	cold, trained := Train(p, prof, base), Train(p, prof, ex)
	for _, tp := range got {
		probe := c.Vector(&Paper{ID: "probe-" + tp.Category, Categories: []string{tp.Category}})
		if d := trained.Score(probe) - cold.Score(probe); math.Abs(float64(d-tp.Weight)) > 1e-3 {
			t.Errorf("%s: a paper of it alone moved by %v; MarkedTopics says %v", tp.Category, d, tp.Weight)
		}
	}
}
