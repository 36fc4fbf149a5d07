package testapp

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// FormClient is an HTTP client with a cookie jar that does not follow
// redirects, as a person clicking through the HTML pages would (no JavaScript; the
// real browser driver is package internal/browser).
func FormClient(t testing.TB) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Form sends method u with form (URL-encoded; nil for no body) through c
// and returns the response and its body.
func Form(t testing.TB, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// CSRF is the pattern of a page's CSRF form field; group 1 is the token.
var CSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
