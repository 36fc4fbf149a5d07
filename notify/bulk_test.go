package notify_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
)

type scheduleRow struct {
	freq      string
	sendEmpty bool
	next      bool // next_at set
	watermark int64
}

func (e *env) schedule(userID int64) (scheduleRow, bool) {
	var s scheduleRow
	err := e.db.Pool.QueryRow(e.ctx, `SELECT frequency, send_empty, next_at IS NOT NULL, watermark FROM digest_schedules WHERE user_id = $1`,
		userID).Scan(&s.freq, &s.sendEmpty, &s.next, &s.watermark)
	return s, err == nil
}

func (e *env) inTx(fn func(tx pgx.Tx) error) {
	e.t.Helper()
	if err := e.db.InTx(e.ctx, fn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) highSeq() int64 {
	var h int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT high_seq FROM match_state`).Scan(&h); err != nil {
		e.t.Fatal(err)
	}
	return h
}

// PutDigestSettings sets frequency and send_empty without scheduling a
// digest: a new row, or digests that were off, start at the high seq; a
// schedule that was on keeps its watermark and next time; instant
// delivery starts and stops with the instant user's follows in
// instant_follows; DeleteSchedules takes the rows off again.
func TestPutDigestSettings(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	weekly := e.reader("weekly", notify.Weekly, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2611.00001", "cs.LG"), testPaper("2611.00002", "cs.AI"))
	u, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: "fresh", Email: "fresh@example.org", EmailVerified: true})
	if err != nil {
		t.Fatal(err)
	}
	fresh := u.ID
	instant := e.reader("instant", notify.Off, "UTC", 7, "category/cs.AI", "category/math.PR")
	before, _ := e.schedule(weekly)
	high := e.highSeq()
	e.inTx(func(tx pgx.Tx) error {
		n, err := notify.PutDigestSettings(e.ctx, tx, []int64{fresh, weekly}, notify.Daily, true)
		if n != 2 {
			t.Errorf("wrote %d rows", n)
		}
		return err
	})
	if s, ok := e.schedule(fresh); !ok || s != (scheduleRow{"daily", true, false, high}) {
		t.Errorf("a new row: %+v (%v), want daily, empty ones, no time, watermark %d", s, ok, high)
	}
	if s, _ := e.schedule(weekly); s != (scheduleRow{"daily", true, before.next, before.watermark}) || !before.next {
		t.Errorf("a schedule that was on: %+v, was %+v", s, before)
	}
	if ids := e.scheduled(); len(ids) != 0 {
		t.Errorf("the scheduler queued %d digests", len(ids))
	}

	mirrored := func() int {
		var n int
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM instant_follows WHERE user_id = $1`, instant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	e.inTx(func(tx pgx.Tx) error {
		_, err := notify.PutDigestSettings(e.ctx, tx, []int64{instant}, notify.Instant, false)
		return err
	})
	if s, _ := e.schedule(instant); s.freq != "instant" || s.next || s.watermark != high || mirrored() != 2 {
		t.Errorf("instant: %+v, %d follows mirrored", s, mirrored())
	}
	e.inTx(func(tx pgx.Tx) error {
		n, err := notify.DeleteSchedules(e.ctx, tx, []int64{instant})
		if n != 1 {
			t.Errorf("deleted %d rows", n)
		}
		return err
	})
	if _, ok := e.schedule(instant); ok || mirrored() != 0 {
		t.Errorf("after DeleteSchedules: a row %v, %d follows mirrored", ok, mirrored())
	}
	if p, err := e.prefs.Get(e.ctx, instant); err != nil || p.Digest.Frequency != notify.Off {
		t.Errorf("profile after DeleteSchedules: %+v, %v", p.Digest, err)
	}
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		_, err := notify.PutDigestSettings(e.ctx, tx, []int64{fresh}, "hourly", false)
		return err
	}); err == nil {
		t.Error("an unknown frequency was written")
	}
}

