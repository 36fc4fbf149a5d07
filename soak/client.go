package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"followfeed/auth"
	"followfeed/config"
)

// mint returns a development HS256 token (config.DevHS256Secret) for sub;
// with email, the address is claimed as verified (confirmed on first sight).
func mint(sub, email string, scopes ...string) (string, error) {
	return auth.MintHS256([]byte(config.DevHS256Secret), auth.MintOptions{
		Subject: sub, Email: email, EmailVerified: email != "", Scopes: scopes, TTL: 6 * time.Hour, Now: time.Now(),
	})
}

// client talks to one followfeed process.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string, conns int, timeout time.Duration) *client {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: 90 * time.Second}
	return &client{base: base, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// reply is one finished request.
type reply struct {
	status int
	header http.Header
	body   []byte
	dur    time.Duration
	err    error // transport error (no status)
}

// do sends one request; body may be nil, []byte or a value to encode as JSON.
func (c *client) do(ctx context.Context, method, path, token string, body any, hdr http.Header) reply {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return reply{err: err}
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return reply{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return reply{err: err, dur: time.Since(start)}
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return reply{status: resp.StatusCode, header: resp.Header, body: data, dur: time.Since(start), err: err}
}

// must sends a request and fails unless the status is one of want.
func (c *client) must(ctx context.Context, method, path, token string, body any, want ...int) (reply, error) {
	r := c.do(ctx, method, path, token, body, nil)
	if r.err != nil {
		return r, fmt.Errorf("%s %s: %w", method, redactToken(path), r.err)
	}
	for _, w := range want {
		if r.status == w {
			return r, nil
		}
	}
	return r, fmt.Errorf("%s %s: status %d: %s", method, redactToken(path), r.status, oneLine(lastBytes(string(r.body), 300)))
}

// feedPath asks the API for the user's private JSON feed path
// ("/feeds/fft_….json"), relative to the process that answers.
func (c *client) feedPath(ctx context.Context, token, format string) (string, error) {
	r, err := c.must(ctx, "GET", "/v1/me/feeds", token, nil, 200)
	if err != nil {
		return "", err
	}
	var f map[string]any
	if err := json.Unmarshal(r.body, &f); err != nil {
		return "", err
	}
	s, _ := f[format].(string)
	u, err := url.Parse(s)
	if err != nil || u.Path == "" {
		return "", fmt.Errorf("GET /v1/me/feeds: no %s URL", format)
	}
	return u.Path, nil
}

// user makes a user through the API: a token for sub (with email, a
// verified address), a follow of category, and the path of their private
// feed in format.
func (c *client) newUser(ctx context.Context, sub, email, category, format string) (token, feed string, err error) {
	if token, err = mint(sub, email); err != nil {
		return "", "", err
	}
	if _, err := c.must(ctx, "PUT", "/v1/me/follows/category/"+category, token, nil, 201, 200); err != nil {
		return "", "", err
	}
	feed, err = c.feedPath(ctx, token, format)
	return token, feed, err
}

// feedIDs fetches a JSON feed and returns the arXiv ids of its items.
func (c *client) feedIDs(ctx context.Context, path string) (map[string]bool, error) {
	r, err := c.must(ctx, "GET", path+"?limit=200", "", nil, 200)
	if err != nil {
		return nil, err
	}
	return parseFeedIDs(r.body)
}

// parseFeedIDs returns the arXiv ids of a JSON Feed's items.
func parseFeedIDs(body []byte) (map[string]bool, error) {
	items, err := parseFeedItems(body)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(items))
	for _, id := range items {
		out[id] = true
	}
	return out, nil
}

// parseFeedItems returns the arXiv ids of a JSON Feed's items in order,
// repeats included.
func parseFeedItems(body []byte) ([]string, error) {
	var f struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("feed is not JSON Feed: %w", err)
	}
	out := make([]string, 0, len(f.Items))
	for _, it := range f.Items {
		out = append(out, strings.TrimPrefix(it.ID, "tag:arxiv.org,1991:"))
	}
	return out, nil
}

func redactToken(p string) string {
	if i := strings.Index(p, "fft_"); i >= 0 {
		j := i + 4
		for j < len(p) && p[j] != '.' && p[j] != '/' && p[j] != '?' {
			j++
		}
		return p[:i] + "fft_…" + p[j:]
	}
	return p
}

// pushPaper is a paper in POST /v1/papers form.
type pushPaper struct {
	ArxivID    string   `json:"arxiv_id"`
	Version    int      `json:"version"`
	Title      string   `json:"title"`
	Abstract   string   `json:"abstract"`
	Authors    []string `json:"authors"`
	Categories []string `json:"categories"`
	Published  string   `json:"published"`
}

// waitFor polls cond every interval until it returns true, an error, or
// timeout passes (then it returns false).
func waitFor(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(interval):
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
