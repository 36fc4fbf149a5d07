package notify_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/apperr"
	"followfeed/follow"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testjobs"
	"followfeed/notify"
	"followfeed/worker"
)

// pause sets uid's pause (until "" is "until I'm back").
func (e *env) pause(uid int64, from, until string) error {
	p := &notify.PausePatch{From: from}
	if until != "" {
		p.Until = &until
	}
	_, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Pause: p})
	return err
}

// sendPending sends every pending digest, as the send jobs would.
func (e *env) sendPending() {
	e.t.Helper()
	rows, err := e.db.Pool.Query(e.ctx, `SELECT id FROM digests WHERE state = 'pending' ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		if _, err := e.d.Send(e.ctx, id); err != nil {
			e.t.Fatal(err)
		}
	}
}

// subjects are the subjects of the mails the SMTP server received.
func (e *env) subjects() []string {
	var out []string
	for _, m := range e.smtp.Messages() {
		for _, l := range strings.Split(string(m.Data), "\r\n") {
			if s, ok := strings.CutPrefix(l, "Subject: "); ok {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// TestFiveDayPauseThenOneCatchUp: a daily user away from 1 to 6
// December (back on the 6th) gets no mail while away, although a paper
// matches every day and the scheduler runs every hour, and exactly one
// catch-up digest on the 6th at their digest hour with every paper of the
// five days; the next day's digest holds only what came after.
func TestFiveDayPauseThenOneCatchUp(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("away", notify.Daily, "UTC", 6, "category/cs.LG")
	if err := e.pause(uid, "2026-12-01", "2026-12-06"); err != nil {
		t.Fatal(err)
	}
	p, _ := e.prefs.Get(e.ctx, uid)
	if p.Pause == nil || p.Pause.Until == nil || !p.Pause.EndsAt.Equal(time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("pause as stored: %+v", p.Pause)
	}
	e.push(testPaper("2311.00001", "cs.LG"))
	mailsAt := map[string]int{}
	n := 0
	for now := time.Date(2026, 11, 30, 5, 30, 0, 0, time.UTC); now.Before(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)); now = now.Add(time.Hour) {
		e.clk.Set(now)
		if now.Hour() == 12 { // a paper matches every day at noon
			n++
			e.push(testPaper(fmt.Sprintf("2312.%05d", n), "cs.LG"))
		}
		if _, err := e.d.Schedule(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.sendPending()
		if got := len(e.smtp.Messages()); got > 0 {
			mailsAt[now.Format("2006-01-02")] = got
		}
	}
	subjects := e.subjects()
	msgs := e.smtp.Messages()
	if len(msgs) != 3 {
		t.Fatalf("%d mails (%q), want 3: 30 November's, the catch-up, 7 December's", len(msgs), subjects)
	}
	for day := 1; day <= 5; day++ {
		if got, before := mailsAt[fmt.Sprintf("2026-12-%02d", day)], mailsAt["2026-11-30"]; got != before {
			t.Errorf("mail on 2026-12-%02d, while paused (%d mails by then, %d before)", day, got, before)
		}
	}
	catchUp := string(msgs[1].Data)
	if !strings.HasPrefix(subjects[1], "While you were away") || !strings.Contains(catchUp, "While you were away (1 December to 6 December)") {
		t.Errorf("catch-up subject %q:\n%.600s", subjects[1], catchUp)
	}
	for day := 1; day <= 5; day++ { // the papers of noon 30 November to 5 December
		if id := fmt.Sprintf("Paper 2312.%05d", day); !strings.Contains(catchUp, id) {
			t.Errorf("the catch-up lacks %s", id)
		}
	}
	if strings.Contains(catchUp, "Paper 2312.00007") || !strings.Contains(string(msgs[2].Data), "Paper 2312.00007") ||
		strings.Contains(string(msgs[2].Data), "Paper 2312.00005") {
		t.Errorf("the day after: catch-up and 7 December's digest overlap or miss a paper")
	}
	var catchUps, skipped, sixth int
	e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FILTER (WHERE kind = 'catchup'),
		count(*) FILTER (WHERE state = 'skipped' AND smtp_reply LIKE 'paused%'),
		count(*) FILTER (WHERE period = 'daily:2026-12-06') FROM digests WHERE user_id = $1`, uid).Scan(&catchUps, &skipped, &sixth)
	if catchUps != 1 || skipped != 5 || sixth != 0 {
		t.Errorf("ledger: %d catch-ups, %d skipped as paused, %d digests of 6 December; want 1, 5, 0", catchUps, skipped, sixth)
	}
	if p, _ := e.prefs.Get(e.ctx, uid); p.Pause != nil {
		t.Errorf("the pause outlived its catch-up: %+v", p.Pause)
	}
}

