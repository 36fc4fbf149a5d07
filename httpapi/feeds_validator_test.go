package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/feeds"
	"followfeed/follow"
	"followfeed/httpapi"
	"followfeed/internal/testapp"
	"followfeed/match"
	"followfeed/ranking"
	"followfeed/worker"
)

// jobsIdle waits until no match or backfill job is left to run: a
// query's backfill writes key rows after its follow returned.
func jobsIdle(t *testing.T, a *testapp.App, db *database.DB) {
	t.Helper()
	a.Jobs().WaitIdle(t, db.Pool, worker.MatchArgs{}.Kind(), worker.BackfillArgs{}.Kind())
}

// served is one GET of a feed: what a feed reader stores.
type served struct {
	etag, modified string
	body           string
}

// TestETagChangesExactlyWhenTheFeedDoes walks a user's private feeds
// through every kind of operation and, after each, compares "did the
// rendered feed change" with "did the ETag change": they must agree (and
// a conditional GET with the old ETag must answer 304 exactly when
// neither did, with the old Last-Modified too), except where the test
// names a conservative case: the ETag changes though the body does not.
// Those are the cases the validator cannot see without rendering: a
// per-user validator serves every limit and every per-follow feed, so a
// change outside a short feed's window (a new version of an older paper,
// an identity link or a dispute about a paper below it) changes the short
// feed's ETag too (docs/ARCHITECTURE.md, "Conditional GETs").
//
// Two service processes run on one database, each with its own validator
// cache; the second polls only every other step, so its cache holds older
// entries than the first's. After every step both must give the same ETag
// and Last-Modified.
func TestETagChangesExactlyWhenTheFeedDoes(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	env := maps.Clone(a.Env)
	b := testapp.Start(t, env)
	db := openDB(t, a.DatabaseURL)
	svc := testapp.Token(t, "host", "", "papers:write")
	plain, eager := testapp.Token(t, "plain", ""), testapp.Token(t, "eager", "")

	push := func(recs ...string) {
		t.Helper()
		r := c.Do("POST", "/v1/papers", svc, "["+strings.Join(recs, ",")+"]")
		if r.Status != 200 {
			t.Fatalf("push: %d %s", r.Status, r.Body)
		}
	}
	rec := func(id, title, primary string, cats []string, authorIDs ...string) string {
		ids := `[]`
		if len(authorIDs) > 0 {
			ids = `["` + strings.Join(authorIDs, `","`) + `"]`
		}
		return fmt.Sprintf(`{"arxiv_id": %q, "title": %q, "abstract": "About %s.", "authors": [{"name": "Ann Author", "ids": %s}],
			"categories": ["%s"], "primary_category": %q, "published": "2026-01-02"}`, id, title, title, ids, strings.Join(cats, `","`), primary)
	}
	follow := func(tok, kind, id string, opts map[string]any) {
		t.Helper()
		if r := c.Do("PUT", "/v1/me/follows/"+kind+"/"+url.PathEscape(id), tok, opts); r.Status != 201 && r.Status != 200 {
			t.Fatalf("follow %s %s: %d %s", kind, id, r.Status, r.Body)
		}
	}
	no := false
	yes := true
	follow(plain, "category", "cs.LG", nil)
	follow(plain, "category", "cs.AI", map[string]any{"include_cross_lists": no})
	follow(plain, "researcher", "host:77", nil)
	follow(plain, "paper", "2601.00050", nil)
	follow(plain, "query", "graphene", nil)
	follow(eager, "category", "cs.LG", map[string]any{"include_replacements": yes})
	push(rec("2601.00001v1", "Old learning", "cs.LG", []string{"cs.LG"}),
		rec("2601.00050v1", "Strings on branes", "hep-th", []string{"hep-th"}),
		rec("2601.00060v1", "Old combinatorics", "math.CO", []string{"math.CO"}, "s2:900"),
		rec("2601.00002v1", "Newer learning", "cs.LG", []string{"cs.LG"}))
	jobsIdle(t, a, db)

	type feed struct {
		name, tok string
		limit     int
		url       string // on a, then on b
	}
	links := func(tok string) feedLinks {
		var l feedLinks
		c.Do("GET", "/v1/me/feeds", tok, nil).JSON(t, &l)
		return l
	}
	fs := []*feed{{name: "plain", tok: plain}, {name: "plain, limit 2", tok: plain, limit: 2}, {name: "eager", tok: eager}}
	setURL := func(f *feed) {
		f.url = strings.TrimPrefix(links(f.tok).JSON, a.URL)
		if f.limit > 0 {
			f.url += fmt.Sprintf("?limit=%d", f.limit)
		}
	}
	for _, f := range fs {
		setURL(f)
	}
	fetch := func(base string, f *feed, headers ...string) (*http.Response, string) {
		t.Helper()
		resp, body := get(t, base+f.url, headers...)
		return resp, string(body)
	}
	last := map[*feed]served{}
	for _, f := range fs {
		resp, body := fetch(a.URL, f)
		last[f] = served{resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), body}
	}

	steps := []struct {
		name string
		do   func()
		// conservative: feeds whose ETag may change though their body
		// does not (see the test's comment).
		conservative []string
	}{
		{name: "a new paper in a followed category", do: func() {
			push(rec("2601.00003", "Fresh learning", "cs.LG", []string{"cs.LG"}))
		}},
		{name: "a new paper in an unfollowed category", do: func() {
			push(rec("2601.00004", "Algebraic geometry", "math.AG", []string{"math.AG"}))
		}},
		{name: "a cross-list into a category followed with cross-lists", do: func() {
			push(rec("2601.00005", "Statistics for learning", "math.ST", []string{"math.ST", "cs.LG"}))
		}},
		{name: "a cross-list into a category followed without cross-lists", do: func() {
			push(rec("2601.00006", "Statistics for AI", "stat.ML", []string{"stat.ML", "cs.AI"}))
		}},
		{name: "a new version of a paper in every window", do: func() {
			push(rec("2601.00005v2", "Statistics for learning, revised", "math.ST", []string{"math.ST", "cs.LG"}))
		}},
		{name: "a new version of a paper below the short feed's window", do: func() {
			push(rec("2601.00001v2", "Old learning, revised", "cs.LG", []string{"cs.LG"}))
		}, conservative: []string{"plain, limit 2"}},
		{name: "the same record again", do: func() {
			push(rec("2601.00001v2", "Old learning, revised", "cs.LG", []string{"cs.LG"}))
		}},
		{name: "a follow added", do: func() { follow(plain, "category", "math.NA", nil) }},
		{name: "a follow removed", do: func() {
			if r := c.Do("DELETE", "/v1/me/follows/category/math.NA", plain, nil); r.Status != 204 {
				t.Fatalf("unfollow: %d %s", r.Status, r.Body)
			}
		}},
		{name: "an identity link that makes an old paper match", do: func() {
			r := c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:77", "s2:900"], "name": "Ann Author"}]`)
			if r.Status != 200 {
				t.Fatalf("link: %d %s", r.Status, r.Body)
			}
		}, conservative: []string{"plain, limit 2"}},
		{name: "a dispute", do: func() {
			if r := c.Do("POST", "/v1/me/papers/2601.00060/not-this-person", plain, `{"id": "host:77"}`); r.Status != 204 {
				t.Fatalf("not this person: %d %s", r.Status, r.Body)
			}
		}, conservative: []string{"plain, limit 2"}},
		{name: "a query's match", do: func() {
			push(rec("2601.00007", "Graphene detectors", "hep-ex", []string{"hep-ex"}))
		}},
		{name: "a followed paper's event", do: func() {
			push(rec("2601.00050v2", "Strings on branes", "hep-th", []string{"hep-th"}))
		}},
		{name: "another user's follow", do: func() { follow(eager, "category", "math.AG", nil) }},
		// The items' feedback links carry the link epoch: revoking the
		// links changes them, and the ETag with them; feedback itself
		// changes nothing of a feed in newest-first order.
		{name: "the email links revoked", do: func() {
			if r := c.Do("POST", "/v1/me/email-links/revoke", plain, nil); r.Status != 204 {
				t.Fatalf("revoke: %d %s", r.Status, r.Body)
			}
		}},
		{name: "feedback on a paper", do: func() {
			if r := c.Do("PUT", "/v1/me/papers/2601.00003/feedback", plain, `{"value": "less"}`); r.Status != 200 {
				t.Fatalf("feedback: %d %s", r.Status, r.Body)
			}
		}},
		{name: "nothing", do: func() {}},
		{name: "a token rotation", do: func() {
			if r := c.Do("POST", "/v1/me/feed-token", plain, nil); r.Status != 200 {
				t.Fatalf("rotate: %d %s", r.Status, r.Body)
			}
			old := fs[0].url
			for _, f := range fs[:2] {
				setURL(f)
			}
			if resp, _ := get(t, a.URL+old); resp.StatusCode != 404 {
				t.Errorf("the rotated token's feed: %d, want 404", resp.StatusCode)
			}
		}},
	}
	for i, st := range steps {
		// Whole seconds apart: Last-Modified has a resolution of one.
		time.Sleep(1100 * time.Millisecond)
		st.do()
		jobsIdle(t, a, db)
		for _, f := range fs {
			resp, body := fetch(a.URL, f)
			now := served{resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), body}
			if resp.StatusCode != 200 || now.etag == "" || now.modified == "" {
				t.Fatalf("%s: %s: %d, ETag %q, Last-Modified %q", st.name, f.name, resp.StatusCode, now.etag, now.modified)
			}
			prev := last[f]
			bodyChanged, etagChanged := now.body != prev.body, now.etag != prev.etag
			conservative := slices.Contains(st.conservative, f.name)
			switch {
			case bodyChanged && !etagChanged:
				t.Errorf("%s: %s: the feed changed, its ETag %s did not", st.name, f.name, now.etag)
			case etagChanged && !bodyChanged && !conservative:
				t.Errorf("%s: %s: the ETag changed (%s → %s), the feed did not", st.name, f.name, prev.etag, now.etag)
			case conservative && !etagChanged:
				t.Errorf("%s: %s: named conservative, but the ETag did not change: drop the exception", st.name, f.name)
			}
			// Last-Modified: later exactly when the ETag changed, never
			// in the future.
			lm, err := http.ParseTime(now.modified)
			prevLM, _ := http.ParseTime(prev.modified)
			switch {
			case err != nil || lm.After(time.Now()):
				t.Errorf("%s: %s: Last-Modified %q is not a time up to now", st.name, f.name, now.modified)
			case etagChanged && !lm.After(prevLM):
				t.Errorf("%s: %s: the ETag changed, Last-Modified stayed %s (was %s)", st.name, f.name, now.modified, prev.modified)
			case !etagChanged && !lm.Equal(prevLM):
				t.Errorf("%s: %s: Last-Modified moved from %s to %s, the ETag did not", st.name, f.name, prev.modified, now.modified)
			}
			// The validators the user holds.
			if st.name != "a token rotation" || f.name == "eager" {
				for _, hd := range [][2]string{{"If-None-Match", prev.etag}, {"If-Modified-Since", prev.modified}} {
					resp, _ := fetch(a.URL, f, hd[0], hd[1])
					if want := map[bool]int{true: 200, false: 304}[etagChanged]; resp.StatusCode != want {
						t.Errorf("%s: %s: %s from before: %d, want %d", st.name, f.name, hd[0], resp.StatusCode, want)
					}
				}
			}
			// The second process, every other step (its cache older).
			if i%2 == 1 || i == len(steps)-1 {
				resp, _ := fetch(b.URL, f, "If-None-Match", now.etag)
				if resp.StatusCode != 304 || resp.Header.Get("ETag") != now.etag || resp.Header.Get("Last-Modified") != now.modified {
					t.Errorf("%s: %s: the second process answers %d with ETag %s, Last-Modified %s; the first %s, %s",
						st.name, f.name, resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), now.etag, now.modified)
				}
			}
			last[f] = now
		}
	}
}

