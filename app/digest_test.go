package app_test

import (
	"bytes"
	"context"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"followfeed/app"
	"followfeed/database"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testapp"
	"followfeed/internal/testwait"
	"followfeed/worker"
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

// TestDailyDigestEndToEnd: a user with follows and a confirmed address
// gets exactly one daily digest at 07:00 in their time zone, through the
// real scheduler, River worker and SMTP; the digest's one-click unsubscribe
// POST stops the next one.
func TestDailyDigestEndToEnd(t *testing.T) {
	t.Parallel()
	smtpd := fakesmtp.Start(t, fakesmtp.Options{})
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
	// The researcher follow is labelled with a name no author has, so the
	// reason line can only show it if it comes from the follow, not from the
	// paper's author list.
	c.Do("PUT", "/v1/me/follows/researcher/openalex:A5023888391", reader, map[string]any{"label": "Wen lab"})
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
	db, err := database.Open(context.Background(), a.DatabaseURL, database.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a.Jobs().WaitCompleted(t, db.Pool, worker.MatchArgs{}.Kind(), 1)
	settled(t, a, db)
	if n := len(smtpd.Messages()); n != 0 {
		t.Fatalf("%d mails before 07:00", n)
	}
	clk.Set(time.Date(2026, 11, 30, 7, 0, 30, 0, amsterdam))
	msgs := smtpd.WaitMessages(t, 1, 20*time.Second)
	settled(t, a, db) // the scheduler runs again every second: still one
	if n := len(smtpd.Messages()); n != 1 {
		t.Fatalf("%d digests for one day, want 1", n)
	}
	if msgs[0].To[0] != "reader@example.org" {
		t.Errorf("sent to %v", msgs[0].To)
	}
	msg, body := parts(t, msgs[0].Data)
	h := msg.Header
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil || subject != "2 new papers: Wen lab, cs.LG" {
		t.Errorf("subject %q (%v), want %q", h.Get("Subject"), err, "2 new papers: Wen lab, cs.LG")
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
	text := strings.ReplaceAll(body["text/plain"], "\r\n", "\n")
	html := strings.ReplaceAll(body["text/html"], "\r\n", "\n")
	if len(body) != 2 || text == "" || html == "" {
		t.Fatalf("want exactly a text/plain and a text/html part, got %d parts: %v", len(body), slices.Collect(maps.Keys(body)))
	}
	// The manage link as the text part shows it, on its own line.
	m := regexp.MustCompile(`(?m)^Manage preferences:\n(\S+)$`).FindStringSubmatch(text)
	if m == nil || !strings.HasPrefix(m[1], a.URL+"/settings?token=ffl_") {
		t.Fatalf("text part has no manage preferences link:\n%s", text)
	}
	manageURL := m[1]
	if !regexp.MustCompile(`(?m)^Unsubscribe:\n` + regexp.QuoteMeta(unsubURL) + `$`).MatchString(text) {
		t.Errorf("text part lacks the unsubscribe link %s:\n%s", unsubURL, text)
	}
	for _, want := range []string{
		`href="` + manageURL + `"`, ">Manage preferences</a>",
		`href="` + unsubURL + `"`, ">Unsubscribe</a>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("html part lacks %q", want)
		}
	}
	// Every paper shows, in both parts and inside its own entry: title,
	// authors, the exact reason line (every follow that matched, by its
	// name, in follow order), abstract and PDF links; once each.
	papers := []struct{ title, authors, reason, abs, pdf string }{
		{"Towards Training Reproducible Deep Learning Models", "Mingzhi Wen, Boyuan Chen", "Because you follow cs.LG · Wen lab · Computer Science (cs.*)",
			"https://arxiv.org/abs/2202.02326", "https://arxiv.org/pdf/2202.02326"},
		{"Another cs.LG paper", "Ann Author", "Because you follow cs.LG · Computer Science (cs.*)",
			"https://arxiv.org/abs/2301.00001", "https://arxiv.org/pdf/2301.00001"},
	}
	for _, p := range papers {
		if n := strings.Count(text, p.title); n != 1 {
			t.Errorf("text part shows %q %d times, want once", p.title, n)
		}
		if n := strings.Count(html, ">"+p.title+"</a>"); n != 1 {
			t.Errorf("html part shows %q %d times, want once", p.title, n)
		}
		entry := block(text, p.title, "\n\n")
		for _, line := range []string{"   " + p.authors, "   " + p.reason, "   Abstract: " + p.abs, "   PDF:      " + p.pdf} {
			if !slices.Contains(strings.Split(entry, "\n"), line) {
				t.Errorf("text entry of %q lacks the line %q:\n%s", p.title, line, entry)
			}
		}
		entry = block(html, p.title, "</tr>")
		for _, want := range []string{`<a href="` + p.abs + `"`, ">" + p.authors + "</div>", ">" + p.reason + "</div>",
			`<a href="` + p.abs + `" style="color:#1d4ed8">Abstract</a>`, `<a href="` + p.pdf + `" style="color:#1d4ed8">PDF</a>`} {
			if !strings.Contains(entry, want) {
				t.Errorf("html entry of %q lacks %q:\n%s", p.title, want, entry)
			}
		}
	}
	// Grouped under the most specific follow: the researcher (by its
	// label), then the category.
	order := []string{"Wen lab\n-------\n", papers[0].title, "cs.LG — Machine Learning\n", papers[1].title}
	for i := 1; i < len(order); i++ {
		if !strings.Contains(text, order[i-1]) || strings.Index(text, order[i-1]) > strings.Index(text, order[i]) {
			t.Errorf("text part: %q should come before %q:\n%s", order[i-1], order[i], text)
		}
	}
	// The manage link opens the email settings without a session.
	if code, page := getURL(t, manageURL); code != 200 || !strings.Contains(page, "reader@example.org") {
		t.Errorf("GET manage link: %d\n%.300s", code, page)
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
	settled(t, a, db)
	if n := len(smtpd.Messages()); n != 1 {
		t.Fatalf("%d mails after unsubscribing, want still 1", n)
	}
	var sent int
	db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM digests WHERE state = 'sent'`).Scan(&sent)
	if sent != 1 {
		t.Errorf("ledger: %d sent digests", sent)
	}
}

// block returns the part of s from the first occurrence of from up to (not
// including) the next end, or "" when from does not occur.
func block(s, from, end string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j]
	}
	return s
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 20*time.Second, what, cond)
}

// settled waits until the service has sent what it is going to: its match
// jobs done, a run of the digest scheduler that started after now
// finished, and the mail jobs it queued done (mailed). A count of mail
// after it is final.
func settled(t *testing.T, a *testapp.App, db *database.DB) {
	t.Helper()
	a.Jobs().WaitIdle(t, db.Pool, worker.MatchArgs{}.Kind())
	a.Jobs().WaitRan(t, db.Pool, worker.ScheduleDigestsArgs{}.Kind(), time.Now())
	mailed(t, a, db)
}

// mailed waits until no mail job is queued or running.
func mailed(t *testing.T, a *testapp.App, db *database.DB) {
	t.Helper()
	a.Jobs().WaitIdle(t, db.Pool, worker.DigestArgs{}.Kind(), worker.InstantArgs{}.Kind(), worker.ConfirmArgs{}.Kind())
}
