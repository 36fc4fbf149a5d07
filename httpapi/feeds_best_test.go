package httpapi_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/config"
	"followfeed/internal/testapp"
	"followfeed/internal/testpaper"
	"followfeed/paper"
	"followfeed/worker"
)

// feedbackChecker resolves feedback links as the service does: its
// SECRET_KEY (the development one testapp runs with) and PUBLIC_URL.
func feedbackChecker(t *testing.T, a *testapp.App) *account.Addresses {
	t.Helper()
	base, _ := url.Parse(a.URL)
	return account.NewAddresses(openDB(t, a.DatabaseURL), auth.NewLinkSigner([]byte(config.DevSecretKey)), base, nil)
}

// itemFeedback are the feedback links of an item's HTML body (Atom's and
// JSON Feed's content, RSS's description), by label.
func itemFeedback(it *gofeed.Item) map[string]string {
	out := map[string]string{}
	rest := it.Content + it.Description
	for {
		i := strings.Index(rest, `/feedback/ffl_`)
		if i < 0 {
			return out
		}
		start := strings.LastIndex(rest[:i], `"`) + 1
		href, after, _ := strings.Cut(rest[start:], `">`)
		label, tail, _ := strings.Cut(after, "</a>")
		out[label] = href
		rest = tail
	}
}

