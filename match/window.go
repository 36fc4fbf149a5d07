package match

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/identity/registrysql"
)

// The windowed path: MatchedMany's answer for the queries with a bounded
// window (digests, channels), computed set-based over the batch. The
// queries of a batch mostly share a window and, the follows being
// Zipf-distributed, most of their keys (a digest batch of 50 users
// expands to ~2,000 keys, ~1,400 distinct, whose rows in a window of
// 8,000 key rows are ~1,900 rather than the ~25,000 the per-user statement
// reads, at scale S). So
// PostgreSQL reads each distinct key's rows in a window once, and the
// per-user work matchedManySQL does (the follow each key goes with, the
// cross-list, replacement and dispute filters, grouping by paper, the
// order and the count) is done here, in Go, with the same rules; only the
// "seen before the window" probe of papers not first stored in the window
// stays a statement (seenProbeSQL, shared with matchedManySQL). A key's
// rows are read once for all its followers, so unfiltered: when they reach
// the cap (maxWindowRowsPerKey) and a follow filtered some out, that
// follow could need rows beyond it, and its query is answered by
// matchedManySQL instead. The results equal matchedManySQL's
// (TestWindowedEqualsPerUser, and ...WhenTheCapBinds); the one freedom
// matchedManySQL leaves, which papers of one search_hits row a cap cutting
// through that row keeps, is taken here in the row's order.
//
// The selection takes two round trips where matchedManySQL takes one (the
// follows, then their keys' rows), and a third when there are papers to
// probe or queries to send the per-user way.

// seenSQL says which candidates (user $1, only key $2, window start $3,
// paper $4, by ordinality) the user's follows matched before the window
// (seenProbeSQL).
var seenSQL = `
	SELECT q.n::int FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[])
	     WITH ORDINALITY AS q(user_id, only_key, after_seq, paper_id, n)
	CROSS JOIN LATERAL (SELECT q.paper_id, false AS new_in_window) c
	WHERE ` + seenProbeSQL

// expansion is the keys f reaches.
func expansion(f *follow.Expanded) []string {
	if f.Keys == nil {
		return []string{f.Key}
	}
	return f.Keys
}

// owner is the follow a key goes with, and its rank in the user's follows
// list (1 for the oldest: created_at, key, as matchedManySQL ranks them).
type owner struct {
	f    *follow.Expanded
	rank int32
}

// keyRow is one row of a key in a window.
type keyRow struct {
	paperID, seq              int64
	cross, replacement, fresh bool
}

// windowKey is a key's rows in one window, newest first.
type windowKey struct {
	rows, hits []keyRow
	// truncated: the read stopped at the per-key cap, so a follow that
	// filters rows out could need rows beyond it.
	truncated bool
}

// windowCand is a paper one query's follows select in its window (small:
// a digest batch has some 20,000, sorted per query).
type windowCand struct {
	id, seq int64
	// ranks: the ranks of the follows whose rows hit it, in rank order (the
	// keys are read in the order of their follows), a list in
	// windowed.ranks from head to tail (1-based indices; 0: none).
	head, tail               int32
	seenIdx                  int32 // its seen probe's ordinal; 0: none
	first, replacedIn, newIn bool
	seen                     bool
}

// rankLink is one element of a candidate's list of ranks.
type rankLink struct{ rank, next int32 }

// windowed is the windowed path's state over one batch.
type windowed struct {
	qs       []Query
	idx      []int                       // the queries of qs it answers
	follows  map[int64][]follow.Expanded // newest first
	disputes map[[2]int64][]string       // (user, paper): follow keys
	windows  map[[2]int64]map[string]*windowKey
	cands    map[int][]windowCand // per query index
	ranks    []rankLink           // the candidates' lists of ranks
	redo     []int                // queries a truncated key makes go the per-user way
	// The mutes of the queries' users and the views of the candidates
	// they judge (windowmutes.go); orig is the queries as asked, before
	// overselect raised muting users' limits (qs).
	mutes *mutes
	views map[int64]*muteView
	orig  []Query
}

