package database_test

import (
	"context"
	"testing"

	"followfeed/database"
	"followfeed/internal/testdb"
)

// DeleteBatches repeats its statement until a run deletes fewer than
// PruneBatch rows, each run its own transaction, and counts them all; it
// deletes nothing its statement does not pick.
func TestDeleteBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE ledger (id bigint PRIMARY KEY, old boolean NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	// 2.4 batches of old rows, interleaved with young ones.
	old := 2*database.PruneBatch + database.PruneBatch/2
	if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger SELECT g, g % 3 <> 0 FROM generate_series(1, $1) g`, old*3/2); err != nil {
		t.Fatal(err)
	}
	var want int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger WHERE old`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	n, err := db.DeleteBatches(ctx, "old rows", `DELETE FROM ledger WHERE id IN (SELECT id FROM ledger WHERE old = $2 ORDER BY id LIMIT $1)`, true)
	if err != nil || n != want || want <= 2*database.PruneBatch {
		t.Fatalf("DeleteBatches = %d, %v; want %d (more than two batches)", n, err, want)
	}
	var left, young int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE old), count(*) FILTER (WHERE NOT old) FROM ledger`).Scan(&left, &young); err != nil {
		t.Fatal(err)
	}
	if left != 0 || young != old*3/2-int(want) {
		t.Errorf("left %d old and %d young rows, want 0 and %d", left, young, old*3/2-int(want))
	}
	if n, err := db.DeleteBatches(ctx, "old rows", `DELETE FROM ledger WHERE id IN (SELECT id FROM ledger WHERE old = $2 ORDER BY id LIMIT $1)`, true); err != nil || n != 0 {
		t.Errorf("a second run deleted %d (%v)", n, err)
	}
}
