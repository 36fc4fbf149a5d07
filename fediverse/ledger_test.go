package fediverse_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"followfeed/apperr"
	"followfeed/database"
	"followfeed/fediverse"
	"followfeed/follow"
	"followfeed/identity"
	fakefed "followfeed/internal/fake/fediverse"
	"followfeed/paper"
)

// TestNotesOncePerPaperWithUpdatesAndDeletes: a researcher's actor posts a
// paper once however many of the person's ids bring it, a new version is
// an Update of the same note, a withdrawal its Delete; every follower on
// one server shares one delivery to the shared inbox.
func TestNotesOncePerPaperWithUpdatesAndDeletes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := e.registry.Put(e.ctx, []identity.Record{{Kind: follow.Researcher, IDs: []string{"host:1955166", "openalex:A5023888391"}, Name: "Mingzhi Wen"}}); err != nil {
		t.Fatal(err)
	}
	e.follow("alice", "openalex_A5023888391")
	e.follow("bob", "host_1955166") // the same actor, the same server
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 2 {
		t.Fatalf("%d followers", n)
	}
	e.deliver() // the Accepts
	e.push(researcherPaper("2202.02326", 1, "Towards <Reproducible> Models", "host:1955166"))
	if errs := e.deliver(); len(errs) > 0 {
		t.Fatal(errs)
	}
	cs := creates(e.peer.Received())
	if len(cs) != 1 || cs[0].Inbox != "/inbox" {
		t.Fatalf("creates %v: want one, to the shared inbox", cs)
	}
	note := cs[0].Object()
	if !strings.Contains(note["content"].(string), "Towards &lt;Reproducible&gt; Models") {
		t.Errorf("content %v", note["content"])
	}
	// The same paper again, now also under the person's OpenAlex id (an
	// enrichment): no second note.
	e.push(researcherPaper("2202.02326", 1, "Towards <Reproducible> Models", "host:1955166", "openalex:A5023888391"))
	e.deliver()
	if n := len(creates(e.peer.Received())); n != 1 {
		t.Errorf("%d creates after the paper came again, want 1", n)
	}
	// Version 2: an Update of the same note.
	e.push(researcherPaper("2202.02326", 2, "Towards Reproducible Models, revised", "host:1955166"))
	e.deliver()
	var upd *fakefed.Received
	for _, r := range e.peer.Received() {
		if r.Type() == "Update" {
			upd = &r
		}
	}
	if upd == nil || upd.Object()["id"] != note["id"] || !strings.Contains(upd.Object()["content"].(string), "(v2)") {
		t.Fatalf("update %v of note %v", upd, note["id"])
	}
	// Withdrawn: a Delete, and the note's id is a Tombstone.
	e.push(paper.Paper{ArxivID: "2202.02326", Deleted: true})
	if n, err := e.svc.Housekeeping(e.ctx); err != nil || n != 1 {
		t.Fatalf("housekeeping: %d %v", n, err)
	}
	e.deliver()
	var del *fakefed.Received
	for _, r := range e.peer.Received() {
		if r.Type() == "Delete" {
			del = &r
		}
	}
	if del == nil || del.Object()["id"] != note["id"] || del.Object()["type"] != "Tombstone" {
		t.Fatalf("delete %v", del)
	}
	var id int64
	fmt.Sscanf(note["id"].(string)[strings.LastIndex(note["id"].(string), "/")+1:], "%d", &id)
	if _, deleted, err := e.svc.NoteDocument(e.ctx, id); err != nil || !deleted {
		t.Errorf("note document after the Delete: deleted=%v %v", deleted, err)
	}
	if n, _ := e.svc.Housekeeping(e.ctx); n != 0 {
		t.Errorf("a second housekeeping deleted %d notes again", n)
	}
	// The outbox: Create, Update, Delete, newest first.
	page, err := e.svc.OutboxPage(e.ctx, e.actor("host_1955166"), 0)
	if err != nil || len(page.OrderedItems) != 3 || !strings.Contains(string(page.OrderedItems[0]), `"Delete"`) {
		t.Errorf("outbox %v %v", page, err)
	}
}

