package notify_test

import (
	"net/http/httptest"
	netmail "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fakesmtp "followfeed/internal/fake/smtp"

	"followfeed/arxivcal"
	"followfeed/harvest"
	"followfeed/internal/fake/oaipmh"
	"followfeed/mail"
	"followfeed/notify"
	"followfeed/worker"
	stdmail "net/mail"
)

// withCalendar gives e's digester arXiv's calendar and the harvest's
// health (as the service is wired), writing mail to dir.
func withCalendar(t *testing.T, e *env, dir string, health notify.HarvestHealth) {
	t.Helper()
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := netmail.Parse("https://followfeed.test")
	e.d = notify.NewDigester(notify.DigesterConfig{DB: e.db, Matcher: e.matcher, Sender: mail.NewDirSender(dir),
		Enqueuer: worker.NewEnqueuer(ins), Links: noLinks{}, Addresses: e.addrs,
		From: &stdmail.Address{Name: "followfeed", Address: "digest@followfeed.test"}, BaseURL: base, Now: e.clk.Now,
		Calendar: arxivcal.New(nil), Health: health})
}

// sendDue schedules at now and sends every digest queued, returning each
// user's newest ledger row (state, reply).
func (e *env) sendDue(now time.Time, users ...int64) map[int64][2]string {
	e.clk.Set(now)
	for _, id := range e.scheduled() {
		if _, err := e.d.Send(e.ctx, id); err != nil {
			e.t.Fatal(err)
		}
	}
	out := map[int64][2]string{}
	for _, u := range users {
		var st, reply string
		e.db.Pool.QueryRow(e.ctx, `SELECT state, coalesce(smtp_reply, '') FROM digests WHERE user_id = $1 ORDER BY id DESC LIMIT 1`, u).Scan(&st, &reply)
		out[u] = [2]string{st, reply}
	}
	return out
}

// mails returns the .eml files in dir, oldest name first.
func mails(t *testing.T, dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	slices.Sort(files)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// A digest whose window holds no arXiv announcement (Friday morning to
// Saturday morning) says so instead of "No new papers", and is skipped for
// users who keep the default; the Monday digest (Sunday evening's
// announcement) is an ordinary empty one.
func TestDigestWithoutAnnouncementSaysSoOrIsSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	withCalendar(t, e, dir, nil)
	e.clk.Set(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)) // Friday
	yes, no := true, false
	skipper := e.reader("skipper", notify.Daily, "UTC", 6, "category/cs.LG")
	reader := e.reader("reader", notify.Daily, "UTC", 6, "category/cs.LG")
	e.prefs.Update(e.ctx, skipper, notify.ProfilePatch{Digest: &notify.DigestPatch{SendEmpty: &yes}})
	e.prefs.Update(e.ctx, reader, notify.ProfilePatch{Digest: &notify.DigestPatch{SendEmpty: &yes, SkipNoAnnouncement: &no}})
	if p, _ := e.prefs.Get(e.ctx, skipper); !p.Digest.SkipNoAnnouncement {
		t.Fatal("skipping digests without an announcement is not the default")
	}

	got := e.sendDue(time.Date(2026, 12, 5, 6, 1, 0, 0, time.UTC), skipper, reader) // Saturday
	if got[skipper][0] != "skipped" || !strings.Contains(got[skipper][1], notify.NoAnnouncementLine) || got[reader][0] != "sent" {
		t.Fatalf("Saturday: skipper %v, user %v", got[skipper], got[reader])
	}
	m := mails(t, dir)
	if len(m) != 1 || !strings.Contains(m[0], "Subject: arXiv made no announcement since your last digest") ||
		strings.Contains(m[0], "No new papers") || !strings.Contains(m[0], "Sunday to Thursday evenings") {
		t.Fatalf("Saturday's mail:\n%s", strings.Join(m, "\n----\n"))
	}
	// Sunday: Saturday evening has no announcement either.
	if got := e.sendDue(time.Date(2026, 12, 6, 6, 1, 0, 0, time.UTC), skipper, reader); got[skipper][0] != "skipped" || got[reader][0] != "sent" {
		t.Fatalf("Sunday: %v", got)
	}
	// Monday: arXiv announced on Sunday at 20:00 US Eastern (01:00 UTC).
	if got := e.sendDue(time.Date(2026, 12, 7, 6, 1, 0, 0, time.UTC), skipper, reader); got[skipper][0] != "sent" || got[reader][0] != "sent" {
		t.Fatalf("Monday: %v", got)
	}
	m = mails(t, dir)
	var monday []string
	for _, s := range m {
		if strings.Contains(s, "Monday 7 December") {
			monday = append(monday, s)
		}
	}
	if len(monday) != 2 || !strings.Contains(monday[0], "Subject: No new papers since your last digest") {
		t.Fatalf("Monday's mails (%d):\n%s", len(monday), strings.Join(monday, "\n----\n"))
	}
	// The preview (CLI, settings page) says the same.
	e.clk.Set(time.Date(2026, 12, 8, 0, 30, 0, 0, time.UTC)) // before Monday evening's announcement (01:00 UTC)
	c, err := e.d.Preview(e.ctx, reader)
	if err != nil || !c.NoAnnouncement || notify.DigestSubject(c) != notify.NoAnnouncementLine {
		t.Fatalf("preview: %+v %v", c, err)
	}
}

