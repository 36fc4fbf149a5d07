package feeds

import (
	"testing"
	"time"
)

// TestUpdatedIsTheNewestItemsOrTheValidators: a feed is dated by its
// newest item (Updated, else Published), and without items by the
// validator's time, to the second, never the zero time Render shows as
// 1970.
func TestUpdatedIsTheNewestItemsOrTheValidators(t *testing.T) {
	mod := time.Date(2026, 12, 7, 2, 29, 41, 500, time.FixedZone("CET", 3600))
	if got, want := updated(nil, mod), time.Date(2026, 12, 7, 1, 29, 41, 0, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("an empty feed's date = %v, want %v", got, want)
	}
	old, newer := time.Date(2022, 2, 4, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)
	items := []Item{{Updated: old}, {Published: newer}}
	if got := updated(items, mod); !got.Equal(newer) {
		t.Errorf("a feed's date = %v, want its newest item's %v", got, newer)
	}
}
