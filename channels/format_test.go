package channels

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"followfeed/follow"
	"followfeed/internal/text"
	"followfeed/match"
	"followfeed/paper"
)

// slackMessage is a Slack incoming-webhook payload as slackMessages writes
// it (Block Kit).
type slackMessage struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type string `json:"type"`
		Text struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct { // a context block's
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"elements"`
	} `json:"blocks"`
}

// discordMessage is a Discord webhook payload as discordMessages writes it.
type discordMessage struct {
	Content         string `json:"content"`
	AllowedMentions struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	Embeds []discordEmbed `json:"embeds"`
}

// decode reads payloads as messages of type M.
func decode[M any](t *testing.T, payloads [][]byte) []M {
	t.Helper()
	out := make([]M, len(payloads))
	for i, b := range payloads {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("payload: %v %s", err, b)
		}
	}
	return out
}

func decodeSlack(t *testing.T, ev Event) []slackMessage {
	return decode[slackMessage](t, slackMessages(ev))
}

func decodeDiscord(t *testing.T, ev Event) []discordMessage {
	return decode[discordMessage](t, discordMessages(ev))
}

// sections are the mrkdwn texts of the messages' paper sections.
func sections(t *testing.T, ms []slackMessage) []string {
	t.Helper()
	var out []string
	for _, m := range ms {
		for _, b := range m.Blocks[1:] {
			if b.Type == "section" {
				out = append(out, b.Text.Text)
			}
		}
	}
	return out
}

// contexts are the mrkdwn texts of the messages' context blocks (a
// paper's feedback links), one element each.
func contexts(t *testing.T, ms []slackMessage) []string {
	t.Helper()
	var out []string
	for _, m := range ms {
		for _, b := range m.Blocks[1:] {
			if b.Type == "context" {
				if len(b.Elements) != 1 || b.Elements[0].Type != "mrkdwn" {
					t.Fatalf("a context block of %+v", b.Elements)
				}
				out = append(out, b.Elements[0].Text)
			}
		}
	}
	return out
}

func embeds(ms []discordMessage) []discordEmbed {
	var out []discordEmbed
	for _, m := range ms {
		out = append(out, m.Embeds...)
	}
	return out
}

var longAbstract = "We introduce sparse attention for very long sequences. " + strings.Repeat("It scales linearly in memory and compute. ", 20) + "The end."

func paperOf(id string, mods ...func(*PaperJSON)) PaperJSON {
	p := PaperJSON{ArxivID: id, Title: "Sparse attention at scale", Authors: []string{"Ada Lovelace", "Alan Turing"},
		Abstract: longAbstract, Categories: []string{"cs.LG"},
		Links:   LinksJSON{Abs: "https://arxiv.org/abs/" + id, PDF: "https://arxiv.org/pdf/" + id},
		Reasons: []Reason{{Kind: "category", ID: "cs.LG", Name: "cs.LG"}}}
	for _, m := range mods {
		m(&p)
	}
	return p
}

// TestChatMessagesCarryTheAbstractAndThePDF: a Slack section, a Discord
// embed and a Matrix message show the first words of the abstract,
// shortened at a word, and link the PDF, beside the title (linking the
// abstract page), the authors and the reasons.
func TestChatMessagesCarryTheAbstractAndThePDF(t *testing.T) {
	ev := Event{Type: TypeMatched, Data: EventData{Papers: []PaperJSON{paperOf("2611.01004")}}}
	excerpt := text.Shorten(text.Collapse(longAbstract, -1), abstractChars)
	body := strings.TrimSuffix(excerpt, text.Ellipsis)
	if body == excerpt || !strings.HasPrefix(longAbstract, body+" ") || utf8.RuneCountInString(excerpt) > abstractChars+1 {
		t.Fatalf("the excerpt is %q", excerpt)
	}
	s := sections(t, decodeSlack(t, ev))
	want := "*<https://arxiv.org/abs/2611.01004|Sparse attention at scale>*\nAda Lovelace, Alan Turing\n_cs.LG_\n" + excerpt +
		"\n<https://arxiv.org/pdf/2611.01004|PDF>"
	if len(s) != 1 || s[0] != want {
		t.Errorf("slack section:\n%q\nwant\n%q", s, want)
	}
	e := embeds(decodeDiscord(t, ev))
	want = "Ada Lovelace, Alan Turing\n*cs.LG*\n" + discordEscape(excerpt) + "\n[PDF](https://arxiv.org/pdf/2611.01004)"
	if len(e) != 1 || e[0].Description != want || e[0].Title != "Sparse attention at scale" || e[0].URL != "https://arxiv.org/abs/2611.01004" {
		t.Errorf("discord embed:\n%+v\nwant description\n%q", e, want)
	}
	mx := decodeMatrix(t, ev)
	wantBody := "1 new paper\n\n• Sparse attention at scale <https://arxiv.org/abs/2611.01004>\n  Ada Lovelace, Alan Turing\n  (cs.LG)\n  " + excerpt +
		"\n  PDF <https://arxiv.org/pdf/2611.01004>"
	wantRich := `<h4>1 new paper</h4><ul><li><a href="https://arxiv.org/abs/2611.01004">Sparse attention at scale</a><br>Ada Lovelace, Alan Turing<br><em>cs.LG</em><br>` +
		html.EscapeString(excerpt) + `<br><a href="https://arxiv.org/pdf/2611.01004">PDF</a></li></ul>`
	if len(mx) != 1 || mx[0].Body != wantBody || mx[0].FormattedBody != wantRich || mx[0].Mentions == nil || len(*mx[0].Mentions) != 0 {
		t.Errorf("matrix message (m.mentions empty, so no text notifies anyone):\n%+v\nwant\n%q\n%q", mx, wantBody, wantRich)
	}
	// A paper's own link with a control or bidirectional character is
	// arXiv's page instead, in every chat.
	ev.Data.Papers[0].Links.Abs = "https://example.org/abs/x\u202egpj.exe\x01"
	if s := sections(t, decodeSlack(t, ev)); !strings.HasPrefix(s[0], "*<https://arxiv.org/abs/2611.01004|") {
		t.Errorf("slack with a link of control characters: %q", s[0])
	}
	if e := embeds(decodeDiscord(t, ev)); e[0].URL != "https://arxiv.org/abs/2611.01004" {
		t.Errorf("discord with a link of control characters: %q", e[0].URL)
	}
	if m := decodeMatrix(t, ev); strings.ContainsAny(m[0].Body+m[0].FormattedBody, "\u202e\x01") {
		t.Errorf("matrix with a link of control characters: %q", m[0].Body)
	}
	ev.Data.Papers[0].Links.Abs = "https://arxiv.org/abs/2611.01004"
	// A paper without an abstract has no empty line for it.
	ev.Data.Papers[0].Abstract = ""
	if s := sections(t, decodeSlack(t, ev)); strings.Contains(s[0], "\n\n") || !strings.HasSuffix(s[0], "_cs.LG_\n<https://arxiv.org/pdf/2611.01004|PDF>") {
		t.Errorf("without an abstract: %q", s[0])
	}
}

// hostile is a paper whose every text is as long and as full of what its
// format escapes as it can be.
func hostile(i int) PaperJSON {
	worst := strings.Repeat(`&<>|*_~`+"`"+`[]()#-\`, 600)
	var authors []string
	for j := range 300 {
		authors = append(authors, fmt.Sprintf("<@U%d> &amp; *%d*", j, j))
	}
	var reasons []Reason
	for j := range 60 {
		reasons = append(reasons, Reason{Kind: "query", ID: fmt.Sprint(j), Name: strings.Repeat("&<>", 70)})
	}
	long := "https://example.org/" + strings.Repeat("a&b|c)d", 280)
	// Feedback links as long as a link may be (their escaping changes
	// nothing): a PUBLIC_URL of some 440 characters.
	fb := func(v string) string {
		u := "https://followfeed.example/feedback/ffl_" + v
		return u + strings.Repeat("x", chatURLChars-len(u))
	}
	return PaperJSON{ArxivID: fmt.Sprintf("2611.%05d", i), Title: worst, Authors: authors, Abstract: worst + worst,
		Links: LinksJSON{Abs: long, PDF: long}, Reasons: reasons,
		Feedback: &FeedbackJSON{More: fb("more"), Less: fb("less"), Save: fb("save")}}
}

