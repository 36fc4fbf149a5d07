package httpapi_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"followfeed/internal/fake/fediverse"
	"followfeed/internal/testapp"
)

// startFediverse boots followfeed with ActivityPub on and a fake fediverse
// server beside it (reachable: CHANNEL_ALLOW_HOSTS is the development
// switch of the guard).
func startFediverse(t *testing.T, overrides ...string) (*testapp.App, *testapp.Client, *fediverse.Server) {
	t.Helper()
	peer, err := fediverse.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Close)
	a, c := start(t, append([]string{"ACTIVITYPUB", "on", "CHANNEL_ALLOW_HOSTS", "127.0.0.1", "JOB_RETRY_MAX", "1s"}, overrides...)...)
	return a, c, peer
}

// apGet fetches an ActivityPub document (not through testapp's client:
// these routes are the fediverse's protocol, not the host's API, and are
// not in openapi.json).
func apGet(t *testing.T, rawURL, accept string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", rawURL, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	return resp.StatusCode, resp.Header, doc
}

func countType(rs []fediverse.Received, typ, inbox string) int {
	n := 0
	for _, r := range rs {
		if r.Type() == typ && (inbox == "" || r.Inbox == inbox) {
			n++
		}
	}
	return n
}

// activityPubIdle waits until no fan-out or delivery job is left to run.
func activityPubIdle(t *testing.T, a *testapp.App) {
	t.Helper()
	db := openDB(t, a.DatabaseURL)
	matchIdle(t, db)
	waitFor(t, "the ActivityPub jobs", func() bool {
		var n int
		err := db.Pool.QueryRow(context.Background(), `
			SELECT (SELECT count(*) FROM river.river_job WHERE kind LIKE 'activitypub_%'
			          AND kind <> 'activitypub_summary' AND state NOT IN ('completed', 'discarded', 'cancelled'))
			     + (SELECT count(*) FROM ap_actors WHERE due_at IS NOT NULL)
			     + (SELECT count(*) FROM ap_deliveries WHERE state = 'pending')`).Scan(&n)
		return err == nil && n == 0
	})
}

