// Package smtp is the one fake mail server of tests, the benchmark and the
// soak: a real SMTP server (github.com/emersion/go-smtp) in the process,
// listening on 127.0.0.1, so mail code can be tested over the wire: STARTTLS
// or implicit TLS with an in-process self-signed certificate, AUTH PLAIN,
// scripted or computed replies per stage (errors, slow replies, connections
// dropped), a first phase whose STARTTLS cannot be trusted, and a counting
// mode that keeps no copies for load.
package smtp

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"followfeed/internal/fake/cert"
)

// Stages passed to Options.Fault and Options.Answer.
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
	Fault func(stage string, n int) *gosmtp.SMTPError
	// Answer, when set, decides every reply Fault (and the other options)
	// let through, from the whole command (Call): an error, a dropped
	// connection, or acceptance. It may sleep (a slow reply) and may keep
	// its own accounting; it is called from many connections at once.
	Answer func(Call) Answer
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
	// NoChunking makes the server leave CHUNKING out of its EHLO reply
	// (go-smtp always offers it; removed on the wire like No8BitMIME), so
	// a client sends its messages with DATA instead of BDAT.
	NoChunking bool
	// Delay is slept before every reply to the final dot (before Fault's
	// StageData error is sent, and before an accepted message is recorded).
	Delay time.Duration
	// UntrustedTLSFor, for this long after the first connection, serves
	// connections with a STARTTLS whose certificate nobody trusts (not in
	// CertPool), so a verifying client's handshake fails; later
	// connections get the server the other options describe.
	UntrustedTLSFor time.Duration
	// Discard keeps no copy of accepted messages (Messages and
	// WaitMessages see none; Accepted counts them): a load sink.
	Discard bool
	// NoLineLimit skips go-smtp's per-byte line-length check, a relay's
	// policy, so a load sink costs less CPU next to the code it measures.
	NoLineLimit bool
	// Log receives go-smtp's internal error log; nil drops it. Start sends
	// it to t.Logf while the test runs.
	Log func(string)
}

// Call is one command the server is about to answer, for Options.Answer.
type Call struct {
	Stage string   // StageMail, StageRcpt or StageData
	N     int      // the stage's count since Start, from 1, as for Fault
	From  string   // MAIL FROM address (at StageMail, the one being given)
	Rcpt  string   // at StageRcpt, the recipient being given
	To    []string // recipients accepted so far in this transaction
	Data  []byte   // at StageData, the whole body as received
}

// Answer is Options.Answer's decision. The zero value accepts.
type Answer struct {
	// Err is the reply instead of acceptance.
	Err *gosmtp.SMTPError
	// Drop closes the connection without any reply (at StageData: after
	// the whole body, so the client cannot know the outcome).
	Drop bool
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

	opts    Options
	srv     *gosmtp.Server
	bad     *gosmtp.Server // the UntrustedTLSFor phase's server, or nil
	ln      net.Listener
	pool    *x509.CertPool
	done    chan struct{}
	served  chan struct{}
	closing sync.Once

	mu        sync.Mutex
	msgs      []Message
	accepted  int
	changed   chan struct{} // closed and replaced whenever msgs grows
	conns     int
	untrusted int
	first     time.Time
	counters  map[string]int
	closed    bool
}

