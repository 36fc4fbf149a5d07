package notify_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/account"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testjobs"
	"followfeed/notify"
	"followfeed/worker"
)

// eraser is account's erasure with notify's hook, and a check that the
// hook (not the users row's cascade) emptied notify's tables.
func (e *env) eraser() *account.Users {
	users := account.NewUsers(e.db)
	users.OnErase(notify.EraseUser)
	users.OnErase(func(ctx context.Context, tx pgx.Tx, userID int64) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM digests WHERE user_id = $1) + (SELECT count(*) FROM digest_schedules WHERE user_id = $1)`,
			userID).Scan(&n); err != nil || n != 0 {
			e.t.Errorf("after notify's hook: %d rows (%v)", n, err)
		}
		return nil
	})
	return users
}

func (e *env) erase(users *account.Users, id int64) {
	e.t.Helper()
	if erased, err := users.Erase(e.ctx, id); err != nil || !erased {
		e.t.Fatalf("Erase(%d): %v %v", id, erased, err)
	}
}

// TestJobsOfAnErasedUserSendNothing: a send job carrying the digest of a
// user erased since it was queued completes without error and sends only
// the other user's; an instant-alert job and a confirmation-mail job of
// an erased user complete and send nothing. The ledger (Ledger, the
// export's) lists a user's digests, and none once they are erased.
func TestJobsOfAnErasedUserSendNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	ada := e.reader("ada", notify.Daily, "UTC", 6, "category/cs.LG")
	bob := e.reader("bob", notify.Daily, "UTC", 6, "category/cs.LG")
	eve := e.reader("eve", notify.Instant, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	if len(ids) != 2 {
		t.Fatalf("%d digests scheduled, want 2", len(ids))
	}
	if l, err := e.d.Ledger(e.ctx, ada); err != nil || len(l) != 1 || l[0].Kind != "daily" || l[0].State != notify.StatePending || l[0].Period == "" {
		t.Fatalf("Ledger before: %+v %v", l, err)
	}
	users := e.eraser()
	e.erase(users, ada)
	e.erase(users, eve)

	discard := slog.New(slog.DiscardHandler)
	job := testjobs.NewAttempts(t, e.db.Pool, discard, &worker.DigestWorker{Digester: e.d, Logger: discard}, worker.DigestArgs{DigestIDs: ids})
	if res, err := job.Work(1); err != nil || res.EventKind != river.EventKindJobCompleted {
		t.Fatalf("the send job: %v %v", res, err)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != "bob@example.org" {
		t.Fatalf("messages: %+v, want bob's alone", msgs)
	}
	if l, err := e.d.Ledger(e.ctx, bob); err != nil || len(l) != 1 || l[0].State != notify.StateSent || l[0].SentAt.IsZero() {
		t.Errorf("bob's ledger: %+v %v", l, err)
	}
	if l, err := e.d.Ledger(e.ctx, ada); err != nil || len(l) != 0 {
		t.Errorf("the erased user's ledger: %+v %v", l, err)
	}
	instant := testjobs.NewAttempts(t, e.db.Pool, discard, &worker.InstantWorker{Digester: e.d}, worker.InstantArgs{UserIDs: []int64{eve}})
	if res, err := instant.Work(1); err != nil || res.EventKind != river.EventKindJobCompleted {
		t.Errorf("the instant job: %v %v", res, err)
	}
	confirm := testjobs.NewAttempts(t, e.db.Pool, discard, &worker.ConfirmWorker{Confirmations: e.confirms}, worker.ConfirmArgs{UserID: ada, Email: "ada@example.org"})
	if res, err := confirm.Work(1); err != nil || res.EventKind != river.EventKindJobCompleted {
		t.Errorf("the confirmation job: %v %v", res, err)
	}
	if n := len(e.smtp.Messages()); n != 1 {
		t.Errorf("%d messages in all, want 1", n)
	}
}

// erasingLinks erases a user while a send job builds their digest (the
// feed links are read after the window was reserved, before the message
// is marked sending).
type erasingLinks struct {
	e     *env
	users *account.Users
	id    int64
}

func (l erasingLinks) FeedURLs(ctx context.Context, ids []int64) (map[int64]string, error) {
	l.e.erase(l.users, l.id)
	return noLinks{}.FeedURLs(ctx, ids)
}

// TestErasedWhileBuildingIsNotSent: a user erased while a send job builds
// their digest (its window reserved, the message not yet marked sending)
// gets no mail, and the job ends without an error.
func TestErasedWhileBuildingIsNotSent(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	ada := e.reader("ada", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	d := e.digester(e.sender, erasingLinks{e: e, users: e.eraser(), id: ada})
	outs, err := d.SendBatch(e.ctx, ids)
	if err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	if len(outs) != 1 || outs[0].State != "" {
		t.Errorf("outcomes: %+v, want one without a state", outs)
	}
	if n := len(e.smtp.Messages()); n != 0 {
		t.Errorf("%d messages sent to an erased user", n)
	}
}

// TestErasureHashesTheAddressesDigestsWentTo: the ledger records the
// address each digest went to; when the user is erased, the suppression
// of such an address (no longer their current one) is kept only as a hash,
// like the current address's.
func TestErasureHashesTheAddressesDigestsWentTo(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	ada := e.reader("ada", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	if out, err := e.d.Send(e.ctx, e.scheduled()[0]); err != nil || out.State != notify.StateSent {
		t.Fatalf("Send: %+v %v", out, err)
	}
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		return e.addrs.Suppress(e.ctx, tx, "ada@example.org", "bounce", "550 no such user ada@example.org")
	}); err != nil {
		t.Fatal(err)
	}
	moved := "ada.new@example.org"
	if _, err := e.prefs.Update(e.ctx, ada, notify.ProfilePatch{Email: &moved}); err != nil {
		t.Fatal(err)
	}
	e.erase(e.eraser(), ada)
	var plain, hashed int
	if err := e.db.Pool.QueryRow(e.ctx, `
		SELECT count(*) FILTER (WHERE email ILIKE '%ada%' OR detail ILIKE '%ada%'),
		       count(*) FILTER (WHERE email IS NULL AND email_sha256 = sha256('ada@example.org'))
		FROM suppressions`).Scan(&plain, &hashed); err != nil {
		t.Fatal(err)
	}
	if plain != 0 || hashed != 1 {
		t.Errorf("suppressions: %d with the address as text, %d as its hash; want 0 and 1", plain, hashed)
	}
}
