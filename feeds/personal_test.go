package feeds_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/feeds"
	"followfeed/follow"
	"followfeed/internal/testdb"
	"followfeed/internal/testpaper"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/worker"

	"github.com/jackc/pgx/v5"
)

// env is the feed service on a fresh database with what makes private
// feeds personal: the signed feedback links (account.Addresses) and the
// ranking (package ranking, whose jobs are queued, not run: a test trains
// by calling Train, as the rank_train job does).
type env struct {
	t       testing.TB
	ctx     context.Context
	db      *database.DB
	papers  *catalog.Store
	follows *follow.Service
	addrs   *account.Addresses
	rank    *ranking.Service
	feeds   *feeds.Service
	ids     map[string]int64 // arXiv id → papers.id
}

func setup(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), db: testdb.New(t), ids: map[string]int64{}}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	enq := worker.NewEnqueuer(ins)
	e.papers = catalog.NewStore(e.db, enq)
	e.follows = follow.NewService(e.db)
	m := match.NewService(e.db)
	e.rank = ranking.New(ranking.Config{DB: e.db, Enqueuer: enq, Matcher: m})
	e.follows.OnFollow(e.rank.FollowChanged)
	base, _ := url.Parse("https://followfeed.test")
	secret := []byte("0123456789abcdef0123456789abcdef")
	e.addrs = account.NewAddresses(e.db, auth.NewLinkSigner(secret), base, nil)
	e.feeds = feeds.NewService(e.db, feeds.NewTokens(e.db, secret), m, e.follows, base, nil, secret)
	e.feeds.Personalize(feeds.Personal{Feedback: e.addrs, Ranking: e.rank})
	return e
}

// user creates a user following targets ("kind/id") and returns their id
// and feed token.
func (e *env) user(sub string, targets ...string) (int64, string) {
	e.t.Helper()
	u, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: sub})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range targets {
		kind, id, _ := strings.Cut(s, "/")
		tg, err := follow.ParseTarget(kind, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.follows.Follow(e.ctx, u.ID, tg, follow.Options{}); err != nil {
			e.t.Fatal(err)
		}
	}
	tok, err := e.feeds.Tokens().Token(e.ctx, u.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.ID, tok
}

// store ingests papers and records their papers.id.
func (e *env) store(ps ...paper.Paper) []string {
	e.t.Helper()
	if _, err := e.papers.Ingest(e.ctx, ps, catalog.SourcePush); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, p := range ps {
		err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
			id, err := catalog.LiveID(e.ctx, tx, p.ArxivID)
			e.ids[p.ArxivID] = id
			return err
		})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, p.ArxivID)
	}
	return out
}

// private renders the user's private feed (best: the ranked one) as a
// feed reader receives it, with the validator the request would carry.
func (e *env) private(tok string, f feeds.Format, limit int, best bool) (*gofeed.Feed, feeds.Validator) {
	e.t.Helper()
	st, err := e.feeds.Tokens().Lookup(e.ctx, tok)
	if err != nil {
		e.t.Fatal(err)
	}
	v, err := e.feeds.Validator(e.ctx, st)
	if err != nil {
		e.t.Fatal(err)
	}
	feed, err := e.feeds.Private(e.ctx, tok, st, v, feeds.Request{Format: f, Limit: limit, Best: best})
	if err != nil {
		e.t.Fatal(err)
	}
	body, err := feeds.Render(f, feed)
	if err != nil {
		e.t.Fatal(err)
	}
	parsed, err := gofeed.NewParser().ParseString(string(body))
	if err != nil {
		e.t.Fatalf("gofeed: %v\n%s", err, body)
	}
	return parsed, v
}

// body is what a feed reader shows of an item: Atom's and JSON Feed's
// content, RSS's description.
func body(it *gofeed.Item) string {
	if it.Content != "" {
		return it.Content
	}
	return it.Description
}

// feedbackLinks are the feedback links of an item's HTML body, by label.
func feedbackLinks(t *testing.T, it *gofeed.Item) map[string]string {
	t.Helper()
	out := map[string]string{}
	rest := body(it)
	for {
		i := strings.Index(rest, `<a href="https://followfeed.test/feedback/`)
		if i < 0 {
			return out
		}
		rest = rest[i+len(`<a href="`):]
		href, after, _ := strings.Cut(rest, `">`)
		label, _, _ := strings.Cut(after, "</a>")
		out[label] = href
	}
}