// TestPausedInstantUserCatchesUpOnceWhenTheyEndIt: an instant user on
// an open pause ("until I'm back") gets no alert and no alert is even
// scheduled; ending the pause queues one catch-up with everything.
func TestPausedInstantUserCatchesUpOnceWhenTheyEndIt(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	if err := e.pause(uid, "2026-11-30", ""); err != nil {
		t.Fatal(err)
	}
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(e.clk.Now().Add(24 * time.Hour))
	e.push(testPaper("2301.00002", "cs.LG"))
	if jobs := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind(), rivertype.JobStateScheduled); jobs != 0 {
		t.Fatalf("%d instant alerts scheduled while paused", jobs)
	}
	if err := e.d.SendInstant(e.ctx, uid); err != nil { // a job from before the pause: nothing
		t.Fatal(err)
	}
	if n, _ := e.d.Schedule(e.ctx); n != 0 || len(e.smtp.Messages()) != 0 {
		t.Fatalf("%d digests queued, %d mails while paused", n, len(e.smtp.Messages()))
	}
	if _, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Pause: &notify.PausePatch{Clear: true}}); err != nil {
		t.Fatal(err)
	}
	// A paper between the pause's end and the scheduler's catch-up: no
	// alert of its own (it would have carried the pause's papers, newest
	// first, and left the catch-up empty); the catch-up has it.
	e.clk.Set(e.clk.Now().Add(30 * time.Second))
	e.push(testPaper("2301.00004", "cs.LG"))
	if jobs := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind(), rivertype.JobStateScheduled); jobs != 0 {
		t.Fatalf("%d instant alerts scheduled between the pause's end and its catch-up", jobs)
	}
	if err := e.d.SendInstant(e.ctx, uid); err != nil || len(e.smtp.Messages()) != 0 {
		t.Fatalf("an alert between the pause's end and its catch-up: %v, %d mails", err, len(e.smtp.Messages()))
	}
	e.clk.Set(e.clk.Now().Add(time.Minute))
	if n, err := e.d.Schedule(e.ctx); err != nil || n != 1 {
		t.Fatalf("ending the pause queued %d digests (%v), want the one catch-up", n, err)
	}
	if n, _ := e.d.Schedule(e.ctx); n != 0 {
		t.Errorf("the scheduler again queued %d", n)
	}
	e.sendPending()
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "Paper 2301.00001") || !strings.Contains(string(msgs[0].Data), "Paper 2301.00002") ||
		!strings.Contains(string(msgs[0].Data), "Paper 2301.00004") {
		t.Fatalf("%d mails after the pause, want one catch-up with the three papers", len(msgs))
	}
	// Alerts resume.
	e.push(testPaper("2301.00003", "cs.LG"))
	if jobs := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind(), rivertype.JobStateScheduled); jobs != 1 {
		t.Errorf("%d instant alerts scheduled after the pause, want 1", jobs)
	}
}

