package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/mail"
	"followfeed/match"
	"followfeed/notify"
	"followfeed/paper"
	"followfeed/worker"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type env struct {
	t        *testing.T
	ctx      context.Context
	db       *database.DB
	in       *catalog.Store
	follows  *follow.Service
	matcher  *match.Service
	prefs    *notify.Preferences
	addrs    *account.Addresses
	confirms *notify.Confirmations
	d        *notify.Digester
	clk      *clock
	smtp     *fakesmtp.Server
	sender   mail.Sender // to the SMTP server (or the directory)
	enq      *worker.Enqueuer
	logs     *logSink // what the digester logged
}

// logSink is a slog.Handler keeping every record, for the tests of what is
// logged.
type logSink struct {
	mu      sync.Mutex
	records []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *logSink) WithGroup(string) slog.Handler            { return s }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r.Clone())
	return nil
}

// lines are the records kept so far, each as its level ("level"), message
// ("msg") and attributes, every value as text.
func (s *logSink) lines() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]string
	for _, r := range s.records {
		m := map[string]string{"level": r.Level.String(), "msg": r.Message}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.Resolve().String()
			return true
		})
		out = append(out, m)
	}
	return out
}

// digestLines are the lines kept so far about the digest id, in order.
func (s *logSink) digestLines(id int64) []map[string]string {
	var out []map[string]string
	for _, l := range s.lines() {
		if l["digest"] == strconv.FormatInt(id, 10) {
			out = append(out, l)
		}
	}
	return out
}

type noLinks struct{}

func (noLinks) FeedURLs(_ context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	for _, id := range ids {
		out[id] = "https://followfeed.test/feeds/fft_x.atom"
	}
	return out, nil
}

// setup builds the digest machinery on a fresh database with a real SMTP
// server (opts: its faults) or, when dir is set, a .eml directory.
func setup(t *testing.T, opts fakesmtp.Options, dir string) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), db: testdb.New(t), clk: &clock{t: time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)}, logs: &logSink{}}
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	enq := worker.NewEnqueuer(ins)
	e.in = catalog.NewStore(e.db, enq)
	e.follows = follow.NewService(e.db)
	e.matcher = match.NewService(e.db)
	base, _ := url.Parse("https://followfeed.test")
	e.addrs = account.NewAddresses(e.db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, enq)
	e.prefs = notify.NewPreferences(e.db, e.addrs, e.clk.Now)
	e.addrs.OnDigests(e.prefs)
	var sender mail.Sender
	if dir != "" {
		sender = mail.NewDirSender(dir)
	} else {
		e.smtp = fakesmtp.Start(t, opts)
		s, err := mail.NewSMTPSender(e.smtp.URL(), mail.SMTPOptions{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		sender = s
	}
	e.sender, e.enq = sender, enq
	e.d = e.digester(sender, noLinks{})
	e.confirms = notify.NewConfirmations(e.addrs, sender, &netmail.Address{Name: "followfeed", Address: "digest@followfeed.test"}, base, e.clk.Now)
	e.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
		return e.d.ScheduleInstant(ctx, tx, res.Users)
	})
	return e
}

// digester is a Digester as setup makes e's, sending through sender and
// linking with links, logging to e.logs. The match job's hook schedules
// instant alerts through e.d, whichever it is.
func (e *env) digester(sender mail.Sender, links notify.Links) *notify.Digester {
	base, _ := url.Parse("https://followfeed.test")
	return notify.NewDigester(notify.DigesterConfig{DB: e.db, Matcher: e.matcher, Sender: sender, Enqueuer: e.enq,
		Links: links, Addresses: e.addrs, Logger: slog.New(e.logs),
		From: &netmail.Address{Name: "followfeed", Address: "digest@followfeed.test"}, BaseURL: base, Now: e.clk.Now})
}

// runMailJobs starts a River client working e's send and instant-alert
// jobs (through e.d) until the test ends, and returns its events,
// subscribed before it started.
func (e *env) runMailJobs() *testjobs.Events {
	e.t.Helper()
	logger := slog.New(slog.DiscardHandler)
	client, err := worker.NewClient(worker.Deps{Pool: e.db.Pool, Logger: logger, Jobs: []worker.Registration{
		worker.Register(&worker.DigestWorker{Digester: e.d, Logger: logger}),
		worker.Register(&worker.InstantWorker{Digester: e.d}),
	}}, worker.Settings{TestOnly: true, FetchPollInterval: 100 * time.Millisecond, SoftStop: time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	events := testjobs.Subscribe(e.t, client)
	if err := client.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := worker.Stop(ctx, client); err != nil {
			e.t.Error(err)
		}
	})
	return events
}

// user creates a user with a confirmed address, follows and settings.
func (e *env) reader(sub string, freq notify.Frequency, tz string, hour int, follows ...string) int64 {
	u, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: sub, Email: sub + "@example.org", EmailVerified: true})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range follows {
		kind, id, _ := strings.Cut(f, "/")
		t, err := follow.ParseTarget(kind, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.follows.Follow(e.ctx, u.ID, t, follow.Options{}); err != nil {
			e.t.Fatal(err)
		}
	}
	f := string(freq)
	if _, err := e.prefs.Update(e.ctx, u.ID, notify.ProfilePatch{Timezone: &tz, Digest: &notify.DigestPatch{Frequency: &f, Hour: &hour}}); err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

// push ingests papers and runs their match job (as the worker would).
func (e *env) push(ps ...paper.Paper) {
	res, err := e.in.Ingest(e.ctx, ps, catalog.SourcePush)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Keys > 0 {
		if _, err := e.matcher.RunBatch(e.ctx, res.FromSeq, res.ToSeq, nil); err != nil {
			e.t.Fatal(err)
		}
	}
}

func testPaper(id, cat string, authorIDs ...string) paper.Paper {
	return paper.Paper{ArxivID: id, Title: "Paper " + id, PrimaryCategory: cat, Categories: []string{cat},
		Authors: []paper.Author{{Name: "Mingzhi Wen", IDs: authorIDs}}}
}

// scheduled runs the scheduler and returns the ids of the digests it queued.
func (e *env) scheduled() []int64 {
	if _, err := e.d.Schedule(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	var ids []int64
	for _, j := range testjobs.List(e.t, e.db.Pool, worker.DigestArgs{}.Kind()) {
		var args worker.DigestArgs
		if err := json.Unmarshal(j.EncodedArgs, &args); err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, args.DigestIDs...)
	}
	return ids
}

// refuseRcpt is an SMTP server that answers every RCPT TO with reply.
func refuseRcpt(reply *smtp.SMTPError) fakesmtp.Options {
	return fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageRcpt {
			return reply
		}
		return nil
	}}
}

