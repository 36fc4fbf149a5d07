package fediverse

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-fed/httpsig"
	"github.com/jackc/pgx/v5"

	"followfeed/apperr"
	"followfeed/follow"
)

// Signed is an incoming request as the inbox verifies it.
type Signed struct {
	Method string
	// RequestURI is the request's path and query as sent ("/ap/inbox").
	RequestURI string
	// Host is the Host the request was sent to.
	Host   string
	Header http.Header
	Body   []byte
}

// MaxClockSkew is how far a signed request's Date may be from now.
const MaxClockSkew = 12 * time.Hour

// verified is a request whose signature checked out.
type verified struct {
	key *remoteKey
	// seen is the SHA-256 of the signature: stored with the request's
	// effect, so the same signature again is refused as a replay.
	seen []byte
	// gone: the key's owner answered 410 Gone (only a Delete of that actor
	// is then acted on).
	gone string
}

// sigParams are the parameters of a draft-cavage Signature header.
type sigParams struct {
	keyID, algorithm, signature string
	headers                     []string
	created                     int64
}

func parseSigParams(h string) (sigParams, error) {
	var p sigParams
	for _, part := range splitParams(h) {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return p, errors.New("malformed Signature header")
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch strings.TrimSpace(k) {
		case "keyId":
			p.keyID = v
		case "algorithm":
			p.algorithm = strings.ToLower(v)
		case "headers":
			p.headers = strings.Fields(strings.ToLower(v))
		case "signature":
			p.signature = v
		case "created":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return p, errors.New("malformed created parameter")
			}
			p.created = n
		}
	}
	if p.keyID == "" || p.signature == "" {
		return p, errors.New("the Signature header has no keyId or signature")
	}
	if len(p.headers) == 0 {
		p.headers = []string{"date"}
	}
	return p, nil
}

// splitParams splits a Signature header at the commas outside quotes.
func splitParams(h string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(h); i++ {
		switch h[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, h[start:i])
				start = i + 1
			}
		}
	}
	return append(out, h[start:])
}

// verify checks r's HTTP signature: draft-cavage (rsa-sha256, or hs2019
// as Mastodon sends it: the key's own algorithm) in the Signature header,
// covering (request-target), host, date (or (created)) and, with a body,
// digest; the Digest of the body (SHA-256); a Date within MaxClockSkew;
// and the signature itself, with the key its keyId dereferences to
// (fetched through the guard, cached, fetched again once when it no
// longer verifies). RFC 9421 signatures (Signature-Input) are verified by
// verify9421. Every failure is an apperr Unauthorized saying why, and a
// key on a blocked domain a Forbidden.
func (s *Service) verify(ctx context.Context, r Signed) (*verified, error) {
	if r.Header.Get("Signature-Input") != "" {
		return s.verify9421(ctx, r)
	}
	raw := r.Header.Get("Signature")
	if raw == "" {
		if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Signature ") {
			raw = strings.TrimPrefix(a, "Signature ")
		}
	}
	if raw == "" {
		return nil, unauthorized("the request has no HTTP signature: sign it (draft-cavage Signature header, as Mastodon does)")
	}
	p, err := parseSigParams(raw)
	if err != nil {
		return nil, unauthorized("%v", err)
	}
	covered := map[string]bool{}
	for _, h := range p.headers {
		covered[h] = true
	}
	switch {
	case !covered[httpsig.RequestTarget]:
		return nil, unauthorized("the signature must cover (request-target)")
	case !covered["host"]:
		return nil, unauthorized("the signature must cover host")
	case !covered["date"] && !covered["(created)"]:
		return nil, unauthorized("the signature must cover date")
	case len(r.Body) > 0 && !covered["digest"]:
		return nil, unauthorized("the signature must cover digest")
	}
	if covered["date"] {
		d, err := http.ParseTime(r.Header.Get("Date"))
		if err != nil {
			return nil, unauthorized("the Date header is missing or not an HTTP date")
		}
		if err := s.fresh(d); err != nil {
			return nil, err
		}
	} else if err := s.fresh(time.Unix(p.created, 0)); err != nil {
		return nil, err
	}
	if len(r.Body) > 0 || r.Header.Get("Digest") != "" {
		if err := checkDigest(r.Header.Get("Digest"), r.Body); err != nil {
			return nil, err
		}
	}
	algo := func(k *remoteKey) (httpsig.Algorithm, error) {
		switch k.public.(type) {
		case *rsa.PublicKey:
			if p.algorithm == "" || p.algorithm == "rsa-sha256" || p.algorithm == "hs2019" {
				return httpsig.RSA_SHA256, nil
			}
		case ed25519.PublicKey:
			if p.algorithm == "" || p.algorithm == "ed25519" || p.algorithm == "hs2019" {
				return httpsig.ED25519, nil
			}
		}
		return "", unauthorized("unsupported signature algorithm %q for this key (use rsa-sha256 or hs2019)", p.algorithm)
	}
	check := func(k *remoteKey) error {
		a, err := algo(k)
		if err != nil {
			return err
		}
		v, err := httpsig.NewVerifier(r.request())
		if err != nil {
			return unauthorized("the signature cannot be read: %v", err)
		}
		if err := v.Verify(k.public, a); err != nil {
			return unauthorized("the signature does not verify with the key %s", p.keyID)
		}
		return nil
	}
	k, gone, err := s.checkedKey(ctx, p.keyID, check)
	if err != nil || gone != "" {
		return &verified{gone: gone}, err
	}
	sum := sha256.Sum256([]byte(raw))
	return &verified{key: k, seen: sum[:]}, nil
}

