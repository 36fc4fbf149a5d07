package bench

import (
	"strings"
	"testing"
	"time"
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
	// Without CPU measured, no CPU share and none in the text.
	if p.CPU != 0 || strings.Contains(p.String(), "CPU") {
		t.Errorf("no CPU measured: %+v, %q", p, p.String())
	}
	// By CPU per digest (followfeed + this database's backends): the
	// median of the rounds' newest-first CPU over the run's, the burst's
	// round (both runs slowed alike) at its own ratio.
	plain[0].CPU.Self, plain[0].PostgresDB, plain[0].Digests = 900*time.Millisecond, 100*time.Millisecond, 1000
	plain[1].CPU.Self, plain[1].PostgresDB, plain[1].Digests = 1800*time.Millisecond, 200*time.Millisecond, 1000
	plain[2].CPU.Self, plain[2].PostgresDB, plain[2].Digests = 900*time.Millisecond, 100*time.Millisecond, 1000
	other[0].CPU.Self, other[0].PostgresDB, other[0].Digests = 1000*time.Millisecond, 250*time.Millisecond, 1000 // 80%
	other[1].CPU.Self, other[1].PostgresDB, other[1].Digests = 2000*time.Millisecond, 500*time.Millisecond, 1000 // 80%
	other[2].CPU.Self, other[2].PostgresDB, other[2].Digests = 1800*time.Millisecond, 200*time.Millisecond, 1000 // 50%
	if p := pairRuns(plain, other); p.CPU != 0.8 || !strings.HasSuffix(p.String(), "; by CPU per digest 80%)") {
		t.Errorf("by CPU: %+v, %q; want 0.8", p, p.String())
	}
	// A round whose CPU was not measured leaves the CPU share out.
	plain[2].CPU.Self, plain[2].PostgresDB = 0, 0
	if p := pairRuns(plain, other); p.CPU != 0 || p.Share != 0.9 {
		t.Errorf("a round without CPU: %+v, want no CPU share", p)
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
