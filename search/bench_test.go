package search

import "testing"

// BenchmarkNewDoc builds the Doc of each fixture paper.
func BenchmarkNewDoc(b *testing.B) {
	ps := loadPapers(b)
	b.ResetTimer()
	for range b.N {
		for _, p := range ps {
			docOf(p)
		}
	}
}

// BenchmarkMatchSet evaluates the drawn searches (see drawQueries)
// against the fixture papers, their Set kept between batches as ingest
// keeps it.
func BenchmarkMatchSet(b *testing.B) {
	ps := loadPapers(b)
	docs := docsOf(ps)
	s := NewSet(drawQueries(b, ps))
	b.ResetTimer()
	for range b.N {
		s.Match(docs)
	}
}

// BenchmarkQueryMatch evaluates each drawn search on each fixture paper
// one at a time (Query.Match), as a query mute judges a digest's
// candidates.
func BenchmarkQueryMatch(b *testing.B) {
	ps := loadPapers(b)
	docs := docsOf(ps)
	qs := drawQueries(b, ps)
	b.ResetTimer()
	for range b.N {
		for _, q := range qs {
			for _, d := range docs {
				q.Match(d)
			}
		}
	}
}