// bounded says whether q has a bounded window (the windowed path's).
func bounded(q Query) bool { return q.AfterSeq > 0 || q.UpToSeq > 0 }

// defaultLimit is the number of papers a query with no Limit returns.
const defaultLimit = 50

// limit is q's cap on the papers returned: Limit, or defaultLimit.
func (q Query) limit() int {
	if q.Limit <= 0 {
		return defaultLimit
	}
	return q.Limit
}

// window is q's window as (after, up to], no upper bound as the largest seq.
func (q Query) window() [2]int64 {
	upTo := q.UpToSeq
	if upTo <= 0 {
		upTo = math.MaxInt64
	}
	return [2]int64{q.AfterSeq, upTo}
}

// queueFollows queues on b the reads of the follows and disputes of w's
// users and of users.
func (w *windowed) queueFollows(b *pgx.Batch, users []int64) {
	users = slices.Clone(users)
	for _, qi := range w.idx {
		if u := w.qs[qi].UserID; !slices.Contains(users, u) {
			users = append(users, u)
		}
	}
	w.disputes = map[[2]int64][]string{}
	follow.QueueExpandedMany(b, users, func(m map[int64][]follow.Expanded) { w.follows = m })
	b.Queue(registrysql.DisputesOfSQL, users).Query(func(rows pgx.Rows) error {
		var user, paperID int64
		var key string
		_, err := pgx.ForEachRow(rows, []any{&user, &key, &paperID}, func() error {
			k := [2]int64{user, paperID}
			w.disputes[k] = append(w.disputes[k], key)
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the disputes of %d users: %w", len(users), err)
		}
		return nil
	})
}

// owners returns the keys q's follows reach, each with the follow it goes
// with (of two follows reaching a key, the one made first), in the order
// of the follows, oldest first.
func (w *windowed) owners(q Query) ([]string, []owner) {
	fs := w.follows[q.UserID]
	only := ""
	if q.Only != nil {
		only = q.Only.Key()
	}
	var keys []string
	var owners []owner
	for i := len(fs) - 1; i >= 0; i-- {
		f := &fs[i]
		if only != "" && f.Key != only {
			continue
		}
		for _, k := range expansion(f) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
				owners = append(owners, owner{f, int32(len(fs) - i)})
			}
		}
	}
	return keys, owners
}

// queueRows queues on b the reads of the rows, in their windows, of the
// keys w's queries reach: each distinct key once per window.
func (w *windowed) queueRows(b *pgx.Batch) {
	w.windows = map[[2]int64]map[string]*windowKey{}
	for _, qi := range w.idx {
		q := w.qs[qi]
		win := q.window()
		m := w.windows[win]
		if m == nil {
			m = map[string]*windowKey{}
			w.windows[win] = m
		}
		keys, _ := w.owners(q)
		for _, k := range keys {
			if m[k] == nil {
				m[k] = &windowKey{}
			}
		}
	}
	for win, m := range w.windows {
		keys := make([]string, 0, len(m))
		var queries []string
		for k := range m {
			keys = append(keys, k)
			if isQueryKey(k) {
				queries = append(queries, k)
			}
		}
		slices.Sort(keys)
		slices.Sort(queries)
		queueKeyRows(b, catalog.KeyRowsInWindowSQL, win, m, keys, false)
		if len(queries) > 0 {
			queueKeyRows(b, catalog.HitsInWindowSQL, win, m, queries, true)
		}
	}
}

