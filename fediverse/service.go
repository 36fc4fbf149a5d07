package fediverse

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/channels"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/identity"
	"followfeed/match"
)

// Enqueuer inserts the fediverse's jobs inside the caller's transaction
// (implemented by worker.Enqueuer).
type Enqueuer interface {
	// EnqueueFanout queues the fan-out of actors marked due (one job
	// while one is waiting).
	EnqueueFanout(ctx context.Context, tx pgx.Tx) error
	// EnqueueDeliveries queues one delivery job per inbox.
	EnqueueDeliveries(ctx context.Context, tx pgx.Tx, inboxIDs []int64) error
}

// Identities is the identity registry as the fediverse uses it: an actor
// of a researcher or institution speaks for the whole identity.
type Identities interface {
	Lookup(ctx context.Context, kind follow.Kind, id string, userID int64) (identity.Identity, error)
}

// Names gives a follow target's name from the registry ("" when unnamed).
type Names interface {
	Name(ctx context.Context, t follow.Target) (string, error)
}

// Config is what a Service needs.
type Config struct {
	DB *database.DB
	// BaseURL is PUBLIC_URL: actor ids, handles' host.
	BaseURL    *url.URL
	Guard      *channels.Guard
	Enqueuer   Enqueuer
	Identities Identities
	Names      Names
	Matcher    *match.Service
	// HighSeq is the newest committed match-key seq (catalog.Store.HighSeq).
	HighSeq func(context.Context) (int64, error)
	// Blocked are domains whose Follows are refused and which are never
	// delivered to (ACTIVITYPUB_BLOCKED_DOMAINS; a domain covers its
	// subdomains).
	Blocked []string
	// CategoryNotes makes category and archive actors publish one note per
	// paper (ACTIVITYPUB_CATEGORY_NOTES); otherwise they publish one daily
	// summary note.
	CategoryNotes bool
	Logger        *slog.Logger
	Now           func() time.Time
	// Client overrides the Guard's client (tests of the guard itself never
	// set it).
	Client *http.Client
	// SecretKey (SECRET_KEY) seals the instance's private key at rest
	// (channels.Sealer); without one (some tests) it is stored in clear.
	SecretKey []byte
}

// Service is the fediverse side of followfeed: actors, their inboxes,
// outboxes and deliveries.
type Service struct {
	db         *database.DB
	base       *url.URL
	host       string
	guard      *channels.Guard
	client     *http.Client
	enq        Enqueuer
	identities Identities
	names      Names
	matcher    *match.Service
	high       func(context.Context) (int64, error)
	blocked    []string
	catNotes   bool
	logger     *slog.Logger
	now        func() time.Time
	metrics    *Metrics
	sealer     *channels.Sealer // nil: private keys stored in clear

	keyMu    sync.Mutex
	key      *instanceKey
	keyUntil time.Time // when key must be read again
	remote   sync.Map  // keyID → *remoteKey, the process's copy of ap_remote_keys
}

// NewService returns the service; it reads or creates its signing key on
// first use.
func NewService(c Config) *Service {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	client := c.Client
	if client == nil {
		client = c.Guard.Client()
	}
	var blocked []string
	for _, d := range c.Blocked {
		if d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), "."); d != "" {
			blocked = append(blocked, d)
		}
	}
	var sealer *channels.Sealer
	if len(c.SecretKey) > 0 {
		var err error
		if sealer, err = channels.NewSealer(c.SecretKey, "followfeed activitypub keys v1"); err != nil {
			panic(fmt.Sprintf("fediverse: %v", err)) // not reached: the key is not empty
		}
	}
	return &Service{
		sealer: sealer,
		db:     c.DB, base: c.BaseURL, host: c.BaseURL.Host, guard: c.Guard, client: client, enq: c.Enqueuer,
		identities: c.Identities, names: c.Names, matcher: c.Matcher, high: c.HighSeq, blocked: blocked, catNotes: c.CategoryNotes,
		logger: c.Logger, now: c.Now, metrics: newMetrics(),
	}
}

// Host is the host part of every handle (PUBLIC_URL's host, with its port
// when it has one).
func (s *Service) Host() string { return s.host }

// BlockedHost reports whether host is, or is under, a blocked domain.
func (s *Service) BlockedHost(host string) bool {
	host = strings.Trim(strings.ToLower(host), ".")
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, "[") {
		host = h
	}
	for _, d := range s.blocked {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// abs is the absolute URL of path under PUBLIC_URL.
func (s *Service) abs(path string) string {
	return strings.TrimSuffix(s.base.String(), "/") + path
}

// instanceKey is the current signing key.
type instanceKey struct {
	id      int
	private *rsa.PrivateKey
	public  string // PEM
}

// errUnreadableKey is a stored private key this process cannot use (sealed
// under another SECRET_KEY, or damaged).
var errUnreadableKey = errors.New("unreadable private key")

// keyKind is the sealed private key's kind (its additional data).
const keyKind = "activitypub-private-key"

// keyReload is how long a process uses the key it read before reading
// again (a rotation in another process reaches it within this).
const keyReload = time.Minute

// KeyActivationDelay is how long after a rotation the new key becomes the
// signing key: later than every process's next read of ap_keys (each reads
// it at most keyReload apart), so that every process knows the new key's
// activation instant before it comes, and they all switch then, serving
// and signing with the same key (a peer that fetched the actor's key
// verifies what any process signs).
const KeyActivationDelay = 2 * keyReload

// KeyBits is the size of generated RSA keys (Mastodon's).
const KeyBits = 2048

// signingKey returns the current instance key, creating the first one:
// the newest key whose activation instant has passed. A process keeps it
// until keyReload has passed or a newer key's activation comes, whichever
// is first.
func (s *Service) signingKey(ctx context.Context) (*instanceKey, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	now := s.now()
	if s.key != nil && now.Before(s.keyUntil) {
		return s.key, nil
	}
	k, next, err := s.loadKey(ctx, now)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, _, err := s.addKey(ctx, false, now); err != nil {
			return nil, err
		}
		k, next, err = s.loadKey(ctx, now)
	}
	if err != nil {
		return nil, err
	}
	s.key, s.keyUntil = k, now.Add(keyReload)
	if next != nil && next.Before(s.keyUntil) {
		s.keyUntil = *next
	}
	return k, nil
}

