package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gomail "github.com/wneessen/go-mail"
)

// Message is one email ready to be rendered to RFC 5322 bytes and delivered
// by a Sender. All fields except HTML, ListID, the unsubscribe fields and
// AutoSubmitted are required.
type Message struct {
	From    *netmail.Address // header From and envelope sender
	To      string           // one recipient: "user@example.org" or "Name <user@example.org>"
	Subject string
	// Text is the plain-text body (required) and HTML the HTML body (when
	// set, the mail is multipart/alternative), both UTF-8 with "\n" line
	// ends. A Message only reads them, and a Sender keeps neither after
	// Send returns: the caller may then write the memory again (notify
	// renders each digest into the buffers of the one before).
	Text []byte
	HTML []byte
	// MessageID is the Message-ID without angle brackets, e.g.
	// "digest.42.daily-2026-11-29@followfeed.example". The caller chooses it
	// deterministically: it names the .eml file and seeds the MIME boundary.
	MessageID string
	Date      time.Time // the Date header, written in Date's own zone
	// ListID is the List-Id header (RFC 2919), e.g.
	// "followfeed digests <digests.followfeed.example>"; printable ASCII.
	ListID string
	// UnsubscribeURL is put in List-Unsubscribe (RFC 2369), with
	// List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058).
	UnsubscribeURL string
	// UnsubscribeMailto is an optional address added to List-Unsubscribe as
	// <mailto:addr?subject=unsubscribe> after the URL.
	UnsubscribeMailto string
	// AutoSubmitted adds "Auto-Submitted: auto-generated" (RFC 3834) and
	// "X-Auto-Response-Suppress: All".
	AutoSubmitted bool
}

// Header names go-mail has no constant for.
const (
	headerListID        gomail.Header = "List-Id"
	headerAutoSubmitted gomail.Header = "Auto-Submitted"
	headerXAutoRespSupp gomail.Header = "X-Auto-Response-Suppress"
	headerListUnsub     gomail.Header = "List-Unsubscribe"
	headerListUnsubPost gomail.Header = "List-Unsubscribe-Post"
	oneClickPostValue                 = "List-Unsubscribe=One-Click"
	boundaryPrefix                    = "followfeed-"
	maxBoundaryAttempts               = 16
)

// errBadRecipient marks build errors caused by Message.To, so Send can report
// them as permanent recipient failures.
var errBadRecipient = errors.New("invalid recipient address")

// Bytes renders the message exactly as SMTPSender transmits it to a server
// offering 8BITMIME, and as DirSender stores it: RFC 5322 with CRLF line
// endings, UTF-8, multipart/alternative (text/plain first, then text/html)
// when HTML is set. Bodies go unencoded as 8bit (RFC 6152) when every line
// fits in 998 octets, else quoted-printable; SMTPSender re-encodes them as
// quoted-printable for a server without 8BITMIME.
// The output is byte-identical for equal Messages: headers are written in a
// fixed order and the MIME boundary is derived from MessageID (see
// mimeBoundary) instead of go-mail's random one. It returns an error naming
// the field when a required field is missing or a header value is unusable.
func (m *Message) Bytes() ([]byte, error) {
	enc, err := m.check(false)
	if err != nil {
		return nil, err
	}
	body, _, err := m.chunk(enc == gomail.NoEncoding)
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(make([]byte, 0, body.Len()))
	_, _ = body.WriteTo(out) // a bytes.Buffer does not fail
	return out.Bytes(), nil
}

// chunkBody is a message ready for BDAT: its length, and its bytes as
// WriteTo writes them (a *wire, or a bytes.Buffer of the rendering).
type chunkBody interface {
	Len() int
	WriteTo(io.Writer) (int64, error)
}

// chunk returns m as SMTPSender sends it in one BDAT chunk (its length
// and its bytes: what Bytes returns) and the go-mail Msg that rendered it: with 8bit bodies
// when eightBit is set, else quoted-printable.
func (m *Message) chunk(eightBit bool) (chunkBody, *gomail.Msg, error) {
	if eightBit {
		return m.wire()
	}
	msg, err := m.build(true)
	if err != nil {
		return nil, nil, err
	}
	body := m.buffer()
	if _, err := msg.WriteTo(body); err != nil {
		return nil, nil, fmt.Errorf("mail: render message %s: %w", m.MessageID, err)
	}
	if !bytes.HasSuffix(body.Bytes(), []byte("\r\n")) {
		// SMTP (the DATA dot-writer) terminates the last line anyway;
		// doing it here keeps Bytes identical to what the server
		// receives.
		body.WriteString("\r\n")
	}
	return body, msg, nil
}