// TestWarmConditionalGetIsOneStatement serves private feeds from the real
// feed handler over a pool that records every statement: with the
// validator cached, a conditional GET sends exactly one statement (the
// token lookup: the token_hash index and match_state's row, as EXPLAIN
// shows), and reads no follow or key row; after a new batch of keys the
// first one computes the validator again (one more statement), the next is
// one statement again. Two services (processes) over the database give
// the same ETag whatever their caches hold.
func TestWarmConditionalGetIsOneStatement(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	reader := testapp.Token(t, "reader", "")
	svc := testapp.Token(t, "host", "", "papers:write")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", reader, nil)
	pushOne := func(id string) {
		t.Helper()
		r := c.Do("POST", "/v1/papers", svc, fmt.Sprintf(`[{"arxiv_id": %q, "title": "Paper %s", "authors": "Ann Author",
			"categories": ["cs.LG"], "primary_category": "cs.LG", "published": "2026-01-02"}]`, id, id))
		if r.Status != 200 {
			t.Fatalf("push: %d %s", r.Status, r.Body)
		}
	}
	pushOne("2601.00001")
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	path := strings.TrimPrefix(links.Atom, a.URL)

	h1, tr1 := tracedFeeds(t, a, 0)
	h2, _ := tracedFeeds(t, a, 0)
	get := func(h http.Handler, etag string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first := get(h1, "")
	etag := first.Header().Get("ETag")
	if first.Code != 200 || etag == "" {
		t.Fatalf("first GET: %d %s", first.Code, first.Body)
	}
	tr1.take()
	for range 5 {
		if r := get(h1, etag); r.Code != 304 {
			t.Fatalf("conditional GET: %d", r.Code)
		}
	}
	sqls := tr1.take()
	if len(sqls) != 5 {
		t.Fatalf("5 warm conditional GETs sent %d statements, want 5:\n%s", len(sqls), strings.Join(sqls, "\n---\n"))
	}
	for _, q := range sqls {
		if strings.Contains(q, "paper_keys") || strings.Contains(q, "follows") || !strings.Contains(q, "token_hash") {
			t.Fatalf("a warm conditional GET sent more than the token lookup:\n%s", q)
		}
	}
	// The lookup's plan: an index probe of user_feeds by token_hash and
	// match_state's one row, nothing else.
	joined := lookupPlan(t, a, sqls[0])
	if !strings.Contains(joined, "Index Scan using user_feeds_token_hash_key") || strings.Count(joined, "Scan") != 2 {
		t.Errorf("the token lookup's plan is not one index probe and match_state's row:\n%s", joined)
	}

	// The other process, cold: the same validator.
	if r := get(h2, etag); r.Code != 304 || r.Header().Get("ETag") != etag {
		t.Errorf("second service: %d with ETag %s, want 304 with %s", r.Code, r.Header().Get("ETag"), etag)
	}

	// A batch elsewhere moves the high seq: the first conditional GET
	// computes the validator again (unchanged: nothing the user follows),
	// the next ones are one statement each.
	r := c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2601.00009", "title": "Elsewhere", "authors": "Ann Author",
		"categories": ["math.AG"], "primary_category": "math.AG", "published": "2026-01-02"}]`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	for i := range 3 {
		if r := get(h1, etag); r.Code != 304 {
			t.Fatalf("conditional GET after a batch elsewhere: %d", r.Code)
		}
		want := 1
		if i == 0 {
			want = 2
		}
		if got := tr1.take(); len(got) != want {
			t.Errorf("conditional GET %d after the batch: %d statements, want %d:\n%s", i+1, len(got), want, strings.Join(got, "\n---\n"))
		}
	}
	// A batch the user follows: a new ETag, the same in both services.
	pushOne("2601.00002")
	r1, r2 := get(h1, etag), get(h2, etag)
	if r1.Code != 200 || r2.Code != 200 || r1.Header().Get("ETag") == etag || r1.Header().Get("ETag") != r2.Header().Get("ETag") {
		t.Errorf("after a new match: %d %s and %d %s (old %s)", r1.Code, r1.Header().Get("ETag"), r2.Code, r2.Header().Get("ETag"), etag)
	}
	if r1.Header().Get("Last-Modified") != r2.Header().Get("Last-Modified") {
		t.Errorf("Last-Modified %s and %s", r1.Header().Get("Last-Modified"), r2.Header().Get("Last-Modified"))
	}
}

// tracedFeeds is the feed routes of a service of their own (a process's
// caches) over a pool of at most maxConns connections (0: pgx's default)
// whose round trips the tracer records.
func tracedFeeds(t *testing.T, a *testapp.App, maxConns int32) (http.Handler, *roundTripTracer) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(a.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := &roundTripTracer{}
	cfg.ConnConfig.Tracer = tr
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := &database.DB{Pool: pool}
	base, _ := url.Parse(a.URL)
	secret := []byte("a test secret of at least thirty-two bytes")
	fsvc := feeds.NewService(db, feeds.NewTokens(db, secret), match.NewService(db), follow.NewService(db), base, nil, secret)
	// Items carry feedback links, as in the service (the link epoch is
	// read in the render's first round trip), and the ranked feed ranks.
	m := match.NewService(db)
	fsvc.Personalize(feeds.Personal{Feedback: account.NewAddresses(db, auth.NewLinkSigner(secret), base, nil),
		Ranking: ranking.New(ranking.Config{DB: db, Matcher: m})})
	mux := http.NewServeMux()
	(&httpapi.Product{Feeds: &httpapi.FeedRoutes{Feeds: fsvc, Misses: httpapi.NewLimiter(0, 0), PerIP: httpapi.NewLimiter(0, 0)}}).Register(mux)
	return mux, tr
}

// roundTripTracer records every round trip a pool's connections make: a
// statement sent alone (BEGIN and COMMIT included) or a batch (its
// statements listed together). The prepare round trip pgx adds before a
// batch whose statements a connection has not prepared yet is not counted,
// so a count is exact on a connection that has served the same request
// before.
type roundTripTracer struct {
	mu    sync.Mutex
	trips []string
}

func (c *roundTripTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add(strings.TrimSpace(d.SQL))
	return ctx
}

func (c *roundTripTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *roundTripTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	sqls := make([]string, 0, d.Batch.Len())
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, strings.TrimSpace(q.SQL))
	}
	c.add(fmt.Sprintf("batch of %d: %s", len(sqls), strings.Join(sqls, "\n  +++ ")))
	return ctx
}

func (c *roundTripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *roundTripTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *roundTripTracer) add(s string) {
	c.mu.Lock()
	c.trips = append(c.trips, s)
	c.mu.Unlock()
}

func (c *roundTripTracer) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.trips
	c.trips = nil
	return out
}

// TestFullRenderRoundTrips serves private feeds (all follows, and one
// follow's) from the real feed handler over a one-connection pool that
// records every round trip: with the validator cached, a full render is
// four: the token lookup, then in the read transaction BEGIN with the
// follows, the link epoch (the items' feedback links) and the selection
// in one batch, the reasons, the papers' details and the user's mutes
// (match/mutes.go) in a second, and COMMIT. On a shared machine each round trip is
// a wait for the server process to be scheduled, so the count must not
// silently grow.
func TestFullRenderRoundTrips(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	reader := testapp.Token(t, "reader", "")
	svc := testapp.Token(t, "host", "", "papers:write")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", reader, nil)
	r := c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2601.00001", "title": "Paper one", "authors": "Ann Author",
		"categories": ["cs.LG"], "primary_category": "cs.LG", "published": "2026-01-02"},
		{"arxiv_id": "2601.00002", "title": "Paper two", "authors": "Ann Author",
		"categories": ["math.AG", "cs.LG"], "primary_category": "math.AG", "published": "2026-01-02"}]`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	jobsIdle(t, a, openDB(t, a.DatabaseURL))
	var links feedLinks
	c.Do("GET", "/v1/me/feeds", reader, nil).JSON(t, &links)
	path := strings.TrimPrefix(links.Atom, a.URL)

	mux, tr := tracedFeeds(t, a, 1)

	for _, p := range []string{path, strings.TrimSuffix(path, ".atom") + "/category/cs.LG.atom"} {
		get := func() *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
			return rec
		}
		// The first render computes the validator and prepares the
		// statements on the connection.
		if first := get(); first.Code != 200 || !strings.Contains(first.Body.String(), "Paper two") {
			t.Fatalf("first GET %s: %d %s", p, first.Code, first.Body)
		}
		tr.take()
		for range 3 {
			if rec := get(); rec.Code != 200 || !strings.Contains(rec.Body.String(), "Paper one") || !strings.Contains(rec.Body.String(), "/feedback/ffl_") {
				t.Fatalf("GET %s: %d %s", p, rec.Code, rec.Body)
			}
			trips := tr.take()
			if len(trips) != 4 {
				t.Fatalf("a full render of %s made %d round trips, want 4:\n%s", p, len(trips), strings.Join(trips, "\n---\n"))
			}
			if !strings.Contains(trips[0], "token_hash") || !strings.HasPrefix(trips[1], "batch of 5: begin") || !strings.Contains(trips[1], "link_epoch") ||
				!strings.HasPrefix(trips[2], "batch of 3:") || !strings.Contains(trips[2], "FROM mutes") || trips[3] != "commit" {
				t.Errorf("a full render of %s made other round trips than expected:\n%s", p, strings.Join(trips, "\n---\n"))
			}
		}
	}
}