// TestFediverseExchange drives the whole exchange against an independent
// peer: WebFinger under every id of a researcher → the actor document →
// a Follow signed as Mastodon signs it → a signed Accept → a pushed paper
// arrives once as a Create at the peer's shared inbox, its signature and
// digest verified with crypto/rsa by the peer → Undo stops the next one.
func TestFediverseExchange(t *testing.T) {
	t.Parallel()
	a, c, peer := startFediverse(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	if r := c.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "openalex:A5023888391", "orcid:0000-0002-1825-0097"], "name": "Mingzhi Wen"}]`); r.Status != 200 {
		t.Fatalf("registry: %d %s", r.Status, r.Body)
	}
	host := strings.TrimPrefix(a.URL, "http://")

	// WebFinger: every id of the person, in any case, is one actor, whose
	// handle is its canonical id's (the ORCID iD).
	var actorID string
	for _, h := range []string{"openalex_A5023888391", "OPENALEX_a5023888391", "orcid_0000-0002-1825-0097", "host_1955166"} {
		st, hd, jrd := apGet(t, a.URL+"/.well-known/webfinger?resource="+url.QueryEscape("acct:"+h+"@"+host), "")
		if st != 200 || !strings.HasPrefix(hd.Get("Content-Type"), "application/jrd+json") {
			t.Fatalf("webfinger %s: %d %s %v", h, st, hd.Get("Content-Type"), jrd)
		}
		if jrd["subject"] != "acct:orcid_0000-0002-1825-0097@"+host {
			t.Errorf("webfinger %s: subject %v", h, jrd["subject"])
		}
		links, _ := jrd["links"].([]any)
		self := ""
		for _, l := range links {
			m := l.(map[string]any)
			if m["rel"] == "self" && m["type"] == "application/activity+json" {
				self = m["href"].(string)
			}
		}
		if actorID == "" {
			actorID = self
		}
		if self == "" || self != actorID {
			t.Errorf("webfinger %s: self %q, want the one actor %q", h, self, actorID)
		}
	}
	if st, _, _ := apGet(t, a.URL+"/.well-known/webfinger?resource="+url.QueryEscape("acct:cs.LG@elsewhere.example"), ""); st != 404 {
		t.Errorf("another host's handle: %d", st)
	}

	// The actor, under both media types.
	for _, accept := range []string{"application/activity+json", `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`} {
		st, hd, doc := apGet(t, actorID, accept)
		if st != 200 || !strings.Contains(hd.Get("Content-Type"), strings.Split(accept, ";")[0]) {
			t.Fatalf("actor (%s): %d %s", accept, st, hd.Get("Content-Type"))
		}
		pk, _ := doc["publicKey"].(map[string]any)
		if doc["type"] != "Service" || doc["preferredUsername"] != "orcid_0000-0002-1825-0097" || doc["name"] != "Mingzhi Wen" ||
			doc["manuallyApprovesFollowers"] != false || doc["discoverable"] != true || doc["inbox"] != actorID+"/inbox" ||
			pk["owner"] != actorID || !strings.Contains(pk["publicKeyPem"].(string), "BEGIN PUBLIC KEY") || doc["icon"] == nil {
			t.Errorf("actor document: %v", doc)
		}
	}
	// The same actor's page for people carries the alternate link.
	resp, err := http.Get(actorID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := html.UnescapeString(string(raw)) // html/template writes + as &#43;
	if !strings.Contains(page, `<link rel="alternate" type="application/activity+json" href="`+actorID+`">`) ||
		!strings.Contains(page, "@orcid_0000-0002-1825-0097@"+host) {
		t.Errorf("actor page: %s", page)
	}

	// NodeInfo.
	if st, _, links := apGet(t, a.URL+"/.well-known/nodeinfo", ""); st != 200 || links["links"] == nil {
		t.Errorf("nodeinfo links: %d %v", st, links)
	}
	if st, _, ni := apGet(t, a.URL+"/nodeinfo/2.1", ""); st != 200 || ni["version"] != "2.1" {
		t.Errorf("nodeinfo: %d %v", st, ni)
	}

	// A signed Follow (under another id of the person: its alias URL).
	follow := map[string]any{
		"@context": "https://www.w3.org/ns/activitystreams",
		"id":       peer.ActorID("alice") + "#follows/1", "type": "Follow",
		"actor": peer.ActorID("alice"), "object": actorID,
	}
	if st, body, err := peer.Send("alice", actorID+"/inbox", follow); err != nil || st != 202 {
		t.Fatalf("follow: %d %s %v", st, body, err)
	}
	if err := peer.Wait(20*time.Second, func(rs []fediverse.Received) bool { return countType(rs, "Accept", "/users/alice/inbox") == 1 }); err != nil {
		t.Fatal(err)
	}
	acc := peer.Received()[0]
	if acc.KeyID != actorID+"#main-key" || acc.Activity["actor"] != actorID || acc.Object()["id"] != follow["id"] {
		t.Errorf("accept: %s", acc.Body)
	}
	if st, _, coll := apGet(t, actorID+"/followers", "application/activity+json"); st != 200 || coll["totalItems"] != 1.0 {
		t.Errorf("followers: %d %v", st, coll)
	}

	// A pushed paper by the person (under its OpenAlex id) arrives once,
	// as a Create at the shared inbox.
	paper := `{"arxiv_id": "2202.02326v1", "title": "Towards Training Reproducible <Deep> Learning Models", "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}, {"name": "Ann Other"}], "categories": ["cs.LG", "stat.ML"], "primary_category": "cs.LG"}` + "\n"
	if r := c.Do("POST", "/v1/papers", svc, paper, "Content-Type", "application/x-ndjson"); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	if err := peer.Wait(30*time.Second, func(rs []fediverse.Received) bool { return countType(rs, "Create", "/inbox") >= 1 }); err != nil {
		t.Fatal(err)
	}
	activityPubIdle(t, a)
	rs := peer.Received()
	if n := countType(rs, "Create", ""); n != 1 {
		t.Fatalf("%d Creates, want exactly 1", n)
	}
	var create fediverse.Received
	for _, r := range rs {
		if r.Type() == "Create" {
			create = r
		}
	}
	note := create.Object()
	content, _ := note["content"].(string)
	for _, want := range []string{`<a href="https://arxiv.org/abs/2202.02326`, "Towards Training Reproducible &lt;Deep&gt; Learning Models",
		"Mingzhi Wen, Ann Other", `https://arxiv.org/pdf/2202.02326`, "#<span>cs_LG</span>", "#<span>stat_ML</span>"} {
		if !strings.Contains(content, want) {
			t.Errorf("note content lacks %q: %s", want, content)
		}
	}
	to, _ := note["to"].([]any)
	cc, _ := note["cc"].([]any)
	if create.KeyID != actorID+"#main-key" || create.Activity["actor"] != actorID || note["attributedTo"] != actorID ||
		len(to) != 1 || to[0] != "https://www.w3.org/ns/activitystreams#Public" || len(cc) != 1 || cc[0] != actorID+"/followers" {
		t.Errorf("create: %s", create.Body)
	}
	// The note's id dereferences to the note; the outbox lists the Create.
	if st, _, doc := apGet(t, note["id"].(string), "application/activity+json"); st != 200 || doc["id"] != note["id"] || doc["content"] != content {
		t.Errorf("note %v: %d %v", note["id"], st, doc)
	}
	if st, _, ob := apGet(t, actorID+"/outbox", "application/activity+json"); st != 200 || ob["totalItems"] != 1.0 || ob["type"] != "OrderedCollection" {
		t.Errorf("outbox: %d %v", st, ob)
	}
	if st, _, pg := apGet(t, actorID+"/outbox?page=true", "application/activity+json"); st != 200 || len(pg["orderedItems"].([]any)) != 1 {
		t.Errorf("outbox page: %d %v", st, pg)
	}

	// The metrics count the follower and the deliveries (the Accept, the Create).
	mresp, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{"followfeed_activitypub_followers 1\n", `followfeed_activitypub_deliveries_total{outcome="delivered"} 2` + "\n",
		"followfeed_activitypub_pending_deliveries 0\n", `followfeed_river_job_runs_total{kind="activitypub_deliver",outcome="completed"}`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Undo the Follow: the next paper is not delivered.
	undo := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": peer.ActorID("alice") + "#undo/1",
		"type": "Undo", "actor": peer.ActorID("alice"), "object": follow}
	if st, body, err := peer.Send("alice", a.URL+"/ap/inbox", undo); err != nil || st != 202 {
		t.Fatalf("undo: %d %s %v", st, body, err)
	}
	if st, _, coll := apGet(t, actorID+"/followers", "application/activity+json"); st != 200 || coll["totalItems"] != 0.0 {
		t.Errorf("followers after undo: %d %v", st, coll)
	}
	second := `{"arxiv_id": "2301.00001v1", "title": "A Second Paper", "authors": [{"name": "Mingzhi Wen", "ids": ["host:1955166"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}` + "\n"
	if r := c.Do("POST", "/v1/papers", svc, second, "Content-Type", "application/x-ndjson"); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	activityPubIdle(t, a)
	if n := countType(peer.Received(), "Create", ""); n != 1 {
		t.Errorf("%d Creates after the Undo, want still 1", n)
	}
	if rej := peer.Rejected(); len(rej) != 0 {
		t.Errorf("the peer rejected followfeed's requests: %v", rej)
	}
}

