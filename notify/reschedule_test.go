package notify_test

import (
	"testing"
	"time"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

// TestSettingsKeepTheNextDigestPastOneSentEarly: after `digest --now`
// sent today's digest early, a change of order or budget leaves the next
// digest where --now moved it (it moved it back to today's period, sent
// already: the next --now answered "already sent" rather than sending a
// by-hand digest, and nothing went out at the time announced); a change
// of hour moves it, past today's period.
func TestSettingsKeepTheNextDigestPastOneSentEarly(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir()) // the clock: 2026-11-30 05:00 UTC
	u := e.reader("early", notify.Daily, "UTC", 9, "category/cs.LG")
	e.push(testPaper("2611.00001", "cs.LG"))
	res, err := e.d.SendNow(e.ctx, u, false)
	tomorrow := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if err != nil || res.Status != notify.NowSent || res.Period != "daily:2026-11-30" || !res.NextAt.Equal(tomorrow) {
		t.Fatalf("--now: %+v, %v; want today's digest sent and the next due %s", res, err, tomorrow)
	}

	best, budget := "best", 3
	pr, err := e.prefs.Update(e.ctx, u, notify.ProfilePatch{Digest: &notify.DigestPatch{Order: &best, MaxPapers: &budget}})
	if err != nil || !pr.NextDigestAt.Equal(tomorrow) {
		t.Fatalf("after a change of order: next digest %s, %v; want %s", pr.NextDigestAt, err, tomorrow)
	}
	e.push(testPaper("2611.00002", "cs.LG"))
	if res, err := e.d.SendNow(e.ctx, u, false); err != nil || res.Status != notify.NowSent {
		t.Errorf("a second --now after a change of order: %+v, %v; want a by-hand digest sent", res, err)
	}

	// The hour moved later the same day: today's 10:00 is today's period,
	// sent already, so the next digest is tomorrow's.
	ten := 10
	pr, err = e.prefs.Update(e.ctx, u, notify.ProfilePatch{Digest: &notify.DigestPatch{Hour: &ten}})
	if want := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC); err != nil || !pr.NextDigestAt.Equal(want) {
		t.Errorf("after a change of hour: next digest %s, %v; want %s", pr.NextDigestAt, err, want)
	}
	// A user whose today's period is free gets today's.
	v := e.reader("late", notify.Daily, "UTC", 9, "category/cs.LG")
	pr, err = e.prefs.Update(e.ctx, v, notify.ProfilePatch{Digest: &notify.DigestPatch{Hour: &ten}})
	if want := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC); err != nil || !pr.NextDigestAt.Equal(want) {
		t.Errorf("a change of hour with today's digest not sent: next digest %s, %v; want %s", pr.NextDigestAt, err, want)
	}
}
