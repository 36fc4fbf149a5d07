package testapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"followfeed/auth"
	"followfeed/config"
	"followfeed/httpapi"
)

// Token mints a development HS256 token for sub (email verified when given);
// scopes make it a service token.
func Token(t testing.TB, sub, email string, scopes ...string) string {
	t.Helper()
	tok, err := auth.MintHS256([]byte(config.DevHS256Secret), auth.MintOptions{
		Subject: sub, Email: email, EmailVerified: email != "", Scopes: scopes, TTL: time.Hour, Now: time.Now(),
	})
	if err != nil {
		t.Fatalf("minting token: %v", err)
	}
	return tok
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decoding %q: %v", r.Body, err)
	}
}

// Client calls the running service. Every response of a route the OpenAPI
// document describes is validated against it; a mismatch fails the test.
type Client struct {
	t    testing.TB
	base string
	http *http.Client
}

// Client returns an API client for a.
func (a *App) Client(t testing.TB) *Client {
	// Redirects are not followed: each response is checked against the
	// route that gave it.
	return &Client{t: t, base: a.URL, http: &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Do sends a request with an optional bearer token and body (a string or
// []byte is sent as is, an io.User chunked, without Content-Length;
// anything else as JSON).
func (c *Client) Do(method, path, token string, body any, headers ...string) *Response {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = struct{ io.Reader }{b} // a user of unknown length: chunked
	default:
		js, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	validate(c.t, req, resp, data)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

func router() (routers.Router, error) {
	specOnce.Do(func() {
		// Bodies the validator cannot parse are checked as opaque strings
		// (their status, headers and content type still are checked).
		for _, ct := range []string{"application/atom+xml", "application/rss+xml", "text/x-opml", "text/xml",
			"text/html", "text/javascript", "text/css", "image/svg+xml"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
		}
		openapi3filter.RegisterBodyDecoder("application/feed+json", openapi3filter.JSONBodyDecoder)
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(httpapi.OpenAPIDocument)
		if err != nil {
			specErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			specErr = err
			return
		}
		specRouter, specErr = legacy.NewRouter(doc)
	})
	return specRouter, specErr
}

// validate checks resp against the OpenAPI document. Routes the document
// does not describe fail the test too: every route must be documented.
func validate(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	rt, err := router()
	if err != nil {
		t.Fatalf("openapi.json is invalid: %v", err)
	}
	// Match on the path as sent, against a server-less document.
	r2 := req.Clone(context.Background())
	r2.URL.Scheme, r2.URL.Host, r2.Host = "", "", ""
	if req.Method == http.MethodHead {
		r2.Method = http.MethodGet // HEAD is GET without a body
	}
	route, params, err := rt.FindRoute(r2)
	if err == nil && strings.HasSuffix(r2.URL.Path, "/") && !strings.HasSuffix(route.Path, "/") {
		// A subtree's root ("/admin/jobs/") is its route with an empty
		// last parameter ("/admin/jobs/{page}"): OpenAPI has no trailing
		// slash paths (Redocly's no-path-trailing-slash).
		r3 := r2.Clone(context.Background())
		r3.URL.Path += "_"
		if rt3, params3, err3 := rt.FindRoute(r3); err3 == nil {
			if i := strings.LastIndex(rt3.Path, "/{"); i >= 0 && strings.HasSuffix(rt3.Path, "}") && rt3.Path[:i+1] == r2.URL.Path {
				route, params = rt3, params3
				params[rt3.Path[i+2:len(rt3.Path)-1]] = ""
			}
		}
	}
	if err == nil && strings.Count(r2.URL.Path, "/") < strings.Count(route.Path, "/") {
		// The validating router also takes a path a segment short for
		// its route with the last parameter empty ("/v1/me/follows/abc"
		// for "/v1/me/follows/{kind}/{id}"); the service's mux does not.
		err = fmt.Errorf("%s has fewer segments than %s", r2.URL.Path, route.Path)
	}
	if err == nil && strings.HasSuffix(r2.URL.Path, "/") != strings.HasSuffix(route.Path, "/") &&
		!(strings.HasSuffix(route.Path, "}") && route.Path[:strings.LastIndex(route.Path, "/{")+1] == r2.URL.Path) {
		// The validating router ignores a trailing slash; the service's
		// mux does not ("/v1/me/follows/" is not "/v1/me/follows").
		err = fmt.Errorf("%s matches %s only without regard to its trailing slash", r2.URL.Path, route.Path)
	}
	if resp.StatusCode == http.StatusMethodNotAllowed {
		// Any path may refuse a method; the refusal is a problem document
		// naming the methods it takes.
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 with Content-Type %q and Allow %q, want a problem document and Allow", req.Method, req.URL.Path, ct, resp.Header.Get("Allow"))
		}
		return
	}
	if err != nil {
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			// The mux sends unclean paths ("/a/../b", "//x") to the clean
			// one, and a subtree's bare name to the subtree ("/x" → "/x/").
			if loc := resp.Header.Get("Location"); loc != "" && (path.Clean(req.URL.Path) != req.URL.Path || loc == req.URL.Path+"/") {
				return
			}
		}
		if resp.StatusCode == http.StatusNotFound {
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" && req.Method != http.MethodHead {
				t.Errorf("%s %s: 404 with Content-Type %q, want a problem document", req.Method, req.URL.Path, ct)
			}
			return // the service agrees the route does not exist
		}
		t.Errorf("%s %s answered %d but is not in openapi.json: %v", req.Method, req.URL.Path, resp.StatusCode, err)
		return
	}
	if req.Method == http.MethodHead {
		if route.Operation.Responses.Status(resp.StatusCode) == nil && route.Operation.Responses.Default() == nil {
			t.Errorf("HEAD %s answered %d, which GET does not document", req.URL.Path, resp.StatusCode)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: response %d does not match openapi.json: %v\nbody: %.500s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}

// ExpiredToken mints a development token that expired an hour ago.
func ExpiredToken(t testing.TB, sub string) string {
	t.Helper()
	tok, err := auth.MintHS256([]byte(config.DevHS256Secret), auth.MintOptions{
		Subject: sub, TTL: time.Hour, Now: time.Now().Add(-2 * time.Hour),
	})
	if err != nil {
		t.Fatalf("minting token: %v", err)
	}
	return tok
}
