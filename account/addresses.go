package account

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/database"
	"followfeed/internal/text"
)

// DigestHooks are what changes of an address mean for the user's digests
// (their schedule is notify's; notify.Preferences implements this). Each
// runs in the transaction of the change, so both commit together.
type DigestHooks interface {
	// AddressConfirmed gives the user a next digest time if their settings
	// call for one and none is set.
	AddressConfirmed(ctx context.Context, tx pgx.Tx, userID int64) error
	// AddressPaused clears the next digest time of the users: their address
	// is suppressed or no longer confirmed.
	AddressPaused(ctx context.Context, tx pgx.Tx, userIDs []int64) error
	// DigestsOff turns the user's digests off (one-click unsubscribe).
	DigestsOff(ctx context.Context, tx pgx.Tx, userID int64) error
}

// ConfirmEnqueuer queues the confirmation mail of a new address inside the
// transaction that set it (worker.Enqueuer implements it).
type ConfirmEnqueuer interface {
	EnqueueConfirm(ctx context.Context, tx pgx.Tx, userID int64, email string) error
}

// Addresses is the lifecycle of a user's email address: set (unconfirmed),
// confirmed by a signed link, suppressed by a bounce or an unsubscribe,
// asked to confirm again, and the signed links that manage it (manage,
// unsubscribe, confirm), which carry the user's link epoch and are revoked
// by moving it on.
type Addresses struct {
	db      *database.DB
	signer  *auth.LinkSigner
	base    *url.URL
	enq     ConfirmEnqueuer
	digests DigestHooks
	// tokenBases are abs(prefix) of each prefix a signed link's token
	// follows (tokenPrefixes): such a link is its base and the token,
	// which needs no escaping (base64url), where abs built and printed a
	// url.URL for every one; a digest carries three feedback links a
	// paper, and a "Not by …?" link per followed person's paper.
	tokenBases map[string]string
}

// tokenPrefixes are the paths signed links' tokens follow (tokenURL).
var tokenPrefixes = []string{"/feedback/", "/not-this-person/", "/unsubscribe/", "/open/", "/confirm/"}

// NewAddresses returns the address lifecycle over db. signer signs and
// checks the links, base (PUBLIC_URL) makes them absolute; enq may be nil
// (no confirmation mails are queued).
func NewAddresses(db *database.DB, signer *auth.LinkSigner, base *url.URL, enq ConfirmEnqueuer) *Addresses {
	a := &Addresses{db: db, signer: signer, base: base, enq: enq, tokenBases: map[string]string{}}
	// A base with a query or a fragment (PUBLIC_URL may have one) puts
	// them after the path, so its links are made whole each time (abs).
	if base != nil && base.RawQuery == "" && base.Fragment == "" && !base.ForceQuery {
		for _, p := range tokenPrefixes {
			a.tokenBases[p] = a.abs(p, "", "")
		}
	}
	return a
}

// OnDigests sets what address changes do to digests. Call it before the
// Addresses are used; without it they change only the address.
func (a *Addresses) OnDigests(h DigestHooks) { a.digests = h }

// ---- links ----

func (a *Addresses) abs(path, key, value string) string {
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	if key != "" {
		u.RawQuery = url.Values{key: {value}}.Encode()
	}
	return u.String()
}

// tokenURL is the absolute link of a signed token under prefix (one of
// tokenPrefixes): what abs(prefix+tok) gives, for a token of base64url's
// letters (precomputed but for a base with a query or a fragment).
func (a *Addresses) tokenURL(prefix, tok string) string {
	if b, ok := a.tokenBases[prefix]; ok {
		return b + tok
	}
	return a.abs(prefix+tok, "", "")
}

// ManageURL is the "manage preferences" link of the user's mails: the
// settings page, signed in by the link, at the email section.
func (a *Addresses) ManageURL(userID, epoch int64) string {
	return a.abs("/settings", "token", a.signer.Sign(auth.Link{Action: auth.ActionManage, UserID: userID, Epoch: epoch})) + "#email"
}

