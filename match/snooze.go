package match

import "followfeed/follow"

// dropSnoozed is where snoozed follows (follow.Service.Snooze) are
// applied, for every delivery window at once: of each query with a
// delivery time (Query.At), the papers matched only through follows
// snoozed at that time are left out (a paper another follow of the user
// also matches stays, with every reason), and Total counts them no more.
// follows are the users' follows as the selection read them (every
// bounded query's user). Papers left out are not caught up: the window
// moves on; feeds (no At) keep them.
func dropSnoozed(qs []Query, rs []Result, follows map[int64][]follow.Expanded) {
	for i, q := range qs {
		if q.At.IsZero() {
			continue
		}
		var snoozed map[string]bool
		for j := range follows[q.UserID] {
			if f := &follows[q.UserID][j].Follow; f.Snoozed(q.At) {
				if snoozed == nil {
					snoozed = map[string]bool{}
				}
				snoozed[f.Key()] = true
			}
		}
		if snoozed == nil {
			continue
		}
		kept := rs[i].Papers[:0]
		for _, p := range rs[i].Papers {
			if len(p.Reasons) == 0 || !onlySnoozed(p, snoozed) {
				kept = append(kept, p)
			}
		}
		rs[i].Total -= len(rs[i].Papers) - len(kept)
		rs[i].Papers = kept
	}
}

// onlySnoozed says whether every reason of p is a snoozed follow.
func onlySnoozed(p Paper, snoozed map[string]bool) bool {
	for _, r := range p.Reasons {
		if !snoozed[r.Key()] {
			return false
		}
	}
	return true
}
