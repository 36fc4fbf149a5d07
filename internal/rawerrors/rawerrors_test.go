package rawerrors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tap records what the server writes, above the Listener under test.
type tap struct {
	net.Listener
	mu  sync.Mutex
	out bytes.Buffer
}

func (t *tap) Accept() (net.Conn, error) {
	c, err := t.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: c, t: t}, nil
}

type tapConn struct {
	net.Conn
	t *tap
}

func (c *tapConn) Write(p []byte) (int, error) {
	c.t.mu.Lock()
	c.t.out.Write(p)
	c.t.mu.Unlock()
	return c.Conn.Write(p)
}

func (t *tap) written() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

// serve runs h behind Listener (with a tap above it) and returns the
// address and the tap.
func serve(t *testing.T, h http.Handler) (string, *tap) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{Listener: Listener(ln, Config{Type: func(code string) string { return "urn:test:" + code }, MaxHeaderBytes: 1 << 10})}
	srv := &http.Server{Handler: h, MaxHeaderBytes: 1 << 10, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(tp) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), tp
}

// exchange sends raw on a new connection and returns all it receives.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil && len(got) == 0 {
		t.Fatalf("%q: %v", raw, err)
	}
	return string(got)
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func TestServerErrorsAreProblems(t *testing.T) {
	addr, _ := serve(t, ok)
	for _, c := range []struct {
		name, raw string
		status    int
		typ, has  string
	}{
		{"control character in a value", "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\x01b\r\n\r\n", 400, "bad-request", "HTTP does not allow"},
		{"NUL in a value", "GET / HTTP/1.1\r\nHost: x\r\nX-Any: a\x00b\r\n\r\n", 400, "bad-request", "HTTP does not allow"},
		{"DEL in a value", "GET / HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\x7f\"\r\n\r\n", 400, "bad-request", "HTTP does not allow"},
		{"control character in a name", "GET / HTTP/1.1\r\nHost: x\r\nBa\x01d: x\r\n\r\n", 400, "bad-request", "HTTP does not allow"},
		{"space in a name", "GET / HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n", 400, "bad-request", "header's name"},
		{"no colon", "GET / HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n", 400, "bad-request", "could not be read"},
		{"bad target", "GET /v1/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad-request", "could not be read"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, "bad-request", "needs a Host header"},
		{"malformed Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "bad-request", "Host header is not"},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "bad-request", "Host is repeated"},
		{"bad Content-Length", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "bad-request", "Content-Length"},
		{"oversized header", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "too-large", "over the 1 KiB"},
		{"transfer encoding", "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "not-implemented", "chunked"},
		{"HTTP/2.0 text", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http-version-not-supported", "HTTP/1.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := exchange(t, addr, c.raw)
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			if err != nil {
				t.Fatalf("%v: %q", err, got)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("body: %v: %q", err, got)
			}
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/problem+json" ||
				!resp.Close || resp.ContentLength != int64(len(body)) {
				t.Fatalf("%d %v: %q", resp.StatusCode, resp.Header, got)
			}
			var p map[string]any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("body is not JSON: %v: %q", err, body)
			}
			if len(p) != 4 || p["type"] != "urn:test:"+c.typ || p["title"] == "" || p["status"] != json.Number(strconv.Itoa(c.status)) ||
				!strings.Contains(p["detail"].(string), c.has) {
				t.Errorf("problem %v; want type %s, status %d, a detail with %q", p, c.typ, c.status, c.has)
			}
		})
	}
}

// TestControlByteBeforeAResponseIsForgotten: a control byte in a request
// that was answered does not name the cause of the next refusal; one in a
// request after an answered one does.
func TestControlByteBeforeAResponseIsForgotten(t *testing.T) {
	addr, _ := serve(t, ok)
	got := exchange(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n\x01\x02\x03"+
		"GET / HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n")
	_, second, found := strings.Cut(got, "\r\n\r\nok")
	if !found || !strings.Contains(second, "application/problem+json") || !strings.Contains(second, "could not be read") {
		t.Errorf("%q", got)
	}
	// One in a request sent after an answered one is named.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(c)
	first, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, first.Body)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01\r\n\r\n")
	rest, _ := io.ReadAll(r)
	if !bytes.Contains(rest, []byte("application/problem+json")) || !bytes.Contains(rest, []byte("HTTP does not allow")) {
		t.Errorf("%q", rest)
	}
}

