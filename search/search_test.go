package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"followfeed/apperr"
)

// testCats resolves a few categories the way package follow does.
type testCats struct{}

func (testCats) ResolveCategory(v string) (string, string, error) {
	switch strings.ToLower(v) {
	case "cs.lg":
		return "cs.LG", "category:cs.LG", nil
	case "cs.cv":
		return "cs.CV", "category:cs.CV", nil
	case "cs":
		return "cs", "archive:cs", nil
	case "stat.ml":
		return "stat.ML", "category:stat.ML", nil
	}
	return "", "", fmt.Errorf("%q is not an active arXiv category or archive", v)
}

func mustParse(t *testing.T, s string) *Query {
	t.Helper()
	q, err := Parse(s, testCats{})
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return q
}

func TestStem(t *testing.T) {
	// From Porter's published vocabulary / output lists.
	for in, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "cats": "cat", "feed": "feed", "agreed": "agre", "plastered": "plaster",
		"motoring": "motor", "sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"falling": "fall", "filing": "file", "happy": "happi", "relational": "relat", "conditional": "condit",
		"digitizer": "digit", "generalization": "gener", "electrical": "electr", "hopefulness": "hope",
		"adjustment": "adjust", "controlling": "control", "rolling": "roll", "models": "model", "model": "model",
		"diffusion": "diffus", "learning": "learn", "networks": "network", "supervised": "supervis",
	} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalForm(t *testing.T) {
	for in, want := range map[string]string{
		`"Diffusion  Model" AND (cat:cs.LG OR cat:CS.CV) -survey`: `"diffusion model" (cat:cs.LG OR cat:cs.CV) -survey`,
		`au:"Mingzhi Wen"`:                     `au:"mingzhi wen"`,
		`au:Müller`:                            `au:muller`,
		`Transformers NOT survey`:              `transformers -survey`,
		`((graph)) the neural`:                 `graph neural`,
		`ti:(attention OR transformer) cat:cs`: `(ti:attention OR ti:transformer) cat:cs`,
		`Self-Supervised learning`:             `self-supervised learning`,
		`all:spectral ABS:momentum`:            `spectral abs:momentum`,
		// arXiv's ANDNOT is an exclusion like NOT and -, written "-".
		`ti:"graph neural" AND cat:cs.LG ANDNOT abs:survey`: `ti:"graph neural" cat:cs.LG -abs:survey`,
		`graph ANDNOT (survey OR review)`:                   `graph -(survey OR review)`,
		`graph ANDNOT ti:(survey OR review) tree`:           `graph -(ti:survey OR ti:review) tree`,
		`graph OR tree ANDNOT survey`:                       `graph OR tree -survey`,
		`(graph OR tree) ANDNOT survey`:                     `(graph OR tree) -survey`,
		`graph ANDNOT survey ANDNOT review`:                 `graph -survey -review`,
		// Capitals that are words, not operators; lower case and quotes
		// search for an operator's word.
		`xor graph`:     `xor graph`,
		`"XOR" graph`:   `"xor" graph`,
		`ti:XOR graph`:  `ti:xor graph`,
		`NAND flash`:    `nand flash`,
		`andnot graph`:  `andnot graph`,
		`Near ANDROID`:  `near android`,
		`HTTP/2 server`: `http-2 server`,
		`CNN NOTATION`:  `cnn notation`,
		`a OR-b`:        `a OR-b`, // replaced below: see errors
	} {
		if in == `a OR-b` {
			continue
		}
		q := mustParse(t, in)
		if q.String() != want {
			t.Errorf("Parse(%q) = %q, want %q", in, q.String(), want)
		}
		if again := mustParse(t, q.String()); again.String() != q.String() {
			t.Errorf("normal form %q is not stable: %q", q.String(), again.String())
		}
	}
}

