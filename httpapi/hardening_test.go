package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"followfeed/auth"
	"followfeed/config"
	"followfeed/internal/testapp"
)

// mint is testapp.Token with a subject testapp would refuse to mint.
func mint(t *testing.T, sub, email string) string {
	t.Helper()
	tok, err := auth.MintHS256([]byte(config.DevHS256Secret), auth.MintOptions{Subject: sub, Email: email, EmailVerified: email != "", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestNULAndInvalidUTF8FromSignedInUsers: text PostgreSQL cannot store
// (NUL, invalid UTF-8) or that would reach digests as control characters
// is refused with a 4xx, never a 500 and an ERROR log (issue 15).
func TestNULAndInvalidUTF8FromSignedInUsers(t *testing.T) {
	t.Log("hostile: malformed")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	if r := c.Do("GET", "/v1/me", mint(t, "alice\x00", ""), nil); r.Status != 401 {
		t.Errorf("sub with NUL: %d %s", r.Status, r.Body)
	}
	// A NUL in the token's verified email is not recorded (and no 500).
	if r := c.Do("GET", "/v1/me", mint(t, "carol", "carol\x00@example.org"), nil); r.Status != 200 || strings.Contains(string(r.Body), "carol\\u0000") {
		t.Errorf("email with NUL: %d %s", r.Status, r.Body)
	}
	alice := testapp.Token(t, "alice", "alice@example.org")
	for _, label := range []string{"ML\x00", "ML\x1b[31m red", "two\nlines", "\x7f"} {
		r := c.Do("PUT", "/v1/me/follows/category/cs.LG", alice, map[string]any{"label": label})
		var p problem
		if r.Status != 422 {
			t.Errorf("label %q: %d %s", label, r.Status, r.Body)
			continue
		}
		r.JSON(t, &p)
		if p.Field != "label" || !strings.Contains(p.Detail, "control characters") {
			t.Errorf("label %q: %+v", label, p)
		}
	}
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", alice, map[string]any{"label": "Machine learning — ML"}); r.Status != 201 {
		t.Errorf("a plain label: %d %s", r.Status, r.Body)
	}
	cursor := base64.RawURLEncoding.EncodeToString(append(binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixMicro())), 0xff, 0xfe))
	nul := base64.RawURLEncoding.EncodeToString(append(binary.BigEndian.AppendUint64(nil, 1), "category:\x00"...))
	for _, cur := range []string{cursor, nul} {
		if r := c.Do("GET", "/v1/me/follows?cursor="+cur, alice, nil); r.Status != 422 {
			t.Errorf("cursor %q: %d %s", cur, r.Status, r.Body)
		}
	}
	if logs := a.Logs(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "22021") {
		t.Errorf("hostile text reached the database:\n%s", logs)
	}
}

// TestPushOverTheLimitIs413: a body over 20 MiB is a 413, as documented,
// not a 400.
func TestPushOverTheLimitIs413(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_IP", "0")
	svc := testapp.Token(t, "host", "", auth.ScopePapersWrite)
	one := `{"arxiv_id":"2202.02326","title":"` + strings.Repeat("x", 1000) + `","authors":["A"],"categories":["cs.LG"],"published":"2022-02-04"}`
	var body bytes.Buffer
	body.WriteByte('[')
	for body.Len() < 22<<20 {
		body.WriteString(one)
		body.WriteByte(',')
	}
	body.WriteString(one + "]")
	r := c.Do("POST", "/v1/papers", svc, body.Bytes())
	if r.Status != 413 {
		t.Errorf("22 MB push: %d %.300s", r.Status, r.Body)
	}
	ndjson := bytes.ReplaceAll(bytes.Trim(body.Bytes(), "[]"), []byte("},{"), []byte("}\n{"))
	if r := c.Do("POST", "/v1/papers", svc, ndjson, "Content-Type", "application/x-ndjson"); r.Status != 413 {
		t.Errorf("22 MB NDJSON push: %d %.300s", r.Status, r.Body)
	}
}

