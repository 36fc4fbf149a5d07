package match

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/identity/registrysql"
	"followfeed/internal/gencache"
	"followfeed/mute/mutesql"
	"followfeed/paper"
	"followfeed/search"
)

// Mutes (issue #27, item 2; package mute owns them) are applied here, by
// keep, in finishMatched, for every surface at once: private feeds
// (Matched, MatchedIn), digests and instant alerts (MatchedMany with
// windows, in notify) and push channels (channels.Collect) all finish
// through it; the windowed path applies keep to a muting user's window
// before it makes Papers of its candidates (windowmutes.go), and apply
// leaves such a window alone. What a mute means:
//
//   - It hides a paper when the paper has a key of the muted researcher
//     (any id the identity registry links to the person), when the muted
//     query matches the paper's text, or when the
//     muted category or archive lists the paper only as a cross-list.
//   - A mute scoped to one follow takes that follow out of the paper's
//     reasons; a paper left with no reason is dropped. A mute for every
//     follow drops the paper.
//   - A query limited to one follow (Query.Only: a per-follow feed, a
//     filtered channel) drops a paper whose only reason for being there,
//     that follow, is muted for it.
//   - Totals count only the papers kept, and a muted paper does not leave
//     a result short: see overselect and reselect.
//
// The cost falls on users who mute: for a query whose user has no mute
// it is one statement queued with the reasons and details (no round trip
// of its own), an index probe of mutes. For a user with mutes, what the
// mutes judge the candidates by is their keys (authors' ids, categories)
// and their words (package search): the process keeps both per paper
// version (muteviews.go), so a digest batch reads its candidates' row
// versions and only the rows not judged before.

// muteRulesSQL reads the mutes of the users $1 (mutesql.OfUsersSQL), a
// researcher mute once per key of its person (registrysql.Expand: the
// muted id's identity's keys; the muted key itself when the registry does
// not know it): user_id, id, kind, key, scope_key (” for every follow),
// person_key. A mute of another kind has no registry row: person_key is its
// key, and the registry is not probed for it (a NULL key, which the index
// scan answers without a descent: a digest batch's 500 mutes were read in
// 1.2 ms rather than 1.7 when 60% are not researchers' at scale M). The
// unique index (user_id, key, scope_key) is the access path.
var muteRulesSQL = `
	SELECT m.user_id, m.id, m.kind, m.key, m.scope_key, coalesce(k2.key, m.key)
	FROM (` + mutesql.OfUsersSQL + `) m (user_id, id, kind, key, scope_key, created_at)
	` + registrysql.Expand("CASE WHEN m.kind = 'researcher' THEN m.key END")

// muteRule is one mute as match applies it.
type muteRule struct {
	id    int64
	kind  string
	key   string          // the muted key (query: "query:<normal form>")
	scope string          // the follow's key; "" for every follow
	keys  map[string]bool // researcher: every key of the person
	query *search.Query   // query: the compiled search (nil: unusable, skipped)
}

// userMutes are one user's mutes.
type userMutes struct {
	rules []*muteRule
	// byKey indexes the researcher and category mutes by the hashKey of
	// the paper keys that trigger them (a person's every key; a category's
	// key, which triggers only as a cross-list), each entry with its key,
	// which keep compares: a paper's views carry their keys' hashes, so a
	// probe hashes no string. queries are the query mutes, which are
	// evaluated on the paper's text.
	byKey   map[uint64][]keyedRule
	queries []*muteRule
	// keyBits holds every key of byKey: a paper key it does not hold is
	// in no mute, without a map probe (keep).
	keyBits keySet
	// scoped: a rule is scoped to one follow, so judging a paper needs
	// its reasons.
	scoped bool
}

// mutes is the mutes of a batch's users, read by queueMutes (and, for the
// windowed path's users, by queueRules in its first round trip).
type mutes struct {
	byUser map[int64]*userMutes
	// read holds every user whose mutes were read (with or without any);
	// judged the queries (by index) whose results the windowed path
	// filtered already (windowmutes.go), which apply leaves as they are.
	read   map[int64]bool
	judged map[int]bool
}

