// Package search is followfeed's query language: parsing and
// normalising a search written the way arXiv's search is (terms, "exact
// phrases", implicit AND, OR, NOT or -term, arXiv's binary ANDNOT,
// parentheses, the field prefixes ti: abs: au: cat: all:), evaluating it on a paper's text (Doc, Match), and
// matching a batch of papers against many searches at once with an inverted
// index (MatchBatch, or Set.Match for a compiled set of searches kept
// between batches). Terms match stemmed English words, ignoring case and
// accents; hyphenated words match as written and by their parts; LaTeX in
// titles and abstracts does not break words. The package is pure: category
// names are resolved by the caller's Categories.
package search

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"followfeed/apperr"
)

// Limits on a query.
const (
	// MaxChars is the longest query accepted, in characters.
	MaxChars = 300
	// MaxTerms is the most words (phrase words count one each) and
	// category filters a query may have.
	MaxTerms = 16
	// MaxNormalized is the longest normalised form (the follow's id).
	MaxNormalized = 400
)

// Field is the part of a paper a term is matched in.
type Field uint8

// The fields. All is title, abstract and author names.
const (
	All Field = iota
	Title
	Abstract
	Author
)

var fieldPrefix = map[Field]string{All: "", Title: "ti:", Abstract: "abs:", Author: "au:"}

// Categories resolves the value of a cat: filter ("cs.LG", "CS", "math.IT"
// an alias) to its canonical id and the match key a paper carries for it
// ("category:cs.LG", "archive:cs"), or says why it cannot.
type Categories interface {
	ResolveCategory(value string) (id, key string, err error)
}

type op uint8

const (
	opAnd op = iota
	opOr
	opNot
	opTerm // a word, a hyphenated word or a phrase
	opCat
)

type node struct {
	op    op
	kids  []*node
	field Field
	// opTerm: what was written (folded), whether quoted, and the words.
	text   string
	quoted bool
	folds  []string
	stems  []string
	// opCat: canonical id and match key.
	catID, catKey string
	pos           int // 1-based character position in the input
	// resolved: an opTerm's word ids in the vocab they were last looked
	// up in, once it had them all (node.match).
	resolved atomic.Pointer[termIDs]
}

// Query is a parsed, normalised search. Its String is the normal form:
// two spellings of the same search (case, accents, spacing, AND, NOT,
// ANDNOT, redundant parentheses) give the same String, and
// Parse(q.String()) gives q back. An exclusion is written "-" whichever
// way it was typed: "a ANDNOT b", "a AND NOT b", "a NOT b" and "a -b" are
// one search, "a -b". It is read-only once parsed (its terms remember,
// atomically, their word ids in a vocab) and safe for concurrent use.
type Query struct {
	root *node
	norm string
}

// String returns the normal form of q, e.g. `"diffusion model" (cat:cs.LG OR cat:cs.CV) -survey`.
func (q *Query) String() string { return q.norm }

// Error is a search that cannot be used: where (1-based character
// position in the search) and what was expected.
type Error struct {
	Pos     int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("at character %d: %s", e.Pos, e.Message) }

// AppError returns e as an *apperr.Error (Invalid, Field field) whose
// Details carry the position: Index is the 1-based character position.
func (e *Error) AppError(field string) *apperr.Error {
	return &apperr.Error{Code: apperr.Invalid, Field: field, Message: "the query cannot be used: " + e.Error(),
		Details: []apperr.Detail{{Index: e.Pos, Field: field, Reason: e.Message}}, Err: e}
}

