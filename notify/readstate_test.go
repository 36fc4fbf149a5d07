package notify_test

import (
	"log/slog"
	netmail "net/mail"
	"net/url"
	"slices"
	"strings"
	"testing"

	"followfeed/inbox"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

// A paper the user marked done or read (package inbox) is absent from
// their next digest and instant alert, and counts in neither's total;
// marked unread again it is back.
func TestDigestsLeaveOutPapersMarkedReadOrDone(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	ib := inbox.New(e.db, e.matcher)
	daily := e.reader("daily", notify.Daily, "UTC", 6, "category/cs.LG")
	eager := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"), testPaper("2301.00002", "cs.LG"), testPaper("2301.00003", "cs.LG"))
	for uid, st := range map[int64]inbox.State{daily: inbox.Done, eager: inbox.Read} {
		if _, err := ib.Set(e.ctx, uid, "2301.00002", st); err != nil {
			t.Fatal(err)
		}
	}
	c, err := e.d.Preview(e.ctx, daily)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 2 || slices.Contains(titlesOf(c), "Paper 2301.00002") || !slices.Contains(titlesOf(c), "Paper 2301.00003") {
		t.Errorf("the daily digest: total %d, papers %v; want 2, without 2301.00002", c.Total, titlesOf(c))
	}
	if err := e.d.SendInstant(e.ctx, eager); err != nil {
		t.Fatal(err)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d instant alerts, want 1", len(msgs))
	}
	if data := string(msgs[0].Data); strings.Contains(data, "Paper 2301.00002") || !strings.Contains(data, "Paper 2301.00001") {
		t.Errorf("the instant alert lists the paper marked read, or not the others")
	}
	if _, err := ib.Set(e.ctx, daily, "2301.00002", inbox.Unread); err != nil {
		t.Fatal(err)
	}
	if c, err := e.d.Preview(e.ctx, daily); err != nil || c.Total != 3 {
		t.Errorf("after marking it unread again: total %d (%v), want 3", c.Total, err)
	}
}

// A user who turned "remember what I opened" on (package inbox) gets an
// "Open" (and mark read) link (signed, /open/) per paper of their digest;
// a user who left it off gets none, and their digest is as before.
func TestOpenLinksOnlyForUsersWhoRememberWhatTheyOpened(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	ib := inbox.New(e.db, e.matcher)
	base, _ := url.Parse("https://followfeed.test")
	d := notify.NewDigester(notify.DigesterConfig{DB: e.db, Matcher: e.matcher, Sender: e.sender, Enqueuer: e.enq,
		Links: noLinks{}, Addresses: e.addrs, Logger: slog.New(e.logs), Opened: ib,
		From: &netmail.Address{Name: "followfeed", Address: "digest@followfeed.test"}, BaseURL: base, Now: e.clk.Now})
	opener := e.reader("opener", notify.Daily, "UTC", 6, "category/cs.LG")
	plain := e.reader("plain", notify.Daily, "UTC", 6, "category/cs.LG")
	if err := ib.SetRememberOpened(e.ctx, opener, true); err != nil {
		t.Fatal(err)
	}
	e.push(testPaper("2301.00001", "cs.LG"), testPaper("2301.00002", "cs.LG"))
	for uid, want := range map[int64]bool{opener: true, plain: false} {
		c, err := d.Preview(e.ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, g := range c.Groups {
			for _, p := range g.Papers {
				if strings.Contains(p.Feedback.Open, "/open/ffl_") {
					n++
				}
			}
		}
		if want && n != 2 || !want && n != 0 {
			t.Errorf("user %d (remembers %v): %d papers with an open link", uid, want, n)
		}
		_, html, err := notify.RenderDigest(c)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(html, `">Open</a>`) != want {
			t.Errorf("user %d (remembers %v): the HTML's open links wrong", uid, want)
		}
	}
}
