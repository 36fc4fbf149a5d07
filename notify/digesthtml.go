package notify

import (
	"bytes"
	"strings"
)

// The HTML part of a digest is written by the functions below, in turn
// around each group's papers (Renderer.writePapers): htmlHead,
// htmlGroupHead and htmlGroupFoot per group, htmlFoot. They were
// html/template templates; written in Go they cost a digest no reflection,
// and they escape exactly as html/template did (htmlText, htmlURL; a test
// compares them with html/template over hostile strings). Email-client
// safe: tables for layout, inline styles only, no <style>, images, scripts
// or external resources; a single 600px column that shrinks on phones. An
// example of the whole part is testdata/golden/sample.html.

// htmlHead writes the document's head and the digest's heading, summary,
// harvest notice and the line of an empty digest; Preheader is the hidden
// preview line mail clients show beside the subject.
func htmlHead(h *bytes.Buffer, v *digestView) {
	h.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>`)
	htmlText(h, v.Heading)
	h.WriteString(`</title>
</head>
<body style="margin:0;padding:0;background-color:#f3f4f6;-webkit-text-size-adjust:100%;">
<div style="display:none;max-height:0;overflow:hidden;mso-hide:all;">`)
	htmlText(h, v.Preheader)
	h.WriteString(`</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background-color:#f3f4f6;">
<tr>
<td align="center" style="padding:16px 8px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%;max-width:600px;background-color:#ffffff;border:1px solid #e5e7eb;border-radius:8px;font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:16px;line-height:24px;color:#111827;">
<tr>
<td style="padding:24px 20px 8px 20px;">
<h1 style="margin:0;font-size:22px;line-height:30px;font-weight:bold;color:#111827;">`)
	htmlText(h, v.Heading)
	h.WriteString(`</h1>
<p style="margin:4px 0 0 0;font-size:16px;line-height:24px;color:#4b5563;">`)
	htmlText(h, v.Summary)
	h.WriteString(`</p>`)
	if v.Notice != "" {
		h.WriteString(`
<p style="margin:16px 0 0 0;padding:12px;font-size:16px;line-height:24px;color:#78350f;background-color:#fef3c7;border-radius:6px;">`)
		htmlText(h, v.Notice)
		h.WriteString(`</p>`)
	}
	if v.Total == 0 {
		h.WriteString(`
<p style="margin:16px 0 0 0;font-size:16px;line-height:24px;color:#111827;">`)
		htmlText(h, v.Nothing)
		h.WriteString(`</p>`)
	}
	h.WriteString(`
</td>
</tr>`)
}

// htmlGroupHead writes a group's name as an underlined heading row.
func htmlGroupHead(h *bytes.Buffer, g groupView) {
	h.WriteString(`
<tr>
<td style="padding:20px 20px 4px 20px;">
<h2 style="margin:0;padding:0 0 6px 0;font-size:18px;line-height:26px;font-weight:bold;color:#111827;border-bottom:2px solid #111827;">`)
	htmlText(h, g.Name)
	h.WriteString(`</h2>
</td>
</tr>`)
}

// htmlGroupFoot writes the group's "…and N more papers from <group> in your
// feed" link row when papers were omitted; else nothing.
func htmlGroupFoot(h *bytes.Buffer, g groupView) {
	if g.Omitted == 0 {
		return
	}
	h.WriteString(`
<tr>
<td style="padding:12px 20px 4px 20px;">
<a href="`)
	htmlURL(h, g.FeedURL)
	h.WriteString(`" style="display:inline-block;padding:10px 0;font-size:16px;line-height:24px;color:#1d4ed8;">…and `)
	htmlText(h, morePapers(g.Omitted))
	h.WriteString(` from `)
	htmlText(h, g.Name)
	h.WriteString(` in your feed</a>
</td>
</tr>`)
}

