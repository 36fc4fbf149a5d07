package catalog_test

import (
	"fmt"
	"testing"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/follow"
	"followfeed/paper"
)

// BenchmarkIngest measures Store.Ingest, the path every new paper takes
// (the match bench's 5,000-paper batch goes through it), on a real
// database with 20 followed queries: "new" stores batches of 500 papers
// never seen, "replace" a new version of 500 stored ones (the merge,
// replacement keys and hits of stored papers). The allocations are the Go
// side's per batch; the time is mostly PostgreSQL's.
func BenchmarkIngest(b *testing.B) {
	const batch = 500
	words := []string{"diffusion", "graph", "transformer", "quantum", "lattice", "kernel", "bandit", "causal"}
	mk := func(id string, v, i int) paper.Paper {
		return testPaper(id, func(p *paper.Paper) {
			p.Version = v
			p.Title = fmt.Sprintf("%s models for %s data, version %d", words[i%len(words)], words[(i/3)%len(words)], v)
			p.Abstract = "We study " + words[(i/7)%len(words)] + " methods and their " + words[(i/5)%len(words)] + " limits."
			p.Authors = []paper.Author{{Name: "Ada Lovelace", IDs: []string{fmt.Sprintf("openalex:A%d", 5000000000+i%97)}}, {Name: "Alan Turing"}}
		})
	}
	setup := func(b *testing.B) *catalog.Store {
		store, db := newStore(b)
		u, err := account.NewUsers(db).Ensure(b.Context(), &auth.Claims{Subject: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		follows := follow.NewService(db)
		for i := range 20 {
			q := words[i%len(words)]
			if i >= len(words) {
				q += " " + words[(i*3+1)%len(words)]
			}
			norm, err := follow.NormalizeQuery(q)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := follows.Follow(b.Context(), u.ID, follow.Target{Kind: follow.Query, ID: norm}, follow.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		return store
	}
	b.Run("new", func(b *testing.B) {
		store := setup(b)
		batches := make([][]paper.Paper, b.N)
		for n := range batches {
			for i := range batch {
				batches[n] = append(batches[n], mk(fmt.Sprintf("%04d.%05d", 2001+n/100, (n%100)*batch+i), 1, i))
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for n := range b.N {
			if res, err := store.Ingest(b.Context(), batches[n], catalog.SourceOAI); err != nil || res.New != batch {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("replace", func(b *testing.B) {
		store := setup(b)
		ids := make([]string, batch)
		first := make([]paper.Paper, batch)
		for i := range ids {
			ids[i] = fmt.Sprintf("2601.%05d", i)
			first[i] = mk(ids[i], 1, i)
		}
		if _, err := store.Ingest(b.Context(), first, catalog.SourceOAI); err != nil {
			b.Fatal(err)
		}
		batches := make([][]paper.Paper, b.N)
		for n := range batches {
			for i, id := range ids {
				batches[n] = append(batches[n], mk(id, n+2, i+n))
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for n := range b.N {
			if res, err := store.Ingest(b.Context(), batches[n], catalog.SourceOAI); err != nil || res.Replaced != batch {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
}
