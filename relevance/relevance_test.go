package relevance

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"followfeed/search"
)

// topics are the words of a few subjects; a paper's title draws from one.
var topics = map[string][]string{
	"lensing":   {"weak", "lensing", "shear", "cluster", "mass", "maps", "dark", "halo", "cosmic", "convergence"},
	"pulsar":    {"pulsar", "timing", "neutron", "star", "radio", "glitch", "magnetar", "spin", "millisecond", "binary"},
	"exoplanet": {"exoplanet", "transit", "atmosphere", "hot", "jupiter", "radial", "velocity", "host", "orbit", "planetary"},
	"solar":     {"solar", "flare", "coronal", "loop", "sunspot", "magnetic", "chromosphere", "wind", "eruption", "prominence"},
	"dust":      {"interstellar", "dust", "grain", "extinction", "polarisation", "infrared", "emission", "molecular", "cloud", "ice"},
	"galaxy":    {"galaxy", "merger", "stellar", "population", "bulge", "disc", "kinematics", "redshift", "survey", "morphology"},
}

var generic = []string{"a", "study", "of", "new", "observations", "the", "on", "and", "model", "evidence"}

// world makes papers: titles of a topic's words, authors given.
type world struct {
	rng *rand.Rand
	n   int
}

func newWorld() *world { return &world{rng: rand.New(rand.NewPCG(7, 7))} }

func (w *world) paper(topic string, authors ...string) *Paper {
	w.n++
	words := topics[topic]
	var t []string
	for range 6 {
		t = append(t, words[w.rng.IntN(len(words))])
	}
	t = append(t, generic[w.rng.IntN(len(generic))], generic[w.rng.IntN(len(generic))])
	w.rng.Shuffle(len(t), func(i, j int) { t[i], t[j] = t[j], t[i] })
	if len(authors) == 0 {
		authors = []string{w.stranger(), w.stranger()}
	}
	return &Paper{ID: fmt.Sprintf("2401.%05d", w.n), Title: strings.Join(t, " "), Authors: authors, Categories: []string{"astro-ph." + topic}}
}

// abstract is n words of a Zipf-distributed vocabulary of 20,000: a real
// abstract's 100-odd distinct words, most of them rare.
func (w *world) abstract(n int) string {
	z := rand.NewZipf(rand.New(rand.NewPCG(w.rng.Uint64(), 1)), 1.1, 1, 20000)
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "w%d ", z.Uint64())
	}
	return b.String()
}

func (w *world) stranger() string {
	return fmt.Sprintf("%c. Stranger%d", 'A'+rune(w.rng.IntN(26)), w.rng.IntN(100000))
}

// background is n papers of every topic by strangers.
func (w *world) background(n int) []*Paper {
	var out []*Paper
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range topics {
			if !yield(k) {
				return
			}
		}
	})
	for i := range n {
		out = append(out, w.paper(names[i%len(names)]))
	}
	return out
}

func vectors(c *Corpus, ps []*Paper) []*Vector {
	c.Add(ps...)
	out := make([]*Vector, len(ps))
	for i, p := range ps {
		out[i] = c.Vector(p)
	}
	return out
}

func examples(src Source, vs []*Vector) []Example {
	var out []Example
	for _, v := range vs {
		out = append(out, Example{Vector: v, Source: src})
	}
	return out
}

