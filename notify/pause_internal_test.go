package notify

import (
	"testing"
	"time"
)

// TestHoldsNextDigest: a pause holds the next scheduled digest when it
// starts by then and has not ended; the catch-up is due at its end (nil
// for a pause until the user ends it); a pause after the digest, or none,
// holds nothing.
func TestHoldsNextDigest(t *testing.T) {
	at := func(d int) *time.Time { v := time.Date(2026, 12, d, 7, 0, 0, 0, time.UTC); return &v }
	next := *at(8)
	for _, c := range []struct {
		name         string
		pause        *Pause
		held         bool
		catchUpOnDay int // 0: none
	}{
		{"no pause", nil, false, 0},
		{"from before, back after", &Pause{StartsAt: at(7), EndsAt: at(10)}, true, 10},
		{"until I'm back", &Pause{StartsAt: at(7)}, true, 0},
		{"starting at the digest", &Pause{StartsAt: at(8), EndsAt: at(9)}, true, 9},
		{"starting after it", &Pause{StartsAt: at(9), EndsAt: at(12)}, false, 0},
		{"ended by then", &Pause{StartsAt: at(5), EndsAt: at(8)}, false, 8},
		{"not begun, no instants", &Pause{}, false, 0},
	} {
		held, catchUp := Profile{NextDigestAt: next, Pause: c.pause}.HoldsNextDigest()
		day := 0
		if catchUp != nil {
			day = catchUp.Day()
		}
		if held != c.held || (held && day != c.catchUpOnDay) {
			t.Errorf("%s: held %v, catch-up on day %d; want %v, %d", c.name, held, day, c.held, c.catchUpOnDay)
		}
	}
	if held, _ := (Profile{Pause: &Pause{StartsAt: at(7)}}).HoldsNextDigest(); held {
		t.Error("a profile without a next digest has one held")
	}
}
