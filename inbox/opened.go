package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/database"
)

// "Remember what I opened": a user's choice (off by default, a row of
// inbox_settings) that the paper links of their digests and instant
// alerts go through a signed redirect (account.Addresses.OpenURL, served
// at GET /open/{token}) which marks the paper read (Opened). With it off,
// mails link straight to arXiv and nothing is recorded.

// RememberOpened says whether user userID turned "remember what I opened"
// on.
func (s *Service) RememberOpened(ctx context.Context, userID int64) (bool, error) {
	m, err := s.RemembersOpened(ctx, []int64{userID})
	return m[userID], err
}

// RemembersOpened returns the users of userIDs who turned "remember what
// I opened" on (the others are absent): a digest batch's one read.
func (s *Service) RemembersOpened(ctx context.Context, userIDs []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(userIDs) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT user_id FROM inbox_settings WHERE user_id = ANY($1) AND remember_opened`, userIDs)
	if err != nil {
		return nil, fmt.Errorf("reading %d users' remember-opened: %w", len(userIDs), err)
	}
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		out[id] = true
		return nil
	})
	return out, err
}

// SetRememberOpened turns user userID's "remember what I opened" on or
// off. Links in mails sent while it was off go straight to arXiv; links
// sent while it was on record nothing once it is off.
func (s *Service) SetRememberOpened(ctx context.Context, userID int64, on bool) error {
	_, err := s.db.Pool.Exec(ctx, `
		INSERT INTO inbox_settings AS s (user_id, remember_opened) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET remember_opened = EXCLUDED.remember_opened, updated_at = now()
			WHERE s.remember_opened <> EXCLUDED.remember_opened`, userID, on)
	if err != nil && database.IsUserGone(err) {
		return apperr.New(apperr.NotFound, "no such user")
	}
	if err != nil {
		return fmt.Errorf("setting the remember-opened of user %d: %w", userID, err)
	}
	return nil
}

// Opened records that user userID opened paper paperID (papers.id)
// through a mail's link: marked read, in one transaction, only when the
// user has "remember what I opened" on and the paper has no state yet (a
// paper marked done stays done). recorded says whether it was marked.
func (s *Service) Opened(ctx context.Context, userID, paperID int64) (recorded bool, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO paper_states (user_id, paper_id, state)
			SELECT $1, $2, 'read' FROM inbox_settings WHERE user_id = $1 AND remember_opened
			ON CONFLICT (user_id, paper_id) DO NOTHING`, userID, paperID)
		if err != nil {
			return fmt.Errorf("recording user %d opened paper %d: %w", userID, paperID, err)
		}
		if recorded = tag.RowsAffected() > 0; !recorded {
			return nil
		}
		return account.BumpFeeds(ctx, tx, userID)
	})
	var fk interface{ SQLState() string }
	if err != nil && (database.IsUserGone(err) || (errors.As(err, &fk) && fk.SQLState() == "23503")) {
		return false, nil // the user or the paper went meanwhile: nothing to record
	}
	return recorded, err
}
