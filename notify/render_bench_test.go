package notify

import (
	"bytes"
	"fmt"
	netmail "net/mail"
	"net/url"
	"testing"
	"time"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/mail"
)

func benchContent() DigestContent {
	c := DigestContent{Heading: "Your daily papers — Monday 30 November", Total: 130, Omitted: 30,
		FeedURL: "https://followfeed.test/feeds/fft_abc.atom", ManageURL: "https://followfeed.test/settings?token=ffl_x", UnsubscribeURL: "https://followfeed.test/unsubscribe/ffl_y"}
	for g := range 5 {
		grp := DigestGroup{Name: fmt.Sprintf("Group %d", g), Omitted: 2}
		for i := range 20 {
			grp.Papers = append(grp.Papers, DigestPaper{ID: int64(g*20 + i + 1), Title: fmt.Sprintf("A reasonably long title of a paper number %d about things & stuff", i),
				Authors: []string{"Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra"}, AbsURL: "https://arxiv.org/abs/2301.00001",
				PDFURL: "https://arxiv.org/pdf/2301.00001", Reasons: []string{"cs.LG", "Mingzhi Wen"}, Categories: []string{"cs.LG", "cs.AI"},
				Published: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)})
		}
		c.Groups = append(c.Groups, grp)
	}
	return c
}

func BenchmarkRenderDigest100(b *testing.B) {
	c := benchContent()
	for b.Loop() {
		if _, _, err := RenderDigest(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderDigest100Shared renders the same 100 papers through one
// Renderer, as a send job's batch does for papers many users share.
func BenchmarkRenderDigest100Shared(b *testing.B) {
	c := benchContent()
	var r Renderer
	for b.Loop() {
		if _, _, err := r.Digest(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMessageBytes100(b *testing.B) {
	c := benchContent()
	text, html, _ := RenderDigest(c)
	m := &mail.Message{From: &netmail.Address{Address: "digest@followfeed.test"}, To: "a@example.org", Subject: "x", Text: []byte(text), HTML: []byte(html), MessageID: "digest.1.x@followfeed.test", Date: time.Now()}
	for b.Loop() {
		if _, err := m.Bytes(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderDigest100Reused renders as a send job does: through one
// Renderer, into the buffers of the previous digest.
func BenchmarkRenderDigest100Reused(b *testing.B) {
	c := benchContent()
	var r Renderer
	for b.Loop() {
		if _, _, err := r.DigestReused(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDigestMessage100Shared is what a send job does per digest
// before the socket: render through a shared Renderer into its reused
// buffers, then build the MIME message (Message.Bytes writes it as
// SMTPSender sends it, but into a new buffer: SMTPSender writes it to the
// connection).
func BenchmarkDigestMessage100Shared(b *testing.B) {
	benchDigestMessage(b, benchContent())
}

// benchDigestMessage renders c and builds its message b.N times, as a
// send job does per digest before the socket.
func benchDigestMessage(b *testing.B, c DigestContent) {
	var r Renderer
	from := &netmail.Address{Address: "digest@followfeed.test"}
	for b.Loop() {
		text, html, err := r.DigestReused(c)
		if err != nil {
			b.Fatal(err)
		}
		m := &mail.Message{From: from, To: "a@example.org", Subject: DigestSubject(c), Text: text, HTML: html,
			MessageID: "digest.1.x@followfeed.test", Date: time.Now(), ListID: "followfeed digests <digests.followfeed.test>",
			UnsubscribeURL: c.UnsubscribeURL, AutoSubmitted: true}
		if _, err := m.Bytes(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFeedbackLinks100 signs the feedback links of a digest of 100
// papers (three each), as build does per digest.
func BenchmarkFeedbackLinks100(b *testing.B) {
	base, _ := url.Parse("https://papers.example.org")
	addrs := account.NewAddresses(nil, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, nil)
	b.ReportAllocs()
	for b.Loop() {
		for id := int64(12_345_678); id < 12_345_678+MaxPerDigest; id++ {
			_ = FeedbackLinks{More: addrs.FeedbackURL(1_234_567, 3, id, feedbackMore), Less: addrs.FeedbackURL(1_234_567, 3, id, feedbackLess),
				Save: addrs.FeedbackURL(1_234_567, 3, id, feedbackSaved)}
		}
	}
}

// BenchmarkDigestMessage100Feedback is BenchmarkDigestMessage100Shared of
// a digest of 100 real papers with their feedback links, newest first.
func BenchmarkDigestMessage100Feedback(b *testing.B) {
	benchDigestMessage(b, realisticDigest(b, false))
}

// BenchmarkWriteWhy is one best-first paper's "Why first" line, both parts,
// with the reasons a digest's papers usually carry.
func BenchmarkWriteWhy(b *testing.B) {
	why := []string{"with Hélène Dupont-Aignan, a co-author of Ann One", "like 3 papers you marked", "about galaxy, cluster and lensing"}
	var t, h bytes.Buffer
	for b.Loop() {
		t.Reset()
		h.Reset()
		writeWhy(&t, &h, why)
	}
}