// A digest sent while the harvest is failing says so and that the papers
// will follow; once the harvest recovers, the next digest has them.
func TestDigestWhileTheHarvestIsBehindAndThePapersFollow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	recs := oaipmh.MakeRecords("2611", 0, 3, []string{"cs.LG"}, "2026-11-30")
	repo := oaipmh.New(func() []oaipmh.Record { return recs }, 10)
	repo.Plan(0, oaipmh.Fault500)
	ts := httptest.NewServer(repo)
	t.Cleanup(ts.Close)
	client := harvest.NewOAIClient(harvest.OAIConfig{BaseURL: ts.URL, Format: harvest.OAIFormatArXivRaw, PageDelay: -1, MaxRetries: -1})
	h := harvest.NewHarvester(e.db, client, e.in, []string{"cs"}, nil, e.clk.Now)
	withCalendar(t, e, dir, harvest.NewHealth(e.db, []string{"cs"}, nil, e.clk.Now))
	yes := true
	e.clk.Set(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)) // Monday
	uid := e.reader("patient", notify.Daily, "UTC", 6, "category/cs.LG")
	e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{SendEmpty: &yes}})

	e.clk.Set(time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)) // Tuesday, after Monday evening's announcement
	if _, err := h.RunOnce(e.ctx); err == nil {
		t.Fatal("the harvest succeeded against an HTTP 500")
	}
	if got := e.sendDue(time.Date(2026, 12, 1, 6, 1, 0, 0, time.UTC), uid); got[uid][0] != "sent" {
		t.Fatalf("Tuesday's digest: %v", got)
	}
	m := mails(t, dir)
	if len(m) != 1 || !strings.Contains(m[0], "Subject: No new papers yet: the arXiv harvest is behind") ||
		!strings.Contains(m[0], "The arXiv harvest is failing at the moment; papers announced meanwhile will follow in your next digest.") {
		t.Fatalf("Tuesday's mail:\n%s", strings.Join(m, "\n----\n"))
	}
	// The harvest recovers; the papers reach their followers.
	e.clk.Set(time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC))
	if _, err := h.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	high, err := e.in.HighSeq(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.matcher.RunBatch(e.ctx, 1, high, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.sendDue(time.Date(2026, 12, 2, 6, 1, 0, 0, time.UTC), uid); got[uid][0] != "sent" {
		t.Fatalf("Wednesday's digest: %v", got)
	}
	m = mails(t, dir)
	if len(m) != 2 {
		t.Fatalf("%d mails", len(m))
	}
	wed := m[0]
	if !strings.Contains(wed, "Wednesday 2 December") {
		wed = m[1]
	}
	if !strings.Contains(wed, "Subject: 3 new papers") || strings.Contains(wed, "harvest is") {
		t.Fatalf("Wednesday's mail:\n%s", wed)
	}
	for _, r := range recs {
		if !strings.Contains(wed, r.Title) {
			t.Errorf("Wednesday's digest lacks %s", r.ID)
		}
	}
}