// loadKey reads the key current at now and the activation instant of the
// next one (nil when none is pending). The current key is the newest
// whose active_at has passed; when none has (a first key created by a
// process whose clock runs ahead), the first one.
func (s *Service) loadKey(ctx context.Context, now time.Time) (*instanceKey, *time.Time, error) {
	var k instanceKey
	var priv string
	var next *time.Time
	err := s.db.Pool.QueryRow(ctx, `
		SELECT id, public_pem, private_pem, (SELECT min(active_at) FROM ap_keys WHERE active_at > $1)
		FROM ap_keys
		ORDER BY active_at <= $1 DESC, CASE WHEN active_at <= $1 THEN active_at END DESC, active_at, id DESC
		LIMIT 1`, now).Scan(&k.id, &k.public, &priv, &next)
	if err != nil {
		return nil, nil, err
	}
	if s.sealer != nil {
		if priv, err = s.sealer.Open(keyKind, 0, priv); err != nil {
			return nil, nil, fmt.Errorf("ap_keys %d: %w: %w (rotate it: followfeed activitypub rotate-key)", k.id, errUnreadableKey, err)
		}
	}
	block, _ := pem.Decode([]byte(priv))
	if block == nil {
		return nil, nil, fmt.Errorf("ap_keys %d: %w: not PEM", k.id, errUnreadableKey)
	}
	pk, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("ap_keys %d: %w: %w", k.id, errUnreadableKey, err)
	}
	rk, ok := pk.(*rsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("ap_keys %d: %w: not an RSA key", k.id, errUnreadableKey)
	}
	k.private = rk
	return &k, next, nil
}

// addKey generates a key that becomes the signing key at active. A first
// key (retire false) loses to a concurrent first key; a rotation's (retire
// true) retires the key it replaces at active. It returns the key's id (0
// when a concurrent first key won).
func (s *Service) addKey(ctx context.Context, retire bool, active time.Time) (int, time.Time, error) {
	rk, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return 0, time.Time{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(rk)
	if err != nil {
		return 0, time.Time{}, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	if err != nil {
		return 0, time.Time{}, err
	}
	priv := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if s.sealer != nil {
		priv = s.sealer.Seal(keyKind, 0, priv)
	}
	pub := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	now := s.now()
	var id int
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		if retire {
			// The key it replaces signs until the new one's activation (a
			// key still pending signs from its own activation until then).
			if _, err := tx.Exec(ctx, `UPDATE ap_keys SET retired_at = $1 WHERE retired_at IS NULL`, active); err != nil {
				return err
			}
		}
		// ap_keys_current_idx: a second first key loses (and reads the winner's).
		return tx.QueryRow(ctx, `
			INSERT INTO ap_keys (public_pem, private_pem, created_at, active_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING RETURNING id`, pub, priv, now, active).Scan(&id)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	return id, active, err
}

// RotateKey adds a new instance key that becomes every actor's key at the
// instant it returns (KeyActivationDelay from now; the current key signs
// and is served until then, by every process alike): every actor's
// publicKey then changes, and servers that cached the old one fetch the
// actor again when a signature no longer verifies (as Mastodon does). When
// no process can sign with the current key (it is sealed under another
// SECRET_KEY, the reason to rotate after changing it), or there is none,
// the new key is active at once. It returns the new key's id and its
// activation instant.
func (s *Service) RotateKey(ctx context.Context) (int, time.Time, error) {
	now := s.now()
	active := now.Add(KeyActivationDelay)
	if _, _, err := s.loadKey(ctx, now); errors.Is(err, errUnreadableKey) || errors.Is(err, pgx.ErrNoRows) {
		active = now
	} else if err != nil {
		return 0, time.Time{}, fmt.Errorf("rotating the ActivityPub key: %w", err)
	}
	id, active, err := s.addKey(ctx, true, active)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("rotating the ActivityPub key: %w", err)
	}
	if id == 0 {
		// ap_keys_current_idx: another rotation added its key meanwhile.
		return 0, time.Time{}, errors.New("rotating the ActivityPub key: another rotation ran at the same time and its key stands; run it again to replace that one")
	}
	s.keyMu.Lock()
	s.key = nil
	s.keyMu.Unlock()
	return id, active, nil
}

// URL is the absolute URL of path under PUBLIC_URL.
func (s *Service) URL(path string) string { return s.abs(path) }
