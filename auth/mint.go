package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultMintTTL is the lifetime of a minted token whose TTL is zero.
const DefaultMintTTL = time.Hour

// MaxMintTTL is the longest lifetime MintHS256 accepts.
const MaxMintTTL = 30 * 24 * time.Hour

// MintOptions describes a token to mint. Subject is required; a zero TTL
// means DefaultMintTTL and a zero Now means time.Now(). Issuer and Audience
// are set as iss and aud when non-empty.
type MintOptions struct {
	Subject       string
	Email         string
	EmailVerified bool
	Scopes        []string
	TTL           time.Duration
	Issuer        string
	Audience      string
	Now           time.Time
}

// mintClaims is the payload MintHS256 writes.
type mintClaims struct {
	jwt.RegisteredClaims
	Email         string `json:"email,omitempty"`
	EmailVerified bool   `json:"email_verified,omitempty"`
	Scope         string `json:"scope,omitempty"`
}

// MintHS256 returns an HS256 JWT signed with secret that a Verifier with the
// same secret (and o.Issuer/o.Audience, if it checks them) accepts until
// Now+TTL: it carries sub, email, email_verified, scope (space-separated),
// iat, exp, a random jti, and iss/aud when set. It fails if secret or
// Subject is empty, Subject is longer than MaxSubjectLen, a scope is empty
// or contains whitespace, or TTL is negative or above MaxMintTTL.
func MintHS256(secret []byte, o MintOptions) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("auth: mint: the HS256 secret is empty")
	}
	if o.Subject == "" {
		return "", errors.New("auth: mint: Subject is required")
	}
	if len(o.Subject) > MaxSubjectLen {
		return "", fmt.Errorf("auth: mint: Subject is %d bytes; at most %d are accepted", len(o.Subject), MaxSubjectLen)
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = DefaultMintTTL
	}
	if ttl < 0 || ttl > MaxMintTTL {
		return "", fmt.Errorf("auth: mint: TTL %v is out of range (0, %v]", o.TTL, MaxMintTTL)
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
			return "", fmt.Errorf("auth: mint: scope %q is empty or contains whitespace", s)
		}
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	c := mintClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   o.Subject,
			Issuer:    o.Issuer,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
			ID:        rand.Text(),
		},
		Email:         o.Email,
		EmailVerified: o.EmailVerified,
		Scope:         strings.Join(o.Scopes, " "),
	}
	if o.Audience != "" {
		c.Audience = jwt.ClaimStrings{o.Audience}
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("auth: mint: sign: %w", err)
	}
	return s, nil
}

// DemoKeyID is the kid of tokens signed with the development demo key
// (VerifierConfig.DemoHS256Secret); DemoSubject is the only subject such a
// token may name.
const (
	DemoKeyID   = "followfeed-demo"
	DemoSubject = "demo-user"
)

// MintDemo returns a one-hour token for DemoSubject signed with the demo
// key (kid DemoKeyID), for the /embed/demo page in development; issuer and
// audience, when set, become iss and aud so a verifier that checks them
// accepts it.
func MintDemo(secret []byte, now time.Time, issuer, audience string) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("auth: mint: the demo key is empty")
	}
	c := mintClaims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: DemoSubject, Issuer: issuer, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: rand.Text(),
	}}
	if audience != "" {
		c.Audience = jwt.ClaimStrings{audience}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	tok.Header["kid"] = DemoKeyID
	s, err := tok.SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("auth: mint: sign: %w", err)
	}
	return s, nil
}
