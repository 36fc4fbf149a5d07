package httpapi_test

import (
	"context"
	"net/url"
	"testing"

	"followfeed/auth"
	"followfeed/config"
	"followfeed/internal/testapp"
)

// TestRevokingEmailLinks: POST /v1/me/email-links/revoke makes the manage
// and unsubscribe links of the user's earlier emails answer 404 at once;
// links made afterwards work, and other users' links are untouched.
func TestRevokingEmailLinks(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	alice, bob := testapp.Token(t, "alice", "alice@example.org"), testapp.Token(t, "bob", "bob@example.org")
	c.Do("GET", "/v1/me", alice, nil)
	c.Do("GET", "/v1/me", bob, nil)
	db := openDB(t, a.DatabaseURL)
	signer := auth.NewLinkSigner([]byte(config.DevSecretKey))
	links := func(sub string) (manage, unsubscribe string) {
		t.Helper()
		var id, epoch int64
		if err := db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = $1`, sub).Scan(&id, &epoch); err != nil {
			t.Fatal(err)
		}
		return a.URL + "/settings?token=" + url.QueryEscape(signer.Sign(auth.Link{Action: auth.ActionManage, UserID: id, Epoch: epoch})),
			a.URL + "/unsubscribe/" + signer.Sign(auth.Link{Action: auth.ActionUnsubscribe, UserID: id, Epoch: epoch})
	}
	status := func(u string) int {
		t.Helper()
		resp, _ := testapp.Form(t, testapp.FormClient(t), "GET", u, nil)
		return resp.StatusCode
	}
	aliceManage, aliceUnsub := links("alice")
	bobManage, _ := links("bob")
	if status(aliceManage) != 200 || status(aliceUnsub) != 200 {
		t.Fatalf("alice's links before revoking: %d %d", status(aliceManage), status(aliceUnsub))
	}
	if r := c.Do("POST", "/v1/me/email-links/revoke", alice, nil); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if s1, s2 := status(aliceManage), status(aliceUnsub); s1 != 404 || s2 != 404 {
		t.Errorf("alice's old links after revoking: %d %d, want 404", s1, s2)
	}
	if s := status(bobManage); s != 200 {
		t.Errorf("bob's link after alice revoked hers: %d", s)
	}
	newManage, newUnsub := links("alice")
	if s1, s2 := status(newManage), status(newUnsub); s1 != 200 || s2 != 200 {
		t.Errorf("alice's new links: %d %d", s1, s2)
	}
	if r := c.Do("POST", "/v1/me/email-links/revoke", "", nil); r.Status != 401 {
		t.Errorf("revoke without a token: %d", r.Status)
	}
}
