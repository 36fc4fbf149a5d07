package harvest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"followfeed/harvest"
)

// TestPruneKeepsTheDaysAnythingReads: 120 days of pushes, a set whose
// last three days are 200 days old, and completeness checks queued 50 and
// 10 days back for a set no longer configured. The prune deletes the
// pushes' days older than 90 days, keeps the old set's days (a source's
// newest 14 days are what the status shows, however old) and drops the
// check no run queues any more; the status reads as before.
func TestPruneKeepsTheDaysAnythingReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var mu sync.Mutex
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	health := harvest.NewHealth(db, []string{"cs"}, nil, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	for i := range 120 {
		mu.Lock()
		now = start.Add(time.Duration(i) * 24 * time.Hour)
		mu.Unlock()
		health.RecordPush(ctx, 5, nil)
	}
	today := now.Truncate(24 * time.Hour)
	for _, q := range []struct {
		sql string
		day time.Time
	}{
		{`INSERT INTO harvest_days (source, day, records) VALUES ('arxiv-oai:old', $1, 7)`, today.Add(-200 * 24 * time.Hour)},
		{`INSERT INTO harvest_days (source, day, records) VALUES ('arxiv-oai:old', $1, 7)`, today.Add(-201 * 24 * time.Hour)},
		{`INSERT INTO harvest_days (source, day, records) VALUES ('arxiv-oai:old', $1, 7)`, today.Add(-202 * 24 * time.Hour)},
		{`INSERT INTO harvest_checks (source, day) VALUES ('arxiv-oai:gone', $1)`, today.Add(-50 * 24 * time.Hour)},
		{`INSERT INTO harvest_checks (source, day) VALUES ('arxiv-oai:gone', $1)`, today.Add(-10 * 24 * time.Hour)},
	} {
		if _, err := db.Pool.Exec(ctx, q.sql, q.day); err != nil {
			t.Fatal(err)
		}
	}
	before := status(t, health, "push")

	n, err := health.Prune(ctx)
	if err != nil || n != 29+1 {
		t.Fatalf("Prune = %d, %v; want the 29 push days older than 90 days and one check", n, err)
	}
	var oldest time.Time
	var pushDays, oldDays, checks int
	if err := db.Pool.QueryRow(ctx, `SELECT min(day) FILTER (WHERE source = 'push'), count(*) FILTER (WHERE source = 'push'),
		count(*) FILTER (WHERE source = 'arxiv-oai:old'), (SELECT count(*) FROM harvest_checks) FROM harvest_days`).
		Scan(&oldest, &pushDays, &oldDays, &checks); err != nil {
		t.Fatal(err)
	}
	if !oldest.Equal(today.Add(-90*24*time.Hour)) || pushDays != 91 || oldDays != 3 || checks != 1 {
		t.Errorf("left: push days from %s (%d), %d days of the old set, %d checks; want from %s (91), 3, 1",
			oldest.Format(time.DateOnly), pushDays, oldDays, checks, today.Add(-90*24*time.Hour).Format(time.DateOnly))
	}
	after := status(t, health, "push")
	if len(after.Days) != len(before.Days) || len(after.Days) == 0 || !after.Days[len(after.Days)-1].Day.Equal(before.Days[len(before.Days)-1].Day) {
		t.Errorf("the status shows %d days after the prune, %d before", len(after.Days), len(before.Days))
	}
	if n, err := health.Prune(ctx); err != nil || n != 0 {
		t.Errorf("a second prune deleted %d (%v)", n, err)
	}
}
