package notify

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmlstd "html"
	htmltemplate "html/template"
	"net/url"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode"
	"unicode/utf8"
)

// DigestContent is everything a digest email shows; the caller has selected
// and grouped the papers already. RenderDigest shows it as given: it neither
// sorts nor de-duplicates.
type DigestContent struct {
	// Heading says what the digest is: "Your daily papers — Sunday 29
	// November", "Your weekly papers — week of …", "New papers just
	// matched your follows" (instant), "Your papers since your last
	// digest, sent on request — …" (by hand).
	Heading string
	// CatchUp: the one digest after a pause (its subject says so).
	CatchUp bool
	// Following is what the user follows, as the footer names it ("1
	// researcher, 2 categories and 1 query"); "" when nothing, and
	// the footer then says they asked for digests.
	Following      string
	Groups         []DigestGroup // one per follow that matched, in order (best first: one, BestGroupName)
	Total          int           // distinct papers in the period
	Omitted        int           // papers not shown (over the 100 cap, or the budget): "and N more" linking to FeedURL
	FeedURL        string        // the user's private Atom feed (absolute); required when anything is omitted
	InboxURL       string        // the inbox page (best first for a best-first digest): "or in your inbox" beside "and N more", when set
	ManageURL      string        // "manage preferences" link (absolute, signed by the caller); required
	UnsubscribeURL string        // one-click unsubscribe page (absolute); required
	// NoAnnouncement: arXiv made no announcement in the digest's window
	// (weekend, holiday); an empty digest says so instead of "No new
	// papers".
	NoAnnouncement bool
	// HarvestBehind, when set, says how the arXiv harvest is behind
	// ("The arXiv harvest is 14 hours behind"); the digest adds that the
	// papers will follow in the next one.
	HarvestBehind string
	// OmittedBy counts, for a best-first digest, the papers not shown by
	// the follow each came through ("120 from astro-ph.GA"), most first;
	// the digest lists them after its "and N more". Papers beyond the
	// ranked candidates have no follow to count under and are the last
	// entry, named NotRankedName.
	OmittedBy []FollowCount
	// SubjectNames, when set, are the follows the subject names, in
	// order: a best-first digest names the follows of its best papers.
	// When empty the subject names the groups.
	SubjectNames []string
	// spent: a best-first instant alert found the day's budget spent by
	// the user's earlier alerts and lists nothing; it is not sent.
	spent bool
}

// shown is how many papers c lists.
func (c DigestContent) shown() int {
	n := 0
	for _, g := range c.Groups {
		n += len(g.Papers)
	}
	return n
}

// NoAnnouncementLine is what an empty digest says when arXiv made no
// announcement in its window.
const NoAnnouncementLine = "arXiv made no announcement since your last digest"

// FollowLine is what a digest adds to DigestContent.HarvestBehind.
const FollowLine = "papers announced meanwhile will follow in your next digest."

// BehindNotice is the sentence a digest shows when the harvest is behind,
// "" when it is not.
func (c DigestContent) BehindNotice() string {
	if c.HarvestBehind == "" {
		return ""
	}
	return c.HarvestBehind + "; " + FollowLine
}

// FollowCount is a number of papers that came through one follow (Name,
// as reasons name it).
type FollowCount struct {
	Name string
	N    int
}

// BestGroupName heads the one list of a best-first digest.
const BestGroupName = "Best first for you"

// NotRankedName names, in DigestContent.OmittedBy, the papers of a window
// beyond the candidates a best-first digest ranks.
const NotRankedName = "not ranked"

// DigestGroup is the papers shown under one follow.
type DigestGroup struct {
	Name    string // "Mingzhi Wen", "cs.LG — Machine Learning"
	Papers  []DigestPaper
	Omitted int // papers of this group not shown (over 20): "and N more" linking to FeedURL
}

