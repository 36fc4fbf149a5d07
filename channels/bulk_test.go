package channels_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/channels"
)

// TestBulkLoadLedgerWritesWhatDeliveriesLeave: 120 delivered events, one a
// day, load as Collect and Deliver leave them: each event's body is the
// webhook's JSON with its papers, the deliveries list shows the newest 100
// attempts (Deliver's cap), every paper is recorded once for the channel;
// then the prune keeps the last 30 days of events and 90 of records (a
// record is the paper's first sending).
func TestBulkLoadLedgerWritesWhatDeliveriesLeave(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := setup(t, now)
	user := e.reader("bulk", "UTC", 7, "monday", "category/cs.LG")
	id := e.webhook(user, "bulk", "daily")
	e.push(testPaper("2611.00001", "cs.LG"), testPaper("2611.00002", "cs.LG"))
	var ids []int64
	rows, _ := e.db.Pool.Query(e.ctx, `SELECT id FROM papers ORDER BY arxiv_id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	papers := []channels.PaperJSON{{ArxivID: "2611.00001", Title: "One"}, {ArxivID: "2611.00002", Title: "Two"}}
	events := func(yield func(channels.BulkEvent) bool) {
		for d := range 120 {
			p := d % 2
			if !yield(channels.BulkEvent{ChannelID: id, At: now.Add(-time.Duration(120-d) * 24 * time.Hour), Papers: papers[p : p+1], PaperIDs: ids[p : p+1]}) {
				return
			}
		}
	}
	var n int
	if err := e.db.InTx(e.ctx, func(tx pgx.Tx) error {
		n, err = channels.BulkLoadLedger(e.ctx, tx, events)
		return err
	}); err != nil || n != 120 {
		t.Fatalf("BulkLoadLedger = %d, %v", n, err)
	}
	ds, err := e.ch.Deliveries(e.ctx, user, id)
	if err != nil || len(ds) != 100 || ds[0].Outcome != "delivered" || ds[0].EventState != "delivered" || !ds[0].At.Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("deliveries: %d (%v), newest %+v", len(ds), err, ds[0])
	}
	var body string
	var records int
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT (SELECT body FROM channel_events WHERE channel_id = $1 ORDER BY id DESC LIMIT 1),
		(SELECT count(*) FROM channel_papers WHERE channel_id = $1)`, id).Scan(&body, &records); err != nil {
		t.Fatal(err)
	}
	var ev channels.Event
	if err := json.Unmarshal([]byte(body), &ev); err != nil || ev.Type != channels.TypeMatched || len(ev.Data.Papers) != 1 || ev.Data.Papers[0].ArxivID != "2611.00002" {
		t.Errorf("the newest event's body %s (%v)", body, err)
	}
	if records != 2 {
		t.Errorf("%d papers recorded, want each once", records)
	}
	pruned, err := e.ch.Prune(e.ctx)
	if err != nil || pruned != 120-30 {
		t.Errorf("Prune = %d, %v; want the %d events older than 30 days", pruned, err, 120-30)
	}
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM channel_papers WHERE channel_id = $1`, id).Scan(&records); err != nil || records != 0 {
		t.Errorf("%d records left (%v), want none: both papers were first sent more than 90 days ago", records, err)
	}
}
