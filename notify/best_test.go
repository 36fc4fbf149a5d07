package notify_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/follow"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/notify"
	"followfeed/paper"
)

// scoreRanker ranks by the scores the test sets per paper (papers.id);
// a paper without one scores 0, ties keep the order given (newest first).
// Why says the score, then three more texts (a digest shows three).
type scoreRanker struct {
	mu     sync.Mutex
	scores map[int64]float64
	ranked int // papers asked for, over all calls
}

func (r *scoreRanker) Rank(_ context.Context, want map[int64][]int64, _ map[int64]*paper.Paper) (notify.RankedBatch, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ids := range want {
		r.ranked += len(ids)
	}
	b := make(scoreBatch, len(r.scores))
	for id, s := range r.scores {
		b[id] = s
	}
	return b, nil
}

func (r *scoreRanker) set(scores map[int64]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scores == nil {
		r.scores = map[int64]float64{}
	}
	for id, s := range scores {
		r.scores[id] = s
	}
}

type scoreBatch map[int64]float64

func (b scoreBatch) Order(_ int64, ids []int64) {
	slices.SortStableFunc(ids, func(x, y int64) int { return cmp.Compare(b[y], b[x]) })
}

func (b scoreBatch) Why(_ int64, ids []int64) [][]string {
	out := make([][]string, len(ids))
	for i, id := range ids {
		if s, ok := b[id]; ok {
			out[i] = []string{fmt.Sprintf("scored %.0f", s), "second reason", "third reason", "fourth reason"}
		}
	}
	return out
}

// ranked gives e a Digester that ranks through r (the match job's hook
// schedules instant alerts through it too).
func (e *env) ranked(r notify.Ranker) {
	base, _ := url.Parse("https://followfeed.test")
	e.d = notify.NewDigester(notify.DigesterConfig{DB: e.db, Matcher: e.matcher, Sender: e.sender, Enqueuer: e.enq,
		Links: noLinks{}, Addresses: e.addrs, Logger: slog.New(e.logs), Ranker: r,
		From: &netmail.Address{Name: "followfeed", Address: "digest@followfeed.test"}, BaseURL: base, Now: e.clk.Now})
}

// budget sets the user's order and budget.
func (e *env) budget(uid int64, order notify.Order, maxPapers int, keep bool) {
	e.t.Helper()
	o := string(order)
	if _, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Order: &o, MaxPapers: &maxPapers, KeepFollowed: &keep}}); err != nil {
		e.t.Fatal(err)
	}
}