// DigestPaper is one paper as the digest shows it.
type DigestPaper struct {
	// ID, when not 0, lets a Renderer render the paper once for many
	// digests: papers with the same ID must agree on every field but
	// Reasons and Researchers.
	ID         int64
	Title      string
	Authors    []string // shown up to MaxAuthors, then "et al."; read-only (a batch's digests share it)
	AbsURL     string
	PDFURL     string
	Reasons    []string // every follow that matched, e.g. ["Mingzhi Wen", "cs.LG"]
	Categories []string
	Published  time.Time // shown as a date when set
	// ArxivID and Researchers (the researcher follows among the reasons)
	// let a user say "not this person" beside a researcher match.
	ArxivID     string
	Researchers []ReasonFollow
	// Why says why the paper ranks where it does in a best-first digest
	// ("with your co-author Ann One", "like 3 papers you marked"), the
	// strongest first; shown as "Why first: …". Per user, like Reasons.
	Why []string
	// Feedback are the paper's one-click feedback links for this user.
	// Per user: rendered per digest, never cached with the paper.
	Feedback FeedbackLinks
}

// FeedbackLinks are a paper's "More like this", "Less like this" and
// "Save" links (absolute, signed per user and paper:
// account.Addresses.FeedbackURL); a link that is empty or not http(s) is
// left out.
type FeedbackLinks struct {
	More, Less, Save string
	// Open is the paper's signed redirect (account.Addresses.OpenURL)
	// that marks it read on the way to arXiv: set only for users who
	// turned "remember what I opened" on (package inbox), so every other
	// digest is as long as before. It is a link of its own beside the
	// feedback links rather than the title's: a paper's title is rendered
	// once for every digest that lists it (DigestPaper.ID).
	Open string
}

// ReasonFollow is a follow that matched a paper: its id and the name the
// user reads for it. DisputeURL (absolute, signed, per user; optional)
// is the digest's "Not by …?" link; it is rendered per digest, never
// cached with the paper.
type ReasonFollow struct {
	ID         string
	Name       string
	DisputeURL string
}

// ConfirmContent is the double opt-in confirmation mail.
type ConfirmContent struct {
	Email      string // the address being confirmed
	ConfirmURL string // absolute, required
	ManageURL  string // absolute, optional
}

// MaxAuthors is how many authors a paper lists before "et al.".
const MaxAuthors = 8

// ConfirmSubject is the subject of the confirmation mail.
const ConfirmSubject = "Confirm your followfeed subscription"

// textWidth is the column the plain-text parts wrap at. Words longer than
// that (URLs) are never broken.
const textWidth = 76

//go:embed templates/*.tmpl
var templateFS embed.FS

var templateFuncs = map[string]any{
	"wrap": wrap,
}

var (
	textTemplates = texttemplate.Must(texttemplate.New("").Funcs(templateFuncs).ParseFS(templateFS, "templates/*.txt.tmpl"))
	htmlTemplates = htmltemplate.Must(htmltemplate.New("").Funcs(templateFuncs).ParseFS(templateFS, "templates/*.html.tmpl"))
)

// DigestSubject says what is inside: "1 new paper: cs.LG", "7 new papers:
// Mingzhi Wen, cs.LG and 2 more" (the first two group names, or of
// SubjectNames when set, then "and N more" counting the remaining ones),
// "No new papers since your last digest" when Total is 0. A group name is shortened to the part before " — ", so
// "cs.LG — Machine Learning" reads "cs.LG". The result is one line.
func DigestSubject(c DigestContent) string {
	if c.Total <= 0 {
		switch {
		case c.HarvestBehind != "":
			return "No new papers yet: the arXiv harvest is behind"
		case c.NoAnnouncement:
			return NoAnnouncementLine
		}
		return "No new papers since your last digest"
	}
	s := newPapers(c.Total)
	if c.CatchUp {
		s = "While you were away: " + s
	}
	named := c.SubjectNames
	if len(named) == 0 {
		for _, g := range c.Groups {
			named = append(named, g.Name)
		}
	}
	var names []string
	for _, n := range named {
		name, _, _ := strings.Cut(oneLine(n), " — ")
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return s
	}
	s += ": " + strings.Join(names[:min(2, len(names))], ", ")
	if len(names) > 2 {
		s += " and " + strconv.Itoa(len(names)-2) + " more"
	}
	return s
}

// digestView is what the digest's head and foot see (textHead, htmlHead,
// textFoot, htmlFoot).
type digestView struct {
	DigestContent
	Summary   string // "7 new papers"
	Preheader string // hidden preview line of the HTML part
	Notice    string // BehindNotice
	Nothing   string // the line of an empty digest
}