// stopWords are words too common to search for alone.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for from has have in into is it its of on or
		that the their this to was we were which will with our not no can these those also than then there
		they via`) {
		stopWords[w] = true
	}
}

// broad reports whether a word matches nearly every paper: a stop word or
// a single letter or digit.
func broad(fold string) bool { return stopWords[fold] || utf8.RuneCountInString(fold) < 2 }

// Parse reads a search. Errors are *Error values saying where and what was
// expected: unbalanced quotes or parentheses, an unknown prefix, an
// operator the grammar does not know (operatorLike: XOR, ORNOT, NEAR/3 …),
// an operator without its terms (ANDNOT first, AND ANDNOT), no positive
// term ("-survey" alone), a search that would match nearly everything (a
// lone stop word, categories only), over MaxChars characters or MaxTerms
// terms.
func Parse(input string, cats Categories) (*Query, error) {
	if n := utf8.RuneCountInString(input); n > MaxChars {
		return nil, &Error{Pos: MaxChars + 1, Message: fmt.Sprintf("a query may have at most %d characters; this one has %d", MaxChars, n)}
	}
	toks, err := lex(input)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, &Error{Pos: 1, Message: `expected a query: words, "a phrase", cat:cs.LG, au:name …`}
	}
	p := &parser{toks: toks, cats: cats, end: utf8.RuneCountInString(input) + 1}
	root, err := p.or(All)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		t := p.toks[p.i]
		if t.kind == tRParen {
			return nil, &Error{Pos: t.pos, Message: "this ) closes no ( before it"}
		}
		return nil, &Error{Pos: t.pos, Message: "expected the end of the query"}
	}
	if n, at := countTerms(root); n > MaxTerms {
		return nil, &Error{Pos: at, Message: fmt.Sprintf("a query may have at most %d terms (words and cat: filters); this one has %d", MaxTerms, n)}
	}
	root, err = prune(root)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, &Error{Pos: 1, Message: "expected a more specific word: a query of only common words matches nearly every paper"}
	}
	if !positive(root) {
		return nil, &Error{Pos: firstPos(root), Message: "expected a word or phrase the papers must contain: a query of only exclusions (-survey) matches nearly every paper"}
	}
	if !specific(root) {
		return nil, &Error{Pos: firstPos(root), Message: "expected a word or phrase besides cat: filters: a query of categories alone matches everything in them (follow the category instead)"}
	}
	q := &Query{root: root, norm: format(root, false)}
	if utf8.RuneCountInString(q.norm) > MaxNormalized {
		return nil, &Error{Pos: 1, Message: fmt.Sprintf("the query is longer than %d characters once written out; shorten it", MaxNormalized)}
	}
	return q, nil
}

// ---- lexer ----

type tkind uint8

const (
	tWord tkind = iota
	tPhrase
	tPrefix
	tLParen
	tRParen
	tMinus
	tOr
	tAnd
	tNot
	tAndNot // arXiv's binary "a ANDNOT b": a AND NOT b
)

type tok struct {
	kind tkind
	text string
	pos  int
}

var prefixes = map[string]bool{"ti": true, "abs": true, "au": true, "cat": true, "all": true}

func lex(input string) ([]tok, error) {
	rs := []rune(input)
	var out []tok
	for i := 0; i < len(rs); {
		r := rs[i]
		pos := i + 1
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0' || r == '\u3000':
			i++
		case r == '(':
			out = append(out, tok{tLParen, "(", pos})
			i++
		case r == ')':
			out = append(out, tok{tRParen, ")", pos})
			i++
		case r == '"' || r == '“' || r == '”':
			j := i + 1
			for j < len(rs) && rs[j] != '"' && rs[j] != '”' && rs[j] != '“' {
				j++
			}
			if j >= len(rs) {
				return nil, &Error{Pos: pos, Message: `expected a closing " for the phrase that starts here`}
			}
			out = append(out, tok{tPhrase, string(rs[i+1 : j]), pos})
			i = j + 1
		case r == '-' && (i+1 < len(rs) && !isSpace(rs[i+1])):
			out = append(out, tok{tMinus, "-", pos})
			i++
		default:
			j := i
			for j < len(rs) && !isSpace(rs[j]) && rs[j] != '(' && rs[j] != ')' && rs[j] != '"' && rs[j] != '“' && rs[j] != '”' {
				j++
			}
			w := string(rs[i:j])
			switch w {
			case "OR", "|":
				out = append(out, tok{tOr, w, pos})
				i = j
				continue
			case "AND", "&":
				out = append(out, tok{tAnd, w, pos})
				i = j
				continue
			case "NOT":
				out = append(out, tok{tNot, w, pos})
				i = j
				continue
			case "ANDNOT":
				out = append(out, tok{tAndNot, w, pos})
				i = j
				continue
			}
			if operatorLike(w) {
				return nil, &Error{Pos: pos, Message: fmt.Sprintf(`%q is not an operator of this syntax (the operators are AND, OR, NOT, ANDNOT, - and parentheses); to search for the word, write it in lower case or in quotes ("%s")`, w, w)}
			}
			if k := strings.IndexByte(w, ':'); k > 0 && allLetters(w[:k]) {
				name := strings.ToLower(w[:k])
				if !prefixes[name] {
					return nil, &Error{Pos: pos, Message: fmt.Sprintf("unknown field %q; the fields are ti: (title), abs: (abstract), au: (author), cat: (category) and all:", w[:k+1])}
				}
				out = append(out, tok{tPrefix, name, pos})
				if rest := w[k+1:]; rest != "" {
					out = append(out, tok{tWord, rest, pos + utf8.RuneCountInString(w[:k+1])})
				}
				i = j
				continue
			}
			out = append(out, tok{tWord, w, pos})
			i = j
		}
	}
	return out, nil
}

