package notify_test

import (
	"strings"
	"testing"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/mute"
	"followfeed/notify"
)

// muteAuthor mutes the researcher id for every follow of uid.
func (e *env) muteAuthor(uid int64, id string) {
	e.t.Helper()
	s, err := mute.Parse(mute.Input{Researcher: &id})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := mute.NewService(e.db).Create(e.ctx, uid, s); err != nil {
		e.t.Fatal(err)
	}
}

// TestAMutedAuthorsPaperIsInNoDigestOrAlert: a user who muted an
// author gets no instant alert for a batch of only that author's papers,
// an alert without it when it comes with another, and a digest (its
// preview) that neither shows nor counts it; a user without the mute
// gets every paper.
func TestAMutedAuthorsPaperIsInNoDigestOrAlert(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	eager := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	daily := e.reader("daily", notify.Daily, "UTC", 7, "category/cs.LG")
	other := e.reader("other", notify.Instant, "UTC", 7, "category/cs.LG")
	e.muteAuthor(eager, "openalex:A9")
	e.muteAuthor(daily, "openalex:A9")

	e.push(testPaper("2301.00001", "cs.LG", "openalex:A9"))
	outs, err := e.d.SendInstants(e.ctx, []int64{eager, other})
	if err != nil || len(outs) != 2 || outs[0].State != "skipped" || outs[0].Papers != 0 || outs[1].State != "sent" {
		t.Fatalf("alerts for a muted author's paper alone: %+v %v; want eager's skipped with nothing new, other's sent", outs, err)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "Paper 2301.00001") || !strings.Contains(strings.Join(msgs[0].To, ","), "other@") {
		t.Fatalf("%d alerts: want one, to other, with the paper", len(msgs))
	}

	e.push(testPaper("2301.00002", "cs.LG", "openalex:A9"), testPaper("2301.00003", "cs.LG"))
	if err := e.d.SendInstant(e.ctx, eager); err != nil {
		t.Fatal(err)
	}
	msgs = e.smtp.Messages()
	var alert string
	for _, m := range msgs {
		if strings.Contains(strings.Join(m.To, ","), "eager@") {
			alert = string(m.Data)
		}
	}
	if alert == "" || strings.Contains(alert, "Paper 2301.00002") || strings.Contains(alert, "Paper 2301.00001") || !strings.Contains(alert, "Paper 2301.00003") {
		t.Errorf("eager's alert: want 2301.00003 alone\n%s", alert)
	}

	c, err := e.d.Preview(e.ctx, daily)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, g := range c.Groups {
		for _, p := range g.Papers {
			titles = append(titles, p.Title)
		}
	}
	if c.Total != 1 || len(titles) != 1 || titles[0] != "Paper 2301.00003" {
		t.Errorf("daily's digest: total %d, %v; want the one paper not by the muted author", c.Total, titles)
	}
}