// TestParseErrors walks every refusal of Parse with the position (a
// character count, not bytes) and the words of its message. Three
// refusals in the parser are not reachable from any input and are not
// listed: "expected the end of the query" (or and and stop only at the
// end or at a ")"), primary's ")" and "expected a term, not …" (and,
// unary and the prefixes hand primary only words, phrases, prefixes and
// "(").
func TestParseErrors(t *testing.T) {
	t.Log("hostile: bad searches are errors with a position and what was expected")
	for _, c := range []struct {
		in   string
		pos  int
		want string
	}{
		// Length, counted in characters; the position is one past the limit.
		{strings.Repeat("graph ", 51), 301, `at most 300 characters; this one has 306`},
		{strings.Repeat("é", 301), 301, `at most 300 characters; this one has 301`},
		// Nothing to search.
		{``, 1, `expected a query`},
		{"  	　", 1, `expected a query`},
		// The lexer.
		{`"diffusion model`, 1, `closing "`},
		{`graph “diffusion model`, 7, `closing "`},
		{`xx:graph`, 1, `unknown field "xx:"`},
		{`graph Title:attention`, 7, `unknown field "Title:"`},
		// Parentheses.
		{`(graph OR tree`, 1, `expected a ) to close the ( here`},
		{`graph)`, 6, `this ) closes no ( before it`},
		{`Müller)`, 7, `this ) closes no ( before it`}, // characters, not bytes
		{`()`, 2, `inside the parentheses`},
		{`)`, 1, `expected a term`},
		{`(((((((((graph)))))))))`, 9, `nest at most 8 deep`},
		// AND, OR, NOT and -.
		{`AND graph`, 1, `expected a term before AND`},
		{`graph OR AND x`, 10, `expected a term before AND`},
		{`graph AND`, 10, `expected a term after AND`},
		{`graph AND OR tree`, 11, `expected a term after AND`},
		{`(graph AND)`, 11, `expected a term after AND`},
		{`OR graph`, 1, `expected a term before OR`},
		{`(OR graph)`, 2, `expected a term before OR`},
		{`graph OR`, 9, `expected a term after OR`},
		{`graph OR OR tree`, 10, `expected a term after OR`},
		{`(graph OR) tree`, 10, `expected a term after OR`},
		{`graph NOT`, 10, `expected a term to exclude after NOT`},
		{`NOT OR graph`, 5, `expected a term to exclude after NOT`},
		{`-NOT graph`, 2, `expected a term to exclude after -`},
		// ANDNOT: binary, between a term and the term it excludes.
		{`ANDNOT`, 1, `expected a term before ANDNOT`},
		{`ANDNOT graph`, 1, `expected a term before ANDNOT`},
		{`(ANDNOT graph)`, 2, `expected a term before ANDNOT`},
		{`graph OR ANDNOT tree`, 10, `expected a term before ANDNOT`},
		{`graph AND ANDNOT tree`, 11, `expected a term after AND`},
		{`graph ANDNOT`, 13, `expected a term to exclude after ANDNOT`},
		{`(graph ANDNOT) tree`, 14, `expected a term to exclude after ANDNOT`},
		{`graph ANDNOT OR tree`, 14, `expected a term to exclude after ANDNOT`},
		{`graph ANDNOT AND tree`, 14, `expected a term to exclude after ANDNOT`},
		{`graph ANDNOT ANDNOT tree`, 14, `expected a term to exclude after ANDNOT`},
		{`graph ANDNOT NOT tree`, 14, `expected a term to exclude after ANDNOT`},
		{`graph ANDNOT -tree`, 14, `expected a term to exclude after ANDNOT`},
		{`NOT ANDNOT graph`, 5, `expected a term to exclude after NOT`},
		{`-ANDNOT graph`, 2, `expected a term to exclude after -`},
		{`graph ANDNOT the`, 7, `more specific word to exclude`},
		{`-survey ANDNOT review`, 1, `only exclusions`},
		{`cat:cs.LG ANDNOT survey`, 1, `categories alone`},
		// Operators the grammar does not know (operatorLike), where they
		// stand, counted in characters.
		{`graph ORNOT tree`, 7, `"ORNOT" is not an operator of this syntax`},
		{`graph XOR tree`, 7, `"XOR" is not an operator`},
		{`Müller XOR tree`, 8, `"XOR" is not an operator`},
		{`XOR`, 1, `write it in lower case or in quotes ("XOR")`},
		{`graph NOTAND tree`, 7, `"NOTAND" is not an operator`},
		{`graph ANDOR tree`, 7, `"ANDOR" is not an operator`},
		{`graph ANDAND tree`, 7, `"ANDAND" is not an operator`},
		{`graph AND ORNOT tree`, 11, `"ORNOT" is not an operator`},
		{`graph NEAR tree`, 7, `"NEAR" is not an operator`},
		{`graph NEAR/3 tree`, 7, `"NEAR/3" is not an operator`},
		{`graph NEAR3 tree`, 7, `"NEAR3" is not an operator`},
		{`graph ONEAR/2 tree`, 7, `"ONEAR/2" is not an operator`},
		{`graph ADJ2 tree`, 7, `"ADJ2" is not an operator`},
		{`graph WITHIN tree`, 7, `"WITHIN" is not an operator`},
		{`graph W/5 tree`, 7, `"W/5" is not an operator`},
		{`graph PRE/3 tree`, 7, `"PRE/3" is not an operator`},
		{`(graph)XOR(tree)`, 8, `"XOR" is not an operator`},
		{`graph -XOR`, 8, `"XOR" is not an operator`},
		// Field prefixes.
		{`ti: graph`, 1, `right after ti:`},
		{`graph abs:`, 7, `right after abs:`},
		{`ti:)`, 1, `right after ti:`},
		{`cat: graph`, 1, `expected a category right after cat:`},
		{`cat:"cs.LG" graph`, 1, `expected a category right after cat:`},
		{`graph cat:`, 7, `expected a category right after cat:`},
		{`cat:cs.ZZ graph`, 5, `"cs.ZZ" is not an active arXiv category`},
		// Terms without a word.
		{`""`, 1, `expected a word inside the quotes`},
		{`graph ti:" "`, 10, `expected a word inside the quotes`},
		{`$$`, 1, `"$$" has no letters or digits`},
		{`graph -`, 7, `"-" has no letters or digits`},
		// Too many terms: the position is the first one past the limit.
		{"graph tree node edge path cycle clique cut flow match color walk cover span rank sort heap", 87, `at most 16 terms (words and cat: filters); this one has 17`},
		{`"a b c d e f g h i j k l m n o p" graph`, 35, `this one has 17`},
		// Too broad: stop words and single letters or digits (broad).
		{`the`, 1, `only common words`},
		{`x`, 1, `only common words`},
		{`5`, 1, `only common words`},
		{`é`, 1, `only common words`}, // one letter once folded
		{`ABS:x`, 1, `only common words`},
		{`the of x`, 1, `only common words`},
		{`graph (the x)`, 8, `only common words`},
		{`the OR graph`, 1, `more specific word than "the"`},
		{`x OR y`, 1, `more specific word than "x"`},
		{`graph OR x`, 10, `more specific word than "x"`},
		{`graph OR β`, 10, `more specific word than "β"`},
		{`graph -(x OR y)`, 9, `more specific word than "x"`},
		{`graph -the`, 7, `more specific word to exclude`},
		{`graph NOT x`, 7, `more specific word to exclude`},
		{`graph -7`, 7, `more specific word to exclude`},
		// Only exclusions, only categories.
		{`-survey`, 1, `only exclusions`},
		{`-survey OR -review`, 1, `only exclusions`},
		{`graph OR -survey`, 1, `only exclusions`},
		{`-cat:cs.LG`, 1, `only exclusions`},
		{`cat:cs.LG`, 1, `categories alone`},
		{`cat:cs.LG -survey`, 1, `categories alone`},
		{`graph OR cat:cs`, 1, `categories alone`},
		// The normal form's length: ß folds to ss.
		{strings.Repeat("ß", 201), 1, `longer than 400 characters once written out`},
	} {
		_, err := Parse(c.in, testCats{})
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("Parse(%q) = %v, want a *search.Error", c.in, err)
			continue
		}
		if e.Pos != c.pos || !strings.Contains(e.Message, c.want) {
			t.Errorf("Parse(%q) = at %d %q, want at %d …%s…", c.in, e.Pos, e.Message, c.pos, c.want)
		}
	}
}

