package notify

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"time"

	"followfeed/account"
	"followfeed/database"
	"followfeed/mail"
)

// Confirmations sends the double opt-in mail of a new address (the
// address's lifecycle is account.Addresses').
type Confirmations struct {
	addrs  *account.Addresses
	sender mail.Sender
	from   *netmail.Address
	base   *url.URL
	now    func() time.Time
}

// NewConfirmations returns the confirmation mailer: mail from from, links
// made by addrs, the Message-ID's domain from base (PUBLIC_URL). now may be
// nil (time.Now).
func NewConfirmations(addrs *account.Addresses, sender mail.Sender, from *netmail.Address, base *url.URL, now func() time.Time) *Confirmations {
	if now == nil {
		now = time.Now
	}
	return &Confirmations{addrs: addrs, sender: sender, from: from, base: base, now: now}
}

// SendConfirmation mails the double opt-in link to the user's address, if
// it is still the unconfirmed address asked about. A user erased since the
// mail was queued gets none, and that is no error: the job is done.
func (c *Confirmations) SendConfirmation(ctx context.Context, userID int64, email string) error {
	epoch, due, err := c.addrs.ConfirmationDue(ctx, userID, email)
	if errors.Is(err, database.ErrNotFound) {
		return nil
	}
	if err != nil || !due {
		return err // !due: changed again, or confirmed meanwhile: nothing to ask
	}
	subject, text, html, err := RenderConfirm(ConfirmContent{Email: email, ConfirmURL: c.addrs.ConfirmURL(userID, epoch, email),
		ManageURL: c.addrs.ManageURL(userID, epoch)})
	if err != nil {
		return err
	}
	h := account.EmailHash(email)
	_, err = c.sender.Send(ctx, &mail.Message{From: c.from, To: email, Subject: subject, Text: []byte(text), HTML: []byte(html),
		MessageID: fmt.Sprintf("confirm.%d.%d.%x@%s", userID, epoch, h, c.base.Hostname()), Date: c.now(), AutoSubmitted: true})
	return err
}
