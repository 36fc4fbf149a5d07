package notify_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testjobs"
	"followfeed/mail"
	"followfeed/notify"
	"followfeed/worker"
)

// lifeSteps runs `digest --now` (SendNow), after a new paper, once, at one
// step of an instant alert's life; the seams of the digester (its Links,
// called once the windows are reserved; its Sender, around the SMTP
// transaction) call step. Steps while it runs are --now's own, not the
// alert's.
type lifeSteps struct {
	e      *env
	t      *testing.T
	user   int64
	at     string
	mu     sync.Mutex
	busy   bool
	done   bool
	pushed []string // every paper's arXiv id
}

func (s *lifeSteps) paper() {
	id := fmt.Sprintf("2301.%05d", len(s.pushed)+1)
	s.pushed = append(s.pushed, id)
	s.e.push(testPaper(id, "cs.LG"))
}

func (s *lifeSteps) step(name string) {
	s.mu.Lock()
	if s.busy || s.done || name != s.at {
		s.mu.Unlock()
		return
	}
	s.busy, s.done = true, true
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.busy = false; s.mu.Unlock() }()
	s.paper()
	if res, err := s.e.d.SendNow(s.e.ctx, s.user, false); err != nil || res.Status != notify.NowSent {
		s.t.Errorf("--now at %q: %+v, %v; want the new paper sent", name, res, err)
	}
}

type stepLinks struct{ s *lifeSteps }

func (l stepLinks) FeedURLs(ctx context.Context, ids []int64) (map[int64]string, error) {
	l.s.step("reserved")
	return noLinks{}.FeedURLs(ctx, ids)
}

type stepSender struct {
	s     *lifeSteps
	inner mail.Sender
}

func (m stepSender) Send(ctx context.Context, msg *mail.Message) (string, error) {
	m.s.step("sending")
	reply, err := m.inner.Send(ctx, msg)
	m.s.step("sent")
	return reply, err
}

// TestDigestNowNeverSilencesInstantAlerts: `digest --now`, with a new
// paper, at each step of an instant alert's life (after the match
// scheduled it, after its job reserved the window, while it is handed to
// the SMTP server, after the server accepted it and before the ledger
// records it, after it was recorded, while it waits for a retry after a
// 421) never silences the user: every paper reaches her exactly once, and
// the next match still mails, with its outcome logged.
func TestDigestNowNeverSilencesInstantAlerts(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"scheduled", "reserved", "sending", "sent", "recorded", "retrying"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			opts := fakesmtp.Options{}
			if at == "retrying" {
				opts = answer421Once()
			}
			e := setup(t, opts, "")
			s := &lifeSteps{e: e, t: t, at: at}
			e.d = e.digester(stepSender{s: s, inner: e.sender}, stepLinks{s})
			s.user = e.reader("alice", notify.Instant, "UTC", 7, "category/cs.LG")
			alerts := func() int {
				return testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind())
			}
			// The alert's job, as River runs it.
			job := func() []notify.Outcome {
				outs, err := e.d.SendInstants(e.ctx, []int64{s.user})
				if err != nil && !(at == "retrying" && strings.Contains(err.Error(), "421")) {
					t.Fatalf("instant job: %v", err)
				}
				return outs
			}

			s.paper() // the match schedules the alert
			if alerts() != 1 {
				t.Fatalf("%d instant jobs after the first match, want 1", alerts())
			}
			s.step("scheduled")
			job() // reserves, sends, records
			s.step("recorded")
			s.step("retrying")
			if at == "retrying" {
				job() // River's retry
			}
			job() // the job of a match during --now's turn, when it queued one

			// The next match mails.
			s.paper()
			last := s.pushed[len(s.pushed)-1]
			outs := job()
			if len(outs) != 1 || outs[0].State != notify.StateSent {
				t.Fatalf("the alert after %s: %+v, want one sent (%d instant jobs queued)", last, outs, alerts())
			}
			msgs := e.smtp.Messages()
			if !strings.Contains(textPart(t, msgs[len(msgs)-1].Data), "Paper "+last) {
				t.Errorf("the last mail lacks paper %s:\n%s", last, textPart(t, msgs[len(msgs)-1].Data))
			}
			if l := e.logs.digestLines(outs[0].DigestID); len(l) != 1 || l[0]["msg"] != "digest sent" {
				t.Errorf("the last alert's log lines: %v, want one \"digest sent\"", l)
			}
			// Every paper exactly once.
			for _, id := range s.pushed {
				n := 0
				for _, m := range msgs {
					n += strings.Count(textPart(t, m.Data), "Paper "+id)
				}
				if n != 1 {
					t.Errorf("paper %s mailed %d times, want once (%d mails)", id, n, len(msgs))
				}
			}
		})
	}
}