// TestBroadWordsAreDroppedOrRefused: a stop word or a single letter or
// digit matches nearly every paper, so broad drops it from an AND and
// refuses it alone, as an alternative or excluded (TestParseErrors); a
// quoted one is what the user asked for and stays, and two characters are
// not broad.
func TestBroadWordsAreDroppedOrRefused(t *testing.T) {
	for in, want := range map[string]string{
		`x graph`:        `graph`,
		`graph x y`:      `graph`,
		`au:x graph`:     `graph`,
		`graph 2`:        `graph`,
		`the graph of I`: `graph`,
		`"x"`:            `"x"`,
		`"the" graph`:    `"the" graph`,
		`5G`:             `5g`,
		`xy`:             `xy`,
		`x-ray`:          `x-ray`,
		`graph OR xy`:    `graph OR xy`,
	} {
		if q := mustParse(t, in); q.String() != want {
			t.Errorf("Parse(%q) = %q, want %q", in, q.String(), want)
		}
	}
	for _, w := range []string{"x", "Z", "7", "é", "β", "the", "And", "via"} {
		if !broad(fold(w)) {
			t.Errorf("broad(%q) = false", w)
		}
	}
	for _, w := range []string{"xy", "5g", "ml", "graph"} {
		if broad(w) {
			t.Errorf("broad(%q) = true", w)
		}
	}
}