// buffer returns an empty buffer sized for m's rendering (the bodies with
// CRLF line ends, the MIME headers), so that writing it does not copy the
// message over and over while the buffer grows.
func (m *Message) buffer() *bytes.Buffer {
	n := len(m.Text) + len(m.HTML)
	return bytes.NewBuffer(make([]byte, 0, n+n/16+4<<10))
}

// wire is a message whose bodies travel 8bit, ready to be written as
// Bytes returns it: go-mail's rendering of the message with empty bodies
// (the headers, the MIME boundaries and part headers: the frame), and the
// places in it where the bodies go. Writing it copies each body once, with
// CRLF line ends, straight to the destination; go-mail would copy each
// body into a buffer of its own first, then into the message's.
type wire struct {
	frame      []byte
	at         [2]int // offsets in frame of the text and the HTML body
	text, html []byte
	length     int // of the whole message, as WriteTo writes it
}

// wire returns m's 8bit rendering, and the go-mail Msg that wrote its
// frame (for its sender and recipients). m must have passed check with
// bodies that fit 8bit.
func (m *Message) wire() (*wire, *gomail.Msg, error) {
	w := &wire{text: m.Text, html: m.HTML, at: [2]int{-1, -1}}
	var frame bytes.Buffer
	frame.Grow(2 << 10)
	// go-mail calls a part's body writer once it has written the part's
	// headers to the output (frame), and copies to the output what the
	// writer wrote: nothing, here.
	mark := func(i int) func(io.Writer) (int64, error) {
		return func(io.Writer) (int64, error) {
			w.at[i] = frame.Len()
			return 0, nil
		}
	}
	html := mark(1)
	if len(m.HTML) == 0 {
		html = nil
	}
	msg, err := m.newMsg(gomail.NoEncoding, mark(0), html)
	if err != nil {
		return nil, nil, err
	}
	if _, err := msg.WriteTo(&frame); err != nil {
		return nil, nil, fmt.Errorf("mail: render message %s: %w", m.MessageID, err)
	}
	w.frame = frame.Bytes()
	if w.at[0] < 0 || (len(m.HTML) > 0 && w.at[1] < w.at[0]) {
		return nil, nil, fmt.Errorf("mail: render message %s: go-mail did not write the bodies in order", m.MessageID)
	}
	if len(m.HTML) == 0 {
		w.at[1], w.html = len(w.frame), nil
	}
	w.length = len(w.frame) + crlfLen(w.text) + crlfLen(w.html)
	if !w.endsCRLF() {
		w.length += 2
	}
	return w, msg, nil
}

// crlfLen is the length of s with every "\n" written as "\r\n".
func crlfLen(s []byte) int { return len(s) + bytes.Count(s, []byte("\n")) }

// endsCRLF reports whether the frame with the bodies spliced in ends with
// a line end: whether its last non-empty piece does. The bodies have no CR
// (fits8bit), so a body written with CRLF line ends ends with one exactly
// when it ends with "\n".
func (w *wire) endsCRLF() bool {
	crlf := []byte("\r\n")
	switch {
	case len(w.frame) > w.at[1]:
		return bytes.HasSuffix(w.frame, crlf)
	case len(w.html) > 0:
		return bytes.HasSuffix(w.html, []byte("\n"))
	case w.at[1] > w.at[0]:
		return bytes.HasSuffix(w.frame[:w.at[1]], crlf)
	case len(w.text) > 0:
		return bytes.HasSuffix(w.text, []byte("\n"))
	}
	return bytes.HasSuffix(w.frame[:w.at[0]], crlf)
}

// Len is the length of the message WriteTo writes.
func (w *wire) Len() int { return w.length }