// TestDeliveryRetriesWithTheSameActivity: a failing inbox keeps its
// deliveries pending and gets the same activity (same id, same bytes) when
// it recovers; none is lost, none doubled.
func TestDeliveryRetriesWithTheSameActivity(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *fediverse.Config) { c.CategoryNotes = true })
	e.follow("alice", "cs.LG")
	e.deliver()
	e.peer.Fail(http.StatusServiceUnavailable)
	e.push(researcherPaper("2301.00001", 1, "One"), researcherPaper("2301.00002", 1, "Two"))
	errs := e.deliver()
	var re *fediverse.RetryError
	for _, err := range errs {
		if !errors.As(err, &re) {
			t.Fatalf("delivery to a failing inbox: %v, want a RetryError", err)
		}
	}
	if len(errs) != 1 || e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'pending'`) != 2 {
		t.Fatalf("errors %v; pending %d", errs, e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'pending'`))
	}
	failedAttempts := e.peer.Attempts()
	// Still failing at the next attempt: still pending (the job backs off).
	for id := range errs {
		if err := e.svc.DeliverInbox(e.ctx, id, nil); !errors.As(err, &re) {
			t.Fatalf("retry: %v", err)
		}
	}
	e.peer.Fail(0)
	for id := range errs {
		if err := e.svc.DeliverInbox(e.ctx, id, nil); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
	}
	cs := creates(e.peer.Received())
	if len(cs) != 2 || e.peer.Attempts() <= failedAttempts {
		t.Fatalf("%d creates after recovery", len(cs))
	}
	var bodies []string
	e.db.Pool.QueryRow(e.ctx, `SELECT array_agg(body ORDER BY id) FROM ap_activities WHERE type = 'Create'`).Scan(&bodies)
	for i, c := range cs {
		if string(c.Body) != bodies[i] {
			t.Errorf("create %d was not the stored activity:\n%s\n%s", i, c.Body, bodies[i])
		}
	}
	if n := e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'delivered'`); n != 3 {
		t.Errorf("%d deliveries delivered, want 3 (the Accept and two Creates)", n)
	}
}

// TestDeadAndGoneInboxes: an inbox failing for DeadAfter is disabled with
// its pending deliveries failed; a 410 Gone removes its followers.
func TestDeadAndGoneInboxes(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *fediverse.Config) { c.CategoryNotes = true })
	e.follow("alice", "cs.LG")
	e.deliver()
	e.peer.Fail(http.StatusBadGateway)
	e.push(researcherPaper("2301.00001", 1, "One"))
	e.deliver()
	e.clk.Add(fediverse.DeadAfter + time.Minute)
	var inbox int64
	e.db.Pool.QueryRow(e.ctx, `SELECT inbox_id FROM ap_followers`).Scan(&inbox)
	if err := e.svc.DeliverInbox(e.ctx, inbox, nil); err != nil {
		t.Fatalf("the last attempt of a dead inbox: %v, want the job to end", err)
	}
	if n := e.count(`SELECT count(*) FROM ap_inboxes WHERE id = $1 AND disabled_at IS NOT NULL AND NOT queued`, inbox); n != 1 {
		t.Error("a dead inbox was not disabled")
	}
	if n := e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'pending'`); n != 0 {
		t.Errorf("%d deliveries still pending for a dead inbox", n)
	}
	// Gone: another server's actor follows, its inbox answers 410.
	gone := setup(t, func(c *fediverse.Config) { c.CategoryNotes = true })
	gone.follow("carol", "cs.AI")
	gone.peer.Fail(http.StatusGone)
	gone.deliver()
	if n := gone.count(`SELECT count(*) FROM ap_followers`); n != 0 {
		t.Errorf("%d followers left after 410 Gone", n)
	}
	if n := gone.count(`SELECT count(*) FROM ap_inboxes WHERE disabled_at IS NOT NULL`); n != 1 {
		t.Errorf("%d disabled inboxes after 410 Gone, want 1", n)
	}
}

