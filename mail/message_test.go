package mail

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const unsubURL = "https://followfeed.example/unsubscribe?u=42&sig=c2lnbmF0dXJl"

// sampleText and sampleHTML are a digest as notify renders it
// (testdata/digest.*, made by notify.RenderDigest from its sampleDigest):
// unicode, a long title, markup to escape.
var sampleText, sampleHTML = mustRead("testdata/digest.txt"), mustRead("testdata/digest.html")

func mustRead(name string) []byte {
	b, err := os.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sampleMessage(t testing.TB, id string) *Message {
	t.Helper()
	return &Message{
		From:              &mail.Address{Name: "followfeed", Address: "digests@followfeed.example"},
		To:                "Réader Ünicode <reader@example.org>",
		Subject:           "27 new papers: Mingzhi Wen, cs.LG" + " — Déjà vu 🚀",
		Text:              sampleText,
		HTML:              sampleHTML,
		MessageID:         id,
		Date:              time.Date(2026, 11, 29, 6, 0, 0, 0, time.FixedZone("CET", 3600)),
		ListID:            "followfeed digests <digests.followfeed.example>",
		UnsubscribeURL:    unsubURL,
		UnsubscribeMailto: "unsubscribe@followfeed.example",
		AutoSubmitted:     true,
	}
}

// parts parses raw as a multipart/alternative message and returns the
// decoded bodies by media type, plus the parsed message.
func parts(t *testing.T, raw []byte) (*mail.Message, map[string]string) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("net/mail cannot parse Bytes(): %v\n%s", err, raw)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" || params["boundary"] == "" {
		t.Fatalf("Content-Type = %q (%v), want multipart/alternative with boundary", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	out := map[string]string{}
	var order []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pt, pp, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(pp["charset"], "utf-8") {
			t.Errorf("%s charset = %q, want UTF-8", pt, pp["charset"])
		}
		body, err := io.ReadAll(p) // multipart decodes quoted-printable
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(body) {
			t.Errorf("%s part is not valid UTF-8", pt)
		}
		out[pt] = strings.ReplaceAll(string(body), "\r\n", "\n")
		order = append(order, pt)
	}
	if strings.Join(order, ",") != "text/plain,text/html" {
		t.Errorf("parts = %v, want text/plain then text/html", order)
	}
	return msg, out
}

func TestBytesStructureAndHeaders(t *testing.T) {
	m := sampleMessage(t, "digest.42.daily-2026-11-29@followfeed.example")
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Error("output has bare LF line endings")
	}
	for i, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 998 {
			t.Errorf("line %d longer than 998 bytes", i)
		}
	}
	msg, body := parts(t, raw)
	h := msg.Header
	dec := new(mime.WordDecoder)

	checks := map[string]string{
		"Message-Id":               "<digest.42.daily-2026-11-29@followfeed.example>",
		"List-Id":                  "followfeed digests <digests.followfeed.example>",
		"List-Unsubscribe":         "<" + unsubURL + ">, <mailto:unsubscribe@followfeed.example?subject=unsubscribe>",
		"List-Unsubscribe-Post":    "List-Unsubscribe=One-Click",
		"Auto-Submitted":           "auto-generated",
		"X-Auto-Response-Suppress": "All",
		"Mime-Version":             "1.0",
	}
	for k, want := range checks {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if n := len(h["Message-Id"]); n != 1 {
		t.Errorf("%d Message-ID headers", n)
	}
	date, err := h.Date()
	if err != nil || !date.Equal(m.Date) {
		t.Errorf("Date = %v (%v), want %v", date, err, m.Date)
	}
	subj, err := dec.DecodeHeader(h.Get("Subject"))
	if err != nil || subj != m.Subject {
		t.Errorf("Subject = %q (%v), want %q", subj, err, m.Subject)
	}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != "digests@followfeed.example" || from[0].Name != "followfeed" {
		t.Errorf("From = %v (%v)", from, err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != "reader@example.org" || to[0].Name != "Réader Ünicode" {
		t.Errorf("To = %v (%v)", to, err)
	}
	if h.Get("User-Agent") != "" || h.Get("X-Mailer") != "" {
		t.Error("go-mail's default User-Agent is set")
	}

	if body["text/plain"] != strings.ReplaceAll(string(m.Text), "\r\n", "\n") {
		t.Errorf("decoded text part differs from Message.Text:\n%q\n%q", body["text/plain"], m.Text)
	}
	if body["text/html"] != string(m.HTML) {
		t.Error("decoded HTML part differs from Message.HTML")
	}
	for _, want := range []string{"Déjà vu: <b>bold</b> claims & counter-claims", "🚀", "Kurt Gödel"} {
		if !strings.Contains(oneLine(body["text/plain"]), want) {
			t.Errorf("text part lacks %q", want)
		}
	}
	for _, want := range []string{"Déjà vu: &lt;b&gt;bold&lt;/b&gt; claims &amp; counter-claims", "🚀", "Kurt Gödel"} {
		if !strings.Contains(body["text/html"], want) {
			t.Errorf("HTML part lacks %q", want)
		}
	}
}

func TestBytesDeterministic(t *testing.T) {
	a, err := sampleMessage(t, "digest.1@followfeed.example").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := sampleMessage(t, "digest.1@followfeed.example").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("Bytes differ between calls:\n%s\n----\n%s", a, b)
		}
	}
	m := sampleMessage(t, "digest.1@followfeed.example")
	b1, _ := m.Bytes()
	b2, _ := m.Bytes()
	if !bytes.Equal(b1, b2) || !bytes.Equal(a, b1) {
		t.Error("Bytes differ when called twice on one Message")
	}
	c, _ := sampleMessage(t, "digest.2@followfeed.example").Bytes()
	msgA, _ := mail.ReadMessage(bytes.NewReader(a))
	msgC, _ := mail.ReadMessage(bytes.NewReader(c))
	if msgA.Header.Get("Content-Type") == msgC.Header.Get("Content-Type") {
		t.Error("different MessageIDs share a MIME boundary")
	}
}

