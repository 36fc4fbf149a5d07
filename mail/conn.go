package mail

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gosmtp "github.com/wneessen/go-mail/smtp"
)

// chooseAuth picks AUTH PLAIN, or LOGIN when the server offers only that,
// from the mechanisms the server advertised. One per connection: it keeps
// the chosen mechanism's state.
type chooseAuth struct {
	user, pass, host string
	allowUnencrypted bool
	inner            gosmtp.Auth
}

func (a *chooseAuth) Start(server *gosmtp.ServerInfo) (string, []byte, error) {
	offers := func(mech string) bool {
		for _, m := range server.Auth {
			if strings.EqualFold(m, mech) {
				return true
			}
		}
		return false
	}
	switch {
	case offers("PLAIN"):
		a.inner = gosmtp.PlainAuth("", a.user, a.pass, a.host, a.allowUnencrypted)
	case offers("LOGIN"):
		a.inner = gosmtp.LoginAuth(a.user, a.pass, a.host, a.allowUnencrypted)
	case len(server.Auth) == 0:
		return "", nil, errors.New("SMTP_URL has credentials but the server does not offer AUTH")
	default:
		return "", nil, fmt.Errorf("the server offers AUTH %s; supported are PLAIN and LOGIN", strings.Join(server.Auth, " "))
	}
	return a.inner.Start(server)
}

func (a *chooseAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	return a.inner.Next(fromServer, more)
}

// errAborted is returned by I/O on a connection whose dial ctx was cancelled.
var errAborted = errors.New("connection aborted: context cancelled")

// deadlineConn gives every Read and Write its own deadline of timeout (so
// each SMTP reply, TLS handshake step and body chunk is bounded separately),
// ignores the deadlines go-mail sets on top, can be aborted from another
// goroutine, stays failed after the first I/O error (the SMTP dialogue is out
// of step then; later commands such as RSET fail at once instead of waiting),
// and remembers whether the last Write failed (to tell whether the final dot
// can have reached the server). It sits below TLS.
type deadlineConn struct {
	net.Conn
	timeout         time.Duration
	aborted         atomic.Bool
	lastWriteFailed atomic.Bool

	mu  sync.Mutex
	err error // first I/O error
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if err := c.failed(); err != nil {
		return 0, err
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	if c.aborted.Load() { // after setting the deadline: see abort
		return 0, c.fail(errAborted)
	}
	n, err := c.Conn.Read(p)
	if err != nil {
		c.fail(err)
	}
	return n, err
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if err := c.failed(); err != nil {
		c.lastWriteFailed.Store(true)
		return 0, err
	}
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	if c.aborted.Load() {
		c.lastWriteFailed.Store(true)
		return 0, c.fail(errAborted)
	}
	n, err := c.Conn.Write(p)
	c.lastWriteFailed.Store(err != nil)
	if err != nil {
		c.fail(err)
	}
	return n, err
}

// SetDeadline, SetReadDeadline and SetWriteDeadline are no-ops: deadlines
// are set per Read/Write.
func (c *deadlineConn) SetDeadline(time.Time) error      { return nil }
func (c *deadlineConn) SetReadDeadline(time.Time) error  { return nil }
func (c *deadlineConn) SetWriteDeadline(time.Time) error { return nil }

// abort interrupts blocked I/O and fails all later I/O. Flag first, then
// deadline: an I/O call that set its own deadline before the flag was seen
// gets interrupted by the past deadline.
func (c *deadlineConn) abort() {
	c.aborted.Store(true)
	_ = c.Conn.SetDeadline(time.Unix(1, 0))
}

func (c *deadlineConn) fail(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	return err
}

func (c *deadlineConn) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return fmt.Errorf("connection unusable after earlier error: %w", c.err)
	}
	return nil
}
