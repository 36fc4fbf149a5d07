package httpapi_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"followfeed/auth"
	"followfeed/config"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testapp"
	"followfeed/internal/testdb"
)

// TestAccessControl: user A can never read or change B's follows, settings,
// feeds or unsubscribe state, by id guessing or by reusing a token.
func TestAccessControl(t *testing.T) {
	t.Log("hostile: access")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	alice, bob := testapp.Token(t, "alice", "alice@example.org"), testapp.Token(t, "bob", "bob@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", alice, nil)
	c.Do("PUT", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", bob, nil)
	c.Do("PATCH", "/v1/me", bob, map[string]any{"timezone": "Asia/Tokyo", "digest": map[string]any{"frequency": "daily"}})

	// The API has no user ids to guess: every /v1/me route acts on the
	// token's subject only.
	if body := string(c.Do("GET", "/v1/me/follows", alice, nil).Body); strings.Contains(body, "orcid") || !strings.Contains(body, "cs.LG") {
		t.Errorf("alice sees %s", body)
	}
	c.Do("DELETE", "/v1/me/follows/researcher/orcid:0000-0002-1825-0097", alice, nil)
	if !strings.Contains(string(c.Do("GET", "/v1/me/follows", bob, nil).Body), "orcid") {
		t.Error("alice's DELETE removed bob's follow")
	}
	if me := string(c.Do("GET", "/v1/me", alice, nil).Body); strings.Contains(me, "Tokyo") || strings.Contains(me, "bob@") {
		t.Errorf("alice's profile shows bob's: %s", me)
	}

	// Feeds: alice's token never reaches bob's follows.
	var aliceFeeds, bobFeeds feedLinks
	c.Do("GET", "/v1/me/feeds", alice, nil).JSON(t, &aliceFeeds)
	c.Do("GET", "/v1/me/feeds", bob, nil).JSON(t, &bobFeeds)
	aliceTok := aliceFeeds.Atom[strings.LastIndex(aliceFeeds.Atom, "/")+1 : len(aliceFeeds.Atom)-len(".atom")]
	if resp, _ := get(t, a.URL+"/feeds/"+aliceTok+"/researcher/orcid:0000-0002-1825-0097.atom"); resp.StatusCode != 404 {
		t.Errorf("alice's token on bob's per-follow feed: %d", resp.StatusCode)
	}
	// A forged token of the right shape is unknown.
	forged := "fft_" + strings.Repeat("A", 43)
	if resp, _ := get(t, a.URL+"/feeds/"+forged+".atom"); resp.StatusCode != 404 {
		t.Errorf("forged feed token: %d", resp.StatusCode)
	}

	// Signed links: alice's unsubscribe link cannot be bent to bob.
	link := unsubscribeLink(t, a, "alice")
	tok := strings.TrimPrefix(link, a.URL+"/unsubscribe/")
	body, mac, _ := strings.Cut(strings.TrimPrefix(tok, "ffl_"), ".")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	raw[2] += 2 // another user id (varint of 1 -> 2)
	tampered := "ffl_" + base64.RawURLEncoding.EncodeToString(raw) + "." + mac
	for _, u := range []string{a.URL + "/unsubscribe/" + tampered, a.URL + "/unsubscribe/ffl_nonsense.x"} {
		req, _ := http.NewRequest("POST", u, strings.NewReader("List-Unsubscribe=One-Click"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("tampered unsubscribe link: %d", resp.StatusCode)
		}
	}
	if !strings.Contains(string(c.Do("GET", "/v1/me", bob, nil).Body), `"frequency":"daily"`) {
		t.Error("bob was unsubscribed by a tampered link")
	}
	// A link for one action does not do another: alice's unsubscribe link
	// is not a settings (manage) link.
	b := testapp.FormClient(t)
	if resp, _ := testapp.Form(t, b, "GET", a.URL+"/settings?token="+url.QueryEscape(tok), nil); resp.StatusCode != 404 {
		t.Errorf("an unsubscribe token opened the settings: %d", resp.StatusCode)
	}
	// A manage link opens only the email settings; it cannot unfollow.
	db := openDB(t, a.DatabaseURL)
	var aliceID, epoch int64
	db.Pool.QueryRow(context.Background(), `SELECT id, link_epoch FROM users WHERE sub = 'alice'`).Scan(&aliceID, &epoch)
	manage := auth.NewLinkSigner([]byte(config.DevSecretKey)).Sign(auth.Link{Action: auth.ActionManage, UserID: aliceID, Epoch: epoch})
	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings?token="+url.QueryEscape(manage), nil)
	if resp.StatusCode != 200 || strings.Contains(page, `id="follows"`) || strings.Contains(page, "/feeds/fft_") || !strings.Contains(page, `id="email"`) {
		t.Errorf("manage link page: %d", resp.StatusCode)
	}
	csrf := testapp.CSRF.FindStringSubmatch(page)[1]
	resp, _ = testapp.Form(t, b, "POST", a.URL+"/settings/follows", url.Values{"csrf": {csrf}, "token": {manage}, "action": {"unfollow"}, "kind": {"category"}, "id": {"cs.LG"}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("manage link used to unfollow: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if !strings.Contains(string(c.Do("GET", "/v1/me/follows", alice, nil).Body), "cs.LG") {
		t.Error("a manage link unfollowed")
	}
	// Tokens of one kind are never accepted as another: a feed token is not
	// a bearer token.
	if r := c.Do("GET", "/v1/me", aliceTok, nil); r.Status != 401 {
		t.Errorf("feed token as bearer: %d", r.Status)
	}
}

// TestNoUserSuppliedURLIsFetched: URLs in pushed papers and in token
// headers (jku, x5u) are never fetched by the server.
func TestNoUserSuppliedURLIsFetched(t *testing.T) {
	t.Log("hostile: ssrf")
	t.Parallel()
	var hits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer canary.Close()
	smtpd := fakesmtp.Start(t, fakesmtp.Options{})
	a, c := start(t, "SMTP_URL", smtpd.URL(), "WEBSUB_HUB_URL", "", "RATE_LIMIT_PER_USER", "0")
	reader := testapp.Token(t, "reader", "reader@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	c.Do("PATCH", "/v1/me", reader, map[string]any{"digest": map[string]any{"frequency": "daily"}})
	paper := fmt.Sprintf(`[{"arxiv_id": "2301.00001", "title": "T", "primary_category": "cs.LG",
		"abs_url": %q, "pdf_url": %q, "doi": %q}]`, canary.URL+"/abs", canary.URL+"/pdf", canary.URL+"/doi")
	if r := c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"), paper); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	waitFor(t, "the paper in the feed", func() bool {
		_, body := get(t, links.Atom)
		return strings.Contains(string(body), canary.URL+"/abs")
	})
	get(t, a.URL+"/feeds/category/cs.LG.json")
	// A digest with the paper goes out (its links point at the canary).
	out, err := commandDigest(t, a, "reader")
	if err != nil || !strings.Contains(out, "sent") {
		t.Fatalf("digest: %v %s", err, out)
	}
	// A token whose header points at a key URL.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "x", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["jku"] = canary.URL + "/jwks"
	tok.Header["x5u"] = canary.URL + "/cert"
	signed, _ := tok.SignedString(priv)
	if r := c.Do("GET", "/v1/me", signed, nil); r.Status != 401 {
		t.Errorf("token with jku: %d", r.Status)
	}
	// Nothing signals a fetch that does not happen: one from a goroutine
	// (a job, a key set refresh) would come within half a second.
	time.Sleep(500 * time.Millisecond)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server fetched a user-supplied URL %d times", n)
	}
}

// commandDigest sends a user's digest now, as `followfeed digest --now`
// would, through the running app's configuration.
func commandDigest(t *testing.T, a *testapp.App, sub string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := testapp.RunCommand(t, a.Env, &out, "digest", "--user", sub, "--now")
	return out.String(), err
}

// TestSecretsNeverReachLogsOrResponses runs a full scenario with a
// password-protected SMTP server and a database password and checks that no
// secret appears in the logs or in an error response.
func TestSecretsNeverReachLogsOrResponses(t *testing.T) {
	t.Log("hostile: secrets")
	t.Parallel()
	smtpd := fakesmtp.Start(t, fakesmtp.Options{Username: "mailer", Password: "smtp-secret-pw-123"})
	env := testapp.Env(t)
	env["SMTP_URL"] = smtpd.URL()
	env["RATE_LIMIT_PER_IP"] = "0"
	if !strings.Contains(env["SMTP_URL"], "smtp-secret-pw-123") || !strings.Contains(env["DATABASE_URL"], ":pgtdbpass@") {
		t.Fatalf("the scenario needs passwords in SMTP_URL and DATABASE_URL: %s", env["SMTP_URL"])
	}
	a := testapp.Start(t, env)
	c := a.Client(t)
	jwtTok := testapp.Token(t, "secretive", "secretive@example.org")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", jwtTok, nil)
	c.Do("PATCH", "/v1/me", jwtTok, map[string]any{"digest": map[string]any{"frequency": "daily"}})
	c.Do("POST", "/v1/papers", testapp.Token(t, "host", "", "papers:write"), `[{"arxiv_id": "2301.00001", "title": "T", "primary_category": "cs.LG"}]`)
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", jwtTok, nil).JSON(t, &links)
	feedTok := links.Atom[strings.LastIndex(links.Atom, "/")+1 : len(links.Atom)-len(".atom")]
	// Error responses are recorded; successful ones legitimately show a
	// token to its holder (a feed's self link, the unsubscribe form).
	var responses strings.Builder
	record := func(resp *http.Response, body []byte) {
		if resp.StatusCode >= 400 {
			fmt.Fprintf(&responses, "%d %v %s\n", resp.StatusCode, resp.Header, body)
		}
	}
	for _, u := range []string{links.Atom, links.OPML, a.URL + "/feeds/" + feedTok + "x.atom", a.URL + "/feeds/" + feedTok + ".atom?limit=nope",
		a.URL + "/feeds/" + feedTok + "/category/nope.atom"} {
		resp, body := get(t, u)
		record(resp, body)
	}
	unsub := unsubscribeLink(t, a, "secretive")
	resp, body := get(t, unsub)
	record(resp, body)
	b := testapp.FormClient(t)
	resp2, page := testapp.Form(t, b, "GET", a.URL+"/login?token="+url.QueryEscape(jwtTok), nil)
	record(resp2, []byte(page))
	resp2, page = testapp.Form(t, b, "GET", a.URL+"/login?token="+url.QueryEscape(jwtTok+"broken"), nil)
	record(resp2, []byte(page))
	for _, h := range []string{"Bearer " + jwtTok + "x", "Bearer " + jwtTok[:40]} {
		req, _ := http.NewRequest("GET", a.URL+"/v1/me", nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var p map[string]any
			json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			fmt.Fprintf(&responses, "%d %v %v\n", resp.StatusCode, resp.Header, p)
		}
	}
	out, err := commandDigest(t, a, "secretive")
	if err != nil || !strings.Contains(out, "sent") {
		t.Fatalf("digest over authenticated SMTP: %v %s", err, out)
	}
	logs := a.Logs() + out
	secrets := map[string]string{
		"JWT":               jwtTok,
		"JWT signature":     jwtTok[strings.LastIndex(jwtTok, ".")+1:],
		"feed token":        feedTok,
		"unsubscribe token": strings.TrimPrefix(unsub, a.URL+"/unsubscribe/"),
		"SMTP password":     "smtp-secret-pw-123",
		"database password": "pgtdbpass",
	}
	for name, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the %s appears in the logs", name)
		}
		if strings.Contains(responses.String(), secret) {
			t.Errorf("the %s appears in an HTTP response", name)
		}
	}
}

