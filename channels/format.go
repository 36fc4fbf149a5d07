package channels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"followfeed/internal/text"
	"followfeed/ranking"
)

// Event types a channel receives.
const (
	TypeMatched = "papers.matched" // new papers matched the user's follows
	TypeTest    = "channel.test"   // POST /v1/me/channels/{id}/test
)

// Event is the JSON body a webhook receives (documented under `webhooks` in
// openapi.json); chat messages are rendered from it.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData holds the event's papers, newest match first, or best first
// for the user (Order "best"). Fields are only ever added.
type EventData struct {
	Papers []PaperJSON `json:"papers"`
	// Order is "best" when Papers are best first for the user (their
	// digest settings' order best: package ranking); absent for newest
	// first.
	Order string `json:"order,omitempty"`
	// MoreInFeed counts the papers of the collection this event ends that
	// the user's daily budget held back (digest settings' max_papers):
	// they are in the user's feed and are not sent later. Absent for 0.
	MoreInFeed int `json:"more_in_feed,omitempty"`
}

// OrderBest is EventData.Order for papers best first.
const OrderBest = "best"

// PaperJSON is one paper of an event.
type PaperJSON struct {
	ArxivID    string    `json:"arxiv_id"`
	Title      string    `json:"title"`
	Authors    []string  `json:"authors"`
	Abstract   string    `json:"abstract"`
	Categories []string  `json:"categories"`
	Links      LinksJSON `json:"links"`
	Reasons    []Reason  `json:"reasons"`
	// Feedback are the user's one-click feedback links of the paper;
	// absent on a test event's sample paper.
	Feedback *FeedbackJSON `json:"feedback,omitempty"`
}

// FeedbackJSON are a paper's feedback links, each signed for the
// channel's user, this paper and one value: a GET shows a page with a
// button that records it (and the link works again to change or undo
// it). Revoking the user's links (POST /v1/me/email-links/revoke) ends
// them.
type FeedbackJSON struct {
	More string `json:"more"` // "more like this"
	Less string `json:"less"` // "less like this"
	Save string `json:"save"` // saved for later
}

// LinksJSON are a paper's arXiv pages.
type LinksJSON struct {
	Abs string `json:"abs"`
	PDF string `json:"pdf,omitempty"`
}

// Reason is a follow of the user that matched the paper.
type Reason struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Chat message limits: the providers' documented limits (Slack Block Kit:
// a message ≤ 50 blocks, a header's plain_text ≤ 150 characters, a
// section's text ≤ 3,000; Discord: content ≤ 2,000, ≤ 10 embeds, a title ≤
// 256, a description ≤ 4,096, all embeds' text together ≤ 6,000), and the
// shares of them each part of a paper gets, counted after escaping
// (chatText), so that a paper's section or embed stays within its limit
// whatever its text (see the sums below). text.Truncate and text.Shorten
// add an ellipsis after the count, hence the -1s.
const (
	slackPapersPerMessage   = 20       // 1 header + 20 × (section + feedback context) ≤ 50 blocks
	slackSectionChars       = 3000     // section text ≤ 3000
	slackHeaderChars        = 150 - 1  // header plain_text ≤ 150
	discordEmbedsPerMessage = 10       // ≤ 10 embeds
	discordContentChars     = 2000 - 1 // content ≤ 2000
	discordEmbedTotalChars  = 6000     // all embeds' text together ≤ 6000
	discordTitleChars       = 256
	discordDescriptionChars = 4096
	matrixPapersPerMessage  = 20
	authorsChars            = 200

	// abstractChars is how much of a paper's abstract a Slack or Discord
	// message shows: its first words, shortened at a word (text.Shorten).
	abstractChars = 280
	// Escaped shares of a Slack section or a Discord embed: escaping at
	// most doubles Discord's text and Slack's but for &, < and > (which
	// become entities of 4 and 5), hence the room.
	chatTitleChars    = 400
	chatAuthorsChars  = 400
	chatReasonsChars  = 400
	chatAbstractChars = 640
	// chatURLChars bounds a link's URL as sent; a longer one (a pushed
	// paper may carry 2,000 characters) is replaced by arXiv's own page.
	chatURLChars = 500
)

