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
	"unicode/utf8"
)

// DigestContent is everything a digest email shows; the caller has selected
// and grouped the papers already. RenderDigest shows it as given: it neither
// sorts nor de-duplicates.
type DigestContent struct {
	Heading        string        // e.g. "Your daily papers — Sunday 29 November"
	Groups         []DigestGroup // one per follow that matched, in order
	Total          int           // distinct papers in the period
	Omitted        int           // papers not shown (over the 100 cap): "and N more" linking to FeedURL
	FeedURL        string        // the user's private Atom feed (absolute); required when anything is omitted
	ManageURL      string        // "manage preferences" link (absolute, signed by the caller); required
	UnsubscribeURL string        // one-click unsubscribe page (absolute); required
}

// DigestGroup is the papers shown under one follow.
type DigestGroup struct {
	Name    string // "Mingzhi Wen", "cs.LG — Machine Learning"
	Papers  []DigestPaper
	Omitted int // papers of this group not shown (over 20): "and N more" linking to FeedURL
}

// DigestPaper is one paper as the digest shows it.
type DigestPaper struct {
	Title      string
	Authors    []string // shown up to MaxAuthors, then "et al."
	AbsURL     string
	PDFURL     string
	Reasons    []string // every follow that matched, e.g. ["Mingzhi Wen", "cs.LG"]
	Categories []string
	Published  time.Time // shown as a date when set
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
	"rule": func(s string) string { return strings.Repeat("-", min(textWidth, max(3, utf8.RuneCountInString(s)))) },
	"more": morePapers,
}

var (
	textTemplates = texttemplate.Must(texttemplate.New("").Funcs(templateFuncs).ParseFS(templateFS, "templates/*.txt.tmpl"))
	htmlTemplates = htmltemplate.Must(htmltemplate.New("").Funcs(templateFuncs).ParseFS(templateFS, "templates/*.html.tmpl"))
)