// groupView is what a group's heading and "and N more" see
// (textGroupHead, htmlGroupHead, textGroupFoot, htmlGroupFoot); its papers
// are written between them (Renderer.writePapers). Like the papers, the
// digest's fixed parts are written in Go, not by templates: a template
// interpolation per field and paper made rendering 40 times slower, and
// the head and foot templates' reflection cost a tenth of a digest's
// rendering.
type groupView struct {
	Name    string
	Omitted int
	FeedURL string
}

// paperParts is a paper's rendering without its number and reason line,
// which differ between digests.
type paperParts struct {
	title string // one line, not wrapped
	// numbered is the title wrapped after a number ("7. "), without the
	// number, by the number's width in digits less 1 (numbers 1 to 99):
	// wrapping depends on the width only, and a digest numbers its
	// papers from 1 to at most MaxPerDigest. Made with the rest, so that
	// parts never change once made (a partsCache shares them between
	// goroutines).
	numbered         [2]string
	textAfterReason  string // meta and link lines, each after "\n"
	textBeforeReason string // the authors line(s), after "\n"
	htmlBeforeReason string // the row's opening, the title and the authors
	htmlAfterReason  string // the meta and links line, before the row's end (htmlRowEnd)
}

// htmlRowEnd ends a paper's table row, after its per-digest feedback
// links.
const htmlRowEnd = "</td></tr>"

// Renderer renders digests, remembering each paper's rendering (by
// DigestPaper.ID) and each reason line, so a batch of digests showing the
// same papers renders each once. It is not safe for concurrent use; the
// zero value is ready.
type Renderer struct {
	papers map[int64]*paperParts
	// shared, when set, keeps the papers' renderings beyond this
	// Renderer: a Digester's batches share one (partsCache).
	shared  *partsCache
	reasons map[string][2]string // joined reasons → text, HTML
	// reasonKey is the scratch buffer reason builds its key in.
	reasonKey []byte
	bodies    [2]bytes.Buffer // DigestReused's text and HTML
	// perPaper is the most text and HTML written per paper shown so far
	// (with the fixed parts spread over the papers), so that later
	// digests size their buffers once.
	perPaper [2]int
}

// writeNumberedTitle writes pp's title wrapped after the paper's number n
// ("n. ") to t.
func (pp *paperParts) writeNumberedTitle(t *bytes.Buffer, n int) {
	var buf [24]byte
	num := append(strconv.AppendInt(buf[:0], int64(n), 10), ". "...)
	w := len(num) // ASCII
	var rest string
	if i := w - 3; i < len(pp.numbered) {
		rest = pp.numbered[i]
	} else {
		rest = wrap(string(num), "   ", pp.title)[w:]
	}
	t.Write(num)
	t.WriteString(rest)
}

func (r *Renderer) parts(p DigestPaper) *paperParts {
	if pp, ok := r.papers[p.ID]; ok && p.ID != 0 {
		return pp
	}
	var pp *paperParts
	if r.shared != nil && p.ID != 0 {
		pp = r.shared.get(p)
	}
	if pp == nil {
		pp = newPaperParts(p)
		if r.shared != nil && p.ID != 0 {
			r.shared.put(p, pp)
		}
	}
	if p.ID != 0 {
		if r.papers == nil {
			r.papers = map[int64]*paperParts{}
		}
		r.papers[p.ID] = pp
	}
	return pp
}

func (r *Renderer) reason(reasons []string) (text, html string) {
	// The key (the reasons joined by US) is built in r's scratch buffer:
	// a lookup by string(bytes) does not allocate, only a new entry does.
	key := r.reasonKey[:0]
	for i, reason := range reasons {
		if i > 0 {
			key = append(key, '\x1f')
		}
		key = append(key, reason...)
	}
	r.reasonKey = key
	if v, ok := r.reasons[string(key)]; ok {
		return v[0], v[1]
	}
	if line := reasonLine(reasons); line != "" {
		text = "\n" + wrap("   ", "   ", line)
		html = "\n" + `<div style="font-size:14px;color:#047857">` + htmlstd.EscapeString(line) + `</div>`
	}
	if r.reasons == nil {
		r.reasons = map[string][2]string{}
	}
	r.reasons[string(key)] = [2]string{text, html}
	return text, html
}

