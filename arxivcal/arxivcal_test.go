package arxivcal_test

import (
	"testing"
	"time"

	"followfeed/arxivcal"
)

var ny, _ = time.LoadLocation("America/New_York")

func TestAnnouncementsAreSundayToThursdayEveningsEastern(t *testing.T) {
	c := arxivcal.New(nil)
	// Week of Monday 7 December 2026 (EST, UTC-5).
	for _, tc := range []struct {
		at   time.Time
		last time.Time
	}{
		{time.Date(2026, 12, 7, 19, 59, 0, 0, ny), time.Date(2026, 12, 6, 20, 0, 0, 0, ny)},  // Monday before: Sunday's
		{time.Date(2026, 12, 7, 20, 0, 0, 0, ny), time.Date(2026, 12, 7, 20, 0, 0, 0, ny)},   // at the announcement
		{time.Date(2026, 12, 11, 23, 0, 0, 0, ny), time.Date(2026, 12, 10, 20, 0, 0, 0, ny)}, // Friday night: Thursday's
		{time.Date(2026, 12, 13, 19, 0, 0, 0, ny), time.Date(2026, 12, 10, 20, 0, 0, 0, ny)}, // Sunday afternoon: still Thursday's
	} {
		if got := c.Last(tc.at); !got.Equal(tc.last) {
			t.Errorf("Last(%s) = %s, want %s", tc.at, got, tc.last)
		}
	}
	if got := c.Next(time.Date(2026, 12, 11, 8, 0, 0, 0, ny)); !got.Equal(time.Date(2026, 12, 13, 20, 0, 0, 0, ny)) {
		t.Errorf("Next from Friday = %s, want Sunday 20:00", got)
	}
	// In summer (EDT) 20:00 Eastern is 00:00 UTC.
	if got := c.Last(time.Date(2026, 7, 8, 0, 30, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 7, 8, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("summer Last = %s", got.UTC())
	}
	// Friday morning to Saturday morning UTC holds no announcement;
	// Sunday morning to Monday morning does.
	if c.AnnouncedBetween(time.Date(2026, 12, 11, 7, 0, 0, 0, time.UTC), time.Date(2026, 12, 12, 7, 0, 0, 0, time.UTC)) {
		t.Error("an announcement between Friday and Saturday morning")
	}
	if !c.AnnouncedBetween(time.Date(2026, 12, 13, 7, 0, 0, 0, time.UTC), time.Date(2026, 12, 14, 7, 0, 0, 0, time.UTC)) {
		t.Error("no announcement between Sunday and Monday morning")
	}
}

func TestHolidays(t *testing.T) {
	c := arxivcal.New(nil)
	// Thanksgiving 2026 is Thursday 26 November: nothing that evening, so
	// the announcement before Sunday's is Wednesday's.
	if !arxivcal.Holiday(2026, time.November, 26) || arxivcal.Holiday(2026, time.November, 19) {
		t.Error("Thanksgiving is the fourth Thursday of November")
	}
	if got := c.Last(time.Date(2026, 11, 29, 12, 0, 0, 0, ny)); !got.Equal(time.Date(2026, 11, 25, 20, 0, 0, 0, ny)) {
		t.Errorf("Last before Sunday after Thanksgiving = %s, want Wednesday 25th", got)
	}
	for _, d := range []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 19, 0, 0, 0, 0, time.UTC), // MLK: third Monday
		time.Date(2026, 5, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC), // Memorial, Labor Day
		time.Date(2026, 6, 19, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		if !arxivcal.Holiday(d.Date()) {
			t.Errorf("%s is not a holiday", d.Format(time.DateOnly))
		}
	}
	// Extra dates (ARXIV_HOLIDAYS) are skipped too.
	extra, err := arxivcal.ParseDates("2026-12-09, 2026-12-10")
	if err != nil {
		t.Fatal(err)
	}
	c = arxivcal.New(extra)
	if got := c.Last(time.Date(2026, 12, 11, 12, 0, 0, 0, ny)); !got.Equal(time.Date(2026, 12, 8, 20, 0, 0, 0, ny)) {
		t.Errorf("Last with extra holidays = %s, want Tuesday 8th", got)
	}
	if _, err := arxivcal.ParseDates("2026-13-01"); err == nil {
		t.Error("ParseDates accepted month 13")
	}
}
