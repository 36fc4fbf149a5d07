package inbox

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/ranking"
)

// The inbox's list: the user's matched papers with their state and
// feedback, newest first (keyset pages down to MaxDepth papers) or best
// first (the newest MaxBest ranked by the user's model, as the ranked
// feed ranks them; each page the best of those the earlier pages did not
// list, which its cursor names, so feedback or marks between pages
// re-rank the rest without skipping or repeating a paper).

// MaxDepth is how far down the user's matched papers, newest first, the
// inbox reaches: a page's selection reads the papers above it too (match
// selects the newest N), so the depth bounds a page's work.
const MaxDepth = 1000

// MaxBest is how many of the newest matched papers a best-first list
// ranks (the ranked feed's most).
const MaxBest = 200

// MaxPage is the most papers one page lists.
const MaxPage = 200

// ListQuery selects a page of the user's papers.
type ListQuery struct {
	// Only restricts the list to one follow (nil: all).
	Only *follow.Target
	// State keeps only papers in that state; "" keeps every state.
	State State
	// Best orders by the user's ranking model instead of newest first.
	Best bool
	// Cursor is a Next of an earlier page with the same query, or "".
	Cursor string
	// Limit is the page size, 1 to MaxPage; 0 means 50.
	Limit int
}

// Item is one paper of the list.
type Item struct {
	match.Paper
	State State
	// Feedback is the user's feedback on the paper (ranking.None: none).
	Feedback ranking.Value
}

// Page is one page of the list.
type Page struct {
	Items []Item
	// Next is the cursor of the following page, "" on the last.
	Next string
	// HighSeq is the newest match seq of the papers selected (0: none):
	// "mark all read" up to it leaves papers matched since unread.
	HighSeq int64
}

// RankWith sets the ranking the list's best-first order, and every item's
// feedback, come from. Call it before the service is used.
func (s *Service) RankWith(r *ranking.Service) { s.ranking = r }

// cursor is a page's place: newest first, after the paper (seq, id),
// n papers listed before; best first, the papers (papers.id) the earlier
// pages listed, shown (a cursor of the earlier form "b.<n>", at position
// n, is still read: DEPRECATED, made by releases before 2026-12-07).
type cursor struct {
	best    bool
	seq, id int64
	n       int
	shown   []int64 // ascending
}

func (c cursor) String() string {
	if c.best {
		// "s." and the ids, ascending, as uvarint deltas: some two bytes
		// an id, at most MaxBest of them.
		raw := []byte("s.")
		prev := int64(0)
		for _, id := range c.shown {
			raw = binary.AppendUvarint(raw, uint64(id-prev))
			prev = id
		}
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("n.%d.%d.%d", c.seq, c.id, c.n)))
}

// parseShown reads the ids of a best-first cursor (after its "s."): at
// most MaxBest, ascending, each at least 1.
func parseShown(b []byte) ([]int64, bool) {
	var out []int64
	prev := int64(0)
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || d == 0 || d > 1<<53 || len(out) == MaxBest {
			return nil, false
		}
		prev += int64(d)
		out = append(out, prev)
		b = b[n:]
	}
	return out, len(out) > 0
}

func parseCursor(s string, best bool) (cursor, error) {
	c := cursor{best: best}
	if s == "" {
		return c, nil
	}
	bad := apperr.InvalidField("cursor", "is not a cursor of this list: pass a next from an earlier page of the same query, or none for the first page")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, bad
	}
	if best && strings.HasPrefix(string(raw), "s.") {
		var ok bool
		if c.shown, ok = parseShown(raw[2:]); !ok {
			return c, bad
		}
		return c, nil
	}
	f := strings.Split(string(raw), ".")
	num := func(s string) int64 {
		n, e := strconv.ParseInt(s, 10, 64)
		if e != nil || n < 0 {
			err = bad
		}
		return n
	}
	switch {
	case best && len(f) == 2 && f[0] == "b":
		c.n = int(num(f[1]))
	case !best && len(f) == 4 && f[0] == "n":
		c.seq, c.id, c.n = num(f[1]), num(f[2]), int(num(f[3]))
	default:
		return c, bad
	}
	if err != nil || c.n > MaxDepth {
		return c, bad
	}
	return c, nil
}

