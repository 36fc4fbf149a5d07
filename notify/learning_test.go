package notify_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/notify"
	"followfeed/paper"
	"followfeed/ranking"
)

// rankingDigests is notify's Ranker over the real ranking service, as
// package app wires it.
type rankingDigests struct{ s *ranking.Service }

func (r rankingDigests) Rank(ctx context.Context, want map[int64][]int64, have map[int64]*paper.Paper) (notify.RankedBatch, error) {
	b, err := r.s.Rank(ctx, want, have)
	if err != nil {
		return nil, err
	}
	return rankingWhy{b}, nil
}

type rankingWhy struct{ *ranking.Batch }

func (b rankingWhy) Why(userID int64, paperIDs []int64) [][]string {
	var out [][]string
	for _, rs := range b.Batch.WhyMany(userID, paperIDs) {
		var texts []string
		for _, r := range rs {
			texts = append(texts, r.Text())
		}
		out = append(out, texts)
	}
	return out
}

// entry is one paper of a mailed digest's text part.
type entry struct {
	arxivID, less string
	why           bool
}

var (
	absLine  = regexp.MustCompile(`(?m)^   Abstract: https://arxiv\.org/abs/(\S+)$`)
	lessLine = regexp.MustCompile(`(?m)^   Less like this: (\S+)$`)
)

// entries are the papers of the user's newest mail, in order.
func (e *env) entries() []entry {
	e.t.Helper()
	msgs := e.smtp.Messages()
	text := crlf(textPart(e.t, msgs[len(msgs)-1].Data))
	var out []entry
	for _, block := range strings.Split(text, "\n\n") {
		abs, less := absLine.FindStringSubmatch(block), lessLine.FindStringSubmatch(block)
		if abs == nil {
			continue
		}
		if less == nil {
			e.t.Fatalf("a paper without its feedback links:\n%s", block)
		}
		out = append(out, entry{arxivID: abs[1], less: less[1], why: strings.Contains(block, "\n   Why first: ")})
	}
	return out
}

// TestLessLikeThisLeavesTheTopOfTheNextDigest is the learning the issue
// asks for, end to end: a user follows Ann One (who writes on lensing
// and on pulsars) and astro-ph.CO, with best-first digests. Their first
// digest ranks with a model trained from the follows alone, pulsar papers
// among the top five. They click "Less like this" on each pulsar paper in
// it (the mail's signed links, resolved as the link's page resolves them,
// recorded with ranking.Service.Set); the training job runs
// (ranking.Service.Train). The next digest's top five, its budget, are
// all about lensing: the pulsar papers left the top, and are counted in
// "and 5 more".
func TestLessLikeThisLeavesTheTopOfTheNextDigest(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	rank := ranking.New(ranking.Config{DB: e.db, Enqueuer: e.enq, Matcher: match.NewService(e.db)})
	e.ranked(rankingDigests{rank})
	lib := testpaper.NewWriter(7, "2611", "astro-ph.CO")
	background := lib.Background(150)
	ann := paper.Author{Name: "Ann One", IDs: []string{"openalex:A1000000001"}}
	for i := range 8 {
		subject := "pulsar" // Ann writes on pulsars mostly
		if i%4 == 0 {
			subject = "lensing"
		}
		background = append(background, lib.Paper(subject, ann, paper.Author{Name: "C. Colleague"}))
	}
	e.push(background...)
	uid := e.reader("learner", notify.Daily, "UTC", 6, "researcher/openalex:A1000000001", "category/astro-ph.CO")
	e.budget(uid, notify.OrderBest, 10, true)

	window := func() (lensing, pulsar []string) {
		var ps []paper.Paper
		for range 5 {
			l, p := lib.Paper("lensing"), lib.Paper("pulsar")
			ps = append(ps, l, p)
			lensing, pulsar = append(lensing, l.ArxivID), append(pulsar, p.ArxivID)
		}
		e.push(ps...)
		return lensing, pulsar
	}
	send := func() []entry {
		t.Helper()
		if res, err := e.d.SendNow(e.ctx, uid, false); err != nil || res.Status != notify.NowSent {
			t.Fatalf("sending: %+v %v", res, err)
		}
		return e.entries()
	}
	top := func(es []entry, n int) []string {
		var out []string
		for _, en := range es[:min(n, len(es))] {
			out = append(out, en.arxivID)
		}
		return out
	}
	countIn := func(ids, set []string) int {
		n := 0
		for _, id := range ids {
			if slices.Contains(set, id) {
				n++
			}
		}
		return n
	}

	_, pulsar := window()
	first := send()
	if len(first) != 10 {
		t.Fatalf("the first digest lists %d papers, want its 10", len(first))
	}
	if n := countIn(top(first, 5), pulsar); n < 2 {
		t.Fatalf("cold start: %d pulsar papers in the top 5 (%q); the test needs them there first", n, top(first, 10))
	}
	if !slices.ContainsFunc(first, func(en entry) bool { return en.why }) {
		t.Error("no paper of the first digest says why it ranks")
	}
	ids := e.ids(pulsar...)
	for _, en := range first {
		if !slices.Contains(pulsar, en.arxivID) {
			continue
		}
		u, pid, v, err := e.addrs.CheckFeedback(e.ctx, strings.TrimPrefix(en.less, "https://followfeed.test/feedback/"))
		if err != nil || u != uid || pid != ids[en.arxivID] {
			t.Fatalf("the Less link of %s: user %d, paper %d, %v", en.arxivID, u, pid, err)
		}
		value, err := ranking.ParseValue(v)
		if err != nil || value != ranking.Less {
			t.Fatalf("the Less link of %s carries %q (%v)", en.arxivID, v, err)
		}
		if _, err := rank.Set(e.ctx, u, en.arxivID, value); err != nil {
			t.Fatal(err)
		}
	}
	if trained, err := rank.Train(e.ctx, uid); err != nil || !trained {
		t.Fatalf("the training job: %v %v", trained, err)
	}

	e.clk.Set(time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)) // the next day's digest
	e.budget(uid, notify.OrderBest, 5, true)
	lensing, pulsar := window()
	next := send()
	if got := top(next, 10); len(got) != 5 || countIn(got, lensing) != 5 {
		t.Errorf("the next digest's top 5: %q; want the 5 lensing papers %q, not the pulsar ones %q", got, lensing, pulsar)
	}
	msgs := e.smtp.Messages()
	if text := words(textPart(t, msgs[len(msgs)-1].Data)); !strings.Contains(text, "…and 5 more papers in your feed (5 from astro-ph.CO)") {
		t.Errorf("the next digest does not count the pulsar papers:\n%s", text)
	}
}