// WriteTo writes the message to dst: the frame with the bodies spliced in,
// their lines ending in CRLF, and a final CRLF when the message would end
// without one (as the DATA dot-writer adds it; see Bytes).
func (w *wire) WriteTo(dst io.Writer) (int64, error) {
	var total int64
	for i, piece := range [...][]byte{w.frame[:w.at[0]], nil, w.frame[w.at[0]:w.at[1]], nil, w.frame[w.at[1]:]} {
		var n int64
		var err error
		switch i {
		case 1:
			n, err = writeCRLF(dst, w.text)
		case 3:
			n, err = writeCRLF(dst, w.html)
		default:
			var k int
			k, err = dst.Write(piece)
			n = int64(k)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	if !w.endsCRLF() {
		n, err := io.WriteString(dst, "\r\n")
		return total + int64(n), err
	}
	return total, nil
}

// build validates m and returns a fresh go-mail Msg for it, with 8bit
// bodies when they fit and onlyQP is false (see Bytes). Each call returns a
// new Msg because go-mail's WriteTo mutates the Msg it writes.
func (m *Message) build(onlyQP bool) (*gomail.Msg, error) {
	enc, err := m.check(onlyQP)
	if err != nil {
		return nil, err
	}
	// Unencoded bodies are written as they are, so their lines get their
	// CRLF here (the SMTP dot-writer would add the CRs; Bytes must not
	// differ); quoted-printable makes CRLF itself.
	crlf := enc == gomail.NoEncoding
	var html func(io.Writer) (int64, error)
	if len(m.HTML) > 0 {
		html = bodyWriter(m.HTML, crlf)
	}
	return m.newMsg(enc, bodyWriter(m.Text, crlf), html)
}

// check validates m and returns the encoding of its bodies: none (8bit)
// when they fit and onlyQP is false, else quoted-printable.
func (m *Message) check(onlyQP bool) (gomail.Encoding, error) {
	if m == nil {
		return "", errors.New("mail: message is nil")
	}
	if err := validMessageID(m.MessageID); err != nil {
		return "", fmt.Errorf("mail: message MessageID %q: %w", m.MessageID, err)
	}
	id := m.MessageID
	if m.From == nil || m.From.Address == "" {
		return "", fmt.Errorf("mail: message %s: From is required", id)
	}
	if _, err := netmail.ParseAddress(m.From.String()); err != nil {
		return "", fmt.Errorf("mail: message %s: From %q: %w", id, m.From.Address, err)
	}
	if _, err := netmail.ParseAddress(m.To); err != nil {
		return "", fmt.Errorf("mail: message %s: To %q: %w: %w", id, m.To, errBadRecipient, err)
	}
	if m.Date.IsZero() {
		return "", fmt.Errorf("mail: message %s: Date is required (output must be deterministic)", id)
	}
	if len(m.Text) == 0 {
		return "", fmt.Errorf("mail: message %s: Text is required", id)
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return "", fmt.Errorf("mail: message %s: Subject contains a line break", id)
	}
	if m.ListID != "" && !printableASCII(m.ListID) {
		return "", fmt.Errorf("mail: message %s: ListID %q must be printable ASCII", id, m.ListID)
	}

	// 8bit skips quoted-printable's per-byte encoding and its "=3D"s, a
	// quarter of the cost of handing a digest over, and makes the message
	// smaller.
	enc := gomail.EncodingQP
	if !onlyQP && fits8bit(m.Text) && fits8bit(m.HTML) {
		enc = gomail.NoEncoding
	}
	return enc, nil
}

// newMsg returns a go-mail Msg for m (validated by build) with the bodies
// in encoding enc written by text and, when not nil, html (the HTML
// alternative).
func (m *Message) newMsg(enc gomail.Encoding, text, html func(io.Writer) (int64, error)) (*gomail.Msg, error) {
	id := m.MessageID
	to, err := netmail.ParseAddress(m.To)
	if err != nil {
		return nil, fmt.Errorf("mail: message %s: To %q: %w: %w", id, m.To, errBadRecipient, err)
	}
	msg := gomail.NewMsg(
		gomail.WithCharset(gomail.CharsetUTF8),
		gomail.WithEncoding(enc),
		gomail.WithBoundary(mimeBoundary(m)),
		gomail.WithNoDefaultUserAgent(),
	)
	msg.FromMailAddress(m.From)
	msg.ToMailAddress(to)
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(id)
	msg.SetDateWithValue(m.Date)
	if m.ListID != "" {
		msg.SetGenHeader(headerListID, m.ListID)
	}
	if m.AutoSubmitted {
		msg.SetGenHeader(headerAutoSubmitted, "auto-generated")
		msg.SetGenHeader(headerXAutoRespSupp, "All")
	}
	if err := setUnsubscribe(msg, m.UnsubscribeURL, m.UnsubscribeMailto); err != nil {
		return nil, fmt.Errorf("mail: message %s: %w", id, err)
	}
	msg.SetBodyWriter(gomail.TypeTextPlain, text)
	if html != nil {
		msg.AddAlternativeWriter(gomail.TypeTextHTML, html)
	}
	return msg, nil
}

// setUnsubscribe writes List-Unsubscribe and, with a URL, List-Unsubscribe-Post.
//
// go-mail writes "preformatted" headers by ranging over a map, so two of them
// come out in random order (that is why SetListUnsubscribeOneClick, which sets
// two, is not used). List-Unsubscribe is the only preformatted header we set
// (preformatted so a long signed URL is never folded inside the <...>);
// List-Unsubscribe-Post goes through SetGenHeader, which go-mail sorts.
func setUnsubscribe(msg *gomail.Msg, rawURL, mailto string) error {
	if rawURL == "" && mailto == "" {
		return nil
	}
	var uris []string
	oneClick := false
	if rawURL != "" {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("UnsubscribeURL %q must be an absolute http(s) URL", rawURL)
		}
		if !headerSafeURI(rawURL) {
			return fmt.Errorf("UnsubscribeURL %q contains characters not allowed in a header", rawURL)
		}
		// RFC 8058 asks for https; production configuration enforces an
		// https PUBLIC_URL, development keeps http so one-click works locally.
		oneClick = true
		uris = append(uris, "<"+rawURL+">")
	}
	if mailto != "" {
		a, err := netmail.ParseAddress(mailto)
		if err != nil || !headerSafeURI(a.Address) {
			return fmt.Errorf("UnsubscribeMailto %q is not a plain address", mailto)
		}
		uris = append(uris, "<mailto:"+a.Address+"?subject=unsubscribe>")
	}
	msg.SetGenHeaderPreformatted(headerListUnsub, strings.Join(uris, ", "))
	if oneClick {
		msg.SetGenHeader(headerListUnsubPost, oneClickPostValue)
	}
	return nil
}

// mimeBoundary returns the multipart boundary for m: "followfeed-" and 32 hex
// digits of SHA-256(MessageID, attempt). It is stable for a MessageID, so
// Bytes is reproducible, and it is re-derived with the next attempt number in
// the (practically impossible) case that the text or HTML contains it, since
// a boundary must not occur in the parts (RFC 2046 §5.1.1). Quoted-printable
// leaves [0-9a-z-] alone, so checking the raw bodies is sufficient.
func mimeBoundary(m *Message) string {
	var b string
	var buf [len(boundaryPrefix) + 32]byte // the boundary as bytes, for the bodies
	for attempt := range maxBoundaryAttempts {
		sum := sha256.Sum256([]byte(m.MessageID + "\x00" + strconv.Itoa(attempt)))
		b = boundaryPrefix + hex.EncodeToString(sum[:16])
		bb := append(buf[:0], b...)
		if !bytes.Contains(m.Text, bb) && !bytes.Contains(m.HTML, bb) && !strings.Contains(m.Subject, b) {
			return b
		}
	}
	return b
}

// validMessageID accepts id-left "@" id-right made of printable ASCII without
// spaces, angle brackets or a second "@" (RFC 5322 §3.6.4, dot-atom-ish).
func validMessageID(id string) error {
	if id == "" {
		return errors.New("is required")
	}
	left, right, ok := strings.Cut(id, "@")
	if !ok || left == "" || right == "" || strings.Contains(right, "@") {
		return errors.New(`must look like "left@domain"`)
	}
	for _, r := range id {
		if r <= ' ' || r > '~' || strings.ContainsRune(`<>()[]\",;:`, r) {
			return fmt.Errorf("contains %q", r)
		}
	}
	return nil
}

func printableASCII(s string) bool {
	for _, r := range s {
		if r < ' ' || r > '~' {
			return false
		}
	}
	return true
}

// headerSafeURI reports whether s can sit inside <...> in a header unchanged.
func headerSafeURI(s string) bool {
	for _, r := range s {
		if r <= ' ' || r > '~' || r == '<' || r == '>' {
			return false
		}
	}
	return true
}

// fits8bit reports whether s can travel as an 8bit body: valid UTF-8, no NUL
// or bare CR, and no line longer than 998 octets (RFC 5322 2.1.1).
func fits8bit(s []byte) bool {
	// IndexByte rather than ContainsAny: it scans a 100 KB body in
	// vectorised blocks, ContainsAny byte by byte.
	if bytes.IndexByte(s, 0) >= 0 || bytes.IndexByte(s, '\r') >= 0 || !utf8.Valid(s) {
		return false
	}
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\n')
		if i < 0 {
			return len(s) <= 998
		}
		if i > 998 {
			return false
		}
		s = s[i+1:]
	}
	return true
}

// bodyWriter writes s, with "\n" turned into "\r\n" when crlf is set.
// go-mail buffers each body in a bytes.Buffer: that buffer is sized for
// the whole body first, and the lines are written into it as they are
// (no converted copy of the body is made).
func bodyWriter(s []byte, crlf bool) func(io.Writer) (int64, error) {
	return func(w io.Writer) (int64, error) {
		if !crlf {
			n, err := w.Write(s)
			return int64(n), err
		}
		if b, ok := w.(*bytes.Buffer); ok {
			b.Grow(crlfLen(s))
		}
		return writeCRLF(w, s)
	}
}

// writeCRLF writes s to w with every "\n" written as "\r\n".
func writeCRLF(w io.Writer, s []byte) (int64, error) {
	var total int64
	for len(s) > 0 {
		line := s
		i := bytes.IndexByte(s, '\n')
		if i >= 0 {
			line = s[:i]
		}
		n, err := w.Write(line)
		total += int64(n)
		if err != nil {
			return total, err
		}
		if i < 0 {
			break
		}
		n, err = io.WriteString(w, "\r\n")
		total += int64(n)
		if err != nil {
			return total, err
		}
		s = s[i+1:]
	}
	return total, nil
}
