package notify

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"followfeed/auth"
	"followfeed/database"
	"followfeed/mail"
)

// checkLink verifies a signed link against the user's current epoch.
func (d *Digester) checkLink(ctx context.Context, tx pgx.Tx, tok string, action auth.Action) (auth.Link, string, error) {
	l, err := d.signer.Verify(tok, action)
	if err != nil {
		return l, "", err
	}
	var epoch int64
	var email string
	err = tx.QueryRow(ctx, `SELECT link_epoch, coalesce(email, '') FROM users WHERE id = $1 FOR UPDATE`, l.UserID).Scan(&epoch, &email)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && epoch != l.Epoch) {
		return l, "", auth.ErrBadLink
	}
	return l, email, err
}

// Unsubscribe (RFC 8058 one-click) turns the user's digests off and
// suppresses their address until they confirm it again. It is idempotent
// and needs no session: the signed token is the authority. It returns the
// address that was unsubscribed.
func (d *Digester) Unsubscribe(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := d.checkLink(ctx, tx, tok, auth.ActionUnsubscribe)
		if err != nil {
			return err
		}
		email = addr
		if _, err := tx.Exec(ctx, `UPDATE users SET digest_frequency = 'off', digest_next_at = NULL, updated_at = now() WHERE id = $1`, l.UserID); err != nil {
			return err
		}
		return suppressAddress(ctx, tx, addr, "unsubscribe", "one-click unsubscribe")
	})
	return email, err
}

// CheckUnsubscribe says whose link tok is, without changing anything (the
// page a GET shows).
func (d *Digester) CheckUnsubscribe(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		_, email, err = d.checkLink(ctx, tx, tok, auth.ActionUnsubscribe)
		return err
	})
	return email, err
}

// ManageUser resolves a "manage preferences" link to its user.
func (d *Digester) ManageUser(ctx context.Context, tok string) (int64, error) {
	var uid int64
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, _, err := d.checkLink(ctx, tx, tok, auth.ActionManage)
		uid = l.UserID
		return err
	})
	return uid, err
}

// emailHash binds a confirmation link to one address.
func emailHash(email string) []byte {
	h := sha256.Sum256([]byte(strings.ToLower(email)))
	return h[:8]
}

// ConfirmURL is the double opt-in link for the user's current address.
func (d *Digester) ConfirmURL(userID, epoch int64, email string) string {
	return d.abs("/confirm/"+d.signer.Sign(auth.Link{Action: auth.ActionConfirm, UserID: userID, Epoch: epoch, Data: emailHash(email)}), "", "")
}

// SendConfirmation mails the double opt-in link to the user's address, if
// it is still the unconfirmed address asked about.
func (d *Digester) SendConfirmation(ctx context.Context, userID int64, email string) error {
	var current string
	var confirmed bool
	var epoch int64
	err := d.db.Pool.QueryRow(ctx, `SELECT coalesce(email, ''), email_confirmed_at IS NOT NULL, link_epoch FROM users WHERE id = $1`, userID).
		Scan(&current, &confirmed, &epoch)
	if err != nil {
		return database.NotFound(err, fmt.Sprintf("reading user %d", userID))
	}
	if !strings.EqualFold(current, email) || confirmed {
		return nil // changed again, or confirmed meanwhile: nothing to ask
	}
	subject, text, html, err := RenderConfirm(ConfirmContent{Email: email, ConfirmURL: d.ConfirmURL(userID, epoch, email),
		ManageURL: d.abs("/settings", "token", d.signer.Sign(auth.Link{Action: auth.ActionManage, UserID: userID, Epoch: epoch})) + "#email"})
	if err != nil {
		return err
	}
	h := emailHash(email)
	_, err = d.sender.Send(ctx, &mail.Message{From: d.from, To: email, Subject: subject, Text: text, HTML: html,
		MessageID: fmt.Sprintf("confirm.%d.%d.%x@%s", userID, epoch, h, d.base.Hostname()), Date: d.now(), AutoSubmitted: true})
	return err
}

// CheckConfirm says which address tok would confirm, changing nothing.
func (d *Digester) CheckConfirm(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := d.checkLink(ctx, tx, tok, auth.ActionConfirm)
		if err != nil {
			return err
		}
		if addr == "" || string(l.Data) != string(emailHash(addr)) {
			return auth.ErrBadLink
		}
		email = addr
		return nil
	})
	return email, err
}

// Confirm confirms the address a confirmation link was made for: digests may
// go to it (its suppression, if any, is lifted) and the next digest is
// scheduled. It returns the confirmed address.
func (d *Digester) Confirm(ctx context.Context, tok string) (string, error) {
	var email string
	err := d.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := d.checkLink(ctx, tx, tok, auth.ActionConfirm)
		if err != nil {
			return err
		}
		if addr == "" || string(l.Data) != string(emailHash(addr)) {
			return auth.ErrBadLink // the address changed since the link was made
		}
		email = addr
		if _, err := tx.Exec(ctx, `DELETE FROM suppressions WHERE email = lower($1)`, addr); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE users SET email_confirmed_at = coalesce(email_confirmed_at, now()), updated_at = now() WHERE id = $1`, l.UserID); err != nil {
			return err
		}
		return scheduleConfirmed(ctx, tx, l.UserID, d.now())
	})
	return email, err
}
