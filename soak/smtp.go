package soak

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// newSMTPServer returns a go-smtp server for be with quiet logs.
func newSMTPServer(be smtp.Backend) *smtp.Server {
	srv := smtp.NewServer(be)
	srv.Domain = "soak.localhost"
	srv.ReadTimeout, srv.WriteTimeout = 60*time.Second, 60*time.Second
	srv.MaxMessageBytes = 8 << 20
	srv.MaxRecipients = 10
	srv.ErrorLog = log.New(io.Discard, "", 0)
	return srv
}

// readMessageID consumes a message and returns its Message-ID without the
// angle brackets.
func readMessageID(r io.Reader) string {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		_, _ = io.Copy(io.Discard, r)
		return ""
	}
	_, _ = io.Copy(io.Discard, msg.Body)
	return strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>")
}

// ---- recording sink ----

// mailSink accepts every message, records how often each Message-ID
// arrived, and may hold each reply for delay (a slow server).
type mailSink struct {
	delay time.Duration

	mu     sync.Mutex
	ids    map[string]int
	total  int
	onData func(total int)
}

// NewSession implements smtp.Backend.
func (s *mailSink) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s}, nil }

func (s *mailSink) snapshot() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.ids))
	for k, v := range s.ids {
		out[k] = v
	}
	return out, s.total
}

type sinkSession struct{ s *mailSink }

