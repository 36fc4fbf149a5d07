// Package arxivcal is arXiv's announcement calendar: new submissions are
// announced at 20:00 US Eastern time on Sunday to Thursday evenings, and not
// on arXiv's holidays. Digests use it to tell a quiet weekend from a broken
// harvest.
package arxivcal

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // America/New_York without /usr/share/zoneinfo
)

// AnnounceHour is the hour (US Eastern) at which arXiv announces.
const AnnounceHour = 20

var eastern = mustLoad("America/New_York")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// Calendar says when arXiv announced or will announce. The zero value is not
// usable; build one with New. A Calendar is safe for concurrent use.
type Calendar struct {
	extra map[string]bool // more evenings without an announcement (YYYY-MM-DD, Eastern)
}

// New returns the calendar with arXiv's usual holidays (see Holiday) plus
// extra, dates (US Eastern) of Sunday–Thursday evenings on which arXiv
// announces nothing.
func New(extra []time.Time) *Calendar {
	c := &Calendar{extra: map[string]bool{}}
	for _, d := range extra {
		c.extra[d.Format(time.DateOnly)] = true
	}
	return c
}

// ParseDates reads a comma-separated list of YYYY-MM-DD dates (the
// ARXIV_HOLIDAYS setting); "" is none.
func ParseDates(s string) ([]time.Time, error) {
	var out []time.Time
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		d, err := time.Parse(time.DateOnly, part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a date like 2026-12-24", part)
		}
		out = append(out, d)
	}
	return out, nil
}

// Holiday reports whether the US Eastern date y-m-d is one of arXiv's usual
// holidays, on whose evening nothing is announced: New Year's Day, Martin
// Luther King Jr. Day (third Monday of January), Memorial Day (last Monday
// of May), Juneteenth (19 June), Independence Day (4 July), Labor Day (first
// Monday of September), Thanksgiving (fourth Thursday of November), 25, 26
// and 31 December. arXiv publishes the exact schedule each year
// (info.arxiv.org/help/availability); dates it adds go in New's extra.
func Holiday(y int, m time.Month, d int) bool {
	wd := time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()
	switch {
	case m == time.January && d == 1,
		m == time.June && d == 19,
		m == time.July && d == 4,
		m == time.December && (d == 25 || d == 26 || d == 31):
		return true
	case m == time.January && wd == time.Monday && d >= 15 && d <= 21:
		return true
	case m == time.May && wd == time.Monday && d >= 25:
		return true
	case m == time.September && wd == time.Monday && d <= 7:
		return true
	case m == time.November && wd == time.Thursday && d >= 22 && d <= 28:
		return true
	}
	return false
}

// announcesOn reports whether arXiv announces on the evening of the Eastern
// date y-m-d.
func (c *Calendar) announcesOn(y int, m time.Month, d int) bool {
	t := time.Date(y, m, d, 12, 0, 0, 0, eastern)
	if wd := t.Weekday(); wd == time.Friday || wd == time.Saturday {
		return false
	}
	return !Holiday(y, m, d) && !c.extra[t.Format(time.DateOnly)]
}

// Last is the latest announcement at or before t (searching back up to 60
// days; the zero time when there is none in that span).
func (c *Calendar) Last(t time.Time) time.Time {
	et := t.In(eastern)
	y, m, d := et.Date()
	for i := 0; i <= 60; i++ {
		at := time.Date(y, m, d-i, AnnounceHour, 0, 0, 0, eastern)
		if !at.After(t) && c.announcesOn(at.Date()) {
			return at
		}
	}
	return time.Time{}
}

// Next is the first announcement strictly after t (searching up to 60 days
// ahead; the zero time when there is none in that span).
func (c *Calendar) Next(t time.Time) time.Time {
	et := t.In(eastern)
	y, m, d := et.Date()
	for i := 0; i <= 60; i++ {
		at := time.Date(y, m, d+i, AnnounceHour, 0, 0, 0, eastern)
		if at.After(t) && c.announcesOn(at.Date()) {
			return at
		}
	}
	return time.Time{}
}

// AnnouncedBetween reports whether arXiv announced at some time in (from, to].
func (c *Calendar) AnnouncedBetween(from, to time.Time) bool {
	last := c.Last(to)
	return !last.IsZero() && last.After(from)
}
