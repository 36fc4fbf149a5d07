package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testapp"
	"followfeed/internal/testjobs"
	"followfeed/worker"
)

// receiver is an independent HTTP receiver on 127.0.0.1 that records what
// it is sent and answers with the statuses of script in turn (then 200).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	script []func(w http.ResponseWriter)
}

type recorded struct {
	method, path string
	header       http.Header
	body         []byte
	at           time.Time
}

func newReceiver(t *testing.T, script ...func(w http.ResponseWriter)) *receiver {
	rc := &receiver{script: script}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.reqs)
		rc.reqs = append(rc.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), body, time.Now()})
		rc.mu.Unlock()
		if n < len(rc.script) {
			rc.script[n](w)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"event_id":"$ok"}`))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]recorded(nil), rc.reqs...)
}

func status(code int, body string, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

type channelOut struct {
	ID             int64  `json:"id"`
	Type           string `json:"type"`
	URL            string `json:"url"`
	Secret         string `json:"secret"`
	Mode           string `json:"mode"`
	Enabled        bool   `json:"enabled"`
	DisabledReason string `json:"disabled_reason"`
	RotatingUntil  string `json:"rotating_until"`
}

type deliveriesOut struct {
	Deliveries []struct {
		EventID    string `json:"event_id"`
		EventType  string `json:"event_type"`
		EventState string `json:"event_state"`
		Status     *int   `json:"status"`
		Outcome    string `json:"outcome"`
		Response   string `json:"response"`
	} `json:"deliveries"`
}

func pushPaper(t *testing.T, c *testapp.Client, lines ...string) {
	t.Helper()
	svc := testapp.Token(t, "host-site", "", "papers:write")
	r := c.Do("POST", "/v1/papers", svc, strings.Join(lines, "\n")+"\n", "Content-Type", "application/x-ndjson")
	if r.Status != 200 {
		t.Fatalf("ingest: %d %s", r.Status, r.Body)
	}
}

func paperLine(id, title, cat string) string {
	return fmt.Sprintf(`{"arxiv_id": %q, "title": %q, "authors": [{"name": "Ada Lovelace"}], "abstract": "An abstract.", "categories": [%q], "primary_category": %q}`, id, title, cat, cat)
}

// TestWebhookChannelDeliversSignedMatchesAtLeastOnce: a user's instant
// webhook gets a new match through the match job, signed per Standard
// Webhooks (checked with the reference library); the receiver fails once
// (503) and the retry carries the same webhook-id; the ledger shows both
// attempts. A rotated secret signs alongside the old one.
func TestWebhookChannelDeliversSignedMatchesAtLeastOnce(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1", "JOB_RETRY_MAX", "1s")
	rc := newReceiver(t, status(503, "busy"))
	tok := testapp.Token(t, "hooked", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)

	r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": rc.URL + "/hook", "mode": "instant"})
	var ch channelOut
	r.JSON(t, &ch)
	if r.Status != 201 || !strings.HasPrefix(ch.Secret, "whsec_") || r.Header.Get("Location") != fmt.Sprintf("/v1/me/channels/%d", ch.ID) {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if g := c.Do("GET", fmt.Sprintf("/v1/me/channels/%d", ch.ID), tok, nil); strings.Contains(string(g.Body), ch.Secret) {
		t.Error("GET shows the secret again")
	}

	pushPaper(t, c, paperLine("2202.02326v2", "Towards Training Reproducible Deep Learning Models", "cs.LG"),
		paperLine("2301.00001", "Galaxies", "astro-ph.GA"))
	waitFor(t, "the retried delivery", func() bool { return len(rc.got()) >= 2 })
	got := rc.got()
	wh, err := standardwebhooks.NewWebhook(ch.Secret)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range got[:2] {
		if err := wh.Verify(q.body, q.header); err != nil {
			t.Errorf("request %d: signature does not verify: %v (%s)", i, err, q.header.Get("webhook-signature"))
		}
		if q.method != "POST" || q.path != "/hook" || q.header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: %s %s %s", i, q.method, q.path, q.header.Get("Content-Type"))
		}
	}
	if id := got[0].header.Get("webhook-id"); id == "" || got[1].header.Get("webhook-id") != id {
		t.Errorf("webhook-id %q then %q: must be the same on a retry", id, got[1].header.Get("webhook-id"))
	}
	var ev struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			Papers []struct {
				ArxivID string   `json:"arxiv_id"`
				Title   string   `json:"title"`
				Authors []string `json:"authors"`
				Links   struct {
					Abs string `json:"abs"`
				} `json:"links"`
				Reasons []struct{ Kind, ID, Name string } `json:"reasons"`
			} `json:"papers"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got[1].body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "papers.matched" || len(ev.Data.Papers) != 1 || ev.Data.Papers[0].ArxivID != "2202.02326" ||
		len(ev.Data.Papers[0].Reasons) != 1 || ev.Data.Papers[0].Reasons[0].ID != "cs.LG" || ev.Data.Papers[0].Links.Abs == "" {
		t.Errorf("body: %s", got[1].body)
	}

	var ds deliveriesOut
	waitFor(t, "the ledger to say delivered", func() bool {
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d/deliveries", ch.ID), tok, nil).JSON(t, &ds)
		return len(ds.Deliveries) == 2 && ds.Deliveries[0].EventState == "delivered"
	})
	if d := ds.Deliveries; *d[0].Status != 200 || d[0].Outcome != "delivered" || *d[1].Status != 503 || d[1].Outcome != "retry" || d[1].Response != "busy" {
		t.Errorf("deliveries: %+v", d)
	}

	// Rotation: both secrets sign for 24 h.
	r = c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/rotate-secret", ch.ID), tok, nil)
	var rot channelOut
	r.JSON(t, &rot)
	if r.Status != 200 || rot.Secret == ch.Secret || !strings.HasPrefix(rot.Secret, "whsec_") || rot.RotatingUntil == "" {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/test", ch.ID), tok, nil); r.Status != 202 {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the test event", func() bool { return len(rc.got()) >= 3 })
	q := rc.got()[2]
	if n := len(strings.Fields(q.header.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures during a rotation, want 2", n)
	}
	whNew, _ := standardwebhooks.NewWebhook(rot.Secret)
	for name, w := range map[string]*standardwebhooks.Webhook{"old": wh, "new": whNew} {
		if err := w.Verify(q.body, q.header); err != nil {
			t.Errorf("the %s secret does not verify the test event: %v", name, err)
		}
	}
	if !strings.Contains(string(q.body), `"type":"channel.test"`) {
		t.Errorf("test body: %s", q.body)
	}
}

