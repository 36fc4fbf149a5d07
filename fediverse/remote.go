package fediverse

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"followfeed/apperr"
)

// remoteKey is a remote actor's public key with what followfeed needs of
// its owner (where to deliver).
type remoteKey struct {
	KeyID       string
	Owner       string
	PEM         string
	Inbox       string
	SharedInbox string
	FetchedAt   time.Time
	public      crypto.PublicKey
}

// Remote key cache lifetimes: a key is used for keyTTL, then fetched again;
// a key that fails to verify a signature is fetched again once it is older
// than keyRefetchAfter (the owner may have rotated it).
const (
	keyTTL          = 24 * time.Hour
	keyRefetchAfter = time.Minute
	maxRemoteBytes  = 1 << 20
)

// errGone is a fetch answered 410 Gone (a deleted actor).
var errGone = errors.New("the remote server says the actor is gone (410)")

// remoteDoc is what followfeed reads of a fetched actor or key document.
type remoteDoc struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Inbox     string          `json:"inbox"`
	Endpoints json.RawMessage `json:"endpoints"`
	PublicKey json.RawMessage `json:"publicKey"`
	// A key document of its own (the keyId dereferences to the key).
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

type keyDoc struct {
	ID           string `json:"id"`
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

// remoteKeyFor returns the key keyID names, with its owner's inbox and shared
// inbox when the document is the owner's actor: fresh from the process's
// copy or the ap_remote_keys table, else fetched through the guard (and
// stored) when refresh or older than keyTTL.
func (s *Service) remoteKeyFor(ctx context.Context, keyID string, refresh bool) (*remoteKey, error) {
	if v, ok := s.remote.Load(keyID); ok && !refresh {
		k := v.(*remoteKey)
		if s.now().Sub(k.FetchedAt) < keyTTL {
			return k, nil
		}
	}
	if !refresh {
		k := &remoteKey{KeyID: keyID}
		err := s.db.Pool.QueryRow(ctx, `
			SELECT owner, public_pem, inbox, shared_inbox, fetched_at FROM ap_remote_keys WHERE key_id = $1`, keyID).
			Scan(&k.Owner, &k.PEM, &k.Inbox, &k.SharedInbox, &k.FetchedAt)
		if err == nil && s.now().Sub(k.FetchedAt) < keyTTL {
			if k.public, err = parsePublicKey(k.PEM); err == nil {
				s.remote.Store(keyID, k)
				return k, nil
			}
		}
	}
	k, err := s.fetchKey(ctx, keyID)
	if err != nil {
		return nil, err
	}
	if _, err := s.db.Pool.Exec(ctx, `
		INSERT INTO ap_remote_keys (key_id, owner, public_pem, inbox, shared_inbox, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (key_id) DO UPDATE SET owner = EXCLUDED.owner, public_pem = EXCLUDED.public_pem,
			inbox = EXCLUDED.inbox, shared_inbox = EXCLUDED.shared_inbox, fetched_at = EXCLUDED.fetched_at`,
		k.KeyID, k.Owner, k.PEM, k.Inbox, k.SharedInbox, k.FetchedAt); err != nil {
		return nil, fmt.Errorf("caching the key %s: %w", keyID, err)
	}
	s.remote.Store(keyID, k)
	return k, nil
}

// fetchKey dereferences keyID (without its fragment) and finds the key in
// the answer: an actor document whose publicKey has that id, or the key
// itself, whose owner is then fetched for its inboxes.
func (s *Service) fetchKey(ctx context.Context, keyID string) (*remoteKey, error) {
	doc, err := s.fetchDoc(ctx, keyID)
	if err != nil {
		return nil, err
	}
	k := &remoteKey{KeyID: keyID, FetchedAt: s.now()}
	switch {
	case doc.PublicKeyPem != "":
		k.Owner, k.PEM = doc.Owner, doc.PublicKeyPem
		if k.Owner == "" {
			return nil, fmt.Errorf("the key %s names no owner", keyID)
		}
		owner, err := s.fetchDoc(ctx, k.Owner)
		if err != nil {
			return nil, fmt.Errorf("fetching the owner of %s: %w", keyID, err)
		}
		if !owner.hasKey(keyID) {
			return nil, fmt.Errorf("the owner %s does not list the key %s", k.Owner, keyID)
		}
		k.Inbox, k.SharedInbox = owner.Inbox, owner.sharedInbox()
	default:
		kd, ok := doc.findKey(keyID)
		if !ok {
			return nil, fmt.Errorf("the document at %s has no key %s", stripFragment(keyID), keyID)
		}
		k.Owner, k.PEM = kd.Owner, kd.PublicKeyPem
		if k.Owner == "" {
			k.Owner = doc.ID
		}
		if k.Owner != doc.ID {
			return nil, fmt.Errorf("the key %s belongs to %s, not to the actor %s that lists it", keyID, k.Owner, doc.ID)
		}
		k.Inbox, k.SharedInbox = doc.Inbox, doc.sharedInbox()
	}
	if k.public, err = parsePublicKey(k.PEM); err != nil {
		return nil, fmt.Errorf("the key %s: %w", keyID, err)
	}
	return k, nil
}

func (d *remoteDoc) keys() []keyDoc {
	var one keyDoc
	if json.Unmarshal(d.PublicKey, &one) == nil && one.PublicKeyPem != "" {
		return []keyDoc{one}
	}
	var many []keyDoc
	_ = json.Unmarshal(d.PublicKey, &many)
	return many
}

func (d *remoteDoc) findKey(keyID string) (keyDoc, bool) {
	ks := d.keys()
	for _, k := range ks {
		if k.ID == keyID {
			return k, true
		}
	}
	return keyDoc{}, false
}

func (d *remoteDoc) hasKey(keyID string) bool {
	_, ok := d.findKey(keyID)
	return ok
}

func (d *remoteDoc) sharedInbox() string {
	var e struct {
		SharedInbox string `json:"sharedInbox"`
	}
	_ = json.Unmarshal(d.Endpoints, &e)
	return e.SharedInbox
}

// stripFragment is u without its #fragment.
func stripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// fetchDoc GETs an ActivityPub document through the guard's client,
// signed by the instance actor (servers in authorized-fetch mode require
// it). The URL must pass the guard (https, no internal address unless
// allowed for development); a 410 is errGone; bodies are capped.
func (s *Service) fetchDoc(ctx context.Context, raw string) (*remoteDoc, error) {
	target := stripFragment(raw)
	if _, err := s.guard.CheckURL("keyId", target); err != nil {
		return nil, err
	}
	k, err := s.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	req, err := signGet(ctx, k.private, s.abs(InstanceActor)+"#main-key", target, s.now().UTC().Format(http.TimeFormat))
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", target, err)
	}
	switch {
	case resp.StatusCode == http.StatusGone:
		return nil, errGone
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("fetching %s: %s", target, resp.Status)
	case len(body) > maxRemoteBytes:
		return nil, fmt.Errorf("fetching %s: larger than %d bytes", target, maxRemoteBytes)
	}
	var d remoteDoc
	if err := json.Unmarshal(bytes.TrimSpace(body), &d); err != nil {
		return nil, fmt.Errorf("fetching %s: not JSON: %w", target, err)
	}
	if d.ID == "" {
		d.ID = target
	}
	if d.ID != target && d.PublicKeyPem == "" {
		// A document must live at its id (else anyone could serve another's).
		return nil, fmt.Errorf("the document at %s says it is %s", target, d.ID)
	}
	return &d, nil
}

// parsePublicKey reads a PEM public key (PKIX, or PKCS#1 "RSA PUBLIC KEY").
func parsePublicKey(p string) (crypto.PublicKey, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, errors.New("publicKeyPem is not PEM")
	}
	if block.Type == "RSA PUBLIC KEY" {
		return x509.ParsePKCS1PublicKey(block.Bytes)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	switch k.(type) {
	case *rsa.PublicKey, ed25519.PublicKey:
		return k, nil
	}
	return nil, fmt.Errorf("unsupported key type %T", k)
}

// hostOf is the host (without port) of a URL, lower case ("" if none).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// sameOrigin reports whether a and b have the same scheme and host (and
// port): an actor's key must live on the actor's server.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// unauthorized is the 401 of a request whose signature is missing or bad.
func unauthorized(format string, args ...any) error {
	return apperr.New(apperr.Unauthorized, format, args...)
}
