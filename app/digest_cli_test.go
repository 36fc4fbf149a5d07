package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"followfeed/app"
	"followfeed/database"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testapp"
	"followfeed/notify"
	"followfeed/worker"
)

// digestWorld is a running service (with an injected clock and a real SMTP
// server) and one user with a confirmed address, following cs.LG, daily
// digests at 07:00 in Amsterdam; the clock starts at 06:00 on Monday 30
// November 2026.
type digestWorld struct {
	a      *testapp.App
	c      *testapp.Client
	smtpd  *fakesmtp.Server
	clk    *clock
	db     *database.DB
	loc    *time.Location
	sub    string
	email  string
	reader string // the user's token
	svc    string // a service token that may push papers
	pushed int    // match jobs expected so far
}

func newDigestWorld(t *testing.T, sub string, opts fakesmtp.Options) *digestWorld {
	t.Helper()
	amsterdam, _ := time.LoadLocation("Europe/Amsterdam")
	return newDigestWorldAt(t, sub, opts, time.Date(2026, 11, 30, 6, 0, 0, 0, amsterdam))
}

// newDigestWorldAt is newDigestWorld with the clock starting at start.
func newDigestWorldAt(t *testing.T, sub string, opts fakesmtp.Options, start time.Time) *digestWorld {
	t.Helper()
	w := &digestWorld{sub: sub, email: sub + "@example.org"}
	w.smtpd = fakesmtp.Start(t, opts)
	w.loc, _ = time.LoadLocation("Europe/Amsterdam")
	w.clk = &clock{t: start}
	env := testapp.Env(t)
	env["SMTP_URL"] = w.smtpd.URL()
	env["DIGEST_SCHEDULE_INTERVAL"] = "1s"
	env["MAIL_FROM"] = "followfeed <digest@followfeed.test>"
	w.a = testapp.StartWith(t, env, app.Hooks{Now: w.clk.Now})
	w.c = w.a.Client(t)
	w.reader = testapp.Token(t, sub, w.email) // email_verified: confirmed
	w.svc = testapp.Token(t, "host", "", "papers:write")
	if r := w.c.Do("PUT", "/v1/me/follows/category/cs.LG", w.reader, nil); r.Status != 201 && r.Status != 200 {
		t.Fatalf("follow: %d %s", r.Status, r.Body)
	}
	r := w.c.Do("PATCH", "/v1/me", w.reader, map[string]any{"timezone": "Europe/Amsterdam",
		"digest": map[string]any{"frequency": "daily", "hour": 7}})
	local := start.In(w.loc)
	next := time.Date(local.Year(), local.Month(), local.Day(), 7, 0, 0, 0, w.loc)
	if !next.After(start) {
		next = next.AddDate(0, 0, 1)
	}
	if r.Status != 200 || !strings.Contains(string(r.Body), `"next_at":"`+next.UTC().Format(time.RFC3339)+`"`) {
		t.Fatalf("settings: %d %s, want the next digest at %v", r.Status, r.Body, next)
	}
	db, err := database.Open(context.Background(), w.a.DatabaseURL, database.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	w.db = db
	return w
}

// push adds cs.LG papers (id, title pairs) and waits until they are matched.
func (w *digestWorld) push(t *testing.T, idTitles ...string) {
	t.Helper()
	var items []map[string]any
	for i := 0; i+1 < len(idTitles); i += 2 {
		items = append(items, map[string]any{"arxiv_id": idTitles[i], "title": idTitles[i+1], "primary_category": "cs.LG",
			"categories": []string{"cs.LG"}, "authors": "Ann Author"})
	}
	if r := w.c.Do("POST", "/v1/papers", w.svc, items); r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	w.pushed++
	w.a.Jobs().WaitCompleted(t, w.db.Pool, worker.MatchArgs{}.Kind(), w.pushed)
}

// me is the user's GET /v1/me.
func (w *digestWorld) me(t *testing.T) (m struct {
	Email          string `json:"email"`
	EmailConfirmed bool   `json:"email_confirmed"`
	Suppressed     string `json:"suppressed"`
	Digest         struct {
		Frequency string     `json:"frequency"`
		NextAt    *time.Time `json:"next_at"`
	} `json:"digest"`
}) {
	t.Helper()
	r := w.c.Do("GET", "/v1/me", w.reader, nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/me: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &m)
	return m
}

// ledger counts the user's digest rows by state.
func (w *digestWorld) ledger(t *testing.T) map[string]int {
	t.Helper()
	rows, err := w.db.Pool.Query(context.Background(), `
		SELECT g.state, count(*) FROM digests g JOIN users u ON u.id = g.user_id WHERE u.sub = $1 GROUP BY g.state`, w.sub)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			t.Fatal(err)
		}
		out[state] = n
	}
	return out
}

