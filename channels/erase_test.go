package channels_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/account"
	"followfeed/channels"
	"followfeed/internal/testjobs"
	"followfeed/worker"
)

// eraser is account's erasure with channels' hook, and a check that the
// hook (not the users row's cascade) emptied the user's channels.
func (e *env) eraser() *account.Users {
	users := account.NewUsers(e.db)
	users.OnErase(channels.EraseUser)
	users.OnErase(func(ctx context.Context, tx pgx.Tx, userID int64) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM channels WHERE user_id = $1`, userID).Scan(&n); err != nil || n != 0 {
			e.t.Errorf("after channels' hook: %d channels (%v)", n, err)
		}
		return nil
	})
	return users
}

// queued are the ids of the queued jobs of kind, from args' field id.
func (e *env) queued(kind string, id func([]byte) int64) []int64 {
	var out []int64
	for _, j := range testjobs.List(e.t, e.db.Pool, kind) {
		out = append(out, id(j.EncodedArgs))
	}
	return out
}

// TestJobsOfAnErasedUsersChannelsDoNothing: a user erased while their
// channel's collection and delivery jobs wait: the collection finds no
// channel, the delivery job completes without a request and without an
// error, and the channel's events, attempts and papers are gone with it;
// another user's channel gets its paper.
func TestJobsOfAnErasedUsersChannelsDoNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	ada := e.reader("ada", "UTC", 7, "monday", "category/cs.LG")
	bob := e.reader("bob", "UTC", 7, "monday", "category/cs.LG")
	adaCh := e.webhook(ada, "ada", "instant")
	e.webhook(bob, "bob", "instant")
	e.push(testPaper("2611.01234", "cs.LG"))
	for _, id := range e.queued(worker.ChannelCollectArgs{}.Kind(), func(b []byte) int64 {
		var a worker.ChannelCollectArgs
		_ = json.Unmarshal(b, &a)
		return a.ChannelID
	}) {
		if id == adaCh {
			continue // collected after the erasure, below
		}
		if _, err := e.ch.Collect(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Ada's earlier events: a test event waits for its delivery.
	if _, err := e.ch.Test(e.ctx, ada, adaCh); err != nil {
		t.Fatal(err)
	}
	events := e.queued(worker.ChannelDeliverArgs{}.Kind(), func(b []byte) int64 {
		var a worker.ChannelDeliverArgs
		_ = json.Unmarshal(b, &a)
		return a.EventID
	})
	if len(events) != 2 {
		t.Fatalf("%d deliveries queued, want bob's match and ada's test", len(events))
	}
	if erased, err := e.eraser().Erase(e.ctx, ada); err != nil || !erased {
		t.Fatalf("Erase: %v %v", erased, err)
	}
	if n, err := e.ch.Collect(e.ctx, adaCh); err != nil || n != 0 {
		t.Errorf("collecting the erased user's channel: %d events, %v", n, err)
	}
	discard := slog.New(slog.DiscardHandler)
	for _, id := range events {
		job := testjobs.NewAttempts(t, e.db.Pool, discard, &worker.ChannelDeliverWorker{Channels: e.ch, Logger: discard}, worker.ChannelDeliverArgs{EventID: id})
		if res, err := job.Work(1); err != nil || res.EventKind != river.EventKindJobCompleted {
			t.Errorf("delivering event %d: %v %v", id, res, err)
		}
	}
	if got := e.rcv.papers("ada"); len(got) != 0 {
		t.Errorf("the erased user's channel got %v", got)
	}
	if got := e.rcv.papers("bob"); !slices.Equal(got, []string{"2611.01234"}) {
		t.Errorf("the other user's channel got %v", got)
	}
	var n int
	if err := e.db.Pool.QueryRow(e.ctx, `
		SELECT (SELECT count(*) FROM channel_events WHERE channel_id = $1) + (SELECT count(*) FROM channel_attempts WHERE channel_id = $1)
		     + (SELECT count(*) FROM channel_papers WHERE channel_id = $1) + (SELECT count(*) FROM channel_reveals WHERE channel_id = $1)`,
		adaCh).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows of the erased user's channel left (%v)", n, err)
	}
}

// TestErasedWhileDeliveringRecordsNothing: a user erased while their
// channel's request is under way: the delivery ends without an error,
// records nothing and sends nothing more.
func TestErasedWhileDeliveringRecordsNothing(t *testing.T) {
	t.Parallel()
	e := setup(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	ada := e.reader("ada", "UTC", 7, "monday", "category/cs.LG")
	users := e.eraser()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if erased, err := users.Erase(r.Context(), ada); err != nil || !erased {
			t.Errorf("Erase while delivering: %v %v", erased, err)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	typ, u, mode := "webhook", srv.URL+"/hook", "instant"
	c, err := e.ch.Create(e.ctx, ada, channels.Spec{Type: &typ, URL: &u, Mode: &mode})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ch.Test(e.ctx, ada, c.ID); err != nil {
		t.Fatal(err)
	}
	var event int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT id FROM channel_events WHERE channel_id = $1`, c.ID).Scan(&event); err != nil {
		t.Fatal(err)
	}
	if err := e.ch.Deliver(e.ctx, event); err != nil {
		t.Errorf("Deliver: %v", err)
	}
	if err := e.ch.Deliver(e.ctx, event); err != nil { // a retry, had there been one
		t.Errorf("Deliver again: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want the one under way", n)
	}
}