// newPaperParts renders what of p every digest shows alike. Every text is
// HTML-escaped; links other than http(s) are left out, as html/template
// would neutralise them.
func newPaperParts(p DigestPaper) *paperParts {
	pp := &paperParts{title: oneLine(p.Title)}
	pp.numbered[0] = wrap("1. ", "   ", pp.title)[len("1. "):]
	pp.numbered[1] = wrap("10. ", "   ", pp.title)[len("10. "):]
	authors := authorLine(p.Authors)
	meta := metaLine(p.Categories, p.Published)
	abs, pdf := safeURL(p.AbsURL), safeURL(p.PDFURL)

	if authors != "" {
		pp.textBeforeReason = "\n" + wrap("   ", "   ", authors)
	}
	// The builders are sized for what they will hold (HTML escaping
	// may add a little more), so they grow at most once.
	var t strings.Builder
	t.Grow(len(meta) + len(meta)/textWidth*4 + len(abs) + len(pdf) + 40)
	if meta != "" {
		t.WriteString("\n" + wrap("   ", "   ", meta))
	}
	if abs != "" {
		t.WriteString("\n   Abstract: " + abs)
	}
	if pdf != "" {
		t.WriteString("\n   PDF:      " + pdf)
	}
	pp.textAfterReason = t.String()

	// Compact markup: a digest of 100 papers must stay well under the
	// 102 KB at which Gmail clips a message (and hides its footer). Each
	// element starts a line, so lines stay far below SMTP's 998 octets
	// and the part can travel unencoded (see Message.Bytes).
	esc := htmlstd.EscapeString
	var h strings.Builder
	h.Grow(200 + len(abs) + len(pp.title) + len(authors) + (len(pp.title)+len(authors))/8)
	h.WriteString(`<tr><td style="padding:12px 20px;border-bottom:1px solid #e5e7eb">`)
	if abs != "" {
		h.WriteString("\n" + `<a href="` + esc(abs) + `" style="font-size:17px;font-weight:bold;color:#1d4ed8;text-decoration:none">` + esc(pp.title) + `</a>`)
	} else {
		h.WriteString("\n" + `<b style="font-size:17px">` + esc(pp.title) + `</b>`)
	}
	if authors != "" {
		h.WriteString("\n" + `<div style="color:#374151">` + esc(authors) + `</div>`)
	}
	pp.htmlBeforeReason = h.String()

	var links []string
	if abs != "" {
		links = append(links, `<a href="`+esc(abs)+`" style="color:#1d4ed8">Abstract</a>`)
	}
	if pdf != "" {
		links = append(links, `<a href="`+esc(pdf)+`" style="color:#1d4ed8">PDF</a>`)
	}
	h.Reset()
	h.Grow(160 + len(meta) + len(meta)/8 + len(abs) + len(pdf))
	if meta != "" || len(links) > 0 {
		line := esc(meta)
		if len(links) > 0 {
			if line != "" {
				line += " · "
			}
			line += strings.Join(links, " · ")
		}
		h.WriteString("\n" + `<div style="font-size:14px;color:#6b7280">` + line + `</div>`)
	}
	pp.htmlAfterReason = h.String()
	return pp
}

// writePapers writes a group's papers, numbered from 1, to both parts: in the
// text each is preceded by a blank line, in the HTML each table row starts
// a line. What is the user's own (why the paper ranks, "Not by …?" and the
// feedback links) is written here, per digest, around the paper's shared
// parts.
func (r *Renderer) writePapers(t, h *bytes.Buffer, papers []DigestPaper) {
	for i, p := range papers {
		pp := r.parts(p)
		rt, rh := r.reason(p.Reasons)
		t.WriteString("\n\n")
		pp.writeNumberedTitle(t, i+1)
		t.WriteString(pp.textBeforeReason)
		t.WriteString(rt)
		h.WriteString("\n")
		h.WriteString(pp.htmlBeforeReason)
		h.WriteString(rh)
		writeWhy(t, h, p.Why)
		// "Not by …?" beside each researcher match: per user, so
		// rendered here rather than with the paper's shared parts.
		for _, rf := range p.Researchers {
			if u := httpLink(rf.DisputeURL); u != "" {
				name := oneLine(rf.Name)
				t.WriteString("\n")
				wrapTo(t, "   ", "   ", "Not by "+name+"? Tell us:")
				t.WriteString("\n   ")
				t.WriteString(u)
				h.WriteString("\n" + `<div style="font-size:13px"><a href="`)
				h.WriteString(htmlstd.EscapeString(u))
				h.WriteString(`" style="color:#6b7280">Not by `)
				h.WriteString(htmlstd.EscapeString(name))
				h.WriteString(`?</a></div>`)
			}
		}
		t.WriteString(pp.textAfterReason)
		h.WriteString(pp.htmlAfterReason)
		writeFeedback(t, h, p.Feedback)
		h.WriteString(htmlRowEnd)
	}
}

