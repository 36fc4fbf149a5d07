package database

import (
	"context"
	"fmt"
)

// TextByID runs query, whose rows are a bigint and a text, on db's pool
// and returns the texts by id, converted to V: an owner's small per-paper
// read of one user's rows (a user's states, their feedback values).
// Rows with a NULL text are an error; what names the read in errors.
func TextByID[V ~string](ctx context.Context, db *DB, what, query string, args ...any) (map[int64]V, error) {
	rows, err := db.Pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	defer rows.Close()
	out := map[int64]V{}
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		out[id] = V(v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return out, nil
}
