package match_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"followfeed/follow"
	"followfeed/identity"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/paper"
)

// The windowed path (MatchedMany's, for bounded windows) gives exactly the
// per-user statement's answers: random users following categories, an
// archive, researchers by ids the registry links to others (two ids of one
// person, too), queries, with and without cross-lists and
// replacements, some with "not this person" disputes; papers stored over
// several batches, with new versions and late author ids (papers not first
// stored in a later window); queries over every pair of seqs as a window, from
// the start, without an upper bound and "ever", with small and large
// limits, for one follow or all, with or without details.
func TestWindowedEqualsPerUser(t *testing.T) {
	t.Parallel()
	windowedEqualsPerUser(t, 500)
}

// With a cap of 2 rows per key in a window, the windowed path reads the
// same capped rows for every follow of a key, which a follow that filters
// rows out (cross-lists, replacements, disputes) may not have enough of:
// those queries go the per-user way, still with the same answers. Not
// parallel: the cap is the package's.
func TestWindowedEqualsPerUserWhenTheCapBinds(t *testing.T) {
	defer match.SetWindowRowsPerKey(match.SetWindowRowsPerKey(2))
	windowedEqualsPerUser(t, 100)
}

// windowedEqualsPerUser runs the comparison, with at least minPapers
// papers returned in all.
func windowedEqualsPerUser(t *testing.T, minPapers int) {
	e := setup(t)
	rnd := rand.New(rand.NewPCG(7, 18))
	reg := identity.NewRegistry(e.db, e.follows)
	var recs []identity.Record
	for i := range 6 {
		recs = append(recs, identity.Record{Kind: follow.Researcher, Name: fmt.Sprintf("Person %d", i),
			IDs: []string{fmt.Sprintf("host:%d", 1000+i), fmt.Sprintf("s2:%d", 100+i)}})
	}
	if _, err := reg.Put(e.ctx, recs); err != nil {
		t.Fatal(err)
	}
	cats := []string{"cs.LG", "cs.AI", "stat.ML", "math.OC", "cs.CL"}
	// Researcher ids: linked ones (host:i, s2:100+i) and unlinked (s2:200+i).
	ids := func(i int) string {
		switch i % 3 {
		case 0:
			return fmt.Sprintf("host:%d", 1000+i%6)
		case 1:
			return fmt.Sprintf("s2:%d", 100+i%6)
		}
		return fmt.Sprintf("s2:%d", 200+i%6)
	}
	words := []string{"diffusion", "graphs", "transformers", "kernels"}
	mk := func(n, version int, extraID bool) paper.Paper {
		r := rand.New(rand.NewPCG(uint64(n), 3))
		id := fmt.Sprintf("2611.%05d", n)
		if version > 1 {
			id += fmt.Sprintf("v%d", version)
		}
		return testpaper.New(id, func(p *paper.Paper) {
			p.Title = fmt.Sprintf("%s and %s %d", words[r.IntN(len(words))], words[r.IntN(len(words))], n)
			p.PrimaryCategory = cats[r.IntN(len(cats))]
			p.Categories = []string{p.PrimaryCategory}
			for _, c := range cats {
				if c != p.PrimaryCategory && r.IntN(3) == 0 {
					p.Categories = append(p.Categories, c)
				}
			}
			if version > 1 { // a new version's new title
				p.Title = fmt.Sprintf("%s revisited %d", words[(n+version)%len(words)], n)
			}
			if c := cats[(n+version)%len(cats)]; version > 1 && !slices.Contains(p.Categories, c) {
				p.Categories = append(p.Categories, c) // a new version's new key
			}
			a := paper.Author{Name: fmt.Sprintf("Author %d", n%7), IDs: []string{ids(r.IntN(18))}}
			if extraID {
				a.IDs = append(a.IDs, ids(r.IntN(18)))
			}
			p.Authors = []paper.Author{a}
		})
	}
	// Users follow before the papers arrive (queries match at ingest).
	type fol struct {
		uid int64
		t   follow.Target
	}
	var users []int64
	var follows []fol
	yes, no := true, false
	opt := func() *bool {
		if rnd.IntN(2) == 0 {
			return &yes
		}
		return &no
	}
	for u := range 14 {
		uid := e.user(fmt.Sprintf("reader-%d", u))
		users = append(users, uid)
		add := func(kind, id string) {
			tg, err := follow.ParseTarget(kind, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.follows.Follow(e.ctx, uid, tg, follow.Options{IncludeCrossLists: opt(), IncludeReplacements: opt()}); err != nil {
				t.Fatal(err)
			}
			follows = append(follows, fol{uid, tg})
		}
		for _, c := range cats {
			if rnd.IntN(3) == 0 {
				add("category", c)
			}
		}
		if rnd.IntN(4) == 0 {
			add("category", "math")
		}
		seen := map[string]bool{}
		for range rnd.IntN(5) {
			if id := ids(rnd.IntN(18)); !seen[id] {
				seen[id] = true
				add("researcher", id)
			}
		}
		if u%5 == 0 { // two ids of one person
			add("researcher", fmt.Sprintf("host:%d", 1000+u%6))
			if !seen[fmt.Sprintf("s2:%d", 100+u%6)] {
				add("researcher", fmt.Sprintf("s2:%d", 100+u%6))
			}
		}
		if rnd.IntN(2) == 0 {
			add("query", words[rnd.IntN(len(words))])
		}
	}
	// Follows made at once (an import): the list's order, and so which
	// follow a key goes with, falls to the keys.
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE follows SET created_at = '2026-11-01' WHERE user_id % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	marks := []int64{e.high()}
	n := 0
	for batch := range 5 {
		var ps []paper.Paper
		for range 12 {
			n++
			ps = append(ps, mk(n, 1, false))
		}
		if batch > 0 {
			for range 8 { // new versions and late author ids of earlier papers
				old := 1 + rnd.IntN(n-12)
				if rnd.IntN(4) > 0 {
					ps = append(ps, mk(old, 2+batch, false))
				} else {
					ps = append(ps, mk(old, 1, true))
				}
			}
		}
		e.ingest(dedupe(ps)...)
		marks = append(marks, e.high())
		if batch == 2 { // disputes
			for _, f := range follows {
				if f.t.Kind == follow.Researcher && rnd.IntN(2) == 0 {
					for _, p := range e.matched(match.Query{UserID: f.uid, Only: &f.t, Limit: 3}) {
						if err := reg.NotThisPerson(e.ctx, f.uid, f.t, strings.Split(p.ArxivID, "v")[0]); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	var qs []match.Query
	for _, uid := range users {
		var mine []follow.Target
		for _, f := range follows {
			if f.uid == uid {
				mine = append(mine, f.t)
			}
		}
		for i := range marks {
			for j := i; j <= len(marks); j++ {
				q := match.Query{UserID: uid, AfterSeq: marks[i], Limit: []int{0, 3, 250}[rnd.IntN(3)], IDsOnly: rnd.IntN(3) > 0}
				if j < len(marks) {
					q.UpToSeq = marks[j]
				}
				if i == 0 && rnd.IntN(2) == 0 {
					q.AfterSeq = 0 // from the start, or "ever"
				}
				if len(mine) > 0 && rnd.IntN(4) == 0 {
					q.Only = &mine[rnd.IntN(len(mine))]
				}
				qs = append(qs, q)
			}
		}
	}
	// In batches like the digests', the windowed queries mixed with "ever" ones.
	for start := 0; start < len(qs); start += 50 {
		batch := qs[start:min(start+50, len(qs))]
		got, err := e.m.MatchedMany(e.ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		// With the follows: of the queries' users and of others.
		withFollows, fs, err := e.m.MatchedManyFollows(e.ctx, batch, users[:3])
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withFollows, got) {
			t.Errorf("MatchedManyFollows's results differ from MatchedMany's")
		}
		want := map[int64]bool{}
		for _, u := range users[:3] {
			want[u] = true
		}
		for _, q := range batch {
			want[q.UserID] = true
		}
		var wantUsers []int64
		for u := range want {
			wantUsers = append(wantUsers, u)
		}
		all, err := e.follows.AllMany(e.ctx, wantUsers)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fs, all) {
			t.Errorf("MatchedManyFollows's follows differ from AllMany's")
		}
		perUser, err := match.PerUserMatchedMany(e.m, e.ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			if !reflect.DeepEqual(got[i], perUser[i]) {
				t.Errorf("query %+v:\n got %s\nwant %s", batch[i], describe(got[i]), describe(perUser[i]))
			}
		}
	}
	var papers, replaced, notNew, onlyQ int
	for _, q := range qs {
		if q.Only != nil {
			onlyQ++
		}
		r, err := e.m.Matched(e.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		papers += len(r.Papers)
		for _, p := range r.Papers {
			if p.Replaced {
				replaced++
			}
			if len(p.Reasons) > 1 {
				notNew++
			}
		}
	}
	t.Logf("%d queries (%d for one follow), %d papers returned, %d replaced, %d with several reasons", len(qs), onlyQ, papers, replaced, notNew)
	disputes := testpaper.Count(t, e.db, `SELECT count(*) FROM identity_disputes`)
	hits := testpaper.Count(t, e.db, `SELECT count(*) FROM search_hits`)
	t.Logf("%d disputes, %d search_hits rows", disputes, hits)
	if replaced == 0 || papers < minPapers || disputes == 0 || hits == 0 {
		t.Errorf("the data exercise too little: %d papers, %d replaced, %d disputes, %d search hits", papers, replaced, disputes, hits)
	}
}

// dedupe keeps the last of several versions of one paper in a batch.
func dedupe(ps []paper.Paper) []paper.Paper {
	idx := map[string]int{}
	var out []paper.Paper
	for _, p := range ps {
		base, _, _ := paper.ParseArxivID(p.ArxivID)
		if i, ok := idx[base]; ok {
			out[i] = p
			continue
		}
		idx[base] = len(out)
		out = append(out, p)
	}
	return out
}

func describe(r match.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total %d:", r.Total)
	for _, p := range r.Papers {
		fmt.Fprintf(&b, " %d@%d%v%s", p.ID, p.Seq, reasons(p), map[bool]string{true: "R"}[p.Replaced])
	}
	return b.String()
}
