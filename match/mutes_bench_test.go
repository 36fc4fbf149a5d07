package match_test

import (
	"fmt"
	"testing"

	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/paper"
)

// BenchmarkDigestBatchMutes measures a digest batch's selection
// (MatchedMany: 50 users, a window of 200 or 1,000 cs.LG papers, 250
// candidates each, IDsOnly) without mutes and with 10 mutes per user (6 researchers,
// 2 searches, 2 cross-lists; about one paper in 25 muted), the issue's
// "digests with 10 mutes" case on a small database.
func BenchmarkDigestBatchMutes(b *testing.B) {
	for _, c := range []struct {
		papers int
		muted  bool
	}{{200, false}, {200, true}, {1000, false}, {1000, true}} {
		muted := c.muted
		b.Run(fmt.Sprintf("papers=%d/mutes=%v", c.papers, c.muted), func(b *testing.B) {
			e := setup(b)
			var users []int64
			for i := range 50 {
				u := e.user(fmt.Sprintf("u%d", i))
				users = append(users, u)
				e.follow(u, "category", "cs.LG", follow.Options{})
			}
			before := e.high()
			var ps []paper.Paper
			for i := range c.papers {
				cats := []string{"cs.LG", "stat.ML"}
				if i%50 == 0 {
					cats = append(cats, "cs.CV")
				}
				q := p(fmt.Sprintf("2612.%05d", i+1), "cs.LG", cats, fmt.Sprintf("openalex:A%d", 1000+i%200))
				q.Abstract = fmt.Sprintf("We study topic %d of learning with %d examples and dark matter %d.", i%37, i, i%53)
				ps = append(ps, q)
			}
			if _, err := e.in.Ingest(e.ctx, ps, catalog.SourcePush); err != nil {
				b.Fatalf("%+v", err)
			}
			after := e.high()
			if muted {
				svc := mute.NewService(e.db)
				for _, u := range users {
					for j := range 6 {
						if _, _, err := svc.Create(e.ctx, u, mute.Spec{What: follow.Target{Kind: follow.Researcher, ID: fmt.Sprintf("openalex:A%d", 1000+(int(u)+j*31)%200)}}); err != nil {
							b.Fatal(err)
						}
					}
					for _, q := range []string{fmt.Sprintf(`abs:"topic %d"`, u%37), "ti:survey"} {
						if _, _, err := svc.Create(e.ctx, u, mute.Spec{What: follow.Target{Kind: follow.Query, ID: q}}); err != nil {
							b.Fatal(err)
						}
					}
					for _, c := range []string{"cs.CV", "math.ST"} {
						if _, _, err := svc.Create(e.ctx, u, mute.Spec{What: follow.Target{Kind: follow.Category, ID: c}}); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			qs := make([]match.Query, len(users))
			for i, u := range users {
				qs[i] = match.Query{UserID: u, AfterSeq: before, UpToSeq: after, Limit: 250, IDsOnly: true}
			}
			b.ResetTimer()
			for b.Loop() {
				rs, err := e.m.MatchedMany(e.ctx, qs)
				if err != nil {
					b.Fatal(err)
				}
				if rs[0].Total == 0 {
					b.Fatal("nothing matched")
				}
			}
		})
	}
}