// foreignOperators are other search syntaxes' operators (Boolean and
// proximity) that operatorLike refuses when written in capitals.
var foreignOperators = map[string]bool{"XOR": true, "NEAR": true, "ONEAR": true, "ADJ": true, "WITHIN": true}

// operatorLike reports whether w, a bare word (not quoted, no field
// prefix) that is not one of AND, OR, NOT, ANDNOT, reads as an operator
// the grammar does not know, so that Parse refuses it instead of
// searching for it. That is a word of capital letters A–Z only that is
//
//   - two or more of AND, OR and NOT run together (ORNOT, NOTAND, ANDOR,
//     ANDAND, …), or
//   - XOR, NEAR, ONEAR, ADJ or WITHIN, alone or with a distance (NEAR3,
//     NEAR/3, ADJ2), or W/n or PRE/n (W/5, PRE/3).
//
// Lower- and mixed-case words ("xor", "Near") and capitals that are not
// operators (CNN, NAND, BERT) stay words, as a quoted "XOR" does.
func operatorLike(w string) bool {
	head, dist, slash := strings.Cut(w, "/")
	if slash && (dist == "" || strings.Trim(dist, "0123456789") != "") {
		return false
	}
	if !slash {
		head = strings.TrimRight(w, "0123456789")
		dist = w[len(head):]
	}
	if head == "" || strings.Trim(head, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return false
	}
	if foreignOperators[head] || (slash && (head == "W" || head == "PRE")) {
		return true
	}
	if dist != "" || slash {
		return false
	}
	// Two or more of AND, OR, NOT run together.
	n := 0
	for rest := head; rest != ""; n++ {
		switch {
		case strings.HasPrefix(rest, "AND"):
			rest = rest[3:]
		case strings.HasPrefix(rest, "NOT"):
			rest = rest[3:]
		case strings.HasPrefix(rest, "OR"):
			rest = rest[2:]
		default:
			return false
		}
	}
	return n >= 2
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0' || r == '\u3000'
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isASCIILetter(s[i]) {
			return false
		}
	}
	return s != ""
}

// ---- parser ----

type parser struct {
	toks  []tok
	i     int
	cats  Categories
	end   int // position just after the input
	depth int
}

func (p *parser) peek() *tok {
	if p.i < len(p.toks) {
		return &p.toks[p.i]
	}
	return nil
}