// TestPrivateFeedItemsCarryFeedbackLinks: through the whole service, every
// item of a private feed in every format carries More like this, Less like
// this and Save, as a feed reader (gofeed) reads the item; each link is
// this user's, for this paper and that value; the public feed of the same
// category shows none.
func TestPrivateFeedItemsCarryFeedbackLinks(t *testing.T) {
	t.Parallel()
	a, c, _, links := feedFixture(t)
	addrs := feedbackChecker(t, a)
	db := openDB(t, a.DatabaseURL)
	var readerID int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT id FROM users WHERE sub = 'reader'`).Scan(&readerID); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"More like this": "more", "Less like this": "less", "Save": "saved"}
	for _, u := range []string{links.Atom, links.RSS, links.JSON, links.Follows[0].Atom} {
		resp, body := get(t, u)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", u, resp.StatusCode)
		}
		f, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		for _, it := range f.Items {
			got := itemFeedback(it)
			if len(got) != 3 {
				t.Fatalf("%s: item %s has feedback links %q", u, it.GUID, got)
			}
			arxivID := strings.TrimPrefix(it.GUID, "tag:arxiv.org,1991:")
			var paperID int64
			if err := db.Pool.QueryRow(context.Background(), `SELECT id FROM papers WHERE arxiv_id = $1`, arxivID).Scan(&paperID); err != nil {
				t.Fatal(err)
			}
			for label, href := range got {
				tok, ok := strings.CutPrefix(href, a.URL+"/feedback/")
				if !ok {
					t.Fatalf("%s: %s link %s is not under PUBLIC_URL/feedback/", u, label, href)
				}
				uid, pid, v, err := addrs.CheckFeedback(context.Background(), tok)
				if err != nil || uid != readerID || pid != paperID || v != want[label] {
					t.Errorf("%s: %s link of %s: user %d, paper %d, %q, %v", u, label, arxivID, uid, pid, v, err)
				}
			}
		}
	}
	r := c.Do("GET", "/feeds/category/cs.LG.atom", "", nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), "Plain ML paper") || strings.Contains(string(r.Body), "/feedback/") {
		t.Errorf("the public feed: %d\n%s", r.Status, r.Body)
	}
}

// bestLinks is GET /v1/me/feeds's additive "best" field.
type bestLinks struct {
	Best struct{ Atom, RSS, JSON string }
}

// TestRankedFeedFollowsTheModel: a user follows Ann One (lensing and
// pulsar papers) and astro-ph.CO. Their ranked feed (/feeds/{token}/best,
// listed by GET /v1/me/feeds) holds the newest ten matches best first,
// from a first model trained before its first ETag: a conditional GET
// with that ETag is a 304. Five pulsar papers marked "less" through the
// API queue rank_train jobs (the service's own River workers run them);
// then the ETag changes, every lensing paper ranks above every pulsar one
// in all three formats, and the new ETag answers 304 again. A public
// feed's path that looks like the ranked feed's is still the public
// feeds'.
func TestRankedFeedFollowsTheModel(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	reader := testapp.Token(t, "reader", "")
	c.Do("PUT", "/v1/me/follows/researcher/host:1", reader, nil)
	c.Do("PUT", "/v1/me/follows/category/astro-ph.CO", reader, nil)
	w := testpaper.NewWriter(7, "2611", "astro-ph.CO")
	ann := paper.Author{Name: "Ann One", IDs: []string{"host:1"}}
	var lines []string
	for _, p := range w.Background(150) {
		lines = append(lines, testpaper.PushJSON(p))
	}
	for range 4 {
		lines = append(lines, testpaper.PushJSON(w.Paper("lensing", ann, w.Stranger())), testpaper.PushJSON(w.Paper("pulsar", ann, w.Stranger())))
	}
	var marked []string
	for range 5 {
		p := w.Paper("pulsar")
		marked = append(marked, p.ArxivID)
		lines = append(lines, testpaper.PushJSON(p))
	}
	pushPaper(t, c, lines...)
	lines = nil
	var lensing, pulsar []string
	for range 5 {
		l, p := w.Paper("lensing"), w.Paper("pulsar")
		lensing, pulsar = append(lensing, l.ArxivID), append(pulsar, p.ArxivID)
		lines = append(lines, testpaper.PushJSON(l), testpaper.PushJSON(p))
	}
	pushPaper(t, c, lines...) // the newest ten
	var links bestLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	if !strings.HasPrefix(links.Best.Atom, a.URL+"/feeds/fft_") || !strings.HasSuffix(links.Best.Atom, "/best.atom") ||
		strings.TrimSuffix(links.Best.Atom, ".atom") != strings.TrimSuffix(links.Best.RSS, ".rss") ||
		strings.TrimSuffix(links.Best.Atom, ".atom") != strings.TrimSuffix(links.Best.JSON, ".json") {
		t.Fatalf("best links: %+v", links.Best)
	}
	fetch := func(u, etag string) (int, string, []string) {
		t.Helper()
		var hd []string
		if etag != "" {
			hd = []string{"If-None-Match", etag}
		}
		r := c.Do("GET", strings.TrimPrefix(u, a.URL)+"?limit=10", "", nil, hd...)
		if r.Status == 304 {
			return 304, r.Header.Get("ETag"), nil
		}
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", u, r.Status, r.Body)
		}
		f, err := gofeed.NewParser().ParseString(string(r.Body))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if f.Title != "Papers from your 2 follows, best first" {
			t.Errorf("%s: title %q", u, f.Title)
		}
		var ids []string
		for _, it := range f.Items {
			ids = append(ids, strings.TrimPrefix(it.GUID, "tag:arxiv.org,1991:"))
			if len(itemFeedback(it)) != 3 {
				t.Errorf("%s: item %s without its feedback links", u, it.GUID)
			}
		}
		return 200, r.Header.Get("ETag"), ids
	}
	_, e1, cold := fetch(links.Best.Atom, "")
	if !slices.Equal(slices.Sorted(slices.Values(cold)), slices.Sorted(slices.Values(append(slices.Clone(lensing), pulsar...)))) {
		t.Fatalf("the ranked feed holds %q", cold)
	}
	if n := testpaper.CountIn(cold[:5], pulsar); n < 2 {
		t.Fatalf("cold start: %d pulsar papers in the top 5 (%q); the test needs them there first", n, cold)
	}
	if st, etag, _ := fetch(links.Best.Atom, e1); st != 304 || etag != e1 {
		t.Errorf("the first ETag again: %d %s, want 304 %s (the first model is trained before the first ETag)", st, etag, e1)
	}
	for _, id := range marked {
		if r := c.Do("PUT", "/v1/me/papers/"+id+"/feedback", reader, `{"value": "less"}`); r.Status != 200 {
			t.Fatalf("feedback: %d %s", r.Status, r.Body)
		}
	}
	a.Jobs().WaitCompleted(t, db.Pool, worker.RankTrainArgs{}.Kind(), len(marked))
	st, e2, _ := fetch(links.Best.Atom, e1)
	if st != 200 || e2 == e1 {
		t.Fatalf("after the retraining: %d with ETag %s (was %s)", st, e2, e1)
	}
	for _, u := range []string{links.Best.Atom, links.Best.RSS, links.Best.JSON} {
		_, _, after := fetch(u, "")
		if testpaper.CountIn(after[:5], lensing) != 5 {
			t.Errorf("%s after 5 pulsar papers marked less: %q (lensing %q)", u, after, lensing)
		}
	}
	if st, etag, _ := fetch(links.Best.Atom, e2); st != 304 || etag != e2 {
		t.Errorf("no change since: %d %s, want 304 %s", st, etag, e2)
	}
	if r1, r2 := c.Do("GET", "/feeds/category/best.atom", "", nil), c.Do("GET", "/feeds/category/worst.atom", "", nil); r1.Status != r2.Status ||
		r1.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("a public feed's path through the ranked feed's route: %d %s, the public feeds answer %d", r1.Status, r1.Body, r2.Status)
	}
	// A private link cut or mistyped is a 404 saying so, not a public
	// feed's "unknown kind".
	for _, tok := range []string{"fft_doesnotexist", "fft_" + strings.Repeat("A", 44)} {
		if r := c.Do("GET", "/feeds/"+tok+"/best.atom", "", nil); r.Status != 404 || !strings.Contains(string(r.Body), "no such feed") {
			t.Errorf("/feeds/%s/best.atom: %d %s", tok, r.Status, r.Body)
		}
	}
}

// TestRankedFeedWarmConditionalGetIsOneStatement: like the private feed's,
// a warm conditional GET of the ranked feed is the token lookup alone, one
// statement whose plan is the user_feeds index probe, match_state's row
// and ranking_models' primary key (when the user's model was stored).
func TestRankedFeedWarmConditionalGetIsOneStatement(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	reader := testapp.Token(t, "reader", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	pushPaper(t, c, paperLine("2601.00001", "Paper one", "cs.LG"))
	var links bestLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	path := strings.TrimPrefix(links.Best.Atom, a.URL)
	h, tr := tracedFeeds(t, a, 0)
	get := func(etag string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first := get("")
	etag := first.Header().Get("ETag")
	if first.Code != 200 || !strings.Contains(etag, "-b-") || !strings.Contains(first.Body.String(), "Paper one") {
		t.Fatalf("first GET: %d %s %s", first.Code, etag, first.Body)
	}
	tr.take()
	for range 3 {
		if r := get(etag); r.Code != 304 {
			t.Fatalf("conditional GET: %d", r.Code)
		}
	}
	sqls := tr.take()
	if len(sqls) != 3 || !strings.Contains(sqls[0], "token_hash") || !strings.Contains(sqls[0], "ranking_models") {
		t.Fatalf("3 warm conditional GETs sent %d statements, want 3 lookups:\n%s", len(sqls), strings.Join(sqls, "\n---\n"))
	}
	joined := lookupPlan(t, a, sqls[0])
	if !strings.Contains(joined, "user_feeds_token_hash_key") || !strings.Contains(joined, "ranking_models_pkey") || strings.Count(joined, "Scan") != 3 {
		t.Errorf("the ranked lookup's plan:\n%s", joined)
	}
}
