package ranking

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"followfeed/match"
	"followfeed/paper"
	"followfeed/relevance"
)

// Batch is a batch of users' papers scored by each user's model: digests,
// instant alerts and push channels rank a batch of users at once, sharing
// the papers' vectors. It is read-only and safe for concurrent use.
type Batch struct {
	models map[int64]*relevance.Model
	vecs   map[int64]*relevance.Vector
	scores map[int64]userScores
	// dense are the users whose papers were scored through a lexicon of
	// the batch's papers' features (relevance.Lexicon.Pays); WhyMany
	// explains their papers through it too.
	dense map[int64]bool
	// lex is that lexicon (nil when none paid), at each paper's index in
	// it, scorers the Scorers of it WhyMany reuses (each holds an array
	// of the lexicon's length).
	lex     *relevance.Lexicon
	at      map[int64]int
	scorers sync.Pool
	// weights are the dense users' models' weights of the lexicon, as
	// Rank's Scorer read them: WhyMany uses them again.
	weights map[int64]relevance.Weights
}

// userScores are one user's scores, sc[i] paper ids[i]'s (ids as Rank was
// given them): slices, not a map, since a digest batch ranks some 250
// papers for each of 50 users, and a map's inserts and probes were a
// tenth of a best-first digest's ranking.
type userScores struct {
	ids []int64
	sc  []float32
}

// of returns paper id's score (0 when it was not ranked).
func (us userScores) of(id int64) float32 {
	if i := slices.Index(us.ids, id); i >= 0 {
		return us.sc[i]
	}
	return 0
}

// Rank scores, for each user of want, the papers (papers.id) want lists,
// loading each user's model (Models: a user without one gets one from
// their follows) and each paper's vector once for the batch. have may hold
// papers already loaded (with their abstracts) to spare a read; papers
// that are not stored score 0.
func (s *Service) Rank(ctx context.Context, want map[int64][]int64, have map[int64]*paper.Paper) (*Batch, error) {
	users := make([]int64, 0, len(want))
	var ids []int64
	seen := map[int64]bool{}
	for u, ps := range want {
		users = append(users, u)
		for _, id := range ps {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(users)
	b := &Batch{scores: make(map[int64]userScores, len(want))}
	if len(users) == 0 {
		return b, nil
	}
	g, err := s.texts.current(ctx)
	if err != nil {
		return nil, err
	}
	if b.vecs, err = s.texts.vectors(ctx, g, ids, have, forRanking); err != nil {
		return nil, err
	}
	if b.models, err = s.Models(ctx, users); err != nil {
		return nil, err
	}
	// Each user's papers' features in all (what Score reads for them),
	// and the batch's, each paper once: a lexicon of the batch's features
	// pays when its users share their papers (a digest batch's users, the
	// same day's papers), not for one user's feed.
	features := make(map[int64]int, len(want))
	scored, distinct := 0, 0
	for u, ps := range want {
		for _, id := range ps {
			if v := b.vecs[id]; v != nil {
				features[u] += v.Len()
			}
		}
		scored += features[u]
	}
	for _, v := range b.vecs {
		if v != nil {
			distinct += v.Len()
		}
	}
	b.dense, b.weights = map[int64]bool{}, map[int64]relevance.Weights{}
	if relevance.LexiconPays(distinct, scored) {
		b.lex, b.at = s.lexicons.of(ids, b.vecs)
	}
	lex, at := b.lex, b.at
	var dense *relevance.Scorer
	for u, ps := range want {
		m := b.models[u]
		us := userScores{ids: slices.Clone(ps), sc: make([]float32, len(ps))} // a copy: Order sorts its ids in place
		if m == nil {
			b.scores[u] = us
			continue
		}
		if lex != nil && lex.Pays(m, features[u]) {
			// The same scores, to the bit, from the model's weights of
			// the batch's features read once.
			if dense == nil {
				dense = b.scorer()
				defer b.scorers.Put(dense)
			}
			dense.Use(m)
			b.dense[u] = true
			b.weights[u] = dense.Weights()
			for i, id := range ps {
				us.sc[i] = dense.Score(at[id])
			}
		} else {
			for i, id := range ps {
				if v := b.vecs[id]; v != nil {
					us.sc[i] = m.Score(v)
				}
			}
		}
		b.scores[u] = us
	}
	return b, nil
}

// RankPapers ranks one user's matched papers (Rank, with the papers as
// loaded: their vectors need no read) and sorts them best first in place,
// stably (ties keep their order; a paper that is not stored scores 0). It
// returns the batch, for Why.
func (s *Service) RankPapers(ctx context.Context, userID int64, papers []match.Paper) (*Batch, error) {
	ids := make([]int64, 0, len(papers))
	have := make(map[int64]*paper.Paper, len(papers))
	for i := range papers {
		ids = append(ids, papers[i].ID)
		have[papers[i].ID] = &papers[i].Paper
	}
	b, err := s.Rank(ctx, map[int64][]int64{userID: ids}, have)
	if err != nil {
		return nil, err
	}
	// ids is papers' order: each paper's score is at its index.
	sc := b.scores[userID].sc
	order := make([]int, len(papers))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(sc[y], sc[x]); c != 0 {
			return c
		}
		return cmp.Compare(x, y) // stably
	})
	sorted := make([]match.Paper, len(papers))
	for i, j := range order {
		sorted[i] = papers[j]
	}
	copy(papers, sorted)
	return b, nil
}

