package notify

import (
	"context"
	"fmt"
	"slices"
	"time"

	"followfeed/follow"
	"followfeed/match"
)

// Best first: a user who chose OrderBest gets one list of their window's
// candidates (the newest `candidates`), ranked by their model (Ranker:
// package ranking), best first, within their budget (MaxPapers per
// digest; per day for instant alerts), where KeepFollowed lets followed
// persons' papers and followed papers' events pass; each paper says why
// it ranks, and the rest is counted by follow.

// rank ranks the candidates of rows whose users chose OrderBest, in one
// Rank for the batch; nil when there are none, no Ranker, or ranking
// failed (logged: those digests go out newest first rather than not at
// all).
func (d *Digester) rank(ctx context.Context, rows []digestRow, results []match.Result) RankedBatch {
	if d.ranker == nil {
		return nil
	}
	want := map[int64][]int64{}
	for i, row := range rows {
		if row.ranked() && len(results[i].Papers) > 0 {
			want[row.userID] = paperIDs(results[i])
		}
	}
	if len(want) == 0 {
		return nil
	}
	b, err := d.ranker.Rank(ctx, want, nil)
	if err != nil {
		d.logger.WarnContext(ctx, "ranking digests failed; sending them newest first", "users", len(want), "error", err.Error())
		return nil
	}
	return b
}

// budgets are the most papers each row's digest lists when it is best
// first: MaxPapers (0: MaxPapersLimit); for an instant alert with a
// budget, what the day leaves of it after the user's earlier alerts of the
// local day (alertsListedToday). Rows that are not ranked get 0.
func (d *Digester) budgets(ctx context.Context, rows []digestRow, ranked RankedBatch) ([]int, error) {
	out := make([]int, len(rows))
	if ranked == nil {
		return out, nil
	}
	var daily []int
	for i, row := range rows {
		if !row.ranked() {
			continue
		}
		out[i] = row.maxPapers
		switch {
		case row.maxPapers == 0:
			out[i] = MaxPapersLimit
		case row.kind == "instant":
			daily = append(daily, i)
		}
	}
	if len(daily) == 0 {
		return out, nil
	}
	used, err := d.alertsListedToday(ctx, rows, daily)
	if err != nil {
		return nil, err
	}
	for k, i := range daily {
		out[i] = max(rows[i].maxPapers-used[k], 0)
	}
	return out, nil
}

// alertsListedToday counts, for each row of rows at idx (instant alerts),
// the papers the user's other instant alerts listed since the local
// midnight (the user's time zone): alerts sent, being sent or perhaps
// delivered (unknown); rows of earlier releases, which did not record
// what they listed, count their papers up to MaxPerDigest. One statement
// (digests_instant_day_idx: one range per user).
func (d *Digester) alertsListedToday(ctx context.Context, rows []digestRow, idx []int) ([]int, error) {
	users, ids := make([]int64, len(idx)), make([]int64, len(idx))
	since := make([]time.Time, len(idx))
	now := d.now()
	for k, i := range idx {
		users[k], ids[k] = rows[i].userID, rows[i].id
		y, m, day := now.In(zone(rows[i].tz)).Date()
		since[k] = time.Date(y, m, day, 0, 0, 0, 0, zone(rows[i].tz))
	}
	r, err := d.db.Pool.Query(ctx, `
		SELECT w.n, (SELECT coalesce(sum(coalesce(g.shown, least(g.papers, $4))), 0)::int FROM digests g
		             WHERE g.user_id = w.user_id AND g.kind = 'instant' AND g.created_at >= w.since
		               AND g.id <> w.id AND g.state IN ($5, $6, $7))
		FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) WITH ORDINALITY AS w(user_id, id, since, n)`, users, ids, since, MaxPerDigest, StateSent, StateSending, StateUnknown)
	if err != nil {
		return nil, fmt.Errorf("counting the papers of %d users' instant alerts today: %w", len(idx), err)
	}
	defer r.Close()
	out := make([]int, len(idx))
	for r.Next() {
		var n, listed int
		if err := r.Scan(&n, &listed); err != nil {
			return nil, err
		}
		out[n-1] = listed
	}
	return out, r.Err()
}

// ranked says whether row's digest is best first: the user chose
// OrderBest, or it is a catch-up after a pause, which is best first
// whatever the order chosen (a pause's window is too long for newest
// first).
func (row digestRow) ranked() bool {
	return row.order == OrderBest || row.kind == KindCatchUp
}

// paperIDs are the ids of res's papers, in its order.
func paperIDs(res match.Result) []int64 {
	ids := make([]int64, len(res.Papers))
	for i := range res.Papers {
		ids[i] = res.Papers[i].ID
	}
	return ids
}

// keeps says whether a budget lets p pass whatever its rank, when the
// user keeps followed papers (KeepFollowed): a new paper of a followed
// person (a reason of kind researcher) or a followed paper's event.
func keeps(p *match.Paper) bool {
	if len(p.Events) > 0 {
		return true
	}
	for _, r := range p.Reasons {
		if r.Kind == follow.Researcher {
			return true
		}
	}
	return false
}

