package channels

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
)

// RevealPrefix starts a secret page's nonce ("ffr_"): request logs redact
// path segments of this form like the service's other tokens.
const RevealPrefix = "ffr_"

// RevealTTL is how long a secret page can be opened after the form that
// made it.
const RevealTTL = 15 * time.Minute

// Revealed is what a secret page shows: the webhook's current signing
// secret, once.
type Revealed struct {
	ChannelID int64
	URL       string // the webhook's URL
	Secret    string
	Rotated   bool // the secret was rotated: the previous one still signs
}

// OfferSecret makes a one-time page for the current signing secret of the
// user's webhook channel (after Create, or RotateSecret when rotated) and
// returns its nonce. The settings page redirects to it, so reloading shows
// the page (or "already shown"), never submits the form again.
func (s *Service) OfferSecret(ctx context.Context, userID, channelID int64, rotated bool) (string, error) {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	nonce := RevealPrefix + base64.RawURLEncoding.EncodeToString(b)
	tag, err := s.db.Pool.Exec(ctx, `
		INSERT INTO channel_reveals (nonce, channel_id, rotated, expires_at)
		SELECT $1, id, $4, $5 FROM channels WHERE id = $2 AND user_id = $3 AND type = 'webhook'`,
		nonce, channelID, userID, rotated, s.now().Add(RevealTTL))
	if err != nil {
		return "", fmt.Errorf("making the secret page of channel %d: %w", channelID, err)
	}
	if tag.RowsAffected() == 0 {
		return "", database.Missing("webhook channel %d does not exist", channelID)
	}
	return nonce, nil
}

// RevealSecret opens the secret page nonce of the user: it returns the
// channel's current secret and deletes the page in the same statement, so
// it succeeds once. A page already opened, expired, of another user or
// never made is a NotFound saying so; it is not consumed by another user.
func (s *Service) RevealSecret(ctx context.Context, userID int64, nonce string) (*Revealed, error) {
	if !strings.HasPrefix(nonce, RevealPrefix) || len(nonce) > 64 {
		return nil, database.Missing("this secret page does not exist")
	}
	var r Revealed
	// channel_reveals_pkey, then channels_pkey.
	err := s.db.Pool.QueryRow(ctx, `
		DELETE FROM channel_reveals r USING channels c
		WHERE r.nonce = $1 AND c.id = r.channel_id AND c.user_id = $2 AND r.expires_at > $3
		RETURNING c.id, c.url, c.secret, r.rotated`, nonce, userID, s.now()).Scan(&r.ChannelID, &r.URL, &r.Secret, &r.Rotated)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, database.Missing(
			"this signing secret was already shown, or its page expired; rotate the webhook's secret to get a new one")
	}
	if err != nil {
		return nil, fmt.Errorf("opening a secret page: %w", err)
	}
	if r.Secret, err = s.seal.open(credSecret, userID, r.Secret); err != nil {
		return nil, err
	}
	return &r, nil
}