// maxWhy is how many of a paper's Why texts a digest shows.
const maxWhy = 3

// writeWhy writes the line saying why a paper ranks where it does ("Why
// first: with your co-author Ann One · like 3 papers you marked"), the
// first maxWhy texts of why, each made one line (oneLine); nothing when
// why is empty. The line is made once, in a buffer on the stack, then
// wrapped for the text part and escaped for the HTML: it is on every
// paper of a best-first digest, where making it as strings (a builder,
// oneLine's scan, strings.FieldsSeq, html.EscapeString's copy) cost
// some 1 µs a paper (BenchmarkWriteWhy).
func writeWhy(t, h *bytes.Buffer, why []string) {
	var buf [256]byte
	line := buf[:0]
	n := 0
	for _, w := range why {
		if n == maxWhy {
			break
		}
		mark := len(line)
		if n == 0 {
			line = append(line, "Why first: "...)
		} else {
			line = append(line, " · "...)
		}
		text := len(line)
		if line = appendOneLine(line, w); len(line) == text {
			line = line[:mark] // all whitespace: no text
			continue
		}
		n++
	}
	if n == 0 {
		return
	}
	t.WriteString("\n")
	wrapLine(t, "   ", "   ", line)
	h.WriteString("\n" + `<div style="font-size:14px;color:#4b5563">`)
	escapeTo(h, line)
	h.WriteString(`</div>`)
}

// feedbackLabels are the feedback links' texts, in the order they are
// shown, with the text part's label (padded to align the URLs).
var feedbackLabels = [4][2]string{
	{"More like this", "   More like this: "},
	{"Less like this", "   Less like this: "},
	{"Save", "   Save:           "},
	// Open (FeedbackLinks.Open) says only "Open" in the HTML: with the
	// longer label a best-first digest of MaxPapersLimit papers would
	// pass Gmail's clip (TestDigestSizeWithOpenLinks); the text part
	// says what it does.
	{"Open", "   Open, mark read: "},
}

// writeFeedback writes a paper's feedback links: in the text one line per
// link, its label then its URL in full; in the HTML one line of three
// links in the least markup (a <small> line of its own, no style): they
// are three signed URLs of some 85 bytes on every paper of a digest that
// should stay under the 102 KB at which Gmail clips a message
// (TestDigestSizeWithFeedbackLinks).
func writeFeedback(t, h *bytes.Buffer, fb FeedbackLinks) {
	n := 0
	if fb == (FeedbackLinks{}) {
		return
	}
	for i, raw := range [4]string{fb.More, fb.Less, fb.Save, fb.Open} {
		u := httpLink(raw)
		if u == "" {
			continue
		}
		t.WriteString("\n")
		t.WriteString(feedbackLabels[i][1])
		t.WriteString(u)
		if n == 0 {
			h.WriteString("\n<small>")
		} else {
			h.WriteString(" · ")
		}
		h.WriteString(`<a href="`)
		h.WriteString(htmlstd.EscapeString(u))
		h.WriteString(`">`)
		h.WriteString(feedbackLabels[i][0])
		h.WriteString(`</a>`)
		n++
	}
	if n > 0 {
		h.WriteString("</small>")
	}
}

// httpLink keeps a link that starts http:// or https:// with a host and
// holds no space or control character, and drops anything else: what
// safeURL keeps, checked without parsing (a digest's 300 feedback links
// parsed cost it a tenth of its rendering); a link it keeps that url.Parse
// would refuse (a bad %-escape or port) is broken, never unsafe: it is
// escaped like any other.
func httpLink(s string) string {
	s = strings.TrimSpace(s)
	rest, ok := "", false
	for _, scheme := range [...]string{"https://", "http://"} {
		if len(s) > len(scheme) && strings.EqualFold(s[:len(scheme)], scheme) {
			rest, ok = s[len(scheme):], true
			break
		}
	}
	if !ok || rest[0] == '/' || rest[0] == '?' || rest[0] == '#' {
		return ""
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c <= ' ' || c == 0x7f {
			return ""
		}
	}
	return s
}

