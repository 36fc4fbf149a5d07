package catalog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Withdrawn returns those of ids whose paper the source withdrew (an
// OAI-PMH deleted record: papers.deleted_at set) or that no longer exist,
// ascending: the fediverse deletes their notes. One primary-key probe per
// id.
func Withdrawn(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `
		SELECT i.id FROM unnest($1::bigint[]) AS i(id)
		LEFT JOIN papers p ON p.id = i.id
		WHERE p.id IS NULL OR p.deleted_at IS NOT NULL
		ORDER BY 1`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading withdrawals of %d papers: %w", len(ids), err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