// ranked returns the candidates' ids by m's score, best first.
func ranked(m *Model, cands []*Vector) []string {
	order := slices.Clone(cands)
	slices.SortStableFunc(order, func(a, b *Vector) int {
		sa, sb := m.Score(a), m.Score(b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	ids := make([]string, len(order))
	for i, v := range order {
		ids[i] = v.paper.ID
	}
	return ids
}

func idsOf(ps []*Paper) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func countIn(ids []string, set []string) int {
	n := 0
	for _, id := range ids {
		if slices.Contains(set, id) {
			n++
		}
	}
	return n
}

const ann = "Ann One"

// TestLessMovesATopicOutOfTheTop: a user follows Ann One, who writes about
// lensing and pulsars; the user marks five pulsar papers "less": the next
// pulsar papers leave the top of the ranking, below every lensing one.
func TestLessMovesATopicOutOfTheTop(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	var own []*Paper
	for range 4 {
		own = append(own, w.paper("lensing", ann, w.stranger()), w.paper("pulsar", ann, w.stranger()))
	}
	bg := w.background(120)
	var lensing, pulsar, other []*Paper
	for range 5 {
		lensing = append(lensing, w.paper("lensing"))
		pulsar = append(pulsar, w.paper("pulsar"))
	}
	for _, tp := range []string{"exoplanet", "solar", "dust", "galaxy"} {
		for range 5 {
			other = append(other, w.paper(tp))
		}
	}
	var marked []*Paper
	for range 5 {
		marked = append(marked, w.paper("pulsar"))
	}
	ownV, bgV, markedV := vectors(c, own), vectors(c, bg), vectors(c, marked)
	cands := vectors(c, slices.Concat(lensing, pulsar, other))
	prof := Profile{People: []Person{{Name: ann}}}

	cold := Train(DefaultParams(), prof, slices.Concat(examples(Own, ownV), examples(Background, bgV)))
	top := ranked(cold, cands)[:10]
	if n := countIn(top[:5], idsOf(pulsar)); n < 2 {
		t.Fatalf("cold start: %d pulsar papers in the top 5 (%q); the test needs them there first", n, top)
	}
	if n := countIn(top, idsOf(other)); n > 0 {
		t.Errorf("cold start: %d papers of other topics in the top 10", n)
	}

	after := Train(DefaultParams(), prof, slices.Concat(examples(Less, markedV), examples(Own, ownV), examples(Background, bgV)))
	order := ranked(after, cands)
	if n := countIn(order[:5], idsOf(pulsar)); n > 0 {
		t.Errorf("after 5 pulsar papers marked less: %d pulsar papers in the top 5: %q", n, order[:10])
	}
	lastLensing, firstPulsar := 0, len(order)
	for i, id := range order {
		if slices.Contains(idsOf(lensing), id) {
			lastLensing = i
		}
		if slices.Contains(idsOf(pulsar), id) {
			firstPulsar = min(firstPulsar, i)
		}
	}
	if firstPulsar < lastLensing {
		t.Errorf("after less: a pulsar paper at %d ranks above a lensing one at %d", firstPulsar, lastLensing)
	}
}

// TestMoreLiftsATopic: papers about a topic marked "more" lift the next
// papers of that topic above papers of the topics the user never said
// anything about.
func TestMoreLiftsATopic(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	own := []*Paper{w.paper("lensing", ann), w.paper("lensing", ann), w.paper("lensing", ann)}
	bg := w.background(120)
	marked := []*Paper{w.paper("solar"), w.paper("solar"), w.paper("solar"), w.paper("solar")}
	var solar, other []*Paper
	for range 5 {
		solar = append(solar, w.paper("solar"))
		other = append(other, w.paper("dust"), w.paper("exoplanet"))
	}
	ownV, bgV, markedV := vectors(c, own), vectors(c, bg), vectors(c, marked)
	cands := vectors(c, slices.Concat(other, solar))
	prof := Profile{People: []Person{{Name: ann}}}
	base := slices.Concat(examples(Own, ownV), examples(Background, bgV))
	before := ranked(Train(DefaultParams(), prof, base), cands)
	after := ranked(Train(DefaultParams(), prof, slices.Concat(examples(More, markedV), base)), cands)
	if n, was := countIn(after[:5], idsOf(solar)), countIn(before[:5], idsOf(solar)); n < 3 || n <= was {
		t.Errorf("after 4 solar papers marked more: %d of 5 solar papers in the top 5 (before: %d): %q", n, was, after)
	}
}

// TestColdStartRanksACoauthorFirst: from follows alone, a paper by a
// co-author of the followed person, on words the person never used, ranks
// above unrelated papers, and says why.
func TestColdStartRanksACoauthorFirst(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	own := []*Paper{
		w.paper("lensing", ann, "Bea Two"),
		w.paper("lensing", "A. One", "B. Two", "C. Three"),
		w.paper("lensing", ann, "Cy Three"),
	}
	bg := w.background(100)
	byCoauthor := w.paper("solar", "Zed Nobody", "B. Two")
	var unrelated []*Paper
	for range 30 {
		unrelated = append(unrelated, w.paper("solar"), w.paper("dust"))
	}
	ownV, bgV := vectors(c, own), vectors(c, bg)
	cands := vectors(c, append(unrelated, byCoauthor))
	for _, self := range []bool{false, true} {
		m := Train(DefaultParams(), Profile{People: []Person{{Name: ann, Self: self}}}, slices.Concat(examples(Own, ownV), examples(Background, bgV)))
		if got := ranked(m, cands)[0]; got != byCoauthor.ID {
			t.Errorf("self %v: first is %s, want the co-author's paper %s", self, got, byCoauthor.ID)
		}
		want := "with B. Two, a co-author of Ann One"
		if self {
			want = "with your co-author B. Two"
		}
		rs := m.Explain(cands[len(cands)-1])
		if len(rs) == 0 || rs[0].Kind != ReasonCoauthor || rs[0].Text() != want {
			t.Errorf("self %v: reasons %+v, want first %q", self, rs, want)
		}
		// Bea Two and B. Two are one co-author, of two papers: 1 + ln 2.
		wgt, k, _, _ := m.weight(hash(nsAuthor, "two b"))
		if k != kindCoauthor || wgt < DefaultParams().CoauthorBoost*float32(1+math.Log(2))-0.01 {
			t.Errorf("co-author weight %v (kind %d)", wgt, k)
		}
	}
}

// TestAFollowedPersonsNameIsNotLearned: every Own example names the
// followed person, so their feature carries PersonBoost alone.
func TestAFollowedPersonsNameIsNotLearned(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	own := vectors(c, []*Paper{w.paper("lensing", ann), w.paper("pulsar", "A. One"), w.paper("dust", ann, "X. Y")})
	bg := vectors(c, w.background(50))
	m := Train(DefaultParams(), Profile{People: []Person{{Name: ann}}}, slices.Concat(examples(Own, own), examples(Background, bg)))
	wgt, k, of, ok := m.weight(hash(nsAuthor, "one a"))
	if !ok || k != kindPerson || of != 0 || math.Abs(float64(wgt-DefaultParams().PersonBoost)) > 1e-3 {
		t.Errorf("the followed person's weight: %v kind %d of %d (ok %v), want PersonBoost alone", wgt, k, of, ok)
	}
	v := c.Vector(w.paper("solar", "Ann One", "Q. Q"))
	rs := m.Explain(v)
	if len(rs) == 0 || rs[0].Text() != "by Ann One, whom you follow" {
		t.Errorf("reasons %+v", rs)
	}
}

func TestExplainInstitutionsCitationsLikesAndWords(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	followedPaper := w.paper("dust")
	followedPaper.ID = "2301.00001"
	marked := []*Paper{w.paper("pulsar"), w.paper("pulsar"), w.paper("pulsar")}
	marked[0].Title = "pulsar timing glitch of a millisecond magnetar"
	marked[1].Title = "a glitch in the timing of a radio pulsar"
	marked[2].Title = "millisecond pulsar glitches"
	// The followed person writes about pulsars too: the words reason is
	// the learned words' (a mark moves a score, it teaches no word).
	own := []*Paper{w.paper("pulsar", ann), w.paper("pulsar", ann), w.paper("pulsar", ann)}
	own[0].Title = "millisecond pulsar timing"
	bg := vectors(c, w.background(60))
	fv, mv, ov := vectors(c, []*Paper{followedPaper}), vectors(c, marked), vectors(c, own)
	prof := Profile{People: []Person{{Name: ann}}, Institutions: []string{"ror:03dbr7087"}, Papers: []string{"2301.00001"}}
	m := Train(DefaultParams(), prof, slices.Concat(examples(More, mv), examples(Followed, fv), examples(Own, ov), examples(Background, bg)))
	cand := &Paper{ID: "2402.00001", Title: "Glitches in millisecond pulsar timing", Institutions: []string{"ror:03dbr7087", "ror:x"}, Cites: []string{"2301.00001", "2301.00001"}}
	c.Add(cand)
	rs := m.Explain(c.Vector(cand))
	var texts []string
	for _, r := range rs {
		texts = append(texts, r.Text())
	}
	want := []string{"from an institution you follow", "cites a paper you follow", "like 3 papers you marked"}
	if len(texts) < 4 || !slices.Equal(texts[:3], want) || rs[3].Kind != ReasonWords || !strings.HasPrefix(texts[3], "about ") {
		t.Fatalf("reasons %q, want %q then the words", texts, want)
	}
	if !slices.Contains(rs[3].Words, "pulsar") || !slices.Contains(rs[3].Words, "millisecond") {
		t.Errorf("words %q, want them as the title writes them", rs[3].Words)
	}
	if rs[0].ID != "ror:03dbr7087" || rs[1].ID != "2301.00001" || len(rs[2].Papers) != 3 {
		t.Errorf("structured reasons %+v", rs)
	}
	if got := (Reason{Kind: ReasonMarked, Papers: []string{"x"}}).Text(); got != "like a paper you marked" {
		t.Errorf("one marked paper: %q", got)
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"a", "b", "c"}, "about a, b and c"},
		{[]string{"galaxy", "cluster"}, "about galaxy and cluster"},
		{[]string{"x"}, "about x"},
		{[]string{"a", "bb", "ccc", "d"}, "about a, bb, ccc and d"},
		{nil, ""},
	} {
		if got := (Reason{Kind: ReasonWords, Words: c.words}).Text(); got != c.want {
			t.Errorf("words %q: %q, want %q", c.words, got, c.want)
		}
	}
}

// trainingSet is a user of realistic size: following a person with 40
// papers (abstracts of 150 words), a background of 300, five "more" and
// ten "less"; it returns the profile, the examples (newest first), the
// corpus and the background's vectors.
func trainingSet() (Profile, []Example, *Corpus, []*Vector) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	var own []*Paper
	for i := range 40 {
		p := w.paper([]string{"lensing", "galaxy"}[i%2], ann, fmt.Sprintf("Co Author%d", i%7), w.stranger())
		p.Abstract = w.abstract(150)
		own = append(own, p)
	}
	bg := w.background(300)
	for _, p := range bg {
		p.Abstract = w.abstract(150)
	}
	ownV, bgV := vectors(c, own), vectors(c, bg)
	ex := slices.Concat(examples(More, bgV[:5]), examples(Less, bgV[5:15]), examples(Own, ownV), examples(Background, bgV))
	prof := Profile{People: []Person{{Name: ann, Self: true}}, Institutions: []string{"ror:1"}, Papers: []string{"2401.00003"}}
	return prof, ex, c, bgV
}