// TestUndoAndDelete: Undo of a Follow (embedded or by id) and the Delete of
// the remote actor remove followers; an Undo by someone else does not.
func TestUndoAndDelete(t *testing.T) {
	t.Parallel()
	e := setup(t)
	f := e.follow("alice", "cs.LG")
	e.follow("alice", "cs.AI")
	e.follow("bob", "cs.LG")
	undo := func(by string, obj any) map[string]any {
		return map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID(by) + "#undo" + fmt.Sprint(time.Now().UnixNano()),
			"type": "Undo", "actor": e.peer.ActorID(by), "object": obj}
	}
	if err := e.receive("bob", "", undo("bob", f["id"])); err != nil { // bob undoes alice's follow id: nothing
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 3 {
		t.Fatalf("%d followers after a stranger's Undo", n)
	}
	if err := e.receive("alice", "", undo("alice", f)); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ap_followers WHERE follower = $1`, e.peer.ActorID("alice")); n != 1 {
		t.Fatalf("alice follows %d actors after undoing one of two", n)
	}
	del := map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": e.peer.ActorID("alice") + "#delete",
		"type": "Delete", "actor": e.peer.ActorID("alice"), "object": e.peer.ActorID("alice")}
	if err := e.receive("alice", "", del); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 1 {
		t.Errorf("%d followers after alice's Delete, want bob's", n)
	}
}

// TestCategoryActorsSummarise: without ACTIVITYPUB_CATEGORY_NOTES a
// category actor posts no note per paper, but one summary a day.
func TestCategoryActorsSummarise(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.follow("alice", "cs.LG")
	e.deliver()
	for i := 1; i <= 25; i++ {
		e.push(researcherPaper(fmt.Sprintf("2301.%05d", i), 1, fmt.Sprintf("Paper %d", i)))
	}
	e.deliver()
	if n := len(creates(e.peer.Received())); n != 0 {
		t.Fatalf("%d notes per paper from a category actor", n)
	}
	if n, err := e.svc.Summaries(e.ctx); err != nil || n != 1 {
		t.Fatalf("summaries: %d %v", n, err)
	}
	e.deliver()
	cs := creates(e.peer.Received())
	if len(cs) != 1 {
		t.Fatalf("%d summary notes", len(cs))
	}
	content := cs[0].Object()["content"].(string)
	if !strings.Contains(content, "25 new arXiv papers in cs.LG") || !strings.Contains(content, "Paper 25") || !strings.Contains(content, "…and 5 more") {
		t.Errorf("summary: %s", content)
	}
	if n, _ := e.svc.Summaries(e.ctx); n != 0 {
		t.Errorf("a second summary within the day: %d", n)
	}
	e.clk.Add(fediverse.SummaryEvery)
	if n, _ := e.svc.Summaries(e.ctx); n != 0 {
		t.Errorf("a summary of an empty day: %d", n)
	}
}

// TestHousekeepingPrunesByAge: two days of a category actor's summaries;
// the first is aged past SummaryRetention (on purpose, in SQL, with its
// delivery, which is past the ledger's 30 days too). Housekeeping deletes
// that summary with its Create and delivery (its id answers 404, the
// outbox no longer lists it), keeps the young one, and drops a replay
// record older than the clock skew allows; a second run deletes nothing.
func TestHousekeepingPrunesByAge(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.follow("alice", "cs.LG")
	e.deliver()
	var notes []int64
	for day := range 2 {
		e.push(researcherPaper(fmt.Sprintf("2301.%05d", day+1), 1, fmt.Sprintf("Paper %d", day+1)))
		if n, err := e.svc.Summaries(e.ctx); err != nil || n != 1 {
			t.Fatalf("summaries of day %d: %d %v", day, n, err)
		}
		e.deliver()
		notes = append(notes, int64(e.count(`SELECT max(id) FROM ap_notes WHERE paper_id IS NULL`)))
		e.clk.Add(fediverse.SummaryEvery)
	}
	old := e.clk.Now().Add(-fediverse.SummaryRetention - 24*time.Hour)
	for _, q := range []string{
		`UPDATE ap_notes SET published_at = $2 WHERE id = $1`,
		`UPDATE ap_deliveries SET updated_at = $2 WHERE activity_id IN (SELECT id FROM ap_activities WHERE note_id = $1)`,
	} {
		if _, err := e.db.Pool.Exec(e.ctx, q, notes[0], old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.db.Pool.Exec(e.ctx, `INSERT INTO ap_seen_signatures (hash, seen_at) VALUES ('\x01', $1), ('\x02', $2)`,
		e.clk.Now().Add(-fediverse.MaxClockSkew-2*time.Hour), e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Housekeeping(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.NoteDocument(e.ctx, notes[0]); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("the old summary's document: %v, want not found", err)
	}
	if doc, _, err := e.svc.NoteDocument(e.ctx, notes[1]); err != nil || len(doc) == 0 {
		t.Errorf("the young summary's document: %v", err)
	}
	page, err := e.svc.OutboxPage(e.ctx, e.actor("cs.LG"), 0)
	if err != nil || len(page.OrderedItems) != 1 {
		t.Errorf("outbox after the prune: %d items (%v), want the young summary's Create", len(page.OrderedItems), err)
	}
	if n := e.count(`SELECT count(*) FROM ap_activities WHERE note_id = $1`, notes[0]); n != 0 {
		t.Errorf("%d activities of the old summary left", n)
	}
	if n := e.count(`SELECT count(*) FROM ap_seen_signatures`); n != 1 {
		t.Errorf("%d replay records left, want the young one", n)
	}
	before := e.count(`SELECT count(*) FROM ap_notes`) + e.count(`SELECT count(*) FROM ap_deliveries`)
	if _, err := e.svc.Housekeeping(e.ctx); err != nil || e.count(`SELECT count(*) FROM ap_notes`)+e.count(`SELECT count(*) FROM ap_deliveries`) != before {
		t.Errorf("a second housekeeping changed the tables (%v)", err)
	}
}

// TestKeyRotation: a rotation adds a key that every actor publishes, and
// signs with, from its activation instant (KeyActivationDelay on); until
// then the old key is still the published one. The peer verifies what is
// signed with the new key.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	before, err := e.svc.ActorDocument(e.ctx, e.actor("cs.LG"))
	if err != nil {
		t.Fatal(err)
	}
	_, active, err := e.svc.RotateKey(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.clk.Now().Add(fediverse.KeyActivationDelay); !active.Equal(want) {
		t.Errorf("the new key is active at %v, want %v", active, want)
	}
	// The private keys are sealed at rest (SECRET_KEY), the public ones not.
	if n := e.count(`SELECT count(*) FROM ap_keys WHERE private_pem LIKE 'enc1:%' AND private_pem NOT LIKE '%PRIVATE KEY%' AND public_pem LIKE '-----BEGIN PUBLIC KEY%'`); n != 2 {
		t.Errorf("%d of the 2 keys sealed", n)
	}
	e.clk.Add(fediverse.KeyActivationDelay - time.Second)
	pending, _ := e.svc.ActorDocument(e.ctx, e.actor("cs.LG"))
	if pending.PublicKey.PublicKeyPem != before.PublicKey.PublicKeyPem {
		t.Error("the new key was published before its activation")
	}
	e.clk.Add(time.Second)
	after, _ := e.svc.ActorDocument(e.ctx, e.actor("cs.LG"))
	if after.PublicKey.PublicKeyPem == before.PublicKey.PublicKeyPem || after.PublicKey.ID != before.PublicKey.ID {
		t.Fatal("the rotation did not change the published key at its activation")
	}
	e.follow("alice", "cs.LG")
	e.deliver()
	if rs := e.peer.Received(); len(rs) != 1 || rs[0].Type() != "Accept" || len(e.peer.Rejected()) > 0 {
		t.Errorf("after rotation: received %d, rejected %v", len(rs), e.peer.Rejected())
	}
}

// TestRotationAfterANewSecretKey: after SECRET_KEY changed no process can
// open the current key (it signs nothing, and actor documents fail), so a
// rotation then makes its new key current at once.
func TestRotationAfterANewSecretKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := e.svc.ActorDocument(e.ctx, e.actor("cs.LG")); err != nil { // the first key, sealed
		t.Fatal(err)
	}
	cfg := e.cfg
	cfg.SecretKey = []byte("another secret key of 32 bytes..")
	moved := fediverse.NewService(cfg)
	if _, err := moved.ActorDocument(e.ctx, e.actor("cs.LG")); err == nil || !strings.Contains(err.Error(), "rotate-key") {
		t.Fatalf("the actor under another SECRET_KEY: %v, want an error saying to rotate", err)
	}
	_, active, err := moved.RotateKey(e.ctx)
	if err != nil || !active.Equal(e.clk.Now()) {
		t.Fatalf("rotation: active at %v (%v), want now, %v", active, err, e.clk.Now())
	}
	if _, err := moved.ActorDocument(e.ctx, e.actor("cs.LG")); err != nil {
		t.Errorf("the actor right after the rotation: %v", err)
	}
}

// TestKeyRotationAcrossProcesses: two Services over one database are two
// processes, each keeping the key it read for up to a minute: api serves
// the actor documents the peer fetches keys from, worker runs the
// fan-out and delivery jobs. A rotation in either (rotate-key is a process
// of its own) never has one sign with a key the other does not serve: at
// every moment around the activation, before the worker's cache expires,
// just before and at the activation instant, and again for a rotation in
// the worker, every note reaches the peer (which fetches the key for every
// request it verifies) on the first try, none refused, none lost.
func TestKeyRotationAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *fediverse.Config) { c.CategoryNotes = true })
	api := e.svc
	worker := fediverse.NewService(e.cfg)
	e.follow("alice", "cs.LG")
	if errs := e.deliverBy(worker); len(errs) > 0 { // the worker reads key 1
		t.Fatal(errs)
	}
	published := func() string {
		t.Helper()
		doc, err := api.ActorDocument(e.ctx, e.actor("cs.LG"))
		if err != nil {
			t.Fatal(err)
		}
		return doc.PublicKey.PublicKeyPem
	}
	key1 := published()
	papers := 0
	note := func(when string) {
		t.Helper()
		papers++
		e.push(researcherPaper(fmt.Sprintf("2301.%05d", papers), 1, when))
		if errs := e.deliverBy(worker); len(errs) > 0 {
			t.Fatalf("%s: the worker's delivery: %v (the peer refused %v)", when, errs, e.peer.Rejected())
		}
		if n := len(creates(e.peer.Received())); n != papers {
			t.Fatalf("%s: %d notes reached the peer, want %d (refused: %v)", when, n, papers, e.peer.Rejected())
		}
	}
	e.clk.Add(30 * time.Second)
	_, active, err := api.RotateKey(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	note("right after a rotation in the api process, the worker's key read before it")
	e.clk.Add(31 * time.Second)
	note("after the worker read the keys again")
	e.clk.Add(active.Sub(e.clk.Now()) - time.Second)
	note("a second before the activation")
	if published() != key1 {
		t.Fatal("the api process published the new key before its activation")
	}
	e.clk.Add(time.Second)
	note("at the activation")
	key2 := published()
	if key2 == key1 {
		t.Fatal("the api process did not publish the new key at its activation")
	}
	// A rotation in the worker process, while the api keeps key 2 cached.
	e.clk.Add(10 * time.Second)
	_, active, err = worker.RotateKey(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	note("right after a rotation in the worker process")
	e.clk.Add(active.Sub(e.clk.Now()))
	note("at the second key's activation")
	if published() == key2 {
		t.Fatal("the api process did not publish the third key at its activation")
	}
	if n := e.count(`SELECT count(*) FROM ap_deliveries WHERE state <> 'delivered' OR attempts <> 1`); n != 0 {
		t.Errorf("%d deliveries not delivered on their first attempt", n)
	}
	if rej := e.peer.Rejected(); len(rej) > 0 {
		t.Errorf("the peer refused: %v", rej)
	}
}

// TestUnauthorizedIsRetried: an inbox answering 401 (a peer that has not
// fetched the actor's current key yet) keeps the delivery pending and gets
// the same activity again with back-off; after UnauthorizedAttempts 401s
// the delivery fails and the inbox's next one is sent.
func TestUnauthorizedIsRetried(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *fediverse.Config) { c.CategoryNotes = true })
	e.follow("alice", "cs.LG")
	e.deliver()
	var inbox int64
	e.db.Pool.QueryRow(e.ctx, `SELECT inbox_id FROM ap_followers`).Scan(&inbox)
	e.peer.Fail(http.StatusUnauthorized)
	e.push(researcherPaper("2301.00001", 1, "One"))
	var re *fediverse.RetryError
	if errs := e.deliver(); !errors.As(errs[inbox], &re) {
		t.Fatalf("a 401: %v, want a RetryError", errs)
	}
	for range fediverse.UnauthorizedAttempts - 2 {
		if err := e.svc.DeliverInbox(e.ctx, inbox, nil); !errors.As(err, &re) {
			t.Fatalf("a 401 again: %v, want a RetryError", err)
		}
	}
	if n := e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'pending' AND unauthorized = $1`, fediverse.UnauthorizedAttempts-1); n != 1 {
		t.Fatalf("%d pending deliveries after %d 401s, want the Create", n, fediverse.UnauthorizedAttempts-1)
	}
	e.peer.Fail(0)
	if err := e.svc.DeliverInbox(e.ctx, inbox, nil); err != nil {
		t.Fatalf("once the peer verifies: %v", err)
	}
	if cs := creates(e.peer.Received()); len(cs) != 1 {
		t.Fatalf("%d creates after the 401s stopped, want 1", len(cs))
	}
	// 401 for good: the delivery fails after UnauthorizedAttempts, and the
	// next one goes out.
	e.peer.Fail(http.StatusUnauthorized)
	e.push(researcherPaper("2301.00002", 1, "Two"))
	e.deliver()
	for range fediverse.UnauthorizedAttempts - 2 {
		e.svc.DeliverInbox(e.ctx, inbox, nil)
	}
	e.push(researcherPaper("2301.00003", 1, "Three"))
	e.deliver()
	if err := e.svc.DeliverInbox(e.ctx, inbox, nil); !errors.As(err, &re) {
		t.Fatalf("the next delivery after the failed one: %v, want a RetryError (it is sent, and 401 too)", err)
	}
	if n := e.count(`SELECT count(*) FROM ap_deliveries WHERE state = 'failed' AND last_status = 401 AND unauthorized = $1`, fediverse.UnauthorizedAttempts); n != 1 {
		t.Errorf("%d deliveries failed after %d 401s, want 1", n, fediverse.UnauthorizedAttempts)
	}
	e.peer.Fail(0)
	if err := e.svc.DeliverInbox(e.ctx, inbox, nil); err != nil {
		t.Fatal(err)
	}
	if cs := creates(e.peer.Received()); len(cs) != 2 || !strings.Contains(string(cs[1].Body), "Three") {
		t.Errorf("%d creates, want One and Three", len(cs))
	}
}

