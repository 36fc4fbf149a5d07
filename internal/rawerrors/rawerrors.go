// Package rawerrors answers, as application/problem+json, the requests
// net/http's server refuses before any handler runs.
//
// http.Server has no hook for a request it cannot parse: conn.serve writes
// its own plain-text answer straight to the connection when readRequest
// fails (net/http/server.go, Go 1.26), in one Write of
//
//	"HTTP/1.1 " + status + errorHeaders + body
//	errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
//
// in four forms:
//
//   - "400 Bad Request", body the same: a request it cannot read (a header
//     name or value with a control character, a header line without a
//     colon, an unreadable request line or target, a bad Content-Length, a
//     repeated Host);
//   - "400 Bad Request: <text>", body the same, for the statusError texts
//     "missing required Host header", "malformed Host header", "invalid
//     header name", "invalid header value"; "505 HTTP Version Not
//     Supported: unsupported protocol version" likewise;
//   - "431 Request Header Fields Too Large", body the same: a request line
//     and headers over MaxHeaderBytes (plus net/http's 4 KiB of slack);
//   - "501 Not Implemented", body "Unsupported transfer encoding": a
//     Transfer-Encoding other than chunked.
//
// A fifth, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to
// an HTTPS server.\n", is written only by a server that terminates TLS, on
// the connection beneath the *tls.Conn. followfeed terminates no TLS (it
// serves plaintext behind a proxy): were it to, the four forms above would
// be written inside TLS, where a wrapper of the plain listener cannot see
// them, and http.Server needs the *tls.Conn itself to see TLS. The fifth is
// recognised anyway, so a Listener beneath tls.NewListener answers it.
//
// Listener wraps the listener the server reads plaintext from; its
// connections recognise exactly those writes — the whole Write, that
// status line, that header block (no Date, no Content-Length) and that
// body, written by net/http's conn.serve itself — and write instead a
// problem document (type, title, status, detail) of the same status, with
// Content-Length and Connection: close. Every other Write passes through
// as it is.
//
// The bytes alone do not tell a handler's response from the server's: a
// handler that deletes Date and Content-Length, sets Content-Type and
// "Transfer-Encoding: identity" (net/http then closes the connection) and
// writes "400 Bad Request" produces the very bytes of net/http's plain
// 400. So a Write of that shape is rewritten only when the first net/http
// frame above it on the stack is (*conn).serve, which writes its errors
// to the connection (through fmt.Fprintf or io.WriteString), and not
// checkConnErrorWriter.Write, through which every response a handler
// writes reaches the connection. Were either name to change in a later Go,
// nothing would be rewritten (the plain text again, never a handler's
// response altered), and the tests here and httpapi's
// TestEveryOwnBadRequestIsAProblem would fail.
//
// The conn also notes whether a byte it read since it last wrote is a
// control character (NUL, a C0 control other than tab, CR and LF, DEL),
// among the first MaxHeaderBytes+4096 of them: net/http's plain "400 Bad
// Request" does not say why, and a control character in a header is its
// usual reason, so the detail names it then, and otherwise lists the
// causes, a control character among them. Two requests pipelined into one
// read are counted with the first one's answer, so the second one's
// refusal gets the list; a pipelined body with a control byte, read
// before the refused request, would have it named wrongly.
package rawerrors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// errorHeaders is net/http's header block of its own error responses.
const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// httpsRefusal is the whole of what a TLS-terminating server writes to a
// client that spoke plain HTTP to it.
const httpsRefusal = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"

// Config says how problems are written.
type Config struct {
	// Type returns the problem type URI of a code: "bad-request" (400),
	// "too-large" (431), "not-implemented" (501) or
	// "http-version-not-supported" (505).
	Type func(code string) string
	// MaxHeaderBytes is the server's http.Server.MaxHeaderBytes, named in
	// the 431's detail; 0: http.DefaultMaxHeaderBytes.
	MaxHeaderBytes int
}

// Listener wraps ln: its connections answer net/http's own error responses
// as problem+json and pass every other write through unchanged.
func Listener(ln net.Listener, cfg Config) net.Listener {
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = http.DefaultMaxHeaderBytes
	}
	return &listener{Listener: ln, cfg: cfg}
}

type listener struct {
	net.Listener
	cfg Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// net/http reads at most MaxHeaderBytes plus 4 KiB of a request's
	// head before it answers 431.
	return &conn{Conn: c, cfg: &l.cfg, headLimit: l.cfg.MaxHeaderBytes + 4096}, nil
}