// ids are the papers.id of arXiv ids.
func (e *env) ids(arxivIDs ...string) map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		for _, a := range arxivIDs {
			id, err := catalog.LiveID(e.ctx, tx, a)
			if err != nil {
				return err
			}
			out[a] = id
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// titlesOf are the papers' titles of c in order.
func titlesOf(c notify.DigestContent) []string {
	var out []string
	for _, g := range c.Groups {
		for _, p := range g.Papers {
			out = append(out, p.Title)
		}
	}
	return out
}

func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// crlf turns a mail part's line ends into "\n".
func crlf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

var feedbackLink = regexp.MustCompile(`(More like this|Less like this|Save): +(https://followfeed\.test/feedback/(\S+))`)

// feedbackLinks checks the feedback links of a mail's text part: each
// paper's "More like this", "Less like this" and "Save", signed for uid,
// the paper (its papers.id, listed in shown) and the value, each also a
// link of the HTML part. It returns the links by paper and value.
func (e *env) feedbackLinks(uid int64, text, html string, shown []int64) map[int64]map[string]string {
	e.t.Helper()
	out := map[int64]map[string]string{}
	want := map[string]string{"More like this": "more", "Less like this": "less", "Save": "saved"}
	for _, m := range feedbackLink.FindAllStringSubmatch(text, -1) {
		u, pid, v, err := e.addrs.CheckFeedback(e.ctx, m[3])
		if err != nil || u != uid || v != want[m[1]] || !slices.Contains(shown, pid) {
			e.t.Errorf("%s link %s: user %d paper %d value %q (%v); want user %d, %q, a paper shown", m[1], m[2], u, pid, v, err, uid, want[m[1]])
			continue
		}
		if !strings.Contains(html, `<a href="`+m[2]+`">`+m[1]+`</a>`) {
			e.t.Errorf("the HTML part lacks the %s link %s", m[1], m[2])
		}
		if out[pid] == nil {
			out[pid] = map[string]string{}
		}
		out[pid][v] = m[2]
	}
	for _, pid := range shown {
		if len(out[pid]) != 3 {
			e.t.Errorf("paper %d has %d feedback links, want 3: %v", pid, len(out[pid]), out[pid])
		}
	}
	return out
}

// TestBestDigestRanksWithinTheBudget: a best-first digest lists its
// window's papers in the ranker's order, as one list, at most MaxPapers of
// them; the new paper of a followed person passes the budget (it counts,
// the best of the others fill the rest) unless KeepFollowed is off; the
// rest is counted by follow; each paper says why it ranks (three texts)
// and carries its three feedback links, signed for the user and the
// paper, in both parts; the subject names the follows of the best papers.
// A newest-first digest of the same window is grouped by follow as before,
// with the feedback links too.
func TestBestDigestRanksWithinTheBudget(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	r := &scoreRanker{}
	e.ranked(r)
	uid := e.reader("ranked", notify.Daily, "UTC", 6, "category/cs.LG", "category/math.AG")
	wen, _ := follow.ParseTarget("researcher", "openalex:A5023888391")
	label := "Wen lab"
	if _, _, err := e.follows.Follow(e.ctx, uid, wen, follow.Options{Label: &label}); err != nil {
		t.Fatal(err)
	}
	// c1..c5 in cs.LG, m1..m3 in math.AG, w: Wen's paper in hep-th, which
	// only the researcher follow matches.
	names := map[string]string{"c1": "2301.00001", "c2": "2301.00002", "c3": "2301.00003", "c4": "2301.00004", "c5": "2301.00005",
		"m1": "2301.00006", "m2": "2301.00007", "m3": "2301.00008", "w": "2301.00009"}
	var batch []paper.Paper
	for _, n := range []string{"c1", "c2", "c3", "c4", "c5"} {
		batch = append(batch, testPaper(names[n], "cs.LG"))
	}
	for _, n := range []string{"m1", "m2", "m3"} {
		batch = append(batch, testPaper(names[n], "math.AG"))
	}
	batch = append(batch, testPaper(names["w"], "hep-th", "openalex:A5023888391"))
	e.push(batch...)
	ids := e.ids(slices.Collect(func(yield func(string) bool) {
		for _, a := range names {
			if !yield(a) {
				return
			}
		}
	})...)
	id := func(n string) int64 { return ids[names[n]] }
	title := func(ns ...string) []string {
		var out []string
		for _, n := range ns {
			out = append(out, "Paper "+names[n])
		}
		return out
	}
	r.set(map[int64]float64{id("c3"): 9, id("m2"): 8, id("c1"): 7, id("m1"): 6, id("c5"): 5, id("c2"): 4, id("m3"): 3, id("c4"): 2, id("w"): 1})

	for _, tc := range []struct {
		keep      bool
		shown     []string
		omittedBy []notify.FollowCount
		subject   string
	}{
		{true, []string{"c3", "m2", "w"}, []notify.FollowCount{{Name: "cs.LG", N: 4}, {Name: "math.AG", N: 2}}, "9 new papers: cs.LG, math.AG and 1 more"},
		{false, []string{"c3", "m2", "c1"}, []notify.FollowCount{{Name: "cs.LG", N: 3}, {Name: "math.AG", N: 2}, {Name: "Wen lab", N: 1}}, "9 new papers: cs.LG, math.AG"},
	} {
		e.budget(uid, notify.OrderBest, 3, tc.keep)
		c, err := e.d.Preview(e.ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Groups) != 1 || c.Groups[0].Name != notify.BestGroupName || !slices.Equal(titlesOf(c), title(tc.shown...)) {
			t.Errorf("keep %v: %d groups, papers %q, want one list %q", tc.keep, len(c.Groups), titlesOf(c), title(tc.shown...))
			continue
		}
		if c.Total != 9 || c.Omitted != 6 || !slices.Equal(c.OmittedBy, tc.omittedBy) {
			t.Errorf("keep %v: total %d, omitted %d by %+v; want 9, 6 by %+v", tc.keep, c.Total, c.Omitted, c.OmittedBy, tc.omittedBy)
		}
		if s := notify.DigestSubject(c); s != tc.subject {
			t.Errorf("keep %v: subject %q, want %q", tc.keep, s, tc.subject)
		}
		first := c.Groups[0].Papers[0]
		if !slices.Equal(first.Why, []string{"scored 9", "second reason", "third reason"}) || !slices.Equal(first.Reasons, []string{"cs.LG"}) {
			t.Errorf("keep %v: the first paper's why %q, reasons %q", tc.keep, first.Why, first.Reasons)
		}
	}

	// The digest as mailed (KeepFollowed on).
	e.budget(uid, notify.OrderBest, 3, true)
	res, err := e.d.SendNow(e.ctx, uid, false)
	if err != nil || res.Status != notify.NowSent {
		t.Fatalf("sending: %+v %v", res, err)
	}
	if res.Papers != 9 || res.Shown != 3 {
		t.Errorf("the outcome: %d papers, %d shown; want 9 and 3", res.Papers, res.Shown)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d mails", len(msgs))
	}
	text, html := crlf(textPart(t, msgs[0].Data)), crlf(partOf(t, msgs[0].Data, "text/html"))
	for _, part := range []string{words(text), html} {
		for _, want := range []string{notify.BestGroupName, "Why first: scored 9 · second reason · third reason", "Why first: scored 1 · second reason · third reason",
			"…and 6 more papers in your feed", "4 from cs.LG and 2 from math.AG", "Because you follow Wen lab"} {
			if !strings.Contains(part, want) {
				t.Errorf("a part lacks %q:\n%s", want, part)
			}
		}
		if strings.Contains(part, "fourth reason") {
			t.Error("a part shows a fourth why")
		}
		if a, b, c := strings.Index(part, "Paper "+names["c3"]), strings.Index(part, "Paper "+names["m2"]), strings.Index(part, "Paper "+names["w"]); a < 0 || a > b || b > c {
			t.Errorf("the papers are not in the ranker's order (%d, %d, %d)", a, b, c)
		}
	}
	if n := e.count(`SELECT shown FROM digests WHERE user_id = $1 AND state = 'sent'`, uid); n != 3 {
		t.Errorf("the ledger says the mail listed %d papers, want 3", n)
	}
	// The papers beyond the budget: in the feed, or best first in the
	// inbox, a page a mail's reader opens in their browser.
	if !strings.Contains(text, "\nor in your inbox on the site:\nhttps://followfeed.test/inbox?order=best\n") ||
		!strings.Contains(html, `or in <a href="https://followfeed.test/inbox?order=best" style="color:#1d4ed8;">your inbox on the site</a>`) {
		t.Errorf("the mail does not link the inbox, best first:\n%s\n%s", text, html)
	}
	e.feedbackLinks(uid, text, html, []int64{id("c3"), id("m2"), id("w")})

	// Newest first: grouped by follow as before (the researcher first),
	// every paper with its feedback links, no why.
	newest := e.reader("newest", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00010", "cs.LG"), testPaper("2301.00011", "cs.LG"))
	if res, err := e.d.SendNow(e.ctx, newest, false); err != nil || res.Status != notify.NowSent {
		t.Fatalf("sending newest first: %+v %v", res, err)
	}
	msg := e.smtp.Messages()[1]
	text, html = crlf(textPart(t, msg.Data)), crlf(partOf(t, msg.Data, "text/html"))
	if !strings.Contains(text, "cs.LG — Machine Learning\n---") || strings.Contains(text, notify.BestGroupName) || strings.Contains(text, "Why first") {
		t.Errorf("a newest-first digest:\n%s", text)
	}
	nids := e.ids("2301.00010", "2301.00011")
	e.feedbackLinks(newest, text, html, []int64{nids["2301.00010"], nids["2301.00011"]})
	if r.ranked != 3*9 {
		t.Errorf("the ranker was asked for %d papers, want the best-first user's 9 three times (two previews, one mail), never the newest-first user's", r.ranked)
	}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestBestInstantAlertsKeepADailyBudget: a user with best-first instant
// alerts and a budget of 3 gets at most 3 papers a day over all alerts,
// the best of each alert first; the rest is counted; once the day's budget
// is spent an alert with nothing that passes it is not sent, while a
// followed person's new paper still is; the next local day starts a new
// budget.
func TestBestInstantAlertsKeepADailyBudget(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	r := &scoreRanker{}
	e.ranked(r)
	uid := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG", "researcher/openalex:A5023888391")
	e.budget(uid, notify.OrderBest, 3, true)
	n := 0
	alert := func(score float64, researcher bool, count int) (titles []string, id int64) {
		t.Helper()
		var ps []paper.Paper
		var arxivIDs []string
		for i := range count {
			n++
			a := fmt.Sprintf("2301.%05d", n)
			arxivIDs = append(arxivIDs, a)
			if researcher && i == 0 {
				ps = append(ps, testPaper(a, "hep-th", "openalex:A5023888391"))
			} else {
				ps = append(ps, testPaper(a, "cs.LG"))
			}
		}
		e.push(ps...)
		ids := e.ids(arxivIDs...)
		scores := map[int64]float64{}
		for i, a := range arxivIDs {
			scores[ids[a]] = score + float64(i) // the last pushed is the best
		}
		r.set(scores)
		before := len(e.smtp.Messages())
		if err := e.d.SendInstant(e.ctx, uid); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT max(id) FROM digests WHERE user_id = $1`, uid).Scan(&id); err != nil {
			t.Fatal(err)
		}
		msgs := e.smtp.Messages()
		if len(msgs) == before {
			st, reply := e.state(id)
			t.Logf("alert %d: %s %q", id, st, reply)
			return nil, id
		}
		text := textPart(t, msgs[len(msgs)-1].Data)
		return regexp.MustCompile(`Paper 2301\.\d{5}`).FindAllString(text, -1), id
	}
	got, _ := alert(10, false, 2)
	if want := []string{"Paper 2301.00002", "Paper 2301.00001"}; !slices.Equal(got, want) {
		t.Errorf("first alert %q, want %q", got, want)
	}
	got, id := alert(20, false, 3)
	if want := []string{"Paper 2301.00005"}; !slices.Equal(got, want) {
		t.Errorf("second alert %q, want the best one of three (one left of the budget): %q", got, want)
	}
	if shown := e.count(`SELECT shown FROM digests WHERE id = $1`, id); shown != 1 {
		t.Errorf("the second alert's ledger row lists %d papers", shown)
	}
	msgs := e.smtp.Messages()
	if text := words(textPart(t, msgs[len(msgs)-1].Data)); !strings.Contains(text, "…and 2 more papers in your feed (2 from cs.LG)") {
		t.Errorf("the second alert does not count the rest:\n%s", text)
	}
	got, id = alert(30, false, 1)
	if st, reply := e.state(id); got != nil || st != "skipped" || !strings.Contains(reply, "budget of 3 papers is spent") {
		t.Errorf("an alert after the budget: %q, %s %q; want skipped, no mail", got, st, reply)
	}
	got, _ = alert(1, true, 2) // Wen's paper scores lowest, and passes
	if want := []string{"Paper 2301.00007"}; !slices.Equal(got, want) {
		t.Errorf("an alert with a followed person's paper after the budget: %q, want %q", got, want)
	}
	e.clk.Set(time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC)) // a new day in UTC
	got, _ = alert(40, false, 4)
	if want := []string{"Paper 2301.00012", "Paper 2301.00011", "Paper 2301.00010"}; !slices.Equal(got, want) {
		t.Errorf("the next day's first alert %q, want %q", got, want)
	}
}

// failingRanker cannot rank.
type failingRanker struct{}

func (failingRanker) Rank(context.Context, map[int64][]int64, map[int64]*paper.Paper) (notify.RankedBatch, error) {
	return nil, fmt.Errorf("the ranking corpus cannot be read")
}

// TestBestDigestGoesNewestFirstWhenRankingFails: a best-first digest whose
// ranking fails is not lost: it goes out newest first, grouped by follow,
// and the failure is logged.
func TestBestDigestGoesNewestFirstWhenRankingFails(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	e.ranked(failingRanker{})
	uid := e.reader("unlucky", notify.Daily, "UTC", 6, "category/cs.LG")
	e.budget(uid, notify.OrderBest, 1, true)
	e.push(testPaper("2301.00001", "cs.LG"), testPaper("2301.00002", "cs.LG"))
	if res, err := e.d.SendNow(e.ctx, uid, false); err != nil || res.Status != notify.NowSent {
		t.Fatalf("sending: %+v %v", res, err)
	}
	text := crlf(textPart(t, e.smtp.Messages()[0].Data))
	if !strings.Contains(text, "cs.LG — Machine Learning\n---") || !strings.Contains(text, "Paper 2301.00001") || !strings.Contains(text, "Paper 2301.00002") {
		t.Errorf("the digest is not newest first with both papers:\n%s", text)
	}
	if !slices.ContainsFunc(e.logs.lines(), func(l map[string]string) bool {
		return l["level"] == "WARN" && strings.Contains(l["msg"], "ranking digests failed") && strings.Contains(l["error"], "corpus")
	}) {
		t.Errorf("the failure is not logged: %v", e.logs.lines())
	}
}

// TestBestDigestCountsWhatItDidNotRank: of a window larger than the
// candidates a digest reads (the newest 250), a best-first digest ranks
// the candidates and counts the others as not ranked.
func TestBestDigestCountsWhatItDidNotRank(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	r := &scoreRanker{}
	e.ranked(r)
	uid := e.reader("swamped", notify.Daily, "UTC", 6, "category/cs.LG")
	e.budget(uid, notify.OrderBest, 5, true)
	var ps []paper.Paper
	for i := range 260 {
		ps = append(ps, testPaper(fmt.Sprintf("2301.%05d", i+1), "cs.LG"))
	}
	e.push(ps...)
	c, err := e.d.Preview(e.ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	want := []notify.FollowCount{{Name: "cs.LG", N: 245}, {Name: notify.NotRankedName, N: 10}}
	if c.Total != 260 || c.Omitted != 255 || !slices.Equal(c.OmittedBy, want) || len(titlesOf(c)) != 5 || r.ranked != 250 {
		t.Errorf("total %d, omitted %d by %+v, %d shown, %d ranked; want 260, 255 by %+v, 5, 250 (the candidates)", c.Total, c.Omitted, c.OmittedBy, len(titlesOf(c)), r.ranked, want)
	}
}
