package worker

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// TestRetryPolicyBacksOffWithJitterUpToTheCap: 5 s, doubling per attempt,
// never beyond the cap, each within ±10%.
func TestRetryPolicyBacksOffWithJitterUpToTheCap(t *testing.T) {
	p := retryPolicy{max: time.Hour}
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, 5 * time.Second}, {2, 10 * time.Second}, {4, 40 * time.Second}, {10, 2560 * time.Second}, {11, time.Hour}, {25, time.Hour}, {1000, time.Hour}} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := time.Until(p.NextRetry(&rivertype.JobRow{Attempt: tc.attempt}))
			if d < tc.want*89/100 || d > tc.want*111/100 {
				t.Fatalf("attempt %d: next retry in %v, want %v ± 10%%", tc.attempt, d, tc.want)
			}
			seen[d.Round(time.Millisecond)] = true
		}
		if len(seen) < 5 {
			t.Errorf("attempt %d: retries not spread (%d distinct waits in 50)", tc.attempt, len(seen))
		}
	}
}
