package notify_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

// ledgerRow is a digests row as the prune test reads it.
type ledgerRow struct {
	user          int64
	period, state string
}

func (e *env) ledger() []ledgerRow {
	e.t.Helper()
	rows, err := e.db.Pool.Query(e.ctx, `SELECT user_id, period, state FROM digests ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerRow, error) {
		var l ledgerRow
		err := r.Scan(&l.user, &l.period, &l.state)
		return l, err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestPruneLedgerKeepsWhatPreventsAResend drives five days of June
// through the real scheduler, instant alerts and SendNow, then moves the
// clock to September, past the 90-day retention. The prune deletes the
// old final rows except each user's newest instant and newest other row;
// an old row still pending stays too. Then nothing is sent twice: SendNow of
// the instant user, whose window has not moved since his by-hand digest
// in June, finds that kept row and sends nothing; after a new paper, the
// daily user's next scheduled digest is one new row and one mail.
func TestPruneLedgerKeepsWhatPreventsAResend(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	june := time.Date(2026, 6, 1, 6, 0, 0, 0, time.UTC)
	e.clk.Set(june)
	dana := e.reader("dana", notify.Daily, "UTC", 7, "category/cs.LG")
	ivan := e.reader("ivan", notify.Instant, "UTC", 7, "category/cs.LG")
	quiet := e.reader("quiet", notify.Daily, "UTC", 7, "category/cs.LG")
	stuck := e.reader("stuck", notify.Off, "UTC", 7, "category/cs.LG")
	sendPending := func() {
		t.Helper()
		rows, _ := e.db.Pool.Query(e.ctx, `SELECT id FROM digests WHERE state = 'pending' ORDER BY id`)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.d.SendBatch(e.ctx, ids); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		e.clk.Set(june.Add(time.Duration(i)*24*time.Hour + 2*time.Hour))
		e.push(testPaper(fmt.Sprintf("2606.%05d", i+1), "cs.LG"))
		if err := e.d.SendInstant(e.ctx, ivan); err != nil {
			t.Fatal(err)
		}
		if _, err := e.d.Schedule(e.ctx); err != nil {
			t.Fatal(err)
		}
		sendPending()
		if i == 2 {
			off := string(notify.Off)
			if _, err := e.prefs.Update(e.ctx, quiet, notify.ProfilePatch{Digest: &notify.DigestPatch{Frequency: &off}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.clk.Set(time.Date(2026, 6, 5, 9, 0, 0, 0, time.UTC))
	if res, err := e.d.SendNow(e.ctx, ivan, true); err != nil || res.Status != notify.NowSent {
		t.Fatalf("SendNow in June: %+v, %v", res, err)
	}
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error { // pending: no job ever sent it
		_, err := notify.PutManualDigests(e.ctx, tx, []notify.ManualDigest{{UserID: stuck, Period: "manual:stuck", FromSeq: 0, ToSeq: 1}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Aging on purpose: the rows the database's clock dated (SendNow's,
	// the loader's) belong to June 5 like the rest.
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE digests SET created_at = '2026-06-05 09:00Z' WHERE period LIKE 'manual:%'`); err != nil {
		t.Fatal(err)
	}
	mails := len(e.smtp.Messages())
	all := e.ledger()
	if len(all) != 5+5+3+2 {
		t.Fatalf("June's ledger: %d rows %+v", len(all), all)
	}

	e.clk.Set(time.Date(2026, 9, 13, 8, 0, 0, 0, time.UTC)) // June 5 + 100 days
	n, err := e.d.PruneLedger(e.ctx)
	if err != nil || n != 10 {
		t.Errorf("PruneLedger = %d, %v; want 10 rows", n, err)
	}
	var kept []string
	for _, l := range e.ledger() {
		kept = append(kept, fmt.Sprintf("%d %s %s", l.user, l.period, l.state))
	}
	var want []string
	for _, l := range all {
		switch {
		case l.user == dana && l.period == "daily:2026-06-05", l.user == stuck,
			l.user == ivan && (l.period == lastOf(all, ivan, "manual:") || l.period == lastOf(all, ivan, "instant:")),
			l.user == quiet && l.period == "daily:2026-06-03":
			want = append(want, fmt.Sprintf("%d %s %s", l.user, l.period, l.state))
		}
	}
	if !slices.Equal(kept, want) || len(want) != 5 {
		t.Errorf("kept %v\nwant %v", kept, want)
	}
	if n, err := e.d.PruneLedger(e.ctx); err != nil || n != 0 {
		t.Errorf("a second prune deleted %d (%v)", n, err)
	}

	res, err := e.d.SendNow(e.ctx, ivan, true)
	if err != nil || res.Status != notify.NowAlreadySent {
		t.Errorf("SendNow after the prune: %+v, %v; want %q (the June row kept)", res, err, notify.NowAlreadySent)
	}
	e.push(testPaper("2609.00001", "cs.LG"))
	if _, err := e.d.Schedule(e.ctx); err != nil {
		t.Fatal(err)
	}
	sendPending()
	if got := len(e.smtp.Messages()); got != mails+1 {
		t.Errorf("%d mails after the prune, want %d (dana's next digest only)", got, mails+1)
	}
}

// lastOf is the period of user's newest row whose period starts with prefix.
func lastOf(rows []ledgerRow, user int64, prefix string) string {
	p := ""
	for _, l := range rows {
		if l.user == user && strings.HasPrefix(l.period, prefix) {
			p = l.period
		}
	}
	return p
}
