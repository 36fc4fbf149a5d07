package ranking

import (
	"cmp"
	"context"
	"slices"

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
	scores map[int64]map[int64]float32
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
	b := &Batch{scores: make(map[int64]map[int64]float32, len(want))}
	if len(users) == 0 {
		return b, nil
	}
	g, err := s.texts.current(ctx)
	if err != nil {
		return nil, err
	}
	if b.vecs, err = s.texts.vectors(ctx, g, ids, have); err != nil {
		return nil, err
	}
	if b.models, err = s.Models(ctx, users); err != nil {
		return nil, err
	}
	for u, ps := range want {
		m := b.models[u]
		sc := make(map[int64]float32, len(ps))
		for _, id := range ps {
			if v := b.vecs[id]; v != nil && m != nil {
				sc[id] = m.Score(v)
			}
		}
		b.scores[u] = sc
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
	sc := b.scores[userID]
	slices.SortStableFunc(papers, func(x, y match.Paper) int { return cmp.Compare(sc[y.ID], sc[x.ID]) })
	return b, nil
}

// Score is paper paperID's score for user userID (0 when it was not
// ranked); only the order of one user's scores means anything.
func (b *Batch) Score(userID, paperID int64) float32 { return b.scores[userID][paperID] }

// Order sorts ids (papers.id) best first for userID: by score, ties (and
// papers not ranked) in the order given.
func (b *Batch) Order(userID int64, ids []int64) {
	sc := b.scores[userID]
	// Each score read once, not twice per comparison.
	type scored struct {
		s  float32
		id int64
	}
	xs := make([]scored, len(ids))
	for i, id := range ids {
		xs[i] = scored{sc[id], id}
	}
	slices.SortStableFunc(xs, func(x, y scored) int { return cmp.Compare(y.s, x.s) })
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