func (w *digestWorld) nextAt(t *testing.T) *time.Time {
	t.Helper()
	var next *time.Time
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT d.next_at FROM users u LEFT JOIN digest_schedules d ON d.user_id = u.id WHERE u.sub = $1`, w.sub).Scan(&next); err != nil {
		t.Fatal(err)
	}
	return next
}

// digestCLI runs the followfeed binary's digest command against the world's
// database and SMTP server and returns its standard output.
func (w *digestWorld) digestCLI(t *testing.T, args ...string) string {
	t.Helper()
	env := map[string]string{}
	for k, v := range w.a.Env {
		env[k] = v
	}
	env["PUBLIC_URL"] = w.a.URL
	// In-process, with the service's clock: the command schedules by the
	// same "now" as the running service it shares the database with.
	env["LOG_LEVEL"] = "warn"
	var stdout bytes.Buffer
	if err := app.RunWith(context.Background(), append([]string{"digest"}, args...), func(k string) string { return env[k] }, &stdout, app.Hooks{Now: w.clk.Now}); err != nil {
		t.Fatalf("followfeed digest %v: %v\noutput:\n%s", args, err, stdout.String())
	}
	return stdout.String()
}

// TestDigestCommandSaysWhatTheBudgetListed: a digest whose budget lists
// fewer papers than it covers says both, and what became of the rest.
func TestDigestCommandSaysWhatTheBudgetListed(t *testing.T) {
	t.Parallel()
	w := newDigestWorld(t, "cli-budget", fakesmtp.Options{})
	if r := w.c.Do("PATCH", "/v1/me", w.reader, map[string]any{"digest": map[string]any{"order": "best", "max_papers": 1}}); r.Status != 200 {
		t.Fatalf("budget: %d %s", r.Status, r.Body)
	}
	w.push(t, "2301.00061", "First budgeted paper", "2301.00062", "Second budgeted paper", "2301.00063", "Third budgeted paper")
	out := w.digestCLI(t, "--user", w.sub, "--now")
	if !regexp.MustCompile(`^digest \d+ \(daily:2026-11-30\): sent 3 papers \(1 listed, 2 more counted with a link to the feed\); next digest due `).MatchString(out) {
		t.Errorf("--now with a budget of 1: %q", out)
	}
}

// TestDigestCommandSendsOncePerPeriod: `followfeed digest --user SUB` only
// prints the next digest; `--now` sends it, once however often it is run,
// as the digest of the period the scheduler would send; the scheduler then
// sends nothing more for that period, and the next day's digest holds only
// what came later.
func TestDigestCommandSendsOncePerPeriod(t *testing.T) {
	t.Parallel()
	w := newDigestWorld(t, "cli-reader", fakesmtp.Options{})
	w.push(t, "2301.00011", "First paper for the command", "2301.00012", "Second paper for the command")

	// Without --now: printed, nothing sent, nothing reserved.
	out := w.digestCLI(t, "--user", w.sub)
	for _, want := range []string{"Subject: 2 new papers: cs.LG\n", "First paper for the command", "Second paper for the command",
		"Because you follow cs.LG", "https://arxiv.org/abs/2301.00011", "Unsubscribe:\n" + w.a.URL + "/unsubscribe/ffl_"} {
		if !strings.Contains(out, want) {
			t.Errorf("digest without --now does not print %q:\n%s", want, out)
		}
	}
	mailed(t, w.a, w.db)
	if n := len(w.smtpd.Messages()); n != 0 {
		t.Fatalf("digest without --now sent %d mails", n)
	}
	if l := w.ledger(t); len(l) != 0 {
		t.Fatalf("digest without --now wrote the ledger: %v", l)
	}

	// --now twice: one mail, one ledger row, the period of today's
	// scheduled digest.
	first := w.digestCLI(t, "--user", w.sub, "--now")
	if !regexp.MustCompile(`^digest \d+ \(daily:2026-11-30\): sent 2 papers; next digest due Tue 1 Dec 2026 07:00 CET\n$`).MatchString(first) {
		t.Fatalf("first --now: %q, want today's digest sent with 2 papers", first)
	}
	msgs := w.smtpd.WaitMessages(t, 1, 10*time.Second)
	if second := w.digestCLI(t, "--user", w.sub, "--now"); !strings.HasPrefix(second, "nothing new since the last digest: nothing sent") ||
		!strings.Contains(second, "next digest due Tue 1 Dec 2026 07:00 CET") {
		t.Errorf("second --now: %q, want nothing new, and tomorrow's digest due", second)
	}
	mailed(t, w.a, w.db)
	if n := len(w.smtpd.Messages()); n != 1 {
		t.Fatalf("%d mails after two --now runs, want 1", n)
	}
	msg, body := parts(t, msgs[0].Data)
	if got := msg.Header.Get("Subject"); got != "2 new papers: cs.LG" {
		t.Errorf("subject %q", got)
	}
	if id := msg.Header.Get("Message-Id"); !strings.Contains(id, "daily.2026-11-30@") {
		t.Errorf("Message-Id %q: not the digest of the scheduled period daily:2026-11-30", id)
	}
	if msgs[0].To[0] != w.email || !strings.Contains(body["text/plain"], "First paper for the command") {
		t.Errorf("mail to %v:\n%s", msgs[0].To, body["text/plain"])
	}
	if l := w.ledger(t); l["sent"] != 1 || len(l) != 1 {
		t.Fatalf("ledger after --now: %v, want one sent row", l)
	}

	// 07:00: the scheduler reaches today's period, which was sent already.
	w.clk.Set(time.Date(2026, 11, 30, 7, 0, 30, 0, w.loc))
	waitUntil(t, "the scheduler to move on to tomorrow", func() bool {
		next := w.nextAt(t)
		return next != nil && next.Equal(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC))
	})
	settled(t, w.a, w.db)
	if n := len(w.smtpd.Messages()); n != 1 {
		t.Fatalf("%d mails after today's scheduled time, want still 1", n)
	}
	if l := w.ledger(t); l["sent"] != 1 || len(l) != 1 {
		t.Fatalf("ledger after today's scheduled time: %v, want still one sent row", l)
	}

	// Tomorrow's digest holds only the paper that came later.
	w.push(t, "2301.00013", "Third paper after the command")
	w.clk.Set(time.Date(2026, 12, 1, 7, 0, 30, 0, w.loc))
	msgs = w.smtpd.WaitMessages(t, 2, 20*time.Second)
	msg, body = parts(t, msgs[1].Data)
	if got := msg.Header.Get("Subject"); got != "1 new paper: cs.LG" {
		t.Errorf("next day's subject %q, want %q", got, "1 new paper: cs.LG")
	}
	if id := msg.Header.Get("Message-Id"); !strings.Contains(id, "daily.2026-12-01@") {
		t.Errorf("next day's Message-Id %q", id)
	}
	for ct, text := range body {
		if !strings.Contains(text, "Third paper after the command") {
			t.Errorf("next day's %s part lacks the new paper", ct)
		}
		for _, old := range []string{"First paper for the command", "Second paper for the command"} {
			if strings.Contains(text, old) {
				t.Errorf("next day's %s part repeats %q", ct, old)
			}
		}
	}
	settled(t, w.a, w.db)
	if n := len(w.smtpd.Messages()); n != 2 {
		t.Errorf("%d mails in all, want 2", n)
	}
}

// TestBouncedAddressResumesAfterReconfirmation: a hard bounce (550 to RCPT)
// suppresses the address: the digest fails without retry, the next day's
// digest is not sent and even an operator's `digest --now` is skipped, and
// a verified token does not lift it. Saving the address again on the
// settings page sends a confirmation mail; its link's GET changes nothing,
// its POST lifts the suppression, and the following digest is sent.
func TestBouncedAddressResumesAfterReconfirmation(t *testing.T) {
	t.Parallel()
	w := newDigestWorld(t, "bouncer", fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageRcpt && n == 1 {
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such mailbox"}
		}
		return nil
	}})
	w.push(t, "2301.00021", "Paper of the bounced digest")

	// 07:00: the digest bounces.
	w.clk.Set(time.Date(2026, 11, 30, 7, 0, 30, 0, w.loc))
	waitUntil(t, "the bounced digest in the ledger", func() bool { return w.ledger(t)["failed"] == 1 })
	var reply string
	w.db.Pool.QueryRow(context.Background(), `SELECT coalesce(smtp_reply, '') FROM digests WHERE state = 'failed'`).Scan(&reply)
	if !strings.Contains(reply, "550") {
		t.Errorf("ledger reply %q lacks the 550", reply)
	}
	if m := w.me(t); m.Suppressed != "bounce" || m.Digest.NextAt != nil {
		t.Fatalf("after the bounce: %+v, want suppressed (bounce) with no digest scheduled", m)
	}

	// The next day: nothing, neither scheduled nor forced by hand.
	w.push(t, "2301.00022", "Paper after the bounce")
	w.clk.Set(time.Date(2026, 12, 1, 7, 0, 30, 0, w.loc))
	settled(t, w.a, w.db)
	if n := len(w.smtpd.Messages()); n != 0 {
		t.Fatalf("%d mails to a suppressed address", n)
	}
	if out := w.digestCLI(t, "--user", w.sub, "--now"); !strings.HasPrefix(out, "not sent: the address is suppressed") || !strings.Contains(out, "1 paper waiting") {
		t.Errorf("digest --now to a suppressed address: %q, want not sent with the reason and 1 paper waiting", out)
	}
	if l := w.ledger(t); l["sent"] != 0 || l["failed"] != 1 {
		t.Fatalf("ledger while suppressed: %v", l)
	}
	if n := len(w.smtpd.Messages()); n != 0 {
		t.Fatalf("%d mails to a suppressed address", n)
	}

	// Saving the address again on the settings page asks for confirmation.
	b := testapp.FormClient(t)
	form := func(method, u string, f url.Values) (*http.Response, string) { return testapp.Form(t, b, method, u, f) }
	if resp, _ := form("POST", w.a.URL+"/login", url.Values{"token": {w.reader}}); resp.StatusCode != 303 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	resp, page := form("GET", w.a.URL+"/settings/email", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "Paused: this address bounced") {
		t.Fatalf("settings page: %d\n%s", resp.StatusCode, page)
	}
	csrf := testapp.CSRF.FindStringSubmatch(page)
	if csrf == nil {
		t.Fatal("no CSRF token on the settings page")
	}
	resp, _ = form("POST", w.a.URL+"/settings/email", url.Values{"csrf": {csrf[1]}, "email": {w.email},
		"timezone": {"Europe/Amsterdam"}, "frequency": {"daily"}, "hour": {"7"}, "weekday": {"monday"}})
	if resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "/settings/email?done=confirm") {
		t.Fatalf("saving the address again: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The user's verified token does not count as confirming a
	// suppressed address: only the link does.
	if m := w.me(t); m.EmailConfirmed || m.Suppressed != "bounce" {
		t.Fatalf("after asking to reconfirm: %+v, want unconfirmed and still suppressed", m)
	}
	msgs := w.smtpd.WaitMessages(t, 1, 20*time.Second)
	msg, body := parts(t, msgs[0].Data)
	if msgs[0].To[0] != w.email || msg.Header.Get("Subject") != "Confirm your followfeed subscription" {
		t.Fatalf("first mail after the bounce: to %v, subject %q", msgs[0].To, msg.Header.Get("Subject"))
	}
	link := regexp.MustCompile(regexp.QuoteMeta(w.a.URL) + `/confirm/\S+`).FindString(strings.ReplaceAll(body["text/plain"], "\r\n", "\n"))
	if link == "" {
		t.Fatalf("no confirmation link in:\n%s", body["text/plain"])
	}
	if resp, page := form("GET", link, nil); resp.StatusCode != 200 || !strings.Contains(page, w.email) {
		t.Fatalf("GET confirmation link: %d\n%s", resp.StatusCode, page)
	}
	if m := w.me(t); m.Suppressed != "bounce" || m.EmailConfirmed {
		t.Fatalf("a GET of the confirmation link changed the address: %+v", m)
	}
	if resp, page := form("POST", link, url.Values{}); resp.StatusCode != 200 || !strings.Contains(page, "Address confirmed") {
		t.Fatalf("POST confirmation link: %d\n%s", resp.StatusCode, page)
	}
	m := w.me(t)
	if !m.EmailConfirmed || m.Suppressed != "" || m.Digest.Frequency != "daily" || m.Digest.NextAt == nil ||
		!m.Digest.NextAt.Equal(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("after confirming: %+v, want confirmed, not suppressed, next digest 2026-12-02T06:00Z", m)
	}

	// The following digest is sent.
	w.clk.Set(time.Date(2026, 12, 2, 7, 0, 30, 0, w.loc))
	msgs = w.smtpd.WaitMessages(t, 2, 20*time.Second)
	msg, body = parts(t, msgs[1].Data)
	if msgs[1].To[0] != w.email || !strings.Contains(msg.Header.Get("Message-Id"), "daily.2026-12-02@") ||
		!strings.Contains(body["text/plain"], "Paper after the bounce") {
		t.Fatalf("digest after reconfirming: to %v, Message-Id %q:\n%s", msgs[1].To, msg.Header.Get("Message-Id"), body["text/plain"])
	}
	// The ledger records "sent" just after the server's reply.
	waitUntil(t, "the digest recorded as sent", func() bool { return w.ledger(t)["sent"] == 1 })
}

// TestDigestNowNeverRepeatsNorLoses: `digest --now` sends whenever there is
// something new and only then, never what the user's settings rule out,
// and says what happened each time. A daily user's digest sent early
// moves the schedule on, so the next --now sends what came since, and
// moves it at most one period (later ones are by-hand digests); a forced
// empty digest does not hide a later paper; a user with digests off gets
// nothing and is told what waits.
func TestDigestNowNeverRepeatsNorLoses(t *testing.T) {
	t.Parallel()
	w := newDigestWorld(t, "now-reader", fakesmtp.Options{})
	now := func(args ...string) string {
		t.Helper()
		return w.digestCLI(t, append([]string{"--user", w.sub, "--now"}, args...)...)
	}
	mails := 0
	// has may list alternatives separated by "|". A forced empty digest
	// says "No new papers", or, when its window held no arXiv announcement
	// (by the real clock against the test's), the calendar's line; it is
	// sent either way.
	const emptyMail = "No new papers|" + notify.NoAnnouncementLine
	wantMail := func(has, hasNot string) {
		t.Helper()
		mails++
		msgs := w.smtpd.WaitMessages(t, mails, 10*time.Second)
		_, body := parts(t, msgs[mails-1].Data)
		found := false
		for _, h := range strings.Split(has, "|") {
			found = found || strings.Contains(body["text/plain"], h)
		}
		if !found || (hasNot != "" && strings.Contains(body["text/plain"], hasNot)) {
			t.Errorf("mail %d lacks %q or repeats %q:\n%s", mails, has, hasNot, body["text/plain"])
		}
	}
	noMail := func(when string) {
		t.Helper()
		mailed(t, w.a, w.db)
		if n := len(w.smtpd.Messages()); n != mails {
			t.Fatalf("%s: %d mails, want %d", when, n, mails)
		}
	}

	if out := now(); !strings.HasPrefix(out, "nothing new since the last digest") {
		t.Errorf("--now with nothing new: %q", out)
	}
	noMail("--now with nothing new")
	if l := w.ledger(t); len(l) != 0 {
		t.Errorf("--now with nothing new wrote the ledger: %v", l)
	}

	w.push(t, "2301.00031", "Paper A for now")
	if out := now(); !strings.HasPrefix(out, "digest ") || !strings.Contains(out, "(daily:2026-11-30): sent 1 paper;") {
		t.Errorf("--now with paper A: %q", out)
	}
	wantMail("Paper A for now", "")

	// The same day, a second paper: tomorrow's digest is not being
	// gathered yet (its period starts at 07:00 today), so this is a
	// by-hand digest and the schedule stays.
	w.push(t, "2301.00032", "Paper B for now")
	if out := w.digestCLI(t, "--user", w.sub); !strings.Contains(out, "Paper B for now") || strings.Contains(out, "Paper A for now") {
		t.Errorf("the printed next digest: %q", out)
	}
	if out := now(); !strings.Contains(out, "(manual:") || !strings.Contains(out, "sent 1 paper; next digest due Tue 1 Dec 2026 07:00 CET") {
		t.Errorf("second --now with paper B waiting: %q", out)
	}
	wantMail("Paper B for now", "Paper A for now")

	// A third: by hand again; the schedule never moves more than the one
	// period being gathered, however often --now runs.
	w.push(t, "2301.00035", "Paper B2 for now")
	if out := now(); !strings.Contains(out, "(manual:") || !strings.Contains(out, "sent 1 paper; next digest due Tue 1 Dec 2026 07:00 CET") {
		t.Errorf("third --now with paper B2 waiting: %q", out)
	}
	wantMail("Paper B2 for now", "Paper B for now")
	if next := w.nextAt(t); next == nil || !next.Equal(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("after by-hand digests the next one is due %v, want 2026-12-01T06:00Z", next)
	}

	// Nothing new: nothing, unless forced.
	if out := now(); !strings.HasPrefix(out, "nothing new") {
		t.Errorf("--now after B: %q", out)
	}
	noMail("--now with nothing new after B")
	if out := now("--force"); !strings.Contains(out, ": sent 0 papers;") {
		t.Errorf("--now --force: %q", out)
	}
	wantMail(emptyMail, "Paper B2 for now")

	// Instant alerts: by-hand digests are named after their window, so the
	// same empty window forced again is not sent twice, and a paper after
	// a forced empty one is sent, and only once.
	if r := w.c.Do("PATCH", "/v1/me", w.reader, map[string]any{"digest": map[string]any{"frequency": "instant"}}); r.Status != 200 {
		t.Fatalf("instant: %d %s", r.Status, r.Body)
	}
	if out := now("--force"); !strings.Contains(out, "already sent") {
		t.Errorf("--now --force, instant, the same empty window: %q", out)
	}
	noMail("--now --force of the same empty window")
	// The instant alert that paper C schedules is due 10 minutes after the
	// service's clock; River runs jobs by the real one, so the clock moves
	// two days past it: the alert waits and --now is first.
	w.clk.Set(time.Now().Add(48 * time.Hour))
	w.push(t, "2301.00033", "Paper C for now")
	if out := now(); !regexp.MustCompile(`^digest \d+ \(manual:\d+-\d+\): sent 1 paper\n$`).MatchString(out) {
		t.Errorf("--now with paper C, instant: %q", out)
	}
	wantMail("Paper C for now", "Paper B for now")
	if out := now(); !strings.HasPrefix(out, "nothing new") {
		t.Errorf("--now again, instant: %q", out)
	}
	noMail("--now again, instant")

	// Digests off: nothing, and the operator is told what waits.
	if r := w.c.Do("PATCH", "/v1/me", w.reader, map[string]any{"digest": map[string]any{"frequency": "off"}}); r.Status != 200 {
		t.Fatalf("off: %d %s", r.Status, r.Body)
	}
	w.push(t, "2301.00034", "Paper D for now")
	if out := now("--force"); out != "not sent: digests are off for this user; 1 paper waiting\n" {
		t.Errorf("--now --force with digests off: %q", out)
	}
	noMail("--now with digests off")
}

// TestDigestNowRetriesATemporaryFailure: `digest --now` whose digest meets
// a 421 at the end of DATA says it will be retried, and when; the running
// service's mail queue then sends that digest, once, while a second
// `--now` finds nothing new to send.
func TestDigestNowRetriesATemporaryFailure(t *testing.T) {
	t.Parallel()
	amsterdam, _ := time.LoadLocation("Europe/Amsterdam")
	// The retry is due a minute after the service's clock; River runs it
	// by the real one.
	start := time.Now().In(amsterdam).Add(-notify.RetryDelay).Truncate(time.Second)
	w := newDigestWorldAt(t, "retry-reader", fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageData && n == 1 {
			return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
		return nil
	}}, start)
	w.push(t, "2301.00041", "First paper of the retried digest", "2301.00042", "Second paper of the retried digest")
	const layout = "Mon 2 Jan 2006 15:04 MST"
	// The report is the last line; the failure's WARN log lines (LOG_LEVEL
	// warn) come before it.
	out := w.digestCLI(t, "--user", w.sub, "--now")
	if i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n"); i >= 0 {
		if !strings.Contains(out[:i], `msg="digest will be retried"`) {
			t.Errorf("no WARN line says the digest will be retried:\n%s", out[:i])
		}
		out = out[i+1:]
	}
	want := regexp.MustCompile(`^digest \d+ \(daily:\d{4}-\d\d-\d\d\): pending \(2 papers\): mail: temporary delivery failure \(SMTP 421\): .*; ` +
		`will be retried at ` + regexp.QuoteMeta(start.Add(notify.RetryDelay).Format(layout)) +
		` by a send job in the mail queue \(the same digest, never a second one\); next digest due [^;]+\n$`)
	if !want.MatchString(out) {
		t.Fatalf("--now meeting a 421: %q, want it pending, to be retried at %s", out, start.Add(notify.RetryDelay).Format(layout))
	}
	if again := w.digestCLI(t, "--user", w.sub, "--now"); !strings.HasPrefix(again, "nothing new since the last digest") {
		t.Errorf("a second --now: %q, want nothing new", again)
	}
	msgs := w.smtpd.WaitMessages(t, 1, 20*time.Second)
	waitUntil(t, "the retried digest recorded as sent", func() bool { return w.ledger(t)["sent"] == 1 })
	_, body := parts(t, msgs[0].Data)
	if !strings.Contains(body["text/plain"], "First paper of the retried digest") || !strings.Contains(body["text/plain"], "Second paper of the retried digest") {
		t.Errorf("the retried digest:\n%s", body["text/plain"])
	}
	// Nothing signals a second message that is not sent: a duplicate would
	// come from the send job's retry or a scheduler run, both well within
	// a second of the first on this test's intervals.
	time.Sleep(time.Second)
	if n := len(w.smtpd.Messages()); n != 1 {
		t.Errorf("%d mails, want 1", n)
	}
	if l := w.ledger(t); l["sent"] != 1 || len(l) != 1 {
		t.Errorf("ledger %v, want one sent row", l)
	}
}
