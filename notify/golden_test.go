package notify

import (
	"bytes"
	"flag"
	htmltemplate "html/template"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDigestReusedReusesItsBuffers: once a Renderer rendered a digest,
// DigestReused renders the next one (of the same size) into the same
// memory, allocating a small part of its bodies.
func TestDigestReusedReusesItsBuffers(t *testing.T) {
	c := benchContent()
	var r Renderer
	text, html, err := r.DigestReused(c)
	if err != nil {
		t.Fatal(err)
	}
	size := len(text) + len(html)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	text2, html2, err := r.DigestReused(c)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(size/4) {
		t.Errorf("the second digest allocated %d bytes for %d bytes of bodies", alloc, size)
	}
	if want, wantHTML, _ := RenderDigest(c); string(text2) != want || string(html2) != wantHTML {
		t.Error("the second digest renders otherwise than RenderDigest")
	}
}

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from the current rendering")

// goldenDigests are the digests whose renderings testdata/golden holds:
// the sample (with its feedback links), empty ones (plain, of a user
// following nothing, without an announcement, with the harvest behind),
// one without a feed, one with "Not by …?" links, a best-first one (why
// each paper ranks, the rest counted by follow), and one whose
// user-controlled strings are hostile (markup, quotes, CR/LF). Their
// footers name what the user follows.
func goldenDigests() map[string]DigestContent {
	pub := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	empty := DigestContent{Heading: "Your weekly papers", ManageURL: manageURL, UnsubscribeURL: unsubURL}
	noAnn := empty
	noAnn.NoAnnouncement = true
	noAnn.Following = "2 categories"
	behind := empty
	behind.HarvestBehind = "The arXiv harvest is 14 hours behind"
	behind.Following = "1 query"
	behindWithPapers := sampleDigest()
	behindWithPapers.HarvestBehind = "The arXiv harvest is 3 hours behind"
	noFeed := sampleDigest()
	noFeed.FeedURL, noFeed.Omitted = "", 0
	for i := range noFeed.Groups {
		noFeed.Groups[i].Omitted = 0
	}
	disputes := sampleDigest()
	disputes.Groups[0].Papers[0].Researchers = []ReasonFollow{{ID: "r1", Name: "Mingzhi Wen", DisputeURL: "https://followfeed.example/dispute?f=r1&sig=x"}}
	hostile := DigestContent{
		Heading:        "Your daily papers <script>alert(1)</script> \"q\" 'a' &amp;\r\nBcc: x@evil.example",
		Following:      "1 institution, 3 queries and 1 paper",
		Total:          3,
		Omitted:        1,
		FeedURL:        "https://followfeed.example/feeds/a.atom?x=\"><script>alert(2)</script>",
		ManageURL:      "https://followfeed.example/settings?u=1&sig=\"'<>",
		UnsubscribeURL: "javascript:alert(3)",
		HarvestBehind:  "behind <b>\"x\"</b>\r\n",
		Groups: []DigestGroup{{
			Name:    "<script>alert('label')</script> \"Wen\"\r\nX-Header: y",
			Omitted: 2,
			Papers: []DigestPaper{{
				Title:       "<script>alert(\"title\")</script> & 'quotes'\r\nSubject: spoofed",
				Authors:     []string{"<img src=x onerror=alert(1)>", "O'Brien \"Bob\"\r\nTo: z"},
				AbsURL:      "https://arxiv.org/abs/2611.00009?q=\"><script>",
				PDFURL:      "javascript:alert(4)",
				Reasons:     []string{"<b>label</b>", "cs.LG\r\n"},
				Categories:  []string{"cs.LG<script>"},
				Published:   pub,
				Researchers: []ReasonFollow{{ID: "r2", Name: "<i>Wen</i>\r\n\"", DisputeURL: "https://followfeed.example/d?f=\"'<>"}},
				Why:         []string{"<b>like</b> \"3\" papers you marked\r\nBcc: x@evil.example", "about <script>"},
				Feedback:    FeedbackLinks{More: "https://followfeed.example/feedback/m?x=\"'<>", Less: "javascript:alert(5)", Save: "data:text/html,<b>"},
			}},
		}},
		OmittedBy: []FollowCount{{Name: "<script>alert('follow')</script>\r\nX-Count: 1", N: 1}},
	}
	best := DigestContent{
		Heading:        "Your daily papers — Monday 30 November",
		Following:      "1 researcher and 2 categories",
		Total:          186,
		Omitted:        183,
		OmittedBy:      []FollowCount{{Name: "astro-ph.GA", N: 120}, {Name: "cs.LG", N: 60}, {Name: NotRankedName, N: 3}},
		SubjectNames:   []string{"Ann One", "astro-ph.GA — Astrophysics of Galaxies"},
		FeedURL:        feedURL,
		ManageURL:      manageURL,
		UnsubscribeURL: unsubURL,
		Groups: []DigestGroup{{Name: BestGroupName, Papers: []DigestPaper{
			{ID: 11, Title: "Weak lensing shear of galaxy clusters", Authors: []string{"Ann One", "Bob Two"}, AbsURL: "https://arxiv.org/abs/2611.00011",
				PDFURL: "https://arxiv.org/pdf/2611.00011", Reasons: []string{"Ann One", "astro-ph.GA"}, Categories: []string{"astro-ph.GA"}, Published: pub,
				Why: []string{"with your co-author Bob Two", "like 3 papers you marked"}, Feedback: feedbackLinks(11)},
			{ID: 12, Title: "Cluster mass maps from cosmic shear", Authors: []string{"C. Stranger"}, AbsURL: "https://arxiv.org/abs/2611.00012",
				PDFURL: "https://arxiv.org/pdf/2611.00012", Reasons: []string{"astro-ph.GA"}, Categories: []string{"astro-ph.GA"}, Published: pub,
				Why: []string{"about shear, cluster and mass", "like 3 papers you marked", "with your co-author Bob Two", "a fourth reason not shown"}, Feedback: feedbackLinks(12)},
			{ID: 13, Title: "Attention for galaxy morphology", Authors: []string{"D. Stranger"}, AbsURL: "https://arxiv.org/abs/2611.00013",
				PDFURL: "https://arxiv.org/pdf/2611.00013", Reasons: []string{"cs.LG"}, Categories: []string{"cs.LG", "astro-ph.GA"}, Published: pub, Feedback: feedbackLinks(13)},
		}}},
	}
	return map[string]DigestContent{
		"sample": sampleDigest(), "empty": empty, "no-announcement": noAnn, "behind": behind,
		"behind-with-papers": behindWithPapers, "no-feed": noFeed, "disputes": disputes, "hostile": hostile, "best": best,
	}
}

// TestRenderDigestGolden: the digests render byte for byte as recorded in
// testdata/golden (written with -update-golden by the template rendering
// that the Go writers of the head and foot replaced), alone and through one
// shared Renderer.
func TestRenderDigestGolden(t *testing.T) {
	var shared Renderer
	for name, c := range goldenDigests() {
		text, html, err := RenderDigest(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, sh, err := shared.Digest(c)
		if err != nil || st != text || sh != html {
			t.Errorf("%s: a shared Renderer renders it otherwise (%v)", name, err)
		}
		rt, rh, err := shared.DigestReused(c)
		if err != nil || string(rt) != text || string(rh) != html {
			t.Errorf("%s: DigestReused renders it otherwise (%v)", name, err)
		}
		for ext, got := range map[string]string{".txt": text, ".html": html} {
			path := filepath.Join("testdata", "golden", name+ext)
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden rendering:\n%s\n---- want\n%s", path, got, want)
			}
		}
	}
}

// TestRenderDigestHostile: markup in a paper's title, authors, reasons,
// categories and why it ranks, in a follow label or a follow's count, and
// in URLs (feedback links too) is escaped in the HTML part (no element, no
// javascript: or data: link), and their CR/LF break no line in either
// part.
func TestRenderDigestHostile(t *testing.T) {
	text, html, err := RenderDigest(goldenDigests()["hostile"])
	if err != nil {
		t.Fatal(err)
	}
	lower := strings.ToLower(html)
	for _, bad := range []string{"<script", "<img", "<b>", "<i>", "javascript:", "data:text"} {
		if strings.Contains(lower, bad) {
			t.Errorf("HTML part contains %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt; &amp; &#39;quotes&#39; Subject: spoofed", "&lt;script&gt;alert(&#39;label&#39;)&lt;/script&gt; &#34;Wen&#34; X-Header: y", `href="#ZgotmplZ"`,
		// why it ranks, a feedback link and a follow's count, escaped
		"Why first: &lt;b&gt;like&lt;/b&gt; &#34;3&#34; papers you marked Bcc: x@evil.example · about &lt;script&gt;",
		`<a href="https://followfeed.example/feedback/m?x=&#34;&#39;&lt;&gt;">More like this</a></small>`,
		"1 from &lt;script&gt;alert(&#39;follow&#39;)&lt;/script&gt; X-Count: 1"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML part lacks %q", want)
		}
	}
	// The feedback links that are not http(s) are left out, in both parts.
	for name, part := range map[string]string{"text": text, "HTML": html} {
		if strings.Contains(part, "Less like this") || strings.Contains(part, "Save") {
			t.Errorf("%s part shows a feedback link that is not http(s)", name)
		}
	}
	for name, part := range map[string]string{"text": text, "HTML": html} {
		for _, injected := range []string{"Subject: spoofed", "X-Header: y", "To: z"} {
			if i := strings.Index(part, injected); i < 0 || i > 0 && part[i-1] == '\n' {
				t.Errorf("%s part: %q missing or at the start of a line", name, injected)
			}
		}
		// Why it ranks and a follow's count are wrapped with their
		// sentences, their CR/LF gone.
		if !strings.Contains(oneLine(part), "papers you marked Bcc: x@evil.example") {
			t.Errorf("%s part: why the paper ranks is not one line", name)
		}
		if !strings.Contains(oneLine(part), "</script> X-Count: 1") && !strings.Contains(part, "&lt;/script&gt; X-Count: 1") {
			t.Errorf("%s part: the follow's count is not on the line of its name", name)
		}
	}
	if !strings.Contains(text, `<script>alert("title")</script> & 'quotes' Subject: spoofed`) {
		t.Error("text part does not show the title as it is, on one line")
	}
}

// TestHTMLEscapingAsHTMLTemplate: htmlText and htmlURL escape as
// html/template does in text and in href="…", over hostile and random
// strings.
func TestHTMLEscapingAsHTMLTemplate(t *testing.T) {
	tmpl := htmltemplate.Must(htmltemplate.New("").Parse(`<p>{{.}}</p><a href="{{.}}">x</a>`))
	samples := []string{
		"", "plain", "<script>alert('x')</script>", `"quoted" & 'single' + plus`, "line\r\nbreak\x00nul",
		"javascript:alert(1)", "JavaScript:x", "data:text/html,<b>", "mailto:a@b.example?subject=x y", "HTTPS://Example.org/a b?c=d&e=f#g",
		"https://x.example/%41%zz%4", "https://x.example/(paren)[br]{curly}|pipe\\back^caret`tick", "/relative:path", "?q=1:2", "#frag",
		"https://x.example/é ü 🚀", "\xff\xfe invalid utf-8 \xc3", "\ufdd0\ufffe", "%", "a%2", "%2g",
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rnd.IntN(24))
		for i := range b {
			b[i] = byte(rnd.IntN(256))
			if rnd.IntN(3) > 0 { // mostly ASCII
				b[i] &= 0x7f
			}
		}
		if rnd.IntN(4) == 0 {
			b = append([]byte("https://"), b...)
		}
		samples = append(samples, string(b))
	}
	for _, s := range samples {
		var want strings.Builder
		if err := tmpl.Execute(&want, s); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		got.WriteString("<p>")
		htmlText(&got, s)
		got.WriteString(`</p><a href="`)
		htmlURL(&got, s)
		got.WriteString(`">x</a>`)
		if got.String() != want.String() {
			t.Errorf("%q:\n got %q\nwant %q", s, got.String(), want.String())
		}
	}
}