func TestBoundaryAvoidsBodyContent(t *testing.T) {
	m := sampleMessage(t, "digest.3@followfeed.example")
	first := mimeBoundary(m)
	m.Text = append(bytes.Clone(m.Text), "\n--"+first+"\n"...)
	if b := mimeBoundary(m); b == first || bytes.Contains(m.Text, []byte(b)) {
		t.Errorf("boundary %q not re-derived although the text contains it", b)
	}
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	_, body := parts(t, raw)
	if !strings.Contains(body["text/plain"], first) {
		t.Error("text lost the boundary-like line")
	}
}

func TestBytesOptionalHeaders(t *testing.T) {
	m := sampleMessage(t, "digest.4@followfeed.example")
	m.UnsubscribeMailto = ""
	m.UnsubscribeURL = "http://localhost:8080/unsubscribe?u=1"
	m.AutoSubmitted = false
	m.ListID = ""
	m.HTML = nil
	raw, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := msg.Header
	if got := h.Get("List-Unsubscribe"); got != "<http://localhost:8080/unsubscribe?u=1>" {
		t.Errorf("List-Unsubscribe = %q", got)
	}
	if got := h.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q with a URL", got)
	}
	for _, k := range []string{"Auto-Submitted", "X-Auto-Response-Suppress", "List-Id"} {
		if h.Get(k) != "" {
			t.Errorf("%s set: %q", k, h.Get(k))
		}
	}
	if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt != "text/plain" {
		t.Errorf("text-only message has Content-Type %q", mt)
	}

	m.UnsubscribeURL = ""
	m.UnsubscribeMailto = "stop@followfeed.example"
	raw, err = m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	msg, _ = mail.ReadMessage(bytes.NewReader(raw))
	if got := msg.Header.Get("List-Unsubscribe"); got != "<mailto:stop@followfeed.example?subject=unsubscribe>" {
		t.Errorf("mailto-only List-Unsubscribe = %q", got)
	}
}

func TestBytesInvalid(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Message)
		rcpt   bool
	}{
		{"no message id", func(m *Message) { m.MessageID = "" }, false},
		{"message id with brackets", func(m *Message) { m.MessageID = "<a@b>" }, false},
		{"message id without at", func(m *Message) { m.MessageID = "digest.1" }, false},
		{"no date", func(m *Message) { m.Date = time.Time{} }, false},
		{"no from", func(m *Message) { m.From = nil }, false},
		{"bad to", func(m *Message) { m.To = "not an address" }, true},
		{"no text", func(m *Message) { m.Text = nil }, false},
		{"subject newline", func(m *Message) { m.Subject = "a\r\nBcc: x@y" }, false},
		{"list id non-ascii", func(m *Message) { m.ListID = "dïgests <d.example>" }, false},
		{"unsubscribe not absolute", func(m *Message) { m.UnsubscribeURL = "/unsubscribe" }, false},
		{"unsubscribe injection", func(m *Message) { m.UnsubscribeURL = "https://x.example/u>, <https://evil.example" }, false},
		{"unsubscribe mailto injection", func(m *Message) { m.UnsubscribeMailto = "a@b.example?x=<y>" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := sampleMessage(t, "digest.5@followfeed.example")
			c.mutate(m)
			_, err := m.Bytes()
			if err == nil {
				t.Fatal("Bytes succeeded")
			}
			if got := errors.Is(err, errBadRecipient); got != c.rcpt {
				t.Errorf("recipient error = %v, want %v (%v)", got, c.rcpt, err)
			}
		})
	}
}

