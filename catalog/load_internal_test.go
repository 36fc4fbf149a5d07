package catalog

import (
	"slices"
	"testing"
)

// TestVersionRunsJoinNeighboursOnly: runs join ids at most maxVersionGap
// apart and cover every id; a wider gap starts a run.
func TestVersionRunsJoinNeighboursOnly(t *testing.T) {
	for _, c := range []struct {
		ids    []int64
		lo, hi []int64
	}{
		{nil, nil, nil},
		{[]int64{7}, []int64{7}, []int64{7}},
		{[]int64{1, 2, 3, 5, 9, 10, 20}, []int64{1, 20}, []int64{10, 20}},
		{[]int64{1, 1 + maxVersionGap, 2 + 2*maxVersionGap}, []int64{1, 2 + 2*maxVersionGap}, []int64{1 + maxVersionGap, 2 + 2*maxVersionGap}},
	} {
		lo, hi := versionRuns(c.ids)
		if !slices.Equal(lo, c.lo) || !slices.Equal(hi, c.hi) {
			t.Errorf("versionRuns(%v) = %v, %v; want %v, %v", c.ids, lo, hi, c.lo, c.hi)
		}
	}
}
