package notify

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func cachePaper(id int64, title string) DigestPaper {
	return DigestPaper{ID: id, Title: title, Authors: []string{"Ann One", "Bo Two"}, AbsURL: "https://arxiv.org/abs/2301.00001",
		PDFURL: "https://arxiv.org/pdf/2301.00001", Categories: []string{"cs.LG"}, Published: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
}

// A kept rendering serves only a paper whose every rendered field is the
// one it was made from; the per-user fields do not matter.
func TestPartsCacheServesOnlyTheSamePaper(t *testing.T) {
	c := newPartsCache(8)
	p := cachePaper(1, "Dark matter halos")
	pp := newPaperParts(p)
	c.put(p, pp)
	mine := p
	mine.Reasons, mine.Why, mine.Feedback = []string{"cs.LG"}, []string{"like 3 papers you marked"}, FeedbackLinks{More: "https://x.test/m"}
	if got := c.get(mine); got != pp {
		t.Fatalf("the same paper with another user's reasons and links: %p, want the kept rendering %p", got, pp)
	}
	changes := map[string]func(*DigestPaper){
		"title":      func(p *DigestPaper) { p.Title = "Dark matter haloes" },
		"authors":    func(p *DigestPaper) { p.Authors = []string{"Ann One"} },
		"author":     func(p *DigestPaper) { p.Authors = []string{"Ann One", "Bo Too"} },
		"abstract":   func(p *DigestPaper) { p.AbsURL = "https://arxiv.org/abs/2301.00001v2" },
		"pdf":        func(p *DigestPaper) { p.PDFURL = "" },
		"categories": func(p *DigestPaper) { p.Categories = []string{"cs.LG", "stat.ML"} },
		"published":  func(p *DigestPaper) { p.Published = p.Published.AddDate(0, 0, 1) },
	}
	for name, change := range changes {
		q := p
		q.Authors, q.Categories = append([]string(nil), p.Authors...), append([]string(nil), p.Categories...)
		change(&q)
		if got := c.get(q); got != nil {
			t.Errorf("a paper whose %s changed got the old rendering", name)
		}
	}
	if got := c.get(cachePaper(2, p.Title)); got != nil {
		t.Error("another paper's id got a rendering")
	}
}

// Renderers of concurrent batches share renderings through the cache and
// write the same digest as a Renderer of their own: a shared rendering
// never changes once made (go test -race checks the sharing).
func TestRenderersShareRenderingsSafely(t *testing.T) {
	var papers []DigestPaper
	for i := range 30 {
		papers = append(papers, cachePaper(int64(i+1), strings.Repeat("A long title of many words ", 1+i%4)))
	}
	c := DigestContent{Heading: "Your daily digest", Groups: []DigestGroup{{Name: "cs.LG", Papers: papers}},
		ManageURL: "https://followfeed.test/settings", UnsubscribeURL: "https://followfeed.test/unsubscribe"}
	wantText, wantHTML, err := RenderDigest(c)
	if err != nil {
		t.Fatal(err)
	}
	cache := newPartsCache(partsCacheSize)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				r := Renderer{shared: cache}
				text, html, err := r.Digest(c)
				if err != nil || text != wantText || html != wantHTML {
					t.Errorf("a Renderer sharing the cache wrote another digest (err %v)", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if cache.c.Len() != len(papers) {
		t.Errorf("the cache keeps %d renderings, want the %d papers'", cache.c.Len(), len(papers))
	}
}