type conn struct {
	net.Conn
	cfg       *Config
	headLimit int

	mu   sync.Mutex // Read and Write run on different goroutines
	seen int        // bytes read since the last Write, counted up to headLimit
	ctl  bool       // a control byte among them
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.ctl && c.seen < c.headLimit {
			b := p[:min(n, c.headLimit-c.seen)]
			c.ctl = bytes.IndexFunc(b, isControl) >= 0
			c.seen += len(b)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	ctl := c.ctl
	c.seen, c.ctl = 0, false
	c.mu.Unlock()
	proto, status, reason, ok := serverError(p)
	if !ok || !writtenByServe() {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(c.cfg.response(proto, status, reason, ctl)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite half-closes the connection beneath, as net/http does (when
// it can) before closing one whose client may still be sending: its
// answer is then not lost to a reset (conn.closeWriteAndWait).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// writtenByServe reports whether the first net/http frame above the
// caller is (*conn).serve, the server's own error write, rather than the
// response writer's checkConnErrorWriter.Write.
func writtenByServe() bool {
	var pcs [24]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "net/http.") {
			return f.Function == "net/http.(*conn).serve"
		}
		if !more {
			return false
		}
	}
}

// isControl reports a byte no header may hold: NUL, a C0 control other
// than tab and the line endings, DEL (bytes, not runes: UTF-8's own bytes
// are all 0x80 and over).
func isControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\r' && r != '\n' || r == 0x7f
}

// serverError recognises p as one of net/http's own error responses and
// returns its protocol, its status and the statusError text after the
// reason phrase ("" for none).
func serverError(p []byte) (proto string, status int, text string, ok bool) {
	if string(p) == httpsRefusal {
		return "HTTP/1.0", http.StatusBadRequest, "https", true
	}
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found {
		return "", 0, "", false
	}
	line, body, found := bytes.Cut(rest, []byte(errorHeaders))
	if !found || bytes.ContainsAny(line, "\r\n") || len(line) < 5 || line[3] != ' ' {
		return "", 0, "", false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil || status < 400 || status > 599 {
		return "", 0, "", false
	}
	phrase := http.StatusText(status)
	after, found := bytes.CutPrefix(line[4:], []byte(phrase))
	if phrase == "" || !found {
		return "", 0, "", false
	}
	switch {
	case status == http.StatusNotImplemented && len(after) == 0 && string(body) == "Unsupported transfer encoding":
		return "HTTP/1.1", status, "", true
	case !bytes.Equal(body, line):
		return "", 0, "", false
	case len(after) == 0:
		return "HTTP/1.1", status, "", true
	case bytes.HasPrefix(after, []byte(": ")) && len(after) > 2:
		return "HTTP/1.1", status, string(after[2:]), true
	}
	return "", 0, "", false
}

// problem is the project's problem document (httpapi.Problem's fields).
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// response is the problem+json answer to a refused request.
func (cfg *Config) response(proto string, status int, text string, ctl bool) []byte {
	code, title, detail := explain(status, text, ctl, cfg.MaxHeaderBytes)
	typ := "about:blank"
	if cfg.Type != nil {
		typ = cfg.Type(code)
	}
	body, err := json.Marshal(problem{Type: typ, Title: title, Status: status, Detail: detail})
	if err != nil { // strings and an int: cannot fail
		panic(err)
	}
	body = append(body, '\n') // as httpapi's json.Encoder writes it
	return fmt.Appendf(nil, "%s %d %s\r\nContent-Type: application/problem+json\r\nCache-Control: no-store\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		proto, status, http.StatusText(status), len(body), body)
}

// controlDetail is the detail of a request refused for a control
// character.
const controlDetail = "A request header holds a character HTTP does not allow (a control character: NUL, a C0 control other than tab, or DEL); remove it and send the request again."

// explain returns the problem code, title and detail of a refusal.
func explain(status int, text string, ctl bool, maxHeaderBytes int) (code, title, detail string) {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return "too-large", "Request header fields too large",
			fmt.Sprintf("The request line and headers are over the %d KiB this server reads; send fewer or shorter headers (cookies included).", maxHeaderBytes>>10)
	case http.StatusNotImplemented:
		return "not-implemented", "Not implemented",
			"This server reads a request body sent with Content-Length or Transfer-Encoding: chunked, no other transfer encoding; send it with one of those."
	case http.StatusHTTPVersionNotSupported:
		return "http-version-not-supported", "HTTP version not supported",
			"This server speaks HTTP/1.1 (and 1.0) on this connection; send the request as HTTP/1.1."
	}
	title = "Bad request"
	switch text {
	case "https":
		detail = "This port speaks HTTPS; send the request with https://."
	case "missing required Host header":
		detail = "An HTTP/1.1 request needs a Host header naming the server (Host: followfeed.example.org); add it."
	case "malformed Host header":
		detail = "The Host header is not a host name or address with an optional port; send the server's host name."
	case "invalid header name":
		detail = "A request header's name holds a character a header name cannot (a space, a control character or a separator such as \"(\", \"/\" or \"@\"); correct or remove that header."
	case "invalid header value":
		detail = controlDetail
	default:
		if ctl {
			detail = controlDetail
		} else {
			detail = "The request could not be read as HTTP/1.1: a header holds a control character or has no colon, Host is repeated, or its request line, target or Content-Length is malformed; correct it and send the request again."
		}
	}
	if status != http.StatusBadRequest { // a statusError net/http adds later
		title = http.StatusText(status)
		detail = fmt.Sprintf("The server refused the request: %s.", text)
	}
	return "bad-request", title, detail
}
