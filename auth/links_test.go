package auth

import (
	"bytes"
	"strings"
	"testing"
)

var fuzzSigner = NewLinkSigner([]byte("fuzz-secret-fuzz-secret-fuzz-sec"))

func TestLinkRoundTripAndTamper(t *testing.T) {
	l := Link{Action: ActionUnsubscribe, UserID: 42, Epoch: 7, Data: []byte("x")}
	tok := fuzzSigner.Sign(l)
	got, err := fuzzSigner.Verify(tok, ActionUnsubscribe)
	if err != nil || got.UserID != 42 || got.Epoch != 7 || string(got.Data) != "x" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := fuzzSigner.Verify(tok, ActionManage); err == nil {
		t.Error("an unsubscribe token opened the settings")
	}
	if _, err := NewLinkSigner([]byte("another secret, another service")).Verify(tok, ActionUnsubscribe); err == nil {
		t.Error("a token verified under another key")
	}
	// Flip every character of the payload in turn: none may verify.
	body := strings.Index(tok, ".")
	for i := len(LinkPrefix); i < body; i++ {
		b := []byte(tok)
		b[i] ^= 0x01
		if l, err := fuzzSigner.Verify(string(b), ActionUnsubscribe); err == nil && l.UserID != 42 {
			t.Fatalf("tampered token %q verified as user %d", b, l.UserID)
		}
	}
}

// TestLinkHasOneSpelling: a token verifies only as Sign wrote it. Any one
// character changed to any other of base64url's, anywhere (the last one
// of the payload or the MAC too, whose unused bits a lenient decoder
// ignores), is refused.
func TestLinkHasOneSpelling(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, l := range []Link{
		{Action: ActionUnsubscribe, UserID: 42, Epoch: 7, Data: []byte("x")},
		{Action: ActionFeedback, UserID: 1, Epoch: 0, Data: []byte("2612.01234 more")},
	} {
		tok := fuzzSigner.Sign(l)
		for i := len(LinkPrefix); i < len(tok); i++ {
			if tok[i] == '.' {
				continue
			}
			for _, c := range []byte(alphabet) {
				if c == tok[i] {
					continue
				}
				b := []byte(tok)
				b[i] = c
				if _, err := fuzzSigner.Verify(string(b), l.Action); err == nil {
					t.Fatalf("%q (character %d of %q changed) verified", b, i, tok)
				}
			}
		}
	}
}

// FuzzLinkVerify: Verify never panics, accepts nothing it did not sign, and
// what it accepts carries exactly what was signed. Seeds in
// testdata/fuzz/FuzzLinkVerify.
func FuzzLinkVerify(f *testing.F) {
	f.Log("hostile: decoders")
	f.Add(fuzzSigner.Sign(Link{Action: ActionUnsubscribe, UserID: 1, Epoch: 0}), byte(ActionUnsubscribe), int64(1), int64(0), []byte(nil))
	f.Add("ffl_AQEC.AAAA", byte(ActionManage), int64(9), int64(-3), []byte("data"))
	f.Fuzz(func(t *testing.T, tok string, action byte, uid, epoch int64, data []byte) {
		// Arbitrary input: either rejected, or a token this key signed.
		if l, err := fuzzSigner.Verify(tok, Action(action)); err == nil {
			if l.Action != Action(action) || l.UserID <= 0 {
				t.Fatalf("accepted %q as %+v", tok, l)
			}
			if again := fuzzSigner.Sign(l); again != tok {
				t.Fatalf("accepted %q, which Sign spells %q", tok, again)
			}
			again, err := fuzzSigner.Verify(fuzzSigner.Sign(l), Action(action))
			if err != nil || again.UserID != l.UserID || again.Epoch != l.Epoch || !bytes.Equal(again.Data, l.Data) {
				t.Fatalf("re-signed %+v does not verify the same: %+v %v", l, again, err)
			}
		}
		// Whatever is signed verifies to itself, under its action only.
		if uid <= 0 || len(data) > 300 {
			return
		}
		in := Link{Action: Action(action), UserID: uid, Epoch: epoch, Data: data}
		out, err := fuzzSigner.Verify(fuzzSigner.Sign(in), in.Action)
		if err != nil || out.UserID != uid || out.Epoch != epoch || !bytes.Equal(out.Data, data) {
			t.Fatalf("round trip of %+v: %+v %v", in, out, err)
		}
		if _, err := fuzzSigner.Verify(fuzzSigner.Sign(in), in.Action+1); err == nil {
			t.Fatalf("a token for action %d verified for %d", in.Action, in.Action+1)
		}
	})
}