// Start starts a server on 127.0.0.1 with a random port. It fails the test
// when the server cannot start and closes the server (listener and every open
// connection) in t.Cleanup. go-smtp's error log goes to t.Logf unless
// opts.Log is set.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	var s *Server
	if opts.Log == nil {
		opts.Log = func(msg string) {
			// t.Logf panics after the test completed: log only while open.
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.closed {
				t.Logf("fake smtp: %s", msg)
			}
		}
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("fake smtp: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a server on 127.0.0.1 with a random port; the caller Closes it.
func New(opts Options) (*Server, error) {
	s := &Server{
		opts:     opts,
		done:     make(chan struct{}),
		served:   make(chan struct{}),
		changed:  make(chan struct{}),
		counters: map[string]int{},
	}

	var tlsCfg *tls.Config
	if opts.TLS || opts.ImplicitTLS {
		c, pool, err := cert.SelfSigned("fake smtp")
		if err != nil {
			return nil, fmt.Errorf("generate certificate: %w", err)
		}
		s.pool = pool
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.Addr = ln.Addr().String()
	s.ln = ln
	var l net.Listener = &countingListener{Listener: ln, s: s}

	s.srv = s.newServer()
	if opts.TLS || opts.ImplicitTLS {
		// With ImplicitTLS every connection is already TLS, so go-smtp does
		// not advertise STARTTLS; the config only matters for STARTTLS.
		s.srv.TLSConfig = tlsCfg
	}
	var badL *chanListener
	if opts.UntrustedTLSFor > 0 {
		c, _, err := cert.SelfSigned("untrusted fake smtp")
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("generate certificate: %w", err)
		}
		s.bad = s.newServer()
		s.bad.TLSConfig = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
		good := newChanListener(ln.Addr())
		badL = newChanListener(ln.Addr())
		go s.route(l, good, badL)
		l = good
	}
	if opts.ImplicitTLS {
		l = tls.NewListener(l, tlsCfg)
	}
	go func() {
		defer close(s.served)
		if badL != nil {
			go func() { _ = s.bad.Serve(badL) }()
		}
		_ = s.srv.Serve(l)
	}()
	return s, nil
}

// newServer is a go-smtp server for this fake's sessions.
func (s *Server) newServer() *gosmtp.Server {
	srv := gosmtp.NewServer(&backend{s: s})
	srv.Domain = "fake-smtp.localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.MaxMessageBytes = 32 << 20
	if s.opts.NoLineLimit {
		srv.MaxLineLength = 0
	}
	srv.ErrorLog = logger{s: s}
	return srv
}

// route hands each accepted connection to the untrusted-TLS server during
// the UntrustedTLSFor phase after the first connection, to good afterwards.
func (s *Server) route(l net.Listener, good, bad *chanListener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			good.Close()
			bad.Close()
			return
		}
		s.mu.Lock()
		if s.first.IsZero() {
			s.first = time.Now()
		}
		target := good
		if time.Since(s.first) < s.opts.UntrustedTLSFor {
			target = bad
			s.untrusted++
		}
		s.mu.Unlock()
		select {
		case target.ch <- conn:
		case <-target.done:
			conn.Close()
			return
		}
	}
}

// Close stops the server: the listener and every open connection. It is
// safe to call more than once.
func (s *Server) Close() {
	s.closing.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		_ = s.srv.Close()
		if s.bad != nil {
			_ = s.bad.Close()
		}
		// go-smtp's Close only closes listeners Serve has registered already;
		// closing ours too covers a Serve goroutine that has not got that far.
		_ = s.ln.Close()
		<-s.served
	})
}

// CertPool returns a pool holding the server's self-signed certificate (valid
// for 127.0.0.1 and localhost), or nil when neither TLS nor ImplicitTLS is set.
func (s *Server) CertPool() *x509.CertPool { return s.pool }

// URL returns an SMTP_URL for this server: "smtp://127.0.0.1:port?tls=none"
// for a plain server, "smtp://127.0.0.1:port" (STARTTLS required) with TLS,
// "smtps://127.0.0.1:port" with ImplicitTLS; with user:pass@ when Username is
// set. (With UntrustedTLSFor, a client should ask for tls=opportunistic.)
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
// dot was accepted (none with Discard).
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
			t.Fatalf("fake smtp: got %d messages after %v, want %d", got, timeout, n)
			return nil
		}
	}
}

// Accepted returns how many messages the server accepted so far (also
// with Discard).
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Connections returns how many TCP connections the server accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// UntrustedTLSConnections returns how many connections went to the
// untrusted STARTTLS of the UntrustedTLSFor phase.
func (s *Server) UntrustedTLSConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.untrusted
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
	s.accepted++
	if s.opts.Discard {
		return
	}
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
		var drop [][]byte
		if l.s.opts.No8BitMIME {
			drop = append(drop, []byte("250-8BITMIME\r\n"))
		}
		if l.s.opts.NoChunking {
			drop = append(drop, []byte("250-CHUNKING\r\n"))
		}
		if len(drop) > 0 {
			c = dropCapsConn{Conn: c, lines: drop}
		}
	}
	return c, err
}

