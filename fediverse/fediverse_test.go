package fediverse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/database"
	"followfeed/fediverse"
	"followfeed/follow"
	"followfeed/identity"
	fakefed "followfeed/internal/fake/fediverse"
	"followfeed/internal/testdb"
	"followfeed/match"
	"followfeed/paper"
	"followfeed/worker"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is the fediverse on a fresh database: the real paper store and match
// service with the fediverse's hook, a Service on an injected clock whose
// actor documents a small server serves (so that the peer can fetch keys),
// and a fake fediverse peer. No River client works the jobs: the test calls
// Fanout and DeliverInbox, as the workers would.
type env struct {
	t        *testing.T
	ctx      context.Context
	db       *database.DB
	papers   *catalog.Store
	registry *identity.Registry
	matcher  *match.Service
	svc      *fediverse.Service
	clk      *clock
	peer     *fakefed.Server
	base     string
	// cfg is svc's configuration: another Service made from it is another
	// process over the same database.
	cfg fediverse.Config
}

func setup(t *testing.T, mods ...func(*fediverse.Config)) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), db: testdb.New(t), clk: &clock{t: time.Now()}}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	enq := worker.NewEnqueuer(ins)
	e.papers = catalog.NewStore(e.db, enq)
	follows := follow.NewService(e.db)
	e.registry = identity.NewRegistry(e.db, follows)
	e.papers.ObserveIdentities(e.registry)
	e.matcher = match.NewService(e.db)
	var svc *fediverse.Service
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == fediverse.InstanceActor {
			doc, _ := svc.InstanceDocument(r.Context())
			w.Header().Set("Content-Type", fediverse.ContentTypeActivity)
			_ = json.NewEncoder(w).Encode(doc)
			return
		}
		info, err := svc.ResolveHandle(r.Context(), strings.TrimPrefix(r.URL.Path, fediverse.ActorPrefix))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		doc, _ := svc.ActorDocument(r.Context(), info)
		w.Header().Set("Content-Type", fediverse.ContentTypeActivity)
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	e.base = srv.URL
	base, _ := url.Parse(srv.URL)
	cfg := fediverse.Config{DB: e.db, BaseURL: base, Guard: channels.NewGuard([]string{"127.0.0.1"}), Enqueuer: enq,
		Identities: e.registry, Names: follows, Matcher: e.matcher, HighSeq: e.papers.HighSeq, Now: e.clk.Now,
		SecretKey: []byte("0123456789abcdef0123456789abcdef")}
	for _, m := range mods {
		m(&cfg)
	}
	svc = fediverse.NewService(cfg)
	e.svc, e.cfg = svc, cfg
	e.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
		return svc.MatchHook(ctx, tx, slices.Concat(res.NewKeys, res.ReplacedKeys))
	})
	if e.peer, err = fakefed.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.peer.Close)
	return e
}

// signed turns the peer's signed request into what the inbox handler
// passes to Receive.
func signed(t *testing.T, req *http.Request) fediverse.Signed {
	t.Helper()
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	return fediverse.Signed{Method: req.Method, RequestURI: req.URL.RequestURI(), Host: req.URL.Host, Header: req.Header, Body: body}
}

// receive sends a peer's activity (signed by name) to inbox (an actor's
// handle, "" for the shared inbox).
func (e *env) receive(name, handle string, activity any) error {
	e.t.Helper()
	target := e.base + fediverse.SharedInbox
	if handle != "" {
		target = e.base + fediverse.ActorPrefix + handle + "/inbox"
	}
	req, _, err := e.peer.Signed(name, target, activity)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.svc.Receive(e.ctx, handle, signed(e.t, req))
}

func (e *env) actor(handle string) fediverse.ActorInfo {
	e.t.Helper()
	info, err := e.svc.ResolveHandle(e.ctx, handle)
	if err != nil {
		e.t.Fatal(err)
	}
	return info
}

// follow makes the peer's actor name follow handle's actor.
func (e *env) follow(name, handle string) map[string]any {
	e.t.Helper()
	f := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID(name) + "#follow/" + handle,
		"type": "Follow", "actor": e.peer.ActorID(name), "object": e.actor(handle).ID}
	if err := e.receive(name, handle, f); err != nil {
		e.t.Fatalf("follow: %v", err)
	}
	return f
}

