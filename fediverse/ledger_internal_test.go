package fediverse

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/channels"
	"followfeed/internal/testdb"
)

// countingEnqueuer records the delivery jobs asked for (the real one, in
// worker, imports this package).
type countingEnqueuer struct{ deliveries []int64 }

func (c *countingEnqueuer) EnqueueFanout(context.Context, pgx.Tx) error { return nil }
func (c *countingEnqueuer) EnqueueDeliveries(_ context.Context, _ pgx.Tx, ids []int64) error {
	c.deliveries = append(c.deliveries, ids...)
	return nil
}

// TestIdleWaitsForADeliveryBeingAdded: a delivery job about to mark its
// inbox idle while a fan-out adds a delivery to that inbox (its job still
// queued, so the fan-out queues none) must see the delivery and go on:
// otherwise the delivery would wait forever with no job. It holds through
// the inbox row lock the fan-out's transaction keeps until commit (its
// FOR UPDATE, and the deliveries' foreign key's lock as well).
func TestIdleWaitsForADeliveryBeingAdded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	base, _ := url.Parse("https://followfeed.test")
	enq := &countingEnqueuer{}
	s := NewService(Config{DB: db, BaseURL: base, Guard: channels.NewGuard(nil), Enqueuer: enq})
	var inbox, activity int64
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ap_actors (key, watermark) VALUES ('category:cs.LG', 0)`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO ap_inboxes (url, host, queued) VALUES ('https://m.example/inbox', 'm.example', true) RETURNING id`).Scan(&inbox); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO ap_activities (actor_key, type, body) VALUES ('category:cs.LG', 'Create', '{}') RETURNING id`).Scan(&activity)
	})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := s.deliver(ctx, tx, []int64{activity}, []int64{inbox}); err != nil {
		t.Fatal(err)
	}
	if len(enq.deliveries) != 0 {
		t.Fatalf("a job was queued for an inbox whose job is queued: %v", enq.deliveries)
	}
	done := make(chan bool, 1)
	go func() {
		d, err := s.idle(ctx, inbox, nil)
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	select {
	case d := <-done:
		t.Fatalf("idle returned (%v) while the fan-out's transaction was open: it must wait for the inbox's lock", d)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d {
		t.Fatal("idle marked the inbox idle with a delivery pending")
	}
}
