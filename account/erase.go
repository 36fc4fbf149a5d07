package account

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// EraseHook erases, in the erasure's transaction tx, every row one package
// keeps about user userID in its own tables (follow.EraseUser,
// notify.EraseUser, …). The user's row is locked (FOR UPDATE) and still
// there when it runs. A package that adds a table holding a user id adds
// its rows to its hook (the whole-service test lists those tables from the
// schema and fails on one the erasure leaves rows in, or empties only
// through the users row's ON DELETE CASCADE).
type EraseHook func(ctx context.Context, tx pgx.Tx, userID int64) error

// OnErase registers h to run in every erasure (Erase, EraseSub), in the
// order of registration, before account erases its own rows. Call it
// before the store is used.
func (us *Users) OnErase(h EraseHook) { us.erasers = append(us.erasers, h) }

// Erase erases user id: every package's rows about them (the OnErase
// hooks), then account's own (eraseOwn), in one transaction, so the
// erasure is all or nothing. The user's row lock is taken first, so a
// change of the user under way (a follow, a digest's reservation) commits
// before it, and any later one finds no user (a missing row, or a foreign
// key violation database.IsUserGone recognises). A deadlock with such a
// change is retried (the erasure is idempotent). erased is false when
// there was no such user: erasing is idempotent.
func (us *Users) Erase(ctx context.Context, id int64) (erased bool, err error) {
	return us.erase(ctx, `id = $1`, id)
}

// EraseSub is Erase of the user with subject sub (the host's DELETE
// /v1/users/{sub}); erased is false when no user has it.
func (us *Users) EraseSub(ctx context.Context, sub string) (erased bool, err error) {
	return us.erase(ctx, `sub = $1`, sub)
}

// eraseAttempts bounds the retries of an erasure that lost a deadlock (a
// digest job holds the user's ledger row and waits for the user's row).
const eraseAttempts = 5

func (us *Users) erase(ctx context.Context, where string, arg any) (erased bool, err error) {
	for attempt := 1; ; attempt++ {
		erased = false
		err = us.db.InTx(ctx, func(tx pgx.Tx) error {
			var id int64
			err := tx.QueryRow(ctx, `SELECT id FROM users WHERE `+where+` FOR UPDATE`, arg).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("locking the user to erase: %w", err)
			}
			for _, h := range us.erasers {
				if err := h(ctx, tx, id); err != nil {
					return fmt.Errorf("erasing user %d: %w", id, err)
				}
			}
			if err := eraseOwn(ctx, tx, id); err != nil {
				return fmt.Errorf("erasing user %d: %w", id, err)
			}
			erased = true
			return nil
		})
		if err == nil || attempt == eraseAttempts || !database.IsRetryable(err) {
			return erased, err
		}
	}
}

// eraseOwnSQL erases account's rows of user $1 (the other packages' rows
// are gone by then, through the OnErase hooks): their confirmation
// requests, their feed row (the feed token's hash: the feed URLs answer
// 404 from the commit on) and their users row (signed links and sessions
// name the user's id: checkLink and the settings session find no user, so
// they are not valid any more). The suppressions of the user's current
// address and of every address a confirmation mail was sent to for them
// are kept only as hashes first (hashSuppressionsSQL).
const eraseOwnSQL = `
	WITH requests AS (
		DELETE FROM confirmation_requests WHERE user_id = $1
	), feeds AS (
		DELETE FROM user_feeds WHERE user_id = $1
	)
	DELETE FROM users WHERE id = $1`

// hashSuppressionsSQL keeps the suppressions of the addresses $1 (text[])
// only as the hash of the address (migration 00032), with their reason
// and time and no detail: what stops mail going to an address that asked
// for none, nothing more. One hash-only row per address (ON CONFLICT).
const hashSuppressionsSQL = `
	WITH plain AS (
		DELETE FROM suppressions WHERE email = ANY (SELECT lower(a) FROM unnest($1::text[]) a)
		RETURNING email, reason, created_at
	)
	INSERT INTO suppressions (email_sha256, reason, created_at)
	SELECT sha256(convert_to(email, 'UTF8')), reason, created_at FROM plain
	ON CONFLICT (email_sha256) WHERE email IS NULL DO NOTHING`

// HashSuppressions keeps the suppressions of emails only as the hashes of
// the addresses, in tx (an erasure's, account.Users.Erase): the
// suppression check still holds for them (SuppressedSQL), and no text of
// the addresses stays. The erasure hashes the user's current address and
// those it sent confirmation mails to; a package that recorded other
// addresses of the user (notify's digest ledger) hashes those in its
// eraser, before it deletes its record of them.
func HashSuppressions(ctx context.Context, tx pgx.Tx, emails []string) error {
	if len(emails) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, hashSuppressionsSQL, emails); err != nil {
		return fmt.Errorf("keeping %d suppressions as hashes: %w", len(emails), err)
	}
	return nil
}

// eraseOwn erases account's rows of userID in tx: the suppressions of
// their addresses as hashes (HashSuppressions), then eraseOwnSQL.
func eraseOwn(ctx context.Context, tx pgx.Tx, userID int64) error {
	rows, err := tx.Query(ctx, `
		SELECT email FROM users WHERE id = $1 AND email IS NOT NULL
		UNION
		SELECT email FROM confirmation_requests WHERE user_id = $1`, userID)
	if err != nil {
		return fmt.Errorf("reading the addresses of user %d: %w", userID, err)
	}
	emails, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("reading the addresses of user %d: %w", userID, err)
	}
	if err := HashSuppressions(ctx, tx, emails); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, eraseOwnSQL, userID); err != nil {
		return fmt.Errorf("erasing the account's rows: %w", err)
	}
	return nil
}