// adminDo sends a request to the job UI with the development credential.
func adminDo(t *testing.T, method, u, password, contentType, body string, headers ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if password != "" {
		req.SetBasicAuth("admin", password)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestAdminUIRefusesCrossSiteRequestsAndFraming: the River UI deleted and
// retried jobs from a text/plain form on another origin and could be
// framed (issue 15).
func TestAdminUIRefusesCrossSiteRequestsAndFraming(t *testing.T) {
	t.Log("hostile: csrf")
	t.Parallel()
	a, _ := start(t)
	api := a.URL + "/admin/jobs/api/jobs/delete"
	const ids = `{"job_ids":["999999"]}`
	if resp := adminDo(t, "POST", api, config.DevAdminPassword, "text/plain", ids, "Origin", "https://evil.example"); resp.StatusCode != 403 {
		t.Errorf("cross-origin text/plain POST: %d", resp.StatusCode)
	}
	if resp := adminDo(t, "POST", api, config.DevAdminPassword, "application/json", ids, "Sec-Fetch-Site", "cross-site"); resp.StatusCode != 403 {
		t.Errorf("cross-site JSON POST: %d", resp.StatusCode)
	}
	if resp := adminDo(t, "POST", api, config.DevAdminPassword, "text/plain", ids); resp.StatusCode != 415 {
		t.Errorf("same-origin text/plain POST: %d", resp.StatusCode)
	}
	if resp := adminDo(t, "POST", api, config.DevAdminPassword, "application/json", ids, "Origin", a.URL, "Sec-Fetch-Site", "same-origin"); resp.StatusCode == 403 || resp.StatusCode == 415 || resp.StatusCode >= 500 {
		t.Errorf("the UI's own JSON POST: %d", resp.StatusCode)
	}
	resp := adminDo(t, "GET", a.URL+"/admin/jobs/", config.DevAdminPassword, "", "")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("UI page: %d CSP %q XFO %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), resp.Header.Get("X-Frame-Options"))
	}
}

// TestAdminUIRateLimitsFailedSignIns: after ten wrong passwords an address
// gets 429s, even for the right one, until the limit recovers.
func TestAdminUIRateLimitsFailedSignIns(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, _ := start(t)
	codes := map[int]int{}
	for range 12 {
		codes[adminDo(t, "GET", a.URL+"/admin/jobs/", "wrong-password", "", "").StatusCode]++
	}
	if codes[401] != 10 || codes[429] != 2 {
		t.Errorf("12 wrong passwords: %v, want 10 × 401 then 429", codes)
	}
	resp := adminDo(t, "GET", a.URL+"/admin/jobs/", config.DevAdminPassword, "", "")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the right password while limited: %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestAdminUIFailedSignInsArePerClientBehindATrustedProxy: behind a
// reverse proxy every request comes from the proxy's address, so one
// guesser locked every operator out (a review finding). With
// TRUSTED_PROXIES the limit is per client named by X-Forwarded-For (read
// from the right, past trusted hops); without it, the header is ignored,
// so a guesser cannot dodge the limit by sending a new address each time.
func TestAdminUIFailedSignInsArePerClientBehindATrustedProxy(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, _ := start(t, "TRUSTED_PROXIES", "127.0.0.1,10.0.0.0/8")
	codes := map[int]int{}
	for range 12 {
		// The proxy chain: client 203.0.113.7, then an inner proxy 10.1.2.3.
		codes[adminDo(t, "GET", a.URL+"/admin/jobs/", "wrong-password", "", "", "X-Forwarded-For", "203.0.113.7, 10.1.2.3").StatusCode]++
	}
	if codes[401] != 10 || codes[429] != 2 {
		t.Errorf("12 wrong passwords from one client: %v, want 10 × 401 then 429", codes)
	}
	if resp := adminDo(t, "GET", a.URL+"/admin/jobs/", config.DevAdminPassword, "", "", "X-Forwarded-For", "198.51.100.9"); resp.StatusCode != 200 {
		t.Errorf("another client behind the same proxy, right password: %d, want 200", resp.StatusCode)
	}
	// A spoofed leftmost entry does not help the locked-out client: the
	// rightmost untrusted hop is what the proxy saw.
	if resp := adminDo(t, "GET", a.URL+"/admin/jobs/", config.DevAdminPassword, "", "", "X-Forwarded-For", "192.0.2.1, 203.0.113.7"); resp.StatusCode != 429 {
		t.Errorf("the limited client with a forged first hop: %d, want 429", resp.StatusCode)
	}

	b, _ := start(t)
	codes = map[int]int{}
	for i := range 12 {
		codes[adminDo(t, "GET", b.URL+"/admin/jobs/", "wrong-password", "", "", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i+1)).StatusCode]++
	}
	if codes[401] != 10 || codes[429] != 2 {
		t.Errorf("12 wrong passwords with a new X-Forwarded-For each, no trusted proxy: %v, want 10 × 401 then 429", codes)
	}
}

// TestAdminUIOperatorGetsInWhileAGuesserHammers: one guesser behind the
// same address as the operator (a proxy without TRUSTED_PROXIES) locked
// the operator out (a review finding). A browser that signed in once
// carries a signed device cookie, and its own failures are its only
// limit: while wrong passwords from the operator's address (and from many
// addresses, past the overall limit) are refused unchecked, the operator's
// browser signs in. A forged or stale cookie is no way around the limit.
func TestAdminUIOperatorGetsInWhileAGuesserHammers(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	a, _ := start(t, "TRUSTED_PROXIES", "127.0.0.1")
	ui := a.URL + "/admin/jobs/"
	first := adminDo(t, "GET", ui, config.DevAdminPassword, "", "")
	var device *http.Cookie
	for _, c := range first.Cookies() {
		if c.Name == "ff_admin_device" {
			device = c
		}
	}
	if first.StatusCode != 200 || device == nil || !device.HttpOnly || device.SameSite != http.SameSiteStrictMode || device.Path != "/admin/jobs" {
		t.Fatalf("the operator's first sign-in: %d, device cookie %+v", first.StatusCode, device)
	}
	cookie := "ff_admin_device=" + device.Value

	// The guesser, from the operator's own address.
	codes := map[int]int{}
	for range 12 {
		codes[adminDo(t, "GET", ui, "wrong-password", "", "").StatusCode]++
	}
	if codes[401] != 10 || codes[429] != 2 {
		t.Errorf("12 wrong passwords: %v, want 10 × 401 then 429", codes)
	}
	if resp := adminDo(t, "GET", ui, config.DevAdminPassword, "", ""); resp.StatusCode != 429 {
		t.Errorf("the right password from a new browser at the locked address: %d, want 429", resp.StatusCode)
	}
	for _, forged := range []string{"ff_admin_device=" + strings.Repeat("A", 32) + "." + strings.Repeat("B", 43), "ff_admin_device=junk", cookie + "x"} {
		if resp := adminDo(t, "GET", ui, config.DevAdminPassword, "", "", "Cookie", forged); resp.StatusCode != 429 {
			t.Errorf("the right password with a forged device cookie %.40q: %d, want 429", forged, resp.StatusCode)
		}
	}
	resp := adminDo(t, "GET", ui, config.DevAdminPassword, "", "", "Cookie", cookie)
	if resp.StatusCode != 200 {
		t.Errorf("the operator's browser while the guesser is locked out: %d, want 200", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "ff_admin_device" {
			t.Error("a browser with a valid device cookie was given another")
		}
	}

	// Guessers from many addresses (past the trusted proxy) exhaust the
	// overall budget; the operator's browser is still let in.
	codes = map[int]int{}
	for i := range 40 {
		codes[adminDo(t, "GET", ui, "wrong-password", "", "", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)).StatusCode]++
	}
	if codes[401] > 30 || codes[429] < 10 {
		t.Errorf("40 wrong passwords from 40 addresses: %v, want at most 30 checked", codes)
	}
	if resp := adminDo(t, "GET", ui, config.DevAdminPassword, "", "", "X-Forwarded-For", "192.0.2.200"); resp.StatusCode != 429 {
		t.Errorf("a new browser at a fresh address during the attack: %d, want 429", resp.StatusCode)
	}
	if resp := adminDo(t, "GET", ui, config.DevAdminPassword, "", "", "Cookie", cookie, "X-Forwarded-For", "192.0.2.201"); resp.StatusCode != 200 {
		t.Errorf("the operator's browser during the distributed attack: %d, want 200", resp.StatusCode)
	}

	// A stolen cookie is no oracle: its own failures lock it.
	codes = map[int]int{}
	for range 12 {
		codes[adminDo(t, "GET", ui, "wrong-password", "", "", "Cookie", cookie).StatusCode]++
	}
	if codes[401] != 10 || codes[429] != 2 {
		t.Errorf("12 wrong passwords with the device cookie: %v, want 10 × 401 then 429", codes)
	}
}

// postLogin signs b in through POST /login and returns the cookie.
func postLogin(t *testing.T, a *testapp.App, b *http.Client, tok string) *http.Cookie {
	t.Helper()
	resp, _ := testapp.Form(t, b, "POST", a.URL+"/login", url.Values{"token": {tok}})
	if resp.StatusCode != 303 {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "ff_session" {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// withCookie is a fresh client that sends only this session cookie (the
// old cookie a thief kept).
func withCookie(t *testing.T, a *testapp.App, c *http.Cookie) *http.Client {
	b := testapp.FormClient(t)
	u, _ := url.Parse(a.URL)
	b.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: "/"}})
	return b
}

// TestSessionsAreRevocable: after POST /logout or POST
// /v1/me/email-links/revoke, an old session cookie opens nothing and
// rotates nothing (issue 15: it still did both).
func TestSessionsAreRevocable(t *testing.T) {
	t.Log("hostile: access")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	tok := testapp.Token(t, "alice", "alice@example.org")
	b := testapp.FormClient(t)
	old := postLogin(t, a, b, tok)
	stolen := withCookie(t, a, old)
	resp, page := testapp.Form(t, stolen, "GET", a.URL+"/settings/follows", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("settings with the cookie: %d", resp.StatusCode)
	}
	stolenCSRF := testapp.CSRF.FindStringSubmatch(page)[1]
	_, page = testapp.Form(t, b, "GET", a.URL+"/settings/follows", nil)
	if resp, _ := testapp.Form(t, b, "POST", a.URL+"/logout", url.Values{"csrf": {testapp.CSRF.FindStringSubmatch(page)[1]}}); resp.StatusCode != 200 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	var before feedLinks
	c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &before)
	if resp, _ := testapp.Form(t, stolen, "GET", a.URL+"/settings", nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/login" {
		t.Errorf("settings with the cookie after logout: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	testapp.Form(t, stolen, "POST", a.URL+"/settings/feed-token", url.Values{"csrf": {stolenCSRF}})
	var after feedLinks
	c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &after)
	if after.Atom != before.Atom {
		t.Error("the old cookie rotated the feed token after logout")
	}

	// Revoking email links ends sessions too; a new sign-in works.
	again := postLogin(t, a, testapp.FormClient(t), tok)
	if r := c.Do("POST", "/v1/me/email-links/revoke", tok, nil); r.Status != 204 {
		t.Fatalf("revoke: %d", r.Status)
	}
	if resp, _ := testapp.Form(t, withCookie(t, a, again), "GET", a.URL+"/settings", nil); resp.StatusCode != 303 {
		t.Errorf("settings with a cookie from before revoke: %d", resp.StatusCode)
	}
	fresh := testapp.FormClient(t)
	postLogin(t, a, fresh, tok)
	if resp, _ := testapp.Form(t, fresh, "GET", a.URL+"/settings/follows", nil); resp.StatusCode != 200 {
		t.Errorf("a new session: %d", resp.StatusCode)
	}
}

// TestAccessLogRedactsSignedLinksWhole: the MAC of a signed link never
// reaches the log (with it and a guessed user id the link was rebuilt);
// feed paths keep only their format suffix.
func TestAccessLogRedactsSignedLinksWhole(t *testing.T) {
	t.Log("hostile: secrets")
	t.Parallel()
	a, _ := start(t)
	for _, p := range []string{
		"/unsubscribe/ffl_AQEBAA.MACSECRETONE", "/confirm/ffl_AQMBAA.MACSECRETTWO", "/feeds/ffl_AQIBAA.MACSECRETTHREE.atom",
		"/feeds/fft_FEEDSECRETFOUR.atom", "/feeds/fft_FEEDSECRETFIVE.SUFFIXSECRET", "/feeds/fft_FEEDSECRETSIX/category/cs.LG.rss",
	} {
		get(t, a.URL+p)
	}
	logs := a.Logs()
	for _, secret := range []string{"MACSECRET", "FEEDSECRET", "SUFFIXSECRET", "AQEBAA"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %s:\n%s", secret, logs)
		}
	}
	for _, want := range []string{"path=/feeds/fft_REDACTED.atom ", "path=/feeds/fft_REDACTED/category/cs.LG.rss ", "path=/unsubscribe/ffl_REDACTED "} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log should show %q", want)
		}
	}
}

