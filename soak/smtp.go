package soak

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	mrand "math/rand/v2"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"

	fakesmtp "followfeed/internal/fake/smtp"
)

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
// arrived (and each message's recipient and time), and may hold each reply
// for delay (a slow server). While refuse is set it answers every MAIL
// with 421, as a relay that is down does, and records nothing; while hold
// is set it records a message and then holds its reply until release.
type mailSink struct {
	delay  time.Duration
	refuse atomic.Bool
	hold   atomic.Bool

	released    chan struct{}
	releaseOnce sync.Once

	mu      sync.Mutex
	ids     map[string]int
	msgs    []sinkMsg
	total   int
	refused int
	onData  func(total int)
}

// sinkMsg is one message a mailSink received.
type sinkMsg struct {
	id, rcpt string
	at       time.Time
}

// received returns every message received so far, in order.
func (s *mailSink) received() []sinkMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// release answers every reply held (hold) and holds no more.
func (s *mailSink) release() {
	s.hold.Store(false)
	s.releaseOnce.Do(func() { close(s.released) })
}

// refusals returns how many MAIL commands were answered 421.
func (s *mailSink) refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *mailSink) snapshot() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.ids))
	for k, v := range s.ids {
		out[k] = v
	}
	return out, s.total
}

// answer records the message as received once its body is complete (before
// the reply: a client killed now has handed the message over), then waits
// delay and accepts it.
func (s *mailSink) answer(c fakesmtp.Call) fakesmtp.Answer {
	if c.Stage == fakesmtp.StageMail && s.refuse.Load() {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		return smtpErr(421, smtp.EnhancedCode{4, 3, 2}, "service not available, try later")
	}
	if c.Stage != fakesmtp.StageData {
		return fakesmtp.Answer{}
	}
	id := readMessageID(bytes.NewReader(c.Data))
	rcpt := ""
	if len(c.To) > 0 {
		rcpt = strings.ToLower(c.To[len(c.To)-1])
	}
	s.mu.Lock()
	s.ids[id]++
	s.msgs = append(s.msgs, sinkMsg{id: id, rcpt: rcpt, at: time.Now()})
	s.total++
	total, cb := s.total, s.onData
	s.mu.Unlock()
	if cb != nil {
		cb(total)
	}
	if s.hold.Load() {
		select {
		case <-s.released:
		case <-time.After(2 * time.Minute):
		}
	}
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	return fakesmtp.Answer{}
}

// startSink starts a recording sink on loopback; it returns the SMTP_URL
// for it (plain, tls=none) and a stop function.
func startSink(delay time.Duration) (*mailSink, string, func(), error) {
	s := &mailSink{delay: delay, ids: map[string]int{}, released: make(chan struct{})}
	srv, err := fakesmtp.New(fakesmtp.Options{Answer: s.answer, Discard: true})
	if err != nil {
		return nil, "", nil, err
	}
	return s, srv.URL(), srv.Close, nil
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
// that cannot be negotiated. It records what it did to every message. It is
// the fake SMTP server (internal/fake/smtp) with answer deciding every reply.
type chaosSMTP struct {
	seed uint64
	srv  *fakesmtp.Server // once started

	mu           sync.Mutex
	rng          *mrand.Rand
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

func smtpErr(code int, enh smtp.EnhancedCode, msg string) fakesmtp.Answer {
	return fakesmtp.Answer{Err: &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}}
}

// answer is the chaos: what the server replies to each command.
func (c *chaosSMTP) answer(call fakesmtp.Call) fakesmtp.Answer {
	switch call.Stage {
	case fakesmtp.StageMail:
		return c.mail()
	case fakesmtp.StageRcpt:
		return c.rcpt(call.Rcpt)
	case fakesmtp.StageData:
		rcpt := ""
		if len(call.To) > 0 {
			rcpt = call.To[len(call.To)-1]
		}
		return c.data(readMessageID(bytes.NewReader(call.Data)), strings.ToLower(rcpt))
	}
	return fakesmtp.Answer{}
}

func (c *chaosSMTP) mail() fakesmtp.Answer {
	c.maybeDelay()
	switch v := c.roll(); {
	case v < 0.02:
		c.count(chaosDropMail)
		return fakesmtp.Answer{Drop: true}
	case v < 0.045:
		c.count(chaosMail421)
		return smtpErr(421, smtp.EnhancedCode{4, 3, 2}, "service not available, try later")
	case v < 0.07:
		c.count(chaosMail451)
		return smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "local error in processing")
	case v < 0.09:
		c.count(chaosMail452)
		return smtpErr(452, smtp.EnhancedCode{4, 3, 1}, "insufficient system storage")
	}
	return fakesmtp.Answer{}
}

func (c *chaosSMTP) rcpt(to string) fakesmtp.Answer {
	c.maybeDelay()
	if c.fate(to) == fateRcpt550 {
		c.count(chaosRcpt550)
		c.mu.Lock()
		c.fiveXX[strings.ToLower(to)] = "550 5.1.1 no such user"
		c.mu.Unlock()
		return smtpErr(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
	}
	switch v := c.roll(); {
	case v < 0.02:
		c.count(chaosDropRcpt)
		return fakesmtp.Answer{Drop: true}
	case v < 0.05:
		c.count(chaosRcpt451)
		return smtpErr(451, smtp.EnhancedCode{4, 7, 1}, "greylisted, try again later")
	case v < 0.07:
		c.count(chaosRcpt452)
		return smtpErr(452, smtp.EnhancedCode{4, 2, 2}, "mailbox full")
	}
	return fakesmtp.Answer{}
}

func (c *chaosSMTP) data(id, rcpt string) fakesmtp.Answer {
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
		return fakesmtp.Answer{Drop: true}
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
	return fakesmtp.Answer{}
}

// start listens on loopback. For chaosTLSPhase after the first connection,
// connections go to a server that offers STARTTLS with a self-signed
// certificate the client cannot verify; afterwards to one that offers
// neither STARTTLS nor AUTH. It returns the SMTP_URL (tls=opportunistic)
// and a stop function.
func (c *chaosSMTP) start() (string, func(), error) {
	srv, err := fakesmtp.New(fakesmtp.Options{Answer: c.answer, UntrustedTLSFor: chaosTLSPhase})
	if err != nil {
		return "", nil, err
	}
	c.srv = srv
	return "smtp://" + srv.Addr + "?tls=opportunistic", srv.Close, nil
}

// connections returns how many connections the server accepted and how
// many of them met the untrusted STARTTLS.
func (c *chaosSMTP) connections() (all, untrusted int) {
	return c.srv.Connections(), c.srv.UntrustedTLSConnections()
}
