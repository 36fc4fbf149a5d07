package channels

import (
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"time"
	"unicode/utf8"

	"followfeed/internal/text"
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

// EventData holds the event's papers, newest match first.
type EventData struct {
	Papers []PaperJSON `json:"papers"`
}

// PaperJSON is one paper of an event.
type PaperJSON struct {
	ArxivID    string    `json:"arxiv_id"`
	Title      string    `json:"title"`
	Authors    []string  `json:"authors"`
	Abstract   string    `json:"abstract"`
	Categories []string  `json:"categories"`
	Links      LinksJSON `json:"links"`
	Reasons    []Reason  `json:"reasons"`
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

// Chat message limits (the providers' documented limits, with margin;
// text.Truncate adds an ellipsis after the count, hence the -1s).
const (
	slackPapersPerMessage   = 20       // 1 header + 20 sections ≤ 50 blocks
	slackSectionChars       = 2900     // section text ≤ 3000
	slackHeaderChars        = 150 - 1  // header plain_text ≤ 150
	discordEmbedsPerMessage = 10       // ≤ 10 embeds
	discordContentChars     = 2000 - 1 // content ≤ 2000
	discordEmbedTotalChars  = 6000     // all embeds' text together ≤ 6000
	discordTitleChars       = 256 - 1
	discordDescriptionChars = 350 // of 4096, so ten fit in 6000
	matrixPapersPerMessage  = 20
	authorsChars            = 200
)

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

func headline(ev Event, part, parts, n int) string {
	s := fmt.Sprintf("%d new paper", n)
	if n != 1 {
		s += "s"
	}
	if ev.Type == TypeTest {
		s = "followfeed test message: this channel works"
	}
	if parts > 1 {
		s += fmt.Sprintf(" (%d/%d)", part+1, parts)
	}
	return s
}

func chunks[T any](xs []T, n int) [][]T {
	var out [][]T
	for len(xs) > n {
		out = append(out, xs[:n])
		xs = xs[n:]
	}
	return append(out, xs) // an empty event still yields one message
}

// slackEscape escapes mrkdwn control characters (Slack: &, <, >).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackMessages renders ev as Slack incoming-webhook payloads (Block Kit),
// at most slackPapersPerMessage papers each.
func slackMessages(ev Event) [][]byte {
	parts := chunks(ev.Data.Papers, slackPapersPerMessage)
	out := make([][]byte, 0, len(parts))
	for i, ps := range parts {
		head := text.Truncate(headline(ev, i, len(parts), len(ev.Data.Papers)), slackHeaderChars)
		blocks := []any{map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": head}}}
		for _, p := range ps {
			title := strings.ReplaceAll(slackEscape(p.Title), "|", "¦")
			s := fmt.Sprintf("*<%s|%s>*", p.Links.Abs, title)
			if a := authorLine(p); a != "" {
				s += "\n" + slackEscape(a)
			}
			if r := reasonLine(p); r != "" {
				s += "\n_" + slackEscape(r) + "_"
			}
			blocks = append(blocks, map[string]any{"type": "section",
				"text": map[string]any{"type": "mrkdwn", "text": text.Truncate(s, slackSectionChars)}})
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

// discordMessages renders ev as Discord webhook payloads: at most ten
// embeds each, content within 2,000 characters and all embeds' text within
// 6,000.
func discordMessages(ev Event) [][]byte {
	var groups [][]discordEmbed
	var cur []discordEmbed
	size := 0
	for _, p := range ev.Data.Papers {
		desc := authorLine(p)
		if r := reasonLine(p); r != "" {
			desc += "\n*" + r + "*"
		}
		e := discordEmbed{Title: text.Truncate(p.Title, discordTitleChars), URL: p.Links.Abs,
			Description: text.Truncate(desc, discordDescriptionChars), Color: 0xB31B1B}
		n := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
		if len(cur) == discordEmbedsPerMessage || size+n > discordEmbedTotalChars {
			groups, cur, size = append(groups, cur), nil, 0
		}
		cur, size = append(cur, e), size+n
	}
	groups = append(groups, cur)
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
// org.matrix.custom.html formatted body).
func matrixMessages(ev Event) [][]byte {
	parts := chunks(ev.Data.Papers, matrixPapersPerMessage)
	out := make([][]byte, 0, len(parts))
	for i, ps := range parts {
		head := headline(ev, i, len(parts), len(ev.Data.Papers))
		var plain, rich strings.Builder
		plain.WriteString(head + "\n")
		rich.WriteString("<h4>" + html.EscapeString(head) + "</h4>")
		if len(ps) > 0 {
			rich.WriteString("<ul>")
		}
		for _, p := range ps {
			fmt.Fprintf(&plain, "\n• %s <%s>", p.Title, p.Links.Abs)
			fmt.Fprintf(&rich, `<li><a href="%s">%s</a>`, html.EscapeString(p.Links.Abs), html.EscapeString(p.Title))
			if a := authorLine(p); a != "" {
				fmt.Fprintf(&plain, "\n  %s", a)
				fmt.Fprintf(&rich, "<br>%s", html.EscapeString(a))
			}
			if r := reasonLine(p); r != "" {
				fmt.Fprintf(&plain, "\n  (%s)", r)
				fmt.Fprintf(&rich, "<br><em>%s</em>", html.EscapeString(r))
			}
			rich.WriteString("</li>")
		}
		if len(ps) > 0 {
			rich.WriteString("</ul>")
		}
		b, _ := json.Marshal(map[string]any{"msgtype": "m.text", "body": plain.String(),
			"format": "org.matrix.custom.html", "formatted_body": rich.String()})
		out = append(out, b)
	}
	return out
}

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
