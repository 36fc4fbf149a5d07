package ranking

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The lab's remover: the benchmark gives its generated users feedback
// (through Set, as a click does) and models (Models, Train) to measure the
// ranking, and takes them off its dataset again with RemoveAll.

// RemoveAll deletes every feedback row and every ranking model, in tx, and
// returns how many of each it deleted: for taking a lab dataset (the
// benchmark's, whose generated users have neither) back to what it was
// built with after a measurement. It is every user's feedback: never for a
// service's database. The rank_train jobs that Set queued are the caller's
// to remove; one that runs anyway does nothing, since its user has no row
// (Train).
func RemoveAll(ctx context.Context, tx pgx.Tx) (feedback, models int, err error) {
	fb, err := tx.Exec(ctx, `DELETE FROM feedback`)
	if err != nil {
		return 0, 0, fmt.Errorf("removing every feedback row: %w", err)
	}
	m, err := tx.Exec(ctx, `DELETE FROM ranking_models`)
	if err != nil {
		return 0, 0, fmt.Errorf("removing every ranking model: %w", err)
	}
	return int(fb.RowsAffected()), int(m.RowsAffected()), nil
}
