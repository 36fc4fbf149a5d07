// Package testsmtp runs a real SMTP server (github.com/emersion/go-smtp) inside
// a test process, listening on 127.0.0.1, so mail code can be tested over the
// wire: STARTTLS or implicit TLS with an in-process self-signed certificate,
// AUTH PLAIN, scripted SMTP error replies per stage, slow final replies and
// connections dropped after the message body.
package testsmtp

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Stages passed to Options.Fault.
const (
	StageMail = "mail" // reply to MAIL FROM
	StageRcpt = "rcpt" // reply to each RCPT TO
	StageData = "data" // reply to the final dot, after the whole body was read
)

// Options configures a Server. The zero value is a plain-text server without
// authentication that accepts every message.
type Options struct {
	// TLS offers STARTTLS with a self-signed certificate for 127.0.0.1 and
	// localhost generated in-process; clients trust it via Server.CertPool.
	TLS bool
	// ImplicitTLS serves SMTPS: TLS from the first byte, same certificate.
	ImplicitTLS bool
	// Username and Password, when Username is set, make the server offer AUTH
	// PLAIN (also without TLS) and refuse MAIL with 530 until the client has
	// authenticated with exactly these credentials.
	Username, Password string
	// Fault returns the SMTP error to answer at a stage (StageMail, StageRcpt,
	// StageData), or nil to accept. n counts the calls for that stage since
	// Start, from 1, across all connections. At StageData it is called after
	// the whole body was read, so its error is the reply to the final dot.
	// Fault may sleep to simulate a slow reply to MAIL or RCPT.
	Fault func(stage string, n int) *smtp.SMTPError
	// DropAfterData, when it returns true for the n-th message body (same n as
	// Fault's StageData), makes the server read the whole body and then close
	// the TCP connection without replying to the final dot. The client has
	// then sent everything and sees EOF (or a reset) while it waits for the
	// final reply: it cannot know whether the message was accepted. Dropped
	// messages are not recorded in Messages.
	DropAfterData func(n int) bool
	// No8BitMIME makes the server leave 8BITMIME out of its EHLO reply
	// (go-smtp always offers it; the line is removed on the wire, so it
	// works with plain connections only) and refuse a message body with
	// bytes above 127, as a 7-bit server would.
	No8BitMIME bool
	// Delay is slept before every reply to the final dot (before Fault's
	// StageData error is sent, and before an accepted message is recorded).
	Delay time.Duration
}

// Message is one message the server accepted (replied 250 to its final dot).
type Message struct {
	From       string    // MAIL FROM address
	To         []string  // RCPT TO addresses, in order
	Data       []byte    // the body exactly as received (CRLF, dot-unstuffed)
	ReceivedAt time.Time // when the body was accepted
}

// Server is a running SMTP server. It is safe for concurrent use; its methods
// may be called while clients talk to it.
type Server struct {
	// Addr is the listening address, "127.0.0.1:port".
	Addr string

	opts   Options
	srv    *smtp.Server
	ln     net.Listener
	pool   *x509.CertPool
	done   chan struct{}
	served chan struct{}

	mu       sync.Mutex
	msgs     []Message
	changed  chan struct{} // closed and replaced whenever msgs grows
	conns    int
	counters map[string]int
	closed   bool
	t        testing.TB
}

// Start starts a server on 127.0.0.1 with a random port. It fails the test
// when the server cannot start and closes the server (listener and every open
// connection) in t.Cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{
		opts:     opts,
		done:     make(chan struct{}),
		served:   make(chan struct{}),
		changed:  make(chan struct{}),
		counters: map[string]int{},
		t:        t,
	}

	var tlsCfg *tls.Config
	if opts.TLS || opts.ImplicitTLS {
		cert, pool, err := selfSigned()
		if err != nil {
			t.Fatalf("testsmtp: generate certificate: %v", err)
		}
		s.pool = pool
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testsmtp: listen: %v", err)
	}
	s.Addr = ln.Addr().String()
	s.ln = ln
	var l net.Listener = &countingListener{Listener: ln, s: s}
	if opts.ImplicitTLS {
		l = tls.NewListener(l, tlsCfg)
	}

	srv := smtp.NewServer(&backend{s: s})
	srv.Domain = "testsmtp.localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.MaxMessageBytes = 32 << 20
	srv.ErrorLog = testLogger{s: s}
	if opts.TLS || opts.ImplicitTLS {
		// With ImplicitTLS every connection is already TLS, so go-smtp does
		// not advertise STARTTLS; the config only matters for STARTTLS.
		srv.TLSConfig = tlsCfg
	}
	s.srv = srv

	go func() {
		defer close(s.served)
		_ = srv.Serve(l)
	}()
	t.Cleanup(s.close)
	return s
}

// close stops the server; it runs once, in t.Cleanup.
func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	_ = s.srv.Close()
	// go-smtp's Close only closes listeners Serve has registered already;
	// closing ours too covers a Serve goroutine that has not got that far.
	_ = s.ln.Close()
	<-s.served
}