// DigestSubject says what is inside: "1 new paper: cs.LG", "7 new papers:
// Mingzhi Wen, cs.LG and 2 more" (the first two group names, then "and N
// more" counting the remaining groups), "No new papers since your last digest" when Total
// is 0. A group name is shortened to the part before " — ", so
// "cs.LG — Machine Learning" reads "cs.LG". The result is one line.
func DigestSubject(c DigestContent) string {
	if c.Total <= 0 {
		return "No new papers since your last digest"
	}
	s := newPapers(c.Total)
	var names []string
	for _, g := range c.Groups {
		name, _, _ := strings.Cut(oneLine(g.Name), " — ")
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

// digestView is what the digest templates see.
type digestView struct {
	DigestContent
	Summary   string // "7 new papers"
	Preheader string // hidden preview line of the HTML part
	Groups    []groupView
}

type groupView struct {
	Name    string
	Papers  []paperView
	Omitted int
}

// paperView is one paper, rendered once in Go for both parts: the digest
// templates only place the blocks (a template interpolation per field and
// paper made rendering 40 times slower).
type paperView struct {
	Text string
	HTML htmltemplate.HTML
}

// renderPaper renders paper number n (1-based) of its group. Every text is
// HTML-escaped; links other than http(s) are left out, as html/template
// would neutralise them.
func renderPaper(n int, p DigestPaper) paperView {
	title := oneLine(p.Title)
	authors := authorLine(p.Authors)
	reason := reasonLine(p.Reasons)
	meta := metaLine(p.Categories, p.Published)
	abs, pdf := safeURL(p.AbsURL), safeURL(p.PDFURL)

	var t strings.Builder
	t.WriteString(wrap(strconv.Itoa(n)+". ", "   ", title))
	for _, line := range []string{authors, reason, meta} {
		if line != "" {
			t.WriteString("\n")
			t.WriteString(wrap("   ", "   ", line))
		}
	}
	if abs != "" {
		t.WriteString("\n   Abstract: " + abs)
	}
	if pdf != "" {
		t.WriteString("\n   PDF:      " + pdf)
	}

	var h strings.Builder
	esc := htmlstd.EscapeString
	h.WriteString(`<tr>` + "\n" + `<td style="padding:14px 20px 16px 20px;border-bottom:1px solid #e5e7eb;">` + "\n")
	if abs != "" {
		h.WriteString(`<a href="` + esc(abs) + `" style="font-size:17px;line-height:24px;font-weight:bold;color:#1d4ed8;text-decoration:none;">` + esc(title) + `</a>`)
	} else {
		h.WriteString(`<span style="font-size:17px;line-height:24px;font-weight:bold;color:#111827;">` + esc(title) + `</span>`)
	}
	if authors != "" {
		h.WriteString("\n" + `<p style="margin:6px 0 0 0;font-size:16px;line-height:24px;color:#374151;">` + esc(authors) + `</p>`)
	}
	if reason != "" {
		h.WriteString("\n" + `<p style="margin:4px 0 0 0;font-size:14px;line-height:20px;color:#047857;">` + esc(reason) + `</p>`)
	}
	if meta != "" {
		h.WriteString("\n" + `<p style="margin:2px 0 0 0;font-size:14px;line-height:20px;color:#6b7280;">` + esc(meta) + `</p>`)
	}
	if abs != "" || pdf != "" {
		h.WriteString("\n" + `<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:10px 0 0 0;">` + "\n<tr>")
		if abs != "" {
			h.WriteString("\n" + `<td style="padding:0 10px 0 0;"><a href="` + esc(abs) + `" style="display:inline-block;padding:10px 18px;font-size:16px;line-height:20px;color:#1d4ed8;text-decoration:none;border:1px solid #1d4ed8;border-radius:6px;">Abstract</a></td>`)
		}
		if pdf != "" {
			h.WriteString("\n" + `<td style="padding:0;"><a href="` + esc(pdf) + `" style="display:inline-block;padding:10px 18px;font-size:16px;line-height:20px;color:#1d4ed8;text-decoration:none;border:1px solid #1d4ed8;border-radius:6px;">PDF</a></td>`)
		}
		h.WriteString("\n</tr>\n</table>")
	}
	h.WriteString("\n</td>\n</tr>")
	return paperView{Text: t.String(), HTML: htmltemplate.HTML(h.String())}
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
// part is escaped by html/template and uses tables with inline styles only.
// It returns an error when ManageURL or UnsubscribeURL is empty, or FeedURL
// is empty while something is omitted.
func RenderDigest(c DigestContent) (text, html string, err error) {
	if c.ManageURL == "" || c.UnsubscribeURL == "" {
		return "", "", errors.New("notify: render digest: ManageURL and UnsubscribeURL are required")
	}
	v := digestView{DigestContent: c, Summary: "No new papers"}
	if c.Total > 0 {
		v.Summary = newPapers(c.Total)
	}
	v.Preheader = DigestSubject(c)
	needFeed := c.Omitted > 0
	for _, g := range c.Groups {
		gv := groupView{Name: oneLine(g.Name), Omitted: g.Omitted}
		needFeed = needFeed || g.Omitted > 0
		for i, p := range g.Papers {
			gv.Papers = append(gv.Papers, renderPaper(i+1, p))
		}
		v.Groups = append(v.Groups, gv)
	}
	if needFeed && c.FeedURL == "" {
		return "", "", errors.New(`notify: render digest: FeedURL is required for "and N more"`)
	}
	if text, err = execText("digest.txt.tmpl", v); err != nil {
		return "", "", err
	}
	if html, err = execHTML("digest.html.tmpl", v); err != nil {
		return "", "", err
	}
	return text, html, nil
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

func execText(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := textTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("notify: render %s: %w", name, err)
	}
	return b.String(), nil
}

func execHTML(name string, data any) (string, error) {
	var b bytes.Buffer
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
// single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

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
	var b strings.Builder
	b.WriteString(first)
	col := utf8.RuneCountInString(first)
	lineEmpty := true
	for _, w := range strings.Fields(s) {
		n := utf8.RuneCountInString(w)
		if !lineEmpty && col+1+n > textWidth {
			b.WriteString("\n")
			b.WriteString(indent)
			col = utf8.RuneCountInString(indent)
			lineEmpty = true
		}
		if !lineEmpty {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
		lineEmpty = false
	}
	return b.String()
}