// TestChatMessagesStayWithinTheirLimits: papers whose every text is
// hostile and as long as can be (titles and abstracts of what escaping
// grows most, 300 authors, 60 long reasons, 2,000-character URLs,
// feedback links of the longest a link may be), best first with a
// thousand held back, still give payloads within Slack's limits (≤ 50
// blocks, a header ≤ 150 characters, a section's and a context's text ≤
// 3,000), Discord's (content ≤ 2,000, ≤ 10 embeds, a title ≤ 256, a
// description ≤ 4,096, a message's embeds ≤ 6,000) and Matrix's (an event
// ≤ 65,536 bytes: a message's papers within matrixMessageBytes), each
// paper once with its three feedback links; a URL too long for a link is
// arXiv's page.
func TestChatMessagesStayWithinTheirLimits(t *testing.T) {
	t.Log("hostile: limits")
	var papers []PaperJSON
	for i := range 45 {
		papers = append(papers, hostile(i))
	}
	ev := Event{Type: TypeMatched, Data: EventData{Papers: papers, Order: OrderBest, MoreInFeed: 1000}}
	n, feedback := 0, 0
	for _, m := range decodeSlack(t, ev) {
		if len(m.Blocks) > 50 || m.Blocks[0].Type != "header" || utf8.RuneCountInString(m.Blocks[0].Text.Text) > 150 || m.Text == "" {
			t.Fatalf("slack message of %d blocks, header %q", len(m.Blocks), m.Blocks[0].Text.Text)
		}
		for _, b := range m.Blocks[1:] {
			if b.Type == "context" {
				if l := utf8.RuneCountInString(b.Elements[0].Text); l > 3000 || strings.Count(b.Elements[0].Text, "<https://followfeed.example/feedback/") != 3 {
					t.Errorf("slack context of %d characters: %.200q", l, b.Elements[0].Text)
				}
				feedback++
				continue
			}
			if l := utf8.RuneCountInString(b.Text.Text); b.Type != "section" || b.Text.Type != "mrkdwn" || l > 3000 {
				t.Errorf("slack section of %d characters: %.200q", l, b.Text.Text)
			}
			if want := fmt.Sprintf("<https://arxiv.org/pdf/2611.%05d|PDF>", n); !strings.HasSuffix(b.Text.Text, want) {
				t.Errorf("slack section %d does not end with %s: …%q", n, want, b.Text.Text[max(0, len(b.Text.Text)-80):])
			}
			n++
		}
	}
	if n != len(papers) || feedback != len(papers) {
		t.Errorf("slack carried %d papers of %d, %d with feedback links", n, len(papers), feedback)
	}
	n = 0
	for _, m := range decodeDiscord(t, ev) {
		total := 0
		if len(m.Embeds) > 10 || utf8.RuneCountInString(m.Content) > 2000 {
			t.Fatalf("discord message of %d embeds", len(m.Embeds))
		}
		for _, e := range m.Embeds {
			tl, dl := utf8.RuneCountInString(e.Title), utf8.RuneCountInString(e.Description)
			if tl > 256 || dl > 4096 || e.URL != fmt.Sprintf("https://arxiv.org/abs/2611.%05d", n) {
				t.Errorf("discord embed: title %d, description %d characters, url %.80s", tl, dl, e.URL)
			}
			lines := strings.Split(e.Description, "\n")
			if last := lines[len(lines)-1]; strings.Count(last, "](https://followfeed.example/feedback/") != 3 {
				t.Errorf("discord embed %d without its feedback links: %.200q", n, last)
			}
			total += tl + dl
			n++
		}
		if total > 6000 {
			t.Errorf("a discord message's embeds hold %d characters", total)
		}
	}
	if n != len(papers) {
		t.Errorf("discord carried %d papers of %d", n, len(papers))
	}
	// Matrix: a homeserver refuses an event over 65,536 bytes, envelope
	// and signatures included.
	n = 0
	bodies := matrixMessages(ev)
	for i, b := range bodies {
		if len(b) > matrixMessageBytes+1024 {
			t.Errorf("matrix message %d is %d bytes", i, len(b))
		}
	}
	for _, m := range decodeMatrix(t, ev) {
		items := strings.Count(m.FormattedBody, "<li>")
		if items == 0 || items > matrixPapersPerMessage || strings.Count(m.FormattedBody, `">Save</a>`) != items ||
			strings.Count(m.Body, "\n• ") != items {
			t.Errorf("a matrix message of %d papers, %d with feedback links", items, strings.Count(m.FormattedBody, `">Save</a>`))
		}
		n += items
	}
	if n != len(papers) || len(bodies) < 2 {
		t.Errorf("matrix carried %d papers of %d in %d messages", n, len(papers), len(bodies))
	}
}

