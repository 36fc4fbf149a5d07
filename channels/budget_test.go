package channels_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"followfeed/channels"
	"followfeed/internal/testpaper"
	"followfeed/notify"
	"followfeed/paper"
	"followfeed/ranking"
)

// TestBudgetSendsTheBestAndNeverTheRest: a user whose digest settings say
// order best with a budget of 3 papers follows Ann One and astro-ph.CO,
// and has marked pulsar papers "less". A batch of 8 new papers (one by
// Ann, on pulsars; 3 on lensing and 4 on pulsars by strangers) reaches
// their instant webhook as one event of 3 papers, best first: Ann's (it
// passes the budget) and the 2 best of the others (lensing), saying 5
// more are in the feed; each paper carries its feedback links. Later the
// same day the budget is spent: of 3 new papers only Ann's is sent. The
// next day a new paper is sent, and none of the 7 held back ever is. The
// channel's ledger holds every paper it had, sent or held. Another user's
// channel (newest first, no budget) gets every paper, as before.
func TestBudgetSendsTheBestAndNeverTheRest(t *testing.T) {
	t.Parallel()
	// Noon of today (UTC, the user's zone): the events' created_at (the
	// database's clock) falls on the day the service's clock says.
	today := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	e := setup(t, today)
	uid := e.reader("budget", "UTC", 7, "monday", "category/astro-ph.CO", "researcher/host:1")
	best, three := "best", 3
	if _, err := e.prefs.Update(e.ctx, uid, notify.ProfilePatch{Digest: &notify.DigestPatch{Order: &best, MaxPapers: &three}}); err != nil {
		t.Fatal(err)
	}
	other := e.reader("newest", "UTC", 7, "monday", "category/astro-ph.CO")
	w := testpaper.NewWriter(5, "2611", "astro-ph.CO")
	ann := paper.Author{Name: "Ann One", IDs: []string{"host:1"}}
	e.push(w.Background(150)...)
	for range 4 {
		e.push(w.Paper("lensing", ann, w.Stranger()))
	}
	for range 3 {
		p := w.Paper("pulsar")
		e.push(p)
		if _, err := e.rank.Set(e.ctx, uid, p.ArxivID, ranking.Less); err != nil {
			t.Fatal(err)
		}
	}
	if trained, err := e.rank.Train(e.ctx, uid); err != nil || !trained {
		t.Fatalf("Train: %v %v", trained, err)
	}
	e.webhook(uid, "budget", "instant")
	e.webhook(other, "all", "instant")

	annPulsar := w.Paper("pulsar", ann, w.Stranger())
	batch := []paper.Paper{annPulsar}
	var lensing []string
	for range 3 {
		p := w.Paper("lensing")
		lensing = append(lensing, p.ArxivID)
		batch = append(batch, p, w.Paper("pulsar"))
	}
	batch = append(batch, w.Paper("pulsar"))
	e.push(batch...)
	e.run()
	evs := e.rcv.received("budget")
	if len(evs) != 1 {
		t.Fatalf("%d events for the first batch, want 1", len(evs))
	}
	d := evs[0].Data
	var sent []string
	for _, p := range d.Papers {
		sent = append(sent, p.ArxivID)
	}
	if len(sent) != 3 || !slices.Contains(sent, annPulsar.ArxivID) || testpaper.CountIn(sent, lensing) != 2 || d.Order != channels.OrderBest || d.MoreInFeed != 5 {
		t.Fatalf("first batch: %q, order %q, %d more (Ann's %s, lensing %q)", sent, d.Order, d.MoreInFeed, annPulsar.ArxivID, lensing)
	}
	// Best first: the scores of the user's model never rise down the list.
	ids := make([]int64, len(sent))
	for i, a := range sent {
		ids[i] = e.paperID(a)
	}
	b, err := e.rank.Rank(e.ctx, map[int64][]int64{uid: ids}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ids); i++ {
		if b.Score(uid, ids[i]) > b.Score(uid, ids[i-1]) {
			t.Errorf("paper %d (%s) scores above the one before it: %q", i, sent[i], sent)
		}
	}
	// Each paper's feedback links: this user, this paper, each value.
	for _, p := range d.Papers {
		if p.Feedback == nil {
			t.Fatalf("paper %s without feedback links", p.ArxivID)
		}
		for v, u := range map[string]string{"more": p.Feedback.More, "less": p.Feedback.Less, "saved": p.Feedback.Save} {
			user, pid, value, err := e.addrs.CheckFeedback(e.ctx, strings.TrimPrefix(u, "https://followfeed.test/feedback/"))
			if err != nil || user != uid || pid != e.paperID(p.ArxivID) || value != v {
				t.Errorf("the %s link of %s: user %d, paper %d, %q, %v", v, p.ArxivID, user, pid, value, err)
			}
		}
	}
	if got := e.rcv.papers("all"); len(got) != len(batch) || e.rcv.received("all")[0].Data.Order != "" || e.rcv.received("all")[0].Data.MoreInFeed != 0 {
		t.Errorf("the newest-first channel got %q", got)
	}

	// Later the same day: the budget is spent; Ann's new paper passes it.
	e.clk.Set(today.Add(3 * time.Hour))
	annLensing := w.Paper("lensing", ann, w.Stranger())
	e.push(w.Paper("lensing"), annLensing, w.Paper("lensing"))
	e.run()
	if evs = e.rcv.received("budget"); len(evs) != 2 || len(evs[1].Data.Papers) != 1 ||
		evs[1].Data.Papers[0].ArxivID != annLensing.ArxivID || evs[1].Data.MoreInFeed != 2 {
		t.Fatalf("later the same day: %+v", evs[1:])
	}
	// The next day: a new paper is sent; nothing held back comes.
	e.clk.Set(today.Add(24 * time.Hour))
	next := w.Paper("galaxy")
	e.push(next)
	e.run()
	got := e.rcv.papers("budget")
	want := append(slices.Clone(sent), annLensing.ArxivID, next.ArxivID)
	if !slices.Equal(got, want) {
		t.Errorf("the budget channel got %q, want %q", got, want)
	}
	if evs = e.rcv.received("budget"); len(evs) != 3 || evs[2].Data.MoreInFeed != 0 {
		t.Errorf("the next day's event: %+v", evs[2:])
	}
	var ledger int
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM channel_papers c JOIN channels ch ON ch.id = c.channel_id
		WHERE ch.user_id = $1`, uid).Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	if ledger != len(batch)+3+1 {
		t.Errorf("the ledger holds %d papers, want every one the channel had (%d)", ledger, len(batch)+3+1)
	}
}

// paperID is a stored paper's papers.id.
func (e *env) paperID(arxivID string) int64 {
	e.t.Helper()
	var id int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT id FROM papers WHERE arxiv_id = $1`, arxivID).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}
