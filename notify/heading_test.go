package notify_test

import (
	"strings"
	"testing"
	"time"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

// TestADigestSaysWhatItIsAndWhatTheUserFollows: a digest's heading says
// what it is (a daily digest and its day; one sent by hand with `digest
// --now`, whatever the user's frequency, instant included), and its footer
// names what the user follows, kind by kind, in both parts.
func TestADigestSaysWhatItIsAndWhatTheUserFollows(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	instant := e.reader("inst", notify.Instant, "UTC", 7, "category/cs.LG", "institution/ror:03dbr7087",
		"query/ti:graph AND cat:cs.LG", "paper/2301.00009")
	e.reader("day", notify.Daily, "UTC", 6, "researcher/openalex:A5023888391", "researcher/orcid:0000-0002-1825-0097", "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))

	if res, err := e.d.SendNow(e.ctx, instant, false); err != nil || res.Status != notify.NowSent {
		t.Fatalf("--now: %+v, %v", res, err)
	}
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	for _, id := range e.scheduled() {
		if _, err := e.d.Send(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][2]string{
		"inst@example.org": {"Your papers since your last digest, sent on request — Monday 30 November",
			"You get this email because you follow 1 institution, 1 category, 1 query and 1 paper on followfeed."},
		"day@example.org": {"Your daily papers — Monday 30 November",
			"You get this email because you follow 2 researchers and 1 category on followfeed."},
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d mails, want 2", len(msgs))
	}
	for _, m := range msgs {
		w := want[m.To[0]]
		text := strings.Join(strings.Fields(textPart(t, m.Data)), " ")
		if !strings.HasPrefix(text, w[0]+" ") || !strings.Contains(text, w[1]) {
			t.Errorf("mail to %s: want heading %q and %q in:\n%s", m.To[0], w[0], w[1], text)
		}
		html := partOf(t, m.Data, "text/html")
		if !strings.Contains(html, ">"+w[0]+"</h1>") || !strings.Contains(html, ">"+w[1]) {
			t.Errorf("mail to %s: the HTML part lacks the heading %q or %q:\n%s", m.To[0], w[0], w[1], html)
		}
	}
}