// TestErrorAsAppError: a refusal reaches the API as a 422 of the field
// whose detail carries the position and the reason.
func TestErrorAsAppError(t *testing.T) {
	_, err := Parse(`graph OR x`, testCats{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse: %v", err)
	}
	ae := e.AppError("query")
	if ae.Code != apperr.Invalid || ae.Field != "query" || len(ae.Details) != 1 ||
		ae.Details[0].Index != 10 || ae.Details[0].Field != "query" || ae.Details[0].Reason != e.Message ||
		!strings.Contains(ae.Message, "at character 10: ") || !errors.Is(ae, e) {
		t.Errorf("AppError = %+v", ae)
	}
}

type fixturePaper struct {
	ID, Title, Abstract string
	Authors             []string
	Categories          []string
}

// loadPapers reads testdata/papers.json (titles, abstracts, authors and
// categories of the recorded arXiv OAI-PMH, arXiv RSS and OpenAlex
// responses) and a few papers written for LaTeX, accents and hyphens.
func loadPapers(t testing.TB) []fixturePaper {
	b, err := os.ReadFile("testdata/papers.json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []fixturePaper
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	return append(ps,
		fixturePaper{ID: "latex", Title: `On the Schr\"odinger equation for $\alpha$-helices`, Abstract: `We study \emph{self-supervised} {G}aussian models of M\"{u}ller type; see Erd\H{o}s.`,
			Authors: []string{"Jörg Müller", "Ana Núñez"}, Categories: []string{"cs.LG"}},
		fixturePaper{ID: "unicode", Title: "Self‑Supervised Learning of Representations", Abstract: "A selfsupervised approach to naïve Bayes.",
			Authors: []string{"Mingzhi Wen", "Zoë Ørsted"}, Categories: []string{"cs.CV"}},
	)
}

// docsOf returns the Docs of ps, in order (docOf).
func docsOf(ps []fixturePaper) []*Doc {
	docs := make([]*Doc, 0, len(ps))
	for _, p := range ps {
		docs = append(docs, docOf(p))
	}
	return docs
}

func docOf(p fixturePaper) *Doc {
	var keys []string
	for _, c := range p.Categories {
		keys = append(keys, "category:"+c)
		if a, _, ok := strings.Cut(c, "."); ok {
			keys = append(keys, "archive:"+a)
		}
	}
	return NewDoc(p.Title, p.Abstract, p.Authors, keys)
}

func TestMatchRealText(t *testing.T) {
	docs := map[string]*Doc{}
	for _, p := range loadPapers(t) {
		docs[p.ID] = docOf(p)
	}
	for _, c := range []struct {
		q    string
		hits []string
	}{
		{`ti:schrodinger`, []string{"latex"}},
		{`alpha-helices`, []string{"latex"}},
		{`helices alpha`, []string{"latex"}},
		{`au:muller`, []string{"latex"}},
		{`au:"jorg muller"`, []string{"latex"}},
		{`au:"muller ana"`, nil}, // a phrase never spans two authors
		{`gaussian`, []string{"latex"}},
		{`self-supervised`, []string{"latex", "unicode", "openalex:W3212386989"}},
		{`selfsupervised`, []string{"latex", "unicode", "openalex:W3212386989"}},
		{`"self-supervised learning"`, []string{"openalex:W3212386989", "unicode"}},
		{`supervised cat:cs.CV`, []string{"unicode"}},
		{`erdos`, []string{"latex"}},
		{`naive bayes`, []string{"unicode"}},
		{`au:"Mingzhi Wen"`, []string{"unicode"}},
		{`au:orsted`, []string{"unicode"}},
		{`ti:"spectral updates" cat:cs.LG`, []string{"2609.26811"}},
		{`"Kochen-Specker"`, []string{"1412.8544"}},
		{`kochen`, []string{"1412.8544"}},
		{`"semantic change" -survey`, []string{"2401.14040"}},
		{`attention ti:survey`, []string{"openalex:W3212386989"}},
		{`ti:skeleton (ti:action OR ti:gesture) cat:cs`, []string{"2401.14034"}},
		{`cat:cs.CV hardness-aware`, []string{"2401.14038"}},
	} {
		q := mustParse(t, c.q)
		var got []string
		for id, d := range docs {
			if q.Match(d) {
				got = append(got, id)
			}
		}
		slices.Sort(got)
		slices.Sort(c.hits)
		if !slices.Equal(got, c.hits) {
			t.Errorf("%s matches %v, want %v", c.q, got, c.hits)
		}
	}
}

// TestOperatorLike is the rule for words that read as operators the
// grammar does not know: capitals only, two or more of AND, OR and NOT run
// together, or another syntax's operator (with a distance); everything
// else is a word.
func TestOperatorLike(t *testing.T) {
	for _, w := range []string{"ORNOT", "NOTAND", "ANDOR", "ORAND", "NOTNOT", "OROR", "ANDAND", "ANDORNOT",
		"XOR", "NEAR", "NEAR5", "NEAR/10", "ONEAR", "ADJ", "ADJ3", "ADJ/3", "WITHIN", "W/5", "PRE/2"} {
		if !operatorLike(w) {
			t.Errorf("operatorLike(%q) = false", w)
		}
	}
	for _, w := range []string{"AND2", "OR/2", "NOR", "NAND", "ANDROID", "NOTORIOUS", "ORAL", "NEARBY", "XORS",
		"W", "W/", "W/x", "PRE", "HTTP/2", "GPT4", "xor", "Xor", "near/3", "ANDNOTx", "OR-NOT", "ÄND", "B/5"} {
		if operatorLike(w) {
			t.Errorf("operatorLike(%q) = true", w)
		}
	}
}

// TestAndNotMatches: arXiv's "a ANDNOT b" finds what "a AND NOT b" and
// "a -b" find, on real papers' text, through Query.Match and through
// MatchBatch and a Set (the bitset evaluation), and it binds like AND: in
// "x OR y ANDNOT z" only y is excluded from.
func TestAndNotMatches(t *testing.T) {
	ps := loadPapers(t)
	docs := make([]*Doc, len(ps))
	for i, p := range ps {
		docs[i] = docOf(p)
	}
	matching := func(q *Query) []string {
		var ids []string
		for i, d := range docs {
			if q.Match(d) {
				ids = append(ids, ps[i].ID)
			}
		}
		return ids
	}
	for _, c := range []struct {
		q, positive, same string
		hits              []string
	}{
		{`attention ANDNOT ti:survey`, `attention`, `attention AND NOT ti:survey`,
			[]string{"2401.14036", "2401.14038", "openalex:W3146366485", "openalex:W2023053047"}},
		{`learning ANDNOT (cat:cs.CV OR cat:stat.ML)`, `learning`, `learning -(cat:cs.CV OR cat:stat.ML)`,
			[]string{"2609.26811", "2609.26820", "openalex:W3146366485", "openalex:W3212386989"}},
		{`learning cat:cs ANDNOT cat:cs.CV`, `learning cat:cs`, `learning cat:cs NOT cat:cs.CV`,
			[]string{"2609.26811", "2609.26820"}},
		{`self-supervised ANDNOT au:wen`, `self-supervised`, `self-supervised -au:wen`,
			[]string{"openalex:W3212386989", "latex"}},
		// ANDNOT binds like AND: the survey found by ti:survey stays
		// (nothing is excluded from the OR), unless the OR is grouped.
		{`ti:survey OR attention ANDNOT survey`, ``, `ti:survey OR (attention -survey)`,
			[]string{"2401.14036", "2401.14038", "openalex:W3146366485", "openalex:W3212386989", "openalex:W2023053047"}},
		{`(ti:survey OR attention) ANDNOT survey`, `ti:survey OR attention`, `(ti:survey OR attention) -survey`,
			[]string{"2401.14036", "2401.14038", "openalex:W3146366485", "openalex:W2023053047"}},
	} {
		q, same := mustParse(t, c.q), mustParse(t, c.same)
		if q.String() != same.String() {
			t.Errorf("%s reads %q, %s reads %q: not one search", c.q, q.String(), c.same, same.String())
		}
		got := matching(q)
		slices.Sort(got)
		slices.Sort(c.hits)
		if !slices.Equal(got, c.hits) {
			t.Errorf("%s matches %v, want %v", c.q, got, c.hits)
		}
		if c.positive != "" && len(matching(mustParse(t, c.positive))) <= len(got) {
			t.Errorf("%s excludes nothing %s finds: the exclusion is not exercised", c.q, c.positive)
		}
	}
	// The bitset evaluation agrees with Match, on these searches and on
	// random ones written with ANDNOT.
	qs := []*Query{}
	for _, s := range []string{`attention ANDNOT ti:survey`, `learning ANDNOT (cat:cs.CV OR cat:stat.ML)`,
		`self-supervised ANDNOT au:wen`, `ti:survey OR attention ANDNOT survey`, `network ANDNOT "deep learning"`} {
		qs = append(qs, mustParse(t, s))
	}
	for _, q := range drawQueries(t, ps) {
		// "-x" written as arXiv writes it, once the search has a term
		// before its exclusion.
		if s := q.String(); strings.Contains(s, " -") && !strings.HasPrefix(s, "-") {
			if aq, err := Parse(strings.Replace(s, " -", " ANDNOT ", 1), testCats{}); err == nil {
				qs = append(qs, aq)
			}
		}
	}
	if len(qs) < 300 {
		t.Fatalf("only %d searches with ANDNOT", len(qs))
	}
	want := make([][]int32, len(docs))
	matches := 0
	for di, d := range docs {
		for qi, q := range qs {
			if q.Match(d) {
				want[di] = append(want[di], int32(qi))
				matches++
			}
		}
	}
	if matches < 30 {
		t.Fatalf("only %d matches among %d searches with ANDNOT: the property is not exercised", matches, len(qs))
	}
	t.Logf("%d searches with ANDNOT, %d matches", len(qs), matches)
	for _, got := range [][][]int32{MatchBatch(qs, docs), NewSet(qs).Match(docs)} {
		for di := range docs {
			if !slices.Equal(got[di], want[di]) {
				t.Errorf("doc %s: the batch matcher %v, Match %v", ps[di].ID, got[di], want[di])
			}
		}
	}
}

// TestMatchBatchProperty: for random searches over the fixtures' own
// words, MatchBatch finds a paper exactly when Match on its text does.
func TestMatchBatchProperty(t *testing.T) {
	ps := loadPapers(t)
	docs := docsOf(ps)
	checkMatchBatch(t, ps, docs, drawQueries(t, ps))
}

// TestMatchBatchVocabReplaced: when the process's vocab fills up while a
// batch's docs are built (here after every few docs), the batch's docs
// number their words in different vocabs, and MatchBatch and Match still
// give the same answers, on docs of old vocabs too.
func TestMatchBatchVocabReplaced(t *testing.T) {
	old := maxVocab
	maxVocab = 400
	t.Cleanup(func() { maxVocab = old; current.Store(nil) })
	current.Store(nil)
	ps := loadPapers(t)
	var docs []*Doc
	vocabs := map[*vocab]bool{}
	for _, p := range ps {
		d := docOf(p)
		docs = append(docs, d)
		vocabs[d.vocab] = true
	}
	if len(vocabs) < 3 {
		t.Fatalf("the docs use %d vocabs: the replacement is not exercised", len(vocabs))
	}
	checkMatchBatch(t, ps, docs, drawQueries(t, ps))
}

// TestMatchBatchCachedIDs: a set remembers its words' ids between
// batches (Set.Match), and stays right when a later batch brings words
// the vocab did not have yet, and when the vocab is replaced.
func TestMatchBatchCachedIDs(t *testing.T) {
	t.Cleanup(func() { current.Store(nil) })
	current.Store(nil)
	ps := loadPapers(t)
	qs := drawQueries(t, ps)
	set := NewSet(qs)
	half := len(ps) / 2
	var docs []*Doc
	for _, p := range ps[:half] {
		docs = append(docs, docOf(p))
	}
	checkSet(t, ps[:half], docs, qs, set)
	first := set.ids
	if first == nil || len(first.incomplete) == 0 {
		t.Fatal("the first half's vocab has every word of the searches: the later lookups are not exercised")
	}
	for _, p := range ps[half:] {
		docs = append(docs, docOf(p))
	}
	checkSet(t, ps, docs, qs, set)
	if set.ids == first || set.ids.vocab != first.vocab || len(set.ids.incomplete) >= len(first.incomplete) {
		t.Fatal("the second batch did not look up again the words the first lacked")
	}
	current.Store(nil)
	docs = docs[:0]
	for _, p := range ps[half:] {
		docs = append(docs, docOf(p))
	}
	checkSet(t, ps[half:], docs, qs, set)
	if set.ids.vocab == first.vocab {
		t.Fatal("the set kept the ids of the replaced vocab")
	}
}

// drawQueries returns random searches over the fixtures' own words.
func drawQueries(t testing.TB, ps []fixturePaper) []*Query {
	t.Helper()
	var pool []string
	seen := map[string]bool{}
	for _, p := range ps {
		for _, w := range strings.Fields(p.Title + " " + p.Abstract + " " + strings.Join(p.Authors, " ")) {
			w = strings.Trim(w, `.,;:()"$\{}[]`)
			if len(w) > 2 && !seen[strings.ToLower(w)] && !strings.ContainsAny(w, `\$"(){}:`) {
				seen[strings.ToLower(w)] = true
				pool = append(pool, w)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	// A few phrases read from the abstracts, each in many searches with
	// other terms around it: MatchBatch checks a phrase's docs once per
	// batch and shares the answer between those searches.
	var phrases []string
	for len(phrases) < 40 {
		ws := strings.Fields(ps[r.IntN(len(ps))].Abstract)
		if len(ws) < 2 {
			continue
		}
		i := r.IntN(len(ws) - 1)
		a, b := ws[i], ws[i+1]
		if strings.ContainsAny(a+b, `\$"(){}:.,;[]`) || len(a) < 3 || len(b) < 3 {
			continue
		}
		phrases = append(phrases, `"`+a+" "+b+`"`)
	}
	word := func() string {
		w := pool[r.IntN(len(pool))]
		switch r.IntN(10) {
		case 8:
			return phrases[r.IntN(len(phrases))]
		case 9:
			return "abs:" + pool[r.IntN(40)]
		case 0:
			return "ti:" + w
		case 1:
			return "abs:" + w
		case 2:
			return "au:" + w
		case 3:
			return `"` + w + " " + pool[r.IntN(len(pool))] + `"`
		}
		return w
	}
	var qs []*Query
	cats := []string{"cat:cs.LG", "cat:cs", "cat:stat.ML", "cat:cs.CV"}
	for len(qs) < 3000 {
		var parts []string
		for range 1 + r.IntN(4) {
			parts = append(parts, word())
		}
		switch r.IntN(6) {
		case 0:
			parts = append(parts, cats[r.IntN(len(cats))])
		case 1:
			parts = append(parts, "-"+word())
		case 2:
			parts = []string{"(" + parts[0] + " OR " + word() + ")", strings.Join(parts[1:], " ")}
		}
		q, err := Parse(strings.Join(parts, " "), testCats{})
		if err != nil {
			continue
		}
		qs = append(qs, q)
	}
	return qs
}

// checkMatchBatch checks that MatchBatch finds a paper of docs (those of
// ps) exactly when Match on its text does.
func checkMatchBatch(t *testing.T, ps []fixturePaper, docs []*Doc, qs []*Query) {
	t.Helper()
	checkAnswers(t, ps, docs, qs, MatchBatch(qs, docs))
}

// checkSet is checkMatchBatch for the set of qs, kept between calls.
func checkSet(t *testing.T, ps []fixturePaper, docs []*Doc, qs []*Query, set *Set) {
	t.Helper()
	checkAnswers(t, ps, docs, qs, set.Match(docs))
}

// checkAnswers checks that got lists, per doc, the searches of qs whose
// Match is true on it.
func checkAnswers(t *testing.T, ps []fixturePaper, docs []*Doc, qs []*Query, got [][]int32) {
	t.Helper()
	matches := 0
	for di, d := range docs {
		var want []int32
		for qi, q := range qs {
			if q.Match(d) {
				want = append(want, int32(qi))
			}
		}
		matches += len(want)
		if !slices.Equal(got[di], want) {
			t.Errorf("doc %s: MatchBatch %v, Match %v", ps[di].ID, got[di], want)
		}
	}
	if matches < 100 {
		t.Fatalf("only %d matches among %d searches: the property is not exercised", matches, len(qs))
	}
}

// TestQueryRemembersItsWordIDs: a query matched against many documents
// looks its words up once per vocab (node.resolved; a lookup that missed
// a word, once per size of the vocab) and stays right when a word it
// lacked comes with a later document, and against documents of
// an older vocab after the vocab was replaced.
func TestQueryRemembersItsWordIDs(t *testing.T) {
	t.Cleanup(func() { current.Store(nil) })
	current.Store(nil)
	q, err := Parse(`ti:quokka OR au:zyxwv OR "marsupial census"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := NewDoc("Plain graphs", "Nothing here.", []string{"Ann Author"}, nil)
	if q.Match(plain) {
		t.Fatal("a document without the words matches")
	}
	// The vocab lacks the words: the lookup that missed is kept too, for
	// as long as the vocab has no new word (a mute's word that no paper
	// has was looked up again, under the vocab's lock, for every paper).
	for _, n := range q.root.kids {
		if r := n.resolved.Load(); r == nil || r.size != plain.vocab.n.Load() {
			t.Errorf("term %q: the missed lookup is not kept with the vocab's size", n.text)
		}
	}
	if q.Match(NewDoc("Plain graphs", "", nil, nil)) {
		t.Fatal("a document without the words matches")
	}
	quokka := NewDoc("Quokka counts", "A marsupial census of islands.", []string{"Zyxwv Author"}, nil)
	first := q.Match(quokka)  // looks the words up, and keeps their ids
	second := q.Match(quokka) // with the ids kept
	if !first || !second || q.Match(plain) {
		t.Fatal("a word that came with a later document is not found, or found in one without it")
	}
	for _, n := range q.root.kids {
		if r := n.resolved.Load(); r == nil || r.v != quokka.vocab || r.size != -1 {
			t.Errorf("term %q: ids not kept once the vocab had its words", n.text)
		}
	}
	current.Store(nil) // a new vocab: its ids differ
	other := NewDoc("A marsupial census", "", nil, nil)
	if !q.Match(other) || !q.Match(quokka) || q.Match(plain) || q.Match(NewDoc("Plain", "", nil, nil)) {
		t.Error("wrong answers across two vocabs")
	}
}

// TestSignatureChangesNoAnswer: the documents' word signatures (Doc.sig
// and titleSig, which let a search skip a document or its title that
// lacks a term's words) change no answer: every drawn search matches the
// fixture papers exactly as it does with every signature bit set (no
// document skipped), and the signatures do skip most of the terms'
// lookups.
func TestSignatureChangesNoAnswer(t *testing.T) {
	ps := loadPapers(t)
	qs := drawQueries(t, ps)
	skipped, terms, titleSkipped, titleTerms := 0, 0, 0, 0
	for _, p := range ps {
		d := docOf(p)
		open := *d
		for i := range open.sig {
			open.sig[i] = ^uint64(0)
		}
		for i := range open.titleSig {
			open.titleSig[i] = ^uint64(0)
		}
		for _, q := range qs {
			if got, want := q.Match(d), q.Match(&open); got != want {
				t.Errorf("paper %s, search %s: %v with the signature, %v without", p.ID, q, got, want)
			}
		}
		for _, w := range []string{"graph", "quantum", "galaxy", "zebra", "protein"} {
			if id, ok := d.vocab.lookup(w); ok {
				terms++
				if !d.mayHave([]uint32{id}) {
					skipped++
				}
			}
		}
		for _, f := range []*field{&d.title, &d.abstract, &d.authors} {
			for _, id := range f.ids {
				if !d.mayHave([]uint32{id}) {
					t.Fatalf("paper %s: its word %q is not in its signature", p.ID, d.vocab.word(id))
				}
			}
		}
		for _, id := range d.title.ids {
			if !d.titleMayHave([]uint32{id}) {
				t.Fatalf("paper %s: its title's word %q is not in its title's signature", p.ID, d.vocab.word(id))
			}
		}
		// The abstract's words that are not the title's are mostly not in
		// the title's signature, as they are in the paper's.
		for _, id := range d.abstract.ids {
			if !d.title.has(id) {
				titleTerms++
				if !d.titleMayHave([]uint32{id}) {
					titleSkipped++
				}
			}
		}
	}
	if skipped == 0 {
		t.Errorf("the signatures skipped none of %d lookups of words", terms)
	}
	if titleSkipped < titleTerms*3/4 {
		t.Errorf("the titles' signatures skipped %d of %d lookups of words of the abstract only, want most", titleSkipped, titleTerms)
	}
}
