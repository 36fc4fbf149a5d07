package match

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"followfeed/inbox/inboxsql"
)

// The reader's controls (issue #27): what a reader said they do not want
// to be told about again. They are applied here, in applyControls, once
// for every surface: every path through MatchedMany, MatchedIn and
// QueueMatchedIn (feeds, digests and instant alerts, push channels, the
// inbox) ends in finishMatched, which calls it before reasons and details
// are loaded. Today's control is read state (Query.Unread: the papers the
// reader marked read or done, package inbox's paper_states).
//
// So that dropping papers after the selection still gives the query its
// newest Limit and a true Total, the selection returns more for such a
// query (selectLimit): a bounded window (digests, alerts, channels) all of
// its candidates — matchedManySQL reads every key's rows in the window;
// Total then counts the papers kept. The windowed path (window.go), which
// holds every candidate anyway, reads the marks with its seen probes
// (queueMarks, the same statement) and leaves the marked candidates out
// before it makes a Paper of any (a Paper is some 400 bytes, a day's
// window hundreds of candidates): its results come marked unreadApplied,
// and applyControls passes them by. At scale S that made every digest
// faster (902 to 1,096 / s newest first), since digests always select
// with Unread. For "ever" (a feed's newest Limit) over-selecting by a
// guess could come up short for a reader who marked many of the newest
// papers read, and over-selecting by the number of the reader's states
// reads that many more rows per key at every render. Instead the
// selection's per-key reads skip marked papers (unreadSQL: a primary-key
// probe of paper_states per row read), so a key's newest Limit rows are
// unread ones and the feed gets Limit unread papers whenever it has them,
// at the cost of one probe per row read plus the marked rows skipped
// (TestUnreadEverFillsTheLimit). The filter here then drops nothing for
// "ever"; it is what every surface relies on.
//
// Measured (BenchmarkUnread: 5 follows, 2,000 matched papers, the newest
// 200 marked read; this shared 2-core machine, so noisy): a feed's newest
// 50 took 2.2–5.5 ms without Unread and 1.7–4.4 ms with it; a digest's
// window of all 2,000 candidates 3.4–11 ms without and 4.7–11 ms with
// (Go's share of the time is under a fifth; the rest is PostgreSQL on a
// loaded machine). A first version probed paper_states once per candidate
// and took 15.6 ms for that window where 4.3 ms went without: hence one
// range scan per user (inboxsql.MarkedInRangesSQL).

// allCandidates is selectLimit's "every candidate".
const allCandidates = math.MaxInt32

// selectLimit is how many papers the selection returns for q, before
// applyControls drops the ones the reader's controls leave out and cuts
// to q.limit(): every candidate of a bounded window when q has a control,
// else q.limit().
func (q Query) selectLimit() int {
	if q.Unread && bounded(q) {
		return allCandidates
	}
	return q.limit()
}

// unreadSQL is matchedManySQL's per-row condition for the query q (its
// lateral alias): true unless q.unread and the user marked paper read or
// done.
func unreadSQL(paper string) string {
	return `NOT (q.unread AND ` + inboxsql.Marked("q.user_id", paper) + `)`
}

// applyControls drops from results the papers the controls of their
// queries leave out (Query.Unread: the papers the user marked read or
// done), in tx, then cuts each such query's papers to its limit: Total
// loses the papers dropped, and needReasons (by query index) keeps only
// papers still in. One statement for all queries, only when one has Unread
// and papers.
//
// A window over-selected for a muting user (muting, nil for none) is cut
// to what the mutes see instead (muting.limit): the mutes cut it to its
// limit once they have filtered it. Cut here, a window with more
// candidates than its limit would reach the mutes short, and the mutes
// would select it all again (reselect): at scale S that second selection
// and its candidates took half the time of a muting reader's digest.
func applyControls(ctx context.Context, tx pgx.Tx, qs []Query, results []Result, needReasons map[int][]int64, muting *muting) error {
	ranges := readRanges{}
	for qi, q := range qs {
		if !q.Unread || results[qi].unreadApplied {
			continue
		}
		for _, p := range results[qi].Papers {
			ranges.add(q.UserID, p.ID)
		}
	}
	if len(ranges) == 0 {
		return nil
	}
	var b pgx.Batch
	marked := ranges.queue(&b)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	for qi, q := range qs {
		if !q.Unread || results[qi].unreadApplied {
			continue
		}
		r := &results[qi]
		// In place, a paper copied only when it moves (a Paper is some
		// 400 bytes; a window has hundreds), and only up to the limit.
		limit := muting.limit(q)
		n, dropped := 0, 0
		for i := range r.Papers {
			if marked[[2]int64{q.UserID, r.Papers[i].ID}] {
				dropped++
				continue
			}
			if n < limit {
				if n != i {
					r.Papers[n] = r.Papers[i]
				}
				n++
			}
		}
		cut := len(r.Papers) - dropped - n // unmarked papers past the limit
		clear(r.Papers[n:])
		r.Papers = r.Papers[:n]
		r.Total -= dropped
		if ids, ok := needReasons[qi]; ok && (dropped > 0 || cut > 0) {
			if cut == 0 {
				needReasons[qi] = slices.DeleteFunc(ids, func(id int64) bool { return marked[[2]int64{q.UserID, id}] })
			} else {
				in := make(map[int64]bool, n)
				for _, p := range r.Papers {
					in[p.ID] = true
				}
				needReasons[qi] = slices.DeleteFunc(ids, func(id int64) bool { return !in[id] })
			}
		}
	}
	return nil
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

// marks are the (user, paper) pairs a user marked read or done.
type marks map[[2]int64]bool

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
		var user, paper int64
		if _, err := pgx.ForEachRow(rows, []any{&user, &paper}, func() error {
			m[[2]int64{user, paper}] = true
			return nil
		}); err != nil {
			return fmt.Errorf("reading the read state of %d users: %w", len(users), err)
		}
		return nil
	})
	return m
}