// safeURL keeps absolute http(s) URLs and drops anything else.
func safeURL(s string) string {
	s = strings.TrimSpace(s)
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return s
}

// RenderDigest returns the plain-text and HTML bodies of a digest. Both show
// every paper's title (linked to AbsURL), up to MaxAuthors authors then
// "et al.", the reason line ("Because you follow Mingzhi Wen · cs.LG"),
// categories and date, abstract and PDF links, each group's "and N more",
// the overall "and N more" linking to FeedURL, and a footer with "Manage
// preferences" (ManageURL) and "Unsubscribe" (UnsubscribeURL). The text part
// wraps at about 76 columns and lists URLs in full on their own. The HTML
// part is escaped as html/template escapes (see htmlText, htmlURL; the
// papers' fields with html.EscapeString) and uses tables with inline
// styles only.
// It returns an error when ManageURL or UnsubscribeURL is empty, or FeedURL
// is empty while something is omitted.
func RenderDigest(c DigestContent) (text, html string, err error) {
	return new(Renderer).Digest(c)
}

// Digest is RenderDigest, reusing what r rendered before.
func (r *Renderer) Digest(c DigestContent) (text, html string, err error) {
	var t, h bytes.Buffer
	if err := r.digest(&t, &h, c); err != nil {
		return "", "", err
	}
	return t.String(), h.String(), nil
}

// DigestReused is Digest, writing both parts into two buffers that r keeps
// from one DigestReused to the next, and handing out those buffers' bytes:
// they are valid only until r's next DigestReused, which writes them
// again. A caller that keeps a part longer copies it. A send job, which
// renders, sends and forgets one digest after the other (a mail.Message
// takes its bodies as bytes, and a mail.Sender keeps none after Send
// returns), so allocates no bodies per digest (about 130 KB for 100
// papers).
func (r *Renderer) DigestReused(c DigestContent) (text, html []byte, err error) {
	t, h := &r.bodies[0], &r.bodies[1]
	t.Reset()
	h.Reset()
	if err := r.digest(t, h, c); err != nil {
		return nil, nil, err
	}
	return t.Bytes(), h.Bytes(), nil
}

// digest writes c's plain-text part to t and its HTML part to h (see
// RenderDigest).
func (r *Renderer) digest(t, h *bytes.Buffer, c DigestContent) error {
	if c.ManageURL == "" || c.UnsubscribeURL == "" {
		return errors.New("notify: render digest: ManageURL and UnsubscribeURL are required")
	}
	v := digestView{DigestContent: c, Summary: "No new papers", Notice: c.BehindNotice(),
		Nothing: "Nothing new matched your follows this time. We will write again when there is something to read."}
	if c.Total > 0 {
		v.Summary = newPapers(c.Total)
	}
	switch {
	case c.HarvestBehind != "":
		v.Nothing = "Nothing has arrived for your follows yet."
	case c.NoAnnouncement && c.Total == 0:
		// Only an empty digest blames the calendar: pushed papers (and
		// late harvests) can arrive on days arXiv announced nothing.
		v.Summary = NoAnnouncementLine
		v.Nothing = "arXiv announces new papers on Sunday to Thursday evenings (US Eastern), not on its holidays. We will write again after the next announcement."
	}
	v.Preheader = DigestSubject(c)
	needFeed, shown := c.Omitted > 0, 0
	for _, g := range c.Groups {
		needFeed = needFeed || g.Omitted > 0
		shown += len(g.Papers)
	}
	if needFeed && c.FeedURL == "" {
		return errors.New(`notify: render digest: FeedURL is required for "and N more"`)
	}
	// Both parts are written straight into one buffer each, sized for
	// the papers (at least 320 and 720 bytes each, more when earlier
	// digests of r needed more) and the fixed parts.
	perText, perHTML := max(r.perPaper[0], 320), max(r.perPaper[1], 720)
	t.Grow(perText*shown + 2<<10)
	h.Grow(perHTML*shown + 6<<10)
	if shown > 0 {
		defer func() {
			r.perPaper[0] = max(r.perPaper[0], (t.Len()-2<<10)/shown+1)
			r.perPaper[1] = max(r.perPaper[1], (h.Len()-6<<10)/shown+1)
		}()
	}
	textHead(t, &v)
	htmlHead(h, &v)
	for _, g := range c.Groups {
		gv := groupView{Name: oneLine(g.Name), Omitted: g.Omitted, FeedURL: c.FeedURL}
		textGroupHead(t, gv)
		htmlGroupHead(h, gv)
		r.writePapers(t, h, g.Papers)
		textGroupFoot(t, gv)
		htmlGroupFoot(h, gv)
	}
	textFoot(t, &v)
	htmlFoot(h, &v)
	return nil
}

