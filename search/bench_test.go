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
