package soak

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCoverageCountsEverySeqOnce: a seq in no range is lost, in two is
// counted twice, at a range's either end is held.
func TestCoverageCountsEverySeqOnce(t *testing.T) {
	ranges := []seqRange{{10, 19}, {1, 5}, {20, 30}, {25, 26}, {40, 40}}
	lost, twice := coverage(ranges, []int64{1, 5, 6, 9, 10, 19, 20, 25, 26, 27, 40, 41})
	if !slices.Equal(lost, []int64{6, 9, 41}) {
		t.Errorf("lost = %v, want [6 9 41]", lost)
	}
	if !slices.Equal(twice, []int64{25, 26}) {
		t.Errorf("twice = %v, want [25 26]", twice)
	}
	if l, tw := coverage(nil, []int64{3}); len(l) != 1 || len(tw) != 0 {
		t.Errorf("no ranges: lost %v, twice %v", l, tw)
	}
}

// TestTilingFindsOverlapsAndGaps: windows (from, to] must follow each
// other exactly.
func TestTilingFindsOverlapsAndGaps(t *testing.T) {
	if n := tiling([]seqRange{{10, 20}, {0, 10}, {20, 20}, {20, 35}}); n != 0 {
		t.Errorf("contiguous windows: %d bad", n)
	}
	if n := tiling([]seqRange{{0, 10}, {8, 20}}); n != 1 {
		t.Errorf("an overlap: %d bad, want 1", n)
	}
	if n := tiling([]seqRange{{0, 10}, {12, 20}, {20, 25}}); n != 1 {
		t.Errorf("a gap: %d bad, want 1", n)
	}
}

// TestJudgeTermsSplitsInsertsByLeader: inserts before the kill are the
// killed leader's, those between the kill and the new election (less a
// second of polling slack) none's, the rest the survivor's; resume is the
// wait for the survivor's first.
func TestJudgeTermsSplitsInsertsByLeader(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	kill, elected, end := at(45), at(62), at(140)
	ins := []time.Time{at(0.1), at(2), at(4), at(44), at(50), at(61.5), at(63), at(65)}
	got := judgeTerms(ins, 2*time.Second, at(0), kill, elected, end)
	if got.before != 4 || got.between != 1 || got.after != 3 {
		t.Errorf("terms %d/%d/%d, want 4/1/3", got.before, got.between, got.after)
	}
	if got.resume != 0 { // the insert at 61.5 s is within the slack: the survivor's
		t.Errorf("resume = %s, want 0", got.resume)
	}
	if got.maxBefore != 2+22 || got.maxAfter != 2+39 {
		t.Errorf("bounds %d/%d", got.maxBefore, got.maxAfter)
	}
	if got.minGap != 1500*time.Millisecond {
		t.Errorf("minGap = %s", got.minGap)
	}
	// Nothing after the election: resume is the whole term (never).
	none := judgeTerms([]time.Time{at(1)}, time.Minute, at(0), kill, elected, end)
	if none.after != 0 || none.resume != end.Sub(elected) {
		t.Errorf("no insert after the election: %+v", none)
	}
	late := judgeTerms([]time.Time{at(1), at(80)}, time.Minute, at(0), kill, elected, end)
	if late.resume != 18*time.Second {
		t.Errorf("resume = %s, want 18s", late.resume)
	}
}

// TestHookSinkVerifiesAndTallies: the receiver verifies Standard Webhooks
// signatures (a wrong secret or body fails), answers 503 while failing,
// and the tally counts repeated ids (those first accepted before the cut
// apart) and papers that reached a channel in two events.
func TestHookSinkVerifiesAndTallies(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	h := newHookSink()
	h.expect("/hook/1", secret)
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(path, id, body string, sign []byte) int {
		ts := "1764840000"
		mac := hmac.New(sha256.New, sign)
		mac.Write([]byte(id + "." + ts + "." + body))
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", "v1,bm90IGl0 v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ev := func(ids ...string) string {
		var ps []string
		for _, id := range ids {
			ps = append(ps, `{"arxiv_id": "`+id+`"}`)
		}
		return `{"type": "papers.matched", "data": {"papers": [` + strings.Join(ps, ",") + `]}}`
	}
	post("/hook/1", "msg_a", ev("p1", "p2"), key)
	cut := time.Now()
	post("/hook/1", "msg_a", ev("p1", "p2"), key) // retried after the cut, first before: in flight
	post("/hook/1", "msg_b", ev("p3"), key)
	post("/hook/1", "msg_b", ev("p3"), key) // repeated after the cut
	post("/hook/1", "msg_c", ev("p2"), key) // p2 again, in another event
	post("/hook/1", "msg_d", ev("p4"), []byte("another key"))
	h.fail.Store(true)
	if code := post("/hook/1", "msg_e", ev("p5"), key); code != 503 {
		t.Errorf("failing receiver answered %d", code)
	}
	got := tallyHooks(h.received(), cut)
	if got.requests != 7 || got.accepted != 6 || got.unsigned != 1 {
		t.Errorf("requests %d, accepted %d, unsigned %d; want 7, 6, 1", got.requests, got.accepted, got.unsigned)
	}
	if got.repeats != 2 || got.inFlight != 1 {
		t.Errorf("repeats %d (in flight %d), want 2 (1)", got.repeats, got.inFlight)
	}
	if got.paperTwice != 1 {
		t.Errorf("papers in two events: %d, want 1 (p2)", got.paperTwice)
	}
	if p := got.papers["/hook/1"]; len(p) != 4 || p["p5"] {
		t.Errorf("papers accepted: %v, want p1–p4", p)
	}
}