// RenderConfirm returns the subject (ConfirmSubject) and the plain-text and
// HTML bodies of the double opt-in mail, which show Email, link ConfirmURL in
// full and, when set, ManageURL. It returns an error when Email or
// ConfirmURL is empty.
func RenderConfirm(c ConfirmContent) (subject, text, html string, err error) {
	if c.Email == "" || c.ConfirmURL == "" {
		return "", "", "", errors.New("notify: render confirmation: Email and ConfirmURL are required")
	}
	if text, err = execText("confirm.txt.tmpl", c); err != nil {
		return "", "", "", err
	}
	if html, err = execHTML("confirm.html.tmpl", c); err != nil {
		return "", "", "", err
	}
	return ConfirmSubject, text, html, nil
}

// execText and execHTML execute a whole template into a string.
func execText(name string, data any) (string, error) {
	var b strings.Builder
	if err := textTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("notify: render %s: %w", name, err)
	}
	return b.String(), nil
}

func execHTML(name string, data any) (string, error) {
	var b strings.Builder
	if err := htmlTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("notify: render %s: %w", name, err)
	}
	return b.String(), nil
}

// newPapers returns "1 new paper", "7 new papers".
func newPapers(n int) string {
	if n == 1 {
		return "1 new paper"
	}
	return strconv.Itoa(n) + " new papers"
}

// morePapers returns "1 more paper", "3 more papers".
func morePapers(n int) string {
	if n == 1 {
		return "1 more paper"
	}
	return strconv.Itoa(n) + " more papers"
}

// oneLine collapses all whitespace (arXiv titles contain line breaks) to
// single spaces. A string that is one line already (most names and titles)
// is returned as it is.
func oneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isOneLine reports whether s has no leading, trailing or repeated
// spaces and no whitespace other than ' ' (what strings.Fields splits
// at): one look at a table per byte; a byte that may begin a Unicode
// space (lineBytes: 0xC2, 0xE1, 0xE2, 0xE3) has its rune decoded, so that
// names and titles with accents take this way too.
func isOneLine(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch lineBytes[s[i]] {
		case lineSpace:
			if s[i+1] == ' ' { // s does not end with a space: i+1 < len(s)
				return false
			}
		case lineBreak:
			return false
		case lineMaybe:
			if r, _ := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
				return false
			}
		}
	}
	return true
}

// What a byte is to isOneLine.
const (
	lineOther = iota
	lineSpace // ' '
	lineBreak // \t \n \v \f \r
	lineMaybe // the first byte of a Unicode space's UTF-8 (and of other runes)
)

var lineBytes = [256]uint8{' ': lineSpace, '\t': lineBreak, '\n': lineBreak, '\v': lineBreak, '\f': lineBreak, '\r': lineBreak,
	0xC2: lineMaybe, 0xE1: lineMaybe, 0xE2: lineMaybe, 0xE3: lineMaybe}

func authorLine(authors []string) string {
	var names []string
	for _, a := range authors {
		if a = oneLine(a); a != "" {
			names = append(names, a)
		}
	}
	if len(names) > MaxAuthors {
		return strings.Join(names[:MaxAuthors], ", ") + " et al."
	}
	return strings.Join(names, ", ")
}