// TestSlowClientsAndOversizedRequests: headers sent byte by byte are cut
// off by ReadHeaderTimeout; oversized headers and bodies get 4xx.
func TestSlowClientsAndOversizedRequests(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, c := start(t)
	host := strings.TrimPrefix(a.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	closed := false
	for time.Since(start) < 15*time.Second {
		if _, err := fmt.Fprint(conn, "X"); err != nil {
			closed = true
			break
		}
		conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := bufio.NewReader(conn).ReadByte(); err != nil && !isTimeout(err) {
			closed = true
			break
		}
	}
	if !closed || time.Since(start) > 9*time.Second {
		t.Errorf("a slowloris connection stayed open for %s", time.Since(start))
	}
	req, _ := http.NewRequest("GET", a.URL+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 431 {
		t.Errorf("64 KiB header: %v %v", err, resp)
	}
	tok := testapp.Token(t, "big", "")
	if r := c.Do("PATCH", "/v1/me", tok, `{"timezone": "`+strings.Repeat("a", 70<<10)+`"}`); r.Status != 413 {
		t.Errorf("70 KiB JSON body: %d", r.Status)
	}
	if r := c.Do("GET", "/v1/me/follows?limit=100000", tok, nil); r.Status != 422 {
		t.Errorf("page size beyond the limit: %d", r.Status)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestDatabaseOutageFailsFastAndRecovers: with the database refusing
// connections, requests answer 503 with Retry-After quickly and /readyz
// says so; when it is back the same process serves again.
func TestDatabaseOutageFailsFastAndRecovers(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0")
	tok := testapp.Token(t, "survivor", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	admin := testdb.Admin(t)
	name := dbIdent(a.DatabaseURL)
	ctx := context.Background()
	if _, err := admin.Pool.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, strings.Trim(name, `"`)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/follows/category/cs.LG", "/v1/me/follows"} {
		start := time.Now()
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || time.Since(start) > 6*time.Second {
			t.Errorf("%s during the outage: %d after %s", path, resp.StatusCode, time.Since(start))
		}
	}
	if resp, _ := get(t, a.URL+"/readyz"); resp.StatusCode != 503 {
		t.Errorf("readyz during the outage: %d", resp.StatusCode)
	}
	if _, err := admin.Pool.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "recovery", func() bool {
		resp, _ := get(t, a.URL+"/v1/follows/category/cs.LG")
		return resp.StatusCode == 200
	})
	// The verdict is reused for a second: the next probe after it is 200.
	waitFor(t, "readyz after the outage", func() bool {
		resp, _ := get(t, a.URL+"/readyz")
		return resp.StatusCode == 200
	})
}

func dbIdent(dsn string) string {
	u, _ := url.Parse(dsn)
	return `"` + strings.TrimPrefix(u.Path, "/") + `"`
}
