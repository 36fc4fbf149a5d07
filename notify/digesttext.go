package notify

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The plain-text part of a digest is written by the functions below, in
// turn around each group's papers (Renderer.writePapers): textHead,
// textGroupHead and textGroupFoot per group, textFoot. They were text
// templates; written in Go they cost a digest no reflection. Lines are
// wrapped at textWidth by wrapTo; URLs always stand alone, in full. An
// example of the whole part is testdata/golden/sample.txt.

// textHead writes the heading, the summary ("7 new papers"), the harvest
// notice when there is one, and the line of an empty digest.
func textHead(t *bytes.Buffer, v *digestView) {
	wrapTo(t, "", "", v.Heading)
	t.WriteString("\n")
	t.WriteString(v.Summary)
	if v.Notice != "" {
		t.WriteString("\n\n")
		wrapTo(t, "", "", v.Notice)
	}
	if v.Total == 0 {
		t.WriteString("\n\n")
		wrapTo(t, "", "", v.Nothing)
	}
}

// textGroupHead writes a group's name, underlined, after two blank lines.
func textGroupHead(t *bytes.Buffer, g groupView) {
	t.WriteString("\n\n\n")
	wrapTo(t, "", "", g.Name)
	t.WriteString("\n")
	t.WriteString(strings.Repeat("-", min(textWidth, max(3, utf8.RuneCountInString(g.Name)))))
}

// textGroupFoot writes the group's "…and N more papers from <group> in
// your feed:" and the feed's URL, indented under the papers, when papers
// were omitted; else nothing.
func textGroupFoot(t *bytes.Buffer, g groupView) {
	if g.Omitted == 0 {
		return
	}
	t.WriteString("\n\n")
	wrapTo(t, "   ", "   ", "…and "+morePapers(g.Omitted)+" from "+g.Name+" in your feed:")
	t.WriteString("\n   ")
	t.WriteString(g.FeedURL)
}

// textFoot writes the digest's "…and N more papers in your feed:" when
// papers were omitted (with, in parentheses, their counts by follow:
// OmittedByLine; and "or in your inbox on the site:" with InboxURL, when
// set), then the signature: why the user gets the mail
// (whyLine), the feed, "Manage preferences" and "Unsubscribe", each URL on
// its own line. The part ends with a line end.
func textFoot(t *bytes.Buffer, v *digestView) {
	if v.Omitted != 0 {
		t.WriteString("\n\n\n")
		more := "…and " + morePapers(v.Omitted) + " in your feed"
		if by := OmittedByLine(v.OmittedBy); by != "" {
			more += " (" + by + ")"
		}
		wrapTo(t, "", "", more+":")
		t.WriteString("\n")
		t.WriteString(v.FeedURL)
		if v.InboxURL != "" {
			t.WriteString("\n\nor in your inbox on the site:\n")
			t.WriteString(v.InboxURL)
		}
	}
	t.WriteString("\n\n\n-- \n") // "-- " starts a signature (RFC 3676)
	wrapTo(t, "", "", whyLine(v.Following))
	if v.FeedURL != "" {
		t.WriteString("\n\nYour feed (Atom):\n")
		t.WriteString(v.FeedURL)
	}
	t.WriteString("\n\nManage preferences:\n")
	t.WriteString(v.ManageURL)
	t.WriteString("\n\nUnsubscribe:\n")
	t.WriteString(v.UnsubscribeURL)
	t.WriteString("\n")
}

// whyLine is the footer's sentence saying why the user gets the mail:
// what they follow (DigestContent.Following), or, following nothing, that
// they asked for digests.
func whyLine(following string) string {
	if following == "" {
		return "You get this email because you asked for email digests on followfeed."
	}
	return "You get this email because you follow " + following + " on followfeed."
}

// OmittedByLine says how many of a best-first digest's papers not shown
// (DigestContent.OmittedBy) came through each follow ("120 from astro-ph.GA, 63 from cs.LG and 12
// not ranked"); "" when there are no counts.
func OmittedByLine(by []FollowCount) string {
	parts := make([]string, 0, len(by))
	for _, c := range by {
		name := oneLine(c.Name)
		if c.N <= 0 || name == "" {
			continue
		}
		if name == NotRankedName {
			parts = append(parts, strconv.Itoa(c.N)+" "+NotRankedName)
		} else {
			parts = append(parts, strconv.Itoa(c.N)+" from "+name)
		}
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