// lookupPlan is the plan (EXPLAIN, no costs) of a token lookup statement
// for some token hash, its lines joined.
func lookupPlan(t *testing.T, a *testapp.App, sql string) string {
	t.Helper()
	rows, err := openDB(t, a.DatabaseURL).Pool.Query(context.Background(), "EXPLAIN (COSTS OFF) "+sql, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// TestFeedValidatorsHoldAfterSeqTimesPrune: a user's feed whose newest
// row is older than key_seq_times' retention keeps its ETag across the
// prune (a conditional GET with it is a 304), and its Last-Modified never
// moves later (a conditional GET with the old one is a 304 too); a paper
// for the user after the prune changes both. The rows are aged on purpose
// (every write 60 days back, the feed's last change 90 days back), and
// an unrelated batch after the prune moves the high seq, so the validator
// is computed again, over the pruned table.
func TestFeedValidatorsHoldAfterSeqTimesPrune(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_IP", "0", "RATE_LIMIT_PER_USER", "0")
	db := openDB(t, a.DatabaseURL)
	ctx := context.Background()
	svc := testapp.Token(t, "host", "", "papers:write")
	user := testapp.Token(t, "reader", "")
	push := func(id, cat string) {
		t.Helper()
		rec := fmt.Sprintf(`[{"arxiv_id": %q, "title": "Paper %s", "abstract": "About it.", "authors": [{"name": "Ann Author"}],
			"categories": [%q], "primary_category": %q, "published": "2026-01-02"}]`, id, id, cat, cat)
		if r := c.Do("POST", "/v1/papers", svc, rec); r.Status != 200 {
			t.Fatalf("push: %d %s", r.Status, r.Body)
		}
		jobsIdle(t, a, db)
	}
	if r := c.Do("PUT", "/v1/me/follows/category/cs.LG", user, nil); r.Status != 201 {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	var l feedLinks // the feed's token is made here: a change of the feed row
	c.Do("GET", "/v1/me/feeds", user, nil).JSON(t, &l)
	path := strings.TrimPrefix(l.Atom, a.URL)
	push("2601.00101", "cs.LG")
	push("2601.00102", "math.CO")
	push("2601.00103", "cs.LG") // the user's H
	push("2601.00104", "hep-th")
	for _, q := range []string{
		`UPDATE key_seq_times SET at = at - interval '60 days'`,
		`UPDATE user_feeds SET changed_at = changed_at - interval '90 days'`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	push("2601.00105", "hep-th") // the high seq moves: the validator is read again, aged
	resp, _ := get(t, a.URL+path)
	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	before, err := http.ParseTime(lm)
	if resp.StatusCode != 200 || etag == "" || err != nil {
		t.Fatalf("feed: %d, ETag %q, Last-Modified %q", resp.StatusCode, etag, lm)
	}

	// The service's own hourly prune (run once after its leader is
	// elected) may merge the aged rows first; either way, after this
	// call only the floor row is older than the retention.
	if _, err := catalog.NewStore(&database.DB{Pool: db.Pool}, nil).PruneSeqTimes(ctx); err != nil {
		t.Fatalf("PruneSeqTimes: %v", err)
	}
	var aged int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM key_seq_times WHERE at < now() - $1::interval`,
		catalog.SeqTimesRetention.String()).Scan(&aged); err != nil || aged != 1 {
		t.Fatalf("after the prune, %d rows (%v) older than the retention; want the aged rows merged into one floor", aged, err)
	}
	push("2601.00106", "math.CO") // unrelated: the high seq moves again

	if r, _ := get(t, a.URL+path, "If-None-Match", etag); r.StatusCode != 304 {
		t.Errorf("If-None-Match with the ETag from before the prune: %d, want 304", r.StatusCode)
	}
	if r, _ := get(t, a.URL+path, "If-Modified-Since", lm); r.StatusCode != 304 {
		t.Errorf("If-Modified-Since with the Last-Modified from before the prune: %d, want 304", r.StatusCode)
	}
	r, _ := get(t, a.URL+path)
	after, err := http.ParseTime(r.Header.Get("Last-Modified"))
	if r.Header.Get("ETag") != etag || err != nil || after.After(before) {
		t.Errorf("after the prune: ETag %q, Last-Modified %q; want %q and no later than %q",
			r.Header.Get("ETag"), r.Header.Get("Last-Modified"), etag, lm)
	}

	push("2601.00107", "cs.LG")
	r, _ = get(t, a.URL+path, "If-None-Match", etag)
	if r.StatusCode != 200 {
		t.Errorf("a new paper of cs.LG after the prune: %d, want 200", r.StatusCode)
	}
	if r, _ := get(t, a.URL+path, "If-Modified-Since", lm); r.StatusCode != 200 {
		t.Errorf("a new paper of cs.LG, If-Modified-Since from before: %d, want 200 (%v; before %s)", r.StatusCode, r.Header, lm)
	}
}
