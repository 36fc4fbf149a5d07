package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
	"followfeed/database"
	"followfeed/paper"
)

// seqTime is what a private feed's Last-Modified reads for seq
// (catalog.SeqTimeSQL); nil when no row answers.
func seqTime(t *testing.T, db *database.DB, seq int64) *time.Time {
	t.Helper()
	var at *time.Time
	if err := db.Pool.QueryRow(context.Background(), `SELECT `+catalog.SeqTimeSQL("$1::bigint"), seq).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// TestPruneSeqTimesKeepsEveryFeedTimeNoLater: six ingests write six
// key_seq_times rows; the four oldest are aged past the retention. The
// prune merges them into the oldest (three rows go): a seq of the two
// young writes reads exactly the time it read before; a seq of the old
// ones reads the oldest write's time, never later than before (so no feed
// looks modified and none hides a change), and never nothing. A second
// prune changes nothing; a new ingest still gets its own exact row.
func TestPruneSeqTimesKeepsEveryFeedTimeNoLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	var tos []int64
	for i := range 6 {
		res, err := store.Ingest(ctx, []paper.Paper{testPaper(fmt.Sprintf("2203.%05d", i+1))}, catalog.SourcePush)
		if err != nil {
			t.Fatal(err)
		}
		tos = append(tos, res.ToSeq)
	}
	// Aging on purpose: write i happened (40 - i) days ago for the first
	// four, hours ago for the last two.
	base := time.Now().Add(-40 * 24 * time.Hour).Truncate(time.Second)
	for i, to := range tos {
		at := base.Add(time.Duration(i) * 24 * time.Hour)
		if i >= 4 {
			at = time.Now().Add(-time.Duration(6-i) * time.Hour).Truncate(time.Second)
		}
		if _, err := db.Pool.Exec(ctx, `UPDATE key_seq_times SET at = $2 WHERE to_seq = $1`, to, at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM key_seq_times WHERE to_seq <> ALL($1)`, tos); err != nil {
		t.Fatal(err) // the migration's row of an empty database, if any
	}
	before := map[int64]time.Time{}
	for s := int64(1); s <= tos[5]; s++ {
		before[s] = *seqTime(t, db, s)
	}

	n, err := store.PruneSeqTimes(ctx)
	if err != nil || n != 3 {
		t.Fatalf("PruneSeqTimes = %d, %v; want 3 rows merged", n, err)
	}
	var rows []int64
	r, _ := db.Pool.Query(ctx, `SELECT to_seq FROM key_seq_times ORDER BY to_seq`)
	if rows, err = pgx.CollectRows(r, pgx.RowTo[int64]); err != nil || len(rows) != 3 || rows[0] != tos[3] || rows[1] != tos[4] || rows[2] != tos[5] {
		t.Fatalf("rows left %v (%v), want the floor at %d and the young %d, %d", rows, err, tos[3], tos[4], tos[5])
	}
	for s := int64(1); s <= tos[5]; s++ {
		got := seqTime(t, db, s)
		switch {
		case got == nil:
			t.Fatalf("seq %d: no time after the prune", s)
		case s > tos[3] && !got.Equal(before[s]):
			t.Errorf("seq %d (a young write): %s after the prune, %s before", s, got, before[s])
		case s <= tos[3] && !got.Equal(base):
			t.Errorf("seq %d (an old write, %s): %s after the prune, want the oldest write's %s", s, before[s], got, base)
		case got.After(before[s]):
			t.Errorf("seq %d: %s after the prune is later than %s before", s, got, before[s])
		}
	}
	if n, err := store.PruneSeqTimes(ctx); err != nil || n != 0 {
		t.Errorf("a second prune merged %d (%v)", n, err)
	}
	res, err := store.Ingest(ctx, []paper.Paper{testPaper("2203.00099")}, catalog.SourcePush)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqTime(t, db, res.ToSeq); got == nil || time.Since(*got) > time.Minute {
		t.Errorf("a new write's time %v, want its own", got)
	}
}

// TestPruneSeqTimesInBatches: 12,000 old rows and 10 young ones. The
// prune merges the old ones batch by batch (the floor moves up with each)
// and keeps the young ones; when every row is old, the newest stays (the
// high seq's time).
func TestPruneSeqTimesInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	old := time.Now().Add(-60 * 24 * time.Hour).Truncate(time.Second)
	for _, q := range []string{
		`DELETE FROM key_seq_times WHERE $1::timestamptz IS NOT NULL`,
		`INSERT INTO key_seq_times (to_seq, at) SELECT g * 10, $1::timestamptz + g * interval '1 minute' FROM generate_series(1, 12000) g`,
		`INSERT INTO key_seq_times (to_seq, at) SELECT 200000 + g, $1::timestamptz + interval '59 days' FROM generate_series(1, 10) g`,
	} {
		if _, err := db.Pool.Exec(ctx, q, old); err != nil {
			t.Fatal(err)
		}
	}
	n, err := store.PruneSeqTimes(ctx)
	if err != nil || n != 11999 {
		t.Fatalf("PruneSeqTimes = %d, %v; want 11999", n, err)
	}
	var floor int64
	var at time.Time
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT min(to_seq), (SELECT at FROM key_seq_times ORDER BY to_seq LIMIT 1), count(*) FROM key_seq_times`).Scan(&floor, &at, &left); err != nil {
		t.Fatal(err)
	}
	if floor != 120000 || !at.Equal(old.Add(time.Minute)) || left != 11 {
		t.Errorf("floor %d at %s, %d rows; want 120000 at %s, 11 rows", floor, at, left, old.Add(time.Minute))
	}
	for _, s := range []int64{1, 55555, 120000} {
		if got := seqTime(t, db, s); got == nil || !got.Equal(old.Add(time.Minute)) {
			t.Errorf("seq %d reads %v, want the floor's time", s, got)
		}
	}

	// Every row old: all but the newest merge into the floor.
	if _, err := db.Pool.Exec(ctx, `UPDATE key_seq_times SET at = at - interval '90 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := store.PruneSeqTimes(ctx); err != nil || n != 9 {
		t.Fatalf("PruneSeqTimes = %d, %v; want 9", n, err)
	}
	if got := seqTime(t, db, 200010); got == nil {
		t.Error("the newest write lost its row")
	}
}
