package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"strings"
	"sync"
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
	ActionFeedback    Action = 6 // "more like this", "less like this", "save": one paper, one value
	ActionOpen        Action = 7 // a mail's paper link: one paper, marked read when the user remembers what they opened
)

// ErrBadLink is returned for a link token that is malformed, forged, or for
// another action.
var ErrBadLink = errors.New("invalid or expired link")

// strictB64 decodes a signed token's parts: base64url without padding,
// its last character's unused bits zero. RawURLEncoding alone ignores
// them, so a link with its last character changed to one of three
// others ("…LScQHw" to "…LScQHx") decoded to the same bytes and was
// honoured; each token now has one spelling.
var strictB64 = base64.RawURLEncoding.Strict()

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
	// macs are HMACs keyed by key, reset between uses: a digest signs a
	// link per researcher match, and a new HMAC hashes the key twice
	// before the payload.
	macs sync.Pool
}

// NewLinkSigner returns a signer keyed by secret.
func NewLinkSigner(secret []byte) *LinkSigner {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("followfeed link tokens"))
	s := &LinkSigner{key: m.Sum(nil)}
	s.macs.New = func() any { return hmac.New(sha256.New, s.key) }
	return s
}

// Sign returns the token for l: "ffl_" + base64url(payload) + "." + mac.
func (s *LinkSigner) Sign(l Link) string {
	p := []byte{1, byte(l.Action)} // version 1
	p = binary.AppendVarint(p, l.UserID)
	p = binary.AppendVarint(p, l.Epoch)
	p = append(p, l.Data...)
	var sum [sha256.Size]byte
	enc := base64.RawURLEncoding
	mac := s.sum(sum[:0], p)[:16]
	b := make([]byte, 0, len(LinkPrefix)+enc.EncodedLen(len(p))+1+enc.EncodedLen(len(mac)))
	b = append(b, LinkPrefix...)
	b = enc.AppendEncode(b, p)
	b = append(b, '.')
	b = enc.AppendEncode(b, mac)
	return string(b)
}

func (s *LinkSigner) mac(p []byte) []byte {
	return s.sum(nil, p)[:16]
}

// sum appends the HMAC of p to dst.
func (s *LinkSigner) sum(dst, p []byte) []byte {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(p)
	dst = m.Sum(dst)
	s.macs.Put(m)
	return dst
}

// Verify checks tok's signature and action and returns its contents. The
// caller still compares Epoch with the user's current epoch.
func (s *LinkSigner) Verify(tok string, want Action) (Link, error) {
	// base64's decoder skips line breaks even when strict: a token with
	// one is not the token Sign wrote.
	if len(tok) > 512 || !strings.HasPrefix(tok, LinkPrefix) || strings.ContainsAny(tok, "\r\n") {
		return Link{}, ErrBadLink
	}
	body, sig, ok := strings.Cut(tok[len(LinkPrefix):], ".")
	if !ok {
		return Link{}, ErrBadLink
	}
	p, err1 := strictB64.DecodeString(body)
	mac, err2 := strictB64.DecodeString(sig)
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