func (e *env) push(ps ...paper.Paper) {
	e.t.Helper()
	res, err := e.papers.Ingest(e.ctx, ps, catalog.SourcePush)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Keys > 0 {
		if _, err := e.matcher.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil); err != nil {
			e.t.Fatal(err)
		}
	}
}

// deliver runs the fan-out and every inbox's delivery job once; it returns
// the delivery errors by inbox.
func (e *env) deliver() map[int64]error {
	e.t.Helper()
	return e.deliverBy(e.svc)
}

// deliverBy is deliver with the jobs run by svc (another process).
func (e *env) deliverBy(svc *fediverse.Service) map[int64]error {
	e.t.Helper()
	if _, err := svc.Fanout(e.ctx, nil); err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.db.Pool.Query(e.ctx, `SELECT id FROM ap_inboxes WHERE queued ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, _ := pgx.CollectRows(rows, pgx.RowTo[int64])
	errs := map[int64]error{}
	for _, id := range ids {
		if err := svc.DeliverInbox(e.ctx, id, nil); err != nil {
			errs[id] = err
		}
	}
	return errs
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func researcherPaper(id string, version int, title string, authorIDs ...string) paper.Paper {
	return paper.Paper{ArxivID: id, Version: version, Title: title, PrimaryCategory: "cs.LG", Categories: []string{"cs.LG", "stat.ML"},
		Authors: []paper.Author{{Name: "Mingzhi Wen", IDs: authorIDs}}, AbsURL: "https://arxiv.org/abs/" + id, PDFURL: "https://arxiv.org/pdf/" + id}
}

func creates(rs []fakefed.Received) []fakefed.Received {
	var out []fakefed.Received
	for _, r := range rs {
		if r.Type() == "Create" {
			out = append(out, r)
		}
	}
	return out
}

func TestHandles(t *testing.T) {
	for _, c := range []struct {
		handle string
		want   follow.Target
	}{
		{"openalex_A5023888391", follow.Target{Kind: follow.Researcher, ID: "openalex:A5023888391"}},
		{"OPENALEX_a5023888391", follow.Target{Kind: follow.Researcher, ID: "openalex:A5023888391"}},
		{"orcid_0000-0002-1825-0097", follow.Target{Kind: follow.Researcher, ID: "orcid:0000-0002-1825-0097"}},
		{"host_1955166", follow.Target{Kind: follow.Researcher, ID: "host:1955166"}},
		{"Host_1955166", follow.Target{Kind: follow.Researcher, ID: "host:1955166"}},
		{"s2_1741101", follow.Target{Kind: follow.Researcher, ID: "s2:1741101"}},
		{"dblp_46.5782", follow.Target{Kind: follow.Researcher, ID: "dblp:46/5782"}},
		{"dblp_w.MingzhiWen", follow.Target{Kind: follow.Researcher, ID: "dblp:w/MingzhiWen"}},
		{"cs.LG", follow.Target{Kind: follow.Category, ID: "cs.LG"}},
		{"cs.lg", follow.Target{Kind: follow.Category, ID: "cs.LG"}},
		{"cs", follow.Target{Kind: follow.Category, ID: "cs"}},
		{"ror_03dbr7087", follow.Target{Kind: follow.Institution, ID: "ror:03dbr7087"}},
		{"ROR_03DBR7087", follow.Target{Kind: follow.Institution, ID: "ror:03dbr7087"}},
		{"openalex_I136199984", follow.Target{Kind: follow.Institution, ID: "openalex:I136199984"}},
	} {
		got, err := fediverse.ParseHandle(c.handle)
		if err != nil || got != c.want {
			t.Errorf("ParseHandle(%q) = %v, %v; want %v", c.handle, got, err, c.want)
			continue
		}
		if back, err := fediverse.ParseHandle(fediverse.Handle(got)); err != nil || back != got {
			t.Errorf("Handle(%v) = %q does not parse back: %v %v", got, fediverse.Handle(got), back, err)
		}
	}
	for _, bad := range []string{"", "nope_1", "orcid_", "cs.NOPE", "query_x", "paper_2202.02326", "a b", strings.Repeat("x", 300)} {
		if _, err := fediverse.ParseHandle(bad); apperr.CodeOf(err) != apperr.NotFound {
			t.Errorf("ParseHandle(%q): %v, want a not-found", bad, err)
		}
	}
}

// TestOneActorPerIdentity: every id of a person resolves to one actor, the
// canonical id's until the actor has followers, after which its URL stays
// even when the registry's canonical id changes.
func TestOneActorPerIdentity(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := e.registry.Put(e.ctx, []identity.Record{{Kind: follow.Researcher, IDs: []string{"host:1955166", "openalex:A5023888391"}, Name: "Mingzhi Wen"}}); err != nil {
		t.Fatal(err)
	}
	if a, b := e.actor("host_1955166"), e.actor("openalex_a5023888391"); a.ID != b.ID || a.Handle != "openalex_A5023888391" || a.Name != "Mingzhi Wen" {
		t.Fatalf("actors %+v and %+v", a, b)
	}
	e.follow("alice", "host_1955166")
	// A Follow naming another id's URL of the person is a Follow of the
	// one actor.
	alias := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("bob") + "#f",
		"type": "Follow", "actor": e.peer.ActorID("bob"), "object": e.base + fediverse.ActorPrefix + "host_1955166"}
	if err := e.receive("bob", "host_1955166", alias); err != nil {
		t.Fatalf("a Follow of an alias: %v", err)
	}
	if n := e.count(`SELECT count(DISTINCT actor_key) FROM ap_followers`); n != 1 {
		t.Errorf("the follows went to %d actors, want one", n)
	}
	// The ORCID iD arrives: it would now be canonical, but the actor keeps
	// its URL (its followers know it by that).
	if _, err := e.registry.Put(e.ctx, []identity.Record{{Kind: follow.Researcher, IDs: []string{"host:1955166", "orcid:0000-0002-1825-0097"}}}); err != nil {
		t.Fatal(err)
	}
	if a := e.actor("orcid_0000-0002-1825-0097"); a.Handle != "openalex_A5023888391" {
		t.Errorf("after the ORCID link the actor is %q; its URL must not change", a.Handle)
	}
	jrd, err := e.svc.WebFinger(e.ctx, "acct:ORCID_0000-0002-1825-0097@"+e.svc.Host())
	if err != nil || jrd.Subject != "acct:openalex_A5023888391@"+e.svc.Host() {
		t.Errorf("webfinger: %+v %v", jrd, err)
	}
	if _, err := e.svc.WebFinger(e.ctx, "acct:cs.LG@elsewhere.example"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("another host: %v", err)
	}
	if _, err := e.svc.WebFinger(e.ctx, "cs.LG"); apperr.CodeOf(err) != apperr.BadRequest {
		t.Errorf("no host: %v", err)
	}
}

// TestInboxRefusesHostileRequests: every incoming request is verified; a
// bad one is refused with the right status and stores nothing.
func TestInboxRefusesHostileRequests(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *fediverse.Config) { c.Blocked = []string{"blocked.example"} })
	t.Log("hostile: unsigned, badly signed, stale, tampered, replayed, malformed, misaddressed, oversized and blocked activities are refused and store nothing")
	actor := e.actor("cs.LG")
	follow := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("alice") + "#f1",
		"type": "Follow", "actor": e.peer.ActorID("alice"), "object": actor.ID}
	target := e.base + fediverse.ActorPrefix + "cs.LG/inbox"
	fresh := func() *http.Request {
		req, _, err := e.peer.Signed("alice", target, follow)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	code := func(err error) apperr.Code { return apperr.CodeOf(err) }
	check := func(what string, err error, want apperr.Code) {
		t.Helper()
		if code(err) != want {
			t.Errorf("%s: %v (code %q), want %q", what, err, code(err), want)
		}
	}
	// Unsigned.
	req := fresh()
	req.Header.Del("Signature")
	check("unsigned", e.svc.Receive(e.ctx, "cs.LG", signed(t, req)), apperr.Unauthorized)
	// The body changed after signing: the Digest no longer matches.
	req = fresh()
	s := signed(t, req)
	s.Body = bytes.Replace(s.Body, []byte("Follow"), []byte("Flolow"), 1)
	check("tampered body", e.svc.Receive(e.ctx, "cs.LG", s), apperr.Unauthorized)
	// Digest recomputed but not re-signed: the signature fails.
	other := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("alice") + "#f2",
		"type": "Follow", "actor": e.peer.ActorID("alice"), "object": actor.ID}
	req2, body2, _ := e.peer.Signed("alice", target, other)
	s = signed(t, fresh())
	s.Body, s.Header = body2, s.Header.Clone()
	s.Header.Set("Digest", req2.Header.Get("Digest"))
	check("signature over another digest", e.svc.Receive(e.ctx, "cs.LG", s), apperr.Unauthorized)
	// A Date 13 hours old, signed as such.
	req = fresh()
	req.Header.Set("Date", time.Now().Add(-13*time.Hour).UTC().Format(http.TimeFormat))
	e.peer.SignRequest("alice", req)
	check("stale date", e.svc.Receive(e.ctx, "cs.LG", signed(t, req)), apperr.Unauthorized)
	// Signed by another actor than the activity's.
	req, _, _ = e.peer.Signed("mallory", target, follow)
	check("signer is not the actor", e.svc.Receive(e.ctx, "cs.LG", signed(t, req)), apperr.Unauthorized)
	// Malformed JSON-LD, signed.
	for _, body := range []string{`{"type": "Follow"`, `[1, 2]`, `{"type": "Follow", "actor": "` + e.peer.ActorID("alice") + `"}`,
		`{"@context": "https://www.w3.org/ns/activitystreams", "type": "Follow", "actor": "javascript:alert(1)"}`} {
		r, _ := http.NewRequest("POST", target, strings.NewReader(body))
		sg := signed(t, r)
		check("malformed "+body, e.svc.Receive(e.ctx, "cs.LG", sg), apperr.BadRequest)
	}
	// A Follow of another actor sent to this actor's inbox.
	misaddressed := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("alice") + "#f3",
		"type": "Follow", "actor": e.peer.ActorID("alice"), "object": e.actor("cs.AI").ID}
	req, _, _ = e.peer.Signed("alice", target, misaddressed)
	check("follow of another actor", e.svc.Receive(e.ctx, "cs.LG", signed(t, req)), apperr.BadRequest)
	// Oversized.
	big := signed(t, fresh())
	big.Body = append(big.Body, bytes.Repeat([]byte(" "), fediverse.MaxActivityBytes)...)
	check("oversized", e.svc.Receive(e.ctx, "cs.LG", big), apperr.TooLarge)
	// A blocked domain's Follow.
	blocked := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": "https://x.blocked.example/f",
		"type": "Follow", "actor": "https://x.blocked.example/users/spam", "object": actor.ID}
	req, _, _ = e.peer.Signed("alice", target, blocked)
	check("blocked domain", e.svc.Receive(e.ctx, "cs.LG", signed(t, req)), apperr.Forbidden)
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 0 {
		t.Fatalf("%d followers stored by refused requests", n)
	}
	// The genuine Follow passes once; the same signed request again is a
	// replay.
	req = fresh()
	good := signed(t, req)
	if err := e.svc.Receive(e.ctx, "cs.LG", good); err != nil {
		t.Fatalf("genuine follow: %v", err)
	}
	check("replay", e.svc.Receive(e.ctx, "cs.LG", good), apperr.Unauthorized)
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 1 {
		t.Errorf("%d followers, want 1", n)
	}
	// Anything else is accepted and ignored.
	like := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("alice") + "#like",
		"type": "Like", "actor": e.peer.ActorID("alice"), "object": "https://example.org/x"}
	if err := e.receive("alice", "", like); err != nil {
		t.Errorf("a Like: %v", err)
	}
}

// TestGuardKeepsInboxesOffInternalAddresses: without the development
// switch (an allow-list), a keyId or inbox at an internal address is never
// fetched or posted to.
func TestGuardKeepsInboxesOffInternalAddresses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	t.Log("hostile: a keyId or inbox at an internal address is never fetched or posted to")
	strict := fediverse.NewService(fediverse.Config{DB: e.db, BaseURL: mustURL(e.base), Guard: channels.NewGuard(nil),
		Enqueuer: worker.NewEnqueuer(mustInserter(t, e.db)), Identities: e.registry, Names: follow.NewService(e.db),
		Matcher: e.matcher, HighSeq: e.papers.HighSeq})
	f := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("alice") + "#f",
		"type": "Follow", "actor": e.peer.ActorID("alice"), "object": e.actor("cs.LG").ID}
	req, _, _ := e.peer.Signed("alice", e.base+fediverse.SharedInbox, f)
	before := e.peer.Requests()
	if err := strict.Receive(e.ctx, "", signed(t, req)); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Errorf("a keyId on 127.0.0.1: %v, want 401", err)
	}
	if e.peer.Requests() != before {
		t.Error("the key at an internal address was fetched")
	}
	// A follower whose inbox is internal (stored while the switch was on):
	// the strict service never posts to it.
	e.follow("alice", "cs.LG")
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(e.ctx, `UPDATE ap_inboxes SET queued = false`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var inbox int64
	e.db.Pool.QueryRow(e.ctx, `SELECT personal_id FROM ap_followers`).Scan(&inbox)
	attempts := e.peer.Attempts()
	if err := strict.DeliverInbox(e.ctx, inbox, nil); err != nil {
		t.Fatal(err)
	}
	if e.peer.Attempts() != attempts {
		t.Error("an inbox at an internal address was posted to")
	}
	if n := e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'failed' AND last_response LIKE '%internal%'`); n != 1 {
		t.Errorf("%d deliveries failed as internal, want the Accept", n)
	}
}

// TestFollowWithAnInternalInboxIsRefused: the follower's key is served
// from an address the guard allows (the fake on 127.0.0.1, on the test's
// allow-list, the development switch), so the Follow's signature verifies;
// but its actor document names an inbox or a shared inbox at an internal
// address, or over plain http: the Follow is refused with a 422 naming
// the field, and nothing is stored or queued.
func TestFollowWithAnInternalInboxIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	t.Log("hostile: a follower whose inbox is at an internal address is refused (422) and never posted to")
	for _, c := range []struct {
		name, inbox, shared, field, why string
	}{
		{"eve", "https://10.0.0.7/users/eve/inbox", "", "inbox", "internal address"},
		{"frank", "", "https://169.254.169.254/inbox", "sharedInbox", "internal address"},
		{"grace", "https://[::1]:8443/users/grace/inbox", "", "inbox", "internal address"},
		{"heidi", "http://public.example/users/heidi/inbox", "", "inbox", "must use https"},
	} {
		e.peer.SetInboxes(c.name, c.inbox, c.shared)
		f := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID(c.name) + "#f",
			"type": "Follow", "actor": e.peer.ActorID(c.name), "object": e.actor("cs.LG").ID}
		before := e.peer.Requests()
		err := e.receive(c.name, "cs.LG", f)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.Invalid || ae.Field != c.field || !strings.Contains(ae.Message, c.why) {
			t.Errorf("%s's Follow (inbox %q, shared inbox %q): %v, want a 422 of %s saying %s", c.name, c.inbox, c.shared, err, c.field, c.why)
		}
		if e.peer.Requests() == before {
			t.Errorf("%s: the key was not fetched: the Follow was refused before the inbox check", c.name)
		}
	}
	for _, table := range []string{"ap_followers", "ap_inboxes", "ap_deliveries", "ap_actors"} {
		if n := e.count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("%d rows in %s after refused Follows", n, table)
		}
	}
	// A follower with its inboxes on the fake (allowed) is followed.
	e.follow("ivan", "cs.LG")
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 1 {
		t.Errorf("%d followers after a Follow with good inboxes", n)
	}
}

