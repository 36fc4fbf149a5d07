package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testwait"
)

const wait = 5 * time.Second

func newSender(t *testing.T, rawURL string, opts SMTPOptions) *SMTPSender {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	s, err := NewSMTPSender(rawURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func msgN(t *testing.T, i int) *Message {
	t.Helper()
	m := sampleMessage(t, fmt.Sprintf("digest.%d.daily-2026-11-29@followfeed.example", i))
	m.To = fmt.Sprintf("reader%d@example.org", i)
	return m
}

func mustBytes(t *testing.T, m *Message) []byte {
	t.Helper()
	b, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sendErr asserts err is a *SendError of kind and returns it.
func sendErr(t *testing.T, err error, kind FailureKind) *SendError {
	t.Helper()
	var se *SendError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want *SendError", err, err)
	}
	if se.Kind != kind {
		t.Fatalf("Kind = %v, want %v (%v)", se.Kind, kind, err)
	}
	return se
}

func smtpErr(code int, enh smtp.EnhancedCode, msg string) *smtp.SMTPError {
	return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
}

// transports runs f with a server offering CHUNKING (the sender uses BDAT)
// and with one that does not (DATA).
func transports(t *testing.T, f func(t *testing.T, noChunking bool)) {
	for _, noChunking := range []bool{false, true} {
		t.Run(map[bool]string{false: "BDAT", true: "DATA"}[noChunking], func(t *testing.T) { f(t, noChunking) })
	}
}

func TestSMTPPlainDelivery(t *testing.T) { transports(t, testSMTPPlainDelivery) }

func testSMTPPlainDelivery(t *testing.T, noChunking bool) {
	srv := fakesmtp.Start(t, fakesmtp.Options{NoChunking: noChunking})
	s := newSender(t, srv.URL(), SMTPOptions{HeloName: "sender.followfeed.example"})
	m := msgN(t, 1)
	reply, err := s.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply, "250 ") {
		t.Errorf("reply = %q, want 250 ...", reply)
	}
	got := srv.WaitMessages(t, 1, wait)
	if len(got) != 1 {
		t.Fatalf("%d messages arrived", len(got))
	}
	if !bytes.Equal(got[0].Data, mustBytes(t, m)) {
		t.Errorf("received data differs from Bytes():\n%s\n----\n%s", got[0].Data, mustBytes(t, m))
	}
	if got[0].From != "digests@followfeed.example" || len(got[0].To) != 1 || got[0].To[0] != "reader1@example.org" {
		t.Errorf("envelope = %q -> %q", got[0].From, got[0].To)
	}
}

func TestSMTPConnectionReuse(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{})
	s := newSender(t, srv.URL(), SMTPOptions{})
	for i := range 10 {
		if _, err := s.Send(context.Background(), msgN(t, i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	got := srv.WaitMessages(t, 10, wait)
	if n := srv.Connections(); n != 1 {
		t.Errorf("10 sequential sends used %d connections, want 1", n)
	}
	for i, g := range got {
		if !bytes.Equal(g.Data, mustBytes(t, msgN(t, i))) {
			t.Errorf("message %d differs", i)
		}
	}
}

func TestSMTPConcurrentPoolLimit(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{Delay: 20 * time.Millisecond})
	s := newSender(t, srv.URL(), SMTPOptions{MaxConns: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Go(func() {
			if _, err := s.Send(context.Background(), msgN(t, i)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	srv.WaitMessages(t, 24, wait)
	if n := srv.Connections(); n > 3 {
		t.Errorf("%d connections, want at most MaxConns=3", n)
	}
}

func TestSMTPIdleTimeoutClosesConnections(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{})
	s := newSender(t, srv.URL(), SMTPOptions{IdleTimeout: 100 * time.Millisecond})
	if _, err := s.Send(context.Background(), msgN(t, 1)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, wait, "the idle connection to be closed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.idle) == 0
	})
	if _, err := s.Send(context.Background(), msgN(t, 2)); err != nil {
		t.Fatal(err)
	}
	if n := srv.Connections(); n != 2 {
		t.Errorf("Connections = %d, want 2 (a fresh one after the idle one was closed)", n)
	}
}

func TestSMTPStaleConnectionIsRedialed(t *testing.T) {
	// A hand-made server that hangs up after the first transaction's RSET,
	// so the pooled connection is dead when the next Send NOOPs on it.
	srv := fakesmtp.Start(t, fakesmtp.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var proxied sync.WaitGroup
	hungUp := make(chan struct{}) // the first connection, after its RSET
	go func() {
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", srv.Addr)
			if err != nil {
				c.Close()
				return
			}
			proxied.Add(1)
			go func(c, up net.Conn, kill bool) {
				defer proxied.Done()
				done := make(chan struct{})
				go func() { _, _ = copyUntilRSET(up, c, kill); up.Close(); c.Close(); close(done) }()
				_, _ = copyConn(c, up)
				c.Close()
				<-done
				if kill {
					close(hungUp)
				}
			}(c, up, first)
			first = false
		}
	}()
	s := newSender(t, "smtp://"+ln.Addr().String()+"?tls=none", SMTPOptions{})
	if _, err := s.Send(context.Background(), msgN(t, 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hungUp:
	case <-time.After(wait):
		t.Fatal("the proxy did not hang up after the first transaction")
	}
	if _, err := s.Send(context.Background(), msgN(t, 2)); err != nil {
		t.Fatalf("send on a stale pooled connection: %v", err)
	}
	srv.WaitMessages(t, 2, wait)
	ln.Close()
	s.Close()
}

// copyConn copies server replies to the client.
func copyConn(dst, src net.Conn) (int64, error) {
	buf := make([]byte, 4096)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

// copyUntilRSET copies client commands to the server; with kill it stops
// (and the caller hangs up) once the client sent RSET after a message.
func copyUntilRSET(dst, src net.Conn, kill bool) (int64, error) {
	buf := make([]byte, 4096)
	var seen []byte
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
			seen = append(seen, buf[:k]...)
			if kill && (bytes.Contains(seen, []byte("\r\n.\r\n")) || bytes.Contains(seen, []byte("BDAT "))) && bytes.Contains(seen, []byte("RSET\r\n")) {
				// The RSET's reply travels on the other copy, which this one
				// cannot see: it gets a moment before the hang-up.
				time.Sleep(50 * time.Millisecond)
				return n, nil
			}
		}
		if err != nil {
			return n, err
		}
	}
}

func TestSMTPSTARTTLSRequired(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{TLS: true})
	s := newSender(t, srv.URL(), SMTPOptions{RootCAs: srv.CertPool()})
	m := msgN(t, 1)
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := srv.WaitMessages(t, 1, wait)
	if !bytes.Equal(got[0].Data, mustBytes(t, m)) {
		t.Error("data differs")
	}

	// Without trusting the test CA the handshake fails: Temporary.
	s2 := newSender(t, srv.URL(), SMTPOptions{})
	_, err := s2.Send(context.Background(), msgN(t, 2))
	sendErr(t, err, Temporary)
}

func TestSMTPSTARTTLSMissing(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{})
	url := "smtp://" + srv.Addr // tls defaults to required
	s := newSender(t, url, SMTPOptions{})
	_, err := s.Send(context.Background(), msgN(t, 1))
	se := sendErr(t, err, Temporary)
	if !strings.Contains(se.Error(), "does not offer STARTTLS") || !strings.Contains(se.Error(), "tls=none") {
		t.Errorf("error not clear: %v", se)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages delivered without TLS", n)
	}

	// Opportunistic falls back to plain.
	s2 := newSender(t, url+"?tls=opportunistic", SMTPOptions{})
	if _, err := s2.Send(context.Background(), msgN(t, 2)); err != nil {
		t.Fatal(err)
	}
	srv.WaitMessages(t, 1, wait)
}

func TestSMTPImplicitTLS(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{ImplicitTLS: true, Username: "mailer", Password: "s3cr3t pa/ss"})
	s := newSender(t, srv.URL(), SMTPOptions{RootCAs: srv.CertPool()})
	m := msgN(t, 1)
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := srv.WaitMessages(t, 1, wait)
	if !bytes.Equal(got[0].Data, mustBytes(t, m)) {
		t.Error("data differs")
	}
}

func TestSMTPAuth(t *testing.T) {
	const pass = "s3cr3t:p@ss/wörd"
	srv := fakesmtp.Start(t, fakesmtp.Options{TLS: true, Username: "mailer@followfeed.example", Password: pass})
	s := newSender(t, srv.URL(), SMTPOptions{RootCAs: srv.CertPool()})
	if _, err := s.Send(context.Background(), msgN(t, 1)); err != nil {
		t.Fatal(err)
	}
	srv.WaitMessages(t, 1, wait)

	// Wrong password: Temporary (nothing was offered), with the 535 code,
	// and the password appears nowhere.
	bad := strings.Replace(srv.URL(), "s3cr3t", "wrong", 1)
	var logs bytes.Buffer
	s2 := newSender(t, bad, SMTPOptions{RootCAs: srv.CertPool(), Logger: slogTo(&logs)})
	_, err := s2.Send(context.Background(), msgN(t, 2))
	se := sendErr(t, err, Temporary)
	if se.Code != 535 {
		t.Errorf("Code = %d, want 535 (%v)", se.Code, err)
	}
	for _, secret := range []string{"wrong", "s3cr3t"} {
		if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("password %q leaked: %v\n%s", secret, err, logs.String())
		}
	}

	// Credentials over plain text only with an explicit tls=none.
	plain := fakesmtp.Start(t, fakesmtp.Options{Username: "u", Password: "p"})
	s3 := newSender(t, plain.URL(), SMTPOptions{})
	if _, err := s3.Send(context.Background(), msgN(t, 3)); err != nil {
		t.Fatal(err)
	}
	plain.WaitMessages(t, 1, wait)
}

func TestSMTPFaults(t *testing.T) {
	cases := []struct {
		name      string
		fault     func(stage string, n int) *smtp.SMTPError
		kind      FailureKind
		code      int
		recipient bool
	}{
		{"421 at MAIL", func(stage string, n int) *smtp.SMTPError {
			if stage == fakesmtp.StageMail && n == 1 {
				return smtpErr(421, smtp.EnhancedCode{4, 7, 0}, "try later")
			}
			return nil
		}, Temporary, 421, false},
		{"451 at DATA", func(stage string, n int) *smtp.SMTPError {
			if stage == fakesmtp.StageData && n == 1 {
				return smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "local problem")
			}
			return nil
		}, Temporary, 451, false},
		{"550 at RCPT", func(stage string, n int) *smtp.SMTPError {
			if stage == fakesmtp.StageRcpt && n == 1 {
				return smtpErr(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
			}
			return nil
		}, Permanent, 550, true},
		{"452 at RCPT", func(stage string, n int) *smtp.SMTPError {
			if stage == fakesmtp.StageRcpt && n == 1 {
				return smtpErr(452, smtp.EnhancedCode{4, 2, 2}, "mailbox full")
			}
			return nil
		}, Temporary, 452, true},
		{"554 at DATA", func(stage string, n int) *smtp.SMTPError {
			if stage == fakesmtp.StageData && n == 1 {
				return smtpErr(554, smtp.EnhancedCode{5, 6, 0}, "content rejected")
			}
			return nil
		}, Permanent, 554, true},
		{"553 at MAIL", func(stage string, n int) *smtp.SMTPError {
			if stage == fakesmtp.StageMail && n == 1 {
				return smtpErr(553, smtp.EnhancedCode{5, 7, 1}, "sender not allowed")
			}
			return nil
		}, Permanent, 553, false},
	}
	transports(t, func(t *testing.T, noChunking bool) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				srv := fakesmtp.Start(t, fakesmtp.Options{Fault: c.fault, NoChunking: noChunking})
				s := newSender(t, srv.URL(), SMTPOptions{})
				_, err := s.Send(context.Background(), msgN(t, 1))
				se := sendErr(t, err, c.kind)
				if se.Code != c.code || se.Recipient != c.recipient {
					t.Errorf("Code=%d Recipient=%v, want %d %v (%v)", se.Code, se.Recipient, c.code, c.recipient, err)
				}
				if !strings.HasPrefix(se.Reply, fmt.Sprint(c.code)+" ") || strings.Contains(se.Reply, "affected") {
					t.Errorf("Reply = %q", se.Reply)
				}
				if len(srv.Messages()) != 0 {
					t.Error("refused message recorded")
				}
				// The failed connection is dropped; the next send dials fresh.
				if _, err := s.Send(context.Background(), msgN(t, 2)); err != nil {
					t.Fatal(err)
				}
				srv.WaitMessages(t, 1, wait)
				if n := srv.Connections(); n != 2 {
					t.Errorf("Connections = %d, want 2", n)
				}
			})
		}
	})
}