// TestARetriedAlertLeavesALaterMatchItsOwnAlert: a match while an alert
// waits for its retry (its window reserved) schedules the next alert; the
// retry resumes the first and does not swallow the second, whose papers
// are mailed without waiting for yet another match.
func TestARetriedAlertLeavesALaterMatchItsOwnAlert(t *testing.T) {
	t.Parallel()
	e := setup(t, answer421Once(), "")
	uid := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	if _, err := e.d.SendInstants(e.ctx, []int64{uid}); err == nil {
		t.Fatal("the first attempt met no 421")
	}
	e.push(testPaper("2301.00002", "cs.LG"))
	if n := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind()); n != 2 {
		t.Fatalf("%d instant jobs after a match during the retry, want 2", n)
	}
	for range 2 { // the first job's retry, then the second job
		if _, err := e.d.SendInstants(e.ctx, []int64{uid}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := e.smtp.Messages()
	var all string
	for _, m := range msgs {
		all += textPart(t, m.Data)
	}
	if len(msgs) != 2 || strings.Count(all, "Paper 2301.00001") != 1 || strings.Count(all, "Paper 2301.00002") != 1 {
		t.Fatalf("%d alerts, want two with each paper once:\n%s", len(msgs), all)
	}
}

// TestAnAbandonedAlertIsScheduledAgain: an instant alert whose job never
// runs (cancelled from the job UI) keeps its waiting marker; matches within
// InstantAbandoned of its due time join it, and the first match after that
// schedules it again, with a job that mails every paper.
func TestAnAbandonedAlertIsScheduledAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	jobs := testjobs.List(t, e.db.Pool, worker.InstantArgs{}.Kind())
	if len(jobs) != 1 {
		t.Fatalf("%d instant jobs, want 1", len(jobs))
	}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ins.JobCancel(e.ctx, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	e.clk.Set(e.clk.Now().Add(notify.InstantDelay + notify.InstantAbandoned - time.Minute))
	e.push(testPaper("2301.00002", "cs.LG"))
	if n := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind()); n != 1 {
		t.Fatalf("%d instant jobs after a match while the alert waits, want still 1", n)
	}
	e.clk.Set(e.clk.Now().Add(2 * time.Minute))
	e.push(testPaper("2301.00003", "cs.LG"))
	jobs = testjobs.List(t, e.db.Pool, worker.InstantArgs{}.Kind(), rivertype.JobStateScheduled, rivertype.JobStateAvailable)
	if len(jobs) != 1 {
		t.Fatalf("%d instant jobs waiting after a match past the abandoned alert, want 1", len(jobs))
	}
	if err := e.d.SendInstant(e.ctx, uid); err != nil {
		t.Fatal(err)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d alerts, want 1", len(msgs))
	}
	for _, id := range []string{"2301.00001", "2301.00002", "2301.00003"} {
		if !strings.Contains(textPart(t, msgs[0].Data), "Paper "+id) {
			t.Errorf("the alert lacks paper %s", id)
		}
	}
}
