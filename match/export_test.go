package match

import (
	"context"
	"sync/atomic"
)

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

// CountReselects returns ctx with a counter of the queries the mutes
// select a second time (reselect) under it.
func CountReselects(ctx context.Context) (context.Context, *atomic.Int64) {
	c := new(atomic.Int64)
	return context.WithValue(ctx, reselectsKey{}, c), c
}

// CountJudged returns ctx with a counter of the windows the windowed path
// judged by the mutes itself (windowmutes.go) under it.
func CountJudged(ctx context.Context) (context.Context, *atomic.Int64) {
	c := new(atomic.Int64)
	return context.WithValue(ctx, judgedKey{}, c), c
}