// CertPool returns a pool holding the server's self-signed certificate (valid
// for 127.0.0.1 and localhost), or nil when neither TLS nor ImplicitTLS is set.
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// URL returns an SMTP_URL for this server: "smtp://127.0.0.1:port?tls=none"
// for a plain server, "smtp://127.0.0.1:port" (STARTTLS required) with TLS,
// "smtps://127.0.0.1:port" with ImplicitTLS; with user:pass@ when Username is
// set.
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr}
	switch {
	case s.opts.ImplicitTLS:
		u.Scheme = "smtps"
	case s.opts.TLS:
	default:
		u.RawQuery = "tls=none"
	}
	if s.opts.Username != "" {
		u.User = url.UserPassword(s.opts.Username, s.opts.Password)
	}
	return u.String()
}

// Messages returns a copy of the accepted messages, in the order their final
// dot was accepted.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyMsgs()
}

func (s *Server) copyMsgs() []Message {
	out := make([]Message, len(s.msgs))
	for i, m := range s.msgs {
		m.To = append([]string(nil), m.To...)
		m.Data = append([]byte(nil), m.Data...)
		out[i] = m
	}
	return out
}

// WaitMessages waits until at least n messages were accepted and returns all
// accepted so far; it fails the test (t.Fatalf) when timeout passes first.
func (s *Server) WaitMessages(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.msgs) >= n {
			out := s.copyMsgs()
			s.mu.Unlock()
			return out
		}
		changed, got := s.changed, len(s.msgs)
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("testsmtp: got %d messages after %v, want %d", got, timeout, n)
			return nil
		}
	}
}

// Connections returns how many TCP connections the server accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// next increments and returns the counter of stage.
func (s *Server) next(stage string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters[stage]++
	return s.counters[stage]
}

func (s *Server) fault(stage string, n int) error {
	if s.opts.Fault == nil {
		return nil
	}
	if e := s.opts.Fault(stage, n); e != nil {
		return e
	}
	return nil
}

func (s *Server) record(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	close(s.changed)
	s.changed = make(chan struct{})
}

// countingListener counts accepted TCP connections (before any TLS).
type countingListener struct {
	net.Listener
	s *Server
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.mu.Lock()
		l.s.conns++
		l.s.mu.Unlock()
		if l.s.opts.No8BitMIME {
			c = no8BitMIMEConn{c}
		}
	}
	return c, err
}

// no8BitMIMEConn removes the 8BITMIME line of the server's EHLO reply. It
// is never the reply's last line, so the reply stays well-formed.
type no8BitMIMEConn struct{ net.Conn }

func (c no8BitMIMEConn) Write(p []byte) (int, error) {
	if q := bytes.ReplaceAll(p, []byte("250-8BITMIME\r\n"), nil); len(q) != len(p) {
		if _, err := c.Conn.Write(q); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// testLogger forwards go-smtp's internal error log to t.Logf while the test
// runs and drops it afterwards (t.Logf panics after the test completed).
type testLogger struct{ s *Server }

func (l testLogger) Printf(format string, v ...any) { l.log(fmt.Sprintf(format, v...)) }
func (l testLogger) Println(v ...any)               { l.log(strings.TrimSuffix(fmt.Sprintln(v...), "\n")) }

func (l testLogger) log(msg string) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if !l.s.closed {
		l.s.t.Logf("testsmtp: %s", msg)
	}
}

type backend struct{ s *Server }

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

// session is one SMTP session; go-smtp calls its methods from the
// connection's goroutine only.
type session struct {
	s      *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

var errDropped = errors.New("testsmtp: connection dropped after DATA")

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.s.opts.Username == "" || mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && !ss.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	if err := ss.s.fault(StageMail, ss.s.next(StageMail)); err != nil {
		return err
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err := ss.s.fault(StageRcpt, ss.s.next(StageRcpt)); err != nil {
		return err
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	n := ss.s.next(StageData)
	if ss.s.opts.DropAfterData != nil && ss.s.opts.DropAfterData(n) {
		// Close the socket under go-smtp: its reply write fails silently and
		// its next read ends the connection goroutine.
		_ = ss.conn.Conn().Close()
		return errDropped
	}
	if d := ss.s.opts.Delay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ss.s.done:
			t.Stop()
		}
	}
	if err := ss.s.fault(StageData, n); err != nil {
		return err
	}
	if ss.s.opts.No8BitMIME {
		for _, b := range data {
			if b > 127 {
				return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "8-bit data refused: this server is 7-bit only"}
			}
		}
	}
	ss.s.record(Message{From: ss.from, To: append([]string(nil), ss.to...), Data: data, ReceivedAt: time.Now()})
	return nil
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *session) Logout() error { return nil }

// selfSigned returns a fresh ECDSA P-256 certificate for 127.0.0.1, ::1 and
// localhost, valid for a day, and a pool trusting it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "testsmtp"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