// matrixMessage is a Matrix message's body and formatted body.
type matrixMessage struct {
	Body          string          `json:"body"`
	FormattedBody string          `json:"formatted_body"`
	Mentions      *map[string]any `json:"m.mentions"`
}

// decodeMatrix decodes ev's Matrix messages.
func decodeMatrix(t *testing.T, ev Event) []matrixMessage {
	t.Helper()
	var out []matrixMessage
	for _, b := range matrixMessages(ev) {
		var m matrixMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// slackLink is a link in mrkdwn: <url|text>.
var slackLink = regexp.MustCompile(`<([^<>|]*)\|([^<>]*)>`)

// TestChatMessagesEscapeHostileText: text from a paper (a pushed record,
// an upstream's) never makes markup of its own. In Slack no mention,
// link or special command (<!channel>, <@U1>, <url|text>) survives: the
// only links are the title's and the PDF's, a "|" in the title reads "¦"
// and one in a URL is %7C. In Discord every markdown character of the
// paper's text is backslash-escaped (no masked link, no bold, no mention
// markup), a ")" in a URL is %29, and no mention is parsed.
func TestChatMessagesEscapeHostileText(t *testing.T) {
	t.Log("hostile: markup")
	p := paperOf("2611.01005", func(p *PaperJSON) {
		p.Title = "<!channel> Graphs | trees & <https://evil.example|click> **bold** [x](https://evil.example)"
		p.Authors = []string{"<@U123>", "Eve *Mallory*"}
		p.Abstract = "<!everyone> see <https://evil.example|here> & [click](https://evil.example) @everyone <@123> `code`\n# head\n> quote"
		p.Reasons = []Reason{{Kind: "query", ID: "x", Name: "the query <b>&</b>"}}
		p.Links.PDF = "https://example.org/pdf?a=1&b=2|3)"
	})
	ev := Event{Type: TypeMatched, Data: EventData{Papers: []PaperJSON{p}}}
	s := sections(t, decodeSlack(t, ev))[0]
	links := slackLink.FindAllStringSubmatch(s, -1)
	if len(links) != 2 || strings.Count(s, "<") != 2 || strings.Count(s, ">") != 2 {
		t.Fatalf("slack section has markup of its own:\n%s", s)
	}
	if links[0][1] != "https://arxiv.org/abs/2611.01005" || !strings.Contains(links[0][2], "Graphs ¦ trees &amp; &lt;https://evil.example¦click&gt;") ||
		links[1][1] != "https://example.org/pdf?a=1&amp;b=2%7C3)" || links[1][2] != "PDF" {
		t.Errorf("slack links: %q", links)
	}
	if !strings.Contains(s, "&lt;!everyone&gt; see &lt;https://evil.example|here&gt; &amp;") || !strings.Contains(s, "&lt;@U123&gt;") {
		t.Errorf("slack text not escaped:\n%s", s)
	}
	for _, m := range decodeDiscord(t, ev) {
		if m.AllowedMentions.Parse == nil || len(m.AllowedMentions.Parse) != 0 {
			t.Errorf("discord parses mentions: %+v", m.AllowedMentions)
		}
	}
	e := embeds(decodeDiscord(t, ev))[0]
	lines := strings.Split(e.Description, "\n")
	if len(lines) != 4 || lines[3] != "[PDF](https://example.org/pdf?a=1&b=2|3%29)" || !strings.HasPrefix(lines[1], "*") || !strings.HasSuffix(lines[1], "*") {
		t.Fatalf("discord description:\n%s", e.Description)
	}
	for what, got := range map[string]string{"title": e.Title, "authors": lines[0], "reasons": strings.Trim(lines[1], "*"), "abstract": lines[2]} {
		for i, r := range got {
			if strings.ContainsRune(`*_~`+"`"+`|<>[]()#-`, r) && !escaped(got, i) {
				t.Errorf("discord %s has an unescaped %q at %d: %s", what, r, i, got)
			}
		}
	}
	if !strings.Contains(lines[2], `\[click\]\(https://evil.example\)`) || !strings.Contains(e.Title, `\*\*bold\*\*`) {
		t.Errorf("discord text not escaped: %q / %q", e.Title, lines[2])
	}
}

// escaped says whether the character at byte i of s follows an odd number
// of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// TestChatTextNeverCutsAnEscape: chatText fits text of any mix into its
// limit without cutting an entity or a backslash escape in two.
func TestChatTextNeverCutsAnEscape(t *testing.T) {
	for _, s := range []string{"&&&&&&&&&&&&&&&&&&&&", "a&b<c>d e&f g<h", "**__~~", "plain words that are long enough to cut"} {
		for limit := 1; limit <= 40; limit++ {
			for name, esc := range map[string]func(string) string{"slack": slackEscape, "discord": discordEscape} {
				got := chatText(s, limit, esc)
				if utf8.RuneCountInString(got) > limit {
					t.Errorf("%s chatText(%q, %d) = %q: too long", name, s, limit, got)
				}
				body := strings.TrimSuffix(got, text.Ellipsis)
				if name == "slack" && regexp.MustCompile(`&(?:a|am|l|g|amp|lt|gt)?$`).MatchString(body) ||
					name == "discord" && len(body) > 0 && body[len(body)-1] == '\\' && !escaped(body, len(body)-1) {
					t.Errorf("%s chatText(%q, %d) = %q cuts an escape", name, s, limit, got)
				}
			}
		}
	}
}

// TestChatTextKeepsALongTextNearItsLimit: a text many times its limit
// (a 2,000-character title, a long list of reasons) is cut near the
// limit, at a word, not to a few words or a bare ellipsis, whatever the
// chat's escaping.
func TestChatTextKeepsALongTextNearItsLimit(t *testing.T) {
	long := strings.Repeat("galaxies & <stars> ", 105) // 1,995 characters
	for name, esc := range map[string]func(string) string{"slack": slackEscape, "discord": discordEscape, "matrix": html.EscapeString, "plain": func(s string) string { return s }} {
		for _, limit := range []int{chatTitleChars, chatReasonsChars, chatAbstractChars} {
			got := utf8.RuneCountInString(chatText(long, limit, esc))
			if got > limit || got < limit*3/4 {
				t.Errorf("%s: chatText of %d characters at %d: %d characters", name, utf8.RuneCountInString(long), limit, got)
			}
		}
	}
}

// TestChatMessagesCarryFeedbackLinks: each paper's three feedback links
// follow it as links of the chat's own syntax, their URLs escaped as the
// provider needs (Slack: &, <, > as entities and "|" as %7C in a context
// block after the paper's section; Discord: "(", ")", spaces and angle
// brackets percent-encoded on the embed's last line; Matrix: HTML-escaped
// anchors and "Label <url>" in the plain body); a link longer than a chat
// link may be is left out; a paper without links (a test event's) has no
// line for them. A best-first event's headline says so, and how many
// papers the budget held back.
func TestChatMessagesCarryFeedbackLinks(t *testing.T) {
	t.Log("hostile: markup")
	p := paperOf("2611.01006", func(p *PaperJSON) {
		p.Feedback = &FeedbackJSON{More: "https://ff.test/feedback/ffl_m?a=1&b=<2>|3) 4", Less: "https://ff.test/feedback/ffl_l",
			Save: "https://ff.test/feedback/ffl_" + strings.Repeat("s", chatURLChars)}
	})
	plain := paperOf("2611.01007")
	ev := Event{Type: TypeMatched, Data: EventData{Papers: []PaperJSON{p, plain}, Order: OrderBest, MoreInFeed: 7}}

	ms := decodeSlack(t, ev)
	head := "2 new papers, best first, and 7 more in your feed"
	if len(ms) != 1 || ms[0].Blocks[0].Text.Text != head || ms[0].Text != head {
		t.Fatalf("slack: %+v", ms)
	}
	if types := []string{ms[0].Blocks[1].Type, ms[0].Blocks[2].Type, ms[0].Blocks[3].Type}; !slices.Equal(types, []string{"section", "context", "section"}) {
		t.Errorf("slack blocks %q: a context after the first paper's section only", types)
	}
	want := "<https://ff.test/feedback/ffl_m?a=1&amp;b=&lt;2&gt;%7C3) 4|More like this> · <https://ff.test/feedback/ffl_l|Less like this>"
	if c := contexts(t, ms); len(c) != 1 || c[0] != want {
		t.Errorf("slack feedback:\n%q\nwant\n%q", c, want)
	}

	dm := decodeDiscord(t, ev)
	if len(dm) != 1 || dm[0].Content != head {
		t.Fatalf("discord: %+v", dm)
	}
	es := embeds(dm)
	lines := strings.Split(es[0].Description, "\n")
	want = "[More like this](https://ff.test/feedback/ffl_m?a=1&b=%3C2%3E|3%29%204) · [Less like this](https://ff.test/feedback/ffl_l)"
	if lines[len(lines)-1] != want {
		t.Errorf("discord feedback:\n%q\nwant\n%q", lines[len(lines)-1], want)
	}
	if !strings.HasSuffix(es[1].Description, "[PDF](https://arxiv.org/pdf/2611.01007)") {
		t.Errorf("a paper without links: %q", es[1].Description)
	}

	mx := decodeMatrix(t, ev)
	if len(mx) != 1 || !strings.HasPrefix(mx[0].Body, head+"\n") ||
		!strings.Contains(mx[0].Body, "\n  More like this <https://ff.test/feedback/ffl_m?a=1&b=<2>|3) 4> · Less like this <https://ff.test/feedback/ffl_l>\n") {
		t.Errorf("matrix body:\n%s", mx[0].Body)
	}
	if !strings.Contains(mx[0].FormattedBody, `<br><a href="https://ff.test/feedback/ffl_m?a=1&amp;b=&lt;2&gt;|3) 4">More like this</a> · <a href="https://ff.test/feedback/ffl_l">Less like this</a></li>`) ||
		strings.Count(mx[0].FormattedBody, "/feedback/") != 2 {
		t.Errorf("matrix formatted body:\n%s", mx[0].FormattedBody)
	}
	// Newest first, nothing held back: the headline as before.
	ev.Data.Order, ev.Data.MoreInFeed = "", 0
	if h := decodeSlack(t, ev)[0].Blocks[0].Text.Text; h != "2 new papers" {
		t.Errorf("newest first: %q", h)
	}
}

// TestBudgetKeepsFollowedPapersAndTheBest: budget sends, of papers best
// first, the ones that pass it (a followed person's new paper, a followed
// paper's event) always and counting against it, then the best others
// while it lasts; a budget already spent sends only those; without keep
// they are papers like the others.
func TestBudgetKeepsFollowedPapersAndTheBest(t *testing.T) {
	cat := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	person := follow.Target{Kind: follow.Researcher, ID: "host:1"}
	mk := func(id string, mods ...func(*match.Paper)) match.Paper {
		p := match.Paper{Paper: paper.Paper{ArxivID: id}, Reasons: []follow.Target{cat}}
		for _, m := range mods {
			m(&p)
		}
		return p
	}
	byPerson := func(p *match.Paper) { p.Reasons = append(p.Reasons, person) }
	event := func(p *match.Paper) { p.Events = []match.Event{{Kind: paper.EventVersion}}; p.Replaced = true }
	newVersion := func(p *match.Paper) { p.Replaced = true }
	ps := []match.Paper{mk("a"), mk("b"), mk("c", byPerson), mk("d"), mk("e", event), mk("f"), mk("g", byPerson, newVersion)}
	ids := func(ps []match.Paper) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ArxivID)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		left       int
		keep       bool
		send, held string
	}{
		{3, true, "a c e", "b d f g"},
		{4, true, "a b c e", "d f g"},
		{1, true, "c e", "a b d f g"},
		{-2, true, "c e", "a b d f g"},
		{3, false, "a b c", "d e f g"},
		{10, true, "a b c d e f g", ""},
	} {
		send, held := budget(slices.Clone(ps), c.left, c.keep)
		if ids(send) != c.send || ids(held) != c.held {
			t.Errorf("budget(%d, keep %v): send %q, held %q; want %q, %q", c.left, c.keep, ids(send), ids(held), c.send, c.held)
		}
	}
}
