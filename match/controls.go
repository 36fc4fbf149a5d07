package match

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"followfeed/inbox/inboxsql"
)

// The user's controls (issue #27): what a user said they do not want
// to be told about again. Today's control is read state (Query.Unread:
// the papers the user marked read or done, package inbox's
// paper_states), applied by the selection itself, on both of its paths,
// before anything is loaded for a paper: every path through MatchedMany,
// MatchedIn and QueueMatchedIn (feeds, digests and instant alerts, push
// channels, the inbox) selects through one of them, and
// TestUnreadLeavesMarkedPapersOut holds them equal.
//
//   - The per-user statement (matchedManySQL) skips marked papers in its
//     per-key reads (unreadSQL: a primary-key probe of paper_states per
//     row read), so a key's newest rows are unread ones: a feed ("ever")
//     gets Limit unread papers whenever it has them, however many of the
//     newest the user marked (TestUnreadEverFillsTheLimit), and a
//     window's Total counts only unread papers (it is counted before the
//     LIMIT).
//   - The windowed path (window.go), which holds every candidate of a
//     window anyway, reads the marks of its candidates with its seen
//     probes (queueMarks: one range scan of each user's states,
//     readRanges) and leaves the marked ones out before it makes a Paper
//     of any (a Paper is some 400 bytes, a day's window hundreds of
//     candidates). At scale S that made every digest faster (902 to
//     1,096 / s newest first): before, the window came whole and the
//     marks were dropped after it.
//
// Measured (BenchmarkUnread: 5 follows, 2,000 matched papers, the newest
// 200 marked read; this shared 2-core machine, so noisy): a feed's newest
// 50 took 2.2–5.5 ms without Unread and 1.7–4.4 ms with it; a digest's
// window of all 2,000 candidates 3.4–11 ms without and 4.7–11 ms with
// (Go's share of the time is under a fifth; the rest is PostgreSQL on a
// loaded machine). A first version probed paper_states once per candidate
// and took 15.6 ms for that window where 4.3 ms went without: hence one
// range scan per user (inboxsql.MarkedInRangesSQL).

// unreadSQL is matchedManySQL's per-row condition for the query q (its
// lateral alias): true unless q.unread and the user marked paper read or
// done.
func unreadSQL(paper string) string {
	return `NOT (q.unread AND ` + inboxsql.Marked("q.user_id", paper) + `)`
}

// readRanges are, per user, the range of the ids of candidates whose read
// state is wanted: the read of a window's marks is one range scan of the
// user's states (inboxsql.MarkedInRangesSQL) rather than a probe per
// candidate, which cost a digest's window of 2,000 candidates 11 ms
// (BenchmarkUnread).
type readRanges map[int64][2]int64

// add widens user's range to paper.
func (rs readRanges) add(user, paper int64) {
	r, ok := rs[user]
	if !ok {
		r = [2]int64{paper, paper}
	}
	rs[user] = [2]int64{min(r[0], paper), max(r[1], paper)}
}

// marks are, per user, the papers they marked read or done, ascending: a
// window's candidates are looked up in their user's (marked), read as
// one array per user (inboxsql.MarkedInRangesSQL), not as a row and a
// map entry per paper.
type marks map[int64][]int64

// marked says whether paper is among ids (a user's marks, ascending).
func marked(ids []int64, paper int64) bool {
	_, ok := slices.BinarySearch(ids, paper)
	return ok
}

// queue queues on b the read of the marks in rs; once b is read without
// error, the marks returned hold them.
func (rs readRanges) queue(b *pgx.Batch) marks {
	m := marks{}
	if len(rs) == 0 {
		return m
	}
	users, lo, hi := make([]int64, 0, len(rs)), make([]int64, 0, len(rs)), make([]int64, 0, len(rs))
	for u, r := range rs {
		users, lo, hi = append(users, u), append(lo, r[0]), append(hi, r[1])
	}
	b.Queue(inboxsql.MarkedInRangesSQL, users, lo, hi).Query(func(rows pgx.Rows) error {
		var user int64
		var ids []int64
		if _, err := pgx.ForEachRow(rows, []any{&user, &ids}, func() error {
			m[user], ids = ids, nil // ascending (MarkedInRangesSQL)
			return nil
		}); err != nil {
			return fmt.Errorf("reading the read state of %d users: %w", len(users), err)
		}
		return nil
	})
	return m
}