// The sums: a Slack section is "*<" abs "|" title ">*\n" authors "\n_"
// reasons "_\n" abstract "\n<" pdf "|PDF>", at most 2,857 characters,
// and its feedback context's text "<" more "|More like this> · <" less
// "|Less like this> · <" save "|Save>", at most 1,547; a Discord embed's
// description is authors "\n*" reasons "*\n" abstract "\n[PDF](" pdf ")"
// "\n[More like this](" more ") · [Less like this](" less ") · [Save]("
// save ")", at most 1,952 + 1,551. (A negative array length would not
// compile.)
var (
	_ = [slackSectionChars - (2 + chatURLChars + 1 + chatTitleChars + 3 + chatAuthorsChars + 2 + chatReasonsChars + 2 + chatAbstractChars + 2 + chatURLChars + 5)]struct{}{}
	_ = [slackSectionChars - (3*chatURLChars + 1 + 16 + 4 + 16 + 4 + 6)]struct{}{}
	_ = [discordDescriptionChars - (chatAuthorsChars + 2 + chatReasonsChars + 2 + chatAbstractChars + 7 + chatURLChars + 1 +
		1 + 17 + chatURLChars + 21 + chatURLChars + 11 + chatURLChars + 1)]struct{}{}
)

// feedbackLine is p's feedback links in a chat's syntax: link writes one
// from its URL, escaped by escape, and its label; " · " between them. A
// link whose escaped URL is longer than chatURLChars is left out (there
// is no other page to link instead); "" for a paper without links.
func feedbackLine(p PaperJSON, escape func(string) string, link func(url, label string) string) string {
	if p.Feedback == nil {
		return ""
	}
	var parts []string
	for _, l := range []struct {
		label, url string
	}{{ranking.More.Label(), p.Feedback.More}, {ranking.Less.Label(), p.Feedback.Less}, {ranking.Saved.Label(), p.Feedback.Save}} {
		if e := escape(l.url); l.url != "" && utf8.RuneCountInString(e) <= chatURLChars {
			parts = append(parts, link(e, l.label))
		}
	}
	return strings.Join(parts, " · ")
}

func authorLine(p PaperJSON) string {
	return text.Truncate(strings.Join(p.Authors, ", "), authorsChars)
}

