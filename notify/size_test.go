package notify

import (
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"followfeed/account"
	"followfeed/auth"
)

// gmailClip is the size of an HTML part at which Gmail clips a message,
// hiding what follows (the footer with its unsubscribe link).
const gmailClip = 102_000

// realisticDigest is a digest of the MaxPerDigest papers of
// testdata/arxiv-1805.json (real astro-ph records of May 2018: titles,
// authors, categories; arXiv's metadata is CC0), as a user with a long-lived
// account (large user and paper ids) gets it: newest first in five groups
// of twenty, or (best) one list with why each paper ranks; every paper
// with its three feedback links signed as account.Addresses signs them
// for a site at https://papers.example.org.
func realisticDigest(t testing.TB, best bool) DigestContent {
	t.Helper()
	var recs []struct {
		ID         string   `json:"id"`
		Title      string   `json:"title"`
		Authors    []string `json:"authors"`
		Categories []string `json:"categories"`
	}
	b, err := os.ReadFile("testdata/arxiv-1805.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &recs); err != nil || len(recs) < MaxPerDigest {
		t.Fatalf("testdata/arxiv-1805.json: %d records, %v", len(recs), err)
	}
	base, _ := url.Parse("https://papers.example.org")
	addrs := account.NewAddresses(nil, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, nil)
	const userID, epoch = 1_234_567, 3
	c := DigestContent{Heading: "Your daily papers — Monday 30 November", Following: "2 researchers and 4 categories",
		Total: 412, Omitted: 312, FeedURL: "https://papers.example.org/feeds/fft_0123456789abcdef0123456789abcdef.atom",
		ManageURL: addrs.ManageURL(userID, epoch), UnsubscribeURL: addrs.UnsubscribeURL(userID, epoch)}
	groups := []string{"Subo Dong", "astro-ph.GA — Astrophysics of Galaxies", "astro-ph.CO — Cosmology and Nongalactic Astrophysics",
		"astro-ph.SR — Solar and Stellar Astrophysics", "astro-ph.HE — High Energy Astrophysical Phenomena"}
	published := time.Date(2018, 5, 1, 0, 0, 0, 0, time.UTC)
	for g, name := range groups {
		grp := DigestGroup{Name: name, Omitted: 40}
		for i := range MaxPerGroup {
			r := recs[g*MaxPerGroup+i]
			id := int64(12_345_678 + g*MaxPerGroup + i)
			p := DigestPaper{ID: id, Title: r.Title, Authors: r.Authors, AbsURL: "https://arxiv.org/abs/" + r.ID + "v1",
				PDFURL: "https://arxiv.org/pdf/" + r.ID + "v1", Reasons: r.Categories, Categories: r.Categories, Published: published, ArxivID: r.ID,
				Feedback: FeedbackLinks{More: addrs.FeedbackURL(userID, epoch, id, feedbackMore), Less: addrs.FeedbackURL(userID, epoch, id, feedbackLess),
					Save: addrs.FeedbackURL(userID, epoch, id, feedbackSaved)}}
			if g == 0 {
				p.Reasons = append([]string{name}, p.Reasons...)
			}
			if best {
				p.Why = []string{"with your co-author " + r.Authors[0], "like 4 papers you marked"}
			}
			grp.Papers = append(grp.Papers, p)
		}
		c.Groups = append(c.Groups, grp)
	}
	if best {
		var all []DigestPaper
		for _, g := range c.Groups {
			all = append(all, g.Papers...)
		}
		c.Groups = []DigestGroup{{Name: BestGroupName, Papers: all}}
		c.OmittedBy = []FollowCount{{Name: "astro-ph.GA", N: 180}, {Name: "astro-ph.CO", N: 120}, {Name: NotRankedName, N: 12}}
	}
	return c
}

// withoutFeedback is c with no feedback links.
func withoutFeedback(c DigestContent) DigestContent {
	gs := make([]DigestGroup, len(c.Groups))
	for i, g := range c.Groups {
		g.Papers = slices.Clone(g.Papers)
		for j := range g.Papers {
			g.Papers[j].Feedback = FeedbackLinks{}
		}
		gs[i] = g
	}
	c.Groups = gs
	return c
}