// TestFediverseInboxOverHTTP: the inbox's answers as a fediverse server
// sees them: 401 with WWW-Authenticate for an unsigned activity, 400 for
// malformed JSON-LD, 413 for an oversized body, 403 for a blocked domain,
// 404 for an unknown handle; and with ACTIVITYPUB off (the default) none of
// the routes exists.
func TestFediverseInboxOverHTTP(t *testing.T) {
	t.Parallel()
	t.Log("hostile: the inbox answers 401, 400, 413, 403 and 404 to unsigned, malformed, oversized, blocked and misaddressed activities")
	a, _, peer := startFediverse(t, "ACTIVITYPUB_BLOCKED_DOMAINS", "blocked.example")
	post := func(path, body string, signed bool) (int, http.Header) {
		t.Helper()
		var req *http.Request
		if signed {
			var err error
			var act map[string]any
			_ = json.Unmarshal([]byte(body), &act)
			if req, _, err = peer.Signed("alice", a.URL+path, act); err != nil {
				t.Fatal(err)
			}
		} else {
			req, _ = http.NewRequest("POST", a.URL+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/activity+json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	follow := `{"@context": "https://www.w3.org/ns/activitystreams", "id": "` + peer.ActorID("alice") + `#f", "type": "Follow", "actor": "` +
		peer.ActorID("alice") + `", "object": "` + a.URL + `/ap/actors/cs.LG"}`
	if st, h := post("/ap/actors/cs.LG/inbox", follow, false); st != 401 || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Signature") {
		t.Errorf("unsigned: %d %v", st, h.Get("WWW-Authenticate"))
	}
	if st, _ := post("/ap/inbox", `{"type": "Follow", "actor": `, false); st != 400 {
		t.Errorf("malformed: %d", st)
	}
	if st, _ := post("/ap/inbox", `{"type": "Note", "content": "`+strings.Repeat("x", 300<<10)+`"}`, false); st != 413 {
		t.Errorf("oversized: %d", st)
	}
	blocked := `{"@context": "https://www.w3.org/ns/activitystreams", "id": "https://m.blocked.example/f", "type": "Follow", "actor": "https://m.blocked.example/users/x", "object": "` + a.URL + `/ap/actors/cs.LG"}`
	if st, _ := post("/ap/inbox", blocked, true); st != 403 {
		t.Errorf("blocked domain: %d", st)
	}
	if st, _ := post("/ap/actors/cs.NOPE/inbox", follow, true); st != 404 {
		t.Errorf("unknown actor: %d", st)
	}
	if st, _ := post("/ap/actors/cs.LG/inbox", follow, true); st != 202 {
		t.Errorf("a genuine Follow: %d", st)
	}

	off, _ := start(t)
	for _, path := range []string{"/.well-known/webfinger?resource=acct:cs.LG@x", "/ap/actors/cs.LG", "/nodeinfo/2.1"} {
		if st, _, _ := apGet(t, off.URL+path, "application/activity+json"); st != 404 {
			t.Errorf("ACTIVITYPUB off: GET %s answered %d", path, st)
		}
	}
}