// trained is the model of trainingSet.
func trained(testing.TB) (*Model, *Corpus, []*Vector) {
	prof, ex, c, bgV := trainingSet()
	return Train(DefaultParams(), prof, ex), c, bgV
}

func TestTrainIsDeterministic(t *testing.T) {
	a, _, _ := trained(t)
	b, _, _ := trained(t)
	ea, _ := a.MarshalBinary()
	eb, _ := b.MarshalBinary()
	if !bytes.Equal(ea, eb) {
		t.Error("two trainings on the same examples differ")
	}
	if a.Len() == 0 || a.Len() > DefaultParams().MaxLearned+DefaultParams().MaxCoauthors+10 {
		t.Errorf("model of %d features", a.Len())
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	m, _, vs := trained(t)
	enc, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model: %d features, %d bytes", m.Len(), len(enc))
	if len(enc) > 16<<10 {
		t.Errorf("encoded model is %d bytes, want a few KB", len(enc))
	}
	var d Model
	if err := d.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	again, _ := d.MarshalBinary()
	if !bytes.Equal(enc, again) {
		t.Error("encoding the decoded model gives other bytes")
	}
	for _, v := range vs {
		if m.Score(v) != d.Score(v) {
			t.Fatalf("score %v before, %v after the round trip", m.Score(v), d.Score(v))
		}
		if a, b := fmt.Sprint(m.Explain(v)), fmt.Sprint(d.Explain(v)); a != b {
			t.Fatalf("reasons differ: %s / %s", a, b)
		}
	}
	// Another version is refused as such.
	old := slices.Clone(enc)
	old[len(magic)] = Version + 1
	if err := d.UnmarshalBinary(old); !errors.Is(err, ErrVersion) {
		t.Errorf("another version: %v, want ErrVersion", err)
	}
}

func TestUnmarshalHostile(t *testing.T) {
	t.Log("hostile: decoders") // a truncated, altered or foreign model encoding is an error, never a panic or a half-decoded model
	m, _, vs := trained(t)
	enc, _ := m.MarshalBinary()
	for n := range len(enc) {
		var d Model
		if err := d.UnmarshalBinary(enc[:n]); err == nil {
			t.Fatalf("a prefix of %d of %d bytes decoded", n, len(enc))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := slices.Clone(enc)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		var d Model
		if d.UnmarshalBinary(b) == nil {
			for _, v := range vs[:3] {
				_ = d.Score(v)
				_ = d.Explain(v)
			}
		}
	}
	var d Model
	for _, b := range [][]byte{nil, []byte("ffrm"), []byte("{\"json\":1}"), append([]byte("ffrm\x01"), bytes.Repeat([]byte{0xff}, 20)...)} {
		if d.UnmarshalBinary(b) == nil {
			t.Errorf("%q decoded", b)
		}
	}
	if d.Score(vs[0]) != 0 || d.Explain(vs[0]) != nil {
		t.Error("a failed decode changed the model")
	}
	// Features out of order: one repeated (a delta of 0), a first of 0.
	for _, feats := range [][]uint32{{5, 5}, {0, 7}, {9, 3}} {
		bad := &Model{scale: 1, feats: feats, q: []int16{1, 2}, kinds: make([]kind, 2), of: make([]uint16, 2)}
		b, _ := bad.MarshalBinary()
		if err := d.UnmarshalBinary(b); err == nil || !strings.Contains(err.Error(), "out of order") {
			t.Errorf("features %v: %v, want out of order", feats, err)
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	m, _, vs := trained(f)
	enc, _ := m.MarshalBinary()
	f.Add(enc)
	f.Add([]byte("ffrm\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Model
		if d.UnmarshalBinary(b) != nil {
			return
		}
		s := d.Score(vs[0])
		if math.IsNaN(float64(s)) {
			t.Errorf("NaN score")
		}
		_ = d.Explain(vs[0])
		again, _ := d.MarshalBinary()
		var e Model
		if err := e.UnmarshalBinary(again); err != nil {
			t.Errorf("re-encoding a decoded model: %v", err)
		}
	})
}

func TestHostilePapers(t *testing.T) {
	t.Log("hostile: limits") // empty, huge and odd-unicode papers give bounded vectors with finite scores, never a panic
	m, c, _ := trained(t)
	huge := strings.Repeat("lensing galaxy \\emph{shear} ", 1<<17) // 3.5 MB
	for _, p := range []*Paper{
		{},
		{Title: "", Abstract: "", Authors: []string{"", "()"}, Categories: []string{""}},
		{Title: huge, Abstract: huge, Authors: slices.Repeat([]string{"A. B"}, 100000)},
		{Title: "\xff\xfe\xfd", Abstract: "\u202egalaxy\u202c \u200b\u200b lensing\u0301\u0301\u0301 ﬁeld ＬＥＮＳＩＮＧ", Authors: []string{"\u0000Ann\u0000One", "日本 太郎"}},
		{Title: strings.Repeat("\u0301", 5000), Authors: []string{strings.Repeat("(", 5000)}},
		{Title: "$\\alpha$-helix \\\\ {\\\"o}", Cites: slices.Repeat([]string{"x"}, 10000)},
	} {
		c.Add(p)
		v := c.Vector(p)
		if v.Len() > 2*maxAbstractBytes {
			t.Errorf("%d features", v.Len())
		}
		s := m.Score(v)
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			t.Errorf("score %v", s)
		}
		_ = m.Explain(v)
		for _, x := range v.vals {
			if math.IsNaN(float64(x)) {
				t.Fatal("NaN feature")
			}
		}
	}
	if v := c.Vector(&Paper{}); v.Len() != 0 || m.Score(v) != m.bias {
		t.Errorf("an empty paper: %d features, score %v", v.Len(), m.Score(v))
	}
	var zero Model
	if zero.Score(c.Vector(&Paper{Title: "lensing"})) != 0 {
		t.Error("the zero model scores")
	}
	if m := Train(DefaultParams(), Profile{}, nil); m.Len() != 0 {
		t.Errorf("a model of nothing has %d features", m.Len())
	}
}

func TestScoreAllocatesNothing(t *testing.T) {
	m, _, vs := trained(t)
	if n := testing.AllocsPerRun(100, func() {
		for _, v := range vs {
			_ = m.Score(v)
		}
	}); n != 0 {
		t.Errorf("Score allocates %v times a run", n)
	}
}

// TestScoreIsTheDotProduct: Score is the bias plus the dot product of the
// weights and the paper's features, plus the feedback's part: MoreLift
// times the papers marked more's likenesses beyond FeedbackLike (summed,
// at most 1), minus LessPenalty times the same for the papers marked less,
// and MarkedLessDrop for a paper marked less itself.
func TestScoreIsTheDotProduct(t *testing.T) {
	m, _, vs := trained(t)
	p := DefaultParams()
	moved, dropped := 0, 0
	for _, v := range vs[:50] {
		want := float64(m.bias)
		for i, f := range v.feats {
			if w, _, _, ok := m.weight(f); ok {
				want += float64(w) * float64(v.vals[i])
			}
		}
		var more, less float64
		for _, l := range m.likes {
			x := max(float64(l.cosine(v))-float64(p.FeedbackLike), 0) / (1 - float64(p.FeedbackLike))
			switch l.kind {
			case kindMarked:
				more += x
			case kindLess:
				less += x
				if l.id == v.paper.ID {
					want -= MarkedLessDrop // the paper marked less itself
					dropped++
				}
			}
		}
		if more+less > 0 {
			moved++
		}
		want += float64(p.MoreLift)*min(more, 1) - float64(p.LessPenalty)*min(less, 1)
		if got := m.Score(v); math.Abs(float64(got)-want) > 1e-3 {
			t.Fatalf("Score %v, the dot product and the feedback %v", got, want)
		}
	}
	if moved == 0 || dropped == 0 {
		t.Errorf("%d papers like a marked one, %d marked less: the test shows nothing of the feedback's part", moved, dropped)
	}
}

// TestFeedbackMovesOnlyPapersLikeTheMarks: marks move the papers like them
// and of their topics (primary categories), by at most MoreLift +
// MoreTopic up and LessPenalty + LessTopic down; every other paper keeps
// the score the follows give it, however many marks.
func TestFeedbackMovesOnlyPapersLikeTheMarks(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	var own []*Paper
	for range 4 {
		own = append(own, w.paper("lensing", ann), w.paper("galaxy", ann))
	}
	bg := w.background(120)
	var marked, cands []*Paper
	for range 10 {
		marked = append(marked, w.paper("pulsar"), w.paper("solar"))
	}
	for _, tp := range []string{"lensing", "galaxy", "pulsar", "solar", "dust", "exoplanet"} {
		for range 10 {
			cands = append(cands, w.paper(tp))
		}
	}
	ownV, bgV, markedV, candV := vectors(c, own), vectors(c, bg), vectors(c, marked), vectors(c, cands)
	prof := Profile{People: []Person{{Name: ann}}}
	base := slices.Concat(examples(Own, ownV), examples(Background, bgV))
	cold := Train(DefaultParams(), prof, base)
	var less, more []*Vector
	for i, v := range markedV {
		if i%2 == 0 {
			less = append(less, v)
		} else {
			more = append(more, v)
		}
	}
	after := Train(DefaultParams(), prof, slices.Concat(examples(Less, less), examples(More, more), base))
	p := DefaultParams()
	var up, down, same int
	for i, v := range candV {
		d := after.Score(v) - cold.Score(v)
		switch topic := cands[i].Categories[0]; {
		case topic == "astro-ph.pulsar" && d < 0:
			down++
		case topic == "astro-ph.solar" && d > 0:
			up++
		case topic != "astro-ph.pulsar" && topic != "astro-ph.solar":
			if d != 0 {
				t.Errorf("%s paper %q moved by %v: it is like no marked paper", topic, cands[i].Title, d)
			}
			same++
		}
		if up, down := p.MoreLift+p.MoreTopic, p.LessPenalty+p.LessTopic; d > up+1e-5 || d < -down-1e-5 {
			t.Errorf("%q moved by %v: beyond the bounds (+%v, −%v)", cands[i].Title, d, up, down)
		}
	}
	if down < 8 || up < 8 {
		t.Errorf("%d of 10 pulsar papers down after ten marked less, %d of 10 solar papers up after ten marked more", down, up)
	}
}

func TestVectorWeighsWordsByTFIDF(t *testing.T) {
	c := NewCorpus(DefaultParams())
	var ps []*Paper
	for i := range 20 {
		ps = append(ps, &Paper{Title: fmt.Sprintf("the galaxy %d", i)})
	}
	ps = append(ps, &Paper{Title: "the lensing of the galaxy"})
	c.Add(ps...)
	v := c.Vector(ps[len(ps)-1])
	the, lens := v.value(hash(nsWord, "the")), v.value(hash(nsWord, "lens"))
	if !(lens > the && the > 0) {
		t.Errorf("the %v, lensing %v: the rare word must weigh more", the, lens)
	}
	var norm float64
	for i, x := range v.vals {
		if v.ns[i] == nsWord {
			norm += float64(x) * float64(x)
		}
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("the words' norm² is %v, want 1", norm)
	}
	if got, want := c.IDF("lens"), math.Log(22.0/2)+1; math.Abs(got-want) > 1e-9 {
		t.Errorf("IDF(lens) = %v, want %v", got, want)
	}
	c.Prune(2)
	if got, want := c.IDF("lens"), math.Log(22.0)+1; math.Abs(got-want) > 1e-9 {
		t.Errorf("IDF(lens) after Prune(2) = %v, want %v (a word never seen)", got, want)
	}
}

func BenchmarkScore(b *testing.B) {
	m, _, vs := trained(b)
	var n int
	for _, v := range vs {
		n += v.Len()
	}
	b.ReportAllocs()
	b.ResetTimer()
	var s float32
	for i := range b.N {
		s += m.Score(vs[i%len(vs)])
	}
	_ = s
	b.ReportMetric(float64(n)/float64(len(vs)), "features/paper")
	b.ReportMetric(float64(m.Len()), "features/model")
}

// BenchmarkScoreBatch scores every paper of trained's set for one model,
// by Score ("table") and through the set's Lexicon ("lexicon": a Scorer
// used by the model, then each paper scored), as Rank does for each user
// of a batch, and makes the lexicon ("new-lexicon", once per batch); per
// paper.
func BenchmarkScoreBatch(b *testing.B) {
	m, _, vs := trained(b)
	m.postWords = nil // the words' part alone: the feedback's is the same in both
	lex := NewLexicon(vs)
	b.Run("table", func(b *testing.B) {
		var s float32
		for range b.N {
			for _, v := range vs {
				s += m.Score(v)
			}
		}
		_ = s
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(vs)), "ns/paper")
	})
	b.Run("lexicon", func(b *testing.B) {
		var s float32
		sc := lex.Scorer()
		for range b.N {
			sc.Use(m)
			for i := range vs {
				s += sc.Score(i)
			}
		}
		_ = s
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(vs)), "ns/paper")
		b.ReportMetric(float64(len(lex.feats)), "lexicon")
	})
	b.Run("new-lexicon", func(b *testing.B) {
		for range b.N {
			_ = NewLexicon(vs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(vs)), "ns/paper")
	})
}

