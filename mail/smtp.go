package mail

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"
)

// SMTPOptions tunes an SMTPSender. Zero values mean the documented defaults.
type SMTPOptions struct {
	// Timeout bounds the TCP connect and every single network read or write
	// afterwards (so every SMTP command's reply, the TLS handshake, each
	// write of the body: with BDAT a message goes out in one or two writes,
	// over TLS in records of up to 16 KB). Default 30s.
	Timeout time.Duration
	// MaxConns is the most connections open at once (in use or idle), which
	// is also the most messages in flight. Default 4.
	MaxConns int
	// IdleTimeout closes (QUIT) a pooled connection unused for that long.
	// Default 30s.
	IdleTimeout time.Duration
	// RootCAs verifies the server certificate instead of the system pool
	// (tests).
	RootCAs *x509.CertPool
	// HeloName is sent in EHLO; default: the host name of this machine.
	HeloName string
	// Logger receives connection and failure events; default: discarded.
	Logger *slog.Logger
}

// Defaults of SMTPOptions.
const (
	DefaultSMTPTimeout     = 30 * time.Second
	DefaultSMTPMaxConns    = 4
	DefaultSMTPIdleTimeout = 30 * time.Second
)

type tlsMode int

const (
	tlsRequired      tlsMode = iota // STARTTLS, refuse to continue without it
	tlsOpportunistic                // STARTTLS when offered
	tlsNone                         // never STARTTLS
	tlsImplicit                     // smtps: TLS from the first byte
)

// SMTPSender delivers messages over SMTP with a small pool of reused
// connections. It is safe for concurrent use; call Close when done.
//
// Context policy: ctx is honoured while Send waits for a free connection and
// while a new connection is set up (TCP connect, TLS, greeting, EHLO,
// STARTTLS, AUTH; cancelling aborts the half-open connection at once), and it
// is checked once more right before the transaction starts. From NOOP/MAIL
// FROM on, the transaction (MAIL, RCPT, DATA, body, final dot, RSET) runs to
// its end regardless of ctx, each step bounded by Timeout, so cancelling a
// job never breaks off a transaction half-way and never by itself creates an
// Ambiguous outcome.
type SMTPSender struct {
	host, addr string
	port       int
	mode       tlsMode
	user, pass string
	opts       SMTPOptions
	tlsConfig  *tls.Config
	log        *slog.Logger

	slots chan struct{} // one token per connection in use (MaxConns)

	mu     sync.Mutex
	idle   []*smtpConn // most recently used last
	timer  *time.Timer // reaps idle connections; nil when none is armed
	closed bool
}

// smtpConn is one dialed connection: a go-mail Client (its configuration) and
// the go-mail smtp.Client of the open session.
type smtpConn struct {
	mc        *gomail.Client
	sc        *gosmtp.Client
	raw       *deadlineConn
	idleSince time.Time
	reused    bool
}

var (
	_ Sender = (*SMTPSender)(nil)
	_ Sender = (*DirSender)(nil)
)

