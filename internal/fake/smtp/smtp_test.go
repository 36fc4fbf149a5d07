package smtp

import (
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

const body = "Subject: hi\r\n\r\n.leading dot\r\nline two\r\n"

// send runs one transaction on c and returns the first error.
func send(c *smtp.Client, from string, to []string, data string) error {
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(data)); err != nil {
		return err
	}
	return w.Close()
}

func smtpCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestPlainDeliveryAndReuse(t *testing.T) {
	s := Start(t, Options{})
	if want := "smtp://" + s.Addr + "?tls=none"; s.URL() != want {
		t.Errorf("URL = %q, want %q", s.URL(), want)
	}
	if s.CertPool() != nil {
		t.Error("CertPool without TLS should be nil")
	}
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if err := send(c, "a@example.org", []string{"b@example.org", "c@example.org"}, body); err != nil {
			t.Fatal(err)
		}
	}
	msgs := s.WaitMessages(t, 3, 5*time.Second)
	if len(msgs) != 3 {
		t.Fatalf("got %d messages", len(msgs))
	}
	m := msgs[0]
	if m.From != "a@example.org" || strings.Join(m.To, ",") != "b@example.org,c@example.org" {
		t.Errorf("envelope = %q %q", m.From, m.To)
	}
	if string(m.Data) != body {
		t.Errorf("data = %q, want %q", m.Data, body)
	}
	if m.ReceivedAt.IsZero() {
		t.Error("ReceivedAt not set")
	}
	if n := s.Connections(); n != 1 {
		t.Errorf("Connections = %d, want 1", n)
	}
}

func TestFaults(t *testing.T) {
	s := Start(t, Options{Fault: func(stage string, n int) *smtp.SMTPError {
		switch {
		case stage == StageMail && n == 1:
			return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "try later"}
		case stage == StageRcpt && n == 1:
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
		case stage == StageData && n == 1:
			return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "rejected"}
		}
		return nil
	}})
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	steps := []int{421, 550, 554, 0}
	for i, want := range steps {
		err := send(c, "a@example.org", []string{"b@example.org"}, body)
		if got := smtpCode(err); got != want || (want == 0 && err != nil) {
			t.Fatalf("send %d: err = %v, want code %d", i, err, want)
		}
		if err != nil {
			if err := c.Reset(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(s.Messages()); n != 1 {
		t.Errorf("accepted %d messages, want 1", n)
	}
}

func TestAuth(t *testing.T) {
	s := Start(t, Options{Username: "u@x", Password: "p:w/d"})
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := u.User.Password(); u.User.Username() != "u@x" || p != "p:w/d" {
		t.Errorf("URL userinfo = %v", u.User)
	}
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); smtpCode(err) != 530 {
		t.Fatalf("unauthenticated send: %v, want 530", err)
	}
	_ = c.Reset()
	if err := c.Auth(sasl.NewPlainClient("", "u@x", "wrong")); smtpCode(err) != 535 {
		t.Fatalf("wrong password: %v, want 535", err)
	}
	if err := c.Auth(sasl.NewPlainClient("", "u@x", "p:w/d")); err != nil {
		t.Fatal(err)
	}
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
		t.Fatal(err)
	}
}