// TestLexiconPaysWhenModelsShareItsPapers: a lexicon pays for itself
// when some four models score each of its papers, not for one model's
// papers; a model is read through it when its features (one look in the
// lexicon's directory each) are at most twice its papers' features (two
// buckets of its table each).
func TestLexiconPaysWhenModelsShareItsPapers(t *testing.T) {
	for _, c := range []struct {
		features, scored int
		pays             bool
	}{{1000, 1000, false}, {1000, 3999, false}, {1000, 4000, true}, {1000, 50_000, true}, {0, 0, true}} {
		if got := LexiconPays(c.features, c.scored); got != c.pays {
			t.Errorf("LexiconPays(%d, %d) = %v, want %v", c.features, c.scored, got, c.pays)
		}
	}
	m, _, vs := trained(t)
	lex := NewLexicon(vs)
	probes := m.Len()
	for _, c := range []struct {
		features int
		pays     bool
	}{{(probes + 1) / 2, true}, {(probes+1)/2 - 1, false}, {probes, true}, {1, false}} {
		if got := lex.Pays(m, c.features); got != c.pays {
			t.Errorf("a model of %d features, for %d features of papers: Pays %v, want %v", probes, c.features, got, c.pays)
		}
	}
}

func BenchmarkTrain(b *testing.B) {
	prof, ex, _, _ := trainingSet()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_ = Train(DefaultParams(), prof, ex)
	}
	b.ReportMetric(float64(len(ex)), "examples")
}