var confirmButton = regexp.MustCompile(`<form method="post" action="/login">\s*<input type="hidden" name="token" value="([^"]+)">`)

// TestLoginCSRF: another site can neither post a sign-in nor sign a
// browser in with a link; a link from the host site or our own pages
// still signs in at once.
func TestLoginCSRF(t *testing.T) {
	t.Log("hostile: csrf")
	t.Parallel()
	a, _ := start(t, "CORS_ORIGINS", "https://papers.example", "RATE_LIMIT_PER_IP", "0")
	tok := testapp.Token(t, "mallory", "mallory@example.org")
	post := func(headers ...string) *http.Response {
		req, _ := http.NewRequest("POST", a.URL+"/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := testapp.FormClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, h := range [][]string{{"Origin", "https://evil.example"}, {"Origin", "null"}, {"Sec-Fetch-Site", "cross-site"}} {
		if resp := post(h...); resp.StatusCode != 403 || len(resp.Cookies()) != 0 {
			t.Errorf("POST /login with %v: %d, cookies %v", h, resp.StatusCode, resp.Cookies())
		}
	}
	// Our pages send no referrer, so the browser posts their forms with
	// Origin: null and Sec-Fetch-Site: same-origin.
	for _, h := range [][]string{{"Origin", a.URL}, {"Origin", "https://papers.example"}, {"Origin", "null", "Sec-Fetch-Site", "same-origin"}, nil} {
		if resp := post(h...); resp.StatusCode != 303 {
			t.Errorf("POST /login with %v: %d", h, resp.StatusCode)
		}
	}
	getLogin := func(headers ...string) (*http.Response, string) {
		return getWith(t, testapp.FormClient(t), a.URL+"/login?token="+url.QueryEscape(tok), headers...)
	}
	resp, page := getLogin("Referer", "https://evil.example/page", "Sec-Fetch-Site", "cross-site")
	m := confirmButton.FindStringSubmatch(page)
	if resp.StatusCode != 200 || len(resp.Cookies()) != 0 || m == nil || !strings.Contains(page, "mallory@example.org") {
		t.Fatalf("GET /login from another site: %d, cookies %v\n%s", resp.StatusCode, resp.Cookies(), page)
	}
	if resp, _ := getLogin(); resp.StatusCode != 200 || len(resp.Cookies()) != 0 {
		t.Errorf("GET /login without a referrer: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	for _, h := range [][]string{{"Referer", "https://papers.example/researchers/7", "Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-origin"}} {
		if resp, _ := getLogin(h...); resp.StatusCode != 303 || len(resp.Cookies()) == 0 {
			t.Errorf("GET /login with %v: %d", h, resp.StatusCode)
		}
	}
	// The confirm button signs in (it posts from our own origin).
	if resp := post("Origin", a.URL); resp.StatusCode != 303 || len(resp.Cookies()) == 0 {
		t.Errorf("the confirm button: %d", resp.StatusCode)
	}
}

func getWith(t *testing.T, c *http.Client, u string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var demoToken = regexp.MustCompile(`name="followfeed-demo-token" content="([^"]+)"`)

// TestDemoTokenUsesItsOwnKey: the /embed/demo page's token is signed with
// the development-only demo key, not AUTH_HS256_SECRET, and signs in the
// demo user only.
func TestDemoTokenUsesItsOwnKey(t *testing.T) {
	t.Log("hostile: tokens")
	t.Parallel()
	a, c := start(t)
	_, body := get(t, a.URL+"/embed/demo")
	m := demoToken.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no demo token on the page:\n%s", body)
	}
	tok := string(m[1])
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte(config.DevHS256Secret), nil }); err == nil {
		t.Error("the demo token verifies with AUTH_HS256_SECRET")
	}
	if _, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return []byte(config.DevDemoHS256Secret), nil }); err != nil {
		t.Errorf("the demo token does not verify with the demo key: %v", err)
	}
	var me struct {
		Sub string `json:"sub"`
	}
	c.Do("GET", "/v1/me", tok, nil).JSON(t, &me)
	if me.Sub != auth.DemoSubject {
		t.Errorf("the demo token signs in %q", me.Sub)
	}
}