// planBest plans a best-first digest: one list of res's papers in the
// order ranked (their ids, best first), at most budget of them, of which
// those that keeps protects (when keep is set) are never cut: they count
// toward the budget and the best of the others fill what they leave. With
// perFollow (a catch-up after a pause) the budget is shared out per
// follow: each follow (a paper's most specific reason) first gets at most
// its share of what the kept papers leave (that divided by the follows
// with papers, rounded up), best first, and only then does what is left
// go to the best of the rest, so one busy follow cannot take the whole
// budget. The papers not shown are counted by the follow each came
// through (as planGroups groups), most first, and those beyond the
// candidates read (res.Total counts them) as NotRankedName.
func planBest(res match.Result, follows []follow.Follow, ranked []int64, budget int, keep, perFollow bool) digestPlan {
	plan := digestPlan{total: res.Total, labels: follow.ReasonLabels(follows), best: true}
	o := newReasonOrder(follows)
	byID := make(map[int64]*match.Paper, len(res.Papers))
	kept := 0
	for i := range res.Papers {
		p := &res.Papers[i]
		if len(p.Reasons) == 0 {
			continue
		}
		byID[p.ID] = p
		if keep && keeps(p) {
			kept++
		}
	}
	// Each paper (by its index in ranked: nil for an id with no paper
	// with reasons, or met before) and its primary reason, once: choose
	// and the listing below both need them, and the reason builds every
	// reason's key.
	ps := make([]*match.Paper, len(ranked))
	prims := make([]primary, len(ranked))
	for i, id := range ranked {
		if p := byID[id]; p != nil {
			delete(byID, id) // each paper once
			ps[i] = p
			prims[i].first, prims[i].key = o.primary(p)
		}
	}
	others := max(min(budget, MaxPapersLimit)-kept, 0)
	chosen := choose(ps, prims, others, keep, perFollow)
	g := plannedGroup{label: BestGroupName}
	type omitted struct {
		first follow.Target
		key   string
		n     int
	}
	var rest []omitted
	restIdx := map[string]int{}
	listed := 0
	for i, p := range ps {
		if p == nil {
			continue
		}
		listed++
		first, key := prims[i].first, prims[i].key
		list := false
		switch {
		case len(g.papers) >= MaxPapersLimit: // a mail's bound, kept papers too
		case keep && keeps(p):
			list = true
		case chosen[i]:
			list = true
		}
		if list {
			g.papers = append(g.papers, p)
			g.firsts = append(g.firsts, first)
			continue
		}
		i, ok := restIdx[key]
		if !ok {
			i = len(rest)
			restIdx[key] = i
			rest = append(rest, omitted{first: first, key: key})
		}
		rest[i].n++
		plan.omitted++
	}
	if len(g.papers) > 0 {
		plan.groups = []plannedGroup{g}
	}
	slices.SortStableFunc(rest, func(a, b omitted) int {
		switch {
		case a.n != b.n:
			return b.n - a.n
		case o.before(a.first, b.first, a.key, b.key):
			return -1
		case o.before(b.first, a.first, b.key, a.key):
			return 1
		}
		return 0
	})
	for _, r := range rest {
		name := plan.labels[r.key]
		if name == "" {
			name = r.first.ReasonName("", nil)
		}
		plan.omittedBy = append(plan.omittedBy, FollowCount{Name: name, N: r.n})
	}
	if beyond := res.Total - listed; beyond > 0 {
		plan.omitted += beyond
		plan.omittedBy = append(plan.omittedBy, FollowCount{Name: NotRankedName, N: beyond})
	}
	return plan
}

// primary is a paper's primary reason (reasonOrder.primary) and its key.
type primary struct {
	first follow.Target
	key   string
}

// choose picks, of the papers ranked (ps best first, nil for an index to
// pass over; prims their primary reasons by index), the best n that keeps
// does not protect (when keep is set): the first n in rank order, or with
// perFollow each follow's best up to its share of n first (see planBest),
// then the best of the rest. chosen[i] says whether ps[i] is picked.
func choose(ps []*match.Paper, prims []primary, n int, keep, perFollow bool) (chosen []bool) {
	chosen = make([]bool, len(ps))
	var cands []int // indexes of ps
	follows := map[string]bool{}
	for i, p := range ps {
		if p == nil || (keep && keeps(p)) {
			continue
		}
		cands = append(cands, i)
		if perFollow {
			follows[prims[i].key] = true
		}
	}
	if perFollow && len(follows) > 0 {
		share := (n + len(follows) - 1) / len(follows)
		per := map[string]int{}
		for _, i := range cands {
			if n == 0 {
				break
			}
			if key := prims[i].key; per[key] < share {
				per[key]++
				chosen[i] = true
				n--
			}
		}
	}
	for _, i := range cands {
		if n == 0 {
			break
		}
		if !chosen[i] {
			chosen[i] = true
			n--
		}
	}
	return chosen
}