// InboxURL is the inbox page, best first when best is set: where a
// digest's papers beyond its budget can be read on the site (a session's
// page: a reader not signed in is sent to sign in). It names no user and
// carries no token, so a forwarded mail opens nobody's inbox.
func (a *Addresses) InboxURL(best bool) string {
	if best {
		return a.abs("/inbox", "order", "best")
	}
	return a.abs("/inbox", "", "")
}

// UnsubscribeURL is the one-click unsubscribe link of the user's digests.
func (a *Addresses) UnsubscribeURL(userID, epoch int64) string {
	return a.tokenURL("/unsubscribe/", a.signer.Sign(auth.Link{Action: auth.ActionUnsubscribe, UserID: userID, Epoch: epoch}))
}

// DisputeURL is the "Not by …?" link beside a researcher match in a
// digest: it names the paper (arxivID) and the followed researcher id.
func (a *Addresses) DisputeURL(userID, epoch int64, arxivID, researcherID string) string {
	data := []byte(arxivID + "\x00" + researcherID)
	return a.tokenURL("/not-this-person/", a.signer.Sign(auth.Link{Action: auth.ActionDispute, UserID: userID, Epoch: epoch, Data: data}))
}

// FeedbackURL is a paper's one-click feedback link in a mail, a feed item
// or a push message: one user, one paper (papers.id) and one value
// ("more", "less" or "saved", package ranking's), signed; its page shows
// a button that records the value, and the link works again to change or
// undo it. Like every link it dies with the user's link epoch.
func (a *Addresses) FeedbackURL(userID, epoch, paperID int64, value string) string {
	var buf [binary.MaxVarintLen64 + 8]byte
	data := append(binary.AppendVarint(buf[:0], paperID), value...)
	tok := a.signer.Sign(auth.Link{Action: auth.ActionFeedback, UserID: userID, Epoch: epoch, Data: data})
	return a.tokenURL("/feedback/", tok)
}

// CheckFeedback resolves a FeedbackURL token to its user, paper and value;
// a forged, malformed or revoked link (or a user since erased) is
// auth.ErrBadLink.
func (a *Addresses) CheckFeedback(ctx context.Context, tok string) (userID, paperID int64, value string, err error) {
	l, err := a.CheckFeedbackLink(ctx, tok)
	return l.UserID, l.PaperID, l.Value, err
}

// FeedbackLink is what a FeedbackURL names: one user, with the link epoch
// it was made in (the user's current one, once checked), one paper
// (papers.id) and one value.
type FeedbackLink struct {
	UserID, Epoch, PaperID int64
	Value                  string
}

// CheckFeedbackLink is CheckFeedback with the link's epoch, so that the
// link's page can offer other links of the same user (DisputeURL) that
// die with it.
func (a *Addresses) CheckFeedbackLink(ctx context.Context, tok string) (FeedbackLink, error) {
	var out FeedbackLink
	err := a.db.InTx(ctx, func(tx pgx.Tx) error {
		l, _, err := a.checkLink(ctx, tx, tok, auth.ActionFeedback)
		if err != nil {
			return err
		}
		id, n := binary.Varint(l.Data)
		if n <= 0 || id <= 0 || n == len(l.Data) {
			return auth.ErrBadLink
		}
		out = FeedbackLink{UserID: l.UserID, Epoch: l.Epoch, PaperID: id, Value: string(l.Data[n:])}
		return nil
	})
	if err != nil {
		return FeedbackLink{}, err
	}
	return out, nil
}

// OpenURL is a mail's link to one paper (papers.id) for the user: a
// signed redirect (GET /open/{token}) that marks the paper read when the
// user asked followfeed to remember what they opened (package inbox), then
// sends them on to the paper. Revoking the user's links ends it.
func (a *Addresses) OpenURL(userID, epoch, paperID int64) string {
	var buf [binary.MaxVarintLen64]byte
	tok := a.signer.Sign(auth.Link{Action: auth.ActionOpen, UserID: userID, Epoch: epoch, Data: binary.AppendVarint(buf[:0], paperID)})
	return a.tokenURL("/open/", tok)
}

