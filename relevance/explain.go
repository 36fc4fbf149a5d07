package relevance

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"followfeed/search"
)

// ReasonKind is what a Reason is about.
type ReasonKind string

// The kinds of reasons, in the order Explain gives them.
const (
	// ReasonPerson: an author is a followed person (Name).
	ReasonPerson ReasonKind = "person"
	// ReasonCoauthor: an author (Name) is a co-author of a followed
	// person (Of; empty when that person is the user: "your co-author").
	ReasonCoauthor ReasonKind = "coauthor"
	// ReasonInstitution: the paper is from a followed institution (ID).
	ReasonInstitution ReasonKind = "institution"
	// ReasonCites: the paper cites a followed paper (ID).
	ReasonCites ReasonKind = "cites"
	// ReasonMarked: the paper is like papers the user marked "more" or
	// saved (Papers).
	ReasonMarked ReasonKind = "marked"
	// ReasonLikeFollowed: the paper is like followed papers (Papers).
	ReasonLikeFollowed ReasonKind = "like_followed"
	// ReasonWords: the words that weigh most for the paper (Words).
	ReasonWords ReasonKind = "words"
)

// Reason is one reason a paper ranks for a user, as structured data (the
// JSON form is the API's) and as text (Text).
type Reason struct {
	Kind ReasonKind `json:"kind"`
	// Name is the person's or co-author's name as the paper writes it.
	Name string `json:"name,omitempty"`
	// Of is the followed person a co-author wrote with ("" when it is the
	// user).
	Of string `json:"of,omitempty"`
	// ID is the followed institution's or cited paper's id.
	ID string `json:"id,omitempty"`
	// Papers are the ids of the marked or followed papers it is like.
	Papers []string `json:"papers,omitempty"`
	// Words are the words (as the paper writes them, folded) that weigh
	// most.
	Words []string `json:"words,omitempty"`
	// Weight is the reason's part of the score (for a like, the cosine).
	Weight float32 `json:"weight"`
}

// Text is r as a short phrase for people: "by Ann One, whom you follow",
// "with your co-author Ann One", "from an institution you follow", "cites
// a paper you follow", "like 3 papers you marked", "about galaxy and
// cluster"; "" for a words reason without words or an unknown kind.
func (r Reason) Text() string { return string(r.AppendText(nil)) }

// AppendText appends r's Text to b: a digest's reasons' texts in one
// buffer (one string for all of them) rather than a string each.
func (r Reason) AppendText(b []byte) []byte {
	switch r.Kind {
	case ReasonPerson:
		return append(append(append(b, "by "...), r.Name...), ", whom you follow"...)
	case ReasonCoauthor:
		if r.Of == "" {
			return append(append(b, "with your co-author "...), r.Name...)
		}
		return append(append(append(append(b, "with "...), r.Name...), ", a co-author of "...), r.Of...)
	case ReasonInstitution:
		return append(b, "from an institution you follow"...)
	case ReasonCites:
		return append(b, "cites a paper you follow"...)
	case ReasonMarked:
		return append(appendPapers(append(b, "like "...), len(r.Papers)), " you marked"...)
	case ReasonLikeFollowed:
		return append(appendPapers(append(b, "like "...), len(r.Papers)), " you follow"...)
	case ReasonWords:
		if len(r.Words) == 0 {
			return b
		}
		b = append(b, "about "...)
		for i, w := range r.Words { // "about a, b and c"
			switch {
			case i > 0 && i == len(r.Words)-1:
				b = append(b, " and "...)
			case i > 0:
				b = append(b, ", "...)
			}
			b = append(b, w...)
		}
	}
	return b
}

// appendPapers appends "a paper" or "3 papers".
func appendPapers(b []byte, n int) []byte {
	if n == 1 {
		return append(b, "a paper"...)
	}
	return append(strconv.AppendInt(b, int64(n), 10), " papers"...)
}

// maxReasonNames bounds the persons and co-authors one explanation names.
const maxReasonNames = 3

// maxReasonWords is how many words a words reason names.
const maxReasonWords = 3