func (e *env) state(id int64) (state, reply string) {
	e.db.Pool.QueryRow(e.ctx, `SELECT state, coalesce(smtp_reply, '') FROM digests WHERE id = $1`, id).Scan(&state, &reply)
	return
}

func TestNextOccurrenceAcrossDST(t *testing.T) {
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	for _, tc := range []struct {
		name  string
		start time.Time
	}{
		{"spring forward", time.Date(2026, 3, 26, 12, 0, 0, 0, ams)},
		{"fall back", time.Date(2026, 10, 22, 12, 0, 0, 0, ams)},
	} {
		for _, hour := range []int{2, 7, 23} {
			s := notify.DigestSettings{Frequency: notify.Daily, Hour: hour}
			t0 := tc.start
			seen := map[string]bool{}
			var days []string
			for range 8 {
				next := notify.NextOccurrence(t0, ams, s)
				if !next.After(t0) {
					t.Fatalf("%s hour %d: next %s not after %s", tc.name, hour, next, t0)
				}
				p := notify.Period(notify.Daily, next, ams)
				if seen[p] {
					t.Fatalf("%s hour %d: period %s twice", tc.name, hour, p)
				}
				seen[p] = true
				days = append(days, p)
				t0 = next
			}
			// Eight consecutive local days, none skipped.
			for i := 1; i < len(days); i++ {
				a, _ := time.ParseInLocation("2006-01-02", strings.TrimPrefix(days[i-1], "daily:"), ams)
				b, _ := time.ParseInLocation("2006-01-02", strings.TrimPrefix(days[i], "daily:"), ams)
				if b.Sub(a) < 23*time.Hour || b.Sub(a) > 25*time.Hour {
					t.Errorf("%s hour %d: %s then %s", tc.name, hour, days[i-1], days[i])
				}
			}
		}
	}
	// Weekly: Mondays at 7, across the fall-back weekend.
	s := notify.DigestSettings{Frequency: notify.Weekly, Hour: 7, Weekday: time.Monday}
	next := notify.NextOccurrence(time.Date(2026, 10, 20, 12, 0, 0, 0, ams), ams, s)
	if next.Weekday() != time.Monday || next.In(ams).Hour() != 7 || notify.Period(notify.Weekly, next, ams) != "weekly:2026-W44" {
		t.Errorf("weekly: %s %s", next.In(ams), notify.Period(notify.Weekly, next, ams))
	}
}