// TestPrivateItemsCarryFeedbackLinks: every item of a private feed (all
// follows, and one follow's) carries three feedback links, More like
// this, Less like this and Save, each signed for this user, this paper and
// that value (account.Addresses.CheckFeedback says so); JSON Feed's text
// has them too. The public feed of the same category, and its items, have
// none. Revoking the user's links bumps the feed version, so the validator
// (the ETag) changes, and the new render's links work where the old ones
// no longer do.
func TestPrivateItemsCarryFeedbackLinks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	uid, tok := e.user("alice", "category/cs.LG")
	w := testpaper.NewWriter(1, "2611", "cs.LG")
	stored := e.store(w.Paper("galaxy"), w.Paper("dust"))
	byValue := map[string]string{"More like this": "more", "Less like this": "less", "Save": "saved"}
	var old map[string]string
	for _, f := range feeds.Formats {
		doc, _ := e.private(tok, f, 50, false)
		if len(doc.Items) != 2 {
			t.Fatalf("%s: %d items", f, len(doc.Items))
		}
		for _, it := range doc.Items {
			links := feedbackLinks(t, it)
			if len(links) != 3 {
				t.Fatalf("%s: item %s has feedback links %q", f, it.GUID, links)
			}
			for label, href := range links {
				u, p, v, err := e.addrs.CheckFeedback(e.ctx, strings.TrimPrefix(href, "https://followfeed.test/feedback/"))
				if err != nil || u != uid || e.ids[strings.TrimPrefix(it.GUID, "tag:arxiv.org,1991:")] != p || v != byValue[label] {
					t.Errorf("%s: %s link of %s checks as user %d, paper %d, %q, %v", f, label, it.GUID, u, p, v, err)
				}
			}
			old = links
		}
	}
	// JSON Feed's text: one "Label: URL" line each (read raw: gofeed keeps
	// content_html only).
	st, _ := e.feeds.Tokens().Lookup(e.ctx, tok)
	v, _ := e.feeds.Validator(e.ctx, st)
	feed, err := e.feeds.Private(e.ctx, tok, st, v, feeds.Request{Format: feeds.JSON, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := feeds.Render(feeds.JSON, feed)
	if !strings.Contains(string(raw), `\n\nMore like this: https://followfeed.test/feedback/ffl_`) {
		t.Errorf("JSON Feed's content_text lacks the links: %s", raw)
	}
	// One follow's feed too.
	only, _ := follow.ParseTarget("category", "cs.LG")
	st, _ = e.feeds.Tokens().Lookup(e.ctx, tok)
	if feed, err := e.feeds.Private(e.ctx, tok, st, v, feeds.Request{Format: feeds.Atom, Limit: 50, Only: &only}); err != nil ||
		len(feed.Items) != 2 || len(feed.Items[0].Feedback) != 3 {
		t.Errorf("one follow's feed: %+v %v", feed.Items, err)
	}

	// The public feed: no links, no reasons, nothing of the user.
	cat, _ := follow.ParseTarget("category", "cs.LG")
	seq, changed, err := e.feeds.PublicVersion(e.ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range feeds.Formats {
		pub, err := e.feeds.Public(e.ctx, cat, seq, changed, feeds.Request{Format: f, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		out, err := feeds.Render(f, pub)
		if err != nil {
			t.Fatal(err)
		}
		if len(pub.Items) != len(stored) || strings.Contains(string(out), "/feedback/") || strings.Contains(string(out), "like this") {
			t.Errorf("the public %s feed shows feedback links:\n%s", f, out)
		}
	}

	// Revoking the user's links moves the validator and the links.
	_, before := e.private(tok, feeds.Atom, 50, false)
	if err := e.addrs.RevokeLinks(e.ctx, uid); err != nil {
		t.Fatal(err)
	}
	doc, after := e.private(tok, feeds.Atom, 50, false)
	if after.Version == before.Version {
		t.Errorf("revoking the links left the feed version at %d", after.Version)
	}
	fresh := feedbackLinks(t, doc.Items[len(doc.Items)-1])
	if _, _, _, err := e.addrs.CheckFeedback(e.ctx, strings.TrimPrefix(fresh["Save"], "https://followfeed.test/feedback/")); err != nil {
		t.Errorf("a link of the new render: %v", err)
	}
	if _, _, _, err := e.addrs.CheckFeedback(e.ctx, strings.TrimPrefix(old["Save"], "https://followfeed.test/feedback/")); !errors.Is(err, auth.ErrBadLink) {
		t.Errorf("a link of the old render after RevokeLinks: %v", err)
	}
}

// TestRankedFeedFollowsTheModel: the ranked feed holds the same papers as
// the private feed (its newest Limit matches) best first for the user. A
// user who follows Ann One (she writes on lensing and pulsars) and the
// category sees, from the cold start, pulsar papers among the first; after
// five pulsar papers marked "less" and a retraining (Train, what the
// rank_train job runs), every lensing paper ranks above every pulsar one,
// in every format and in the order the document gives. Its items say why
// they rank, its title says "best first", and a per-follow or unranked
// service has no ranked feed.
func TestRankedFeedFollowsTheModel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := testpaper.NewWriter(7, "2611", "astro-ph.CO")
	e.store(w.Background(150)...)
	ann := paper.Author{Name: "Ann One", IDs: []string{"host:1"}}
	for range 4 {
		e.store(w.Paper("lensing", ann, w.Stranger()), w.Paper("pulsar", ann, w.Stranger()))
	}
	uid, tok := e.user("alice", "researcher/host:1", "category/astro-ph.CO")
	var marked []string
	for range 5 {
		marked = append(marked, e.store(w.Paper("pulsar"))...)
	}
	var lensing, pulsar []string
	for range 5 {
		lensing = append(lensing, e.store(w.Paper("lensing"))...)
		pulsar = append(pulsar, e.store(w.Paper("pulsar"))...)
	}
	order := func(f feeds.Format) []string {
		doc, _ := e.private(tok, f, 10, true)
		if !strings.HasSuffix(doc.Title, ", best first") {
			t.Errorf("%s: title %q", f, doc.Title)
		}
		var ids []string
		for _, it := range doc.Items {
			ids = append(ids, strings.TrimPrefix(it.GUID, "tag:arxiv.org,1991:"))
			if len(feedbackLinks(t, it)) != 3 {
				t.Errorf("%s: ranked item %s without its feedback links", f, it.GUID)
			}
		}
		return ids
	}
	plain, _ := e.private(tok, feeds.Atom, 10, false)
	var newest []string
	for _, it := range plain.Items {
		newest = append(newest, strings.TrimPrefix(it.GUID, "tag:arxiv.org,1991:"))
	}
	cold := order(feeds.Atom)
	if !slices.Equal(slices.Sorted(slices.Values(cold)), slices.Sorted(slices.Values(newest))) {
		t.Fatalf("the ranked feed holds %q, the feed %q", cold, newest)
	}
	if n := testpaper.CountIn(cold[:5], pulsar); n < 2 {
		t.Fatalf("cold start: %d pulsar papers in the top 5 (%q); the test needs them there first", n, cold)
	}
	for _, id := range marked {
		if _, err := e.rank.Set(e.ctx, uid, id, ranking.Less); err != nil {
			t.Fatal(err)
		}
	}
	if trained, err := e.rank.Train(e.ctx, uid); err != nil || !trained {
		t.Fatalf("Train: %v %v", trained, err)
	}
	for _, f := range feeds.Formats {
		after := order(f)
		if got := after[:5]; testpaper.CountIn(got, lensing) != 5 {
			t.Errorf("%s after 5 pulsar papers marked less: %q (lensing %q)", f, after, lensing)
		}
	}
	// Why each ranks: the model's reasons, in the item's body.
	doc, _ := e.private(tok, feeds.Atom, 10, true)
	if !strings.Contains(body(doc.Items[0]), "Ranked for you: ") {
		t.Errorf("the best item does not say why: %s", body(doc.Items[0]))
	}

	st, _ := e.feeds.Tokens().Lookup(e.ctx, tok)
	v, _ := e.feeds.Validator(e.ctx, st)
	only, _ := follow.ParseTarget("category", "astro-ph.CO")
	if _, err := e.feeds.Private(e.ctx, tok, st, v, feeds.Request{Format: feeds.Atom, Limit: 10, Best: true, Only: &only}); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("a per-follow ranked feed: %v", err)
	}
	e.feeds.Personalize(feeds.Personal{})
	if _, err := e.feeds.Private(e.ctx, tok, st, v, feeds.Request{Format: feeds.Atom, Limit: 10, Best: true}); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("a ranked feed without a ranking: %v", err)
	}
}

// TestRankedLookupReadsTheModelTime: LookupRanked reads, in the token
// lookup's statement, when the user's model was stored: zero before the
// first (which FirstModel trains), then each stored model's time, so the
// ranked feed's ETag moves exactly with a retraining.
func TestRankedLookupReadsTheModelTime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := testpaper.NewWriter(3, "2611", "astro-ph.CO")
	ids := e.store(w.Background(20)...)
	uid, tok := e.user("alice", "category/astro-ph.CO")
	lookup := func() feeds.State {
		t.Helper()
		st, err := e.feeds.Tokens().LookupRanked(e.ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := e.feeds.Tokens().Lookup(e.ctx, tok)
		if plain.Version != st.Version || plain.HighSeq != st.HighSeq || !plain.ModelAt.IsZero() {
			t.Errorf("Lookup %+v, LookupRanked %+v", plain, st)
		}
		return st
	}
	st := lookup()
	if !st.ModelAt.IsZero() {
		t.Fatalf("a user without a model: %v", st.ModelAt)
	}
	// The ranked feed's first request trains a first model before its
	// validator, and reads its time.
	st, err := e.feeds.FirstModel(e.ctx, tok, st)
	if err != nil {
		t.Fatal(err)
	}
	first := lookup().ModelAt
	if first.IsZero() || !st.ModelAt.Equal(first) {
		t.Fatalf("after FirstModel: %v, the lookup %v", st.ModelAt, first)
	}
	if again, err := e.feeds.FirstModel(e.ctx, tok, st); err != nil || !again.ModelAt.Equal(first) {
		t.Errorf("FirstModel with a model: %v %v", again.ModelAt, err)
	}
	e.private(tok, feeds.Atom, 10, true) // ranks with that model, trains none
	if again := lookup().ModelAt; !again.Equal(first) {
		t.Errorf("the ranked render stored a model: %v, was %v", again, first)
	}
	if again := lookup().ModelAt; !again.Equal(first) {
		t.Errorf("the model time moved without a training: %v, %v", first, again)
	}
	if _, err := e.rank.Set(e.ctx, uid, ids[0], ranking.Less); err != nil {
		t.Fatal(err)
	}
	if same := lookup().ModelAt; !same.Equal(first) {
		t.Errorf("feedback alone moved the model time (the model is not retrained yet): %v, %v", first, same)
	}
	if trained, err := e.rank.Train(e.ctx, uid); err != nil || !trained {
		t.Fatalf("Train: %v %v", trained, err)
	}
	if next := lookup().ModelAt; !next.After(first) {
		t.Errorf("a retraining left the model time at %v (was %v)", next, first)
	}
	if _, err := e.feeds.Tokens().LookupRanked(e.ctx, "fft_"+strings.Repeat("A", 43)); !errors.Is(err, feeds.ErrUnknownToken) {
		t.Errorf("an unknown token: %v", err)
	}
}

// BenchmarkPrivateRender measures, over 2,000 stored papers (a corpus for
// the word weights) and a user following a category and a researcher with
// 30 papers of their own: a 50-item private feed's render (plain), the
// ranked feed's (best: the model read, the papers' vectors cached after
// the first run), and the cold start, a first model trained from the
// follows (first-model: one per iteration, for a new user each time).
// Run: go test -run '^$' -bench PrivateRender -benchtime 30x ./feeds/
func BenchmarkPrivateRender(b *testing.B) {
	e := setup(b)
	w := testpaper.NewWriter(11, "2611", "astro-ph.CO")
	e.store(w.Background(2000)...)
	ann := paper.Author{Name: "Ann One", IDs: []string{"host:1"}}
	var own []paper.Paper
	for range 15 {
		own = append(own, w.Paper("lensing", ann, w.Stranger()), w.Paper("pulsar", ann, w.Stranger()))
	}
	e.store(own...)
	_, tok := e.user("alice", "researcher/host:1", "category/astro-ph.CO")
	render := func(best bool) {
		st, err := e.feeds.Tokens().LookupRanked(e.ctx, tok)
		if err != nil {
			b.Fatal(err)
		}
		if st, err = e.feeds.FirstModel(e.ctx, tok, st); err != nil {
			b.Fatal(err)
		}
		v, err := e.feeds.Validator(e.ctx, st)
		if err != nil {
			b.Fatal(err)
		}
		feed, err := e.feeds.Private(e.ctx, tok, st, v, feeds.Request{Format: feeds.Atom, Limit: 50, Best: best})
		if err != nil || len(feed.Items) != 50 {
			b.Fatalf("%d items, %v", len(feed.Items), err)
		}
		if _, err := feeds.Render(feeds.Atom, feed); err != nil {
			b.Fatal(err)
		}
	}
	render(true) // the corpus and the papers' vectors, once per process
	for _, best := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "best"}[best]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				render(best)
			}
		})
	}
	n := 0 // users made: b.Run may run the function again
	b.Run("first-model", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			n++
			uid, tok := e.user(fmt.Sprintf("user%d", n), "researcher/host:1", "category/astro-ph.CO")
			st, err := e.feeds.Tokens().LookupRanked(e.ctx, tok)
			if err != nil || !st.ModelAt.IsZero() {
				b.Fatalf("user %d: %+v %v", uid, st, err)
			}
			b.StartTimer()
			if _, err := e.feeds.FirstModel(e.ctx, tok, st); err != nil {
				b.Fatal(err)
			}
		}
	})
}