func BenchmarkVector(b *testing.B) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	p := w.paper("lensing")
	p.Abstract = w.abstract(150)
	b.ReportAllocs()
	for range b.N {
		_ = c.Vector(p)
	}
}

// TestLessMovesATopicDownInAFlow: a user who follows no person, only a
// category with papers on lensing and pulsars (their flow), marks five
// pulsar papers "less": the next pulsar papers rank below every lensing
// one. Without the flow there would be no positive example, and the
// "less" would teach nothing.
func TestLessMovesATopicDownInAFlow(t *testing.T) {
	w := newWorld()
	c := NewCorpus(DefaultParams())
	var flow []*Paper
	for range 10 {
		flow = append(flow, w.paper("lensing"), w.paper("pulsar"))
	}
	bg := w.background(120)
	var lensing, pulsar, marked []*Paper
	for range 5 {
		lensing = append(lensing, w.paper("lensing"))
		pulsar = append(pulsar, w.paper("pulsar"))
		marked = append(marked, w.paper("pulsar"))
	}
	flowV, bgV, markedV := vectors(c, flow), vectors(c, bg), vectors(c, marked)
	cands := vectors(c, slices.Concat(lensing, pulsar))
	m := Train(DefaultParams(), Profile{}, slices.Concat(examples(Less, markedV), examples(Flow, flowV), examples(Background, bgV)))
	order := ranked(m, cands)
	if n := countIn(order[:5], idsOf(lensing)); n != 5 {
		t.Errorf("after 5 pulsar papers marked less in a flow: %q", order)
	}
	// With the flow alone the two topics are alike: the marks made the
	// difference.
	cold := ranked(Train(DefaultParams(), Profile{}, slices.Concat(examples(Flow, flowV), examples(Background, bgV))), cands)
	if n := countIn(cold[:5], idsOf(lensing)); n == 5 {
		t.Errorf("the flow alone already puts lensing first (%q): the test shows nothing", cold)
	}
}