// TestCatchUpSharesTheBudgetPerFollow: a best-first catch-up with a
// budget of 4 over a busy follow (ten papers ranked high) and a quiet one
// (two ranked low) lists the best two of each, not the busy follow's four.
func TestCatchUpSharesTheBudgetPerFollow(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	r := &scoreRanker{}
	e.ranked(r)
	uid := e.reader("busy", notify.Daily, "UTC", 6, "category/cs.LG", "category/math.AG")
	e.budget(uid, notify.OrderNewest, 4, true) // a catch-up ranks whatever the order
	if err := e.pause(uid, "2026-12-01", "2026-12-03"); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	var names []string
	for i := 1; i <= 10; i++ {
		e.push(testPaper(fmt.Sprintf("2312.%05d", i), "cs.LG"))
		names = append(names, fmt.Sprintf("2312.%05d", i))
	}
	e.push(testPaper("2312.00101", "math.AG"), testPaper("2312.00102", "math.AG"))
	names = append(names, "2312.00101", "2312.00102")
	ids := e.ids(names...)
	scores := map[int64]float64{ids["2312.00101"]: 2, ids["2312.00102"]: 1}
	for i := 1; i <= 10; i++ {
		scores[ids[fmt.Sprintf("2312.%05d", i)]] = float64(100 - i)
	}
	r.set(scores)
	e.clk.Set(time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC))
	if n, err := e.d.Schedule(e.ctx); err != nil || n != 1 {
		t.Fatalf("%d digests queued (%v), want the catch-up", n, err)
	}
	e.sendPending()
	msgs := e.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d mails", len(msgs))
	}
	body := textPart(t, msgs[0].Data)
	for _, want := range []string{"2312.00001", "2312.00002", "2312.00101", "2312.00102"} {
		if !strings.Contains(body, "Paper "+want) {
			t.Errorf("the catch-up lacks %s", want)
		}
	}
	if strings.Contains(body, "Paper 2312.00003") {
		t.Errorf("the busy follow took more than its share:\n%s", body)
	}
}

// TestPauseValidation: dates in the past, a pause ending before it
// starts, dates that do not parse, an empty or unknown weekday list: 422s
// naming the field.
func TestPauseValidation(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("picky", notify.Daily, "Pacific/Auckland", 7)
	// 30 November 05:00 UTC is 30 November 18:00 in Auckland: "today"
	// is the user's day.
	for _, tc := range []struct{ from, until, field string }{
		{"2026-11-29", "", "pause.from"},
		{"30/11/2026", "", "pause.from"},
		{"2026-12-05", "2026-12-05", "pause.until"},
		{"2026-12-05", "2026-12-01", "pause.until"},
		{"2026-12-05", "soon", "pause.until"},
		{"2030-12-05", "", "pause.from"},
		{"2028-12-01", "", "pause.from"},            // two years and a day
		{"2026-12-05", "2028-12-01", "pause.until"}, // two years and a day
	} {
		err := e.pause(uid, tc.from, tc.until)
		if ae, ok := apperr.As(err); !ok || ae.Field != tc.field {
			t.Errorf("pause %s..%s: %v, want an error naming %s", tc.from, tc.until, err, tc.field)
		}
	}
	if err := e.pause(uid, "2026-12-05", "2028-11-30"); err != nil {
		t.Errorf("a pause until exactly two years ahead: %v", err)
	}
	if err := e.pause(uid, "2026-11-30", "2026-12-01"); err != nil {
		t.Errorf("a pause from today: %v", err)
	}
	for _, days := range [][]string{{}, {"mon", "someday"}, {"1"}} {
		_, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Weekdays: &days}})
		if ae, ok := apperr.As(err); !ok || ae.Field != "digest.weekdays" {
			t.Errorf("weekdays %q: %v", days, err)
		}
	}
	var ae *apperr.Error
	if err := e.pause(uid, "", ""); !errors.As(err, &ae) {
		t.Errorf("no from: %v", err)
	}
}

