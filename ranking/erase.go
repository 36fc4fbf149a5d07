package ranking

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EraseUser erases user userID's feedback and ranking model in tx (the
// erasure's transaction, account.Users.Erase, whose hook it is). A
// training job still queued for them then finds no ranking_models row and
// does nothing (Train); one already training stores nothing (storeModel).
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `
		WITH fb AS (DELETE FROM feedback WHERE user_id = $1)
		DELETE FROM ranking_models WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("erasing the feedback and model of user %d: %w", userID, err)
	}
	return nil
}