// CheckOpen resolves an OpenURL token to its user and paper; a forged,
// malformed or revoked link (or a user since erased) is auth.ErrBadLink.
func (a *Addresses) CheckOpen(ctx context.Context, tok string) (userID, paperID int64, err error) {
	err = a.db.InTx(ctx, func(tx pgx.Tx) error {
		l, _, err := a.checkLink(ctx, tx, tok, auth.ActionOpen)
		if err != nil {
			return err
		}
		id, n := binary.Varint(l.Data)
		if n <= 0 || id <= 0 || n != len(l.Data) {
			return auth.ErrBadLink
		}
		userID, paperID = l.UserID, id
		return nil
	})
	return userID, paperID, err
}

// CheckDispute resolves a DisputeURL token to its user, paper and
// researcher id; a forged, malformed or revoked link is auth.ErrBadLink.
func (a *Addresses) CheckDispute(ctx context.Context, tok string) (userID int64, arxivID, researcherID string, err error) {
	err = a.db.InTx(ctx, func(tx pgx.Tx) error {
		l, _, err := a.checkLink(ctx, tx, tok, auth.ActionDispute)
		if err != nil {
			return err
		}
		var ok bool
		arxivID, researcherID, ok = strings.Cut(string(l.Data), "\x00")
		if !ok {
			return auth.ErrBadLink
		}
		userID = l.UserID
		return nil
	})
	return userID, arxivID, researcherID, err
}

// emailHash binds a confirmation link to one address.
func emailHash(email string) []byte {
	h := sha256.Sum256([]byte(strings.ToLower(email)))
	return h[:8]
}

// EmailHash is the short hash a confirmation link carries to bind it to
// one address (compared without regard to case).
func EmailHash(email string) []byte { return emailHash(email) }

// ConfirmURL is the double opt-in link for the user's current address.
func (a *Addresses) ConfirmURL(userID, epoch int64, email string) string {
	return a.tokenURL("/confirm/", a.signer.Sign(auth.Link{Action: auth.ActionConfirm, UserID: userID, Epoch: epoch, Data: emailHash(email)}))
}

