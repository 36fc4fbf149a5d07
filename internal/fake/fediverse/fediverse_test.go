package fediverse

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSigningRoundTrips: what the fake signs in each of its ways, its own
// inbox verifies (the key fetched from the keyId), and the Signature
// header says what it claims: its algorithm, what it covers, and with
// HS2019Created the created and expires parameters instead of a Date. A
// request changed after signing is refused, so the verifier is no rubber
// stamp for any of the ways.
func TestSigningRoundTrips(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name    Signing
		want    []string
		hasDate bool
	}{
		{RSASHA256, []string{`algorithm="rsa-sha256"`, `headers="(request-target) host date digest content-type"`}, true},
		{HS2019, []string{`algorithm="hs2019"`, `headers="(request-target) host date digest content-type"`}, true},
		{HS2019Created, []string{`algorithm="hs2019"`, `headers="(request-target) host (created) (expires) digest content-type"`, "created=", "expires="}, false},
	} {
		s.SignWith(c.name)
		activity := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "type": "Like",
			"id": s.ActorID("alice") + "#like/" + strconv.Itoa(int(c.name)), "actor": s.ActorID("alice")}
		req, _, err := s.Signed("alice", s.SharedInbox(), activity)
		if err != nil {
			t.Fatal(err)
		}
		sig := req.Header.Get("Signature")
		for _, w := range c.want {
			if !strings.Contains(sig, w) {
				t.Errorf("signing %d: Signature %q lacks %s", c.name, sig, w)
			}
		}
		if (req.Header.Get("Date") != "") != c.hasDate {
			t.Errorf("signing %d: Date %q", c.name, req.Header.Get("Date"))
		}
		if st, body, err := s.Do(req); err != nil || st != http.StatusAccepted {
			t.Fatalf("signing %d: the fake's own inbox answered %d %s %v", c.name, st, body, err)
		}
		// The same request to another path: (request-target) no longer matches.
		req, _, _ = s.Signed("alice", s.SharedInbox(), activity)
		req.URL.Path = "/users/alice/inbox"
		if st, _, err := s.Do(req); err != nil || st != http.StatusUnauthorized {
			t.Errorf("signing %d: a request sent elsewhere than signed for: %d %v", c.name, st, err)
		}
	}
	if n := len(s.Received()); n != 3 {
		t.Errorf("%d activities received, want 3; rejected: %v", n, s.Rejected())
	}
	// (created) is refused with rsa-sha256 (as Mastodon refuses it), and an
	// expired signature is refused.
	s.SignWith(HS2019Created)
	req, _, _ := s.Signed("alice", s.SharedInbox(), map[string]any{"type": "Like", "actor": s.ActorID("alice")})
	req.Header.Set("Signature", strings.Replace(req.Header.Get("Signature"), `algorithm="hs2019"`, `algorithm="rsa-sha256"`, 1))
	if st, _, _ := s.Do(req); st != http.StatusUnauthorized || !strings.Contains(lastRejection(s), `(created) with algorithm "rsa-sha256"`) {
		t.Errorf("(created) with rsa-sha256: %d %q", st, lastRejection(s))
	}
	req, _, _ = s.Signed("alice", s.SharedInbox(), map[string]any{"type": "Like", "actor": s.ActorID("alice")})
	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	sig := req.Header.Get("Signature")
	i := strings.Index(sig, "expires=")
	j := i + strings.Index(sig[i:], ",")
	req.Header.Set("Signature", sig[:i]+"expires="+past+sig[j:])
	if st, _, _ := s.Do(req); st != http.StatusUnauthorized || !strings.HasPrefix(lastRejection(s), "(expires) ") {
		t.Errorf("an expired signature: %d %q", st, lastRejection(s))
	}
}

func lastRejection(s *Server) string {
	r := s.Rejected()
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// TestSetInboxes: an actor's document names the inboxes SetInboxes gave
// (an empty one keeps the fake's own), and the key is still the fake's.
func TestSetInboxes(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetInboxes("eve", "https://10.0.0.7/inbox", "")
	s.SetInboxes("frank", "", "https://169.254.169.254/inbox")
	for name, want := range map[string][2]string{
		"eve":   {"https://10.0.0.7/inbox", s.SharedInbox()},
		"frank": {s.ActorID("frank") + "/inbox", "https://169.254.169.254/inbox"},
		"alice": {s.ActorID("alice") + "/inbox", s.SharedInbox()},
	} {
		resp, err := http.Get(s.ActorID(name))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Inbox     string            `json:"inbox"`
			Endpoints map[string]string `json:"endpoints"`
			PublicKey struct {
				ID string `json:"id"`
			} `json:"publicKey"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || doc.Inbox != want[0] || doc.Endpoints["sharedInbox"] != want[1] || doc.PublicKey.ID != s.ActorID(name)+"#main-key" {
			t.Errorf("%s: inbox %q shared %q key %q (%v), want %v", name, doc.Inbox, doc.Endpoints["sharedInbox"], doc.PublicKey.ID, err, want)
		}
	}
}