// TestHandlerResponsesPassUntouched: what handlers write reaches the
// client byte for byte, a plain-text answer that closes the connection
// and one as close to net/http's own errors as a handler can make it
// included.
func TestHandlerResponsesPassUntouched(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "400 Bad Request")
	})
	mux.HandleFunc("/mimic", func(w http.ResponseWriter, r *http.Request) {
		// No Date, no Content-Length, Connection: close after
		// Content-Type: the very bytes of net/http's plain 400.
		w.Header()["Date"] = nil
		w.Header()["Content-Length"] = nil
		w.Header().Set("Transfer-Encoding", "identity")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "400 Bad Request")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, strings.Repeat("HTTP/1.1 400 Bad Request"+errorHeaders, 1000))
	})
	for _, path := range []string{"/plain", "/mimic", "/big", "/nowhere"} {
		addr, tp := serve(t, mux)
		got := exchange(t, addr, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if got == "" || got != tp.written() {
			t.Errorf("%s: the client got\n%q\nthe server wrote\n%q", path, got, tp.written())
		}
		if _, _, _, shaped := serverError([]byte(got)); shaped != (path == "/mimic") {
			t.Errorf("%s: has net/http's error shape: %v", path, shaped)
		}
	}
}

// TestRecognisesExactlyTheServerForms: the recogniser's own cases,
// including the TLS port's HTTP/1.0 answer, and near misses.
func TestRecognisesExactlyTheServerForms(t *testing.T) {
	for raw, want := range map[string]int{
		"HTTP/1.1 400 Bad Request" + errorHeaders + "400 Bad Request":                                             400,
		"HTTP/1.1 400 Bad Request: invalid header value" + errorHeaders + "400 Bad Request: invalid header value": 400,
		"HTTP/1.1 431 Request Header Fields Too Large" + errorHeaders + "431 Request Header Fields Too Large":     431,
		"HTTP/1.1 501 Not Implemented" + errorHeaders + "Unsupported transfer encoding":                           501,
		httpsRefusal: 400,
		"HTTP/1.1 400 Bad Request" + errorHeaders + "400 Bad Request!":                                                    0,
		"HTTP/1.1 400 Bad Request" + errorHeaders:                                                                         0,
		"HTTP/1.1 200 OK" + errorHeaders + "200 OK":                                                                       0,
		"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n400 Bad Request": 0,
		"HTTP/1.1 400 Bad Request\r\nDate: x" + errorHeaders + "400 Bad Request":                                          0,
		"HTTP/1.1 501 Not Implemented" + errorHeaders + "501 Not Implemented!":                                            0,
		"HTTP/1.1 400 Bad Requests" + errorHeaders + "400 Bad Requests":                                                   0,
	} {
		if _, st, _, ok := serverError([]byte(raw)); st != want || ok != (want != 0) {
			t.Errorf("%q: %d %v, want %d", raw, st, ok, want)
		}
	}
	if got := string((&Config{}).response("HTTP/1.0", 400, "https", false)); !strings.HasPrefix(got, "HTTP/1.0 400 Bad Request\r\n") || !strings.Contains(got, "https://") {
		t.Errorf("%q", got)
	}
}

// TestHalfCloseReachesTheConnection: net/http half-closes a connection
// whose client may still be sending (closeWriteAndWait, for its 431 and
// for a handler's answer to an unread body) only through a CloseWrite it
// finds on the conn, so its answer is not lost to a reset; the wrapper's
// conn has one and passes it on: the peer reads EOF, and can still write.
func TestHalfCloseReachesTheConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := Listener(ln, Config{})
	defer wrapped.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := wrapped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the wrapper's conn has no CloseWrite: net/http cannot half-close it")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	peer.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := peer.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("the peer reads %d, %v; want EOF", n, err)
	}
	if _, err := io.WriteString(peer, "x"); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Errorf("half-closed, the conn reads %d, %v", n, err)
	}
}