func (x *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (x *sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (x *sinkSession) Reset()                               {}
func (x *sinkSession) Logout() error                        { return nil }

// Data records the message as received once its body is complete (before
// the reply: a client killed now has handed the message over), then waits
// delay and accepts it.
func (x *sinkSession) Data(r io.Reader) error {
	id := readMessageID(r)
	x.s.mu.Lock()
	x.s.ids[id]++
	x.s.total++
	total, cb := x.s.total, x.s.onData
	x.s.mu.Unlock()
	if cb != nil {
		cb(total)
	}
	if x.s.delay > 0 {
		time.Sleep(x.s.delay)
	}
	return nil
}

// startSink starts a recording sink on loopback; it returns the SMTP_URL
// for it (plain, tls=none) and a stop function.
func startSink(delay time.Duration) (*mailSink, string, func(), error) {
	s := &mailSink{delay: delay, ids: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := newSMTPServer(s)
	go func() { _ = srv.Serve(ln) }()
	return s, "smtp://" + ln.Addr().String() + "?tls=none", func() { _ = srv.Close() }, nil
}

// ---- chaos server ----

// Fault names of the chaos SMTP server.
const (
	chaosDelay      = "reply delayed (up to 2 s)"
	chaosTLS        = "STARTTLS offered but the handshake fails (untrusted certificate)"
	chaosMail421    = "421 at MAIL"
	chaosMail451    = "451 at MAIL"
	chaosMail452    = "452 at MAIL"
	chaosDropMail   = "connection dropped at MAIL (before DATA)"
	chaosRcpt451    = "451 at RCPT"
	chaosRcpt452    = "452 at RCPT"
	chaosRcpt550    = "550 at RCPT (recipient refused)"
	chaosDropRcpt   = "connection dropped at RCPT (before DATA)"
	chaosData451    = "451 after DATA"
	chaosData554    = "554 after DATA (recipient refused)"
	chaosDropAfter  = "connection dropped after DATA without a reply"
	chaosAccepted   = "accepted (250)"
	fateRcpt550     = "rcpt550"
	fateData554     = "data554"
	chaosTLSPhase   = 8 * time.Second
	chaosMaxDelay   = 2 * time.Second
	chaosDelayShare = 0.25
)

// chaosSMTP is a mail server that misbehaves at random (seeded): temporary
// refusals at every stage, permanent refusals for some recipients (decided
// per address, so a recipient's fate is consistent), slow replies, dropped
// connections before and after DATA, and for its first seconds a STARTTLS
// that cannot be negotiated. It records what it did to every message.
type chaosSMTP struct {
	seed uint64

	mu           sync.Mutex
	rng          *mrand.Rand
	first        time.Time
	conns        int
	faults       map[string]int
	accepted     map[string]int    // Message-ID → 250 replies
	dropped      map[string]int    // Message-ID → dropped after the whole body
	rejectedData map[string]int    // Message-ID → refused after the body
	msgRcpt      map[string]string // Message-ID → recipient
	fiveXX       map[string]string // recipient → the 5xx reply it got
}

func newChaosSMTP(seed uint64) *chaosSMTP {
	return &chaosSMTP{seed: seed, rng: mrand.New(mrand.NewPCG(seed, 0x5eed)), faults: map[string]int{},
		accepted: map[string]int{}, dropped: map[string]int{}, rejectedData: map[string]int{},
		msgRcpt: map[string]string{}, fiveXX: map[string]string{}}
}

// fate decides, from the address alone, whether a recipient is refused
// permanently: about 6% at RCPT (550), 4% after DATA (554).
func (c *chaosSMTP) fate(rcpt string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", c.seed, strings.ToLower(rcpt))
	switch v := h.Sum64() % 100; {
	case v < 6:
		return fateRcpt550
	case v < 10:
		return fateData554
	}
	return ""
}

func (c *chaosSMTP) roll() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64()
}

func (c *chaosSMTP) count(fault string) {
	c.mu.Lock()
	c.faults[fault]++
	c.mu.Unlock()
}

// maybeDelay holds a reply for a random time up to 2 s, a quarter of the time.
func (c *chaosSMTP) maybeDelay() {
	c.mu.Lock()
	d := time.Duration(0)
	if c.rng.Float64() < chaosDelayShare {
		d = time.Duration(c.rng.Int64N(int64(chaosMaxDelay)))
		c.faults[chaosDelay]++
	}
	c.mu.Unlock()
	time.Sleep(d)
}

func smtpErr(code int, enh smtp.EnhancedCode, msg string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
}

// NewSession implements smtp.Backend.
func (c *chaosSMTP) NewSession(conn *smtp.Conn) (smtp.Session, error) {
	return &chaosSession{c: c, conn: conn}, nil
}

type chaosSession struct {
	c    *chaosSMTP
	conn *smtp.Conn
	rcpt string
}

func (s *chaosSession) drop() error {
	_ = s.conn.Conn().Close()
	return smtpErr(421, smtp.EnhancedCode{4, 4, 2}, "connection dropped")
}

func (s *chaosSession) Mail(from string, _ *smtp.MailOptions) error {
	s.c.maybeDelay()
	switch v := s.c.roll(); {
	case v < 0.02:
		s.c.count(chaosDropMail)
		return s.drop()
	case v < 0.045:
		s.c.count(chaosMail421)
		return smtpErr(421, smtp.EnhancedCode{4, 3, 2}, "service not available, try later")
	case v < 0.07:
		s.c.count(chaosMail451)
		return smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "local error in processing")
	case v < 0.09:
		s.c.count(chaosMail452)
		return smtpErr(452, smtp.EnhancedCode{4, 3, 1}, "insufficient system storage")
	}
	return nil
}

func (s *chaosSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.c.maybeDelay()
	s.rcpt = to
	if s.c.fate(to) == fateRcpt550 {
		s.c.count(chaosRcpt550)
		s.c.mu.Lock()
		s.c.fiveXX[strings.ToLower(to)] = "550 5.1.1 no such user"
		s.c.mu.Unlock()
		return smtpErr(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
	}
	switch v := s.c.roll(); {
	case v < 0.02:
		s.c.count(chaosDropRcpt)
		return s.drop()
	case v < 0.05:
		s.c.count(chaosRcpt451)
		return smtpErr(451, smtp.EnhancedCode{4, 7, 1}, "greylisted, try again later")
	case v < 0.07:
		s.c.count(chaosRcpt452)
		return smtpErr(452, smtp.EnhancedCode{4, 2, 2}, "mailbox full")
	}
	return nil
}

func (s *chaosSession) Data(r io.Reader) error {
	id := readMessageID(r)
	rcpt := strings.ToLower(s.rcpt)
	c := s.c
	c.mu.Lock()
	c.msgRcpt[id] = rcpt
	c.mu.Unlock()
	c.maybeDelay()
	if c.fate(rcpt) == fateData554 {
		c.mu.Lock()
		c.faults[chaosData554]++
		c.rejectedData[id]++
		c.fiveXX[rcpt] = "554 5.7.1 message refused for this recipient"
		c.mu.Unlock()
		return smtpErr(554, smtp.EnhancedCode{5, 7, 1}, "message refused for this recipient")
	}
	switch v := c.roll(); {
	case v < 0.015:
		c.mu.Lock()
		c.faults[chaosDropAfter]++
		c.dropped[id]++
		c.mu.Unlock()
		_ = s.conn.Conn().Close()
		return smtpErr(421, smtp.EnhancedCode{4, 4, 2}, "connection dropped")
	case v < 0.075:
		c.mu.Lock()
		c.faults[chaosData451]++
		c.rejectedData[id]++
		c.mu.Unlock()
		return smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "temporary failure after DATA")
	}
	c.mu.Lock()
	c.accepted[id]++
	c.faults[chaosAccepted]++
	c.mu.Unlock()
	return nil
}

func (s *chaosSession) Reset()        {}
func (s *chaosSession) Logout() error { return nil }

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

// start listens on loopback. For chaosTLSPhase after the first connection,
// connections go to a server that offers STARTTLS with a self-signed
// certificate the client cannot verify; afterwards to one that offers
// neither STARTTLS nor AUTH. It returns the SMTP_URL (tls=opportunistic)
// and a stop function.
func (c *chaosSMTP) start() (string, func(), error) {
	cert, err := selfSigned()
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	plain, withTLS := newSMTPServer(c), newSMTPServer(c)
	withTLS.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	plainL, tlsL := newChanListener(ln.Addr()), newChanListener(ln.Addr())
	go func() { _ = plain.Serve(plainL) }()
	go func() { _ = withTLS.Serve(tlsL) }()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			if c.first.IsZero() {
				c.first = time.Now()
			}
			c.conns++
			broken := time.Since(c.first) < chaosTLSPhase
			if broken {
				c.faults[chaosTLS]++
			}
			c.mu.Unlock()
			target := plainL
			if broken {
				target = tlsL
			}
			select {
			case target.ch <- conn:
			case <-target.done:
				conn.Close()
				return
			}
		}
	}()
	stop := func() {
		ln.Close()
		_ = plain.Close()
		_ = withTLS.Close()
		plainL.Close()
		tlsL.Close()
	}
	return "smtp://" + ln.Addr().String() + "?tls=opportunistic", stop, nil
}

// selfSigned makes a throwaway certificate for 127.0.0.1.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "soak.localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
