package notify

import (
	"fmt"
	stdhtml "html"
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

// feedbackLinks are a paper's three feedback links as the sample shows
// them (the tokens' shape, not real signatures).
func feedbackLinks(n int) FeedbackLinks {
	link := func(v string) string {
		return fmt.Sprintf("https://followfeed.example/feedback/ffl_AQgBAg%02d%s.c2lnbmF0dXJlMDEyMzQ1Njc4OQ", n, v)
	}
	return FeedbackLinks{More: link("more"), Less: link("less"), Save: link("saved")}
}

func sampleDigest() DigestContent {
	pub := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	return DigestContent{
		Heading:        "Your daily papers — Sunday 29 November",
		Following:      "1 researcher and 1 category",
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
				Feedback:   feedbackLinks(1),
			}}},
			{Name: "cs.LG — Machine Learning", Omitted: 7, Papers: []DigestPaper{
				{Title: titles[1], Authors: []string{"A. Vaswani"}, AbsURL: "https://arxiv.org/abs/2611.00002", PDFURL: "https://arxiv.org/pdf/2611.00002", Reasons: []string{"cs.LG"}, Categories: []string{"cs.LG"}, Published: pub, Feedback: feedbackLinks(2)},
				{Title: titles[2], Authors: []string{"N. Shazeer"}, AbsURL: "https://arxiv.org/abs/2611.00003", PDFURL: "https://arxiv.org/pdf/2611.00003", Reasons: []string{"cs.LG"}, Categories: []string{"cs.LG"}, Published: pub, Feedback: feedbackLinks(3)},
			}},
		},
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

// A digest with papers never says arXiv announced nothing, even when its
// window held no announcement (papers pushed by the host on a weekend).
func TestRenderDigestWithPapersOutsideAnAnnouncement(t *testing.T) {
	c := sampleDigest()
	c.NoAnnouncement = true
	text, html, err := RenderDigest(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{text, html} {
		if strings.Contains(part, NoAnnouncementLine) || !strings.Contains(part, "27 new papers") {
			t.Errorf("a digest with 27 papers renders the no-announcement line or no count:\n%s", part)
		}
	}
	c = DigestContent{Heading: "Your daily papers", ManageURL: manageURL, UnsubscribeURL: unsubURL, NoAnnouncement: true}
	if text, _, _ := RenderDigest(c); !strings.Contains(text, NoAnnouncementLine) {
		t.Errorf("an empty digest without an announcement does not say so:\n%s", text)
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
// one user renders it for the next with that user's number and reasons,
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

// TestHTTPLink: a feedback link is kept only when it is http(s) with a
// host and no space or control character in it.
func TestHTTPLink(t *testing.T) {
	for in, want := range map[string]string{
		"https://followfeed.example/feedback/ffl_x.y": "https://followfeed.example/feedback/ffl_x.y",
		" HTTP://Followfeed.example/f?a=\"'<> ":       "HTTP://Followfeed.example/f?a=\"'<>",
		"http://h":                                    "http://h",
		"javascript:alert(1)":                         "",
		"JavaScript://x.example/%0aalert(1)":          "",
		"data:text/html,<b>":                          "",
		"https://":                                    "",
		"https:///path":                               "",
		"https://?q":                                  "",
		"https://a b.example/":                        "",
		"https://a.example/\nBcc: x":                  "",
		"https://a.example/\x7f":                      "",
		"ftp://a.example/":                            "",
		"//a.example/":                                "",
		"":                                            "",
	} {
		if got := httpLink(in); got != want {
			t.Errorf("httpLink(%q) = %q, want %q", in, got, want)
		}
	}
}
