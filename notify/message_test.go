package notify

import (
	"bytes"
	"errors"
	stdhtml "html"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const (
	feedURL   = "https://followfeed.example/feeds/0123456789abcdef0123456789abcdef.atom"
	manageURL = "https://followfeed.example/settings?u=42&sig=c2lnbmF0dXJl"
	unsubURL  = "https://followfeed.example/unsubscribe?u=42&sig=c2lnbmF0dXJl"
)

var titles = []string{
	"Déjà vu: <b>bold</b> claims & counter-claims in representation learning 🚀 with a title long enough to wrap",
	"Attention is all you need, again",
	"Sparse\n   mixtures of experts",
}

func sampleDigest() DigestContent {
	pub := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	return DigestContent{
		Heading:        "Your daily papers — Sunday 29 November",
		Total:          27,
		Omitted:        5,
		FeedURL:        feedURL,
		ManageURL:      manageURL,
		UnsubscribeURL: unsubURL,
		Groups: []DigestGroup{
			{Name: "Mingzhi Wen", Omitted: 3, Papers: []DigestPaper{{
				Title:      titles[0],
				Authors:    []string{"Mingzhi Wen", "Ada Lovelace", "Alan Turing", "Grace Hopper", "Emmy Noether", "Kurt Gödel", "John von Neumann", "Claude Shannon", "Edsger Dijkstra"},
				AbsURL:     "https://arxiv.org/abs/2611.00001",
				PDFURL:     "https://arxiv.org/pdf/2611.00001",
				Reasons:    []string{"Mingzhi Wen", "cs.LG"},
				Categories: []string{"cs.LG", "stat.ML"},
				Published:  pub,
			}}},
			{Name: "cs.LG — Machine Learning", Omitted: 7, Papers: []DigestPaper{
				{Title: titles[1], Authors: []string{"A. Vaswani"}, AbsURL: "https://arxiv.org/abs/2611.00002", PDFURL: "https://arxiv.org/pdf/2611.00002", Reasons: []string{"cs.LG"}, Categories: []string{"cs.LG"}, Published: pub},
				{Title: titles[2], Authors: []string{"N. Shazeer"}, AbsURL: "https://arxiv.org/abs/2611.00003", PDFURL: "https://arxiv.org/pdf/2611.00003", Reasons: []string{"cs.LG"}, Categories: []string{"cs.LG"}, Published: pub},
			}},
		},
	}
}

func sampleMessage(t testing.TB, id string) *Message {
	t.Helper()
	c := sampleDigest()
	text, html, err := RenderDigest(c)
	if err != nil {
		t.Fatal(err)
	}
	return &Message{
		From:              &mail.Address{Name: "followfeed", Address: "digests@followfeed.example"},
		To:                "Réader Ünicode <reader@example.org>",
		Subject:           DigestSubject(c) + " — Déjà vu 🚀",
		Text:              text,
		HTML:              html,
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

	if body["text/plain"] != strings.ReplaceAll(m.Text, "\r\n", "\n") {
		t.Errorf("decoded text part differs from Message.Text:\n%q\n%q", body["text/plain"], m.Text)
	}
	if body["text/html"] != m.HTML {
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
	m.Text += "\n--" + first + "\n"
	if b := mimeBoundary(m); b == first || strings.Contains(m.Text, b) {
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
	m.HTML = ""
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
		{"no text", func(m *Message) { m.Text = "" }, false},
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

func TestDigestSubject(t *testing.T) {
	g := func(names ...string) []DigestGroup {
		var gs []DigestGroup
		for _, n := range names {
			gs = append(gs, DigestGroup{Name: n})
		}
		return gs
	}
	cases := []struct {
		c    DigestContent
		want string
	}{
		{DigestContent{Total: 0, Groups: g("cs.LG")}, "No new papers since your last digest"},
		{DigestContent{Total: 1, Groups: g("cs.LG")}, "1 new paper: cs.LG"},
		{DigestContent{Total: 1, Groups: g("cs.LG — Machine Learning")}, "1 new paper: cs.LG"},
		{DigestContent{Total: 3, Groups: g("Mingzhi Wen", "cs.LG")}, "3 new papers: Mingzhi Wen, cs.LG"},
		{DigestContent{Total: 7, Groups: g("Mingzhi Wen", "cs.LG — Machine Learning", "stat.ML", "Ada\nLovelace")}, "7 new papers: Mingzhi Wen, cs.LG and 2 more"},
		{DigestContent{Total: 4, Groups: g("A", "B", "C")}, "4 new papers: A, B and 1 more"},
		{DigestContent{Total: 2}, "2 new papers"},
	}
	for _, c := range cases {
		if got := DigestSubject(c.c); got != c.want {
			t.Errorf("DigestSubject(%d, %d groups) = %q, want %q", c.c.Total, len(c.c.Groups), got, c.want)
		}
	}
}

func TestRenderDigest(t *testing.T) {
	c := sampleDigest()
	text, html, err := RenderDigest(c)
	if err != nil {
		t.Fatal(err)
	}
	both := []string{
		"Your daily papers — Sunday 29 November",
		"27 new papers",
		"Mingzhi Wen",
		"cs.LG — Machine Learning",
		"Because you follow Mingzhi Wen · cs.LG",
		"Because you follow cs.LG",
		"Mingzhi Wen, Ada Lovelace, Alan Turing, Grace Hopper, Emmy Noether, Kurt Gödel, John von Neumann, Claude Shannon et al.",
		"and 3 more papers from Mingzhi Wen",
		"and 7 more papers from cs.LG — Machine Learning",
		"and 5 more papers in your feed",
		"cs.LG, stat.ML",
		"28 Nov 2026",
		"Manage preferences",
		"Unsubscribe",
		"Sparse mixtures of experts",
		"Attention is all you need, again",
	}
	for _, want := range both {
		if !strings.Contains(oneLine(text), want) {
			t.Errorf("text part lacks %q", want)
		}
		if !strings.Contains(html, want) {
			t.Errorf("HTML part lacks %q", want)
		}
	}
	if strings.Contains(text, "Edsger Dijkstra") || strings.Contains(html, "Edsger Dijkstra") {
		t.Error("ninth author shown")
	}
	// Titles: raw in text, escaped in HTML.
	if !strings.Contains(oneLine(text), oneLine(titles[0])) {
		t.Error("text part lacks the first title verbatim")
	}
	if !strings.Contains(html, "Déjà vu: &lt;b&gt;bold&lt;/b&gt; claims &amp; counter-claims") || strings.Contains(html, "<b>bold") {
		t.Error("HTML part does not escape the title")
	}
	// Links: full URLs in text, hrefs in HTML.
	for _, u := range []string{"https://arxiv.org/abs/2611.00001", "https://arxiv.org/pdf/2611.00001", "https://arxiv.org/abs/2611.00003", "https://arxiv.org/pdf/2611.00003", feedURL, manageURL, unsubURL} {
		if !strings.Contains(text, u) {
			t.Errorf("text part lacks URL %s", u)
		}
		if !strings.Contains(html, `href="`+strings.ReplaceAll(u, "&", "&amp;")+`"`) {
			t.Errorf("HTML part lacks link to %s", u)
		}
	}
	// Text wraps at 76 columns except for lines that hold a URL.
	for _, line := range strings.Split(text, "\n") {
		if utf8.RuneCountInString(line) > 76 && !strings.Contains(line, "://") {
			t.Errorf("text line longer than 76 columns: %q", line)
		}
	}
	// HTML: email-safe.
	lower := strings.ToLower(html)
	for _, bad := range []string{"<script", "<style", "<link", "<img", "javascript:", "@import"} {
		if strings.Contains(lower, bad) {
			t.Errorf("HTML contains %q", bad)
		}
	}
	for _, want := range []string{`name="viewport"`, "max-width:600px", "font-size:16px", `role="presentation"`} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestRenderDigestEmptyAndErrors(t *testing.T) {
	text, html, err := RenderDigest(DigestContent{Heading: "Your weekly papers", ManageURL: manageURL, UnsubscribeURL: unsubURL})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{text, html} {
		if !strings.Contains(part, "No new papers") || !strings.Contains(part, "Unsubscribe") || strings.Contains(part, "more papers") {
			t.Errorf("empty digest renders oddly:\n%s", part)
		}
	}
	c := sampleDigest()
	c.FeedURL = ""
	if _, _, err := RenderDigest(c); err == nil {
		t.Error("omitted papers without FeedURL accepted")
	}
	c = sampleDigest()
	c.UnsubscribeURL = ""
	if _, _, err := RenderDigest(c); err == nil {
		t.Error("missing UnsubscribeURL accepted")
	}
	c = sampleDigest()
	c.Groups[0].Papers[0].AbsURL = "javascript:alert(1)"
	_, html, err = RenderDigest(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, "javascript:") {
		t.Error("javascript: URL reached the HTML")
	}
}

func TestRenderConfirm(t *testing.T) {
	c := ConfirmContent{Email: "reader+x@example.org", ConfirmURL: "https://followfeed.example/confirm?t=abc&x=1", ManageURL: manageURL}
	subject, text, html, err := RenderConfirm(c)
	if err != nil {
		t.Fatal(err)
	}
	if subject != ConfirmSubject {
		t.Errorf("subject = %q", subject)
	}
	if !strings.Contains(text, c.Email) || !strings.Contains(text, c.ConfirmURL) || !strings.Contains(text, manageURL) {
		t.Errorf("text lacks email or links:\n%s", text)
	}
	if !strings.Contains(stdhtml.UnescapeString(html), c.Email) || !strings.Contains(html, `href="https://followfeed.example/confirm?t=abc&amp;x=1"`) {
		t.Errorf("HTML lacks email or link:\n%s", html)
	}
	if strings.Contains(strings.ToLower(html), "<style") || strings.Contains(strings.ToLower(html), "<script") {
		t.Error("HTML has style or script")
	}
	if _, _, _, err := RenderConfirm(ConfirmContent{Email: "a@b.example"}); err == nil {
		t.Error("missing ConfirmURL accepted")
	}
}

// TestRendererSharesPapersNotReasons: a Renderer that rendered a paper for
// one reader renders it for the next with that reader's number and reasons,
// byte for byte what a fresh rendering gives; papers without an ID are
// never confused with one another.
func TestRendererSharesPapersNotReasons(t *testing.T) {
	withIDs := func() DigestContent {
		c := sampleDigest()
		id := int64(0)
		for _, g := range c.Groups {
			for i := range g.Papers {
				id++
				g.Papers[i].ID = id
			}
		}
		return c
	}
	a, b := withIDs(), withIDs()
	// b shows a's papers in another order, with other reasons.
	for _, g := range b.Groups {
		for i := range g.Papers {
			g.Papers[i].Reasons = []string{"Someone Else", "math.AG"}
		}
	}
	slices.Reverse(b.Groups[1].Papers)
	b.Groups[0], b.Groups[1] = b.Groups[1], b.Groups[0]
	// c's only paper has no ID and another title than a's first.
	c := sampleDigest()
	c.Groups = c.Groups[:1]
	c.Groups[0].Papers = []DigestPaper{{Title: "An unrelated paper", AbsURL: "https://arxiv.org/abs/2402.99999"}}

	var r Renderer
	for _, dc := range []DigestContent{a, b, c, a} {
		wantText, wantHTML, err := RenderDigest(dc)
		if err != nil {
			t.Fatal(err)
		}
		text, html, err := r.Digest(dc)
		if err != nil {
			t.Fatal(err)
		}
		if text != wantText || html != wantHTML {
			t.Fatalf("shared rendering differs from a fresh one:\n%s\n---\n%s", text, wantText)
		}
	}
	text, _, _ := r.Digest(b)
	if !strings.Contains(text, "Someone Else") || strings.Contains(text, "follow Mingzhi Wen") {
		t.Errorf("b's reasons not its own:\n%s", text)
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
	long.HTML = strings.Replace(m.HTML, "</body>", "<p>"+strings.Repeat("é", 600)+"</p></body>", 1)
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
		if got["text/plain"] != strings.ReplaceAll(tc.m.Text, "\r\n", "\n") || got["text/html"] != tc.m.HTML {
			t.Errorf("%s bodies do not decode to the message's text", tc.want)
		}
	}
}
