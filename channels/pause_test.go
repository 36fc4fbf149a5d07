package channels_test

import (
	"slices"
	"testing"
	"time"

	"followfeed/channels"
	"followfeed/notify"
	"followfeed/worker"
)

// TestPausedChannelsSendNothingThenCatchUpOrSkip: while the user is on
// vacation (notify's pause) no channel delivers; when the pause ends (the
// digest scheduler's hook) a channel set to catch up gets what it missed
// in one batch, one set to skip never gets it; both get what comes after.
// Between the pause's end and the scheduler's catch-up they stay held.
func TestPausedChannelsSendNothingThenCatchUpOrSkip(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	user := e.reader("away", "UTC", 7, "monday", "category/cs.LG")
	e.webhook(user, "catch", "instant")
	skipID := e.webhook(user, "skip", "instant")
	skip := channels.AfterPauseSkip
	if c, err := e.ch.Update(e.ctx, user, skipID, channels.Spec{AfterPause: &skip}); err != nil || c.PauseCatchUp || c.AfterPause() != skip {
		t.Fatalf("setting skip: %+v %v", c, err)
	}
	catchUp := channels.AfterPauseCatchUp
	if c, err := e.ch.Update(e.ctx, user, skipID, channels.Spec{AfterPause: &catchUp}); err != nil || !c.PauseCatchUp || c.AfterPause() != catchUp {
		t.Fatalf("setting catch_up: %+v %v", c, err)
	}
	if c, err := e.ch.Update(e.ctx, user, skipID, channels.Spec{AfterPause: &skip}); err != nil || c.AfterPause() != skip {
		t.Fatalf("setting skip again: %+v %v", c, err)
	}
	bad := "later"
	if _, err := e.ch.Update(e.ctx, user, skipID, channels.Spec{AfterPause: &bad}); err == nil {
		t.Error("after_pause \"later\" was accepted")
	}
	until := "2026-12-02"
	if _, err := e.prefs.Update(e.ctx, user, notify.ProfilePatch{Pause: &notify.PausePatch{From: "2026-11-30", Until: &until}}); err != nil {
		t.Fatal(err)
	}
	e.push(testPaper("2611.00001", "cs.LG"))
	e.run()
	e.clk.Set(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	e.push(testPaper("2611.00002", "cs.LG"))
	e.run()
	if a, b := e.rcv.papers("catch"), e.rcv.papers("skip"); len(a)+len(b) != 0 {
		t.Fatalf("delivered while paused: catch %v, skip %v", a, b)
	}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := notify.NewDigester(notify.DigesterConfig{DB: e.db, Matcher: e.matcher, Enqueuer: worker.NewEnqueuer(ins),
		Addresses: e.addrs, Now: e.clk.Now, OnPauseEnd: e.ch})
	// The pause has ended (the 2nd at the user's digest hour, 07:00) but
	// the scheduler has not run its catch-up yet: a paper now is held, or
	// the skipping channel would send what it missed with it.
	e.clk.Set(time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC))
	e.push(testPaper("2611.00004", "cs.LG"))
	e.run()
	if a, b := e.rcv.papers("catch"), e.rcv.papers("skip"); len(a)+len(b) != 0 {
		t.Fatalf("delivered after the pause's end, before its catch-up: catch %v, skip %v", a, b)
	}
	e.clk.Set(time.Date(2026, 12, 2, 7, 1, 0, 0, time.UTC))
	if _, err := d.Schedule(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.run()
	if got := e.rcv.papers("catch"); !slices.Equal(got, []string{"2611.00004", "2611.00002", "2611.00001"}) || len(e.rcv.received("catch")) != 1 {
		t.Errorf("the catch-up channel got %v in %d events, want the three papers in one", got, len(e.rcv.received("catch")))
	}
	if got := e.rcv.papers("skip"); len(got) != 0 {
		t.Errorf("the skipping channel got %v", got)
	}
	e.push(testPaper("2611.00003", "cs.LG"))
	e.run()
	if got := e.rcv.papers("skip"); !slices.Equal(got, []string{"2611.00003"}) {
		t.Errorf("after the pause the skipping channel got %v", got)
	}
}