// signerKey checks a keyId (a blocked domain is Forbidden) and returns its
// key, or gone = the key's owner URL when that answered 410 Gone.
func (s *Service) signerKey(ctx context.Context, keyID string) (*remoteKey, string, error) {
	if !absoluteHTTP(keyID) {
		return nil, "", unauthorized("the keyId must be the URL of the signer's key")
	}
	if s.BlockedHost(hostOf(keyID)) {
		return nil, "", apperr.New(apperr.Forbidden, "this server does not talk to %s", hostOf(keyID))
	}
	k, err := s.remoteKeyFor(ctx, keyID, false)
	if errors.Is(err, errGone) {
		return nil, stripFragment(keyID), nil
	}
	if err != nil {
		return nil, "", unauthorized("the key %s cannot be fetched: %v", keyID, err)
	}
	if !sameOrigin(k.Owner, keyID) {
		return nil, "", unauthorized("the key %s is owned by %s, on another server", keyID, k.Owner)
	}
	return k, "", nil
}

// checkedKey returns the key keyID names once check(key) passes: with the
// cached key, else (when that one is older than keyRefetchAfter, so its
// owner may have rotated it) with the key fetched again. gone is the key's
// owner URL when that answered 410 Gone (signerKey).
func (s *Service) checkedKey(ctx context.Context, keyID string, check func(*remoteKey) error) (*remoteKey, string, error) {
	k, gone, err := s.signerKey(ctx, keyID)
	if err != nil || gone != "" {
		return nil, gone, err
	}
	if err := check(k); err != nil {
		if s.now().Sub(k.FetchedAt) < keyRefetchAfter {
			return nil, "", err
		}
		if k, err = s.remoteKeyFor(ctx, keyID, true); err != nil {
			return nil, "", unauthorized("the key %s cannot be fetched: %v", keyID, err)
		}
		if err := check(k); err != nil {
			return nil, "", err
		}
	}
	return k, "", nil
}

