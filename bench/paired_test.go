package bench

import (
	"strings"
	"testing"
)

func rates(rs ...float64) []DigestRun {
	out := make([]DigestRun, len(rs))
	for i, r := range rs {
		out[i].Rate = r
	}
	return out
}

// TestPairRunsLeavesOutABurstBothMet: a round where a neighbour's burst
// halved both runs keeps its ratio, where dividing the medians took the
// burst for the controls' cost; the median ratio is the middle round's,
// the spread the least and most.
func TestPairRunsLeavesOutABurstBothMet(t *testing.T) {
	plain, other := rates(100, 50, 100), rates(90, 45, 60)
	p := pairRuns(plain, other)
	if p.Share != 0.9 || p.Low != 0.6 || p.High != 0.9 || p.Rounds != 3 {
		t.Errorf("pairRuns = %+v, want a share of 0.9 (0.6–0.9) over 3 rounds", p)
	}
	if m, o := median(plain).Rate, median(other).Rate; o/m != 0.6 {
		t.Errorf("the medians' ratio %v/%v: the burst should have moved it (the case pairing is for)", o, m)
	}
	if got := p.String(); !strings.HasPrefix(got, "90% (the median of 3 rounds' ratios") || !strings.Contains(got, "60–90%") {
		t.Errorf("String() = %q", got)
	}
	// Rounds only one kind has are left out; none is the zero Paired.
	if p := pairRuns(rates(100, 100), rates(80, 80, 10)); p.Share != 0.8 || p.Rounds != 2 {
		t.Errorf("unequal rounds: %+v", p)
	}
	if p := pairRuns(nil, rates(1)); p != (Paired{}) {
		t.Errorf("no rounds: %+v", p)
	}
	// median and byRate leave the rounds' order as it was.
	runs := rates(3, 1, 2)
	if median(runs).Rate != 2 || byRate(runs)[0].Rate != 1 || runs[0].Rate != 3 {
		t.Errorf("median %v, byRate %v, runs after %v", median(runs), byRate(runs), runs)
	}
}