func mustURL(s string) *url.URL { u, _ := url.Parse(s); return u }

func mustInserter(t *testing.T, db *database.DB) *river.Client[pgx.Tx] {
	t.Helper()
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

// TestHookWaitsForAFanoutHoldingTheActor: a batch's hook that comes while
// the fan-out holds a due actor (about to clear due_at with a window that
// ends before this batch) waits for it and marks the actor due again, so
// the batch's papers are not left behind (the soak found them waiting for
// the next batch).
func TestHookWaitsForAFanoutHoldingTheActor(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *fediverse.Config) { c.CategoryNotes = true })
	e.follow("alice", "cs.LG")
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE ap_actors SET due_at = now()`); err != nil {
		t.Fatal(err)
	}
	fanout, err := e.db.Pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fanout.Rollback(e.ctx)
	if _, err := fanout.Exec(e.ctx, `SELECT key FROM ap_actors WHERE key = 'category:cs.LG' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- e.db.InTx(e.ctx, func(tx pgx.Tx) error { return e.svc.MatchHook(e.ctx, tx, []string{"category:cs.LG"}) })
	}()
	select {
	case err := <-done:
		t.Fatalf("the hook returned (%v) while the fan-out held the actor: it skipped it", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := fanout.Exec(e.ctx, `UPDATE ap_actors SET due_at = NULL, watermark = watermark + 1 WHERE key = 'category:cs.LG'`); err != nil {
		t.Fatal(err)
	}
	if err := fanout.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ap_actors WHERE key = 'category:cs.LG' AND due_at IS NOT NULL`); n != 1 {
		t.Error("after the fan-out cleared it, the batch's hook did not mark the actor due again")
	}
}

// TestInboxAcceptsHS2019: a draft-cavage signature naming algorithm
// "hs2019" (the algorithm is the key's own: RSASSA-PKCS1-v1_5 with SHA-256
// for an RSA key, as Mastodon verifies it and go-fed/httpsig-based servers
// such as GoToSocial send it) is accepted: over a Date, and over (created)
// and (expires) without a Date header. The follow is stored and its Accept
// reaches the peer; a (created) older than MaxClockSkew is refused as a
// stale Date is, and stores nothing.
func TestInboxAcceptsHS2019(t *testing.T) {
	t.Parallel()
	e := setup(t)
	actor := e.actor("cs.LG")
	target := e.base + fediverse.ActorPrefix + "cs.LG/inbox"
	followOf := func(name string) map[string]any {
		return map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID(name) + "#follow",
			"type": "Follow", "actor": e.peer.ActorID(name), "object": actor.ID}
	}
	for _, c := range []struct {
		name    string
		signing fakefed.Signing
		covers  string
	}{
		{"alice", fakefed.HS2019, `headers="(request-target) host date digest content-type"`},
		{"bob", fakefed.HS2019Created, `headers="(request-target) host (created) (expires) digest content-type"`},
	} {
		e.peer.SignWith(c.signing)
		req, _, err := e.peer.Signed(c.name, target, followOf(c.name))
		if err != nil {
			t.Fatal(err)
		}
		if sig := req.Header.Get("Signature"); !strings.Contains(sig, `algorithm="hs2019"`) || !strings.Contains(sig, c.covers) {
			t.Fatalf("the peer signed %q", sig)
		}
		if err := e.svc.Receive(e.ctx, "cs.LG", signed(t, req)); err != nil {
			t.Errorf("%s's Follow signed with hs2019 (%s): %v", c.name, c.covers, err)
		}
	}
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 2 {
		t.Fatalf("%d followers, want both", n)
	}
	if errs := e.deliver(); len(errs) > 0 {
		t.Fatal(errs)
	}
	accepted := map[string]bool{}
	for _, r := range e.peer.Received() {
		if r.Type() == "Accept" {
			accepted[r.Inbox] = true
		}
	}
	if !accepted["/users/alice/inbox"] || !accepted["/users/bob/inbox"] {
		t.Errorf("Accepts reached %v, want alice's and bob's inboxes", accepted)
	}

	// Thirteen hours on (followfeed's clock), a (created) of now-13h is
	// stale.
	req, _, _ := e.peer.Signed("carol", target, followOf("carol"))
	e.clk.Add(fediverse.MaxClockSkew + time.Hour)
	if err := e.svc.Receive(e.ctx, "cs.LG", signed(t, req)); apperr.CodeOf(err) != apperr.Unauthorized || !strings.Contains(err.Error(), "12 hours") {
		t.Errorf("a (created) 13 hours old: %v, want a 401 saying it is stale", err)
	}
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 2 {
		t.Errorf("%d followers after the stale Follow, want still 2", n)
	}
}