// TestConfirmationMailCaps: alternating addresses cannot mail-bomb one
// address, and the cap holds across processes sharing the database. The
// caps count mails (package account's test shows requests whose mail was
// never sent do not count): each change here waits for its mail job, so
// every accepted change is a mail sent.
func TestConfirmationMailCaps(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	env := testapp.Env(t)
	env["RATE_LIMIT_PER_IP"], env["RATE_LIMIT_PER_USER"] = "0", "0"
	a1 := testapp.Start(t, env)
	a2 := testapp.Start(t, env) // another api process on the same database
	c1, c2 := a1.Client(t), a2.Client(t)
	db := openDB(t, a1.DatabaseURL)
	mails := 0
	patch := func(c *testapp.Client, tok, email string) int {
		t.Helper()
		s := c.Do("PATCH", "/v1/me", tok, map[string]any{"email": email}).Status
		if s == 200 {
			mails++
			a1.Jobs().WaitCompleted(t, db.Pool, "email_confirm", mails)
		}
		return s
	}
	mallory := testapp.Token(t, "mallory", "")
	var got []int
	for i, addr := range []string{"victim@example.org", "other@example.org", "victim@example.org", "other@example.org", "victim@example.org", "other@example.org", "victim@example.org"} {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		got = append(got, patch(c, mallory, addr))
	}
	want := []int{200, 200, 200, 200, 200, 200, 429}
	if !equalInts(got, want) {
		t.Errorf("alternating addresses: %v, want %v", got, want)
	}
	// Another account naming the victim is refused too: the cap is the
	// recipient's.
	if s := patch(c2, testapp.Token(t, "trudy", ""), "Victim@Example.org"); s != 429 {
		t.Errorf("another account, same victim: %d", s)
	}
	// Per user: ten confirmation mails a day, whatever the addresses.
	eve := testapp.Token(t, "eve", "")
	var last int
	for i := range 11 {
		last = patch(c1, eve, "eve"+string(rune('a'+i))+"@example.org")
		if i < 10 && last != 200 {
			t.Fatalf("address %d: %d", i, last)
		}
	}
	if last != 429 {
		t.Errorf("the 11th address in a day: %d", last)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCORSPreflightFromAnotherOrigin: an origin not in CORS_ORIGINS gets a
// plain 403 without CORS headers, not a 405.
func TestCORSPreflightFromAnotherOrigin(t *testing.T) {
	t.Log("hostile: csrf")
	t.Parallel()
	for _, origins := range []string{"https://papers.example", ""} {
		a, _ := start(t, "CORS_ORIGINS", origins)
		req, _ := http.NewRequest("OPTIONS", a.URL+"/v1/me/follows/category/cs.LG", nil)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Access-Control-Request-Method", "PUT")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("CORS_ORIGINS=%q: preflight from another origin: %d %v", origins, resp.StatusCode, resp.Header)
		}
		if origins != "" {
			req.Header.Set("Origin", origins)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != origins {
				t.Errorf("preflight from the host: %d", resp.StatusCode)
			}
		}
	}
}

// rawExchange sends raw, as written, on a new connection to a and reads
// the answer: its status, Content-Type and body.
func rawExchange(t *testing.T, a *testapp.App, raw string) (int, string, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(a.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// TestEveryOwnBadRequestIsAProblem: every 4xx the service's own code
// decides is problem+json, also for headers carrying what net/http lets
// through to handlers (a tab inside a value, U+0085 and U+202E in UTF-8, a
// bare 0x85 byte) on every kind of route, in the headers our code reads
// (Authorization, If-None-Match, If-Modified-Since, Content-Type, Cookie,
// X-Forwarded-For from a trusted proxy, Origin) and others, and for a
// request for "*" (the mux's empty 400 before); and what net/http's
// server refuses before any handler runs (a control character in a
// header, a request it cannot parse, a missing Host, 431, 501, 505), which
// it writes to the connection itself and httpapi.Listener's connections
// answer as problem+json of the same status, on the real server.
func TestEveryOwnBadRequestIsAProblem(t *testing.T) {
	t.Log("hostile: malformed")
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0", "TRUSTED_PROXIES", "127.0.0.1/32")
	tok := testapp.Token(t, "header-prober", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &links)
	feed := strings.TrimPrefix(links.Atom, a.URL)
	requests := []string{"GET /v1/me", "GET /v1/status", "GET " + feed, "GET /settings", "GET /static/app.css",
		"GET /embed/follow-button.js", "GET /v1/follows/category/cs.LG", "PUT /v1/me/follows/category/cs.LG", "POST /v1/me/follows/category/cs.LG"}
	headers := []string{"Authorization", "If-None-Match", "If-Modified-Since", "Content-Type", "Cookie", "X-Forwarded-For", "Origin",
		"Accept", "Accept-Encoding", "Range"}
	values := map[string]string{"tab": "a\tb", "U+0085": "a\u0085b", "0x85": "a\x85b", "U+202E": "a\u202eb"}
	for _, req := range requests {
		for _, h := range headers {
			for name, v := range values {
				// Anonymous and signed in; an Authorization header itself
				// alone and after a good token.
				lines := []string{h + ": " + v, "Authorization: Bearer " + tok + "\r\n" + h + ": " + v}
				if h == "Authorization" {
					lines = []string{h + ": " + v, h + ": Bearer " + tok + v}
				}
				for _, l := range lines {
					raw := req + " HTTP/1.1\r\nHost: x\r\n" + l + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
					st, ct, body := rawExchange(t, a, raw)
					if st >= 500 || st >= 400 && ct != "application/problem+json" {
						t.Errorf("%s with %s %s: %d %q %.200s", req, h, name, st, ct, body)
					}
				}
			}
		}
	}
	// A request for "*" names no resource (OPTIONS * is net/http's 200).
	if st, ct, body := rawExchange(t, a, "GET * HTTP/1.1\r\nHost: x\r\n\r\n"); st != 400 || ct != "application/problem+json" || !strings.Contains(body, `\"*\" names no resource`) {
		t.Errorf(`GET *: %d %q %s`, st, ct, body)
	}
	if st, _, _ := rawExchange(t, a, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"); st != 200 {
		t.Errorf(`OPTIONS *: %d`, st)
	}
	// Before any handler: net/http's own refusals, as problems.
	type refusal struct {
		status    int
		typ, says string
	}
	control := refusal{400, "bad-request", "HTTP does not allow (a control character"}
	for raw, want := range map[string]refusal{
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\x01b\r\n\r\n":                control,
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\x7f\"\r\n\r\n":                    control,
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Any: a\x00b\r\n\r\n":                               control,
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n":                                 {400, "bad-request", "header's name"},
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n":                                    {400, "bad-request", "could not be read"},
		"GET /v1/%zz HTTP/1.1\r\nHost: x\r\n\r\n":                                                   {400, "bad-request", "could not be read"},
		"GET /v1/status HTTP/1.1\r\n\r\n":                                                           {400, "bad-request", "needs a Host header"},
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n":                                     {400, "bad-request", "Host is repeated"},
		"GET /v1/status HTTP/1.1\r\nHost: a b\r\n\r\n":                                              {400, "bad-request", "Host header is not"},
		"PUT /v1/me/follows/category/cs.LG HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n":      {400, "bad-request", "Content-Length"},
		"PUT /v1/me/follows/category/cs.LG HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n":  {501, "not-implemented", "chunked"},
		"GET /v1/status HTTP/2.0\r\nHost: x\r\n\r\n":                                                {505, "http-version-not-supported", "HTTP/1.1"},
		"GET /v1/status HTTP/1.1\r\nHost: x\r\nCookie: " + strings.Repeat("a", 40<<10) + "\r\n\r\n": {431, "too-large", "over the 32 KiB"},
	} {
		st, ct, body := rawExchange(t, a, raw)
		var p struct {
			Type, Title, Detail string
			Status              int
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil || st != want.status || ct != "application/problem+json" ||
			p.Status != want.status || p.Type != "urn:followfeed:problem:"+want.typ || p.Title == "" || !strings.Contains(p.Detail, want.says) {
			t.Errorf("%.80q: %d %q %s (%v); want a %d problem %s saying %q", raw, st, ct, body, err, want.status, want.typ, want.says)
		}
	}
}
