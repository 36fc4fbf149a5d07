package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/atom"

	"followfeed/internal/fake/fediverse"
	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
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

// apGet fetches a document of a's fediverse routes through testapp's
// client, which checks the answer against openapi.json, and decodes it
// when it is JSON.
func apGet(t *testing.T, a *testapp.App, c *testapp.Client, rawURL, accept string) (int, http.Header, map[string]any) {
	t.Helper()
	path, ok := strings.CutPrefix(rawURL, a.URL)
	if !ok {
		t.Fatalf("%s is not the service's", rawURL)
	}
	var headers []string
	if accept != "" {
		headers = []string{"Accept", accept}
	}
	r := c.Do("GET", path, "", nil, headers...)
	var doc map[string]any
	_ = json.Unmarshal(r.Body, &doc)
	return r.Status, r.Header, doc
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
	matchIdle(t, a, db)
	// Only the jobs clear what is counted (River's jobs of the fediverse,
	// an actor's due fan-out, a pending delivery): any job's end may.
	a.Jobs().Until(t, "the ActivityPub jobs", nil, func() bool {
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
		st, hd, jrd := apGet(t, a, c, a.URL+"/.well-known/webfinger?resource="+url.QueryEscape("acct:"+h+"@"+host), "")
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
	if st, _, _ := apGet(t, a, c, a.URL+"/.well-known/webfinger?resource="+url.QueryEscape("acct:cs.LG@elsewhere.example"), ""); st != 404 {
		t.Errorf("another host's handle: %d", st)
	}

	// The actor, under both media types (application/ld+json exactly as
	// ActivityPub writes it).
	for accept, want := range map[string]string{
		"application/activity+json": "application/activity+json; charset=utf-8",
		`application/ld+json; profile="https://www.w3.org/ns/activitystreams"`: `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`,
	} {
		st, hd, doc := apGet(t, a, c, actorID, accept)
		if st != 200 || hd.Get("Content-Type") != want {
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
	r := c.Do("GET", strings.TrimPrefix(actorID, a.URL), "", nil, "Accept", "text/html")
	page := html.UnescapeString(string(r.Body)) // html/template writes + as &#43;
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `<link rel="alternate" type="application/activity+json" href="`+actorID+`">`) ||
		!strings.Contains(page, "@orcid_0000-0002-1825-0097@"+host) {
		t.Errorf("actor page: %d %s", r.Status, page)
	}
	// The instance actor, the following collection and the icon.
	if st, _, inst := apGet(t, a, c, a.URL+"/ap/instance", "application/activity+json"); st != 200 || inst["type"] != "Application" {
		t.Errorf("instance actor: %d %v", st, inst)
	}
	if st, _, coll := apGet(t, a, c, actorID+"/following", "application/activity+json"); st != 200 || coll["totalItems"] != 0.0 {
		t.Errorf("following: %d %v", st, coll)
	}
	if r := c.Do("GET", "/ap/icon.png", "", nil); r.Status != 200 || r.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(r.Body, []byte("\x89PNG")) {
		t.Errorf("icon: %d %s", r.Status, r.Header.Get("Content-Type"))
	}

	// NodeInfo.
	if st, _, links := apGet(t, a, c, a.URL+"/.well-known/nodeinfo", ""); st != 200 || links["links"] == nil {
		t.Errorf("nodeinfo links: %d %v", st, links)
	}
	if st, _, ni := apGet(t, a, c, a.URL+"/nodeinfo/2.1", ""); st != 200 || ni["version"] != "2.1" {
		t.Errorf("nodeinfo: %d %v", st, ni)
	}

	// A signed Follow of the actor's own URL (the canonical id's, which
	// WebFinger gave for every id; a Follow naming another id's URL is
	// fediverse's TestOneActorPerIdentity).
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
	if st, _, coll := apGet(t, a, c, actorID+"/followers", "application/activity+json"); st != 200 || coll["totalItems"] != 1.0 {
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
	// The note's id dereferences to the note, the Create's to the Create;
	// the outbox lists the Create.
	if st, _, doc := apGet(t, a, c, note["id"].(string), "application/activity+json"); st != 200 || doc["id"] != note["id"] || doc["content"] != content {
		t.Errorf("note %v: %d %v", note["id"], st, doc)
	}
	if st, _, doc := apGet(t, a, c, create.ID(), `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`); st != 200 || doc["id"] != create.ID() || doc["type"] != "Create" {
		t.Errorf("activity %v: %d %v", create.ID(), st, doc)
	}
	if st, _, ob := apGet(t, a, c, actorID+"/outbox", "application/activity+json"); st != 200 || ob["totalItems"] != 1.0 || ob["type"] != "OrderedCollection" {
		t.Errorf("outbox: %d %v", st, ob)
	}
	if st, _, pg := apGet(t, a, c, actorID+"/outbox?page=true", "application/activity+json"); st != 200 || len(pg["orderedItems"].([]any)) != 1 {
		t.Errorf("outbox page: %d %v", st, pg)
	}

	// The metrics count the follower and the deliveries (the Accept, the
	// Create). River counts a job's run when it has recorded the job
	// completed, a moment after the delivery itself is recorded: the
	// metrics are read until they say it all (or the wait runs out).
	wants := []string{"followfeed_activitypub_followers 1\n", `followfeed_activitypub_deliveries_total{outcome="delivered"} 2` + "\n",
		"followfeed_activitypub_pending_deliveries 0\n", `followfeed_river_job_runs_total{kind="activitypub_deliver",outcome="completed"}`}
	var metrics []byte
	testwait.Until(15*time.Second, func() bool {
		mresp, err := http.Get(a.URL + "/metrics")
		if err != nil {
			return false
		}
		metrics, _ = io.ReadAll(mresp.Body)
		mresp.Body.Close()
		for _, want := range wants {
			if !strings.Contains(string(metrics), want) {
				return false
			}
		}
		return true
	})
	for _, want := range wants {
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
	if st, _, coll := apGet(t, a, c, actorID+"/followers", "application/activity+json"); st != 200 || coll["totalItems"] != 0.0 {
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
// sees them, each checked against openapi.json by testapp's client: 401
// with WWW-Authenticate for an unsigned activity, 400 for malformed
// JSON-LD, 413 for an oversized body (its Content-Length, or chunked and
// cut off at the cap), 403 for a blocked domain, 404 for an unknown
// handle, 202 for a genuine Follow; and with ACTIVITYPUB off (the default)
// none of the routes exists.
func TestFediverseInboxOverHTTP(t *testing.T) {
	t.Parallel()
	t.Log("hostile: the inbox answers 401, 400, 413, 403 and 404 to unsigned, malformed, oversized, blocked and misaddressed activities")
	a, c, peer := startFediverse(t, "ACTIVITYPUB_BLOCKED_DOMAINS", "blocked.example")
	// post sends body (a string, or an io.Reader: chunked) to path, signed
	// by the peer's alice when signed.
	post := func(path string, body any, signed bool) *testapp.Response {
		t.Helper()
		headers := []string{"Content-Type", "application/activity+json"}
		if signed {
			var act map[string]any
			_ = json.Unmarshal([]byte(body.(string)), &act)
			req, b, err := peer.Signed("alice", a.URL+path, act)
			if err != nil {
				t.Fatal(err)
			}
			body = b
			for _, h := range []string{"Date", "Digest", "Signature"} {
				headers = append(headers, h, req.Header.Get(h))
			}
		}
		return c.Do("POST", path, "", body, headers...)
	}
	follow := `{"@context": "https://www.w3.org/ns/activitystreams", "id": "` + peer.ActorID("alice") + `#f", "type": "Follow", "actor": "` +
		peer.ActorID("alice") + `", "object": "` + a.URL + `/ap/actors/cs.LG"}`
	if r := post("/ap/actors/cs.LG/inbox", follow, false); r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Signature") {
		t.Errorf("unsigned: %d %v", r.Status, r.Header.Get("WWW-Authenticate"))
	}
	if r := post("/ap/inbox", `{"type": "Follow", "actor": `, false); r.Status != 400 {
		t.Errorf("malformed: %d", r.Status)
	}
	big := `{"type": "Note", "content": "` + strings.Repeat("x", 300<<10) + `"}`
	for what, body := range map[string]any{"with its Content-Length": big, "chunked": strings.NewReader(big)} {
		var p struct{ Status int }
		if r := post("/ap/inbox", body, false); r.Status != 413 || json.Unmarshal(r.Body, &p) != nil || p.Status != 413 ||
			!strings.Contains(string(r.Body), "the request body exceeds 256 KiB") {
			t.Errorf("oversized, %s: %d %s", what, r.Status, r.Body)
		}
	}
	blocked := `{"@context": "https://www.w3.org/ns/activitystreams", "id": "https://m.blocked.example/f", "type": "Follow", "actor": "https://m.blocked.example/users/x", "object": "` + a.URL + `/ap/actors/cs.LG"}`
	if r := post("/ap/inbox", blocked, true); r.Status != 403 {
		t.Errorf("blocked domain: %d", r.Status)
	}
	if r := post("/ap/actors/cs.NOPE/inbox", follow, true); r.Status != 404 {
		t.Errorf("unknown actor: %d", r.Status)
	}
	if r := post("/ap/actors/cs.LG/inbox", follow, true); r.Status != 202 {
		t.Errorf("a genuine Follow: %d %s", r.Status, r.Body)
	}

	off, offc := start(t)
	for _, path := range []string{"/.well-known/webfinger?resource=acct:cs.LG@x", "/ap/actors/cs.LG", "/nodeinfo/2.1", "/ap/icon.png"} {
		if st, _, _ := apGet(t, off, offc, off.URL+path, "application/activity+json"); st != 404 {
			t.Errorf("ACTIVITYPUB off: GET %s answered %d", path, st)
		}
	}
	if r := offc.Do("POST", "/ap/inbox", "", follow, "Content-Type", "application/activity+json"); r.Status != 404 {
		t.Errorf("ACTIVITYPUB off: POST /ap/inbox answered %d", r.Status)
	}
}

// TestPublicFeedLinksItsActor: with ACTIVITYPUB=on a public feed names its
// actor, the asked id's: a Link header (rel="alternate", type
// application/activity+json) in every format and on a 304, and in the Atom
// document, as gofeed reads it, an alternate link of that type after the
// page's. The link dereferences to the person's one actor whichever id the
// feed was asked under. With ACTIVITYPUB off, on the same database and the
// same version of the feed, neither is there, and the two ETags differ, so
// a feed reader's copy of one is never confirmed (304) as the other.
func TestPublicFeedLinksItsActor(t *testing.T) {
	t.Parallel()
	env := testapp.Env(t)
	off := testapp.Start(t, env)
	onEnv := maps.Clone(env)
	onEnv["ACTIVITYPUB"] = "on"
	on := testapp.Start(t, onEnv)
	offc, onc := off.Client(t), on.Client(t)
	svc := testapp.Token(t, "host-site", "", "papers:write")
	if r := onc.Do("PUT", "/v1/researchers", svc, `[{"ids": ["host:1955166", "openalex:A5023888391", "orcid:0000-0002-1825-0097"], "name": "Mingzhi Wen"}]`); r.Status != 200 {
		t.Fatalf("registry: %d %s", r.Status, r.Body)
	}
	paper := `{"arxiv_id": "2202.02326v1", "title": "Towards Training Reproducible Deep Learning Models", "authors": [{"name": "Mingzhi Wen", "ids": ["host:1955166"]}], "categories": ["cs.LG"], "primary_category": "cs.LG"}` + "\n"
	if r := onc.Do("POST", "/v1/papers", svc, paper, "Content-Type", "application/x-ndjson"); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	const canonical = "/ap/actors/orcid_0000-0002-1825-0097"
	for _, asked := range []struct{ id, handle string }{{"host:1955166", "host_1955166"}, {"openalex:A5023888391", "openalex_A5023888391"}} {
		actor := on.URL + "/ap/actors/" + asked.handle
		wantLink := "<" + actor + `>; rel="alternate"; type="application/activity+json"`
		for _, format := range []string{"atom", "rss", "json"} {
			path := "/feeds/researcher/" + asked.id + "." + format
			r := onc.Do("GET", path, "", nil)
			if r.Status != 200 || r.Header.Get("Link") != wantLink {
				t.Fatalf("ACTIVITYPUB on: %s: %d, Link %q, want %q", path, r.Status, r.Header.Get("Link"), wantLink)
			}
			parser := gofeed.NewParser()
			parser.KeepOriginalFeed = true
			f, err := parser.ParseString(string(r.Body))
			if err != nil || len(f.Items) != 1 {
				t.Fatalf("%s: %v (%d items)", path, err, len(f.Items))
			}
			if format == "atom" {
				var alternates []string
				for _, l := range f.OriginalFeed().(*atom.Feed).Links {
					if l.Rel == "alternate" {
						alternates = append(alternates, l.Type+" "+l.Href)
					}
				}
				if len(alternates) == 0 || alternates[len(alternates)-1] != "application/activity+json "+actor {
					t.Errorf("%s: Atom alternate links %q, want the actor's last", path, alternates)
				}
			}
			etag := r.Header.Get("ETag")
			if r304 := onc.Do("GET", path, "", nil, "If-None-Match", etag); r304.Status != 304 || r304.Header.Get("Link") != wantLink {
				t.Errorf("%s: conditional GET: %d, Link %q", path, r304.Status, r304.Header.Get("Link"))
			}
			// The same feed with ACTIVITYPUB off: no link, another ETag.
			o := offc.Do("GET", path, "", nil)
			if o.Status != 200 || o.Header.Get("Link") != "" || bytes.Contains(o.Body, []byte("activity+json")) {
				t.Errorf("ACTIVITYPUB off: %s: %d, Link %q, a body naming activity+json: %v", path, o.Status, o.Header.Get("Link"), bytes.Contains(o.Body, []byte("activity+json")))
			}
			if o.Header.Get("ETag") == etag {
				t.Errorf("%s: the ETag %s is the same with ACTIVITYPUB on and off", path, etag)
			}
			if r := offc.Do("GET", path, "", nil, "If-None-Match", etag); r.Status != 200 {
				t.Errorf("%s: ACTIVITYPUB off confirmed the on document's ETag: %d", path, r.Status)
			}
			if r := onc.Do("GET", path, "", nil, "If-None-Match", o.Header.Get("ETag")); r.Status != 200 {
				t.Errorf("%s: ACTIVITYPUB on confirmed the off document's ETag: %d", path, r.Status)
			}
		}
		// The link is the person's one actor.
		if st, _, doc := apGet(t, on, onc, actor, "application/activity+json"); st != 200 || doc["id"] != on.URL+canonical || doc["name"] != "Mingzhi Wen" {
			t.Errorf("the linked actor %s: %d %v", actor, st, doc)
		}
	}
}
