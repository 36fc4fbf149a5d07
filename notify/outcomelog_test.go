package notify_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

// TestEveryDeliveryOutcomeIsLoggedOnce: each digest's outcome is one log
// line, INFO when it was sent or skipped (nothing new, digests turned off
// before it went), WARN when it failed (a 550; given up after the last
// attempt), may have been delivered (the connection dropped after the
// body) or will be retried (a 421, a 452), each with the user, the digest,
// its kind and period, its papers and the SMTP reply or the reason. A send
// job run again logs nothing more for rows already final.
func TestEveryDeliveryOutcomeIsLoggedOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	busy := 0
	e := setup(t, fakesmtp.Options{Answer: func(c fakesmtp.Call) fakesmtp.Answer {
		mu.Lock()
		defer mu.Unlock()
		to := c.Rcpt
		if len(c.To) > 0 {
			to = c.To[0]
		}
		switch {
		case c.Stage == fakesmtp.StageRcpt && to == "bounce@example.org":
			return fakesmtp.Answer{Err: &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}}
		case c.Stage == fakesmtp.StageRcpt && to == "full@example.org":
			return fakesmtp.Answer{Err: &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "mailbox full"}}
		case c.Stage == fakesmtp.StageData && to == "drop@example.org":
			return fakesmtp.Answer{Drop: true}
		case c.Stage == fakesmtp.StageData && to == "busy@example.org":
			if busy++; busy == 1 {
				return fakesmtp.Answer{Err: &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}}
			}
		}
		return fakesmtp.Answer{}
	}}, "")
	users := map[string]int64{}
	for _, sub := range []string{"ok", "bounce", "full", "drop", "busy", "off"} {
		users[sub] = e.reader(sub, notify.Daily, "UTC", 6, "category/cs.LG")
	}
	users["empty"] = e.reader("empty", notify.Daily, "UTC", 6, "category/math.AG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	off := "off"
	if _, err := e.prefs.Update(e.ctx, users["off"], notify.ProfilePatch{Digest: &notify.DigestPatch{Frequency: &off}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the send job and its retry
		if _, err := e.d.SendBatch(e.ctx, ids); !errors.Is(err, notify.ErrRetry) {
			t.Fatalf("send job: %v, want a retry for the 452", err)
		}
	}
	if _, err := e.d.GiveUp(e.ctx, ids, "gave up after 12 attempts"); err != nil {
		t.Fatal(err)
	}

	type line struct{ level, msg, reply string }
	want := map[string][]line{
		"ok":     {{"INFO", "digest sent", "250"}},
		"empty":  {{"INFO", "digest skipped", "nothing new"}},
		"off":    {{"INFO", "digest skipped", "digests turned off"}},
		"bounce": {{"WARN", "digest failed", "SMTP 550"}},
		"drop":   {{"WARN", "digest may have been delivered; not resent", "the server may have accepted it"}},
		"busy":   {{"WARN", "digest will be retried", "SMTP 421"}, {"INFO", "digest sent", "250"}},
		"full": {{"WARN", "digest will be retried", "SMTP 452"}, {"WARN", "digest will be retried", "SMTP 452"},
			{"WARN", "digest failed", "gave up after 12 attempts"}},
	}
	byUser := map[string]int64{}
	for _, id := range ids {
		var user int64
		var period string
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT user_id, period FROM digests WHERE id = $1`, id).Scan(&user, &period); err != nil {
			t.Fatal(err)
		}
		for sub, u := range users {
			if u == user {
				byUser[sub] = id
			}
		}
	}
	for sub, lines := range want {
		got := e.logs.digestLines(byUser[sub])
		if len(got) != len(lines) {
			t.Errorf("%s: %d log lines, want %d: %v", sub, len(got), len(lines), got)
			continue
		}
		for i, w := range lines {
			g := got[i]
			papers := "1"
			if sub == "empty" || sub == "off" {
				papers = "0"
			}
			if g["level"] != w.level || g["msg"] != w.msg || !strings.Contains(g["reply"], w.reply) ||
				g["user"] != strconv.FormatInt(users[sub], 10) || g["kind"] != "daily" || g["period"] != "daily:2026-11-30" || g["papers"] != papers {
				t.Errorf("%s, line %d: %v, want %s %q with reply %q, user %d, daily:2026-11-30, %s papers", sub, i+1, g, w.level, w.msg, w.reply, users[sub], papers)
			}
		}
	}
}
