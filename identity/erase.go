package identity

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/catalog"
)

// EraseUser erases user userID's "not this person" disputes in tx (the
// erasure's transaction, account.Users.Erase, whose hook it is): they
// leave the public dispute lists of the persons they named at the commit.
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM identity_disputes WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("erasing the disputes of user %d: %w", userID, err)
	}
	return nil
}

// DisputesBy returns user userID's own "not this person" disputes, newest
// first (a user's data export): the paper, and the followed researcher id
// they said it is not by. The primary key (user_id, follow_key, paper_id)
// finds them.
func (r *Registry) DisputesBy(ctx context.Context, userID int64) ([]Dispute, error) {
	rows, err := r.db.Pool.Query(ctx, `
		SELECT p.arxiv_id, p.title, d.follow_key, d.created_at
		FROM identity_disputes d JOIN `+catalog.PapersTable+` p ON p.id = d.paper_id
		WHERE d.user_id = $1
		ORDER BY d.created_at DESC, p.arxiv_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("listing the disputes of user %d: %w", userID, err)
	}
	return collectDisputes(rows)
}