// TestRemoteKeyRotation: a peer that rotated its key is verified with the
// new one once the cached key is older than a minute (fetched again), and
// refused while it is fresher (no refetch storm from bad signatures).
func TestRemoteKeyRotation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.follow("alice", "cs.LG") // caches alice's key
	if err := e.peer.Rotate(); err != nil {
		t.Fatal(err)
	}
	like := func(n int) map[string]any {
		return map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": fmt.Sprintf("%s#like/%d", e.peer.ActorID("alice"), n),
			"type": "Like", "actor": e.peer.ActorID("alice"), "object": "https://example.org/x"}
	}
	if err := e.receive("alice", "", like(1)); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Errorf("a new key within a minute of the cached one: %v, want 401", err)
	}
	e.clk.Add(2 * time.Minute)
	if err := e.receive("alice", "", like(2)); err != nil {
		t.Errorf("after the peer's rotation: %v", err)
	}
}

// TestRFC9421Signatures: a peer signing with RFC 9421 (Signature-Input,
// Content-Digest, rsa-v1_5-sha256) is verified; one over another target,
// or with another body under its signed Content-Digest, is not, and the
// same request again is a replay.
func TestRFC9421Signatures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	var peer *httptest.Server
	peer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/activity+json")
		id := peer.URL + "/actor"
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "Person", "inbox": id + "/inbox",
			"publicKey": map[string]string{"id": id + "#key", "owner": id, "publicKeyPem": string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}})
	}))
	defer peer.Close()
	actor := peer.URL + "/actor"
	body, _ := json.Marshal(map[string]any{"@context": "https://www.w3.org/ns/activitystreams", "id": actor + "#f",
		"type": "Follow", "actor": actor, "object": e.actor("cs.LG").ID})
	sum := sha256.Sum256(body)
	host := strings.TrimPrefix(e.base, "http://")
	params := fmt.Sprintf(`("@method" "@target-uri" "content-digest");created=%d;keyid="%s#key";alg="rsa-v1_5-sha256"`, time.Now().Unix(), actor)
	h := http.Header{}
	h.Set("Content-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
	h.Set("Content-Type", "application/activity+json")
	base := `"@method": POST` + "\n" + `"@target-uri": ` + e.base + "/ap/actors/cs.LG/inbox\n" +
		`"content-digest": ` + h.Get("Content-Digest") + "\n" + `"@signature-params": ` + params
	digest := sha256.Sum256([]byte(base))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	h.Set("Signature-Input", "sig1="+params)
	h.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(sig)+":")
	req := fediverse.Signed{Method: "POST", RequestURI: "/ap/actors/cs.LG/inbox", Host: host, Header: h, Body: body}
	tampered := req
	tampered.RequestURI = "/ap/actors/cs.AI/inbox"
	if err := e.svc.Receive(e.ctx, "cs.AI", tampered); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Errorf("an RFC 9421 signature over another target: %v", err)
	}
	// Another body under the signed Content-Digest: the signature covers
	// the header, not the body, so only the digest check refuses it.
	swapped := req
	swapped.Body = bytes.Replace(body, []byte(`#f"`), []byte(`#g"`), 1)
	if bytes.Equal(swapped.Body, body) {
		t.Fatal("the body was not changed")
	}
	if err := e.svc.Receive(e.ctx, "cs.LG", swapped); apperr.CodeOf(err) != apperr.Unauthorized || !strings.Contains(err.Error(), "Content-Digest does not match") {
		t.Errorf("an RFC 9421 request with another body under its Content-Digest: %v, want a 401 saying the digest does not match", err)
	}
	if n := e.count(`SELECT count(*) FROM ap_followers`); n != 0 {
		t.Fatalf("%d followers after refused RFC 9421 requests", n)
	}
	if err := e.svc.Receive(e.ctx, "cs.LG", req); err != nil {
		t.Fatalf("RFC 9421: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM ap_followers WHERE follower = $1`, actor); n != 1 {
		t.Errorf("%d followers from the RFC 9421 Follow", n)
	}
	// The same signed request again is a replay.
	if err := e.svc.Receive(e.ctx, "cs.LG", req); apperr.CodeOf(err) != apperr.Unauthorized || !strings.Contains(err.Error(), "replay") {
		t.Errorf("an RFC 9421 replay: %v, want a 401 saying it is a replay", err)
	}
}

// TestActorSaysHowItPosts: a category's actor says it posts a summary a
// day, or one post per paper with CategoryNotes (it said "one post per
// paper" either way).
func TestActorSaysHowItPosts(t *testing.T) {
	t.Parallel()
	for _, notes := range []bool{false, true} {
		e := setup(t, func(c *fediverse.Config) { c.CategoryNotes = notes })
		cat, err := e.svc.ActorDocument(e.ctx, e.actor("cs.LG"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "one summary post a day", true: "one post per paper"}[notes]
		if !strings.Contains(cat.Summary, want) {
			t.Errorf("category notes %v: the category's summary %q does not say %q", notes, cat.Summary, want)
		}
	}
}
