package channels

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Credentials at rest: a webhook's signing secrets, a Matrix access token
// and a Slack or Discord incoming-webhook URL are what a receiver trusts, so a copy of the database (a backup, a
// replica, a leaked dump) must not be enough to forge a signed event or
// post to someone's room. They are sealed with AES-256-GCM under a key
// derived from SECRET_KEY (HKDF-SHA256, its own purpose string), with the
// owner's user id and the kind of credential as additional data: a sealed
// value copied to another user's channel, or from a token column to a
// secret column, does not open. Values written before sealing existed
// (no sealedPrefix) are read as they are and sealed by SealStored.

// sealedPrefix starts every sealed value (version 1 of the format:
// base64url of nonce || ciphertext || tag).
const sealedPrefix = "enc1:"

// errUnsealable is returned for a sealed value that does not open: it was
// sealed under another SECRET_KEY, or altered.
var errUnsealable = errors.New("a stored channel credential cannot be decrypted: SECRET_KEY is not the one it was stored under, or the value was altered")

// credential kinds, part of the additional data.
const (
	credSecret = "signing-secret" // secret and old_secret
	credToken  = "access-token"   // access_token
	credURL    = "chat-url"       // url of a Slack or Discord channel
)

// sealer seals and opens channel credentials.
type sealer struct {
	aead cipher.AEAD
}

// newSealer derives the sealing key from secretKey (SECRET_KEY).
func newSealer(secretKey []byte) (*sealer, error) {
	return newSealerFor(secretKey, "followfeed channel credentials v1")
}

// newSealerFor derives a sealing key for purpose (HKDF's info: keys of
// different purposes differ) from secretKey.
func newSealerFor(secretKey []byte, purpose string) (*sealer, error) {
	if len(secretKey) == 0 {
		return nil, errors.New("channels: a SECRET_KEY is needed to store credentials")
	}
	key, err := hkdf.Key(sha256.New, secretKey, nil, purpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func aad(kind string, userID int64) []byte {
	return []byte(kind + ":" + strconv.FormatInt(userID, 10))
}

// seal returns the stored form of plain ("" stays "": no credential).
func (s *sealer) seal(kind string, userID int64, plain string) string {
	if plain == "" {
		return ""
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(plain), aad(kind, userID)))
}

// open returns the credential a stored value holds: sealed values are
// decrypted, values stored before sealing are returned as they are.
func (s *sealer) open(kind string, userID int64, stored string) (string, error) {
	if !strings.HasPrefix(stored, sealedPrefix) {
		return stored, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(stored[len(sealedPrefix):])
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return "", errUnsealable
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], aad(kind, userID))
	if err != nil {
		return "", errUnsealable
	}
	return string(plain), nil
}

// sealed reports whether a stored value is sealed (or empty: nothing to
// seal).
func sealed(stored string) bool { return stored == "" || strings.HasPrefix(stored, sealedPrefix) }

// url returns the stored form of a channel's URL: a Slack or Discord
// incoming-webhook URL is itself the credential (whoever has it can post),
// so it is sealed; a webhook's own URL and a Matrix homeserver are not.
func (s *sealer) url(typ Type, userID int64, u string) string {
	if typ == Slack || typ == Discord {
		return s.seal(credURL, userID, u)
	}
	return u
}

// openChannel replaces c's stored credentials with their plain values; one
// that does not open is left empty and marks c.CredentialsUnreadable.
func (s *sealer) openChannel(c *Channel) {
	for _, f := range []struct {
		kind string
		v    *string
	}{{credSecret, &c.secret}, {credSecret, &c.oldSecret}, {credToken, &c.accessToken}, {credURL, &c.URL}} {
		v, err := s.open(f.kind, c.UserID, *f.v)
		if err != nil {
			c.CredentialsUnreadable = true
		}
		*f.v = v
	}
}

// SealStored seals the credentials stored before sealing existed and
// returns how many channels it changed. It is idempotent and cheap when
// nothing is left to seal (one scan of the small channels table); the row
// locks let several processes run it at start-up at once.
func (s *Service) SealStored(ctx context.Context) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id, user_id, type, url, secret, old_secret, access_token FROM channels
			WHERE (secret <> '' AND left(secret, 5) <> $1) OR (old_secret <> '' AND left(old_secret, 5) <> $1)
			   OR (access_token <> '' AND left(access_token, 5) <> $1)
			   OR (type IN ('slack', 'discord') AND left(url, 5) <> $1)
			FOR UPDATE SKIP LOCKED`, sealedPrefix)
		if err != nil {
			return err
		}
		type cred struct {
			id, user                int64
			typ                     Type
			url, secret, old, token string
		}
		creds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cred, error) {
			var c cred
			err := r.Scan(&c.id, &c.user, &c.typ, &c.url, &c.secret, &c.old, &c.token)
			return c, err
		})
		if err != nil {
			return err
		}
		for _, c := range creds {
			seal := func(kind, v string) string {
				if sealed(v) {
					return v
				}
				return s.seal.seal(kind, c.user, v)
			}
			u := c.url
			if !sealed(u) {
				u = s.seal.url(c.typ, c.user, u)
			}
			if _, err := tx.Exec(ctx, `UPDATE channels SET url = $5, secret = $2, old_secret = $3, access_token = $4 WHERE id = $1`,
				c.id, seal(credSecret, c.secret), seal(credSecret, c.old), seal(credToken, c.token), u); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sealing stored channel credentials: %w", err)
	}
	return n, nil
}