func (p *parser) or(f Field) (*node, error) {
	first, err := p.and(f)
	if err != nil {
		return nil, err
	}
	kids := []*node{first}
	for t := p.peek(); t != nil && t.kind == tOr; t = p.peek() {
		p.i++
		if nt := p.peek(); nt == nil || nt.kind == tRParen || nt.kind == tOr {
			return nil, &Error{Pos: p.posOr(nt), Message: "expected a term after OR"}
		}
		k, err := p.and(f)
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &node{op: opOr, kids: kids, pos: first.pos}, nil
}

func (p *parser) posOr(t *tok) int {
	if t == nil {
		return p.end
	}
	return t.pos
}

func (p *parser) and(f Field) (*node, error) {
	var kids []*node
	for {
		t := p.peek()
		if t == nil || t.kind == tRParen || t.kind == tOr {
			break
		}
		if t.kind == tAnd {
			if len(kids) == 0 {
				return nil, &Error{Pos: t.pos, Message: "expected a term before AND"}
			}
			p.i++
			if nt := p.peek(); nt == nil || nt.kind == tRParen || nt.kind == tOr || nt.kind == tAnd || nt.kind == tAndNot {
				return nil, &Error{Pos: p.posOr(nt), Message: "expected a term after AND"}
			}
			continue
		}
		if t.kind == tAndNot {
			// a ANDNOT b is a AND NOT b: b (a term, phrase, prefixed
			// term or parenthesised group) excluded, as binding as AND.
			if len(kids) == 0 {
				return nil, &Error{Pos: t.pos, Message: "expected a term before ANDNOT"}
			}
			p.i++
			if nt := p.peek(); nt == nil || nt.kind == tRParen || nt.kind == tOr || nt.kind == tAnd || nt.kind == tAndNot || nt.kind == tNot || nt.kind == tMinus {
				return nil, &Error{Pos: p.posOr(nt), Message: "expected a term to exclude after ANDNOT"}
			}
			k, err := p.primary(f)
			if err != nil {
				return nil, err
			}
			kids = append(kids, &node{op: opNot, kids: []*node{k}, pos: t.pos})
			continue
		}
		k, err := p.unary(f)
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 0 {
		t := p.peek()
		if t != nil && t.kind == tOr {
			return nil, &Error{Pos: t.pos, Message: "expected a term before OR"}
		}
		return nil, &Error{Pos: p.posOr(t), Message: "expected a term"}
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return &node{op: opAnd, kids: kids, pos: kids[0].pos}, nil
}

func (p *parser) unary(f Field) (*node, error) {
	t := p.peek()
	if t.kind == tNot || t.kind == tMinus {
		p.i++
		nt := p.peek()
		if nt == nil || nt.kind == tRParen || nt.kind == tOr || nt.kind == tAnd || nt.kind == tAndNot || nt.kind == tNot || nt.kind == tMinus {
			return nil, &Error{Pos: p.posOr(nt), Message: fmt.Sprintf("expected a term to exclude after %s", t.text)}
		}
		k, err := p.primary(f)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, kids: []*node{k}, pos: t.pos}, nil
	}
	return p.primary(f)
}

func (p *parser) primary(f Field) (*node, error) {
	t := p.peek()
	p.i++
	switch t.kind {
	case tLParen:
		p.depth++
		if p.depth > 8 {
			return nil, &Error{Pos: t.pos, Message: "parentheses nest at most 8 deep"}
		}
		if nt := p.peek(); nt != nil && nt.kind == tRParen {
			return nil, &Error{Pos: nt.pos, Message: "expected a term inside the parentheses"}
		}
		n, err := p.or(f)
		if err != nil {
			return nil, err
		}
		if c := p.peek(); c == nil || c.kind != tRParen {
			return nil, &Error{Pos: t.pos, Message: "expected a ) to close the ( here"}
		}
		p.i++
		p.depth--
		return n, nil
	case tPrefix:
		nt := p.peek()
		if t.text == "cat" {
			if nt == nil || nt.kind != tWord || nt.pos != t.pos+4 {
				return nil, &Error{Pos: t.pos, Message: "expected a category right after cat:, like cat:cs.LG or cat:cs"}
			}
			p.i++
			id, key, err := p.cats.ResolveCategory(nt.text)
			if err != nil {
				return nil, &Error{Pos: nt.pos, Message: err.Error()}
			}
			return &node{op: opCat, catID: id, catKey: key, pos: t.pos}, nil
		}
		if nt == nil || nt.pos != t.pos+len(t.text)+1 || (nt.kind != tWord && nt.kind != tPhrase && nt.kind != tLParen) {
			return nil, &Error{Pos: t.pos, Message: fmt.Sprintf(`expected a word, "a phrase" or (…) right after %s:`, t.text)}
		}
		return p.primary(fieldOf(t.text))
	case tWord, tPhrase:
		return p.term(t, f)
	case tRParen:
		return nil, &Error{Pos: t.pos, Message: "this ) closes no ( before it"}
	}
	return nil, &Error{Pos: t.pos, Message: fmt.Sprintf("expected a term, not %s", t.text)}
}

func fieldOf(prefix string) Field {
	switch prefix {
	case "ti":
		return Title
	case "abs":
		return Abstract
	case "au":
		return Author
	}
	return All
}

func (p *parser) term(t *tok, f Field) (*node, error) {
	toks, _ := tokenize(t.text, 0, f != Author, false, nil)
	n := &node{op: opTerm, field: f, quoted: t.kind == tPhrase, pos: t.pos}
	for _, tk := range toks {
		n.folds = append(n.folds, tk.fold)
		n.stems = append(n.stems, tk.stem)
	}
	if len(n.folds) == 0 {
		if n.quoted {
			return nil, &Error{Pos: t.pos, Message: "expected a word inside the quotes"}
		}
		return nil, &Error{Pos: t.pos, Message: fmt.Sprintf("expected a word: %q has no letters or digits", t.text)}
	}
	// What was written, in the words it reads as: a phrase's words with
	// spaces, a hyphenated (or otherwise joined) word's parts with hyphens.
	sep := "-"
	if n.quoted {
		sep = " "
	}
	n.text = strings.Join(n.folds, sep)
	return n, nil
}

// ---- pruning and checks ----

// prune drops unquoted stop words from AND (they would match every paper),
// flattens nested AND/OR and removes duplicate alternatives. A stop word
// in an OR, or excluded, makes the search too broad: an error.
func prune(n *node) (*node, error) {
	switch n.op {
	case opTerm:
		if !n.quoted && len(n.folds) == 1 && broad(n.folds[0]) {
			return nil, nil
		}
		return n, nil
	case opCat:
		return n, nil
	case opNot:
		k, err := prune(n.kids[0])
		if err != nil {
			return nil, err
		}
		if k == nil {
			return nil, &Error{Pos: n.pos, Message: "expected a more specific word to exclude: a common word like this excludes nearly every paper"}
		}
		n.kids[0] = k
		return n, nil
	}
	var kids []*node
	seen := map[string]bool{}
	for _, k := range n.kids {
		pk, err := prune(k)
		if err != nil {
			return nil, err
		}
		if pk == nil {
			if n.op == opOr {
				return nil, &Error{Pos: k.pos, Message: fmt.Sprintf("expected a more specific word than %q: an alternative this common matches nearly every paper", k.text)}
			}
			continue
		}
		group := pk.op == n.op
		add := []*node{pk}
		if group {
			add = pk.kids
		}
		for _, a := range add {
			s := format(a, false)
			if !seen[s] {
				seen[s] = true
				kids = append(kids, a)
			}
		}
	}
	switch len(kids) {
	case 0:
		if n.op == opAnd {
			return nil, &Error{Pos: n.pos, Message: "expected a more specific word: a query of only common words matches nearly every paper"}
		}
		return nil, nil
	case 1:
		return kids[0], nil
	}
	n.kids = kids
	return n, nil
}

// countTerms counts words and category filters, and where the one past
// the limit is.
func countTerms(n *node) (count, at int) {
	var walk func(*node)
	walk = func(n *node) {
		switch n.op {
		case opTerm:
			count += len(n.folds)
		case opCat:
			count++
		}
		if count > MaxTerms && at == 0 {
			at = n.pos
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(n)
	return count, at
}

// positive reports whether every match needs some term present (not only
// absences): an AND needs one positive part, an OR all of them.
func positive(n *node) bool {
	switch n.op {
	case opTerm, opCat:
		return true
	case opNot:
		return false
	case opAnd:
		for _, k := range n.kids {
			if positive(k) {
				return true
			}
		}
		return false
	}
	for _, k := range n.kids {
		if !positive(k) {
			return false
		}
	}
	return true
}

// specific is positive with category filters not counting: every match
// needs a word.
func specific(n *node) bool {
	switch n.op {
	case opTerm:
		return true
	case opCat, opNot:
		return false
	case opAnd:
		for _, k := range n.kids {
			if specific(k) {
				return true
			}
		}
		return false
	}
	for _, k := range n.kids {
		if !specific(k) {
			return false
		}
	}
	return true
}

func firstPos(n *node) int { return n.pos }

// ---- normal form ----

// format writes n in the normal form; grouped says n sits inside an AND or
// NOT, where an OR needs parentheses.
func format(n *node, grouped bool) string {
	switch n.op {
	case opTerm:
		s := n.text
		if n.quoted {
			s = `"` + s + `"`
		}
		return fieldPrefix[n.field] + s
	case opCat:
		return "cat:" + n.catID
	case opNot:
		k := n.kids[0]
		if k.op == opTerm || k.op == opCat {
			return "-" + format(k, true)
		}
		return "-(" + format(k, false) + ")"
	case opAnd:
		parts := make([]string, len(n.kids))
		for i, k := range n.kids {
			parts[i] = format(k, true)
		}
		return strings.Join(parts, " ")
	}
	parts := make([]string, len(n.kids))
	for i, k := range n.kids {
		parts[i] = format(k, false)
	}
	s := strings.Join(parts, " OR ")
	if grouped {
		return "(" + s + ")"
	}
	return s
}
