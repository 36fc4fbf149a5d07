package match

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
)

// The windowed path judges a muting user's window itself, before any
// Paper is made of a candidate, as it leaves the read papers out
// (controls.go): a window is over-selected whole for its exact Total
// (overselect), so without this a digest of a user with mutes made a
// Paper (some 400 bytes, with its reasons) of each of the window's
// candidates, hundreds, for finishMatched's mutes.apply to judge, count
// and cut to the limit; now only the kept papers within the limit become
// Papers, and apply leaves the window as it is (mutes.judged).
//
// The rules are keep's, on the same views (muteviews.go), so the two
// places cannot disagree: the mutes are read in the path's first round
// trip (queueRules, for every user of its windows: the statement that
// said which users mute, now the rules themselves, which finishMatched
// then does not read again), the candidates' row versions with the seen
// probes, and the views a process does not keep in one more round trip.
// A window is judged here only when every candidate's reasons are known
// from the window's rows (reasonsKnown: a query of ids, not limited to
// one follow, of papers new in the window), which a scoped mute needs;
// any other window is judged by apply as before.
//
// Measured at scale S (make bench's digests with 10 mutes per user,
// alternating with the digests without, on a shared 2-core machine): the
// mutes alone went from 83-86% of the rate without to 88%, and Go's share
// of a muting digest's selection from 4.5 s to 3.8 s per 9,000 digests
// (before: apply judging Papers, with their reasons, of whole windows).

// users returns the users of w's queries, each once.
func (w *windowed) users() []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, qi := range w.idx {
		if u := w.qs[qi].UserID; !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// queueViewVersions queues on b the read of the row versions of the
// candidates of the queries judge may take (judgeable) and returns their
// ids and where the versions will be; once b is sent and read,
// fillJudgedViews makes their views.
func (w *windowed) queueViewVersions(b *pgx.Batch) (ids []int64, versions *map[int64]uint32) {
	seen := map[int64]bool{}
	for qi, cs := range w.cands {
		if !w.judgeable(qi) {
			continue
		}
		for _, c := range cs {
			if !seen[c.id] {
				seen[c.id] = true
				ids = append(ids, c.id)
			}
		}
	}
	versions = new(map[int64]uint32)
	if len(ids) > 0 {
		catalog.QueueVersions(b, ids, func(v map[int64]uint32) { *versions = v })
	}
	return ids, versions
}

// fillJudgedViews sets w.views to the views of ids at versions (fillViews).
func (w *windowed) fillJudgedViews(ctx context.Context, tx pgx.Tx, ids []int64, versions map[int64]uint32) error {
	w.views = make(map[int64]*muteView, len(ids))
	if len(ids) == 0 {
		return nil
	}
	if err := fillViews(ctx, tx, ids, versions, w.views); err != nil {
		return fmt.Errorf("judging the mutes of a window: %w", err)
	}
	return nil
}

// judgeable says whether query qi is a muting user's whose window judge
// may take: a query of ids not limited to one follow (its candidates'
// reasons can be known from the window's rows).
func (w *windowed) judgeable(qi int) bool {
	q := w.orig[qi]
	return w.mutes.of(q.UserID) != nil && q.IDsOnly && q.Only == nil
}

// judge applies the user's mutes to query qi's candidates kept (unread,
// not seen before; newest first) and fills r with what they keep: the
// first limit as Papers with their reasons (less the follows scoped mutes
// took out), Total all of them. The candidates past maxMuteReselect count
// as kept unjudged, as apply counts them. It reports false, leaving r
// alone, when the window is not its to judge (judgeable, and every
// candidate's reasons known).
func (w *windowed) judge(qi int, kept []windowCand, r *Result, targets map[string]follow.Target) bool {
	if w.views == nil || !w.judgeable(qi) {
		return false
	}
	q := w.orig[qi]
	for _, c := range kept {
		if !reasonsKnown(q, c) {
			return false
		}
	}
	um := w.mutes.of(q.UserID)
	limit := q.limit()
	judged := kept[:min(len(kept), maxMuteReselect)]
	fs := w.follows[q.UserID]
	r.Papers = make([]Paper, 0, min(limit, len(judged)))
	var keys []string
	var c windowCand
	// reasons are c's: what a scoped mute judges (keep makes them only
	// then), and what a Paper lists.
	reasons := func() []follow.Target {
		keys = w.reasonKeys(c, fs, keys[:0])
		return reasonsFromKeys(keys, targets)
	}
	var p Paper // judged in place: keep reads and trims only its reasons
	n := 0
	for _, c = range judged {
		p.ID, p.Reasons = c.id, nil
		if !keep(um, "", &p, w.views[c.id], reasons) {
			continue
		}
		if n < limit {
			if p.Reasons == nil {
				p.Reasons = reasons()
			}
			r.Papers = r.Papers[:n+1]
			k := &r.Papers[n]
			k.ID, k.Seq, k.Replaced, k.Reasons = c.id, c.seq, c.seen || !c.first, p.Reasons
		}
		n++
	}
	r.Total = n + len(kept) - len(judged)
	w.mutes.judged[qi] = true
	return true
}

// judgedKey is the context key of a counter of the windows judge judged
// (a test's: export_test.go).
type judgedKey struct{}