// Explain returns why the paper of v ranks for m: its followed persons,
// then the co-authors of followed persons who are not its authors (the
// first few, in author order), followed institutions
// and cited followed papers, the marked and followed papers it is like,
// and the words that weigh most for it (positive weights only). It is for
// the few papers shown, not the hot loop: it allocates.
func (m *Model) Explain(v *Vector) []Reason { return m.explain(nil, v, m.topWords) }

// explain appends Explain's reasons to out (a digest's papers' reasons
// share one array: Scorer.AppendExplain), the words reason's parts found
// by top (m.topWords, or a Scorer's, which reads the same weights from
// its dense array).
func (m *Model) explain(out []Reason, v *Vector, top func(*Vector) topWords) []Reason {
	p := &v.paper
	// The followed persons among the authors first, then the co-authors
	// of followed persons who are not authors of the paper themselves:
	// on a followed person's paper "by Ann One, whom you follow" says
	// it, and "with Bob Two, a co-author of Ann One" would only name the
	// paper's own authors again (the co-authors are learned from the
	// person's papers, this one among them).
	var on [8]uint16 // the persons met (more than 8 on a paper: rare)
	nOn, names := 0, 0
	coauthors := false
	for i, f := range v.authorFeats {
		// f is 0 for an author without a key or whose key an earlier
		// author has.
		if f == 0 || !m.mayBeFixed(f) {
			continue
		}
		w, kd, of, ok := m.weight(f)
		switch {
		case !ok:
		case kd == kindCoauthor:
			coauthors = true
		case kd == kindPerson:
			if nOn < len(on) {
				on[nOn] = of
				nOn++
			}
			if names < maxReasonNames {
				out = append(out, Reason{Kind: ReasonPerson, Name: p.Authors[i], Weight: w * v.value(f)})
				names++
			}
		}
	}
	for i, f := range v.authorFeats {
		if !coauthors || names == maxReasonNames {
			break
		}
		if f == 0 || !m.mayBeFixed(f) {
			continue
		}
		w, kd, of, ok := m.weight(f)
		if !ok || kd != kindCoauthor || slices.Contains(on[:nOn], of) {
			continue
		}
		r := Reason{Kind: ReasonCoauthor, Name: p.Authors[i], Weight: w * v.value(f)}
		if int(of) < len(m.people) && !m.people[of].self {
			r.Of = m.people[of].name
		}
		out = append(out, r)
		names++
	}
	// The first followed institution and cited paper (a repeated id is
	// the same feature: the first one met decides).
	for i, f := range v.instFeats {
		if f == 0 || !m.mayBeFixed(f) {
			continue
		}
		if w, kd, _, ok := m.weight(f); ok && kd == kindInstitution {
			out = append(out, Reason{Kind: ReasonInstitution, ID: p.Institutions[i], Weight: w * v.value(f)})
			break
		}
	}
	for i, f := range v.citeFeats {
		if f == 0 || !m.mayBeFixed(f) {
			continue
		}
		if w, kd, _, ok := m.weight(f); ok && kd == kindCited {
			out = append(out, Reason{Kind: ReasonCites, ID: p.Cites[i], Weight: w * v.value(f)})
			break
		}
	}
	out = m.likeReasons(out, v)
	if r, ok := words(v, top(v)); ok {
		out = append(out, r)
	}
	return out
}