// TestChannelInputIsChecked: internal targets are refused at creation with
// a 422 in every spelling, Slack and Discord URLs must be on their hosts,
// plain http only for allow-listed hosts; limits and ownership hold.
func TestChannelInputIsChecked(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_USER", "0", "RATE_LIMIT_PER_IP", "0")
	tok := testapp.Token(t, "careful", "")
	t.Log("hostile: channel URLs that point inside are refused at creation")
	for _, u := range []string{
		"https://127.0.0.1/hook", "https://127.1/hook", "https://2130706433/hook", "https://0x7f.0.0.1/hook",
		"https://[::1]/hook", "https://[::ffff:127.0.0.1]/hook", "https://[::ffff:7f00:1]/hook",
		"https://169.254.169.254/latest/meta-data", "https://10.0.0.8/", "https://172.16.3.4/", "https://192.168.1.1/",
		"https://100.64.0.1/", "https://[fe80::1]/", "https://[fd00:ec2::254]/", "https://0.0.0.0/", "https://[::]/",
		"https://224.0.0.1/", "https://[ff02::1]/", "https://localhost/hook", "https://metadata.google.internal/",
		"http://example.org/hook", "ftp://example.org/hook", "https://user:pw@example.org/hook", "not a url", "",
	} {
		r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": u})
		var p problem
		r.JSON(t, &p)
		if r.Status != 422 || p.Field != "url" || p.Detail == "" {
			t.Errorf("%q: %d %s", u, r.Status, r.Body)
		}
	}
	for _, body := range []map[string]any{
		{"type": "slack", "url": "https://example.org/services/T/B/x"},
		{"type": "discord", "url": "https://discord.example.org/api/webhooks/1/x"},
		{"type": "discord", "url": "https://discord.com/not-webhooks"},
		{"type": "matrix", "homeserver": "https://matrix.org", "room_id": "#alias:matrix.org", "access_token": "t"},
		{"type": "matrix", "homeserver": "https://10.1.1.1", "room_id": "!r:matrix.org", "access_token": "t"},
		{"type": "matrix", "url": "https://matrix.org"},
		{"type": "webhook", "url": "https://example.org/h", "mode": "hourly"},
		{"type": "pager", "url": "https://example.org/h"},
		{"type": "webhook", "url": "https://example.org/h", "follows": []map[string]string{{"kind": "category", "id": "cs.LG"}}},
		{"type": "webhook", "url": "https://example.org/h", "follows": []map[string]string{{"kind": "planet", "id": "mars"}}},
	} {
		if r := c.Do("POST", "/v1/me/channels", tok, body); r.Status != 422 {
			t.Errorf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	if r := c.Do("POST", "/v1/me/channels", tok, `{"type": "webhook", "url": "https://example.org/h", "colour": 1}`); r.Status != 422 {
		t.Errorf("unknown field: %d", r.Status)
	}
	if r := c.Do("POST", "/v1/me/channels", tok, `{"type": `); r.Status != 400 {
		t.Errorf("broken JSON: %d", r.Status)
	}
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "slack", "url": "https://hooks.slack.com/services/T0/B0/secretpart",
		"mode": "daily", "follows": []map[string]string{{"kind": "category", "id": "cs.LG"}}})
	var slack channelOut
	r.JSON(t, &slack)
	if r.Status != 201 || slack.Secret != "" || strings.Contains(slack.URL, "secretpart") || slack.Mode != "daily" {
		t.Fatalf("slack: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/rotate-secret", slack.ID), tok, nil); r.Status != 409 {
		t.Errorf("rotating a Slack channel: %d", r.Status)
	}
	for i := 1; i < 10; i++ {
		if r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "discord", "url": fmt.Sprintf("https://discord.com/api/webhooks/%d/tok", i)}); r.Status != 201 {
			t.Fatalf("channel %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": "https://example.org/h"}); r.Status != 409 {
		t.Errorf("11th channel: %d %s", r.Status, r.Body)
	}
	var list struct {
		Channels []channelOut `json:"channels"`
	}
	c.Do("GET", "/v1/me/channels", tok, nil).JSON(t, &list)
	if len(list.Channels) != 10 {
		t.Errorf("%d channels listed", len(list.Channels))
	}
	other := testapp.Token(t, "nosy", "")
	path := fmt.Sprintf("/v1/me/channels/%d", slack.ID)
	for _, m := range []string{"GET", "DELETE"} {
		if r := c.Do(m, path, other, nil); r.Status != 404 {
			t.Errorf("%s another user's channel: %d", m, r.Status)
		}
	}
	if r := c.Do("GET", "/v1/me/channels/nope", tok, nil); r.Status != 404 {
		t.Errorf("bad id: %d", r.Status)
	}
	r = c.Do("PATCH", path, tok, map[string]any{"mode": "weekly", "enabled": false})
	var patched channelOut
	r.JSON(t, &patched)
	if r.Status != 200 || patched.Mode != "weekly" || patched.Enabled {
		t.Errorf("patch: %d %s", r.Status, r.Body)
	}
	if r := c.Do("PATCH", path, tok, map[string]any{"url": "https://127.0.0.1/x"}); r.Status != 422 {
		t.Errorf("patch to an internal URL: %d", r.Status)
	}
	if r := c.Do("PATCH", path, tok, map[string]any{"type": "webhook"}); r.Status != 422 {
		t.Errorf("patch type: %d", r.Status)
	}
	if r := c.Do("DELETE", path, tok, nil); r.Status != 204 {
		t.Errorf("delete: %d", r.Status)
	}
	if r := c.Do("GET", path+"/deliveries", tok, nil); r.Status != 404 {
		t.Errorf("deliveries of a deleted channel: %d", r.Status)
	}
	if r := c.Do("GET", "/v1/me/channels", "", nil); r.Status != 401 {
		t.Errorf("anonymous: %d", r.Status)
	}
}