// List returns a page of user userID's matched papers (match.Matched:
// the same papers and reasons as their feeds), each with its state and
// the user's feedback. Newest first, pages are keyset (a paper matched
// meanwhile does not shift them) down to MaxDepth papers; best first, the
// newest MaxBest papers of the state asked are ranked (ranking.RankPapers)
// and each page lists the best of those the earlier pages (its cursor)
// did not. With State Unread the selection leaves marked
// papers out (match.Query.Unread); with Read or Done the newest MaxDepth
// matched papers are read and those in the state kept. A bad cursor or
// limit is an apperr.Invalid naming it.
func (s *Service) List(ctx context.Context, userID int64, q ListQuery) (Page, error) {
	switch {
	case q.Limit == 0:
		q.Limit = 50
	case q.Limit < 1 || q.Limit > MaxPage:
		return Page{}, apperr.InvalidField("limit", "must be from 1 to %d", MaxPage)
	}
	if q.Best && s.ranking == nil {
		return Page{}, apperr.InvalidField("order", "best first is not available here")
	}
	c, err := parseCursor(q.Cursor, q.Best)
	if err != nil {
		return Page{}, err
	}
	want := min(c.n+q.Limit+1, MaxDepth)
	switch {
	case q.Best:
		want = MaxBest
	case q.State == Read || q.State == Done:
		want = MaxDepth
	}
	// Newest first from a cursor, the selection (the newest want papers)
	// must reach limit+1 papers past the cursor's paper: papers matched
	// since the earlier page sit above it, so when more are above it than
	// were listed before (c.n), it is selected again that much deeper
	// (once more if yet more arrived meanwhile); otherwise a page after
	// new papers came up short, without a next, and the rest of the list
	// out of reach.
	var res match.Result
	above := 0 // the selected papers above the cursor's paper, it too
	for tries := 0; ; tries++ {
		if res, err = s.matcher.Matched(ctx, match.Query{UserID: userID, Only: q.Only, Limit: want, Unread: q.State == Unread}); err != nil {
			return Page{}, err
		}
		if q.Best || c.seq == 0 {
			break
		}
		above = 0
		for _, p := range res.Papers {
			if p.Seq > c.seq || p.Seq == c.seq && p.ID >= c.id {
				above++
			}
		}
		deeper := min(above+q.Limit+1, MaxDepth)
		if len(res.Papers) < want || deeper <= want || tries == 2 {
			break
		}
		want = deeper
	}
	ids := make([]int64, len(res.Papers))
	for i, p := range res.Papers {
		ids[i] = p.ID
	}
	states, err := s.Of(ctx, userID, ids)
	if err != nil {
		return Page{}, err
	}
	var page Page
	items := make([]Item, 0, len(res.Papers))
	for _, p := range res.Papers {
		st := states[p.ID]
		if st == "" {
			st = Unread
		}
		page.HighSeq = max(page.HighSeq, p.Seq)
		if q.State == "" || q.State == st {
			items = append(items, Item{Paper: p, State: st})
		}
	}
	if q.Best {
		ps := make([]match.Paper, len(items))
		byID := make(map[int64]Item, len(items))
		for i, it := range items {
			ps[i], byID[it.ID] = it.Paper, it
		}
		if _, err := s.ranking.RankPapers(ctx, userID, ps); err != nil {
			return Page{}, fmt.Errorf("ranking the inbox of user %d: %w", userID, err)
		}
		ranked := make([]int64, len(ps)) // ascending: what a cursor may name
		for i, p := range ps {
			items[i] = byID[p.ID]
			ranked[i] = p.ID
		}
		slices.Sort(ranked)
		if c.shown != nil {
			// Papers that left the newest MaxBest (or the state asked)
			// since are dropped from the cursor: it names at most as many
			// as are ranked.
			c.shown = slices.DeleteFunc(c.shown, func(id int64) bool {
				_, in := slices.BinarySearch(ranked, id)
				return !in
			})
			// The best of those the earlier pages did not list, ranked
			// as they are now.
			items = slices.DeleteFunc(items, func(it Item) bool {
				_, listed := slices.BinarySearch(c.shown, it.ID)
				return listed
			})
		} else {
			// A cursor by position (DEPRECATED): the first n as listed.
			for _, it := range items[:min(c.n, len(items))] {
				c.shown = append(c.shown, it.ID)
			}
			items = items[min(c.n, len(items)):]
		}
	} else if c.seq > 0 {
		// Keyset: the papers after (seq, id) in newest-first order.
		i := 0
		for i < len(items) && (items[i].Seq > c.seq || (items[i].Seq == c.seq && items[i].ID >= c.id)) {
			i++
		}
		items = items[i:]
	}
	// n is how deep the next page starts: the papers listed before, or
	// more when papers matched since sit above them.
	switch n := max(c.n, above) + q.Limit; {
	case len(items) <= q.Limit:
	case q.Best:
		// The earlier pages' papers still ranked and this one's: fewer
		// than MaxBest, since more than this page were left of at most
		// MaxBest.
		shown := slices.Clone(c.shown)
		for _, it := range items[:q.Limit] {
			shown = append(shown, it.ID)
		}
		slices.Sort(shown)
		page.Next = cursor{best: true, shown: slices.Compact(shown)}.String()
	case n < MaxDepth:
		last := items[q.Limit-1]
		page.Next = cursor{seq: last.Seq, id: last.ID, n: n}.String()
	}
	page.Items = items[:min(len(items), q.Limit)]
	if s.ranking != nil && len(page.Items) > 0 {
		shown := make([]int64, len(page.Items))
		for i, it := range page.Items {
			shown[i] = it.ID
		}
		fb, err := s.ranking.Of(ctx, userID, shown)
		if err != nil {
			return Page{}, err
		}
		for i := range page.Items {
			page.Items[i].Feedback = fb[page.Items[i].ID]
		}
	}
	return page, nil
}