// firstPapers is c with its first n papers only.
func firstPapers(c DigestContent, n int) DigestContent {
	var gs []DigestGroup
	for _, g := range c.Groups {
		g.Papers = g.Papers[:min(n, len(g.Papers))]
		n -= len(g.Papers)
		gs = append(gs, g)
	}
	c.Groups = gs
	return c
}

// TestDigestSizeWithFeedbackLinks: the feedback links' markup is compact
// (beyond their three URLs, at most 105 bytes a paper), and the most
// papers a digest lists — MaxPerDigest newest first, MaxPapersLimit best
// first (each with a Why line) — stay under the size at which Gmail clips
// a message, with every paper's three links, for a digest of real papers.
//
// A paper's three signed URLs are some 250 bytes (with a PUBLIC_URL of 26
// characters) and their markup about 100: a hundred papers' HTML grows
// from about 80 KB to 115 KB (125 KB best first), past the clip, where
// Gmail shows the start of the message and a "View entire message" link
// and hides the footer. So a digest lists at most 80 papers newest first
// (88 fit) and 75 best first (81 fit); the rest are counted, linking the
// feed.
func TestDigestSizeWithFeedbackLinks(t *testing.T) {
	underClip, underClipBest := MaxPerDigest, MaxPapersLimit
	for _, best := range []bool{false, true} {
		c := realisticDigest(t, best)
		_, html, err := RenderDigest(c)
		if err != nil {
			t.Fatal(err)
		}
		_, bare, _ := RenderDigest(withoutFeedback(c))
		urls := 0
		for _, g := range c.Groups {
			for _, p := range g.Papers {
				urls += len(p.Feedback.More) + len(p.Feedback.Less) + len(p.Feedback.Save)
			}
		}
		perPaper, markup := (len(html)-len(bare))/c.shown(), (len(html)-len(bare)-urls)/c.shown()
		fits := 0
		for n := c.shown(); n > 0; n-- {
			if _, h, _ := RenderDigest(firstPapers(c, n)); len(h) < gmailClip {
				fits = n
				break
			}
		}
		t.Logf("best %v: %d papers: HTML part %d bytes (%d without feedback links: %d a paper, %d of them markup); %d papers fit under %d bytes",
			best, c.shown(), len(html), len(bare), perPaper, markup, fits, gmailClip)
		if markup > 105 {
			t.Errorf("best %v: the feedback links' markup is %d bytes a paper beyond their URLs", best, markup)
		}
		if want := map[bool]int{false: underClip, true: underClipBest}[best]; fits < want {
			t.Errorf("best %v: only %d papers fit under Gmail's clip, want %d", best, fits, want)
		}
		if len(bare) >= gmailClip && !best {
			t.Errorf("a newest digest of %d papers is clipped even without feedback links (%d bytes)", c.shown(), len(bare))
		}
	}
}

// TestDigestSizeWithOpenLinks: for a user who turned "remember what I
// opened" on, every paper also carries its "Open" (and mark read) link
// (FeedbackLinks.Open); the most papers a digest lists, newest first and
// best first, still stay under Gmail's clip.
func TestDigestSizeWithOpenLinks(t *testing.T) {
	base, _ := url.Parse("https://papers.example.org")
	addrs := account.NewAddresses(nil, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, nil)
	for _, best := range []bool{false, true} {
		c := realisticDigest(t, best)
		for _, g := range c.Groups {
			for j := range g.Papers {
				g.Papers[j].Feedback.Open = addrs.OpenURL(1_234_567, 3, g.Papers[j].ID)
			}
		}
		fits := 0
		for n := c.shown(); n > 0; n-- {
			if _, h, _ := RenderDigest(firstPapers(c, n)); len(h) < gmailClip {
				fits = n
				break
			}
		}
		t.Logf("best %v: with open links %d papers fit under %d bytes", best, fits, gmailClip)
		if want := map[bool]int{false: MaxPerDigest, true: MaxPapersLimit}[best]; fits < want {
			t.Errorf("best %v: with open links only %d papers fit under Gmail's clip, want %d", best, fits, want)
		}
	}
}