// The request shapes below were checked against the providers'
// documentation (November 2026):
//   - Slack incoming webhooks take a JSON POST with "blocks" (Block Kit) and
//     a top-level "text" used as the notification fallback; a message holds
//     at most 50 blocks, a header block's plain_text at most 150 characters,
//     a section's mrkdwn text at most 3,000; mrkdwn escapes &, < and > and
//     links as <url|text> (docs.slack.dev reference/block-kit: header-block,
//     section-block; the slack-messaging crate's validators say the same).
//   - Discord's Execute Webhook (POST /api/webhooks/{id}/{token}): "content"
//     at most 2,000 characters, at most 10 "embeds", an embed title at most
//     256 and description 4,096 characters, and all embeds' text together
//     at most 6,000; "allowed_mentions": {"parse": []} turns mentions off; a
//     429 carries "retry_after" in seconds (discord.com/developers/docs
//     resources/webhook#execute-webhook and the embed limits; twilight-http
//     and @sapphire/discord-utilities encode the same limits).
//   - Matrix client-server API v3: PUT
//     /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId} with an
//     access token, content {"msgtype": "m.text", "body", "format":
//     "org.matrix.custom.html", "formatted_body"}; the server deduplicates on
//     the transaction id per access token (spec.matrix.org client-server-api
//     #put_matrixclientv3roomsroomidsendeventtypetxnid; ruma-client-api's
//     send_message_event). A rate-limited request is 429 M_LIMIT_EXCEEDED
//     with "retry_after_ms" in the body, and since MSC4041 also Retry-After.
// No mismatch was found; the tests assert these shapes.

