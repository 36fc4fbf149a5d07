package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// LinkPrefix starts every signed email-link token.
const LinkPrefix = "ffl_"

// Action is what a signed link allows; a token for one action is useless
// for another.
type Action byte

// The actions of signed links.
const (
	ActionUnsubscribe Action = 1 // stop digests (RFC 8058 one-click)
	ActionManage      Action = 2 // open the email settings without signing in
	ActionConfirm     Action = 3 // confirm an email address (double opt-in)
	ActionSession     Action = 4 // a settings-page session cookie
	ActionDispute     Action = 5 // "not this person": one paper, one followed researcher
)

// ErrBadLink is returned for a link token that is malformed, forged, or for
// another action.
var ErrBadLink = errors.New("invalid or expired link")

// Link is what a signed link token says.
type Link struct {
	Action Action
	UserID int64
	// Epoch must equal the user's current link epoch; bumping that epoch
	// revokes every earlier link.
	Epoch int64
	// Data binds the link to something else, e.g. a hash of the address a
	// confirmation link confirms, or a session's expiry.
	Data []byte
}

// LinkSigner makes and checks signed link tokens with SECRET_KEY. Tokens
// are HMAC-SHA256 signed (truncated to 128 bits) and carry no expiry of
// their own: they stay valid until the user's link epoch changes.
type LinkSigner struct {
	key []byte
}

// NewLinkSigner returns a signer keyed by secret.
func NewLinkSigner(secret []byte) *LinkSigner {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("followfeed link tokens"))
	return &LinkSigner{key: m.Sum(nil)}
}

// Sign returns the token for l: "ffl_" + base64url(payload) + "." + mac.
func (s *LinkSigner) Sign(l Link) string {
	p := []byte{1, byte(l.Action)} // version 1
	p = binary.AppendVarint(p, l.UserID)
	p = binary.AppendVarint(p, l.Epoch)
	p = append(p, l.Data...)
	return LinkPrefix + base64.RawURLEncoding.EncodeToString(p) + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s *LinkSigner) mac(p []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(p)
	return m.Sum(nil)[:16]
}

// Verify checks tok's signature and action and returns its contents. The
// caller still compares Epoch with the user's current epoch.
func (s *LinkSigner) Verify(tok string, want Action) (Link, error) {
	if len(tok) > 512 || !strings.HasPrefix(tok, LinkPrefix) {
		return Link{}, ErrBadLink
	}
	body, sig, ok := strings.Cut(tok[len(LinkPrefix):], ".")
	if !ok {
		return Link{}, ErrBadLink
	}
	p, err1 := base64.RawURLEncoding.DecodeString(body)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(p)) {
		return Link{}, ErrBadLink
	}
	if len(p) < 2 || p[0] != 1 || Action(p[1]) != want {
		return Link{}, ErrBadLink
	}
	rest := p[2:]
	uid, n := binary.Varint(rest)
	if n <= 0 || uid <= 0 {
		return Link{}, ErrBadLink
	}
	rest = rest[n:]
	epoch, n := binary.Varint(rest)
	if n <= 0 {
		return Link{}, ErrBadLink
	}
	return Link{Action: want, UserID: uid, Epoch: epoch, Data: rest[n:]}, nil
}