// Score is paper paperID's score for user userID (0 when it was not
// ranked); only the order of one user's scores means anything.
func (b *Batch) Score(userID, paperID int64) float32 { return b.scores[userID].of(paperID) }

// Order sorts ids (papers.id) best first for userID: by score, ties (and
// papers not ranked) in the order given.
func (b *Batch) Order(userID int64, ids []int64) {
	us := b.scores[userID]
	// Each score read once, not twice per comparison; ids are usually the
	// ones ranked, in the same order (a digest's candidates), whose
	// scores are us.sc as they are. Sorted unstably with the index as
	// the tie-break, which is the stable order at less than half a
	// stable sort's cost (250 distinct scores: 8 µs against 18-28 µs;
	// the stable sort was 5% of a best-first digest's extra cost in make
	// bench's profile).
	type scored struct {
		s  float32
		at int32
		id int64
	}
	same := slices.Equal(ids, us.ids)
	xs := make([]scored, len(ids))
	for i, id := range ids {
		if same {
			xs[i] = scored{us.sc[i], int32(i), id}
		} else {
			xs[i] = scored{us.of(id), int32(i), id}
		}
	}
	slices.SortFunc(xs, func(x, y scored) int {
		if c := cmp.Compare(y.s, x.s); c != 0 {
			return c
		}
		return cmp.Compare(x.at, y.at)
	})
	for i := range xs {
		ids[i] = xs[i].id
	}
}

// Why says why paper paperID ranks for userID, as reasons with a text
// ("with your co-author Ann One", "like 3 papers you marked"); nil when
// the paper was not ranked. It allocates: call it for the papers shown.
func (b *Batch) Why(userID, paperID int64) []relevance.Reason {
	m, v := b.models[userID], b.vecs[paperID]
	if m == nil || v == nil {
		return nil
	}
	return m.Explain(v)
}

// WhyMany is Why of each of paperIDs for userID (out[i] paperIDs[i]'s):
// the papers a user is shown, explained at once, which for a user whose
// papers were scored through the batch's lexicon reads the words' weights
// from one dense array of them (relevance.Scorer.Explain: the same
// reasons), as Rank's Scorer read them (kept: reading them again cost a
// tenth of a best-first digest's explaining), rather than from the
// model's table for each paper.
func (b *Batch) WhyMany(userID int64, paperIDs []int64) [][]relevance.Reason {
	out := make([][]relevance.Reason, len(paperIDs))
	m := b.models[userID]
	if m == nil {
		return out
	}
	if !b.dense[userID] {
		for i, id := range paperIDs {
			out[i] = b.Why(userID, id)
		}
		return out
	}
	s := b.scorer()
	defer b.scorers.Put(s)
	s.UseWeights(b.weights[userID])
	// The papers' reasons in one array (some two a paper), each paper's
	// a piece of it capped at its end, nil when it has none (as Why).
	all := make([]relevance.Reason, 0, 2*len(paperIDs))
	for i, id := range paperIDs {
		k, ok := b.at[id]
		if !ok {
			out[i] = b.Why(userID, id) // not ranked: nil
			continue
		}
		start := len(all)
		if all = s.AppendExplain(all, k); len(all) > start {
			out[i] = all[start:len(all):len(all)]
		}
	}
	return out
}

// scorer returns a Scorer of the batch's lexicon, from those WhyMany
// and Rank put back.
func (b *Batch) scorer() *relevance.Scorer {
	if s, ok := b.scorers.Get().(*relevance.Scorer); ok {
		return s
	}
	return b.lex.Scorer()
}