// TestChatChannelsSplitAndFollowTheirFormats: 25 matched papers reach
// Slack (Block Kit, ≤ 50 blocks, section text ≤ 3,000, each paper's
// feedback links in a context block after it), Discord (≤ 10 embeds,
// content ≤ 2,000, embeds ≤ 6,000 characters, the feedback links on each
// embed's last line; a 429 with retry_after is waited out) and Matrix
// (PUT m.room.message with an HTML body and the feedback links,
// transaction ids derived from the event id) in split messages.
func TestChatChannelsSplitAndFollowTheirFormats(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1", "JOB_RETRY_MAX", "1s")
	slack := newReceiver(t)
	discord := newReceiver(t, status(429, `{"message": "You are being rate limited.", "retry_after": 1.5, "global": false}`))
	matrix := newReceiver(t)
	tok := testapp.Token(t, "chatty", "")
	c.Do("PUT", "/v1/me/follows/category/cs.LG", tok, nil)
	for _, body := range []map[string]any{
		{"type": "slack", "url": slack.URL + "/services/T0/B0/x"},
		{"type": "discord", "url": discord.URL + "/api/webhooks/1/x"},
		{"type": "matrix", "homeserver": matrix.URL, "room_id": "!room:example.org", "access_token": "syt_secret"},
	} {
		if r := c.Do("POST", "/v1/me/channels", tok, body); r.Status != 201 {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	var lines []string
	for i := range 25 {
		lines = append(lines, paperLine(fmt.Sprintf("2401.%05d", i+1), fmt.Sprintf("Paper <%d> & a |pipe| %s", i, strings.Repeat("long title ", 30)), "cs.LG"))
	}
	pushPaper(t, c, lines...)
	waitFor(t, "all chat messages", func() bool {
		return len(slack.got()) == 2 && len(discord.got()) == 4 && len(matrix.got()) == 2
	})

	papers, feedback := 0, 0
	for _, q := range slack.got() {
		var m struct {
			Text   string `json:"text"`
			Blocks []struct {
				Type string `json:"type"`
				Text struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"text"`
				Elements []struct{ Type, Text string } `json:"elements"`
			} `json:"blocks"`
		}
		if err := json.Unmarshal(q.body, &m); err != nil || m.Text == "" || len(m.Blocks) == 0 || len(m.Blocks) > 50 {
			t.Fatalf("slack message: %v %s", err, q.body)
		}
		for _, b := range m.Blocks {
			switch {
			case b.Type == "header" && b.Text.Type == "plain_text" && utf8.RuneCountInString(b.Text.Text) <= 150:
			case b.Type == "section" && b.Text.Type == "mrkdwn" && utf8.RuneCountInString(b.Text.Text) <= 3000:
				papers++
				if strings.Contains(b.Text.Text, "<0>") || !strings.Contains(b.Text.Text, "&lt;") {
					t.Errorf("mrkdwn not escaped: %s", b.Text.Text)
				}
			case b.Type == "context" && len(b.Elements) == 1 && b.Elements[0].Type == "mrkdwn" && utf8.RuneCountInString(b.Elements[0].Text) <= 3000:
				feedback++
				for _, label := range []string{"|More like this>", "|Less like this>", "|Save>"} {
					if !strings.Contains(b.Elements[0].Text, "<"+a.URL+"/feedback/ffl_") || !strings.Contains(b.Elements[0].Text, label) {
						t.Errorf("slack feedback links: %s", b.Elements[0].Text)
					}
				}
			default:
				t.Errorf("slack block: %+v", b)
			}
		}
	}
	if papers != 25 || feedback != 25 {
		t.Errorf("slack carried %d papers, %d with feedback links", papers, feedback)
	}

	dq := discord.got()
	if gap := dq[1].at.Sub(dq[0].at); gap < 1400*time.Millisecond {
		t.Errorf("Discord's retry_after 1.5 s not honoured: retried after %s", gap)
	}
	papers = 0
	for _, q := range dq[1:] {
		var m struct {
			Content string `json:"content"`
			Embeds  []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"embeds"`
		}
		if err := json.Unmarshal(q.body, &m); err != nil || len(m.Embeds) > 10 || utf8.RuneCountInString(m.Content) > 2000 {
			t.Fatalf("discord message: %v %s", err, q.body)
		}
		total := 0
		for _, e := range m.Embeds {
			if utf8.RuneCountInString(e.Title) > 256 || utf8.RuneCountInString(e.Description) > 4096 || !strings.HasPrefix(e.URL, "https://arxiv.org/abs/") {
				t.Errorf("embed: %+v", e)
			}
			lines := strings.Split(e.Description, "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "[More like this]("+a.URL+"/feedback/ffl_") || strings.Count(last, "/feedback/ffl_") != 3 {
				t.Errorf("discord feedback links: %q", last)
			}
			total += utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
		}
		if total > 6000 {
			t.Errorf("embeds of one message hold %d characters", total)
		}
		papers += len(m.Embeds)
	}
	if papers != 25 {
		t.Errorf("discord carried %d papers", papers)
	}

	mq := matrix.got()
	var txns []string
	for _, q := range mq {
		prefix := "/_matrix/client/v3/rooms/!room:example.org/send/m.room.message/"
		if q.method != "PUT" || !strings.HasPrefix(q.path, prefix) || q.header.Get("Authorization") != "Bearer syt_secret" {
			t.Fatalf("matrix request: %s %s %v", q.method, q.path, q.header)
		}
		txns = append(txns, strings.TrimPrefix(q.path, prefix))
		var m struct{ Msgtype, Body, Format, Formatted_body string }
		if err := json.Unmarshal(q.body, &m); err != nil || m.Msgtype != "m.text" || m.Body == "" ||
			m.Format != "org.matrix.custom.html" || !strings.Contains(m.Formatted_body, "<li><a href=\"https://arxiv.org/abs/") ||
			strings.Contains(m.Formatted_body, "<0>") || !strings.Contains(m.Formatted_body, `<a href="`+a.URL+`/feedback/ffl_`) ||
			!strings.Contains(m.Body, "More like this <"+a.URL+"/feedback/ffl_") {
			t.Errorf("matrix content: %v %s", err, q.body)
		}
	}
	if len(txns) != 2 || !strings.HasPrefix(txns[0], "msg_") || txns[1] != txns[0]+".1" {
		t.Errorf("matrix transaction ids %v", txns)
	}
}

// TestFailingChannelIsDisabledAndItsOwnerMailed: a receiver that answers
// 500 keeps the event pending with retries; once the channel has failed for
// 24 h the next failure disables it, fails the event and mails the owner.
// A 404 fails an event at once.
func TestFailingChannelIsDisabledAndItsOwnerMailed(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1", "JOB_RETRY_MAX", "1s")
	db := openDB(t, a.DatabaseURL)
	down := newReceiver(t)
	down.script = nil
	failing := func(w http.ResponseWriter) { w.WriteHeader(500) }
	for range 100 {
		down.script = append(down.script, failing)
	}
	gone := newReceiver(t, status(404, "no such hook"))
	tok := testapp.Token(t, "owner", "owner@example.org")
	var ch, ch404 channelOut
	c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": down.URL}).JSON(t, &ch)
	c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": gone.URL}).JSON(t, &ch404)
	c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/test", ch404.ID), tok, nil)
	var ds deliveriesOut
	waitFor(t, "the 404 to fail its event", func() bool {
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d/deliveries", ch404.ID), tok, nil).JSON(t, &ds)
		return len(ds.Deliveries) == 1 && ds.Deliveries[0].EventState == "failed"
	})
	// A retry would leave the job waiting for it (River's back-off from
	// JOB_RETRY_MAX 1 s): once the delivery jobs are idle, the count is final.
	a.Jobs().WaitIdle(t, db.Pool, worker.ChannelDeliverArgs{}.Kind())
	if n := len(gone.got()); n != 1 {
		t.Errorf("a 404 was retried: %d requests", n)
	}

	c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/test", ch.ID), tok, nil)
	waitFor(t, "a failed attempt", func() bool { return len(down.got()) >= 1 })
	if _, err := db.Pool.Exec(context.Background(), `UPDATE channels SET failing_since = now() - interval '25 hours' WHERE id = $1`, ch.ID); err != nil {
		t.Fatal(err)
	}
	var got channelOut
	waitFor(t, "the channel to be disabled", func() bool {
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d", ch.ID), tok, nil).JSON(t, &got)
		return !got.Enabled
	})
	if !strings.Contains(got.DisabledReason, "HTTP 500") {
		t.Errorf("disabled_reason %q", got.DisabledReason)
	}
	c.Do("GET", fmt.Sprintf("/v1/me/channels/%d/deliveries", ch.ID), tok, nil).JSON(t, &ds)
	if ds.Deliveries[0].EventState != "failed" {
		t.Errorf("event after disabling: %+v", ds.Deliveries[0])
	}
	waitFor(t, "the owner's mail", func() bool {
		files, _ := filepath.Glob(filepath.Join(a.Env["MAIL_DIR"], "*.eml"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), "was disabled") && strings.Contains(string(b), "owner@example.org") {
				return true
			}
		}
		return false
	})
	r := c.Do("PATCH", fmt.Sprintf("/v1/me/channels/%d", ch.ID), tok, map[string]any{"enabled": true})
	got = channelOut{}
	r.JSON(t, &got)
	if !got.Enabled || got.DisabledReason != "" {
		t.Errorf("re-enable: %s", r.Body)
	}
}

// TestMatrixRateLimitIsWaitedOutUnderTheSameTransactionID: a homeserver
// answers the first PUT with 429 M_LIMIT_EXCEEDED and retry_after_ms (no
// Retry-After header, as homeservers before MSC4041 do), then 200. The
// retry waits at least retry_after_ms and goes to the same transaction id
// with the same content, so the homeserver's idempotency on the
// transaction id means the room gets one message however often it is
// retried; the ledger shows both attempts.
func TestMatrixRateLimitIsWaitedOutUnderTheSameTransactionID(t *testing.T) {
	t.Parallel()
	_, c := start(t, "RATE_LIMIT_PER_USER", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1", "JOB_RETRY_MAX", "1s")
	hs := newReceiver(t, status(429, `{"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 1500}`,
		"Content-Type", "application/json"))
	tok := testapp.Token(t, "matrix-fan", "")
	var ch channelOut
	r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "matrix", "homeserver": hs.URL, "room_id": "!papers:example.org",
		"access_token": "syt_limited"})
	r.JSON(t, &ch)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var test struct {
		EventID string `json:"event_id"`
	}
	c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/test", ch.ID), tok, nil).JSON(t, &test)
	var ds deliveriesOut
	waitFor(t, "the delivery after the 429", func() bool {
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d/deliveries", ch.ID), tok, nil).JSON(t, &ds)
		return len(ds.Deliveries) == 2 && ds.Deliveries[0].EventState == "delivered"
	})
	got := hs.got()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	want := "/_matrix/client/v3/rooms/!papers:example.org/send/m.room.message/" + test.EventID
	for i, q := range got {
		if q.method != "PUT" || q.path != want || q.header.Get("Authorization") != "Bearer syt_limited" {
			t.Errorf("request %d: %s %s %q, want PUT %s", i, q.method, q.path, q.header.Get("Authorization"), want)
		}
	}
	if string(got[0].body) != string(got[1].body) {
		t.Errorf("the retry carries other content:\n%s\n%s", got[0].body, got[1].body)
	}
	if gap := got[1].at.Sub(got[0].at); gap < 1400*time.Millisecond {
		t.Errorf("retry_after_ms 1500 not honoured: retried after %s", gap)
	}
	if d := ds.Deliveries; *d[1].Status != 429 || d[1].Outcome != "retry" || !strings.Contains(d[1].Response, "M_LIMIT_EXCEEDED") ||
		*d[0].Status != 200 || d[0].Outcome != "delivered" || d[0].EventID != test.EventID || d[1].EventID != test.EventID {
		t.Errorf("deliveries: %+v", d)
	}
}

// TestChatCredentialsNeverLeakFromFailedDeliveries: on a DNS or connect
// failure the whole Slack or Discord URL (the credential) reached the
// ledger, River's job errors, the worker's WARN lines, the deliveries
// list, disabled_reason, GET /v1/me/channels/{id} and the "channel
// disabled" mail (a review finding). The whole service runs here with a
// real SMTP server: a Slack channel on an unresolvable host, a Discord
// channel on a closed port and a Matrix homeserver whose certificate
// nobody trusts fail, are retried by River, are disabled after a day and
// mailed about; then every sink is searched for the credentials.
func TestChatCredentialsNeverLeakFromFailedDeliveries(t *testing.T) {
	t.Log("hostile: secrets")
	t.Parallel()
	smtpd := fakesmtp.Start(t, fakesmtp.Options{})
	a, c := start(t, "SMTP_URL", smtpd.URL(), "RATE_LIMIT_PER_USER", "0", "RATE_LIMIT_PER_IP", "0",
		"CHANNEL_ALLOW_HOSTS", "127.0.0.1,hooks.slack.invalid", "JOB_RETRY_MAX", "1s")
	db := openDB(t, a.DatabaseURL)
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(untrusted.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	const (
		slackToken   = "SlackTokenSecret0123456789"
		discordToken = "Discord-Token_Secret-0123456789abcdef"
		matrixToken  = "syt_b3duZXI_MatrixAccessTokenSecret_0123"
	)
	tok := testapp.Token(t, "leaky", "leaky@example.org")
	var ids []int64
	for _, body := range []map[string]any{
		{"type": "slack", "url": "https://hooks.slack.invalid/services/T0SECRET/B0SECRET/" + slackToken},
		{"type": "discord", "url": "http://" + closed + "/api/webhooks/123456789/" + discordToken},
		{"type": "matrix", "homeserver": untrusted.URL, "room_id": "!room:example.org", "access_token": matrixToken},
	} {
		var ch channelOut
		r := c.Do("POST", "/v1/me/channels", tok, body)
		r.JSON(t, &ch)
		if r.Status != 201 {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
		ids = append(ids, ch.ID)
		if r := c.Do("POST", fmt.Sprintf("/v1/me/channels/%d/test", ch.ID), tok, nil); r.Status != 202 {
			t.Fatalf("test: %d %s", r.Status, r.Body)
		}
	}
	attempts := func(id int64) int {
		var ds deliveriesOut
		c.Do("GET", fmt.Sprintf("/v1/me/channels/%d/deliveries", id), tok, nil).JSON(t, &ds)
		return len(ds.Deliveries)
	}
	for _, id := range ids {
		waitFor(t, "two failed attempts (one River retry)", func() bool { return attempts(id) >= 2 })
	}
	if _, err := db.Pool.Exec(context.Background(), `UPDATE channels SET failing_since = now() - interval '25 hours' WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	type sink struct{ where, text string }
	var sinks []sink // every response, page, log line, job error, mail and row
	add := func(where, text string) { sinks = append(sinks, sink{where, text}) }
	for _, id := range ids {
		waitFor(t, "the channel to be disabled", func() bool {
			var got channelOut
			r := c.Do("GET", fmt.Sprintf("/v1/me/channels/%d", id), tok, nil)
			r.JSON(t, &got)
			add("GET /v1/me/channels/{id}", string(r.Body))
			return !got.Enabled && got.DisabledReason != ""
		})
		add("GET /v1/me/channels/{id}/deliveries", string(c.Do("GET", fmt.Sprintf("/v1/me/channels/%d/deliveries", id), tok, nil).Body))
	}
	add("GET /v1/me/channels", string(c.Do("GET", "/v1/me/channels", tok, nil).Body))
	b := testapp.FormClient(t)
	postLogin(t, a, b, tok)
	resp, page := testapp.Form(t, b, "GET", a.URL+"/settings/channels", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "Disabled: ") {
		t.Fatalf("settings page: %d", resp.StatusCode)
	}
	add("the settings page", page)
	for _, m := range smtpd.WaitMessages(t, len(ids), 15*time.Second) {
		decoded, _ := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(m.Data)))
		add("the channel-disabled mail", string(m.Data)+string(decoded))
	}
	jobs := testjobs.List(t, db.Pool, "channel_deliver")
	jobErrors := 0
	for _, j := range jobs {
		for _, e := range j.Errors {
			add("a River job error", e.Error)
			jobErrors++
		}
	}
	if jobErrors < len(ids) {
		t.Errorf("River recorded %d job errors for %d failing channels", jobErrors, len(ids))
	}
	rows, err := db.Pool.Query(context.Background(), `
		SELECT response FROM channel_attempts UNION ALL SELECT last_response FROM channel_events
		UNION ALL SELECT disabled_reason FROM channels`)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		add("a ledger row", s)
	}
	logs := a.Logs()
	if !strings.Contains(logs, "job failed; will retry") || !strings.Contains(logs, "channel disabled") {
		t.Errorf("the logs lack the retry and disabling lines")
	}
	add("the process log", logs)
	for _, k := range sinks {
		for _, secret := range []string{slackToken, discordToken, matrixToken} {
			if i := strings.Index(k.text, secret); i >= 0 {
				t.Errorf("%s holds the credential %s…: %.300s", k.where, secret[:6], k.text[max(0, i-150):])
			}
		}
	}
}