// likeReasons appends the reasons of the marked and of the followed
// papers v's paper is like (none for a model without likes, which then
// does not clear the likes' values' array: 3 KB a paper).
func (m *Model) likeReasons(out []Reason, v *Vector) []Reason {
	if len(m.likes) == 0 {
		return out
	}
	p := &v.paper
	// The paper's values of the likes' words, by position (0 where it
	// lacks one).
	var likeVals [maxLikes * likeWords]float32
	m.likeValues(v, &likeVals)
	for _, k := range [...]kind{kindMarked, kindFollowedPaper} {
		r := Reason{Kind: ReasonMarked}
		if k == kindFollowedPaper {
			r.Kind = ReasonLikeFollowed
		}
		for i, l := range m.likes {
			if l.kind != k || l.id == p.ID && p.ID != "" {
				continue
			}
			if c := m.cosine(i, &likeVals); c >= m.likeThreshold && c > 0 {
				r.Papers = append(r.Papers, l.id)
				r.Weight = max(r.Weight, c)
			}
		}
		if len(r.Papers) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// likeValues puts v's value of each like's word at its position in vals
// (likeFeats): one merge of two sorted lists, v's features and the
// likes' words, where a lookup of each word cost a binary search (a
// model of 64 likes: 768 a paper).
func (m *Model) likeValues(v *Vector, vals *[maxLikes * likeWords]float32) {
	lf := m.likeFeats
	for i, j := 0, 0; i < len(v.feats) && j < len(lf); {
		switch f := v.feats[i]; {
		case f < lf[j].f:
			i++
		case f > lf[j].f:
			j++
		default: // the next like word may be the same feature
			vals[lf[j].at] = v.vals[i]
			j++
		}
	}
}

// cosine is the cosine between like i's words and the same words of a
// paper, whose values of them likeValues put in vals (a paper's words are
// of unit length already).
func (m *Model) cosine(i int, vals *[maxLikes * likeWords]float32) float32 {
	l := &m.likes[i]
	var dot float64
	for j := range l.feats {
		x := float64(l.vals[j]) / 255
		dot += x * float64(vals[i*likeWords+j])
	}
	norm := m.likeNorms[i]
	if norm == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(norm))
}

// part is a word's part of a score (feature f, at index at of the
// vector's features, weight × value x), for a words reason.
type part struct {
	f  uint32
	at uint32
	x  float32
}

// before says whether a ranks before b: the larger part first, ties the
// smaller feature first.
func (a part) before(b part) bool { return a.x > b.x || a.x == b.x && a.f < b.f }

// topWords keeps the maxReasonWords largest positive parts of a paper's
// nameable words (Vector.nameable: function words left out), as a pass
// over its features meets them.
type topWords struct {
	p [maxReasonWords]part
	n uint8
}

// A pass over a paper's words keeps least, the least part that may enter
// its topWords: anyPart until it is full, then its smallest (a tie enters
// on the smaller feature: takes decides). Most parts fall below it, a
// word the model lacks (a part of 0) always, on one comparison in a
// register; offer gets only the others.
const anyPart = float32(math.SmallestNonzeroFloat32)

// offer puts p, at least least, in t when it enters (takes) and returns
// the least part that may enter after it.
func (t *topWords) offer(p part, least float32) float32 {
	if t.takes(p) {
		t.insert(p)
		if t.n == maxReasonWords {
			least = t.p[maxReasonWords-1].x
		}
	}
	return least
}

// takes says whether p enters t: t is not full, or p ranks before its
// smallest part.
func (t *topWords) takes(p part) bool {
	return t.n < maxReasonWords || p.before(t.p[maxReasonWords-1])
}

// insert puts p in its place in t, the smallest part out when t is full.
func (t *topWords) insert(p part) {
	n := int(t.n)
	j := min(n, len(t.p)-1)
	for j > 0 && p.before(t.p[j-1]) {
		t.p[j] = t.p[j-1]
		j--
	}
	t.p[j] = p
	t.n = uint8(min(n+1, len(t.p)))
}

// topWords returns the parts of v's words that a words reason names: the
// maxReasonWords largest positive parts of its nameable words (ties: the
// smaller feature first), each word's weight looked up as Score looks it
// up, without a branch.
func (m *Model) topWords(v *Vector) topWords {
	var t topWords
	least := anyPart
	tb := m.table()
	if len(tb.buckets) == 0 && !tb.plain {
		return t
	}
	bs, shift := tb.buckets, tb.shift
	vals := v.vals[:len(v.feats)]
	nameable := v.nameable[:len(v.feats)]
	for i, f := range v.feats {
		if !nameable[i] {
			continue
		}
		// f's weight, read as Score reads it.
		var w float32
		if tb.plain {
			w = m.plainWeight(f)
		} else {
			b1, b2 := &bs[(f*bucketMul1)>>shift], &bs[(f*bucketMul2)>>shift]
			w = math.Float32frombits(math.Float32bits(b1[0].w)&is(b1[0].f, f) | math.Float32bits(b1[1].w)&is(b1[1].f, f) |
				math.Float32bits(b2[0].w)&is(b2[0].f, f) | math.Float32bits(b2[1].w)&is(b2[1].f, f))
		}
		if x := float32(w * vals[i]); x >= least {
			least = t.offer(part{f, uint32(i), x}, least)
		}
	}
	return t
}

// words returns the reason naming the words of v with the largest
// positive parts of the score (t, topWords), as the paper writes them.
func words(v *Vector, t topWords) (Reason, bool) {
	r := Reason{Kind: ReasonWords}
	for _, pt := range t.p[:t.n] {
		if s := v.spelling(int(pt.at)); s != "" {
			if r.Words == nil {
				r.Words = make([]string, 0, t.n)
			}
			r.Words = append(r.Words, s)
			r.Weight += pt.x
		}
	}
	return r, len(r.Words) > 0
}

// spelling is the first spelling in v's paper of its word feature at
// index i of its features ("" when it has none), read from spellAll's
// table, made the first time one of v's words is spelled: every user's
// Explain of a paper shown to many reads its text once.
func (v *Vector) spelling(i int) string {
	v.spelled.Do(func() { v.spellings = spellAll(v) })
	return v.spellings[i]
}

// spellAll returns, parallel to v's features, each word feature's first
// spelling in the title of v's paper, else its abstract (the word that
// spells a stem first: a hyphenated word's joined form; its parts their
// stems), "" for the other features. It reads the texts once (stemming a
// paper's abstract for each user's Explain cost a digest of 100 papers
// some 20 ms).
func spellAll(v *Vector) []string {
	out := make([]string, len(v.feats))
	left := 0
	for _, ns := range v.ns {
		if ns == nsWord {
			left++
		}
	}
	for _, text := range []string{v.paper.Title, v.paper.Abstract} {
		for _, w := range strings.FieldsFunc(search.Fold(text), notWordRune) {
			for i, s := range search.Stems(w, nil) {
				k, ok := slices.BinarySearch(v.feats, hash(nsWord, s))
				if !ok || v.ns[k] != nsWord || out[k] != "" {
					continue
				}
				if i == 0 {
					out[k] = w
				} else {
					out[k] = s
				}
				left--
			}
			if left == 0 {
				return out
			}
		}
	}
	return out
}

// functionWords are words too common or too short to say what a paper is
// about: a words reason never names them (they still weigh in the score).
// They are English's function words (articles, pronouns, auxiliaries and
// modals, prepositions, conjunctions, quantifiers), the words every
// abstract uses to report ("we present", "our results show"), numbers
// and ordinals, "non" (of "non-integrable": the word's parts are words
// too) and the Roman numerals of "Paper II"; single letters and digits too,
// as search leaves them out of queries: "about t" named a title's "T",
// "about n" a formula's $n$, and before the longer list a reason read
// "about can, lists and them". Words that are also a subject stay
// nameable ("well": a quantum well).
var functionWords = func() map[uint32]bool {
	m := map[uint32]bool{}
	words := strings.Fields("a an the of in on for and or to with by from at as is are be been being was were " +
		"we our us this that these those its it via using use new into than then not no nor " +
		"i me my he him his she her they them their theirs you your one ones " +
		"has have had having do does did done can could may might must shall should will would " +
		"there here where when which who whom whose what why how whether while if but so because since until " +
		"about above after again against along among around before below between both during each either " +
		"further once only other others over same some such through under up down out off onto upon within without " +
		"all any every few many more most much less least very too also however thus hence therefore yet still " +
		"just even per et al etc ie eg " +
		"first second third paper present presents presented show shows shown study studies result results " +
		"two three four five six seven eight nine ten non " +
		"ii iii iv vi vii viii ix xi xii")
	for c := 'a'; c <= 'z'; c++ {
		words = append(words, string(c))
	}
	for c := '0'; c <= '9'; c++ {
		words = append(words, string(c))
	}
	for _, w := range words {
		for _, s := range search.Stems(w, nil) {
			m[hash(nsWord, s)] = true
		}
	}
	return m
}()

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }
