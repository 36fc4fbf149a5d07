package account

import "context"

// PruneConfirmations deletes the records of confirmation mails older than
// the caps' window (a day) and returns how many: only the window's rows
// are ever counted (capConfirmations, ConfirmationDue), and a request
// forgets its own user's and address's old rows, but a user who never
// asks again would keep theirs for ever. Nothing else reads them. It walks
// confirmation_requests_pkey from the oldest row (ids follow created_at)
// in batches (database.DeleteBatches), so the table holds a day of
// confirmation mails; run again, it deletes nothing more.
func (a *Addresses) PruneConfirmations(ctx context.Context) (int64, error) {
	return a.db.DeleteBatches(ctx, "confirmation mails", `
		DELETE FROM confirmation_requests WHERE id IN (
			SELECT id FROM confirmation_requests WHERE created_at < now() - $2::interval ORDER BY id LIMIT $1)`,
		confirmationWindow.String())
}