func TestSMTPDropAfterDataIsAmbiguous(t *testing.T) { transports(t, testSMTPDropAfterDataIsAmbiguous) }

func testSMTPDropAfterDataIsAmbiguous(t *testing.T, noChunking bool) {
	srv := fakesmtp.Start(t, fakesmtp.Options{DropAfterData: func(n int) bool { return n == 1 }, NoChunking: noChunking})
	s := newSender(t, srv.URL(), SMTPOptions{})
	_, err := s.Send(context.Background(), msgN(t, 1))
	se := sendErr(t, err, Ambiguous)
	if se.Code != 0 || !strings.Contains(se.Error(), "may have accepted") {
		t.Errorf("unexpected %v", se)
	}
	if _, err := s.Send(context.Background(), msgN(t, 2)); err != nil {
		t.Fatal(err)
	}
	srv.WaitMessages(t, 1, wait)
}

// Timeout at the final reply: the body is complete, so the outcome is
// Ambiguous — and indeed the server accepts the message after its delay.
func TestSMTPSlowFinalReplyIsAmbiguous(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{Delay: 1200 * time.Millisecond})
	s := newSender(t, srv.URL(), SMTPOptions{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := s.Send(context.Background(), msgN(t, 1))
	sendErr(t, err, Ambiguous)
	if el := time.Since(start); el > time.Second {
		t.Errorf("Send took %v with Timeout 200ms", el)
	}
	srv.WaitMessages(t, 1, wait)
}

// Timeout at MAIL: nothing of the message was sent, so Temporary; the
// connection is failed at once (no waiting for RSET).
func TestSMTPSlowMailIsTemporary(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageMail && n == 1 {
			time.Sleep(1500 * time.Millisecond) // the server is slow: the sender's Timeout is 200 ms
		}
		return nil
	}})
	s := newSender(t, srv.URL(), SMTPOptions{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := s.Send(context.Background(), msgN(t, 1))
	se := sendErr(t, err, Temporary)
	if se.Code != 0 {
		t.Errorf("Code = %d", se.Code)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Send took %v with Timeout 200ms", el)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages", n)
	}
}