// A by-hand digest from PutManualDigests is sent with the window it was
// given (the papers of that window only), moves no watermark, and after
// DeleteDigests its period can be written again.
func TestPutManualDigestsKeepTheirWindows(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	a := e.reader("a", notify.Off, "UTC", 7, "category/cs.LG")
	b := e.reader("b", notify.Off, "UTC", 7, "category/cs.LG")
	from := e.highSeq()
	e.push(testPaper("2611.00001", "cs.LG"), testPaper("2611.00002", "cs.LG"))
	to := e.highSeq()
	e.push(testPaper("2611.00003", "cs.LG"))
	e.inTx(func(tx pgx.Tx) error {
		_, err := notify.PutDigestSettings(e.ctx, tx, []int64{a, b}, notify.Daily, true)
		return err
	})
	marks := func() [2]int64 {
		sa, _ := e.schedule(a)
		sb, _ := e.schedule(b)
		return [2]int64{sa.watermark, sb.watermark}
	}
	before := marks()
	ds := []notify.ManualDigest{{UserID: b, Period: "lab:1", FromSeq: from, ToSeq: to}, {UserID: a, Period: "lab:1", FromSeq: from, ToSeq: to}}
	var ids []int64
	e.inTx(func(tx pgx.Tx) error {
		var err error
		ids, err = notify.PutManualDigests(e.ctx, tx, ds)
		return err
	})
	for i, id := range ids {
		var user int64
		var kind, state string
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT user_id, kind, state FROM digests WHERE id = $1`, id).Scan(&user, &kind, &state); err != nil ||
			user != ds[i].UserID || kind != "manual" || state != "pending" {
			t.Errorf("row %d: user %d, %s, %s (%v)", id, user, kind, state, err)
		}
	}
	outs, err := e.d.SendBatch(e.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.State != notify.StateSent || o.Papers != 2 {
			t.Errorf("digest %d: %s with %d papers, want sent with the window's 2", o.DigestID, o.State, o.Papers)
		}
	}
	if m := marks(); m != before {
		t.Errorf("watermarks moved from %v to %v", before, m)
	}
	e.inTx(func(tx pgx.Tx) error {
		n, err := notify.DeleteDigests(e.ctx, tx, ids)
		if n != len(ids) {
			t.Errorf("deleted %d of %d", n, len(ids))
		}
		return err
	})
	e.inTx(func(tx pgx.Tx) error {
		again, err := notify.PutManualDigests(e.ctx, tx, ds[:1])
		if len(again) != 1 || slices.Contains(ids, again[0]) {
			t.Errorf("written again as %v", again)
		}
		return err
	})
}

// PutLedger writes final rows as a send leaves them, at their times; it
// refuses a row that is not final. Its rows are the ledger's like any
// other: the prune deletes the one older than the retention.
func TestPutLedgerWritesFinalRows(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	uid := e.reader("ledger", notify.Daily, "UTC", 7, "category/cs.LG")
	now := e.clk.Now()
	row := func(days int, period string) notify.LedgerRow {
		return notify.LedgerRow{UserID: uid, Period: period, Kind: notify.Daily, State: notify.StateSent, FromSeq: int64(days), ToSeq: int64(days + 1),
			Email: "ledger@example.org", MessageID: "<" + period + "@followfeed.test>", Papers: 3, Reply: "250 2.0.0 OK",
			At: now.Add(-time.Duration(days) * 24 * time.Hour)}
	}
	rows := []notify.LedgerRow{row(100, "daily:old"), row(50, "daily:middle"), row(1, "daily:newest")}
	var n int
	e.inTx(func(tx pgx.Tx) (err error) {
		n, err = notify.PutLedger(e.ctx, tx, slices.Values(rows))
		return err
	})
	if n != 3 {
		t.Fatalf("PutLedger wrote %d", n)
	}
	var sent time.Time
	var state, reply string
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT state, smtp_reply, sent_at FROM digests WHERE period = 'daily:middle'`).Scan(&state, &reply, &sent); err != nil ||
		state != "sent" || reply != "250 2.0.0 OK" || !sent.Equal(rows[1].At) {
		t.Errorf("daily:middle: %s %q sent %s (%v)", state, reply, sent, err)
	}
	pending := row(2, "daily:pending")
	pending.State = notify.StatePending
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		_, err := notify.PutLedger(e.ctx, tx, slices.Values([]notify.LedgerRow{pending}))
		return err
	}); err == nil {
		t.Error("a pending row was loaded")
	}
	if n, err := e.d.PruneLedger(e.ctx); err != nil || n != 1 {
		t.Errorf("PruneLedger = %d, %v; want the row 100 days old", n, err)
	}
}