// TestSchedulerOneDigestPerLocalDayAcrossDST drives the scheduler through the
// spring-forward night in Amsterdam for a user at 02:00 local (an hour that
// does not exist that night) and checks one digest per local date.
func TestSchedulerOneDigestPerLocalDayAcrossDST(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	e.clk.Set(time.Date(2026, 3, 27, 12, 0, 0, 0, ams))
	e.reader("night-owl", notify.Daily, "Europe/Amsterdam", 2, "category/cs.LG")
	for now := e.clk.Now(); now.Before(time.Date(2026, 4, 1, 0, 0, 0, 0, ams)); now = now.Add(15 * time.Minute) {
		e.clk.Set(now)
		if _, err := e.d.Schedule(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT period FROM digests ORDER BY period`)
	var periods []string
	for rows.Next() {
		var p string
		rows.Scan(&p)
		periods = append(periods, p)
	}
	want := []string{"daily:2026-03-28", "daily:2026-03-29", "daily:2026-03-30", "daily:2026-03-31"}
	if strings.Join(periods, ",") != strings.Join(want, ",") {
		t.Errorf("periods %v, want %v", periods, want)
	}
	// Running the scheduler again changes nothing.
	if n, _ := e.d.Schedule(e.ctx); n != 0 {
		t.Errorf("a second run queued %d", n)
	}
}

func TestEmptyPeriodsSendNothingUnlessAsked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := setup(t, fakesmtp.Options{}, dir)
	quiet := e.reader("quiet", notify.Daily, "UTC", 6, "category/cs.LG")
	loud := e.reader("loud", notify.Daily, "UTC", 6, "category/cs.LG")
	yes := true
	e.prefs.Update(e.ctx, loud, notify.ProfilePatch{Digest: &notify.DigestPatch{SendEmpty: &yes}})
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	if len(ids) != 2 {
		t.Fatalf("%d digests queued", len(ids))
	}
	for _, id := range ids {
		if _, err := e.d.Send(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var quietState, loudState string
	e.db.Pool.QueryRow(e.ctx, `SELECT state FROM digests WHERE user_id = $1`, quiet).Scan(&quietState)
	e.db.Pool.QueryRow(e.ctx, `SELECT state FROM digests WHERE user_id = $1`, loud).Scan(&loudState)
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if quietState != "skipped" || loudState != "sent" || len(files) != 1 {
		t.Fatalf("quiet %s, loud %s, %d files", quietState, loudState, len(files))
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), "Subject: No new papers") {
		t.Errorf("empty digest subject:\n%.400s", b)
	}
}

func TestTransientFailureThenSuccessSendsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageMail && n == 1 {
			return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "try again later"}
		}
		return nil
	}}, "")
	e.reader("r", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	id := e.scheduled()[0]
	out, err := e.d.Send(e.ctx, id)
	if !errors.Is(err, notify.ErrRetry) || out.State != notify.StatePending {
		t.Fatalf("first attempt: %+v %v", out, err)
	}
	if s, reply := e.state(id); s != "pending" || !strings.Contains(reply, "421") {
		t.Fatalf("ledger after 421: %s %q", s, reply)
	}
	out, err = e.d.Send(e.ctx, id) // River's retry
	if err != nil || out.State != notify.StateSent {
		t.Fatalf("retry: %+v %v", out, err)
	}
	if _, err := e.d.Send(e.ctx, id); err != nil { // a duplicate job
		t.Fatal(err)
	}
	if n := len(e.smtp.Messages()); n != 1 {
		t.Fatalf("%d messages delivered, want 1", n)
	}
}

func TestPermanentFailureSuppressesWithoutRetry(t *testing.T) {
	t.Parallel()
	e := setup(t, refuseRcpt(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}), "")
	uid := e.reader("gone", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	id := e.scheduled()[0]
	out, err := e.d.Send(e.ctx, id)
	if err != nil || out.State != notify.StateFailed {
		t.Fatalf("550: %+v %v (want failed, no retry error)", out, err)
	}
	p, _ := e.prefs.Get(e.ctx, uid)
	if p.Suppressed != "bounce" || !p.NextDigestAt.IsZero() {
		t.Errorf("after a bounce: suppressed %q next %v", p.Suppressed, p.NextDigestAt)
	}
	// Nothing more is scheduled for a suppressed address.
	e.clk.Set(time.Date(2026, 12, 1, 6, 1, 0, 0, time.UTC))
	if n, _ := e.d.Schedule(e.ctx); n != 0 {
		t.Errorf("a suppressed address got %d more digests", n)
	}
}

// TestConnectionDroppedAfterDataIsNotResent documents the at-most-once
// policy: once the whole message may have reached the server, the digest is
// recorded "unknown" and never sent again.
func TestConnectionDroppedAfterDataIsNotResent(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{DropAfterData: func(n int) bool { return n == 1 }}, "")
	e.reader("r", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	id := e.scheduled()[0]
	out, err := e.d.Send(e.ctx, id)
	if err != nil || out.State != notify.StateUnknown {
		t.Fatalf("dropped after DATA: %+v %v", out, err)
	}
	if out, err := e.d.Send(e.ctx, id); err != nil || out.State != notify.StateUnknown {
		t.Fatalf("retry: %+v %v", out, err)
	}
	if got := e.smtp.Connections(); got != 1 {
		t.Errorf("%d SMTP connections: the digest was attempted again", got)
	}
}

// TestCancelledMidSendDoesNotDuplicate: the job's context is cancelled while
// the server is still answering the end of DATA (a worker shutting down).
// The send completes and is recorded; the retried job sends nothing.
func TestCancelledMidSendDoesNotDuplicate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The server has read the whole body: the context ends while it takes
	// 700 ms to answer (DropAfterData is asked then, before the Delay).
	e := setup(t, fakesmtp.Options{Delay: 700 * time.Millisecond, DropAfterData: func(int) bool { cancel(); return false }}, "")
	e.reader("r", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	id := e.scheduled()[0]
	out, err := e.d.Send(ctx, id)
	if err != nil || out.State != notify.StateSent {
		t.Fatalf("cancelled mid-send: %+v %v", out, err)
	}
	if out, _ := e.d.Send(e.ctx, id); out.State != notify.StateSent {
		t.Fatalf("retry: %+v", out)
	}
	if n := len(e.smtp.Messages()); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// TestCrashWhileSendingIsNotResent: a row left "sending" by a killed process
// is recorded unknown by the retry, which sends nothing.
func TestCrashWhileSendingIsNotResent(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	e.reader("r", notify.Daily, "UTC", 6, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	id := e.scheduled()[0]
	e.db.Pool.Exec(e.ctx, `UPDATE digests SET state = 'sending', from_seq = 0, to_seq = 1 WHERE id = $1`, id)
	out, err := e.d.Send(e.ctx, id)
	if err != nil || out.State != notify.StateUnknown || len(e.smtp.Messages()) != 0 {
		t.Fatalf("after a crash: %+v %v, %d messages", out, err, len(e.smtp.Messages()))
	}
}

// TestDigestContentGroupsAndCaps: each paper once, in the group of its most
// specific reason, with every reason; at most 20 per group, 100 in all.
func TestDigestContentGroupsAndCaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := setup(t, fakesmtp.Options{}, dir)
	uid := e.reader("busy", notify.Daily, "UTC", 6, "category/cs.LG", "researcher/openalex:A5023888391", "category/cs")
	var batch []paper.Paper
	batch = append(batch, testPaper("2301.00001", "cs.LG", "openalex:A5023888391")) // three reasons
	for i := 2; i <= 131; i++ {
		batch = append(batch, testPaper(fmt.Sprintf("2301.%05d", i), []string{"cs.LG", "cs.AI", "cs.CV", "cs.CL", "cs.RO"}[i%5]))
	}
	e.push(batch...)
	c, err := e.d.Preview(e.ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 131 {
		t.Fatalf("total %d", c.Total)
	}
	shown := 0
	for _, g := range c.Groups {
		if len(g.Papers) > notify.MaxPerGroup {
			t.Errorf("group %s has %d papers", g.Name, len(g.Papers))
		}
		shown += len(g.Papers)
	}
	if shown > notify.MaxPerDigest || shown+c.Omitted != 131 {
		t.Errorf("shown %d + omitted %d != 131", shown, c.Omitted)
	}
	first := c.Groups[0]
	if first.Name != "Mingzhi Wen" || len(first.Papers) == 0 || strings.Join(first.Papers[0].Reasons, " · ") != "cs.LG · Mingzhi Wen · Computer Science (cs.*)" {
		t.Errorf("first group %q: %+v", first.Name, first.Papers)
	}
	count := 0
	for _, g := range c.Groups {
		for _, p := range g.Papers {
			if p.Title == "Paper 2301.00001" {
				count++
			}
		}
	}
	if count != 1 {
		t.Errorf("the three-reason paper appears %d times", count)
	}
	subject := notify.DigestSubject(c)
	if !strings.HasPrefix(subject, "131 new papers: Mingzhi Wen, cs.LG") {
		t.Errorf("subject %q", subject)
	}
}

// TestInstantAlertsBatchABurst: two match batches within the delay become
// one alert with both papers.
func TestInstantAlertsBatchABurst(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	e.push(testPaper("2301.00002", "cs.LG"))
	if jobs := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind(), rivertype.JobStateScheduled); jobs != 1 {
		t.Fatalf("%d instant jobs for a burst, want 1", jobs)
	}
	if err := e.d.SendInstant(e.ctx, uid); err != nil {
		t.Fatal(err)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), "Paper 2301.00001") || !strings.Contains(string(msgs[0].Data), "Paper 2301.00002") {
		t.Fatalf("%d alerts", len(msgs))
	}
	// After the alert, the next match starts a new one.
	e.push(testPaper("2301.00003", "cs.LG"))
	if jobs := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind()); jobs != 2 {
		t.Errorf("%d instant jobs after a later match, want 2", jobs)
	}
	if err := e.d.SendInstant(e.ctx, uid); err != nil { // the old job run twice: nothing new
		t.Fatal(err)
	}
	if err := e.d.SendInstant(e.ctx, uid); err != nil {
		t.Fatal(err)
	}
	if n := len(e.smtp.Messages()); n != 2 {
		t.Errorf("%d alerts in all, want 2", n)
	}
}

// TestInstantAlertsOneJobForManyUsers: the match job queues one job for
// the alerts of several users; it sends each user's alert once, and a
// retry of it (or a late duplicate) sends nothing more and nothing early.
func TestInstantAlertsOneJobForManyUsers(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	a := e.reader("a", notify.Instant, "UTC", 7, "category/cs.LG")
	b := e.reader("b", notify.Instant, "UTC", 7, "category/cs.LG")
	daily := e.reader("daily", notify.Daily, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	if jobs := testjobs.Count(t, e.db.Pool, worker.InstantArgs{}.Kind(), rivertype.JobStateScheduled); jobs != 1 {
		t.Fatalf("%d instant jobs for two users, want 1", jobs)
	}
	outs, err := e.d.SendInstants(e.ctx, []int64{a, b, daily})
	if err != nil || len(outs) != 2 {
		t.Fatalf("outcomes %+v, %v: want two", outs, err)
	}
	if n := len(e.smtp.Messages()); n != 2 {
		t.Fatalf("%d alerts, want 2", n)
	}
	if outs, err := e.d.SendInstants(e.ctx, []int64{a, b}); err != nil || len(outs) != 0 || len(e.smtp.Messages()) != 2 {
		t.Errorf("the job again: outcomes %+v, %v, %d mails in all (want none more)", outs, err, len(e.smtp.Messages()))
	}
}

// TestDoubleOptIn: a new address is unconfirmed and gets no digest until its
// confirmation link is used; confirming lifts a suppression.
func TestDoubleOptIn(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	uid := e.reader("mover", notify.Daily, "UTC", 6, "category/cs.LG")
	addr := "new@example.org"
	p, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Email: &addr})
	if err != nil || p.EmailConfirmed || !p.NextDigestAt.IsZero() {
		t.Fatalf("new address: %+v %v", p, err)
	}
	if jobs := testjobs.Count(t, e.db.Pool, worker.ConfirmArgs{}.Kind()); jobs != 1 {
		t.Fatalf("%d confirmation jobs", jobs)
	}
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	if n, _ := e.d.Schedule(e.ctx); n != 0 {
		t.Fatalf("an unconfirmed address got %d digests", n)
	}
	if err := e.confirms.SendConfirmation(e.ctx, uid, addr); err != nil {
		t.Fatal(err)
	}
	msgs := e.smtp.Messages()
	if len(msgs) != 1 || msgs[0].To[0] != addr {
		t.Fatalf("confirmation mail: %d", len(msgs))
	}
	body := string(msgs[0].Data)
	i := strings.Index(body, "https://followfeed.test/confirm/")
	if i < 0 {
		t.Fatalf("no confirmation link in:\n%s", body)
	}
	link := body[i:]
	link = link[:strings.IndexAny(link, " \r\n\"<")]
	tok := strings.TrimPrefix(link, "https://followfeed.test/confirm/")
	if _, err := e.addrs.Confirm(e.ctx, "ffl_forged.AAAA"); !errors.Is(err, auth.ErrBadLink) {
		t.Errorf("forged link: %v", err)
	}
	got, err := e.addrs.Confirm(e.ctx, tok)
	if err != nil || got != addr {
		t.Fatalf("confirm: %q %v", got, err)
	}
	p, _ = e.prefs.Get(e.ctx, uid)
	if !p.EmailConfirmed || p.NextDigestAt.IsZero() {
		t.Errorf("after confirming: %+v", p)
	}
	// Changing the address again invalidates the old link.
	other := "third@example.org"
	e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Email: &other})
	if _, err := e.addrs.Confirm(e.ctx, tok); !errors.Is(err, auth.ErrBadLink) {
		t.Errorf("an old confirmation link still works: %v", err)
	}
}

func TestPreferenceValidation(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, t.TempDir())
	uid := e.reader("picky", notify.Off, "UTC", 7)
	bad := func(p notify.ProfilePatch, field string) {
		t.Helper()
		_, err := e.prefs.Update(e.ctx, uid, p)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("want an error naming %s, got %v", field, err)
		}
	}
	s := func(v string) *string { return &v }
	i := func(v int) *int { return &v }
	bad(notify.ProfilePatch{Timezone: s("Mars/Olympus_Mons")}, "timezone")
	bad(notify.ProfilePatch{Digest: &notify.DigestPatch{Frequency: s("hourly")}}, "digest.frequency")
	bad(notify.ProfilePatch{Digest: &notify.DigestPatch{Hour: i(24)}}, "digest.hour")
	bad(notify.ProfilePatch{Digest: &notify.DigestPatch{Weekday: s("someday")}}, "digest.weekday")
	bad(notify.ProfilePatch{Email: s("not an address")}, "email")
	// RFC 5321's lengths, and what a header cannot carry as it is.
	bad(notify.ProfilePatch{Email: s(strings.Repeat("a", 65) + "@example.org")}, "email")
	bad(notify.ProfilePatch{Email: s("ann@" + strings.Repeat("b", 250) + ".org")}, "email")
	bad(notify.ProfilePatch{Email: s("\u202eevil@example.org")}, "email")
	bad(notify.ProfilePatch{Email: s("ann\u0007@example.org")}, "email")
	bad(notify.ProfilePatch{Email: s("jörg@example.org")}, "email")
	if _, err := notify.NormalizeEmail(strings.Repeat("a", 64) + "@example.org"); err != nil {
		t.Errorf("a local part of 64 characters: %v", err)
	}
	bad(notify.ProfilePatch{Digest: &notify.DigestPatch{Order: s("random")}}, "digest.order")
	bad(notify.ProfilePatch{Digest: &notify.DigestPatch{MaxPapers: i(-1)}}, "digest.max_papers")
	bad(notify.ProfilePatch{Digest: &notify.DigestPatch{MaxPapers: i(notify.MaxPapersLimit + 1)}}, "digest.max_papers")
	p, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Frequency: s("weekly"), Weekday: s("Fri")}})
	if err != nil || p.Digest.Weekday != time.Friday || p.NextDigestAt.Weekday() != time.Friday {
		t.Errorf("weekly on Friday: %+v %v", p, err)
	}
	// The budget: newest first, no budget, followed persons kept until
	// the user says otherwise; each field stays when others change.
	if p.Digest.Order != notify.OrderNewest || p.Digest.MaxPapers != 0 || !p.Digest.KeepFollowed {
		t.Errorf("the budget's defaults: %+v", p.Digest)
	}
	no := false
	p, err = e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Order: s(" Best"), MaxPapers: i(12), KeepFollowed: &no}})
	if err != nil || p.Digest.Order != notify.OrderBest || p.Digest.MaxPapers != 12 || p.Digest.KeepFollowed {
		t.Errorf("best, 12, followed not kept: %+v %v", p.Digest, err)
	}
	p, err = e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Hour: i(9)}})
	if err != nil || p.Digest.Order != notify.OrderBest || p.Digest.MaxPapers != 12 || p.Digest.KeepFollowed {
		t.Errorf("another field changed the budget: %+v %v", p.Digest, err)
	}
}

// TestBatchBuildsTogetherDeliversSeparately: one send job's batch holds
// several users' digests. Each user gets only their own papers in their
// own message; a skipped and a temporarily failing row do not hold the
// others back; a second row of the same user waits for the first's window;
// and the job's retry sends only what is still pending.
func TestBatchBuildsTogetherDeliversSeparately(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{Fault: func(stage string, n int) *smtp.SMTPError {
		if stage == fakesmtp.StageRcpt && n == 3 { // dora's first attempt
			return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 2, 1}, Message: "mailbox busy"}
		}
		return nil
	}}, "")
	ada := e.reader("ada", notify.Daily, "UTC", 6, "category/cs.LG")
	bob := e.reader("bob", notify.Daily, "UTC", 6, "category/math.AG")
	cy := e.reader("cy", notify.Daily, "UTC", 6, "category/cs.LG")
	dora := e.reader("dora", notify.Daily, "UTC", 6, "category/cs.LG")
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE users SET email_confirmed_at = NULL WHERE id = $1`, cy); err != nil {
		t.Fatal(err)
	}
	e.push(testPaper("2301.00001", "cs.LG"), testPaper("2301.00002", "cs.LG"), testPaper("2301.00003", "math.AG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	if len(ids) != 4 { // cy's too: the address is checked when sending
		t.Fatalf("scheduled %d digests, want 4", len(ids))
	}
	if jobs := testjobs.Count(t, e.db.Pool, worker.DigestArgs{}.Kind()); jobs != 1 {
		t.Fatalf("%d send jobs for %d digests, want one batch", jobs, len(ids))
	}
	var manual int64
	if err := e.db.Pool.QueryRow(e.ctx, `INSERT INTO digests (user_id, period, kind) VALUES ($1, 'manual:test', 'manual') RETURNING id`, ada).Scan(&manual); err != nil {
		t.Fatal(err)
	}
	batch := append(slices.Clone(ids), manual)

	outs, err := e.d.SendBatch(e.ctx, batch)
	if !errors.Is(err, notify.ErrRetry) {
		t.Fatalf("first run: %v, want a retry for dora", err)
	}
	if len(outs) != len(batch) {
		t.Fatalf("%d outcomes for %d digests", len(outs), len(batch))
	}
	got := map[string][]string{} // recipient → paper titles in their mail
	for _, m := range e.smtp.Messages() {
		got[m.To[0]] = append(got[m.To[0]], strings.Join(regexp.MustCompile(`Paper 2301\.0000\d`).FindAllString(textPart(t, m.Data), -1), ","))
	}
	want := map[string][]string{
		// Newest first; the manual digest after it has nothing new, and ada
		// did not ask for empty digests: it is skipped, not mailed.
		"ada@example.org": {"Paper 2301.00002,Paper 2301.00001"},
		"bob@example.org": {"Paper 2301.00003"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first run delivered %v, want %v", got, want)
	}
	userOf := map[int64]int64{}
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT id, user_id FROM digests`)
	for rows.Next() {
		var id, u int64
		if err := rows.Scan(&id, &u); err != nil {
			t.Fatal(err)
		}
		userOf[id] = u
	}
	for _, id := range batch {
		st, reply := e.state(id)
		switch u := userOf[id]; {
		case id == manual && (st != "skipped" || reply != "nothing new"):
			t.Errorf("ada's empty manual digest: %s %q, want skipped (nothing new)", st, reply)
		case id == manual:
		case u == cy && (st != "skipped" || !strings.Contains(reply, "not confirmed")):
			t.Errorf("cy's digest: %s %q", st, reply)
		case u == dora && st != "pending":
			t.Errorf("dora's digest: %s %q, want pending", st, reply)
		case (u == ada || u == bob) && st != "sent":
			t.Errorf("digest %d of user %d: %s %q", id, u, st, reply)
		}
	}

	if _, err := e.d.SendBatch(e.ctx, batch); err != nil { // River's retry of the job
		t.Fatalf("retry: %v", err)
	}
	var toDora int
	for _, m := range e.smtp.Messages() {
		if m.To[0] == "dora@example.org" {
			toDora++
		}
	}
	if n := len(e.smtp.Messages()); n != 3 || toDora != 1 {
		t.Fatalf("after the retry %d messages (%d to dora), want 3 (1)", n, toDora)
	}
}

// textPart decodes the text/plain part of a multipart/alternative message.
func textPart(t *testing.T, raw []byte) string {
	t.Helper()
	return partOf(t, raw, "text/plain")
}

// partOf decodes the part of type ctype of a multipart/alternative message.
func partOf(t *testing.T, raw []byte, ctype string) string {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if err != nil {
			t.Fatalf("no %s part: %v", ctype, err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), ctype) {
			b, err := io.ReadAll(p)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// TestChaosSMTPEveryDigestAccountedFor: 40 users' digests go to a server
// answering at random 421, 451 and 452 (temporary), 550 and 554
// (permanent), dropping the connection after the body, or answering
// slowly. Send jobs are retried (as River would) until nothing is pending.
// Then every digest has a final state with the server's reply, nobody got a
// digest twice, every "sent" digest arrived exactly once, nothing failed or
// unknown arrived, and permanent recipient failures suppressed the address.
func TestChaosSMTPEveryDigestAccountedFor(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(8, 29)) // seeded: the same faults every run
	roll := func() float64 { mu.Lock(); defer mu.Unlock(); return rng.Float64() }
	e := setup(t, fakesmtp.Options{
		Fault: func(stage string, n int) *smtp.SMTPError {
			x := roll()
			switch {
			case stage == fakesmtp.StageMail && x < 0.10:
				return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "too busy"}
			case stage == fakesmtp.StageRcpt && x < 0.10:
				return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "local error"}
			case stage == fakesmtp.StageRcpt && x < 0.15:
				return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "mailbox full"}
			case stage == fakesmtp.StageRcpt && x < 0.20:
				return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
			case stage == fakesmtp.StageData && x < 0.05:
				return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "content rejected"}
			case stage == fakesmtp.StageMail && x > 0.97:
				time.Sleep(300 * time.Millisecond) // a slow server, not too slow: the fault is the slowness
			}
			return nil
		},
		DropAfterData: func(int) bool { return roll() < 0.05 },
	}, "")
	const readers = 40
	for i := range readers {
		e.reader(fmt.Sprintf("r%02d", i), notify.Daily, "UTC", 6, "category/cs.LG")
	}
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	if len(ids) != readers {
		t.Fatalf("%d digests scheduled, want %d", len(ids), readers)
	}
	var err error
	attempts := 0
	for attempts = 1; attempts <= 30; attempts++ {
		if _, err = e.d.SendBatch(e.ctx, ids); err == nil {
			break
		}
		if !errors.Is(err, notify.ErrRetry) {
			t.Fatalf("attempt %d: %v", attempts, err)
		}
	}
	if err != nil {
		t.Fatalf("still pending after %d attempts: %v", attempts, err)
	}

	got := map[string]int{}
	for _, m := range e.smtp.Messages() {
		got[m.To[0]]++
	}
	rows, err := e.db.Pool.Query(e.ctx, `
		SELECT g.state, coalesce(g.smtp_reply, ''), g.attempts, u.email, s.email IS NOT NULL
		FROM digests g JOIN users u ON u.id = g.user_id LEFT JOIN suppressions s ON s.email = lower(u.email)`)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for rows.Next() {
		var state, reply, email string
		var tries int
		var suppressed bool
		if err := rows.Scan(&state, &reply, &tries, &email, &suppressed); err != nil {
			t.Fatal(err)
		}
		states[state]++
		switch state {
		case "sent":
			if got[email] != 1 || !strings.HasPrefix(reply, "250") {
				t.Errorf("%s: sent (%q) but %d messages arrived", email, reply, got[email])
			}
		case "failed":
			if got[email] != 0 || !strings.Contains(reply, "55") {
				t.Errorf("%s: failed (%q) but %d messages arrived", email, reply, got[email])
			}
			if strings.Contains(reply, "550") && !suppressed {
				t.Errorf("%s: 550 to RCPT did not suppress the address", email)
			}
		case "unknown":
			if got[email] != 0 || reply == "" {
				t.Errorf("%s: unknown (%q), %d messages arrived", email, reply, got[email])
			}
		default:
			t.Errorf("%s: left %s (%q) after %d attempts", email, state, reply, tries)
		}
	}
	for email, n := range got {
		if n > 1 {
			t.Errorf("%s got %d digests", email, n)
		}
	}
	t.Logf("after %d send-job runs: %v", attempts, states)
	if states["sent"] == 0 || states["sent"]+states["failed"]+states["unknown"] != readers {
		t.Errorf("states %v do not account for %d digests", states, readers)
	}
}

// TestInstantJobGivesUpAfterItsLastAttempt: an instant alert whose server
// answers 4xx on every attempt stays pending while River will retry the
// job, is resumed (not reserved again) by each retry, and is marked failed
// (last reply kept) by the job's final attempt.
func TestInstantJobGivesUpAfterItsLastAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t, refuseRcpt(&smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "mailbox full"}), "")
	uid := e.reader("eager", notify.Instant, "UTC", 7, "category/cs.LG")
	e.push(testPaper("2301.00001", "cs.LG"))
	job := testjobs.NewAttempts(t, e.db.Pool, slog.New(slog.DiscardHandler), &worker.InstantWorker{Digester: e.d},
		worker.InstantArgs{UserIDs: []int64{uid}})
	alerts := func() (ids []int64) {
		rows, err := e.db.Pool.Query(e.ctx, `SELECT id FROM digests WHERE user_id = $1 AND kind = 'instant' ORDER BY id`, uid)
		if err != nil {
			t.Fatal(err)
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	for attempt := 10; attempt <= 11; attempt++ {
		if _, err := job.Work(attempt); !errors.Is(err, notify.ErrRetry) {
			t.Fatalf("attempt %d: %v, want a retry", attempt, err)
		}
	}
	ids := alerts()
	if len(ids) != 1 {
		t.Fatalf("%d instant alerts after two attempts, want one (resumed, not reserved again)", len(ids))
	}
	if st, reply := e.state(ids[0]); st != "pending" || !strings.Contains(reply, "452") {
		t.Fatalf("after attempt 11: %s %q, want pending with the 452", st, reply)
	}
	if res, err := job.Work(12); !errors.Is(err, notify.ErrRetry) || res.Job.State != rivertype.JobStateDiscarded {
		t.Fatalf("attempt 12: %v, want the delivery error and the job discarded", err)
	}
	if st, reply := e.state(ids[0]); st != "failed" || !strings.Contains(reply, "452") || !strings.Contains(reply, "gave up after 12 attempts") {
		t.Fatalf("after the last attempt: %s %q, want failed with the last reply and the reason", st, reply)
	}
	if n := len(e.smtp.Messages()); n != 0 {
		t.Fatalf("%d messages delivered, want 0", n)
	}
}

// TestSendJobGivesUpAfterItsLastAttempt: a digest whose server answers 4xx
// on every attempt stays pending while River will retry, and is marked
// failed (last reply kept) by the send job's final attempt; rows already
// final are left alone.
func TestSendJobGivesUpAfterItsLastAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t, refuseRcpt(&smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "mailbox full"}), "")
	e.reader("full", notify.Daily, "UTC", 6, "category/cs.LG")
	e.reader("off", notify.Daily, "UTC", 6)
	e.push(testPaper("2301.00001", "cs.LG"))
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	if len(ids) != 2 {
		t.Fatalf("%d digests scheduled, want 2", len(ids))
	}
	discard := slog.New(slog.DiscardHandler)
	job := testjobs.NewAttempts(t, e.db.Pool, discard, &worker.DigestWorker{Digester: e.d, Logger: discard},
		worker.DigestArgs{DigestIDs: ids})
	if _, err := job.Work(11); !errors.Is(err, notify.ErrRetry) {
		t.Fatalf("attempt 11: %v, want a retry", err)
	}
	states := func() map[string]string {
		m := map[string]string{}
		for _, id := range ids {
			s, reply := e.state(id)
			m[s] = reply
		}
		return m
	}
	if s := states(); len(s) != 2 || !strings.Contains(s["pending"], "452") || s["skipped"] == "" {
		t.Fatalf("after attempt 11: %v, want one pending (452) and one skipped (nothing new)", s)
	}
	if res, err := job.Work(12); !errors.Is(err, notify.ErrRetry) || res.Job.State != rivertype.JobStateDiscarded {
		t.Fatalf("attempt 12: %v, want the delivery error and the job discarded", err)
	}
	s := states()
	if len(s) != 2 || s["skipped"] == "" || !strings.Contains(s["failed"], "452") || !strings.Contains(s["failed"], "gave up after 12 attempts") {
		t.Fatalf("after the last attempt: %v, want failed with the last reply and the reason, skipped untouched", s)
	}
	if n := len(e.smtp.Messages()); n != 0 {
		t.Fatalf("%d messages delivered, want 0", n)
	}
}

// TestSchedulerClosesAbandonedDigests: rows no send job will come back to
// (long "sending", long "pending") are closed by the scheduler's sweep as
// unknown and failed; recent open rows and final rows are left alone.
func TestSchedulerClosesAbandonedDigests(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	u := e.reader("gone", notify.Off, "UTC", 6)
	rows := map[string]int64{}
	for _, r := range []struct {
		name, state string
		age         string
	}{
		{"old-sending", "sending", "25 hours"}, {"old-pending", "pending", "49 hours"},
		{"new-sending", "sending", "1 hour"}, {"retrying", "pending", "30 hours"}, {"old-sent", "sent", "90 days"},
	} {
		var id int64
		if err := e.db.Pool.QueryRow(e.ctx, `
			INSERT INTO digests (user_id, period, kind, state, smtp_reply, updated_at)
			VALUES ($1, $2, 'daily', $3, '451 4.3.0 later', now() - $4::interval) RETURNING id`, u, r.name, r.state, r.age).Scan(&id); err != nil {
			t.Fatal(err)
		}
		rows[r.name] = id
	}
	if _, err := e.d.Schedule(e.ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"old-sending": "unknown", "old-pending": "failed", "new-sending": "sending", "retrying": "pending", "old-sent": "sent"} {
		state, reply := e.state(rows[name])
		if state != want {
			t.Errorf("%s: %s, want %s", name, state, want)
		}
		if want != "sent" && !strings.HasPrefix(reply, "451 4.3.0 later") {
			t.Errorf("%s: reply %q lost the SMTP reply", name, reply)
		}
	}
	if _, reply := e.state(rows["old-pending"]); !strings.Contains(reply, "abandoned") {
		t.Errorf("old-pending: reply %q does not say why", reply)
	}
}

// linksExcept has no feed URL for one user, so a digest of that user that
// needs "and N more" cannot be rendered.
type linksExcept struct{ user int64 }

func (l linksExcept) FeedURLs(ctx context.Context, ids []int64) (map[int64]string, error) {
	out, _ := noLinks{}.FeedURLs(ctx, ids)
	delete(out, l.user)
	return out, nil
}

// TestUnrenderableDigestFailsAlone: a digest that cannot be rendered is
// recorded failed with the reason, and the rest of its batch is delivered
// (it used to end the batch, so the rows after it were retried with it and
// finally given up).
func TestUnrenderableDigestFailsAlone(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	ann := e.reader("ann", notify.Daily, "UTC", 6, "category/cs.LG")
	e.reader("ben", notify.Daily, "UTC", 6, "category/cs.LG")
	var ps []paper.Paper
	for i := range 21 { // one more than a group shows: "and 1 more" links the feed
		ps = append(ps, testPaper(fmt.Sprintf("2301.%05d", i+1), "cs.LG"))
	}
	e.push(ps...)
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	sender, err := mail.NewSMTPSender(e.smtp.URL(), mail.SMTPOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	base, _ := url.Parse("https://followfeed.test")
	d := notify.NewDigester(notify.DigesterConfig{DB: e.db, Matcher: e.matcher, Sender: sender,
		Links: linksExcept{ann}, Addresses: e.addrs,
		From: &netmail.Address{Name: "followfeed", Address: "digest@followfeed.test"}, BaseURL: base, Now: e.clk.Now})
	outs, err := d.SendBatch(e.ctx, ids)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	states := map[notify.State]int{}
	for _, o := range outs {
		states[o.State]++
	}
	if states[notify.StateFailed] != 1 || states[notify.StateSent] != 1 {
		t.Fatalf("outcomes %v, want one failed and one sent", states)
	}
	for _, id := range ids {
		s, reply := e.state(id)
		var user int64
		e.db.Pool.QueryRow(e.ctx, `SELECT user_id FROM digests WHERE id = $1`, id).Scan(&user)
		if user == ann && (s != "failed" || !strings.Contains(reply, "could not build the message")) {
			t.Errorf("ann's digest: %s %q", s, reply)
		}
		if user != ann && s != "sent" {
			t.Errorf("ben's digest: %s %q", s, reply)
		}
	}
	if n := len(e.smtp.Messages()); n != 1 {
		t.Errorf("%d messages delivered, want 1", n)
	}
}

// A Digester keeps papers' renderings from batch to batch, but a paper
// corrected since it was rendered (here its title, as arXiv's metadata
// or an enrichment may change it) is rendered again: the next batch's
// mail shows the paper as it is now.
func TestCorrectedPaperIsRenderedAgainInTheNextBatch(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	e.reader("ada", notify.Daily, "UTC", 6, "category/cs.LG")
	e.reader("bob", notify.Daily, "UTC", 7, "category/cs.LG")
	p := testPaper("2301.00001", "cs.LG")
	e.push(p)
	send := func(at time.Time) {
		t.Helper()
		e.clk.Set(at)
		ids := e.scheduled()
		if _, err := e.d.SendBatch(e.ctx, ids); err != nil { // earlier rows, sent, are left alone
			t.Fatal(err)
		}
	}
	send(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC)) // ada's
	p.Title = "Paper 2301.00001, corrected"
	res, err := e.in.Ingest(e.ctx, []paper.Paper{p}, catalog.SourcePush)
	if err != nil || res.Updated != 1 {
		t.Fatalf("correcting the title: %+v, %v", res, err)
	}
	send(time.Date(2026, 11, 30, 7, 1, 0, 0, time.UTC)) // bob's
	got := map[string]string{}
	for _, m := range e.smtp.Messages() {
		got[m.To[0]] = textPart(t, m.Data) + partOf(t, m.Data, "text/html")
	}
	if a := got["ada@example.org"]; !strings.Contains(a, "Paper 2301.00001") || strings.Contains(a, "corrected") {
		t.Errorf("ada's digest, before the correction:\n%s", a)
	}
	if b := got["bob@example.org"]; !strings.Contains(b, "Paper 2301.00001, corrected") {
		t.Errorf("bob's digest, after the correction, does not show the new title:\n%s", b)
	}
}

// A batch's digests share each shown paper's details: the events of one
// user's paper follow (a new version of the paper they follow) are said in
// their digest only, not in the digests of the batch's other users that
// show the same paper for another follow.
func TestAFollowedPapersEventStaysInItsReadersDigest(t *testing.T) {
	t.Parallel()
	e := setup(t, fakesmtp.Options{}, "")
	e.reader("ada", notify.Daily, "UTC", 6, "paper/2301.00001", "category/cs.LG")
	e.reader("bob", notify.Daily, "UTC", 6, "category/cs.LG")
	e.reader("cy", notify.Daily, "UTC", 6, "category/cs.LG")
	p := testPaper("2301.00001", "cs.LG")
	p.Version = 1
	e.push(p)
	p.Version = 2
	e.push(p)
	e.clk.Set(time.Date(2026, 11, 30, 6, 1, 0, 0, time.UTC))
	ids := e.scheduled()
	if len(ids) != 3 {
		t.Fatalf("scheduled %d digests, want 3", len(ids))
	}
	if _, err := e.d.SendBatch(e.ctx, ids); err != nil { // one batch: the details are shared
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range e.smtp.Messages() {
		got[m.To[0]] = textPart(t, m.Data)
	}
	const event = "New version v2 of Paper 2301.00001"
	if !strings.Contains(strings.Join(strings.Fields(got["ada@example.org"]), " "), event) {
		t.Errorf("ada, who follows the paper, is not told of its new version:\n%s", got["ada@example.org"])
	}
	for _, to := range []string{"bob@example.org", "cy@example.org"} {
		text := got[to]
		if !strings.Contains(text, "Paper 2301.00001") || strings.Contains(text, "New version") {
			t.Errorf("%s, who follows only its category, got:\n%s", to, text)
		}
	}
}