// NewSMTPSender parses an SMTP_URL and returns a sender for it. Forms:
//
//	smtp://user:pass@host:587                 STARTTLS, required (default port 587)
//	smtp://user:pass@host:587?tls=opportunistic  STARTTLS when offered, else plain
//	smtp://host:25?tls=none                   plain, never STARTTLS
//	smtps://user:pass@host:465                implicit TLS (default port 465)
//
// User and password are URL-decoded and optional; with them the sender
// authenticates with AUTH PLAIN (or LOGIN when that is all the server offers),
// and refuses to send the password over an unencrypted connection unless
// tls=none was chosen explicitly (or the server is localhost). Errors name
// SMTP_URL and never contain the password. No connection is made here.
func NewSMTPSender(rawURL string, opts SMTPOptions) (*SMTPSender, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL, password included
		}
		return nil, fmt.Errorf("mail: SMTP_URL is not a valid URL: %v", err)
	}
	s := &SMTPSender{host: u.Hostname()}
	switch u.Scheme {
	case "smtp":
		s.mode, s.port = tlsRequired, 587
	case "smtps":
		s.mode, s.port = tlsImplicit, 465
	default:
		return nil, fmt.Errorf("mail: SMTP_URL scheme %q is not smtp or smtps", u.Scheme)
	}
	if s.host == "" {
		return nil, errors.New("mail: SMTP_URL has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("mail: SMTP_URL port %q is not 1-65535", p)
		}
		s.port = n
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("mail: SMTP_URL must not have a path (got %q)", u.Path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("mail: SMTP_URL query: %v", err)
	}
	for k, vs := range q {
		if k != "tls" {
			return nil, fmt.Errorf("mail: SMTP_URL has unknown parameter %q (only tls is known)", k)
		}
		if len(vs) != 1 {
			return nil, errors.New("mail: SMTP_URL has more than one tls parameter")
		}
		switch v := vs[0]; {
		case s.mode == tlsImplicit && v != "" && v != "implicit":
			return nil, fmt.Errorf("mail: SMTP_URL tls=%q does not apply to smtps (TLS is implicit)", v)
		case s.mode == tlsImplicit:
		case v == "" || v == "required" || v == "starttls":
			s.mode = tlsRequired
		case v == "opportunistic":
			s.mode = tlsOpportunistic
		case v == "none":
			s.mode = tlsNone
		default:
			return nil, fmt.Errorf("mail: SMTP_URL tls=%q is not one of required, opportunistic, none", v)
		}
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	if s.user == "" && s.pass != "" {
		return nil, errors.New("mail: SMTP_URL has a password but no user")
	}

	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSMTPTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultSMTPMaxConns
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultSMTPIdleTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.opts = opts
	s.addr = net.JoinHostPort(s.host, strconv.Itoa(s.port))
	s.log = opts.Logger.With("smtp_server", s.addr)
	s.tlsConfig = &tls.Config{ServerName: s.host, RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12}
	s.slots = make(chan struct{}, opts.MaxConns)
	return s, nil
}

// Send delivers m to m.To: it takes an idle pooled connection (checked with
// NOOP, or on a CHUNKING server by the MAIL command, saving a round trip; a
// stale one is replaced by a fresh dial without error) or dials a new
// one, runs MAIL/RCPT and sends the message in one BDAT chunk when the
// server offers CHUNKING (RFC 3030), else with DATA (bodies 8bit when the
// server offers 8BITMIME, else quoted-printable; see Message.Bytes), and
// returns the server's final reply, e.g.
// "250 2.0.0 OK: queued". After success the connection is reset (RSET) and
// pooled; after any error it is closed. Failures are *SendError classified as
// follows: any 4xx -> Temporary; connect/TLS/EHLO/AUTH failures and a
// missing but required STARTTLS -> Temporary (Code set when the server
// replied); 5xx to MAIL or to the DATA command -> Permanent; 5xx to RCPT or
// to the final dot (BDAT: to the chunk) -> Permanent with Recipient; network
// error or timeout before the final dot (the whole chunk) was written ->
// Temporary; no reply after it was written -> Ambiguous. See SMTPSender for
// how ctx is honoured.
func (s *SMTPSender) Send(ctx context.Context, m *Message) (string, error) {
	enc, err := m.check(false)
	if err != nil {
		return "", &SendError{Kind: Permanent, Recipient: errors.Is(err, errBadRecipient), Err: err}
	}
	if err := ctx.Err(); err != nil {
		return "", &SendError{Kind: Temporary, Err: fmt.Errorf("send message %s: %w", m.MessageID, err)}
	}
	for attempt := 0; ; attempt++ {
		c, err := s.acquire(ctx)
		if err != nil {
			return "", err
		}
		if err := ctx.Err(); err != nil {
			s.release(c, true)
			return "", &SendError{Kind: Temporary, Err: fmt.Errorf("send message %s: %w", m.MessageID, err)}
		}
		has8bit, _ := c.sc.Extension("8BITMIME")
		if chunking, _ := c.sc.Extension("CHUNKING"); chunking {
			reply, healthy, stale, err := s.sendChunked(c, m, has8bit && enc == gomail.NoEncoding)
			s.release(c, healthy)
			if stale && attempt < s.opts.MaxConns {
				s.log.Debug("smtp pooled connection is stale, redialing", "err", err)
				continue
			}
			if err != nil {
				s.log.Warn("smtp send failed", "message_id", m.MessageID, "kind", err.Kind.String(), "code", err.Code, "err", err.Err)
				return "", err
			}
			return reply, nil
		}
		// A fresh Msg per attempt (go-mail records delivery state in it),
		// quoted-printable for a server without 8BITMIME.
		msg, err := m.build(!has8bit)
		if err != nil {
			s.release(c, true)
			return "", &SendError{Kind: Permanent, Err: err}
		}
		sendErr := c.mc.SendWithSMTPClient(c.sc, msg)
		if sendErr == nil {
			s.release(c, true)
			return "250 " + msg.ServerResponse(), nil
		}
		var ge *gomail.SendError
		if !errors.As(sendErr, &ge) {
			s.release(c, false)
			return "", &SendError{Kind: Temporary, Err: fmt.Errorf("send message %s via %s: %w", m.MessageID, s.addr, sendErr)}
		}
		if ge.Reason == gomail.ErrSMTPReset && msg.IsDelivered() {
			// Accepted; only the RSET afterwards failed. Drop the connection.
			s.release(c, false)
			return "250 " + msg.ServerResponse(), nil
		}
		if ge.Reason == gomail.ErrConnCheck && c.reused && attempt < s.opts.MaxConns {
			// A pooled connection died while idle; nothing was sent yet.
			s.log.Debug("smtp pooled connection is stale, redialing", "err", sendErr)
			s.release(c, false)
			continue
		}
		s.release(c, false)
		se := s.classify(ge, c.raw, m.MessageID)
		s.log.Warn("smtp send failed", "message_id", m.MessageID, "kind", se.Kind.String(), "code", se.Code, "err", se.Err)
		return "", se
	}
}

// sendChunked runs one transaction on c with BDAT (RFC 3030 CHUNKING):
// MAIL, RCPT, then the whole message as one "BDAT <size> LAST" chunk, and
// RSET. The message is written as it is, without the DATA command's
// byte-by-byte dot-stuffing on either side, which cost as much CPU as
// building the message. It classifies failures as Send documents for DATA,
// the chunk standing for the body and its reply for the reply to the final
// dot. On a reused connection a network error before any SMTP reply to MAIL
// means the pooled connection died while idle (nothing of the message was
// sent): stale is then true and the caller redials. healthy says whether c
// can go back to the pool: only after a delivery and a successful RSET.
func (s *SMTPSender) sendChunked(c *smtpConn, m *Message, eightBit bool) (reply string, healthy, stale bool, se *SendError) {
	fail := func(kind FailureKind, recipient bool, what string, err error) *SendError {
		// recipient: the failure concerns the address (RCPT), or, for
		// the chunk, only a 5xx reply does (as for DATA's final dot).
		se := &SendError{Kind: kind, Recipient: recipient, Err: fmt.Errorf("send message %s via %s: %s: %w", m.MessageID, s.addr, what, err)}
		var te *textproto.Error
		if errors.As(err, &te) {
			se.Code, se.Reply = te.Code, fmt.Sprintf("%03d %s", te.Code, te.Msg)
			if te.Code >= 500 && te.Code < 600 {
				se.Kind = Permanent
			} else if what == "BDAT" {
				se.Recipient = false
			}
		}
		return se
	}
	// The body first: a message that cannot be written fails before the
	// transaction starts. With 8bit bodies it is written straight from
	// them to the connection (see wire), else in quoted-printable to a
	// buffer.
	body, msg, err := m.chunk(eightBit)
	if err != nil {
		return "", false, false, &SendError{Kind: Permanent, Err: err}
	}
	from, err := msg.GetSender(false)
	if err != nil {
		return "", false, false, &SendError{Kind: Permanent, Err: fmt.Errorf("send message %s: %w", m.MessageID, err)}
	}
	rcpts, err := msg.GetRecipients()
	if err != nil {
		return "", false, false, &SendError{Kind: Permanent, Recipient: true, Err: fmt.Errorf("send message %s: %w", m.MessageID, err)}
	}
	if err := c.sc.Mail(from); err != nil {
		var te *textproto.Error
		if c.reused && !errors.As(err, &te) {
			return "", false, true, fail(Temporary, false, "pooled connection unusable", err)
		}
		return "", false, false, fail(Temporary, false, "MAIL FROM", err)
	}
	for _, rcpt := range rcpts {
		if err := c.sc.Rcpt(rcpt); err != nil {
			return "", false, false, fail(Temporary, true, "RCPT TO", err)
		}
	}
	w := c.sc.Text.W
	_, _ = fmt.Fprintf(w, "BDAT %d LAST\r\n", body.Len())
	writeChunk(w, body)
	if err := w.Flush(); err != nil {
		// The chunk did not reach the server whole: it cannot have been
		// accepted.
		return "", false, false, fail(Temporary, false, "connection lost before the end of the message was written", err)
	}
	_, text, err := c.sc.Text.ReadResponse(250)
	if err != nil {
		var te *textproto.Error
		if errors.As(err, &te) {
			return "", false, false, fail(Temporary, true, "BDAT", err) // 4xx temporary, 5xx permanent
		}
		if c.raw.lastWriteFailed.Load() {
			return "", false, false, fail(Temporary, false, "connection lost before the end of the message was written", err)
		}
		return "", false, false, fail(Ambiguous, false, "no reply after the whole message was written; the server may have accepted it", err)
	}
	// Accepted. If only the RSET afterwards fails, the connection is
	// dropped.
	return "250 " + text, c.sc.Reset() == nil, false, nil
}

// chunkBuffers holds the buffers in which writeChunk assembles messages.
var chunkBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeChunk writes body to w (the connection's 4 KB bufio.Writer). A
// wire body is assembled in a pooled buffer first and handed over whole:
// written line by line it would go out in 4 KB syscalls, which cost a
// tenth of a digest's CPU. A write error shows at w's Flush.
func writeChunk(w *bufio.Writer, body chunkBody) {
	if _, ok := body.(*wire); !ok {
		_, _ = body.WriteTo(w) // a bytes.Buffer writes itself whole
		return
	}
	buf := chunkBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(body.Len())
	_, _ = body.WriteTo(buf)
	_, _ = w.Write(buf.Bytes())
	if buf.Cap() <= 4<<20 { // a rare huge message is not kept
		chunkBuffers.Put(buf)
	}
}

// classify turns go-mail's SendError for a transaction into a *SendError.
func (s *SMTPSender) classify(ge *gomail.SendError, raw *deadlineConn, id string) *SendError {
	code := ge.ErrorCode()
	se := &SendError{Kind: Temporary, Code: code, Reply: replyOf(ge, code), Err: fmt.Errorf("send message %s via %s: %w", id, s.addr, ge)}
	switch {
	case code >= 400 && code < 500:
		se.Recipient = ge.Reason == gomail.ErrSMTPRcptTo
	case code >= 500 && code < 600:
		se.Kind = Permanent
		se.Recipient = ge.Reason == gomail.ErrSMTPRcptTo || ge.Reason == gomail.ErrSMTPDataClose
	case ge.Reason == gomail.ErrSMTPDataClose:
		// No reply to the final dot. If the write that carried the dot
		// failed, the server cannot have accepted the message.
		if raw != nil && raw.lastWriteFailed.Load() {
			se.Err = fmt.Errorf("send message %s via %s: connection lost before the end of the message was written: %w", id, s.addr, ge)
		} else {
			se.Kind = Ambiguous
			se.Err = fmt.Errorf("send message %s via %s: no reply after the whole message was written; the server may have accepted it: %w", id, s.addr, ge)
		}
	case ge.Reason == gomail.ErrGetSender || ge.Reason == gomail.ErrGetRcpts || ge.Reason == gomail.ErrNoUnencoded:
		se.Kind = Permanent
	}
	return se
}

// replyOf extracts the server reply ("550 5.1.1 ...") from go-mail's
// SendError text, which is the only place go-mail exposes it: "<stage>:
// <reply>[, affected recipient(s): ...][, affected message ID: ...]".
func replyOf(ge *gomail.SendError, code int) string {
	if code == 0 {
		return ""
	}
	text := ge.Error()
	i := strings.Index(text, strconv.Itoa(code)+" ")
	if i < 0 {
		return ""
	}
	text = text[i:]
	for _, sep := range []string{", affected recipient(s): ", ", affected message ID: "} {
		if j := strings.Index(text, sep); j >= 0 {
			text = text[:j]
		}
	}
	return text
}

// acquire returns a connection for one transaction and holds a slot until
// release. It reuses the most recently used idle connection, else dials.
func (s *SMTPSender) acquire(ctx context.Context) (*smtpConn, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &SendError{Kind: Temporary, Err: fmt.Errorf("wait for a connection to SMTP server %s: %w", s.addr, ctx.Err())}
	}
	var expired []*smtpConn
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.slots
		return nil, &SendError{Kind: Temporary, Err: fmt.Errorf("send via SMTP server %s: sender is closed", s.addr)}
	}
	now := time.Now()
	var c *smtpConn
	for len(s.idle) > 0 && c == nil {
		last := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		if now.Sub(last.idleSince) < s.opts.IdleTimeout {
			c = last
		} else {
			expired = append(expired, last)
		}
	}
	s.mu.Unlock()
	for _, e := range expired {
		s.quit(e)
	}
	if c != nil {
		c.reused = true
		return c, nil
	}
	c, err := s.dial(ctx)
	if err != nil {
		<-s.slots
		s.log.Warn("smtp connect failed", "err", err)
		return nil, err
	}
	return c, nil
}

