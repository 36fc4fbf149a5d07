package match

import "context"

// PerUserMatchedMany is MatchedMany with every query on the per-user
// statement (matchedManySQL), the windowed path's reference.
func PerUserMatchedMany(s *Service, ctx context.Context, qs []Query) ([]Result, error) {
	return s.snapshot(ctx, qs, MatchedIn)
}

// SetWindowRowsPerKey sets the cap of rows per key in a window, returning
// the previous one. Not for parallel tests.
func SetWindowRowsPerKey(n int) int {
	old := maxWindowRowsPerKey
	maxWindowRowsPerKey = n
	return old
}
