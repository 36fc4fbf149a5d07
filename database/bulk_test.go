package database_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/internal/testdb"
)

// Batches hands every value once, in order, n at a time with a shorter
// last batch, reuses its slice, and stops at the first error.
func TestBatches(t *testing.T) {
	seq := func(n int) func(func(int) bool) {
		return func(yield func(int) bool) {
			for i := range n {
				if !yield(i) {
					return
				}
			}
		}
	}
	var got [][]int
	var first *int
	err := database.Batches(seq(7), 3, func(b []int) error {
		if first == nil {
			first = &b[0]
		} else if &b[0] != first {
			t.Error("the batch slice was not reused")
		}
		got = append(got, slices.Clone(b))
		return nil
	})
	if err != nil || !slices.EqualFunc(got, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}, slices.Equal) {
		t.Errorf("batches %v, %v", got, err)
	}
	calls := 0
	if err := database.Batches(seq(0), 3, func([]int) error { calls++; return nil }); err != nil || calls != 0 {
		t.Errorf("an empty seq: %d calls, %v", calls, err)
	}
	stop := errors.New("stop")
	pulled := 0
	counting := func(yield func(int) bool) {
		for i := range 100 {
			pulled++
			if !yield(i) {
				return
			}
		}
	}
	if err := database.Batches(counting, 4, func([]int) error { return stop }); !errors.Is(err, stop) || pulled != 4 {
		t.Errorf("after an error: %v, %d values pulled", err, pulled)
	}
}

// NextIDs takes values of the column's own sequence, ascending, that an
// insert taking the column's default never gets again.
func TestNextIDs(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		ids, err := database.NextIDs(ctx, tx, "identities", "id", 5)
		if err != nil {
			return err
		}
		if len(ids) != 5 || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != 5 {
			t.Errorf("ids %v", ids)
		}
		var next int64
		if err := tx.QueryRow(ctx, `INSERT INTO identities (kind) VALUES ('researcher') RETURNING id`).Scan(&next); err != nil {
			return err
		}
		if next <= ids[4] {
			t.Errorf("an insert took id %d after NextIDs took %v", next, ids)
		}
		none, err := database.NextIDs(ctx, tx, "identities", "id", 0)
		if err != nil || none != nil {
			t.Errorf("no ids: %v, %v", none, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