// partEncodings returns each part's Content-Transfer-Encoding by media type.
func partEncodings(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	mr := multipart.NewReader(msg.Body, params["boundary"])
	out := map[string]string{}
	for {
		p, err := mr.NextRawPart() // keeps the encoding header
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		mt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out[mt] = p.Header.Get("Content-Transfer-Encoding")
	}
}

// TestBodiesTravel8bitWhenLinesFit: bodies go unencoded (8bit) when every
// line fits in 998 octets, quoted-printable otherwise; both decode to the
// same text, every line of the message ends in CRLF, and none is longer
// than 998 octets.
func TestBodiesTravel8bitWhenLinesFit(t *testing.T) {
	m := sampleMessage(t, "digest.1.x@followfeed.example")
	long := *m
	long.HTML = bytes.Replace(m.HTML, []byte("</body>"), []byte("<p>"+strings.Repeat("é", 600)+"</p></body>"), 1)
	for _, tc := range []struct {
		m    *Message
		want string
	}{{m, "8bit"}, {&long, "quoted-printable"}} {
		raw, err := tc.m.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		for ct, enc := range partEncodings(t, raw) {
			if enc != tc.want {
				t.Errorf("%s part: %s, want %s", ct, enc, tc.want)
			}
		}
		for i, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > 998 || strings.ContainsAny(line, "\r\n") {
				t.Fatalf("line %d: %d octets or a bare line break", i+1, len(line))
			}
		}
		_, got := parts(t, raw)
		if got["text/plain"] != strings.ReplaceAll(string(tc.m.Text), "\r\n", "\n") || got["text/html"] != string(tc.m.HTML) {
			t.Errorf("%s bodies do not decode to the message's text", tc.want)
		}
	}
}

// TestFits8bit: the line limit is 998 octets (the last line too, with or
// without its newline); NUL, a bare CR and invalid UTF-8 need encoding.
func TestFits8bit(t *testing.T) {
	long := strings.Repeat("é", 499) // 998 octets
	for s, want := range map[string]bool{
		"":                         true,
		"a\nb\n":                   true,
		long:                       true,
		long + "\n" + long:         true,
		long + "x":                 false,
		"a\n" + long + "x":         false,
		"a\n" + long + "x\nb":      false,
		"a\x00b":                   false,
		"a\r\nb":                   false,
		"a\xffb":                   false,
		strings.Repeat("a\n", 600): true,
	} {
		if got := fits8bit([]byte(s)); got != want {
			t.Errorf("fits8bit(%d octets ending %q) = %v, want %v", len(s), s[max(0, len(s)-3):], got, want)
		}
	}
}

// goMailBytes is the message as go-mail writes it whole, bodies included
// (as Bytes did before it spliced 8bit bodies into go-mail's frame).
func goMailBytes(t *testing.T, m *Message) []byte {
	t.Helper()
	msg, err := m.build(false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := msg.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// Bytes writes 8bit bodies into go-mail's frame itself: the result is
// byte for byte what go-mail writes with the bodies, for bodies with and
// without a final line end, text only or with HTML, ASCII or not.
func TestBytesSplicedEqualsGoMail(t *testing.T) {
	base := sampleMessage(t, "digest.7.daily-2026-11-29@followfeed.example")
	variants := map[string]func(m *Message){
		"sample":           func(*Message) {},
		"text only":        func(m *Message) { m.HTML = nil },
		"no final newline": func(m *Message) { m.Text = bytes.TrimRight(m.Text, "\n"); m.HTML = bytes.TrimRight(m.HTML, "\n") },
		"text only, no final newline": func(m *Message) {
			m.HTML, m.Text = nil, bytes.TrimRight(m.Text, "\n")
		},
		"one line each": func(m *Message) { m.Text, m.HTML = []byte("x"), []byte("<p>y</p>") },
		"blank lines":   func(m *Message) { m.Text, m.HTML = []byte("\n\na\n\n"), []byte("\n") },
		"ascii, minimal": func(m *Message) {
			m.Subject, m.To, m.ListID, m.UnsubscribeURL, m.UnsubscribeMailto, m.AutoSubmitted = "Hello", "r@example.org", "", "", "", false
		},
		"long subject":    func(m *Message) { m.Subject = strings.Repeat("Ünïcode subject words ", 12) },
		"mailto only":     func(m *Message) { m.UnsubscribeURL = "" },
		"header-ish body": func(m *Message) { m.Text = []byte("From: x\nSubject: y\n\n--followfeed-x\n") },
	}
	for name, change := range variants {
		m := *base
		change(&m)
		got, err := m.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := goMailBytes(t, &m); !bytes.Equal(got, want) {
			t.Errorf("%s: Bytes differs from go-mail's rendering:\n%q\n----\n%q", name, got, want)
		}
		w, _, err := m.wire()
		if err != nil {
			t.Fatal(err)
		}
		if w.Len() != len(got) {
			t.Errorf("%s: wire.Len() = %d, writes %d", name, w.Len(), len(got))
		}
	}
}
