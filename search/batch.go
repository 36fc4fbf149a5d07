package search

// MatchBatch evaluates every search against every doc and returns, per doc
// (in the order of docs), the indices into queries of the searches that
// match it, ascending. It gives exactly the answers of Query.Match.
//
// It does not try every pair. The batch's docs are indexed by their words
// and categories (an inverted index: entry → docs), and each search is
// reduced to a few entries at least one of which every doc it matches
// must contain: for AND the part whose entries are rarest in this batch,
// for OR the union of its alternatives, for a phrase its rarest word.
// Only the docs under those entries are evaluated. The cost is one pass
// over the docs' words, plus, per search, a few index look-ups and one
// evaluation per candidate doc: it grows linearly with the number of
// searches and with how common their rarest terms are, not with
// searches × docs.
func MatchBatch(queries []*Query, docs []*Doc) [][]int32 {
	out := make([][]int32, len(docs))
	if len(queries) == 0 || len(docs) == 0 {
		return out
	}
	postings := make(map[string][]int32, 4*len(docs))
	for i, d := range docs {
		for _, t := range d.triggers {
			postings[t] = append(postings[t], int32(i))
		}
	}
	df := func(t string) int { return len(postings[t]) }
	stamp := make([]int32, len(docs))
	var entries []string
	for qi, q := range queries {
		entries = q.root.triggers(df, entries[:0])
		mark := int32(qi + 1)
		for _, e := range entries {
			for _, di := range postings[e] {
				if stamp[di] == mark {
					continue
				}
				stamp[di] = mark
				if q.root.match(docs[di]) {
					out[di] = append(out[di], int32(qi))
				}
			}
		}
	}
	return out
}

// triggers appends to dst index entries at least one of which every doc
// n matches contains, choosing the cheapest (by df, the docs per entry)
// where there is a choice. A node that needs no entry (a NOT) appends
// nothing and reports it by leaving dst as it was; Parse guarantees the
// root of a query has entries.
func (n *node) triggers(df func(string) int, dst []string) []string {
	switch n.op {
	case opCat:
		return append(dst, catTrigger(n.catKey))
	case opTerm:
		best, bestCost := -1, 0
		for i := range n.folds {
			c := 0
			switch n.field {
			case Title, Abstract:
				c = df(stemTrigger(n.stems[i]))
			case Author:
				c = df(authorTrigger(n.folds[i]))
			default:
				c = df(stemTrigger(n.stems[i])) + df(authorTrigger(n.folds[i]))
			}
			if best < 0 || c < bestCost {
				best, bestCost = i, c
			}
		}
		switch n.field {
		case Title, Abstract:
			return append(dst, stemTrigger(n.stems[best]))
		case Author:
			return append(dst, authorTrigger(n.folds[best]))
		}
		return append(dst, stemTrigger(n.stems[best]), authorTrigger(n.folds[best]))
	case opOr:
		for _, k := range n.kids {
			dst = k.triggers(df, dst)
		}
		return dst
	case opAnd:
		var best []string
		bestCost := -1
		for _, k := range n.kids {
			if k.op == opNot || !positive(k) {
				continue
			}
			e := k.triggers(df, nil)
			c := 0
			for _, t := range e {
				c += df(t)
			}
			if bestCost < 0 || c < bestCost {
				best, bestCost = e, c
			}
		}
		return append(dst, best...)
	}
	return dst
}