// release gives the slot back; a healthy connection goes to the idle pool,
// any other is closed.
func (s *SMTPSender) release(c *smtpConn, healthy bool) {
	defer func() { <-s.slots }()
	if !healthy {
		_ = c.raw.Close()
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.quit(c)
		return
	}
	c.idleSince = time.Now()
	s.idle = append(s.idle, c)
	if s.timer == nil {
		s.timer = time.AfterFunc(s.opts.IdleTimeout, s.reap)
	}
	s.mu.Unlock()
}

// reap closes connections idle for IdleTimeout and re-arms itself for the
// next one to expire.
func (s *SMTPSender) reap() {
	s.mu.Lock()
	s.timer = nil
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	var keep, expired []*smtpConn
	var next time.Duration
	for _, c := range s.idle {
		left := s.opts.IdleTimeout - now.Sub(c.idleSince)
		if left <= 0 {
			expired = append(expired, c)
			continue
		}
		keep = append(keep, c)
		if next == 0 || left < next {
			next = left
		}
	}
	s.idle = keep
	if len(keep) > 0 {
		s.timer = time.AfterFunc(next, s.reap)
	}
	s.mu.Unlock()
	for _, c := range expired {
		s.log.Debug("smtp closing idle connection")
		s.quit(c)
	}
}

