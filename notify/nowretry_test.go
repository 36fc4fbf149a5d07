package notify_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testjobs"
	"followfeed/notify"
	"followfeed/worker"
)

// answer421Once is an SMTP server that answers the first message's final
// dot with 421 (the whole body was read: certainly not delivered).
func answer421Once() fakesmtp.Options {
	return fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageData && n == 1 {
			return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
		return nil
	}}
}

// TestDigestNowRetriesATemporaryFailureInItsOwnJob: a digest sent by hand
// (SendNow, `digest --now`) that meets a 421 at the end of DATA is not lost:
// it stays pending with a send job of its own in the mail queue, due
// RetryDelay later and queued with the failure, and says when; a second
// SendNow finds nothing new (the papers are the pending digest's); the
// mail queue's worker then sends the same row, once.
func TestDigestNowRetriesATemporaryFailureInItsOwnJob(t *testing.T) {
	t.Parallel()
	e := setup(t, answer421Once(), "")
	// The retry is due RetryDelay after the service's clock, and River
	// runs it by the real one.
	e.clk.Set(time.Now().Add(-notify.RetryDelay))
	uid := e.reader("r", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"), testPaper("2301.00002", "cs.LG"))
	res, err := e.d.SendNow(e.ctx, uid, false)
	if err != nil || res.Status != notify.NowRetrying || res.State != notify.StatePending || res.Papers != 2 ||
		!strings.Contains(res.Reason, "SMTP 421") || !res.RetryAt.Equal(e.clk.Now().Add(notify.RetryDelay)) {
		t.Fatalf("--now meeting a 421: %+v, %v; want pending, 2 papers, retried at %v", res, err, e.clk.Now().Add(notify.RetryDelay))
	}
	if st, reply := e.state(res.DigestID); st != "pending" || !strings.Contains(reply, "421") {
		t.Fatalf("ledger after the 421: %s %q", st, reply)
	}
	jobs := testjobs.List(t, e.db.Pool, worker.DigestArgs{}.Kind())
	if len(jobs) != 1 {
		t.Fatalf("%d send jobs after --now met a 421, want the retry's one", len(jobs))
	}
	var args worker.DigestArgs
	if err := json.Unmarshal(jobs[0].EncodedArgs, &args); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(args.DigestIDs, []int64{res.DigestID}) || jobs[0].Queue != worker.QueueMail ||
		jobs[0].ScheduledAt.Sub(res.RetryAt).Abs() > time.Millisecond {
		t.Fatalf("retry job %+v (args %v), want digest %d in the mail queue at %v", jobs[0], args.DigestIDs, res.DigestID, res.RetryAt)
	}
	if again, err := e.d.SendNow(e.ctx, uid, false); err != nil || again.Status != notify.NowNothingNew {
		t.Fatalf("a second --now: %+v, %v; want nothing new", again, err)
	}

	e.runMailJobs().WaitCompleted(t, e.db.Pool, worker.DigestArgs{}.Kind(), 1)
	if st, reply := e.state(res.DigestID); st != "sent" || !strings.Contains(reply, "250") {
		t.Fatalf("after the retry job: %s %q, want sent", st, reply)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "Paper 2301.00001") || !strings.Contains(string(msgs[0].Data), "Paper 2301.00002") {
		t.Fatalf("%d messages delivered, want the one digest with both papers", len(msgs))
	}
	if n := testjobs.Count(t, e.db.Pool, worker.DigestArgs{}.Kind()); n != 1 {
		t.Errorf("%d send jobs in all, want 1", n)
	}
}