// checkLink verifies a signed link against the user's current epoch,
// locking the user's row in tx.
func (a *Addresses) checkLink(ctx context.Context, tx pgx.Tx, tok string, action auth.Action) (auth.Link, string, error) {
	l, err := a.signer.Verify(tok, action)
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

// ManageUser resolves a "manage preferences" link to its user.
func (a *Addresses) ManageUser(ctx context.Context, tok string) (int64, error) {
	var uid int64
	err := a.db.InTx(ctx, func(tx pgx.Tx) error {
		l, _, err := a.checkLink(ctx, tx, tok, auth.ActionManage)
		uid = l.UserID
		return err
	})
	return uid, err
}

// RevokeLinks invalidates every signed link of the user's earlier emails
// (manage preferences, unsubscribe, confirm) and ends every settings
// session (someone who used a leaked link may have signed in): links carry
// the user's link epoch and sessions the session epoch, which this moves
// on. Later emails carry working links. The feedback links of the
// user's private feed items carry the epoch too: the feed version moves
// with it (BumpFeeds), so feed readers fetch the items with new links.
func (a *Addresses) RevokeLinks(ctx context.Context, userID int64) error {
	return a.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE users SET link_epoch = link_epoch + 1, session_epoch = session_epoch + 1, updated_at = now()
			WHERE id = $1`, userID)
		if err != nil {
			return fmt.Errorf("revoking the email links of user %d: %w", userID, err)
		}
		if tag.RowsAffected() == 0 {
			return database.NotFound(pgx.ErrNoRows, fmt.Sprintf("revoking the email links of user %d", userID))
		}
		return BumpFeeds(ctx, tx, userID)
	})
}

// ---- unsubscribe and suppression ----

// Unsubscribe (RFC 8058 one-click) turns the user's digests off and
// suppresses their address until they confirm it again. It is idempotent
// and needs no session: the signed token is the authority. It returns the
// address that was unsubscribed.
func (a *Addresses) Unsubscribe(ctx context.Context, tok string) (string, error) {
	var email string
	err := a.db.InTx(ctx, func(tx pgx.Tx) error {
		l, addr, err := a.checkLink(ctx, tx, tok, auth.ActionUnsubscribe)
		if err != nil {
			return err
		}
		email = addr
		if _, err := tx.Exec(ctx, `UPDATE users SET updated_at = now() WHERE id = $1`, l.UserID); err != nil {
			return err
		}
		if a.digests != nil {
			if err := a.digests.DigestsOff(ctx, tx, l.UserID); err != nil {
				return err
			}
		}
		return a.Suppress(ctx, tx, addr, "unsubscribe", "one-click unsubscribe")
	})
	return email, err
}

// CheckUnsubscribe says whose link tok is, without changing anything (the
// page a GET shows).
func (a *Addresses) CheckUnsubscribe(ctx context.Context, tok string) (string, error) {
	var email string
	err := a.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		_, email, err = a.checkLink(ctx, tx, tok, auth.ActionUnsubscribe)
		return err
	})
	return email, err
}

// Suppress stops all mail to email (reason "bounce" or "unsubscribe", with
// detail cut to 500 bytes) until its owner confirms it again, in tx; the
// users with that address lose their next digest time. An empty email is
// a no-op.
func (a *Addresses) Suppress(ctx context.Context, tx pgx.Tx, email, reason, detail string) error {
	if email == "" {
		return nil
	}
	// One row per address: a hash-only row an erased user left for it
	// (Users.Erase) gives way to the address's own.
	if _, err := tx.Exec(ctx, `
		WITH hashed AS (
			DELETE FROM suppressions WHERE email IS NULL AND email_sha256 = sha256(convert_to(lower($1), 'UTF8'))
		)
		INSERT INTO suppressions (email, reason, detail) VALUES (lower($1), $2, $3)
		ON CONFLICT (email) DO UPDATE SET reason = $2, detail = $3, created_at = now()`,
		email, reason, text.Truncate(detail, 500)); err != nil {
		return fmt.Errorf("suppressing an address: %w", err)
	}
	if a.digests == nil {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM users WHERE lower(email) = lower($1)`, email)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return err
	}
	return a.digests.AddressPaused(ctx, tx, ids)
}

// ---- confirmation ----

// ConfirmationDue says whether the confirmation mail for email should go
// to the user: it is still their address and not confirmed yet. It returns
// the user's link epoch to sign the mail's links with. A mail that is not
// due is not sent, so it stops counting against the caps: one of the
// user's confirmation mails to email counted in the window is forgotten
// (the caps count mails queued or sent, not requests).
func (a *Addresses) ConfirmationDue(ctx context.Context, userID int64, email string) (epoch int64, due bool, err error) {
	var current string
	var confirmed bool
	err = a.db.Pool.QueryRow(ctx, `SELECT coalesce(email, ''), email_confirmed_at IS NOT NULL, link_epoch FROM users WHERE id = $1`, userID).
		Scan(&current, &confirmed, &epoch)
	if err != nil {
		return 0, false, database.NotFound(err, fmt.Sprintf("reading user %d", userID))
	}
	if due = strings.EqualFold(current, email) && !confirmed; !due {
		// confirmation_requests_user_idx: the user's newest row in the
		// window, if it names email (it almost always is the newest).
		if _, err := a.db.Pool.Exec(ctx, `
			DELETE FROM confirmation_requests WHERE id = (
				SELECT id FROM confirmation_requests
				WHERE user_id = $1 AND email = $2 AND created_at > now() - $3::interval
				ORDER BY created_at DESC, id DESC LIMIT 1)`,
			userID, strings.ToLower(strings.TrimSpace(email)), confirmationWindow.String()); err != nil {
			return 0, false, fmt.Errorf("forgetting a confirmation mail not sent: %w", err)
		}
	}
	return epoch, due, nil
}