// quit ends a healthy connection politely (QUIT, bounded by Timeout).
func (s *SMTPSender) quit(c *smtpConn) {
	_ = c.sc.Quit()
	_ = c.raw.Close()
}

// Close closes the idle connections (QUIT) and makes later Sends fail with a
// Temporary error. Transactions in flight finish; their connections are
// closed when they do. Close is idempotent and always returns nil.
func (s *SMTPSender) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	idle := s.idle
	s.idle = nil
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	for _, c := range idle {
		s.quit(c)
	}
	return nil
}

// dial opens, secures and authenticates a new connection. ctx aborts it at
// any point until it returns.
func (s *SMTPSender) dial(ctx context.Context) (*smtpConn, error) {
	var raw *deadlineConn
	var stop func() bool
	dialFn := func(dctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: s.opts.Timeout}
		nc, err := d.DialContext(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		raw = &deadlineConn{Conn: nc, timeout: s.opts.Timeout}
		// The outer ctx, not dctx: go-mail cancels dctx when dialing ends.
		stop = context.AfterFunc(ctx, raw.abort)
		if s.mode != tlsImplicit {
			return raw, nil
		}
		tc := tls.Client(raw, s.tlsConfig.Clone())
		if err := tc.HandshakeContext(dctx); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		return tc, nil
	}

	policy := gomail.TLSMandatory
	switch s.mode {
	case tlsOpportunistic:
		policy = gomail.TLSOpportunistic
	case tlsNone, tlsImplicit: // implicit: dialFn already did TLS
		policy = gomail.NoTLS
	}
	options := []gomail.Option{
		gomail.WithPort(s.port),
		gomail.WithTimeout(s.opts.Timeout),
		gomail.WithDialContextFunc(dialFn),
		gomail.WithTLSConfig(s.tlsConfig.Clone()),
		gomail.WithTLSPolicy(policy),
	}
	if s.opts.HeloName != "" {
		options = append(options, gomail.WithHELO(s.opts.HeloName))
	}
	if s.user != "" {
		options = append(options, gomail.WithSMTPAuthCustom(&chooseAuth{
			user: s.user, pass: s.pass, host: s.host, allowUnencrypted: s.mode == tlsNone,
		}))
	}
	mc, err := gomail.NewClient(s.host, options...)
	if err != nil {
		return nil, &SendError{Kind: Temporary, Err: fmt.Errorf("configure SMTP client for %s: %w", s.addr, err)}
	}
	sc, err := mc.DialToSMTPClientWithContext(ctx)
	aborted := stop != nil && !stop()
	if err == nil && aborted {
		err = ctx.Err()
	}
	if err != nil {
		if raw != nil {
			_ = raw.Close() // go-mail leaves the socket open on EHLO/TLS/AUTH errors
		}
		if ctxErr := ctx.Err(); ctxErr != nil && (aborted || raw == nil) {
			return nil, &SendError{Kind: Temporary, Err: fmt.Errorf("connect to SMTP server %s: %w", s.addr, ctxErr)}
		}
		return nil, s.dialError(err)
	}
	s.log.Debug("smtp connection opened", "tls", s.mode != tlsNone)
	return &smtpConn{mc: mc, sc: sc, raw: raw}, nil
}

// dialError classifies a failure to set up a connection: always Temporary,
// since no message was offered yet.
func (s *SMTPSender) dialError(err error) *SendError {
	se := &SendError{Kind: Temporary, Err: fmt.Errorf("connect to SMTP server %s: %w", s.addr, err)}
	var te *textproto.Error
	if errors.As(err, &te) {
		se.Code = te.Code
		se.Reply = fmt.Sprintf("%03d %s", te.Code, te.Msg)
	}
	if strings.Contains(err.Error(), "does not support STARTTLS") {
		se.Err = fmt.Errorf("connect to SMTP server %s: the server does not offer STARTTLS, which SMTP_URL requires "+
			"(add ?tls=opportunistic or ?tls=none to SMTP_URL to allow unencrypted delivery): %w", s.addr, err)
	}
	return se
}