// fresh checks a signature's date against MaxClockSkew.
func (s *Service) fresh(d time.Time) error {
	if skew := s.now().Sub(d); skew > MaxClockSkew || skew < -MaxClockSkew {
		return unauthorized("the signature's date %s is more than 12 hours from now", d.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkDigest verifies a Digest header (RFC 3230): its SHA-256 value must
// be the body's.
func checkDigest(h string, body []byte) error {
	if h == "" {
		return unauthorized("the request has a body but no Digest header")
	}
	sum := sha256.Sum256(body)
	want := base64.StdEncoding.EncodeToString(sum[:])
	for _, part := range strings.Split(h, ",") {
		alg, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.EqualFold(alg, "SHA-256") {
			if subtle.ConstantTimeCompare([]byte(val), []byte(want)) == 1 {
				return nil
			}
			return unauthorized("the Digest does not match the body")
		}
	}
	return unauthorized("the Digest header has no SHA-256 value")
}

// request is r as go-fed/httpsig's verifier reads it.
func (r Signed) request() *http.Request {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		u = &url.URL{Path: r.RequestURI}
	}
	h := r.Header.Clone()
	h.Set("Host", r.Host)
	return &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: h}
}

// Receive handles an activity POSTed to an inbox: handle's (an actor's
// own inbox) or, with handle "", the shared inbox. The request is
// verified first (verify); then:
//
//   - Follow of one of followfeed's actors (an actor's own inbox accepts
//     only Follows of that actor, else BadRequest): the follower (its id,
//     inbox and shared inbox, from its actor document) is stored and a
//     signed Accept queued to its inbox. A Follow from a blocked domain is
//     Forbidden; one whose inboxes the guard refuses (not https, an
//     internal address) is Invalid, and nothing is stored.
//   - Undo of a Follow: the follower is removed.
//   - Delete of the signer itself: all its follows are removed.
//   - anything else: accepted and ignored.
//
// The signer must be the activity's actor. nil means 202 Accepted.
func (s *Service) Receive(ctx context.Context, handle string, r Signed) error {
	if len(r.Body) > MaxActivityBytes {
		return apperr.New(apperr.TooLarge, "an activity is at most %d KiB", MaxActivityBytes>>10)
	}
	var inboxActor *ActorInfo
	if handle != "" {
		info, err := s.ResolveHandle(ctx, handle)
		if err != nil {
			return err
		}
		inboxActor = &info
	}
	a, err := parseActivity(r.Body)
	if err != nil {
		return err
	}
	if s.BlockedHost(hostOf(string(a.Actor))) {
		return apperr.New(apperr.Forbidden, "this server does not talk to %s", hostOf(string(a.Actor)))
	}
	v, err := s.verify(ctx, r)
	if err != nil {
		return err
	}
	if v.gone != "" {
		// The signer's key is gone with its actor: only that actor's own
		// Delete is believed (its server alone can answer 410 there).
		if a.Type == "Delete" && string(a.Actor) == v.gone && a.objectRef() == v.gone {
			return s.removeFollower(ctx, v.gone, nil)
		}
		return unauthorized("the signer's key is gone (410)")
	}
	if string(a.Actor) != v.key.Owner {
		return unauthorized("the activity's actor %s is not the signer %s", a.Actor, v.key.Owner)
	}
	switch a.Type {
	case "Follow":
		return s.follow(ctx, inboxActor, a, v)
	case "Undo":
		inner := a.objectActivity()
		if inner != nil && inner.Type != "Follow" {
			return s.remember(ctx, v)
		}
		if inner != nil && string(inner.Actor) != v.key.Owner {
			return apperr.New(apperr.BadRequest, "the undone Follow's actor is not the signer")
		}
		return s.unfollow(ctx, v, a, inner)
	case "Delete":
		if a.objectRef() == v.key.Owner {
			return s.removeFollower(ctx, v.key.Owner, v.seen)
		}
	}
	return s.remember(ctx, v)
}

// remember stores a verified signature (a later replay is refused) when
// the activity itself changes nothing.
func (s *Service) remember(ctx context.Context, v *verified) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error { return s.seen(ctx, tx, v.seen) })
}