// CheckConfirm says which address tok would confirm, changing nothing.
func (a *Addresses) CheckConfirm(ctx context.Context, tok string) (string, error) {
	var email string
	err := a.db.InTx(ctx, func(tx pgx.Tx) error {
		addr, _, err := a.confirmLink(ctx, tx, tok)
		email = addr
		return err
	})
	return email, err
}

// confirmLink checks a confirmation link in tx and returns the address it
// confirms and its user: auth.ErrBadLink when the link is not valid or the
// user's address changed since it was made.
func (a *Addresses) confirmLink(ctx context.Context, tx pgx.Tx, tok string) (string, int64, error) {
	l, addr, err := a.checkLink(ctx, tx, tok, auth.ActionConfirm)
	if err != nil {
		return "", 0, err
	}
	if addr == "" || string(l.Data) != string(emailHash(addr)) {
		return "", 0, auth.ErrBadLink
	}
	return addr, l.UserID, nil
}

// Confirm confirms the address a confirmation link was made for: digests may
// go to it (its suppression, if any, is lifted: kept as the address or,
// left by an erased user, as its hash) and the next digest is scheduled.
// It returns the confirmed address.
func (a *Addresses) Confirm(ctx context.Context, tok string) (string, error) {
	var email string
	err := a.db.InTx(ctx, func(tx pgx.Tx) error {
		addr, userID, err := a.confirmLink(ctx, tx, tok)
		if err != nil {
			return err
		}
		email = addr
		// Both forms: the address, and the hash an erased user's
		// suppression of it is kept as (suppressions_email_sha256_idx).
		if _, err := tx.Exec(ctx, `
			DELETE FROM suppressions
			WHERE email = lower($1) OR (email IS NULL AND email_sha256 = sha256(convert_to(lower($1), 'UTF8')))`, addr); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE users SET email_confirmed_at = coalesce(email_confirmed_at, now()), updated_at = now() WHERE id = $1`, userID); err != nil {
			return err
		}
		if a.digests == nil {
			return nil
		}
		return a.digests.AddressConfirmed(ctx, tx, userID)
	})
	return email, err
}

// Reconfirm asks the owner of a paused (bounced or unsubscribed) address to
// confirm it again: the address becomes unconfirmed, earlier links are
// revoked (the feed version moves with the link epoch), and a
// confirmation mail is queued. Confirming lifts the pause.
func (a *Addresses) Reconfirm(ctx context.Context, userID int64) error {
	return a.db.InTx(ctx, func(tx pgx.Tx) error {
		var email string
		err := tx.QueryRow(ctx, `
			UPDATE users SET email_confirmed_at = NULL, link_epoch = link_epoch + 1, updated_at = now()
			WHERE id = $1 AND email IS NOT NULL RETURNING email`, userID).Scan(&email)
		if err != nil {
			return database.NotFound(err, fmt.Sprintf("asking user %d to reconfirm", userID))
		}
		// The feed's feedback links carry the epoch that moved.
		if err := BumpFeeds(ctx, tx, userID); err != nil {
			return err
		}
		if a.digests != nil {
			if err := a.digests.AddressPaused(ctx, tx, []int64{userID}); err != nil {
				return err
			}
		}
		if a.enq == nil {
			return nil
		}
		if err := capConfirmations(ctx, tx, userID, email); err != nil {
			return err
		}
		return a.enq.EnqueueConfirm(ctx, tx, userID, email)
	})
}

// Caps on confirmation mails, over the last 24 hours: a user cannot use
// them to mail-bomb an address (their own changes, or many accounts
// naming one victim). They count mails, queued or sent: a request whose
// mail turns out not to be due (the address changed again before it went,
// or was confirmed) is forgotten by ConfirmationDue, so a user who
// corrects a typo twice is not capped by mails nobody got.
const (
	MaxConfirmationsPerUser    = 10
	MaxConfirmationsPerAddress = 3
	confirmationWindow         = 24 * time.Hour
)

// capConfirmations records a confirmation mail to email for userID in tx
// (its job is queued in the same transaction), or refuses it
// (apperr.RateLimited) when the user or the address had their share of
// mails queued or sent in the last day. The counts live in the database, so the
// caps hold across processes; an advisory lock on the address serialises
// concurrent requests naming it (the caller holds the user's row lock).
func capConfirmations(ctx context.Context, tx pgx.Tx, userID int64, email string) error {
	addr := strings.ToLower(strings.TrimSpace(email))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('followfeed confirm ' || $1, 0))`, addr); err != nil {
		return fmt.Errorf("locking confirmations of an address: %w", err)
	}
	var perUser, perAddr int
	// Both counts are index range scans (confirmation_requests_user_idx,
	// confirmation_requests_email_idx).
	err := tx.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM confirmation_requests WHERE user_id = $1 AND created_at > now() - $3::interval),
		       (SELECT count(*) FROM confirmation_requests WHERE email = $2 AND created_at > now() - $3::interval)`,
		userID, addr, confirmationWindow.String()).Scan(&perUser, &perAddr)
	if err != nil {
		return fmt.Errorf("counting confirmation mails: %w", err)
	}
	switch {
	case perAddr >= MaxConfirmationsPerAddress:
		return apperr.New(apperr.RateLimited, "%s already got %d confirmation mails in the last 24 hours; use the link in one of them, or try again tomorrow",
			text.Truncate(addr, 80), perAddr)
	case perUser >= MaxConfirmationsPerUser:
		return apperr.New(apperr.RateLimited, "your account asked for %d confirmation mails in the last 24 hours, the most it may; try again tomorrow", perUser)
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM confirmation_requests WHERE (user_id = $1 OR email = $2) AND created_at < now() - $3::interval`,
		userID, addr, confirmationWindow.String()); err != nil {
		return fmt.Errorf("forgetting old confirmation mails: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO confirmation_requests (user_id, email) VALUES ($1, $2)`, userID, addr); err != nil {
		return fmt.Errorf("recording a confirmation mail: %w", err)
	}
	return nil
}

