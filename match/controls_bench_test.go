package match_test

import (
	"context"
	"fmt"
	"testing"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/internal/testdb"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/worker"
)

// BenchmarkUnread measures what Query.Unread costs a user following 5
// categories with 2,000 matched papers, the newest 200 of them marked
// read: a feed's newest 50 ("ever") and a digest's window of every paper
// (IDsOnly, 250 candidates), each with and without Unread.
//
//	go test -run '^$' -bench Unread ./match/
func BenchmarkUnread(b *testing.B) {
	ctx := context.Background()
	db := testdb.New(b)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		b.Fatal(err)
	}
	store := catalog.NewStore(db, worker.NewEnqueuer(ins))
	m := match.NewService(db)
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	cats := []string{"cs.LG", "cs.AI", "stat.ML", "cs.CL", "cs.CV"}
	for _, c := range cats {
		t, _ := follow.ParseTarget("category", c)
		if _, _, err := follow.NewService(db).Follow(ctx, u.ID, t, follow.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	before, err := store.HighSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	const papers, marked = 2000, 200
	for batch := 0; batch < papers/100; batch++ {
		var ps []paper.Paper
		for i := range 100 {
			n := batch*100 + i + 1
			c := cats[n%len(cats)]
			ps = append(ps, paper.Paper{ArxivID: fmt.Sprintf("2611.%05d", n), Title: fmt.Sprintf("Paper %d", n), PrimaryCategory: c,
				Categories: []string{c}, Authors: []paper.Author{{Name: "Ann Author"}}})
		}
		if _, err := store.Ingest(ctx, ps, catalog.SourcePush); err != nil {
			b.Fatal(err)
		}
	}
	high, err := store.HighSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ib := inbox.New(db, m)
	for n := papers; n > papers-marked; n-- {
		if _, err := ib.Set(ctx, u.ID, fmt.Sprintf("2611.%05d", n), inbox.Read); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		q    match.Query
	}{
		{"feed", match.Query{UserID: u.ID, Limit: 50}},
		{"feed-unread", match.Query{UserID: u.ID, Limit: 50, Unread: true}},
		{"digest", match.Query{UserID: u.ID, AfterSeq: before, UpToSeq: high, Limit: 250, IDsOnly: true}},
		{"digest-unread", match.Query{UserID: u.ID, AfterSeq: before, UpToSeq: high, Limit: 250, IDsOnly: true, Unread: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r, err := m.Matched(ctx, c.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Papers) == 0 {
					b.Fatal("no papers")
				}
			}
		})
	}
}