func TestSMTPContextCancelledDuringFinalReply(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{Delay: 400 * time.Millisecond})
	s := newSender(t, srv.URL(), SMTPOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Dial first so the cancellation lands inside the transaction.
	if _, err := s.Send(ctx, msgN(t, 0)); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	reply, err := s.Send(ctx, msgN(t, 1))
	if err != nil {
		t.Fatalf("cancelled during the transaction: %v", err)
	}
	if el := time.Since(start); el < 400*time.Millisecond || !strings.HasPrefix(reply, "250") {
		t.Errorf("reply %q after %v: the transaction did not run to its end", reply, el)
	}
	srv.WaitMessages(t, 2, wait)

	// The next Send with the cancelled ctx does not start a transaction.
	_, err = s.Send(ctx, msgN(t, 2))
	if se := sendErr(t, err, Temporary); !errors.Is(se, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestSMTPContextCancelsDial(t *testing.T) {
	// A server that accepts TCP but never greets.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	s := newSender(t, "smtp://"+ln.Addr().String()+"?tls=none", SMTPOptions{Timeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Send(ctx, msgN(t, 1))
	se := sendErr(t, err, Temporary)
	if !errors.Is(se, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("dial not aborted by ctx: took %v", el)
	}
}

func TestSMTPInvalidMessageAndClosed(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{})
	s := newSender(t, srv.URL(), SMTPOptions{})
	m := msgN(t, 1)
	m.To = "nobody"
	_, err := s.Send(context.Background(), m)
	if se := sendErr(t, err, Permanent); !se.Recipient {
		t.Errorf("invalid To not marked Recipient: %v", se)
	}
	if srv.Connections() != 0 {
		t.Error("invalid message caused a connection")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Send(context.Background(), msgN(t, 2))
	sendErr(t, err, Temporary)
}

func TestNewSMTPSenderURL(t *testing.T) {
	good := []string{
		"smtp://u:p@mail.example:587",
		"smtp://mail.example",
		"smtp://mail.example:25?tls=none",
		"smtp://mail.example?tls=opportunistic",
		"smtps://u%40x:p%2Fw@mail.example:465",
		"smtps://mail.example",
	}
	for _, u := range good {
		s, err := NewSMTPSender(u, SMTPOptions{})
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		_ = s.Close()
	}
	s, err := NewSMTPSender("smtps://u%40x:p%2Fw@mail.example", SMTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.user != "u@x" || s.pass != "p/w" || s.addr != "mail.example:465" || s.mode != tlsImplicit {
		t.Errorf("parsed user=%q pass=%q addr=%q mode=%v", s.user, s.pass, s.addr, s.mode)
	}
	bad := []string{
		"http://u:hunter2@mail.example",
		"smtp://u:hunter2@",
		"smtp://u:hunter2@mail.example?tls=bogus",
		"smtps://u:hunter2@mail.example?tls=none",
		"smtp://u:hunter2@mail.example:99999",
		"smtp://u:hunter2@mail.example?tsl=none",
		"smtp://u:hunter2@ma il.example",
		"smtp://u:hunter2@mail.example:25/path",
		"::not a url hunter2",
	}
	for _, u := range bad {
		_, err := NewSMTPSender(u, SMTPOptions{})
		if err == nil {
			t.Errorf("%s accepted", u)
			continue
		}
		if !strings.Contains(err.Error(), "SMTP_URL") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error %q must name SMTP_URL and hide the password", u, err)
		}
	}
}

func TestDirSender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	d := NewDirSender(dir)
	m := msgN(t, 1)
	for range 2 {
		reply, err := d.Send(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(dir, "digest.1.daily-2026-11-29@followfeed.example.eml")
		if reply != "stored "+want {
			t.Errorf("reply = %q", reply)
		}
		data, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, mustBytes(t, m)) {
			t.Error("file differs from Bytes()")
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want 1 (idempotent, no temp files)", len(entries))
	}

	// Same bytes as over SMTP.
	srv := fakesmtp.Start(t, fakesmtp.Options{})
	s := newSender(t, srv.URL(), SMTPOptions{})
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(filepath.Join(dir, entries[0].Name()))
	if got := srv.WaitMessages(t, 1, wait); !bytes.Equal(got[0].Data, file) {
		t.Error("SMTP and DirSender bytes differ")
	}

	bad := msgN(t, 2)
	bad.To = ""
	_, err = d.Send(context.Background(), bad)
	sendErr(t, err, Permanent)
}

func TestEMLFileName(t *testing.T) {
	cases := map[string]string{
		"digest.42.daily-2026-11-29@followfeed.example": "digest.42.daily-2026-11-29@followfeed.example.eml",
		"../../etc/passwd@x":                            "_._.._etc_passwd@x.eml",
		"a b/c\\d@e":                                    "a_b_c_d@e.eml",
	}
	for in, want := range cases {
		if got := emlFileName(in); got != want {
			t.Errorf("emlFileName(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("x", 300) + "@e"
	if got := emlFileName(long); len(got) > 210 || got == emlFileName(strings.Repeat("x", 301)+"@e") {
		t.Errorf("long name %q", got)
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func slogTo(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedBuffer{b: b}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestSMTPWithout8BitMIMESendsQuotedPrintable: a server that does not offer
// 8BITMIME (and refuses 8-bit bytes) gets the same message quoted-printable.
func TestSMTPWithout8BitMIMESendsQuotedPrintable(t *testing.T) {
	srv := fakesmtp.Start(t, fakesmtp.Options{No8BitMIME: true})
	s := newSender(t, srv.URL(), SMTPOptions{})
	m := msgN(t, 0)
	if _, err := s.Send(context.Background(), m); err != nil {
		t.Fatalf("send to a 7-bit server: %v", err)
	}
	got := srv.WaitMessages(t, 1, wait)
	for ct, enc := range partEncodings(t, got[0].Data) {
		if enc != "quoted-printable" {
			t.Errorf("%s part went %s to a server without 8BITMIME", ct, enc)
		}
	}
	_, want := parts(t, mustBytes(t, m))
	if _, have := parts(t, got[0].Data); have["text/plain"] != want["text/plain"] || have["text/html"] != want["text/html"] {
		t.Error("the quoted-printable bodies differ from the 8bit ones")
	}
}
