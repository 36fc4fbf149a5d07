package app_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"followfeed/app"
	"followfeed/internal/testapp"
	"followfeed/internal/testsmtp"
	"followfeed/store"
)

// clock is a settable clock for the service under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// parts splits a multipart/alternative message into its decoded parts by
// content type.
func parts(t *testing.T, raw []byte) (*mail.Message, map[string]string) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing the message: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("content type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	out := map[string]string{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out[ct] = string(b)
	}
	return msg, out
}

// TestDailyDigestEndToEnd: a reader with follows and a confirmed address
// gets exactly one daily digest at 07:00 in their time zone, through the
// real scheduler, River worker and SMTP; the digest's one-click unsubscribe
// POST stops the next one.
func TestDailyDigestEndToEnd(t *testing.T) {
	t.Parallel()
	smtpd := testsmtp.Start(t, testsmtp.Options{})
	amsterdam, _ := time.LoadLocation("Europe/Amsterdam")
	clk := &clock{t: time.Date(2026, 11, 30, 6, 0, 0, 0, amsterdam)}
	env := testapp.Env(t)
	env["SMTP_URL"] = smtpd.URL()
	env["DIGEST_SCHEDULE_INTERVAL"] = "1s"
	env["MAIL_FROM"] = "followfeed <digest@followfeed.test>"
	env["MAIL_UNSUBSCRIBE_MAILTO"] = "unsubscribe@followfeed.test"
	a := testapp.StartWith(t, env, app.Hooks{Now: clk.Now})
	c := a.Client(t)
	reader := testapp.Token(t, "reader", "reader@example.org") // email_verified: confirmed
	c.Do("PUT", "/v1/me/follows/category/cs.LG", reader, nil)
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", reader, map[string]any{"label": "Mingzhi Wen"})
	c.Do("PUT", "/v1/me/follows/category/cs", reader, nil)
	r := c.Do("PATCH", "/v1/me", reader, map[string]any{"timezone": "Europe/Amsterdam",
		"digest": map[string]any{"frequency": "daily", "hour": 7}})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"next_at":"2026-11-30T06:00:00Z"`) {
		t.Fatalf("settings: %d %s", r.Status, r.Body)
	}
	// One paper matched by all three follows, one by cs.LG only.
	svc := testapp.Token(t, "host", "", "papers:write")
	r = c.Do("POST", "/v1/papers", svc, `[
	  {"arxiv_id": "2202.02326", "title": "Towards Training Reproducible Deep Learning Models", "primary_category": "cs.LG",
	   "categories": ["cs.LG", "cs.SE"], "authors": [{"name": "Mingzhi Wen", "ids": ["openalex:A5023888391"]}, {"name": "Boyuan Chen"}]},
	  {"arxiv_id": "2301.00001", "title": "Another cs.LG paper", "primary_category": "cs.LG", "categories": ["cs.LG"], "authors": "Ann Author"}]`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	db, err := store.Open(context.Background(), a.DatabaseURL, store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitUntil(t, "the match job", func() bool {
		var n int
		db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job WHERE kind = 'match_batch' AND state = 'completed'`).Scan(&n)
		return n == 1
	})
	time.Sleep(2 * time.Second)
	if n := len(smtpd.Messages()); n != 0 {
		t.Fatalf("%d mails before 07:00", n)
	}
	clk.Set(time.Date(2026, 11, 30, 7, 0, 30, 0, amsterdam))
	msgs := smtpd.WaitMessages(t, 1, 20*time.Second)
	time.Sleep(2 * time.Second) // the scheduler runs again every second: still one
	if n := len(smtpd.Messages()); n != 1 {
		t.Fatalf("%d digests for one day, want 1", n)
	}
	if msgs[0].To[0] != "reader@example.org" {
		t.Errorf("sent to %v", msgs[0].To)
	}
	msg, body := parts(t, msgs[0].Data)
	h := msg.Header
	if got := h.Get("Subject"); got != "2 new papers: cs.LG" && !strings.HasPrefix(got, "2 new papers") {
		t.Errorf("subject %q", got)
	}
	for _, name := range []string{"Message-Id", "Date", "List-Unsubscribe", "List-Unsubscribe-Post", "List-Id", "Auto-Submitted"} {
		if h.Get(name) == "" {
			t.Errorf("header %s missing", name)
		}
	}
	if h.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" || h.Get("Auto-Submitted") != "auto-generated" ||
		!strings.Contains(h.Get("Message-Id"), "daily.2026-11-30") {
		t.Errorf("headers: %v", h)
	}
	if _, err := mail.ParseDate(h.Get("Date")); err != nil {
		t.Errorf("Date: %v", err)
	}
	lu := h.Get("List-Unsubscribe")
	if !strings.Contains(lu, "<mailto:unsubscribe@followfeed.test") {
		t.Errorf("List-Unsubscribe lacks the mailto: %q", lu)
	}
	unsubURL := lu[strings.Index(lu, "<")+1 : strings.Index(lu, ">")]
	if !strings.HasPrefix(unsubURL, a.URL+"/unsubscribe/ffl_") {
		t.Fatalf("unsubscribe URL %q", unsubURL)
	}
	for ct, text := range body {
		for _, want := range []string{"Towards Training Reproducible Deep Learning Models", "Another cs.LG paper", "Mingzhi Wen",
			"https://arxiv.org/abs/2202.02326", "/settings?token=ffl_", "/unsubscribe/ffl_"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s part lacks %q", ct, want)
			}
		}
		if strings.Count(text, "Towards Training Reproducible Deep Learning Models") != 1 {
			t.Errorf("%s part: the paper matched by three follows appears %d times", ct, strings.Count(text, "Towards Training Reproducible Deep Learning Models"))
		}
	}
	if _, ok := body["text/plain"]; !ok {
		t.Error("no text part")
	}
	if !strings.Contains(body["text/plain"], "cs.LG · Mingzhi Wen · cs (all)") && !strings.Contains(body["text/plain"], "Mingzhi Wen") {
		t.Errorf("reasons missing in text part:\n%s", body["text/plain"])
	}
	// A GET of the link changes nothing; the one-click POST unsubscribes.
	if code, _ := getURL(t, unsubURL); code != 200 {
		t.Fatalf("GET unsubscribe page: %d", code)
	}
	r = c.Do("GET", "/v1/me", reader, nil)
	if !strings.Contains(string(r.Body), `"frequency":"daily"`) {
		t.Fatalf("a GET unsubscribed: %s", r.Body)
	}
	req, _ := http.NewRequest("POST", unsubURL, strings.NewReader("List-Unsubscribe=One-Click"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, _ := fetch(t, req); code != 200 {
		t.Fatalf("one-click POST: %d", code)
	}
	r = c.Do("GET", "/v1/me", reader, nil)
	if !strings.Contains(string(r.Body), `"frequency":"off"`) || !strings.Contains(string(r.Body), `"suppressed":"unsubscribe"`) {
		t.Fatalf("after unsubscribing: %s", r.Body)
	}
	// More papers and the next morning: nothing is sent.
	c.Do("POST", "/v1/papers", svc, `[{"arxiv_id": "2301.00002", "title": "Third", "primary_category": "cs.LG"}]`)
	clk.Set(time.Date(2026, 12, 1, 7, 0, 30, 0, amsterdam))
	time.Sleep(3 * time.Second)
	if n := len(smtpd.Messages()); n != 1 {
		t.Fatalf("%d mails after unsubscribing, want still 1", n)
	}
	var sent int
	db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM digests WHERE state = 'sent'`).Scan(&sent)
	if sent != 1 {
		t.Errorf("ledger: %d sent digests", sent)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