// TestExplainSpellsWordsAsFirstWritten: every word feature of a paper is
// spelled as first written in its title, else its abstract (a stem's
// first word: a hyphenated word's joined form, its parts their stems),
// as a reading of both texts whole spells it, wherever the reading
// stops; other features and words it lacks have no spelling.
func TestExplainSpellsWordsAsFirstWritten(t *testing.T) {
	_, c, bg := trained(t)
	w := newWorld()
	vs := slices.Clone(bg)
	for range 50 {
		p := w.paper("lensing")
		p.Title = "Weak-lensing " + p.Title + " of Cluster-scale HALOS"
		p.Abstract = w.abstract(150) + " Convergence-maps and shear"
		c.Add(p)
		vs = append(vs, c.Vector(p))
	}
	spelled := 0
	for _, v := range vs {
		// Every stem's first spelling over both texts whole.
		first := map[uint32]string{}
		for _, text := range []string{v.paper.Title, v.paper.Abstract} {
			for _, word := range strings.FieldsFunc(search.Fold(text), notWordRune) {
				for i, s := range search.Stems(word, nil) {
					if f := hash(nsWord, s); first[f] == "" {
						first[f] = map[bool]string{true: word, false: s}[i == 0]
					}
				}
			}
		}
		for i, f := range v.feats {
			want := ""
			if v.ns[i] == nsWord {
				want = first[f]
				spelled++
			}
			if got := v.spelling(i); got != want {
				t.Errorf("%q: feature %d spelled %q, first written %q", v.paper.Title, f, got, want)
			}
		}
	}
	if spelled < len(vs) {
		t.Errorf("only %d words spelled over %d papers", spelled, len(vs))
	}
}

func BenchmarkExplain(b *testing.B) {
	m, _, vs := trained(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_ = m.Explain(vs[i%len(vs)])
	}
}

// TestScoreAndWordsAsReadFromTheFeatures: Score's table and the words
// reason's pass (both read without a branch, the words reason keeping its
// least part) give what a plain reading of the model's sorted features
// gives: the same score to the bit (weight × value summed in the
// vector's order, a feature the model lacks adding nothing) and the same
// words (the largest positive parts of the words, function words left
// out, ties the smaller feature first), for models with and without
// people, likes and stored round trips, over papers with repeated and
// empty authors, institutions and citations, and for the same models
// decoded when no table fills (table.plain); the score with the
// feedback's part too, read by scanning each marked paper's words
// (plainFeedback); and every kind of reason is met. Scored through a
// Lexicon of the papers (a Scorer, used by each model in turn), each
// paper's score is the same again, and its explanation (Scorer.Explain).
func TestScoreAndWordsAsReadFromTheFeatures(t *testing.T) {
	prof, ex, c, bgV := trainingSet()
	w := newWorld()
	var extra, short []*Paper
	for i := range 40 {
		by := ann // every fourth without her: its co-authors of hers are named
		if i%4 == 3 {
			by = w.stranger()
		}
		p := w.paper([]string{"lensing", "galaxy", "pulsar"}[i%3], by, fmt.Sprintf("Co Author%d", i%7), w.stranger(), by, "", fmt.Sprintf("Co Author%d", (i+3)%7))
		p.Abstract = w.abstract(150)
		p.Institutions = []string{"", "ror:2", "ror:1", "ror:1"}
		p.Cites = []string{"x", "2401.00003", ""}
		extra = append(extra, p)
	}
	for i := range 60 {
		short = append(short, w.paper([]string{"lensing", "galaxy", "pulsar"}[i%3], w.stranger()))
	}
	vs := slices.Concat(bgV, vectors(c, extra), vectors(c, short))
	n := len(bgV) + len(extra)
	liked := slices.Concat(ex, examples(Followed, vs[n:n+15]), examples(Saved, vs[n+15:n+30]))
	kinds := map[ReasonKind]int{}
	moved := 0
	// The papers' lexicon, with a paper twice and a nil vector; one
	// Scorer for every model (Use clears the one before).
	lex := NewLexicon(slices.Concat(vs, []*Vector{nil, vs[0]}))
	if lex.vecs[len(vs)+1] != vs[0] || len(lex.feats) == 0 || len(lex.feats) >= len(vs)*vs[0].Len() {
		t.Fatalf("a lexicon of %d features for %d papers", len(lex.feats), len(vs))
	}
	dense := lex.Scorer()
	// again reads each model's weights as dense kept them (Weights),
	// after the model before: the same scores and reasons.
	again := lex.Scorer()
	for _, m := range []*Model{Train(DefaultParams(), prof, ex), Train(DefaultParams(), prof, liked), {}} {
		enc, _ := m.MarshalBinary()
		var d, p Model
		if err := d.UnmarshalBinary(enc); err != nil {
			t.Fatal(err)
		}
		// No table fills: 2 buckets, at most 32 (tableGrowth).
		smallest := smallestTable
		smallestTable = func(int) int { return 1 }
		err := p.UnmarshalBinary(enc)
		plain := err == nil && p.table().plain // made now, with the small tables
		smallestTable = smallest
		if err != nil {
			t.Fatal(err)
		}
		if plain != (m.Len() > 64) {
			t.Fatalf("a model of %d features in at most 32 buckets of 2: plain %v", m.Len(), plain)
		}
		for _, m := range []*Model{m, &d, &p} {
			dense.Use(m)
			again.UseWeights(dense.Weights())
			// Weights of another lexicon are looked up in this one.
			other := NewLexicon(vs[:3]).Scorer()
			other.Use(m)
			elsewhere := lex.Scorer()
			elsewhere.UseWeights(other.Weights())
			if got, want := elsewhere.Explain(0), m.Explain(vs[0]); !reflect.DeepEqual(got, want) || elsewhere.Score(1) != dense.Score(1) {
				t.Fatalf("weights of another lexicon: reasons %v, want %v", got, want)
			}
			if s := dense.Score(len(vs)); s != 0 {
				t.Fatalf("a nil vector scores %v", s)
			}
			for i, v := range vs {
				// The plain reading: m's weight of each feature by
				// binary search in its sorted features.
				score := m.bias
				var words []part
				for i, f := range v.feats {
					w, _, _, ok := m.weight(f)
					if !ok {
						continue
					}
					score += float32(w * v.vals[i])
					if x := float32(w * v.vals[i]); x > 0 && v.ns[i] == nsWord && !functionWords[f] {
						words = append(words, part{f, uint32(i), x})
					}
				}
				// Plus the feedback's part, each marked like's
				// words scanned.
				before := score
				score, _ = plainFeedback(m, v, score)
				if score != before {
					moved++
				}
				if got := m.Score(v); math.Float32bits(got) != math.Float32bits(score) {
					t.Fatalf("%q: Score %v, read plainly %v", v.paper.Title, got, score)
				}
				for _, at := range []int{i, len(vs) + 1} {
					if at == len(vs)+1 && i != 0 {
						continue
					}
					if got := dense.Score(at); math.Float32bits(got) != math.Float32bits(score) {
						t.Fatalf("%q: scored through the lexicon %v, read plainly %v", v.paper.Title, got, score)
					}
					if got := again.Score(at); math.Float32bits(got) != math.Float32bits(score) {
						t.Fatalf("%q: scored through the lexicon with the weights kept %v, read plainly %v", v.paper.Title, got, score)
					}
				}
				slices.SortStableFunc(words, func(a, b part) int {
					switch {
					case a.before(b):
						return -1
					case b.before(a):
						return 1
					}
					return 0
				})
				top := m.topWords(v)
				if got, want := top.p[:top.n], words[:min(len(words), maxReasonWords)]; !slices.Equal(got, want) {
					t.Fatalf("%q: words %v, read plainly %v", v.paper.Title, got, want)
				}
				why := m.Explain(v)
				for _, r := range why {
					kinds[r.Kind]++
				}
				if got := dense.Explain(i); !reflect.DeepEqual(got, why) {
					t.Fatalf("%q: explained through the lexicon %v, by the model %v", v.paper.Title, got, why)
				}
				if got := again.Explain(i); !reflect.DeepEqual(got, why) {
					t.Fatalf("%q: explained with the weights kept %v, by the model %v", v.paper.Title, got, why)
				}
				if i == 0 && !reflect.DeepEqual(dense.Explain(len(vs)+1), why) {
					t.Fatalf("%q: explained through its second place in the lexicon %v, by the model %v", v.paper.Title, dense.Explain(len(vs)+1), why)
				}
			}
			if dense.Explain(len(vs)) != nil {
				t.Fatal("a nil vector has reasons")
			}
		}
	}
	if moved == 0 {
		t.Error("no score moved by a marked paper: the feedback's part is not tested")
	}
	for _, k := range []ReasonKind{ReasonPerson, ReasonCoauthor, ReasonInstitution, ReasonCites, ReasonMarked, ReasonLikeFollowed, ReasonWords} {
		if kinds[k] == 0 {
			t.Errorf("no reason of kind %s met (%v)", k, kinds)
		}
	}
}