// htmlFoot writes the digest's "…and N more papers in your feed" button
// when papers were omitted (with their counts by follow below it:
// OmittedByLine, and "or in your inbox on the site" linking InboxURL,
// when set), then the footer: why the user gets the mail
// (whyLine), the feed, "Manage preferences" and "Unsubscribe"; and closes
// the document.
func htmlFoot(h *bytes.Buffer, v *digestView) {
	if v.Omitted != 0 {
		h.WriteString(`
<tr>
<td style="padding:20px 20px 4px 20px;">
<a href="`)
		htmlURL(h, v.FeedURL)
		h.WriteString(`" style="display:inline-block;padding:12px 20px;font-size:16px;line-height:20px;font-weight:bold;color:#ffffff;background-color:#1d4ed8;text-decoration:none;border-radius:6px;">…and `)
		htmlText(h, morePapers(v.Omitted))
		h.WriteString(` in your feed</a>`)
		if by := OmittedByLine(v.OmittedBy); by != "" {
			h.WriteString(`
<div style="padding:4px 0 0 0;font-size:14px;color:#4b5563;">`)
			htmlText(h, by)
			h.WriteString(`</div>`)
		}
		if v.InboxURL != "" {
			h.WriteString(`
<div style="padding:8px 0 0 0;font-size:15px;color:#4b5563;">or in <a href="`)
			htmlURL(h, v.InboxURL)
			h.WriteString(`" style="color:#1d4ed8;">your inbox on the site</a></div>`)
		}
		h.WriteString(`
</td>
</tr>`)
	}
	h.WriteString(`
<tr>
<td style="padding:24px 20px 24px 20px;border-top:1px solid #e5e7eb;font-size:14px;line-height:20px;color:#6b7280;">
<p style="margin:0 0 12px 0;">`)
	htmlText(h, whyLine(v.Following))
	if v.FeedURL != "" {
		h.WriteString(` Your papers are also in your <a href="`)
		htmlURL(h, v.FeedURL)
		h.WriteString(`" style="color:#4b5563;">private Atom feed</a>.`)
	}
	h.WriteString(`</p>
<p style="margin:0;">
<a href="`)
	htmlURL(h, v.ManageURL)
	h.WriteString(`" style="display:inline-block;padding:10px 12px 10px 0;font-size:15px;color:#4b5563;">Manage preferences</a>
<span style="color:#9ca3af;">&middot;</span>
<a href="`)
	htmlURL(h, v.UnsubscribeURL)
	h.WriteString(`" style="display:inline-block;padding:10px 12px;font-size:15px;color:#4b5563;">Unsubscribe</a>
</p>
</td>
</tr>
</table>
</td>
</tr>
</table>
</body>
</html>
`)
}

// htmlText writes s escaped for HTML text and quoted attribute values as
// html/template escapes a string there: NUL becomes U+FFFD, and " & ' + < >
// character references. Every other byte, UTF-8 or not, is kept.
func htmlText(h *bytes.Buffer, s string) {
	written := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		h.WriteString(s[written:i])
		h.WriteString(repl)
		written = i + 1
	}
	h.WriteString(s[written:])
}

// htmlURL writes s as the value of an href="…" as html/template writes a
// string there: a URL whose scheme is not http, https or mailto becomes
// "#ZgotmplZ"; every byte other than letters, digits, "-._~", the RFC 3986
// delimiters "!#$&*+,/:;=?@[]" and valid %-escapes is %-escaped (lower-case
// hex); then the result is escaped as htmlText escapes.
func htmlURL(h *bytes.Buffer, s string) {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") &&
		!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "mailto") {
		h.WriteString("#ZgotmplZ")
		return
	}
	const hex = "0123456789abcdef"
	var norm strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0:
			continue
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		}
		if written == 0 {
			norm.Grow(len(s) + 16)
		}
		norm.WriteString(s[written:i])
		norm.Write([]byte{'%', hex[c>>4], hex[c&15]})
		written = i + 1
	}
	if written == 0 {
		htmlText(h, s)
		return
	}
	norm.WriteString(s[written:])
	htmlText(h, norm.String())
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
