package channels

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EraseUser erases user userID's channels in tx (the erasure's
// transaction, account.Users.Erase, whose hook it is), and with each
// channel its events, attempts, papers and secret pages (their foreign
// keys cascade from channels, within this package's tables). The jobs
// queued for them find nothing and do nothing: a collection finds no
// channel (Collect), a delivery no event (Deliver), the disabled mail no
// channel (MailDisabled); a delivery already under way records nothing
// (record). Deleting the channels ends their instant delivery
// (instant_follows, migration 00020).
func EraseUser(ctx context.Context, tx pgx.Tx, userID int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM channels WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("erasing the channels of user %d: %w", userID, err)
	}
	return nil
}