// chanListener hands connections accepted elsewhere to a server's Serve.
type chanListener struct {
	ch   chan net.Conn
	addr net.Addr
	once sync.Once
	done chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{ch: make(chan net.Conn), addr: addr, done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// dropCapsConn removes lines (8BITMIME, CHUNKING) from the server's EHLO
// reply. Neither is ever the reply's last line (SIZE is), so the reply
// stays well-formed.
type dropCapsConn struct {
	net.Conn
	lines [][]byte
}

func (c dropCapsConn) Write(p []byte) (int, error) {
	q := p
	for _, l := range c.lines {
		q = bytes.ReplaceAll(q, l, nil)
	}
	if len(q) != len(p) {
		if _, err := c.Conn.Write(q); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// logger forwards go-smtp's internal error log to Options.Log.
type logger struct{ s *Server }

func (l logger) Printf(format string, v ...any) { l.log(fmt.Sprintf(format, v...)) }
func (l logger) Println(v ...any)               { l.log(strings.TrimSuffix(fmt.Sprintln(v...), "\n")) }

func (l logger) log(msg string) {
	if l.s.opts.Log != nil {
		l.s.opts.Log(msg)
	}
}

type backend struct{ s *Server }

func (b *backend) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

// session is one SMTP session; go-smtp calls its methods from the
// connection's goroutine only.
type session struct {
	s      *Server
	conn   *gosmtp.Conn
	authed bool
	from   string
	to     []string
}

var errDropped = errors.New("fake smtp: connection dropped")

// drop closes the socket under go-smtp: its reply write fails silently and
// its next read ends the connection goroutine.
func (ss *session) drop() error {
	_ = ss.conn.Conn().Close()
	return errDropped
}

// answer applies Options.Answer to c.
func (ss *session) answer(c Call) error {
	if ss.s.opts.Answer == nil {
		return nil
	}
	a := ss.s.opts.Answer(c)
	switch {
	case a.Drop:
		return ss.drop()
	case a.Err != nil:
		return a.Err
	}
	return nil
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.s.opts.Username == "" || mech != sasl.Plain {
		return nil, gosmtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return gosmtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *gosmtp.MailOptions) error {
	if ss.s.opts.Username != "" && !ss.authed {
		return &gosmtp.SMTPError{Code: 530, EnhancedCode: gosmtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	n := ss.s.next(StageMail)
	if err := ss.s.fault(StageMail, n); err != nil {
		return err
	}
	if err := ss.answer(Call{Stage: StageMail, N: n, From: from}); err != nil {
		return err
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	n := ss.s.next(StageRcpt)
	if err := ss.s.fault(StageRcpt, n); err != nil {
		return err
	}
	if err := ss.answer(Call{Stage: StageRcpt, N: n, From: ss.from, Rcpt: to, To: ss.to}); err != nil {
		return err
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	var data []byte
	var err error
	if ss.s.opts.Discard && ss.s.opts.Answer == nil && !ss.s.opts.No8BitMIME {
		_, err = io.Copy(io.Discard, r)
	} else {
		data, err = io.ReadAll(r)
	}
	if err != nil {
		return err
	}
	n := ss.s.next(StageData)
	if ss.s.opts.DropAfterData != nil && ss.s.opts.DropAfterData(n) {
		return ss.drop()
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
				return &gosmtp.SMTPError{Code: 554, EnhancedCode: gosmtp.EnhancedCode{5, 6, 0}, Message: "8-bit data refused: this server is 7-bit only"}
			}
		}
	}
	if err := ss.answer(Call{Stage: StageData, N: n, From: ss.from, To: ss.to, Data: data}); err != nil {
		return err
	}
	ss.s.record(Message{From: ss.from, To: append([]string(nil), ss.to...), Data: data, ReceivedAt: time.Now()})
	return nil
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *session) Logout() error { return nil }