func reasonLine(p PaperJSON) string {
	names := make([]string, len(p.Reasons))
	for i, r := range p.Reasons {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

// abstractLine is the first abstractChars characters of the paper's
// abstract, on one line, cut at a word.
func abstractLine(p PaperJSON) string {
	return text.Shorten(text.Collapse(p.Abstract, -1), abstractChars)
}

// chatText is s on one line, escaped by escape, in at most limit
// characters as sent: shortened at a word (text.Shorten) until its escaped
// form fits, so that no escape sequence is ever cut.
func chatText(s string, limit int, escape func(string) string) string {
	s = text.Collapse(s, -1)
	n, e := utf8.RuneCountInString(s), s
	if n > limit {
		// Shortened to the limit first: the loop below takes off what
		// escaping adds, and measured from the whole text it cut a long
		// title to almost nothing (a 2,000-character title to "…").
		n, e = limit, text.Shorten(s, limit)
	}
	e = escape(e)
	for utf8.RuneCountInString(e) > limit {
		// Escaping grows a character to at most 5; the ellipsis is one.
		n -= max((utf8.RuneCountInString(e)-limit)/5, 1)
		e = escape(text.Shorten(s, max(n, 0)))
	}
	return e
}

// linkURL is u for a chat link, or arXiv's own page of the paper (kind
// "abs" or "pdf") when u is empty, longer than chatURLChars once escaped,
// or holds a character that is not shown as itself (unprintable: a
// control or bidirectional formatting character, which a pushed paper's
// URL may carry and which would turn the rest of a plain-text line
// around). escape makes it safe inside the link's markup.
func linkURL(p PaperJSON, u, kind string, escape func(string) string) string {
	if e := escape(u); u != "" && utf8.RuneCountInString(e) <= chatURLChars && !strings.ContainsFunc(u, unprintable) {
		return e
	}
	return escape("https://arxiv.org/" + kind + "/" + p.ArxivID)
}

// unprintable says whether r is a control character, a space other than
// ' ', or a bidirectional or other formatting character (Unicode Cf).
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r != ' ' && unicode.IsSpace(r)
}

func headline(ev Event, part, parts, n int) string {
	s := fmt.Sprintf("%d new paper", n)
	if n != 1 {
		s += "s"
	}
	if ev.Type == TypeTest {
		s = "followfeed test message: this channel works"
	}
	if ev.Data.Order == OrderBest {
		s += ", best first"
	}
	if parts > 1 {
		s += fmt.Sprintf(" (%d/%d)", part+1, parts)
	}
	if ev.Data.MoreInFeed > 0 {
		s += fmt.Sprintf(", and %d more in your feed", ev.Data.MoreInFeed)
	}
	return s
}

// pack splits xs into consecutive groups, one a message: at most n items
// each and, with size, at most max of their sizes (an item larger than
// max goes alone). An empty xs still yields one, empty, group: an event
// is always one message at least.
func pack[T any](xs []T, n, max int, size func(T) int) [][]T {
	out := [][]T{nil}
	sum := 0
	for _, x := range xs {
		k := 0
		if size != nil {
			k = size(x)
		}
		if cur := out[len(out)-1]; len(cur) == n || size != nil && len(cur) > 0 && sum+k > max {
			out, sum = append(out, nil), 0
		}
		out[len(out)-1] = append(out[len(out)-1], x)
		sum += k
	}
	return out
}

// slackEscaper escapes mrkdwn's control characters, the three Slack asks
// to be escaped (&, <, >), so that no text makes a link, a mention
// (<!channel>) or a date.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// slackLinkText is slackEscape for a link's text, which ends at the first
// "|" after the URL: a "|" in it reads as "¦".
func slackLinkText(s string) string { return strings.ReplaceAll(slackEscape(s), "|", "¦") }

// slackURL is slackEscape for a link's URL, whose "|" would end it.
func slackURL(s string) string { return strings.ReplaceAll(slackEscape(s), "|", "%7C") }

// slackSection is one paper as a section's mrkdwn: the title linking to
// the abstract page, the authors, the reasons in italics, the first words
// of the abstract and the PDF link, within slackSectionChars.
func slackSection(p PaperJSON) string {
	s := fmt.Sprintf("*<%s|%s>*", linkURL(p, p.Links.Abs, "abs", slackURL), chatText(p.Title, chatTitleChars, slackLinkText))
	if a := authorLine(p); a != "" {
		s += "\n" + chatText(a, chatAuthorsChars, slackEscape)
	}
	if r := reasonLine(p); r != "" {
		s += "\n_" + chatText(r, chatReasonsChars, slackEscape) + "_"
	}
	if a := abstractLine(p); a != "" {
		s += "\n" + chatText(a, chatAbstractChars, slackEscape)
	}
	return s + "\n<" + linkURL(p, p.Links.PDF, "pdf", slackURL) + "|PDF>"
}

// slackMessages renders ev as Slack incoming-webhook payloads (Block Kit),
// at most slackPapersPerMessage papers each.
func slackMessages(ev Event) [][]byte {
	parts := pack(ev.Data.Papers, slackPapersPerMessage, 0, nil)
	out := make([][]byte, 0, len(parts))
	for i, ps := range parts {
		head := text.Truncate(headline(ev, i, len(parts), len(ev.Data.Papers)), slackHeaderChars)
		blocks := []any{map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": head}}}
		for _, p := range ps {
			blocks = append(blocks, map[string]any{"type": "section",
				"text": map[string]any{"type": "mrkdwn", "text": slackSection(p)}})
			if fb := feedbackLine(p, slackURL, func(u, label string) string { return "<" + u + "|" + label + ">" }); fb != "" {
				blocks = append(blocks, map[string]any{"type": "context",
					"elements": []any{map[string]any{"type": "mrkdwn", "text": fb}}})
			}
		}
		b, _ := json.Marshal(map[string]any{"text": head, "blocks": blocks})
		out = append(out, b)
	}
	return out
}

type discordEmbed struct {
	Title       string `json:"title"`
	URL         string `json:"url,omitempty"`
	Description string `json:"description,omitempty"`
	Color       int    `json:"color,omitempty"`
}

// discordEscaper escapes Discord's markdown with a backslash (Discord
// drops the backslash before any punctuation), so that no text of a paper
// formats, links ([text](url)), quotes, heads or lists, or renders a
// mention or an emoji (<@id>, <:name:id>).
var discordEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`,
	"<", `\<`, ">", `\>`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "#", `\#`, "-", `\-`)

func discordEscape(s string) string { return discordEscaper.Replace(s) }

// discordURL makes s safe as a markdown link's target, which a ")" or a
// space would end.
func discordURL(s string) string {
	return strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "<", "%3C", ">", "%3E").Replace(s)
}

// discordDescription is one paper's embed description: the authors, the
// reasons in italics, the first words of the abstract and the PDF link,
// within discordDescriptionChars.
func discordDescription(p PaperJSON) string {
	var lines []string
	if a := authorLine(p); a != "" {
		lines = append(lines, chatText(a, chatAuthorsChars, discordEscape))
	}
	if r := reasonLine(p); r != "" {
		lines = append(lines, "*"+chatText(r, chatReasonsChars, discordEscape)+"*")
	}
	if a := abstractLine(p); a != "" {
		lines = append(lines, chatText(a, chatAbstractChars, discordEscape))
	}
	lines = append(lines, "[PDF]("+linkURL(p, p.Links.PDF, "pdf", discordURL)+")")
	if fb := feedbackLine(p, discordURL, func(u, label string) string { return "[" + label + "](" + u + ")" }); fb != "" {
		lines = append(lines, fb)
	}
	return strings.Join(lines, "\n")
}

// discordMessages renders ev as Discord webhook payloads: at most ten
// embeds each, content within 2,000 characters and all embeds' text within
// 6,000.
func discordMessages(ev Event) [][]byte {
	embeds := make([]discordEmbed, len(ev.Data.Papers))
	for i, p := range ev.Data.Papers {
		embeds[i] = discordEmbed{Title: chatText(p.Title, discordTitleChars, discordEscape), URL: linkURL(p, p.Links.Abs, "abs", discordURL),
			Description: discordDescription(p), Color: 0xB31B1B}
	}
	groups := pack(embeds, discordEmbedsPerMessage, discordEmbedTotalChars, func(e discordEmbed) int {
		return utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
	})
	out := make([][]byte, 0, len(groups))
	for i, es := range groups {
		content := text.Truncate(headline(ev, i, len(groups), len(ev.Data.Papers)), discordContentChars)
		msg := map[string]any{"content": content, "allowed_mentions": map[string]any{"parse": []string{}}}
		if len(es) > 0 {
			msg["embeds"] = es
		}
		b, _ := json.Marshal(msg)
		out = append(out, b)
	}
	return out
}

// matrixMessages renders ev as m.room.message contents (m.text with an
// org.matrix.custom.html formatted body): each paper's title linking to
// its abstract page, the authors, the reasons, the first words of the
// abstract, the PDF link and the feedback links, each text within the
// chat limits (chatText, linkURL); at most matrixPapersPerMessage papers
// and matrixMessageBytes of them a message.
func matrixMessages(ev Event) [][]byte {
	type item struct{ plain, rich string }
	items := make([]item, len(ev.Data.Papers))
	for i, p := range ev.Data.Papers {
		items[i].plain, items[i].rich = matrixPaper(p)
	}
	parts := pack(items, matrixPapersPerMessage, matrixMessageBytes, func(it item) int {
		return matrixJSONSize(it.plain) + matrixJSONSize(it.rich)
	})
	out := make([][]byte, 0, len(parts))
	for i, pt := range parts {
		head := headline(ev, i, len(parts), len(ev.Data.Papers))
		var body, rich strings.Builder
		body.WriteString(head + "\n")
		rich.WriteString("<h4>" + html.EscapeString(head) + "</h4>")
		if len(pt) > 0 {
			rich.WriteString("<ul>")
			for _, it := range pt {
				body.WriteString(it.plain)
				rich.WriteString(it.rich)
			}
			rich.WriteString("</ul>")
		}
		// m.mentions, empty: no text of a paper (an "@room" in a title, an
		// author named as a member) notifies anyone (the spec's mentions
		// module recommends it on every event).
		out = append(out, matrixJSON(map[string]any{"msgtype": "m.text", "body": body.String(),
			"format": "org.matrix.custom.html", "formatted_body": rich.String(), "m.mentions": map[string]any{}}))
	}
	return out
}

// matrixMessageBytes bounds the papers of one Matrix message as sent (their
// share of its JSON): a homeserver refuses an event over 65,536 bytes (the
// whole event, with its envelope and signatures), and a message of twenty
// papers with long titles, many reasons and long links came near it. A
// paper alone is far less (its texts are bounded as in the other chats).
const matrixMessageBytes = 32 << 10

// matrixPaper is one paper of a Matrix message: its plain-text lines and
// its formatted body's list item.
func matrixPaper(p PaperJSON) (plain, rich string) {
	noEscape := func(s string) string { return s }
	var b, h strings.Builder
	fmt.Fprintf(&b, "\n• %s <%s>", chatText(p.Title, chatTitleChars, noEscape), linkURL(p, p.Links.Abs, "abs", noEscape))
	fmt.Fprintf(&h, `<li><a href="%s">%s</a>`, linkURL(p, p.Links.Abs, "abs", html.EscapeString), chatText(p.Title, chatTitleChars, html.EscapeString))
	if a := authorLine(p); a != "" {
		fmt.Fprintf(&b, "\n  %s", chatText(a, chatAuthorsChars, noEscape))
		fmt.Fprintf(&h, "<br>%s", chatText(a, chatAuthorsChars, html.EscapeString))
	}
	if r := reasonLine(p); r != "" {
		fmt.Fprintf(&b, "\n  (%s)", chatText(r, chatReasonsChars, noEscape))
		fmt.Fprintf(&h, "<br><em>%s</em>", chatText(r, chatReasonsChars, html.EscapeString))
	}
	if a := abstractLine(p); a != "" {
		fmt.Fprintf(&b, "\n  %s", chatText(a, chatAbstractChars, noEscape))
		fmt.Fprintf(&h, "<br>%s", chatText(a, chatAbstractChars, html.EscapeString))
	}
	fmt.Fprintf(&b, "\n  PDF <%s>", linkURL(p, p.Links.PDF, "pdf", noEscape))
	fmt.Fprintf(&h, `<br><a href="%s">PDF</a>`, linkURL(p, p.Links.PDF, "pdf", html.EscapeString))
	if fb := feedbackLine(p, noEscape, func(u, label string) string { return label + " <" + u + ">" }); fb != "" {
		fmt.Fprintf(&b, "\n  %s", fb)
		h.WriteString("<br>" + feedbackLine(p, html.EscapeString, func(u, label string) string {
			return `<a href="` + u + `">` + label + "</a>"
		}))
	}
	h.WriteString("</li>")
	return b.String(), h.String()
}

// matrixJSON is v as JSON without HTML's escapes (a formatted body's every
// < and > would take six bytes as \u003c): JSON needs none.
func matrixJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and maps of them: nothing fails
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// matrixJSONSize is the bytes s takes in matrixJSON, quotes aside.
func matrixJSONSize(s string) int { return len(matrixJSON(s)) - 2 }

// messages returns the request bodies that deliver body (an Event's JSON)
// on a channel of type typ: the body itself for a webhook, one or more
// chat messages otherwise.
func messages(typ Type, body []byte) ([][]byte, error) {
	if typ == Webhook {
		return [][]byte{body}, nil
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("channels: stored event body: %w", err)
	}
	switch typ {
	case Slack:
		return slackMessages(ev), nil
	case Discord:
		return discordMessages(ev), nil
	case Matrix:
		return matrixMessages(ev), nil
	}
	return nil, fmt.Errorf("channels: unknown channel type %q", typ)
}