// queueKeyRows queues on b sql (catalog.KeyRowsInWindowSQL, or with hits
// catalog.HitsInWindowSQL) for keys (sorted) in window win, which sets
// their rows (or hits) in m, newest first, and marks the keys whose rows
// reached the cap truncated.
func queueKeyRows(b *pgx.Batch, sql string, win [2]int64, m map[string]*windowKey, keys []string, hits bool) {
	b.Queue(sql, keys, win[0], win[1], maxWindowRowsPerKey).Query(func(rows pgx.Rows) error {
		var (
			i int32
			r keyRow
		)
		_, err := pgx.ForEachRow(rows, []any{&i, &r.paperID, &r.seq, &r.cross, &r.replacement, &r.fresh}, func() error {
			wk := m[keys[i-1]]
			if hits {
				wk.hits = append(wk.hits, r)
			} else {
				wk.rows = append(wk.rows, r)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the rows of %d keys in %d..%d: %w", len(keys), win[0], win[1], err)
		}
		for _, k := range keys {
			wk := m[k]
			rs := wk.rows
			if hits {
				rs = wk.hits
			}
			if len(rs) >= maxWindowRowsPerKey {
				wk.truncated = true
			}
			if !slices.IsSortedFunc(rs, func(a, b keyRow) int { return cmp.Compare(b.seq, a.seq) }) {
				slices.SortStableFunc(rs, func(a, b keyRow) int { return cmp.Compare(b.seq, a.seq) })
			}
		}
		return nil
	})
}

func isQueryKey(k string) bool { return k >= "query:" && k < "query;" }

// merge selects each query's candidates from its keys' rows, with
// matchedManySQL's rules: per key, the follow it goes with filters its
// rows (cross-lists, replacements, disputes of that follow's person) and
// keeps the newest maxWindowRowsPerKey; rows are grouped by paper. It
// returns the seen probes to run: per candidate (user, only key, window
// start, paper).
func (w *windowed) merge() (users []int64, only []string, after, papers []int64) {
	w.cands = map[int][]windowCand{}
	byPaper := map[int64]int{}
	for _, qi := range w.idx {
		q := w.qs[qi]
		cs, redo := w.candidates(q, byPaper)
		if redo {
			w.redo = append(w.redo, qi)
			continue
		}
		only1 := ""
		if q.Only != nil {
			only1 = q.Only.Key()
		}
		for i := range cs {
			if q.AfterSeq > 0 && !cs[i].newIn {
				cs[i].seenIdx = int32(len(papers) + 1)
				users, only, after, papers = append(users, q.UserID), append(only, only1), append(after, q.AfterSeq), append(papers, cs[i].id)
			}
		}
		w.cands[qi] = cs
	}
	return users, only, after, papers
}

// candidates returns q's candidates, from the rows of the keys its follows
// reach (byPaper is scratch space), and whether a truncated key makes q go
// the per-user way (redo) instead.
func (w *windowed) candidates(q Query, byPaper map[int64]int) (cs []windowCand, redo bool) {
	m := w.windows[q.window()]
	keys, owners := w.owners(q)
	clear(byPaper)
	add := func(r keyRow, rank int32) {
		i, ok := byPaper[r.paperID]
		if !ok {
			i = len(cs)
			byPaper[r.paperID] = i
			cs = append(cs, windowCand{id: r.paperID, seq: r.seq})
		}
		c := &cs[i]
		c.seq = max(c.seq, r.seq)
		c.first = c.first || !r.replacement
		c.replacedIn = c.replacedIn || r.replacement
		c.newIn = c.newIn || r.fresh
		w.ranks = append(w.ranks, rankLink{rank: rank})
		l := int32(len(w.ranks))
		if c.tail == 0 {
			c.head = l
		} else {
			w.ranks[c.tail-1].next = l
		}
		c.tail = l
	}
	for ki, k := range keys {
		wk, o := m[k], owners[ki]
		f := o.f
		n := 0
		for _, r := range wk.rows {
			if n == maxWindowRowsPerKey {
				break
			}
			if (!f.IncludeCrossLists && r.cross) || (!f.IncludeReplacements && r.replacement) || w.disputed(q.UserID, r.paperID, f) {
				continue
			}
			n++
			add(r, o.rank)
		}
		if wk.truncated && n < len(wk.rows) {
			redo = true
		}
		n = 0
		for _, r := range wk.hits {
			if n == maxWindowRowsPerKey {
				break
			}
			if !f.IncludeReplacements && r.replacement {
				continue
			}
			n++
			add(r, o.rank)
		}
		if wk.truncated && n < len(wk.hits) {
			redo = true
		}
	}
	return cs, redo
}

// disputed says whether the user said paper is not by the person of f.
func (w *windowed) disputed(user, paperID int64, f *follow.Expanded) bool {
	ds := w.disputes[[2]int64{user, paperID}]
	for _, d := range ds {
		if slices.Contains(expansion(f), d) {
			return true
		}
	}
	return false
}

// queueMarks queues on b the read of the read state of the candidates
// of w's queries with Query.Unread (controls.go), for results.
func (w *windowed) queueMarks(b *pgx.Batch) marks {
	ranges := readRanges{}
	for qi, cs := range w.cands {
		if q := w.qs[qi]; q.Unread {
			for _, c := range cs {
				ranges.add(q.UserID, c.id)
			}
		}
	}
	return ranges.queue(b)
}

// results turns each query's candidates, with seen the seen probes that
// matched (ordinals) and read the papers their users marked read or
// done (queueMarks), into its Result (needReasons as queueSelect gives
// them): a query with Query.Unread leaves the marked papers out, and its
// Total counts only the others.
func (w *windowed) results(seen map[int]bool, read marks, results []Result, needReasons map[int][]int64) {
	targets := map[string]follow.Target{}
	var keys []string
	for qi, cs := range w.cands {
		q := w.qs[qi]
		var ids []int64 // the papers q's user marked
		if q.Unread {
			ids = read[q.UserID]
		}
		kept := cs[:0]
		for _, c := range cs {
			c.seen = c.seenIdx > 0 && seen[int(c.seenIdx)]
			if (!c.seen || c.replacedIn) && !marked(ids, c.id) {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			continue
		}
		slices.SortFunc(kept, func(a, b windowCand) int {
			if c := cmp.Compare(b.seq, a.seq); c != 0 {
				return c
			}
			return cmp.Compare(b.id, a.id)
		})
		r := &results[qi]
		// A muting user's window is judged here when it can be
		// (windowmutes.go), and only the papers kept become Papers.
		if w.judge(qi, kept, r, targets) {
			continue
		}
		// The marked papers are out already: q's limit (over-selected
		// for a muting user, mutes.go) is what the selection keeps.
		limit := q.limit()
		r.Total = len(kept)
		kept = kept[:min(len(kept), limit)]
		// Each Paper is written in place: it is some 400 bytes, and a
		// muting user's window keeps hundreds (overselect).
		r.Papers = make([]Paper, len(kept))
		fs := w.follows[q.UserID]
		for i, c := range kept {
			p := &r.Papers[i]
			p.ID, p.Seq, p.Replaced = c.id, c.seq, c.seen || !c.first
			if reasonsKnown(q, c) {
				keys = w.reasonKeys(c, fs, keys[:0])
				p.Reasons = reasonsFromKeys(keys, targets)
			} else {
				needReasons[qi] = append(needReasons[qi], p.ID)
			}
		}
	}
}

// reasonsKnown says whether candidate c's reasons for q are the follows
// whose rows in the window hit it (reasonKeys): a paper new in the window,
// for a query of ids that is not limited to one follow. Otherwise its
// reasons are read (needReasons): a paper seen before the window may
// have reasons outside it.
func reasonsKnown(q Query, c windowCand) bool {
	return c.newIn && q.IDsOnly && q.Only == nil
}

// reasonKeys appends to keys the keys of the follows (of fs, the user's)
// whose rows hit candidate c, in rank order, and returns them.
func (w *windowed) reasonKeys(c windowCand, fs []follow.Expanded, keys []string) []string {
	for l := c.head; l != 0; l = w.ranks[l-1].next {
		keys = append(keys, fs[len(fs)-int(w.ranks[l-1].rank)].Key)
	}
	return keys
}