// TestQuietDaysFoldIntoTheNextDigest: a daily user who chose Monday,
// Wednesday and Friday gets digests on those days only, and Wednesday's
// holds Tuesday's papers too (its window spans the quiet day).
func TestQuietDaysFoldIntoTheNextDigest(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("mwf", notify.Daily, "UTC", 6, "category/cs.LG")
	days := []string{"mon", "wed", "fri"}
	if _, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Weekdays: &days}}); err != nil {
		t.Fatal(err)
	}
	if p, _ := e.prefs.Get(e.ctx, uid); strings.Join(p.Digest.Weekdays.Names(), ",") != "mon,wed,fri" {
		t.Fatalf("weekdays as stored: %v", p.Digest.Weekdays.Names())
	}
	n := 0
	// Monday 30 November 05:00 to Sunday 6 December.
	for now := e.clk.Now(); now.Before(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)); now = now.Add(time.Hour) {
		e.clk.Set(now)
		if now.Hour() == 12 {
			n++
			e.push(testPaper(fmt.Sprintf("2312.%05d", n), "cs.LG")) // one a day: 1 is Monday's
		}
		if _, err := e.d.Schedule(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.sendPending()
	}
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT period FROM digests WHERE user_id = $1 ORDER BY period`, uid)
	var periods []string
	for rows.Next() {
		var p string
		rows.Scan(&p)
		periods = append(periods, p)
	}
	if want := "daily:2026-11-30,daily:2026-12-02,daily:2026-12-04"; strings.Join(periods, ",") != want {
		t.Fatalf("periods %v, want %s", periods, want)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 2 { // Monday's at 06:00 had nothing yet
		t.Fatalf("%d mails, want Wednesday's and Friday's", len(msgs))
	}
	wed := string(msgs[0].Data)
	if !strings.Contains(wed, "Paper 2312.00001") || !strings.Contains(wed, "Paper 2312.00002") || strings.Contains(wed, "Paper 2312.00003") {
		t.Errorf("Wednesday's digest should hold Monday's and Tuesday's papers:\n%.800s", wed)
	}
}

// TestSnoozedFollowDeliversNothingUntilItsDate: a follow snoozed until 2
// December delivers nothing in the digests sent before then (another
// follow's papers still come, and a paper both match comes); what those
// digests left out is not caught up; from the date it delivers again.
func TestSnoozedFollowDeliversNothingUntilItsDate(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("sleepy", notify.Daily, "UTC", 6, "category/cs.LG", "category/math.AG")
	lg, _ := follow.ParseTarget("category", "cs.LG")
	until := "2026-12-02"
	if _, err := e.follows.Snooze(e.ctx, uid, lg, &until, e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	both := testPaper("2311.00003", "cs.LG")
	both.Categories = []string{"cs.LG", "math.AG"}
	e.push(testPaper("2311.00001", "cs.LG"), testPaper("2311.00002", "math.AG"), both)
	e.clk.Set(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC))
	e.scheduled()
	e.sendPending()
	e.push(testPaper("2312.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	e.scheduled()
	e.sendPending()
	msgs := e.smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d mails, want 1 and 2 December's", len(msgs))
	}
	first, second := string(msgs[0].Data), string(msgs[1].Data)
	if strings.Contains(first, "Paper 2311.00001") || !strings.Contains(first, "Paper 2311.00002") || !strings.Contains(first, "Paper 2311.00003") {
		t.Errorf("1 December's digest: the snoozed follow's paper in it, or another's missing:\n%.900s", first)
	}
	// 2 December's digest is sent after the snooze's end (its midnight):
	// it has the follow's paper of its window, and 2311.00001, left out
	// of a digest sent while snoozed, is not caught up.
	if !strings.Contains(second, "Paper 2312.00001") || strings.Contains(second, "Paper 2311.00001") {
		t.Errorf("2 December's digest:\n%.900s", second)
	}
}

// TestAPauseHoldsFromItsStartUntilItsCatchUp: PausedSQL, the check every
// delivery makes (HoldsChannels the push channels'), is false before the
// pause's first local midnight and true from it, past its end at the
// user's digest hour on the day they are back, until the scheduler's
// catch-up has cleared it: what matched while they were away goes in that
// catch-up (or is skipped by a channel set to skip), never in an alert or
// a channel's collection in between.
func TestAPauseHoldsFromItsStartUntilItsCatchUp(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("between", notify.Daily, "UTC", 6, "category/cs.LG")
	if err := e.pause(uid, "2026-12-01", "2026-12-06"); err != nil {
		t.Fatal(err)
	}
	check := func(at time.Time, want bool) {
		t.Helper()
		var paused, held bool
		err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
			if err := tx.QueryRow(e.ctx, `SELECT `+notify.PausedSQL("$2")+` FROM digest_schedules d WHERE d.user_id = $1`, uid, at).Scan(&paused); err != nil {
				return err
			}
			var err error
			held, err = notify.HoldsChannels(e.ctx, tx, uid, at)
			return err
		})
		if err != nil || paused != want || held != want {
			t.Errorf("at %s: paused %v, channels held %v, %v; want %v", at.Format(time.RFC3339), paused, held, err, want)
		}
	}
	check(time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), false)
	check(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), true)
	check(time.Date(2026, 12, 6, 5, 59, 0, 0, time.UTC), true)
	check(time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC), true) // ended, not caught up yet
	check(time.Date(2026, 12, 9, 12, 0, 0, 0, time.UTC), true)
	// The scheduler's catch-up clears the pause: nothing holds any more.
	e.clk.Set(time.Date(2026, 12, 6, 6, 1, 0, 0, time.UTC))
	if _, err := e.d.Schedule(e.ctx); err != nil {
		t.Fatal(err)
	}
	check(time.Date(2026, 12, 6, 6, 1, 0, 0, time.UTC), false)
}

// TestAPauseKeepsItsInstantsAcrossATimeZoneChange: a pause's start and end
// are fixed when it is set, so moving to another time zone (or digest
// hour) neither ends a pause in effect nor stretches it back before it
// was made; ending it makes it Over at once, while its catch-up waits for
// the scheduler.
func TestAPauseKeepsItsInstantsAcrossATimeZoneChange(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("traveller", notify.Daily, "Pacific/Kiritimati", 6, "category/cs.LG")
	today := e.clk.Now().In(time.FixedZone("LINT", 14*3600)).Format(notify.DateLayout)
	back := e.clk.Now().AddDate(0, 0, 5).Format(notify.DateLayout)
	if err := e.pause(uid, today, back); err != nil {
		t.Fatal(err)
	}
	before, _ := e.prefs.Get(e.ctx, uid)
	if !before.Pause.Active(e.clk.Now()) {
		t.Fatalf("the pause is not in effect: %+v", before.Pause)
	}
	tz, hour := "Pacific/Pago_Pago", 20
	after, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Timezone: &tz, Digest: &notify.DigestPatch{Hour: &hour}})
	if err != nil {
		t.Fatal(err)
	}
	if !after.Pause.StartsAt.Equal(*before.Pause.StartsAt) || !after.Pause.EndsAt.Equal(*before.Pause.EndsAt) || !after.Pause.Active(e.clk.Now()) {
		t.Errorf("a time zone change moved the pause: %v–%v, was %v–%v", after.Pause.StartsAt, after.Pause.EndsAt, before.Pause.StartsAt, before.Pause.EndsAt)
	}
	// Sent back with its own start (to change its end) in the new zone,
	// the pause in effect keeps the instant it began at; its end is the
	// new one.
	later := e.clk.Now().AddDate(0, 0, 7).Format(notify.DateLayout)
	again, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Pause: &notify.PausePatch{From: today, Until: &later}})
	if err != nil || !again.Pause.StartsAt.Equal(*before.Pause.StartsAt) || !again.Pause.EndsAt.After(*before.Pause.EndsAt) || !again.Pause.Active(e.clk.Now()) {
		t.Errorf("the pause sent back with its own start: %v–%v (%v), began %v", again.Pause.StartsAt, again.Pause.EndsAt, err, before.Pause.StartsAt)
	}
	ended, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Pause: &notify.PausePatch{Clear: true}})
	if err != nil || !ended.Pause.Over(e.clk.Now()) || ended.Pause.Active(e.clk.Now()) {
		t.Fatalf("ending it: %+v, %v", ended.Pause, err)
	}
	if n, err := e.d.Schedule(e.ctx); err != nil || n != 1 {
		t.Errorf("the ended pause queued %d digests (%v), want its one catch-up", n, err)
	}
}

// TestAnEndedPauseIsNoOngoingPause: a pause ended (its catch-up still
// waiting for the scheduler) is over: set again with its old start, now
// in the past of a time zone moved to since, it is a 422 naming
// pause.from, as for a user who never paused, not the ended pause brought
// back with its old start instant; the ended pause stays as it was and
// gets its one catch-up.
func TestAnEndedPauseIsNoOngoingPause(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("islands", notify.Daily, "Pacific/Pago_Pago", 6, "category/cs.LG")
	fresh := e.reader("fresh", notify.Daily, "Pacific/Kiritimati", 6, "category/cs.LG")
	// 7 December 12:00 UTC: 01:00 on the 7th in Pago Pago, 02:00 on the
	// 8th in Kiritimati.
	e.clk.Set(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	if err := e.pause(uid, "2026-12-07", "2026-12-09"); err != nil {
		t.Fatal(err)
	}
	began := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	if p, _ := e.prefs.Get(e.ctx, uid); p.Pause == nil || !p.Pause.StartsAt.Equal(began) {
		t.Fatalf("the pause as set: %+v", p.Pause)
	}
	e.clk.Set(e.clk.Now().Add(time.Minute))
	ended, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Pause: &notify.PausePatch{Clear: true}})
	if err != nil || !ended.Pause.Over(e.clk.Now()) {
		t.Fatalf("ending the pause: %+v, %v", ended.Pause, err)
	}
	tz := "Pacific/Kiritimati"
	if _, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Timezone: &tz}); err != nil {
		t.Fatal(err)
	}
	err = e.pause(uid, "2026-12-07", "2026-12-09")
	want := "2026-12-07 is in the past; a pause starts today (2026-12-08) or later"
	if ae, ok := apperr.As(err); !ok || ae.Field != "pause.from" || ae.Message != want {
		t.Errorf("the ended pause set again with its start: %v, want a 422 naming pause.from: %s", err, want)
	}
	if p, _ := e.prefs.Get(e.ctx, uid); p.Pause == nil || !p.Pause.Over(e.clk.Now()) || !p.Pause.StartsAt.Equal(began) {
		t.Errorf("the refused pause changed the ended one: %+v", p.Pause)
	}
	err = e.pause(fresh, "2026-12-07", "2026-12-09")
	if ae, ok := apperr.As(err); !ok || ae.Field != "pause.from" || ae.Message != want {
		t.Errorf("a user who never paused: %v, want a 422 naming pause.from: %s", err, want)
	}
	if _, err := e.d.Schedule(e.ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := e.db.Pool.Query(e.ctx, `SELECT period FROM digests WHERE user_id = $1 AND kind = 'catchup'`, uid)
	if err != nil {
		t.Fatal(err)
	}
	if periods, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || strings.Join(periods, ",") != "catchup:2026-12-07..2026-12-08" {
		t.Errorf("catch-ups queued: %v (%v), want the ended pause's one", periods, err)
	}
}

// TestANewPauseWhileTheCatchUpWaits: a pause set while an ended pause's
// catch-up waits for the scheduler neither loses that catch-up nor
// doubles it. From today, the hold goes on without a break and the one
// catch-up on return covers both pauses; from a later day it is a 422
// naming pause.from until the scheduler has queued the ended pause's
// catch-up, then accepted, and each pause gets its own. Each paper goes
// out in one mail, no mail goes out while paused, and no mail per missed
// day.
func TestANewPauseWhileTheCatchUpWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from string
		refused    bool
		periods    string // the user's digests sent, in order
		mails      [][]int
	}{
		{"from today", "2026-12-03", false,
			"catchup:2026-12-03..2026-12-09,daily:2026-12-10,daily:2026-12-11,daily:2026-12-12",
			[][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, {11}, {12}}},
		{"from a later day", "2026-12-05", true,
			"catchup:2026-12-01..2026-12-03,daily:2026-12-04,catchup:2026-12-05..2026-12-09,daily:2026-12-10,daily:2026-12-11,daily:2026-12-12",
			[][]int{{1, 2, 3}, {4}, {5, 6, 7, 8, 9}, {10}, {11}, {12}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, fakesmtp.Options{}, "")
			uid := e.reader("again", notify.Daily, "UTC", 6, "category/cs.LG")
			if err := e.pause(uid, "2026-12-01", ""); err != nil {
				t.Fatal(err)
			}
			n := 0
			for now := time.Date(2026, 11, 30, 5, 30, 0, 0, time.UTC); now.Before(time.Date(2026, 12, 12, 12, 0, 0, 0, time.UTC)); now = now.Add(time.Hour) {
				e.clk.Set(now)
				if now.Hour() == 12 { // paper n matches on day n, counted from 30 November
					n++
					e.push(testPaper(fmt.Sprintf("2312.%05d", n), "cs.LG"))
				}
				if now.Equal(time.Date(2026, 12, 3, 10, 30, 0, 0, time.UTC)) {
					// Back: the pause ends; a minute later, before the
					// scheduler's next pass, the next pause is set.
					if _, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Pause: &notify.PausePatch{Clear: true}}); err != nil {
						t.Fatal(err)
					}
					e.clk.Set(now.Add(time.Minute))
					err := e.pause(uid, tc.from, "2026-12-09")
					ae, refused := apperr.As(err)
					refused = refused && ae.Field == "pause.from"
					if refused != tc.refused || (!refused && err != nil) {
						t.Errorf("a pause from %s while the catch-up waits: %v (want refused: %v)", tc.from, err, tc.refused)
					}
					if refused {
						if _, err := e.d.Schedule(e.ctx); err != nil { // its next pass
							t.Fatal(err)
						}
						if err := e.pause(uid, tc.from, "2026-12-09"); err != nil {
							t.Fatalf("the pause from %s once the catch-up is queued: %v", tc.from, err)
						}
					}
				}
				if _, err := e.d.Schedule(e.ctx); err != nil {
					t.Fatal(err)
				}
				e.sendPending()
			}
			rows, err := e.db.Pool.Query(e.ctx, `SELECT period FROM digests WHERE user_id = $1 AND state = 'sent' ORDER BY id`, uid)
			if err != nil {
				t.Fatal(err)
			}
			periods, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || strings.Join(periods, ",") != tc.periods {
				t.Errorf("digests sent: %v (%v), want %s", periods, err, tc.periods)
			}
			msgs := e.smtp.Messages()
			if len(msgs) != len(tc.mails) {
				t.Fatalf("%d mails (%q), want %d", len(msgs), e.subjects(), len(tc.mails))
			}
			for i, papers := range tc.mails {
				in := map[int]bool{}
				for _, p := range papers {
					in[p] = true
				}
				for p := 1; p <= n; p++ {
					if has := strings.Contains(string(msgs[i].Data), fmt.Sprintf("Paper 2312.%05d", p)); has != in[p] {
						t.Errorf("mail %d (%s): has paper %d: %v, want %v", i+1, e.subjects()[i], p, has, in[p])
					}
				}
			}
		})
	}
}