// keyedRule is a rule of userMutes.byKey with the key it is under.
type keyedRule struct {
	key  string
	rule *muteRule
}

func newMutes() *mutes {
	return &mutes{byUser: map[int64]*userMutes{}, read: map[int64]bool{}, judged: map[int]bool{}}
}

// of returns user's mutes (nil: none, or not read; m may be nil).
func (m *mutes) of(user int64) *userMutes {
	if m == nil {
		return nil
	}
	return m.byUser[user]
}

// queueMutes queues on b the read of the mutes of the users of qs whose
// results have papers, but for those pre (nil: none) read already; once
// b is read, apply filters results. It returns pre with them, or a new
// set.
func queueMutes(b *pgx.Batch, qs []Query, results []Result, pre *mutes) *mutes {
	m := pre
	if m == nil {
		m = newMutes()
	}
	var users []int64
	seen := map[int64]bool{}
	for qi, r := range results {
		if u := qs[qi].UserID; len(r.Papers) > 0 && !seen[u] && !m.read[u] {
			seen[u] = true
			users = append(users, u)
		}
	}
	m.queueRules(b, users)
	return m
}

// queueRules queues on b the read of the mutes of users (each once, none
// read before) into m.
func (m *mutes) queueRules(b *pgx.Batch, users []int64) {
	if len(users) == 0 {
		return
	}
	for _, u := range users {
		m.read[u] = true
	}
	b.Queue(muteRulesSQL, users).Query(func(rows pgx.Rows) error {
		byID := map[int64]*muteRule{}
		fresh := map[int64]*userMutes{}
		var (
			uid, id                     int64
			kind, key, scope, personKey string
		)
		_, err := pgx.ForEachRow(rows, []any{&uid, &id, &kind, &key, &scope, &personKey}, func() error {
			r := byID[id]
			if r == nil {
				r = &muteRule{id: id, kind: kind, key: key, scope: scope}
				byID[id] = r
				um := fresh[uid]
				if um == nil {
					um = &userMutes{}
					fresh[uid] = um
					m.byUser[uid] = um
				}
				um.rules = append(um.rules, r)
				switch kind {
				case "researcher":
					r.keys = map[string]bool{key: true}
				case "query":
					r.query = compiledMute(key)
				}
			}
			if kind == "researcher" {
				r.keys[personKey] = true
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the mutes of %d users: %w", len(users), err)
		}
		for _, um := range fresh {
			um.index()
		}
		return nil
	})
}

// compiledMutes are the process's compiled query mutes by key (nil: a
// query that does not compile): a batch reads its users' mutes anew, and
// parsing them again was a tenth of the judging's extra cost at scale S.
// A search.Query is read-only, safe to share; maxCompiledMutes bounds
// them at two generations of that many.
var compiledMutes = gencache.New[string, *search.Query](maxCompiledMutes)

const maxCompiledMutes = 16384

// compiledMute returns the compiled query of a query mute's key
// ("query:<normal form>"); nil when it does not compile (a rule stored
// by a release whose parser took it: it is skipped).
func compiledMute(key string) *search.Query {
	if q, ok := compiledMutes.Get(key); ok {
		return q
	}
	var q *search.Query
	if t, err := follow.TargetFromKey(key); err == nil && t.Kind == follow.Query {
		q, _ = follow.CompileQuery(t.ID)
	}
	compiledMutes.Put(key, q)
	return q
}

// index orders um's rules as they were made (the join with the registry
// may not keep the statement's order) and fills byKey and queries.
func (um *userMutes) index() {
	slices.SortFunc(um.rules, func(a, b *muteRule) int { return cmp.Compare(a.id, b.id) })
	um.byKey = map[uint64][]keyedRule{}
	// Each rule under the hash its keys have in a view (viewKeyHash): a
	// person's keys as they are, a category's as a cross-list.
	add := func(k paper.Key, r *muteRule) {
		h := viewKeyHash(k)
		um.byKey[h] = append(um.byKey[h], keyedRule{key: k.Key, rule: r})
		um.keyBits.add(h)
	}
	for _, r := range um.rules {
		um.scoped = um.scoped || r.scope != ""
		switch r.kind {
		case "researcher":
			for k := range r.keys {
				add(paper.Key{Key: k}, r)
			}
		case "category":
			add(paper.Key{Key: r.key, Cross: true}, r)
		case "query":
			um.queries = append(um.queries, r)
		}
	}
}

// hides reports whether r hides the paper c (nil: not stored any more,
// nothing to judge it by).
func (r *muteRule) hides(c *muteView) bool {
	if c == nil {
		return false
	}
	switch r.kind {
	case "researcher":
		for _, k := range c.keys {
			if r.keys[k.Key] {
				return true
			}
		}
	case "category":
		for _, k := range c.keys {
			if k.Key == r.key {
				return k.Cross
			}
		}
	case "query":
		return r.query != nil && r.query.Match(c.words())
	}
	return false
}

// maxMuteReselect caps the papers a result is selected again with when
// mutes dropped some of it (reselect): a window or feed with more
// candidates than this counts the rest as kept.
const maxMuteReselect = 2000

// apply filters results by the mutes read (see the top of this file),
// then selects again the queries whose results mutes left short or whose
// totals they may have changed (reselect).
func (m *mutes) apply(ctx context.Context, tx pgx.Tx, qs []Query, results []Result) error {
	if len(m.byUser) == 0 {
		return nil
	}
	cands, err := m.candidates(ctx, tx, qs, results)
	if err != nil {
		return err
	}
	var again []int
	totals := map[int]int{} // the selection's Total of each query selected again
	for qi := range results {
		um := m.byUser[qs[qi].UserID]
		if um == nil || m.judged[qi] {
			continue
		}
		r := &results[qi]
		only := ""
		if qs[qi].Only != nil {
			only = qs[qi].Only.Key()
		}
		before := len(r.Papers)
		// Every candidate of a window is here when the selection returned
		// as many as it counted (a window no larger than the limit, or
		// over-selected for this muting user: overselect). A feed's
		// ("ever") Total counts only the candidates read.
		all := bounded(qs[qi]) && before == r.Total
		// In place, without copying a kept paper that does not move (a
		// Paper is some 400 bytes; a window has hundreds), nor one past
		// the limit, which is only counted (an over-selected window
		// judges every candidate for its Total and keeps its limit).
		limit := qs[qi].limit()
		n := 0
		for i := range r.Papers {
			p := &r.Papers[i]
			if keep(um, only, p, cands[p.ID], nil) {
				if n != i && n < limit {
					r.Papers[n] = *p
				}
				n++
			}
		}
		shown := min(n, limit)
		clear(r.Papers[shown:])
		dropped := before - n
		total := r.Total
		r.Total = max(r.Total-dropped, n)
		r.Papers = r.Papers[:shown]
		// A window over-selected past its limit read as many as it will
		// (maxMuteReselect): no second selection.
		over := before > limit
		if !all && !over && needsReselect(qs[qi], before, dropped, total) {
			again = append(again, qi)
			totals[qi] = total
		}
	}
	return reselect(ctx, tx, qs, results, again, totals)
}

// keep applies um to p, a paper of a query whose Only follow has the key
// only ("" for none), taking muted follows out of its reasons, and reports
// whether p stays: a hiding mute for every follow, or for only, drops it;
// one scoped to another follow takes that follow out of its reasons, and
// a paper left without a reason is dropped.
//
// The rules that hide p by key are found from p's few keys through
// um.byKey (a probe by the key's hash, which the view carries, per key
// the Bloom filter keyBits lets through, whatever the number of mutes); query
// mutes are evaluated on p's text only while p is still kept and, when
// scoped, only when their follow is one of its reasons.
//
// With fill set, p's reasons are fill's, made the first time a scoped
// mute needs them (the windowed path's judge: most papers meet no mute).
func keep(um *userMutes, only string, p *Paper, c *muteView, fill func() []follow.Target) bool {
	if c == nil {
		return true // not stored any more: nothing to judge it by
	}
	removed := false
	reasons := func() []follow.Target {
		if fill != nil {
			p.Reasons, fill = fill(), nil
		}
		return p.Reasons
	}
	// apply is r's effect on p, r hiding it; false: p is dropped.
	apply := func(r *muteRule) bool {
		switch {
		case r.scope == "" || r.scope == only:
			return false
		case hasReason(reasons(), r.scope):
			p.Reasons = dropReason(p.Reasons, r.scope)
			removed = true
		}
		return true
	}
	if um.keyBits.meets(&c.keyBits) {
		for i, k := range c.keys {
			if !um.keyBits.has(c.keyHashes[i]) {
				continue // no mute of um has this key: skip the map
			}
			for _, kr := range um.byKey[c.keyHashes[i]] {
				// A category rule is only under a cross-listed key's hash
				// (index): the key it is found by is a cross-list.
				if kr.key == k.Key && !apply(kr.rule) {
					return false
				}
			}
		}
	}
	for _, r := range um.queries {
		if r.scope != "" && r.scope != only && !hasReason(reasons(), r.scope) {
			continue // scoped to a follow that is not why p is here
		}
		if r.hides(c) && !apply(r) {
			return false
		}
	}
	return !removed || len(p.Reasons) > 0
}

func hasReason(rs []follow.Target, key string) bool {
	for _, t := range rs {
		if t.HasKey(key) {
			return true
		}
	}
	return false
}

// dropReason returns rs without the follow of key (a new slice: reasons
// may share their backing array between results).
func dropReason(rs []follow.Target, key string) []follow.Target {
	out := make([]follow.Target, 0, len(rs))
	for _, t := range rs {
		if !t.HasKey(key) {
			out = append(out, t)
		}
	}
	return out
}

// candidates returns, per paper id of the results of users with mutes,
// what the mutes judge it by (nil: not stored any more). A query that is
// not IDsOnly read every field already: its papers' views are made from
// them. The others' are the process's views (muteViews) when their row
// versions, read in tx, are the ones kept; the rest are read in tx, every
// field, and kept.
func (m *mutes) candidates(ctx context.Context, tx pgx.Tx, qs []Query, results []Result) (map[int64]*muteView, error) {
	out := map[int64]*muteView{}
	var ids []int64
	for qi, r := range results {
		if m.byUser[qs[qi].UserID] == nil || m.judged[qi] {
			continue
		}
		for i := range r.Papers {
			p := &r.Papers[i]
			if v, ok := out[p.ID]; ok && v != nil {
				continue
			}
			if !qs[qi].IDsOnly && p.ArxivID != "" {
				out[p.ID] = newMuteView(&p.Paper, 0) // not kept: no version read
				continue
			}
			if _, ok := out[p.ID]; !ok {
				out[p.ID] = nil
				ids = append(ids, p.ID)
			}
		}
	}
	var todo []int64
	for _, id := range ids {
		if out[id] == nil {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	var versions map[int64]uint32
	b := &pgx.Batch{}
	catalog.QueueVersions(b, todo, func(v map[int64]uint32) { versions = v })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("reading the versions of %d muted users' candidates: %w", len(todo), err)
	}
	return out, fillViews(ctx, tx, todo, versions, out)
}

// fillViews sets out[id], for each id of ids whose row version versions
// holds (catalog.QueueVersions, read in tx; a paper it lacks is not
// stored any more and keeps no view), to that version's view: the
// process's (muteViews) when it has it, else made from the row, read in
// tx with every field (one round trip for all), and kept.
func fillViews(ctx context.Context, tx pgx.Tx, ids []int64, versions map[int64]uint32, out map[int64]*muteView) error {
	cache := viewsOf(tx)
	var load []int64
	for _, id := range ids {
		ver, ok := versions[id]
		if !ok {
			continue // not stored any more
		}
		if v := cache.get(id, ver); v != nil {
			out[id] = v
		} else {
			load = append(load, id)
		}
	}
	if len(load) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	catalog.QueueLoad(b, load, catalog.AllFields, func(ps map[int64]paper.Paper) {
		for id, p := range ps {
			v := newMuteView(&p, versions[id])
			cache.put(id, v)
			out[id] = v
		}
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("loading %d muted users' candidates: %w", len(load), err)
	}
	return nil
}

// needsReselect reports whether the result of q, which held before papers
// (total: the Total the selection gave) of which mutes dropped dropped,
// must be selected again: a result that was full (before == the limit)
// may have lost papers that others would replace ("ever", when anything
// was dropped), and a bounded window's Total counts papers past the limit
// that the mutes never saw (when there are any).
func needsReselect(q Query, before, dropped, total int) bool {
	limit := q.limit()
	if before < limit || limit >= maxMuteReselect {
		return false
	}
	if bounded(q) {
		return total > before
	}
	return dropped > 0
}

// reselect selects the queries of qs at idx again, in tx, with a larger
// limit (totals: the Total each had before the mutes), and puts their
// results (filtered by the mutes in the recursive finishMatched, cut to
// the original limit) in results.
//
// Why select more rather than filter in SQL: a query mute is evaluated by
// package search on the papers' text, which SQL cannot do, and filtering
// every user's candidates in the selection would cost every render what
// only muting users need. So muting users' candidates are selected
// generously and filtered here:
//   - a bounded window (digests, instant alerts, channels) is selected
//     whole from the start for a muting user (overselect: the windowed
//     path reads every candidate anyway), so its Total is exact and no
//     second selection is needed;
//   - a feed ("ever") is selected as usual (the mutes are read in the
//     round trip after the selection, with the reasons, and most feeds
//     lose nothing), and only a feed that mutes left short is selected
//     again here: four times the limit, repeated while it is still short,
//     up to maxMuteReselect;
//   - a window the per-user statement selected (MatchedIn with a window:
//     the windowed path's reference) is selected again whole when its
//     total went past its limit, so Total is exact up to maxMuteReselect.
//
// Measured (BenchmarkDigestBatchMutes: 50 users, each with 10 mutes of
// which 2 searches, IDsOnly windows with a limit of 250, on two shared
// cores, noisy): at first a window of 200 papers 17 ms against 15 ms
// without mutes, a window of 1,000 papers (selected whole) 100-200 ms
// against 16-40 ms, half of it building and filtering 50,000 candidates
// in Go; with the papers' views kept (muteviews.go), 11 ms against 6.5
// ms and 35 ms against 15 ms.
func reselect(ctx context.Context, tx pgx.Tx, qs []Query, results []Result, idx []int, totals map[int]int) error {
	if len(idx) == 0 {
		return nil
	}
	if c, _ := ctx.Value(reselectsKey{}).(*atomic.Int64); c != nil {
		c.Add(int64(len(idx)))
	}
	sub := make([]Query, len(idx))
	for j, qi := range idx {
		q := qs[qi]
		if bounded(q) {
			q.Limit = min(totals[qi], maxMuteReselect)
		} else {
			q.Limit = min(4*q.limit(), maxMuteReselect)
		}
		sub[j] = q
	}
	// matchedManyIn: a bounded window takes the windowed path, as the
	// first selection did (set-based, a third of the per-user statement's
	// time for a digest batch).
	rs, _, err := matchedManyIn(ctx, tx, sub, nil)
	if err != nil {
		return err
	}
	for j, qi := range idx {
		r := rs[j]
		if n := qs[qi].limit(); len(r.Papers) > n {
			r.Papers = r.Papers[:n]
		}
		results[qi] = r
	}
	return nil
}

// reselectsKey is the context key of a counter of the queries reselect
// selects again (a test's: export_test.go).
type reselectsKey struct{}

// Explanation is why a paper reaches a user, or does not: the user's
// "why not" (GET /v1/me/papers/{arxiv_id}/why).
type Explanation struct {
	// Follows are the user's follows that match the paper, before mutes,
	// in the order of their follows list.
	Follows []follow.Target
	// Mutes are the user's mutes that hide the paper (by id, in the
	// order they were made): each unscoped one that matches it, and each
	// scoped one that matches it and whose follow is one of Follows.
	Mutes []int64
	// Kept are the Follows the mutes leave: the paper's reasons on the
	// user's surfaces.
	Kept []follow.Target
	// Shown says whether the paper reaches the user's feeds, digests,
	// alerts and channels (when in their window): a follow matches it and
	// the mutes leave one.
	Shown bool
}

// Explain says why the paper arxivID (without version) reaches user
// userID or not, with the rules every surface applies (keep), in one
// snapshot. A paper that is not stored is a not-found error
// (database.Missing).
func (s *Service) Explain(ctx context.Context, userID int64, arxivID string) (Explanation, error) {
	var ex Explanation
	err := s.db.InTxIso(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		paperID, err := catalog.LiveID(ctx, tx, arxivID)
		if err != nil {
			return err
		}
		if paperID == 0 {
			return database.Missing("no paper %s is known", arxivID)
		}
		qs := []Query{{UserID: userID}}
		results := []Result{{Papers: []Paper{{ID: paperID}}}}
		var b pgx.Batch
		queueReasons(&b, qs, results, map[int][]int64{0: {paperID}})
		m := queueMutes(&b, qs, results, nil)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		p := &results[0].Papers[0]
		ex.Follows = slices.Clone(p.Reasons)
		um := m.byUser[userID]
		if um == nil || len(p.Reasons) == 0 {
			ex.Kept, ex.Shown = p.Reasons, len(p.Reasons) > 0
			return nil
		}
		cands, err := m.candidates(ctx, tx, qs, results)
		if err != nil {
			return err
		}
		c := cands[paperID]
		for _, r := range um.rules {
			if c != nil && (r.scope == "" || hasReason(p.Reasons, r.scope)) && r.hides(c) {
				ex.Mutes = append(ex.Mutes, r.id)
			}
		}
		ex.Shown = keep(um, "", p, c, nil)
		ex.Kept = p.Reasons
		if !ex.Shown {
			ex.Kept = nil
		}
		return nil
	})
	return ex, err
}

// muting is the users of a batch's bounded windows who have mutes (the
// windowed path reads their mutes in its first round trip).
type muting struct{ users map[int64]bool }

// mutingOf returns the users of m that have mutes.
func mutingOf(m *mutes) *muting {
	out := &muting{users: map[int64]bool{}}
	for u := range m.byUser {
		out.users[u] = true
	}
	return out
}

// limit is the papers of q the selection keeps for the mutes to see: q's
// own limit, or maxMuteReselect for a window overselect raised (m may be
// nil: no muting user).
func (m *muting) limit(q Query) int {
	if m != nil && bounded(q) && m.users[q.UserID] {
		return max(q.limit(), maxMuteReselect)
	}
	return q.limit()
}

// overselect returns qs with the limit of each bounded window of a muting
// user raised to maxMuteReselect: the windowed path then hands every
// candidate (it reads them all anyway, and cuts to the limit in Go) to
// finishMatched, whose mutes filter them, count what is kept and cut to
// the query's own limit — one selection, where reselect would make a
// second. qs itself is left as it is.
func (m *muting) overselect(qs []Query) []Query {
	if len(m.users) == 0 {
		return qs
	}
	out := slices.Clone(qs)
	for i := range out {
		out[i].Limit = m.limit(out[i])
	}
	return out
}