func TestSTARTTLS(t *testing.T) {
	s := Start(t, Options{TLS: true})
	if want := "smtp://" + s.Addr; s.URL() != want {
		t.Errorf("URL = %q, want %q", s.URL(), want)
	}
	c, err := smtp.DialStartTLS(s.Addr, &tls.Config{RootCAs: s.CertPool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.TLSConnectionState(); !ok {
		t.Fatal("not TLS")
	}
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
		t.Fatal(err)
	}
	s.WaitMessages(t, 1, 5*time.Second)

	// An untrusting client must fail the handshake.
	bad, err := smtp.DialStartTLS(s.Addr, &tls.Config{ServerName: "127.0.0.1"})
	if err == nil {
		err = send(bad, "a@example.org", []string{"b@example.org"}, body)
		bad.Close()
	}
	if err == nil {
		t.Error("STARTTLS with an untrusted certificate succeeded")
	}
}

func TestImplicitTLS(t *testing.T) {
	s := Start(t, Options{ImplicitTLS: true})
	if want := "smtps://" + s.Addr; s.URL() != want {
		t.Errorf("URL = %q, want %q", s.URL(), want)
	}
	c, err := smtp.DialTLS(s.Addr, &tls.Config{RootCAs: s.CertPool(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("implicit TLS server advertises STARTTLS")
	}
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
		t.Fatal(err)
	}
	s.WaitMessages(t, 1, 5*time.Second)
}

func TestDropAfterData(t *testing.T) {
	for _, implicit := range []bool{false, true} {
		s := Start(t, Options{ImplicitTLS: implicit, DropAfterData: func(n int) bool { return n == 1 }})
		var c *smtp.Client
		var err error
		if implicit {
			c, err = smtp.DialTLS(s.Addr, &tls.Config{RootCAs: s.CertPool(), ServerName: "127.0.0.1"})
		} else {
			c, err = smtp.Dial(s.Addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		err = send(c, "a@example.org", []string{"b@example.org"}, body)
		c.Close()
		if err == nil || smtpCode(err) != 0 {
			t.Fatalf("implicit=%v: send after drop: err = %v, want a connection error without reply", implicit, err)
		}
		if n := len(s.Messages()); n != 0 {
			t.Errorf("dropped message recorded")
		}
		// The next message on a new connection is accepted.
		if implicit {
			c, err = smtp.DialTLS(s.Addr, &tls.Config{RootCAs: s.CertPool(), ServerName: "127.0.0.1"})
		} else {
			c, err = smtp.Dial(s.Addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if n := s.Connections(); n != 2 {
			t.Errorf("Connections = %d, want 2", n)
		}
	}
}

func TestDelay(t *testing.T) {
	const d = 300 * time.Millisecond
	s := Start(t, Options{Delay: d})
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < d {
		t.Errorf("final reply after %v, want >= %v", el, d)
	}
}

func TestCleanupClosesConnections(t *testing.T) {
	var addr string
	var conn net.Conn
	t.Run("inner", func(t *testing.T) {
		s := Start(t, Options{})
		addr = s.Addr
		var err error
		conn, err = net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512)
		if _, err := conn.Read(buf); err != nil { // greeting
			t.Fatal(err)
		}
	})
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 512)); err == nil {
		t.Error("connection still open after cleanup")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("listener still open after cleanup")
	}
}

// Answer sees the whole command and may refuse, drop or accept it.
func TestAnswer(t *testing.T) {
	// Answer runs on each connection's goroutine: the dropped connection's
	// may still be ending while the next one starts.
	var mu sync.Mutex
	var calls []Call
	s := Start(t, Options{Answer: func(c Call) Answer {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		switch {
		case c.Stage == StageRcpt && c.Rcpt == "refused@example.org":
			return Answer{Err: &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}}
		case c.Stage == StageData && c.N == 1:
			return Answer{Drop: true}
		}
		return Answer{}
	}})
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := send(c, "a@example.org", []string{"refused@example.org"}, body); smtpCode(err) != 550 {
		t.Fatalf("refused recipient: %v, want 550", err)
	}
	_ = c.Reset()
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err == nil {
		t.Fatal("dropped after DATA: no error")
	}
	c.Close()
	c, err = smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
		t.Fatal(err)
	}
	if got := s.WaitMessages(t, 1, 5*time.Second); len(got) != 1 || s.Accepted() != 1 {
		t.Fatalf("%d messages, %d accepted; want the third only", len(got), s.Accepted())
	}
	mu.Lock()
	last := calls[len(calls)-1]
	mu.Unlock()
	if last.Stage != StageData || last.N != 2 || last.From != "a@example.org" || strings.Join(last.To, ",") != "b@example.org" || string(last.Data) != body {
		t.Errorf("last call %+v", last)
	}
}

// Discard counts messages and keeps none.
func TestDiscard(t *testing.T) {
	s := Start(t, Options{Discard: true, NoLineLimit: true})
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	long := "Subject: x\r\n\r\n" + strings.Repeat("y", 5000) + "\r\n"
	for range 3 {
		if err := send(c, "a@example.org", []string{"b@example.org"}, long); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Accepted(); n != 3 || len(s.Messages()) != 0 {
		t.Errorf("accepted %d, kept %d; want 3 and 0", n, len(s.Messages()))
	}
}

// For UntrustedTLSFor after the first connection STARTTLS cannot be
// verified; afterwards the plain server answers.
func TestUntrustedTLSPhase(t *testing.T) {
	s := Start(t, Options{UntrustedTLSFor: 300 * time.Millisecond})
	bad, err := smtp.DialStartTLS(s.Addr, &tls.Config{ServerName: "127.0.0.1"})
	if err == nil {
		err = send(bad, "a@example.org", []string{"b@example.org"}, body) // go-smtp negotiates on the first command
		bad.Close()
	}
	if err == nil {
		t.Fatal("STARTTLS in the untrusted phase verified")
	}
	time.Sleep(400 * time.Millisecond) // the phase is 300 ms of the clock: it must have passed
	c, err := smtp.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("STARTTLS offered after the phase")
	}
	if err := send(c, "a@example.org", []string{"b@example.org"}, body); err != nil {
		t.Fatal(err)
	}
	if s.UntrustedTLSConnections() != 1 || s.Connections() != 2 {
		t.Errorf("untrusted %d of %d connections, want 1 of 2", s.UntrustedTLSConnections(), s.Connections())
	}
}