// SetContact writes the user's address and time zone in tx (the caller
// has validated both and holds the user's row lock). A new address starts
// unconfirmed, revokes earlier email links and gets a confirmation mail
// queued (refused with apperr.RateLimited beyond MaxConfirmationsPerUser
// or MaxConfirmationsPerAddress a day), and the feed version moves with
// the link epoch (BumpFeeds). It reports whether the address
// changed (compared without regard to case).
func (a *Addresses) SetContact(ctx context.Context, tx pgx.Tx, userID int64, email, timezone string) (emailChanged bool, err error) {
	var old string
	if err := tx.QueryRow(ctx, `SELECT coalesce(email, '') FROM users WHERE id = $1`, userID).Scan(&old); err != nil {
		return false, database.NotFound(err, fmt.Sprintf("reading user %d", userID))
	}
	emailChanged = !strings.EqualFold(old, email)
	if _, err := tx.Exec(ctx, `
		UPDATE users SET
			email = nullif($2, ''),
			email_confirmed_at = CASE WHEN $3 THEN NULL ELSE email_confirmed_at END,
			link_epoch = link_epoch + CASE WHEN $3 THEN 1 ELSE 0 END,
			timezone = $4,
			updated_at = now()
		WHERE id = $1`, userID, email, emailChanged, timezone); err != nil {
		return false, fmt.Errorf("updating the address of user %d: %w", userID, err)
	}
	if emailChanged {
		// The link epoch moved: so do the feed's feedback links.
		if err := BumpFeeds(ctx, tx, userID); err != nil {
			return false, err
		}
	}
	if emailChanged && email != "" && a.enq != nil {
		if err := capConfirmations(ctx, tx, userID, email); err != nil {
			return false, err
		}
		if err := a.enq.EnqueueConfirm(ctx, tx, userID, email); err != nil {
			return false, fmt.Errorf("queueing the confirmation mail: %w", err)
		}
	}
	return emailChanged, nil
}
