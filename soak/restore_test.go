package soak

import (
	"testing"
	"time"
)

// TestDiffLedgerHoldsARestoreToTheDump: what the dump holds as final must
// not arrive again, what it holds pending must arrive once and end
// delivered, a digest it caught mid-send must not arrive and end unknown.
func TestDiffLedgerHoldsARestoreToTheDump(t *testing.T) {
	dump := map[string]string{"a": "sent", "b": "pending", "c": "pending", "d": "sending", "e": "unknown", "f": "skipped", "g": "pending"}
	end := map[string]string{"a": "sent", "b": "sent", "c": "sent", "d": "unknown", "e": "unknown", "f": "skipped", "g": "pending", "n": "sent"}
	got := map[string]int{"b": 1, "c": 2, "n": 1}
	d := diffLedger(dump, end, got, "sent")
	want := ledgerDiff{again: 0, pendingNotOnce: 2, midSendSent: 0, midSendNotUnknown: 0, twice: 1, fresh: 1}
	if d != want {
		t.Errorf("diff = %+v, want %+v (c arrived twice, g never)", d, want)
	}
	// Sent again, and a mid-send digest resent and marked sent.
	d = diffLedger(map[string]string{"a": "sent", "f": "skipped", "d": "sending"}, map[string]string{"a": "sent", "d": "sent"}, map[string]int{"a": 1, "f": 1, "d": 1}, "sent")
	if d.again != 2 || d.midSendSent != 1 || d.midSendNotUnknown != 1 {
		t.Errorf("diff = %+v, want again 2, midSendSent 1, midSendNotUnknown 1", d)
	}
	// Webhook events: delivered is their word.
	d = diffLedger(map[string]string{"w1": "delivered", "w2": "pending"}, map[string]string{"w1": "delivered", "w2": "delivered"}, map[string]int{"w2": 1}, "delivered")
	if d != (ledgerDiff{}) {
		t.Errorf("a clean restore of events: %+v", d)
	}
}

// TestSplitDursByTheDump: requests started within [from, to] are the
// dump's, both ends included.
func TestSplitDursByTheDump(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	ds := []timedDur{{t0, 1}, {t0.Add(time.Second), 2}, {t0.Add(2 * time.Second), 3}, {t0.Add(3 * time.Second), 4}}
	in, out := splitDurs(ds, t0.Add(time.Second), t0.Add(2*time.Second))
	if len(in) != 2 || in[0] != 2 || in[1] != 3 || len(out) != 2 {
		t.Errorf("in %v, out %v", in, out)
	}
}