// seen records a signature in tx; one seen before is a replay
// (Unauthorized). Rows older than MaxClockSkew are pruned (any replay of
// them fails the Date check).
func (s *Service) seen(ctx context.Context, tx pgx.Tx, sum []byte) error {
	if sum == nil {
		return nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO ap_seen_signatures (hash, seen_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, sum, s.now())
	if err != nil {
		return fmt.Errorf("recording a signature: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return unauthorized("this signature was already received: a replay is refused (sign every request anew)")
	}
	return nil
}

// follow handles a Follow.
func (s *Service) follow(ctx context.Context, inboxActor *ActorInfo, a *incoming, v *verified) error {
	object := a.objectRef()
	if object == "" {
		return apperr.New(apperr.BadRequest, "the Follow has no object")
	}
	if a.ID == "" {
		return apperr.New(apperr.BadRequest, "the Follow has no id")
	}
	var info ActorInfo
	if inboxActor != nil {
		if object != inboxActor.ID {
			// An alias of the same actor (another id of the person) is it.
			t, ok := s.actorTarget(ctx, object)
			other, err := s.Resolve(ctx, t)
			if !ok || err != nil || other.ID != inboxActor.ID {
				return apperr.New(apperr.BadRequest, "this is the inbox of %s; the Follow names %s", inboxActor.ID, object)
			}
			object = inboxActor.ID
		}
		info = *inboxActor
	} else {
		prefix := s.abs(ActorPrefix)
		if !strings.HasPrefix(object, prefix) {
			return apperr.New(apperr.BadRequest, "the Follow names %s, which is not an actor of this server", object)
		}
		h, err := url.PathUnescape(object[len(prefix):])
		if err != nil {
			return apperr.New(apperr.BadRequest, "the Follow names %s, which is not an actor of this server", object)
		}
		if info, err = s.ResolveHandle(ctx, h); err != nil {
			return apperr.New(apperr.BadRequest, "the Follow names %s, which is not an actor of this server", object)
		}
		if info.ID != object {
			// An alias of an actor: followers follow the actor itself.
			object = info.ID
		}
	}
	personal := v.key.Inbox
	if personal == "" {
		return apperr.New(apperr.BadRequest, "the follower's actor document has no inbox")
	}
	if _, err := s.guard.CheckURL("inbox", personal); err != nil {
		return err
	}
	shared := v.key.SharedInbox
	if shared != "" {
		if _, err := s.guard.CheckURL("sharedInbox", shared); err != nil {
			return err
		}
	} else {
		shared = personal
	}
	follow := map[string]string{"id": a.ID, "type": "Follow", "actor": string(a.Actor), "object": object}
	key := info.Target.Key()
	high, err := s.highSeq(ctx)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := s.seen(ctx, tx, v.seen); err != nil {
			return err
		}
		// A new actor starts at the current high seq: its followers hear of
		// papers from now on, not of its back catalogue.
		if _, err := tx.Exec(ctx, `INSERT INTO ap_actors (key, watermark, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			key, high, s.now()); err != nil {
			return fmt.Errorf("creating the actor %s: %w", key, err)
		}
		ids, err := s.inboxes(ctx, tx, []string{shared, personal})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO ap_followers (actor_key, follower, inbox_id, personal_id, follow_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (actor_key, follower) DO UPDATE SET inbox_id = EXCLUDED.inbox_id,
				personal_id = EXCLUDED.personal_id, follow_id = EXCLUDED.follow_id`,
			key, string(a.Actor), ids[0], ids[1], a.ID, s.now()); err != nil {
			return fmt.Errorf("storing a follower of %s: %w", key, err)
		}
		accept := func(id string) any {
			return Activity{Context: asContext, ID: id, Type: "Accept", Actor: info.ID, Object: follow}
		}
		_, err = s.publish(ctx, tx, key, "Accept", nil, accept, []int64{ids[1]})
		return err
	})
}

// unfollow handles an Undo of a Follow (embedded, or named by its id).
func (s *Service) unfollow(ctx context.Context, v *verified, undo, inner *incoming) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := s.seen(ctx, tx, v.seen); err != nil {
			return err
		}
		var err error
		if inner != nil && inner.objectRef() != "" {
			t, ok := s.actorTarget(ctx, inner.objectRef())
			if !ok {
				return nil // not one of ours: nothing to undo
			}
			info, rerr := s.Resolve(ctx, t)
			if rerr != nil {
				return nil
			}
			_, err = tx.Exec(ctx, `DELETE FROM ap_followers WHERE follower = $1 AND (actor_key = $2 OR follow_id = $3)`,
				v.key.Owner, info.Target.Key(), inner.ID)
		} else {
			_, err = tx.Exec(ctx, `DELETE FROM ap_followers WHERE follower = $1 AND follow_id = $2`, v.key.Owner, undo.objectRef())
		}
		if err != nil {
			return fmt.Errorf("removing a follower: %w", err)
		}
		return nil
	})
}

// actorTarget reads the target of one of followfeed's actor URLs.
func (s *Service) actorTarget(_ context.Context, id string) (follow.Target, bool) {
	prefix := s.abs(ActorPrefix)
	if !strings.HasPrefix(id, prefix) {
		return follow.Target{}, false
	}
	h, err := url.PathUnescape(id[len(prefix):])
	if err != nil {
		return follow.Target{}, false
	}
	t, err := ParseHandle(h)
	return t, err == nil
}

// removeFollower deletes every follow of the remote actor (its Delete).
func (s *Service) removeFollower(ctx context.Context, actor string, sum []byte) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := s.seen(ctx, tx, sum); err != nil {
			return err
		}
		// ap_followers_follower_idx.
		if _, err := tx.Exec(ctx, `DELETE FROM ap_followers WHERE follower = $1`, actor); err != nil {
			return fmt.Errorf("removing the follows of %s: %w", actor, err)
		}
		return nil
	})
}

// jsonBytes marshals v (what followfeed itself builds never fails).
func jsonBytes(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fediverse: marshalling %T: %v", v, err))
	}
	return b
}
