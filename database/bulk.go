package database

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/jackc/pgx/v5"
)

// The owners' bulk loaders (account.BulkLoad, follow.BulkLoad,
// identity.BulkLoad, paper.BulkLoad, ...) write generated datasets, the
// benchmark's, with COPY: these are the conventions they share.

// Batches hands seq's values to load n at a time, in seq's order: every
// batch but the last holds n values, and an empty seq calls load never.
// It stops at load's first error and returns it. The slice load gets is
// reused for the next batch, so load keeps no reference to it.
func Batches[T any](seq iter.Seq[T], n int, load func([]T) error) error {
	batch := make([]T, 0, max(n, 1))
	for v := range seq {
		batch = append(batch, v)
		if len(batch) == cap(batch) {
			if err := load(batch); err != nil {
				return err
			}
			clear(batch) // drop references held by the values
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return load(batch)
	}
	return nil
}

// NextIDs takes n values of the sequence that fills table's column (an
// identity or serial column) in one statement and returns them in
// ascending order. nextval hands out every value once, so the ids are the
// caller's alone, beside concurrent inserts that take theirs; they are
// consecutive only when nothing else takes values meanwhile.
func NextIDs(ctx context.Context, tx pgx.Tx, table, column string, n int) ([]int64, error) {
	if n <= 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT nextval(pg_get_serial_sequence($1, $2)) FROM generate_series(1, $3)`, table, column, n)
	if err != nil {
		return nil, fmt.Errorf("taking %d ids of %s.%s: %w", n, table, column, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("taking %d ids of %s.%s: %w", n, table, column, err)
	}
	slices.Sort(ids)
	return ids, nil
}
