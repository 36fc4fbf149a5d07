package channels_test

import (
	"strings"
	"testing"
	"time"

	"followfeed/channels"
)

// testSecretKey is the tests' SECRET_KEY for sealing channel credentials.
var testSecretKey = []byte("channels-test-secret-key-0123456789abcdef")

// TestChannelCredentialsAreSealedAtRest: a webhook's signing secrets and a
// Matrix access token were stored in clear, so a database dump was enough
// to forge signed events or post to users' rooms (a review finding).
// Now the columns hold AES-GCM sealed values bound to their owner; values
// stored in clear before are still read, and SealStored seals them; a
// sealed value moved to another user's channel, or read under another
// SECRET_KEY, does not open.
func TestChannelCredentialsAreSealedAtRest(t *testing.T) {
	t.Log("hostile: secrets")
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 2, 7, 0, 0, 0, time.UTC))
	alice := e.reader("alice", "UTC", 8, "monday", "category/cs.LG")
	bob := e.reader("bob", "UTC", 8, "monday", "category/cs.LG")
	typ, u, mode := "webhook", e.rcv.URL+"/alice", "instant"
	hook, err := e.ch.Create(e.ctx, alice, channels.Spec{Type: &typ, URL: &u, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	mtyp, hs, room, token := "matrix", e.rcv.URL, "!room:example.org", "syt_YWxpY2U_secretaccesstoken_0123"
	mx, err := e.ch.Create(e.ctx, alice, channels.Spec{Type: &mtyp, Homeserver: &hs, RoomID: &room, AccessToken: &token, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ch.RotateSecret(e.ctx, alice, hook.ID); err != nil {
		t.Fatal(err)
	}
	stored := func(id int64) (secret, old, tok string) {
		t.Helper()
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT secret, old_secret, access_token FROM channels WHERE id = $1`, id).Scan(&secret, &old, &tok); err != nil {
			t.Fatal(err)
		}
		return
	}
	secret, old, _ := stored(hook.ID)
	_, _, tok := stored(mx.ID)
	for name, v := range map[string]string{"secret": secret, "old_secret": old, "access_token": tok} {
		if !strings.HasPrefix(v, "enc1:") || strings.Contains(v, "whsec_") || strings.Contains(v, "secretaccesstoken") {
			t.Errorf("%s is stored as %.40q, want a sealed value", name, v)
		}
	}
	if strings.Contains(old, strings.TrimPrefix(hook.Secret, "whsec_")) {
		t.Error("the rotated-out secret is stored in clear")
	}
	// Still usable: the current secret is what the reveal page shows.
	nonce, err := e.ch.OfferSecret(e.ctx, alice, hook.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	shown, err := e.ch.RevealSecret(e.ctx, alice, nonce)
	if err != nil || !strings.HasPrefix(shown.Secret, "whsec_") || shown.Secret == hook.Secret {
		t.Fatalf("reveal after rotation: %+v, %v; want the new whsec_ secret", shown, err)
	}

	// A Slack incoming-webhook URL is itself a credential: sealed too,
	// and read back as it was given.
	styp, slackURL := "slack", "https://hooks.slack.com/services/T000/B000/slackwebhooksecretpart"
	sl, err := e.ch.Create(e.ctx, alice, channels.Spec{Type: &styp, URL: &slackURL, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	var storedURL string
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT url FROM channels WHERE id = $1`, sl.ID).Scan(&storedURL); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(storedURL, "enc1:") || strings.Contains(storedURL, "slackwebhooksecretpart") {
		t.Errorf("the Slack URL is stored as %.40q, want a sealed value", storedURL)
	}
	if got, err := e.ch.Get(e.ctx, alice, sl.ID); err != nil || got.URL != slackURL {
		t.Errorf("the Slack channel reads back as %+v, %v", got, err)
	}

	// A sealed secret copied to another user's channel does not open.
	burl := e.rcv.URL + "/bob"
	bhook, err := e.ch.Create(e.ctx, bob, channels.Spec{Type: &typ, URL: &burl, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET secret = $2 WHERE id = $1`, bhook.ID, secret); err != nil {
		t.Fatal(err)
	}
	if got, err := e.ch.Get(e.ctx, bob, bhook.ID); err != nil || !got.CredentialsUnreadable {
		t.Errorf("alice's sealed secret in bob's channel: %+v, %v; want it unreadable", got, err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `DELETE FROM channels WHERE id = $1`, bhook.ID); err != nil {
		t.Fatal(err)
	}

	// Under another SECRET_KEY nothing opens, with a message that says why.
	other := channels.NewService(channels.Config{DB: e.db, Matcher: e.matcher, Follows: e.follows,
		Guard: channels.NewGuard([]string{"127.0.0.1"}), SecretKey: []byte("another-secret-key-0123456789abcdefghij")})
	if got, err := other.Get(e.ctx, alice, mx.ID); err != nil || !got.CredentialsUnreadable {
		t.Errorf("another SECRET_KEY: %+v, %v; want the channel listed, its credential unreadable", got, err)
	}
	// A change that does not send the credential again is refused, saying
	// why; one that does heals the channel.
	if _, err := other.Update(e.ctx, alice, mx.ID, channels.Spec{Mode: &mode}); err == nil || !strings.Contains(err.Error(), "SECRET_KEY") {
		t.Errorf("changing a Matrix channel whose token is unreadable: %v, want a refusal naming SECRET_KEY", err)
	}
	if got, err := other.Update(e.ctx, alice, mx.ID, channels.Spec{AccessToken: &token}); err != nil || got.CredentialsUnreadable {
		t.Errorf("the token sent again: %+v, %v", got, err)
	}
	// Rotating heals a webhook: the unreadable previous secret does not
	// sign alongside.
	if got, err := other.RotateSecret(e.ctx, alice, hook.ID); err != nil || got.CredentialsUnreadable {
		t.Errorf("rotating under another SECRET_KEY: %+v, %v", got, err)
	}
	var oldStored string
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT old_secret FROM channels WHERE id = $1`, hook.ID).Scan(&oldStored); err != nil || oldStored != "" {
		t.Errorf("old_secret after rotating an unreadable secret: %.20q, %v; want none", oldStored, err)
	}
	// Back to the first key for the rest.
	if _, err := e.ch.Update(e.ctx, alice, mx.ID, channels.Spec{AccessToken: &token}); err != nil {
		t.Fatal(err)
	}

	// Credentials stored in clear (before sealing) are read as they are,
	// then sealed by SealStored, once.
	const legacy = "whsec_bGVnYWN5LXNlY3JldC1mcm9tLWJlZm9yZS1zZWFsaW5nMDAwMDAwMA"
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET secret = $2, old_secret = '', old_secret_until = NULL WHERE id = $1`, hook.ID, legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET access_token = 'syt_legacy_token' WHERE id = $1`, mx.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET url = $2 WHERE id = $1`, sl.ID, slackURL); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ch.Get(e.ctx, alice, mx.ID); err != nil {
		t.Fatalf("a token stored in clear: %v", err)
	}
	if n, err := e.ch.SealStored(e.ctx); err != nil || n != 3 {
		t.Fatalf("SealStored: %d, %v; want the 3 channels with clear credentials", n, err)
	}
	if got, err := e.ch.Get(e.ctx, alice, sl.ID); err != nil || got.URL != slackURL {
		t.Errorf("the Slack channel after SealStored: %+v, %v", got, err)
	}
	if n, err := e.ch.SealStored(e.ctx); err != nil || n != 0 {
		t.Fatalf("SealStored again: %d, %v; want nothing left", n, err)
	}
	secret, _, _ = stored(hook.ID)
	_, _, tok = stored(mx.ID)
	if !strings.HasPrefix(secret, "enc1:") || !strings.HasPrefix(tok, "enc1:") {
		t.Fatalf("after SealStored: secret %.20q, token %.20q", secret, tok)
	}
	nonce, err = e.ch.OfferSecret(e.ctx, alice, hook.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if shown, err := e.ch.RevealSecret(e.ctx, alice, nonce); err != nil || shown.Secret != legacy {
		t.Errorf("the sealed legacy secret opens as %+v, %v; want it unchanged", shown, err)
	}
}