// BenchmarkExplain64Likes is BenchmarkExplain for a user who marked 64
// papers (a model's most likes): each paper explained is compared with
// every like.
func BenchmarkExplain64Likes(b *testing.B) {
	prof, ex, _, bgV := trainingSet()
	m := Train(DefaultParams(), prof, slices.Concat(examples(Saved, bgV[100:100+maxLikes]), ex))
	if len(m.likes) != maxLikes {
		b.Fatalf("%d likes", len(m.likes))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_ = m.Explain(bgV[i%len(bgV)])
	}
}

// BenchmarkUnmarshal decodes a stored model (a digest batch decodes one
// per user of the batch).
func BenchmarkUnmarshal(b *testing.B) {
	m, _, _ := trained(b)
	enc, _ := m.MarshalBinary()
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	b.ResetTimer()
	for range b.N {
		var d Model
		if err := d.UnmarshalBinary(enc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(m.Len()), "features/model")
}

// TestLearnKeepsTheLargestWeights: a model keeps its MaxLearned learned
// weights of largest magnitude (ties: the smaller feature), each as
// learnt, sorted by feature; the rest are cut.
func TestLearnKeepsTheLargestWeights(t *testing.T) {
	_, ex, _, _ := trainingSet()
	p := DefaultParams()
	p.MaxLearned = 1 << 30
	allF, allW, allB := learn(p, nil, ex)
	const keep = 50
	if len(allF) <= keep {
		t.Fatalf("%d learned weights: too few to cut", len(allF))
	}
	type fw struct {
		f uint32
		w float32
	}
	want := make([]fw, len(allF))
	for i := range allF {
		want[i] = fw{allF[i], allW[i]}
	}
	slices.SortFunc(want, func(a, b fw) int {
		if c := cmp.Compare(math.Abs(float64(b.w)), math.Abs(float64(a.w))); c != 0 {
			return c
		}
		return cmp.Compare(a.f, b.f)
	})
	want = want[:keep]
	slices.SortFunc(want, func(a, b fw) int { return cmp.Compare(a.f, b.f) })
	p.MaxLearned = keep
	gotF, gotW, gotB := learn(p, nil, ex)
	if gotB != allB || len(gotF) != keep {
		t.Fatalf("bias %v (uncut %v), %d weights kept, want %d", gotB, allB, len(gotF), keep)
	}
	for i := range want {
		if gotF[i] != want[i].f || gotW[i] != want[i].w {
			t.Fatalf("weight %d kept: feature %d = %v, want feature %d = %v (the largest, by feature)", i, gotF[i], gotW[i], want[i].f, want[i].w)
		}
	}
}

// TestEmptyLexiconScoresZero: a lexicon without features (only papers
// not stored) scores every paper 0 by any model, its directory empty.
func TestEmptyLexiconScoresZero(t *testing.T) {
	m, _, _ := trained(t)
	sc := NewLexicon([]*Vector{nil, nil}).Scorer()
	sc.Use(m)
	if s0, s1 := sc.Score(0), sc.Score(1); s0 != 0 || s1 != 0 {
		t.Errorf("an empty lexicon scores %v, %v", s0, s1)
	}
}

// TestTableMadeOnFirstUse: a decoded model makes its table only when
// Score or Explain reads it, not when a Scorer reads its weights (a
// digest batch's models: their decoding is on the digest's path).
func TestTableMadeOnFirstUse(t *testing.T) {
	prof, ex, _, bgV := trainingSet()
	enc, err := Train(DefaultParams(), prof, ex).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var m Model
	if err := m.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if m.tbl.buckets != nil || m.tbl.plain {
		t.Fatal("decoding made the table")
	}
	s := NewLexicon(bgV[:10]).Scorer()
	s.Use(&m)
	if s.Score(0) == m.bias && s.Score(1) == m.bias || s.Explain(0) == nil {
		t.Fatal("the scorer read no weight: the test reads nothing")
	}
	if m.tbl.buckets != nil {
		t.Fatal("a Scorer made the table")
	}
	if m.Score(bgV[0]); m.tbl.buckets == nil {
		t.Fatal("Score made no table")
	}
}

// TestCoauthorsNamedOffTheirPersonsPapers: a followed person's paper is
// explained by the person ("by Ann One, whom you follow") even when a
// co-author of hers is listed before her, and never by her co-authors
// (learned from her papers, this one among them, they would only name
// its authors again); the same co-author on a paper without her is her
// co-author.
func TestCoauthorsNamedOffTheirPersonsPapers(t *testing.T) {
	c := NewCorpus(DefaultParams())
	w := newWorld()
	var own []*Paper
	for range 6 {
		p := w.paper("lensing", "Bob Two", ann, w.stranger())
		p.Abstract = w.abstract(60)
		own = append(own, p)
	}
	bg := w.background(100)
	c.Add(slices.Concat(own, bg)...)
	m := Train(DefaultParams(), Profile{People: []Person{{Name: ann}}}, slices.Concat(examples(Own, vectors(c, own)), examples(Background, vectors(c, bg))))
	texts := func(p *Paper) []string {
		var out []string
		for _, r := range m.Explain(c.Vector(p)) {
			if r.Kind == ReasonPerson || r.Kind == ReasonCoauthor {
				out = append(out, r.Text())
			}
		}
		return out
	}
	if got, want := texts(w.paper("lensing", "Bob Two", w.stranger(), ann)), []string{"by Ann One, whom you follow"}; !slices.Equal(got, want) {
		t.Errorf("her paper: %q, want %q", got, want)
	}
	if got, want := texts(w.paper("lensing", w.stranger(), "Bob Two")), []string{"with Bob Two, a co-author of Ann One"}; !slices.Equal(got, want) {
		t.Errorf("a paper without her: %q, want %q", got, want)
	}
}

// TestWordsReasonNamesNoFunctionWords: the words every abstract uses to
// report ("we present", "our results show", "can", "may", "their") and a
// series' Roman numerals are never a reason's words, though the paper's
// own subject is.
func TestWordsReasonNamesNoFunctionWords(t *testing.T) {
	c := NewCorpus(DefaultParams())
	p := &Paper{ID: "2612.00001", Title: "Can their first results show more quasars? Paper II",
		Abstract: "We present such a study: it may be that most of them, however, are quasars within clusters, only three non-thermal, as well."}
	c.Add(p)
	v := c.Vector(p)
	named := map[string]bool{}
	for i := range v.feats {
		if v.ns[i] == nsWord && v.nameable[i] {
			named[v.spelling(i)] = true
		}
	}
	if len(named) != 5 || !named["quasars"] || !named["clusters"] || !named["non-thermal"] || !named["thermal"] || !named["well"] {
		t.Errorf("nameable words %v; want quasars, clusters, non-thermal, thermal and well alone (not non; well is a subject too: a quantum well)", named)
	}
}

// TestWordsReasonNamesNoSingleLetters: a title of single letters and
// digits ("T", a formula's $n$, "2") leaves its words out of the words
// reason, as search leaves them out of queries; longer words stay
// nameable.
func TestWordsReasonNamesNoSingleLetters(t *testing.T) {
	c := NewCorpus(DefaultParams())
	p := &Paper{ID: "2612.00001", Title: "T", Abstract: "A bound on $n$ for 2 x in galaxy clusters"}
	c.Add(p)
	v := c.Vector(p)
	named := map[string]bool{}
	for i := range v.feats {
		if v.ns[i] != nsWord {
			continue
		}
		s := v.spelling(i)
		if v.nameable[i] {
			named[s] = true
		}
		if utf8.RuneCountInString(s) == 1 && v.nameable[i] {
			t.Errorf("%q is nameable", s)
		}
	}
	if !named["galaxy"] || !named["bound"] {
		t.Errorf("nameable words %v; want galaxy and bound among them", named)
	}
	// A model that likes the paper explains it by its words, never "about t".
	other := &Paper{ID: "2612.00002", Title: "Stellar winds", Abstract: "Winds of massive stars"}
	c.Add(other)
	m := Train(DefaultParams(), Profile{}, []Example{{Vector: v, Source: More}, {Vector: c.Vector(other), Source: Background}})
	for _, r := range m.Explain(v) {
		for _, w := range r.Words {
			if utf8.RuneCountInString(w) == 1 {
				t.Errorf("reason %q names %q", r.Text(), w)
			}
		}
	}
}

// BenchmarkExplainInstitutions explains papers from 20 institutions each
// (a collaboration's, as OpenAlex's authorships list them), none of them
// followed: every user's explanation of a paper looks for a followed one
// among them.
func BenchmarkExplainInstitutions(b *testing.B) {
	prof, ex, c, _ := trainingSet()
	m := Train(DefaultParams(), prof, ex)
	w := newWorld()
	var vs []*Vector
	for i := range 50 {
		p := w.paper("galaxy")
		p.Abstract = w.abstract(150)
		for j := range 20 {
			p.Institutions = append(p.Institutions, fmt.Sprintf("openalex:I%d", 4000000000+i*100+j))
		}
		vs = append(vs, c.Vector(p))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_ = m.Explain(vs[i%len(vs)])
	}
}