func reasonLine(reasons []string) string {
	var rs []string
	for _, r := range reasons {
		if r = oneLine(r); r != "" {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return ""
	}
	return "Because you follow " + strings.Join(rs, " · ")
}

func metaLine(categories []string, published time.Time) string {
	var parts []string
	if len(categories) > 0 {
		parts = append(parts, strings.Join(categories, ", "))
	}
	if !published.IsZero() {
		parts = append(parts, "published "+published.UTC().Format("2 Jan 2006"))
	}
	return oneLine(strings.Join(parts, " · "))
}

// wrap word-wraps s at textWidth columns (counted in runes): the first line
// starts with first, the others with indent. Words are never split, so a long
// URL stays whole on a line of its own.
func wrap(first, indent, s string) string {
	var b bytes.Buffer
	b.Grow(len(first) + len(s) + len(s)/textWidth*(len(indent)+1))
	wrapTo(&b, first, indent, s)
	return b.String()
}

// wrapTo writes wrap(first, indent, s) to b.
func wrapTo(b *bytes.Buffer, first, indent, s string) {
	var buf [256]byte // most lines fit: no allocation
	wrapLine(b, first, indent, appendOneLine(buf[:0], s))
}

// wrapLine writes line, whose words are separated by single spaces (as
// appendOneLine makes them), word-wrapped at textWidth columns (counted
// in runes): the first line starts with first, the others with indent.
// Words are never split, so a long URL stays whole on a line of its own.
func wrapLine(b *bytes.Buffer, first, indent string, line []byte) {
	b.WriteString(first)
	col := utf8.RuneCountInString(first)
	if isASCII(line) {
		wrapASCII(b, col, indent, line)
		return
	}
	lineEmpty := true
	for i := 0; i < len(line); {
		j := i + bytes.IndexByte(line[i:], ' ')
		if j < i {
			j = len(line)
		}
		w := line[i:j]
		n := utf8.RuneCount(w)
		if !lineEmpty && col+1+n > textWidth {
			b.WriteByte('\n')
			b.WriteString(indent)
			col = utf8.RuneCountInString(indent)
			lineEmpty = true
		}
		if !lineEmpty {
			b.WriteByte(' ')
			col++
		}
		b.Write(w)
		col += n
		lineEmpty = false
		i = j + 1
	}
}

// wrapASCII is wrapLine after first (col its runes) for a line of ASCII,
// where a byte is a column: each output line is the longest run of words
// that fits, found by one search for its last space, and written at once
// (word by word, a best-first digest's Why lines, some 80 bytes each,
// cost half a microsecond apiece).
func wrapASCII(b *bytes.Buffer, col int, indent string, line []byte) {
	indentCols := utf8.RuneCountInString(indent)
	for {
		room := textWidth - col
		if len(line) <= room {
			b.Write(line)
			return
		}
		// The last space at which the line may break: line[:s] fits. A
		// first word that does not fit goes alone (s is its end).
		s := -1
		if room >= 1 {
			s = bytes.LastIndexByte(line[:room+1], ' ')
		}
		if s <= 0 {
			if s = bytes.IndexByte(line, ' '); s < 0 {
				b.Write(line)
				return
			}
		}
		b.Write(line[:s])
		b.WriteByte('\n')
		b.WriteString(indent)
		col, line = indentCols, line[s+1:]
	}
}

// isASCII says whether b is all ASCII.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendOneLine appends oneLine(s) to dst: the fields of s (as
// strings.Fields finds them: split at ASCII and Unicode whitespace)
// joined by single spaces.
func appendOneLine(dst []byte, s string) []byte {
	if isOneLine(s) {
		return append(dst, s...)
	}
	start := len(dst)
	for i := 0; i < len(s); {
		// Skip whitespace, then take the field up to the next.
		if c := s[i]; c < utf8.RuneSelf {
			if asciiSpace[c] {
				i++
				continue
			}
		} else if r, n := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
			i += n
			continue
		}
		j := i
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if asciiSpace[c] {
					break
				}
				j++
			} else {
				r, n := utf8.DecodeRuneInString(s[j:])
				if unicode.IsSpace(r) {
					break
				}
				j += n
			}
		}
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		dst = append(dst, s[i:j]...)
		i = j
	}
	return dst
}

// asciiSpace are the ASCII bytes strings.Fields splits at.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// escapeTo writes s escaped as html.EscapeString escapes it (<, >, &, '
// and "), without making the escaped copy a string.
func escapeTo(b *bytes.Buffer, s []byte) {
	last := 0
	for i, c := range s {
		if c >= utf8.RuneSelf || htmlEscapes[c] == "" {
			continue
		}
		b.Write(s[last:i])
		b.WriteString(htmlEscapes[c])
		last = i + 1
	}
	b.Write(s[last:])
}

// htmlEscapes are html.EscapeString's replacements.
var htmlEscapes = [utf8.RuneSelf]string{'<': "&lt;", '>': "&gt;", '&': "&amp;", '\'': "&#39;", '"': "&#34;"}