// PutDigestOrder sets the order, budget and KeepFollowed of users with a
// schedule row, as the profile reads them, and refuses what Preferences
// would.
func TestPutDigestOrder(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	a := e.reader("a", notify.Daily, "UTC", 7, "category/cs.LG")
	b := e.reader("b", notify.Daily, "UTC", 7, "category/cs.LG")
	e.inTx(func(tx pgx.Tx) error {
		n, err := notify.PutDigestOrder(e.ctx, tx, []int64{a}, notify.OrderBest, 20, false)
		if err != nil || n != 1 {
			t.Errorf("PutDigestOrder: %d rows, %v", n, err)
		}
		for _, bad := range []struct {
			order notify.Order
			max   int
		}{{"random", 20}, {notify.OrderBest, -1}, {notify.OrderBest, notify.MaxPapersLimit + 1}} {
			if _, err := notify.PutDigestOrder(e.ctx, tx, []int64{b}, bad.order, bad.max, true); err == nil {
				t.Errorf("PutDigestOrder(%q, %d) accepted", bad.order, bad.max)
			}
		}
		return nil
	})
	for uid, want := range map[int64]notify.DigestSettings{
		a: {Order: notify.OrderBest, MaxPapers: 20, KeepFollowed: false},
		b: {Order: notify.OrderNewest, MaxPapers: 0, KeepFollowed: true},
	} {
		p, err := e.prefs.Get(e.ctx, uid)
		if err != nil || p.Digest.Order != want.Order || p.Digest.MaxPapers != want.MaxPapers || p.Digest.KeepFollowed != want.KeepFollowed {
			t.Errorf("user %d: %+v %v, want %+v", uid, p.Digest, err, want)
		}
	}
}

// MakeDailyDue makes a daily digest due now with the window asked for (or
// the watermark kept), creating a schedule row where there was none, and
// the scheduler then reserves it as any due digest.
func TestMakeDailyDue(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	off := e.reader("off", notify.Off, "UTC", 7)
	kept := e.reader("kept", notify.Daily, "UTC", 7)
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE digest_schedules SET watermark = 42 WHERE user_id = $1`, kept); err != nil {
		t.Fatal(err)
	}
	e.inTx(func(tx pgx.Tx) error {
		if n, err := notify.MakeDailyDue(e.ctx, tx, []int64{off}, 0); err != nil || n != 1 {
			t.Errorf("MakeDailyDue(off, 0) = %d, %v", n, err)
		}
		if n, err := notify.MakeDailyDue(e.ctx, tx, []int64{kept}, -1); err != nil || n != 1 {
			t.Errorf("MakeDailyDue(kept, -1) = %d, %v", n, err)
		}
		return nil
	})
	var rows []struct {
		Freq string
		Mark int64
		Due  bool
	}
	for _, id := range []int64{off, kept} {
		var r struct {
			Freq string
			Mark int64
			Due  bool
		}
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT frequency, watermark, next_at <= now() FROM digest_schedules WHERE user_id = $1`, id).Scan(&r.Freq, &r.Mark, &r.Due); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if rows[0].Freq != "daily" || rows[0].Mark != 0 || !rows[0].Due || rows[1].Freq != "daily" || rows[1].Mark != 42 || !rows[1].Due {
		t.Errorf("after MakeDailyDue: %+v", rows)
	}
}
