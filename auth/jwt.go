// Package auth verifies the bearer JWTs that the host site's identity
// provider issues, and mints HS256 tokens for development and tests.
//
// A Verifier accepts a token only if its signature verifies with a key from a
// configured source under an algorithm that source allows (HS256 only with
// the shared secret; RSA, ECDSA and Ed25519 algorithms only with keys of that
// type, from PEM or a JWKS; an RSA key without a declared alg verifies the
// RS256/RS384/RS512 family only), its typ, when present, says JWT or at+jwt,
// and its claims hold: exp present, a number and in the future, nbf and iat
// numbers not in the future (within a leeway of at most 60 s), a lifetime
// (exp - iat) within the configured maximum, iss and aud as configured, sub
// present and printable. Every refusal is a *VerifyError.
package auth

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"followfeed/apperr"
	"followfeed/internal/httpclient"
)

// Limits a Verifier enforces.
const (
	// MaxTokenBytes is the longest token Verify parses; longer ones are
	// refused with ReasonTooLarge before any decoding.
	MaxTokenBytes = 8 << 10
	// MaxLeeway is the largest clock-skew allowance; VerifierConfig.Leeway
	// is clamped to it.
	MaxLeeway = 60 * time.Second
	// MaxSubjectLen is the longest sub claim accepted, in bytes.
	MaxSubjectLen = 255
	// DefaultMaxLifetime is the longest token lifetime (exp - iat) accepted
	// when VerifierConfig.MaxLifetime is 0.
	DefaultMaxLifetime = 24 * time.Hour
)

// JWKS fetching policy.
const (
	jwksRefreshInterval = time.Hour
	// jwksUnknownKIDEvery is how often an unknown kid may trigger a refresh.
	jwksUnknownKIDEvery = 5 * time.Minute
	// jwksHTTPTimeout bounds the first fetch and each background refresh.
	jwksHTTPTimeout = 10 * time.Second
	// jwksOnDemandBudget bounds a refresh that a request triggers with an
	// unknown kid. jwkset uses one deadline for both the rate-limiter wait
	// and that fetch, so it cannot be "a few ms"; Verify itself checks the
	// limiter first, so a request never waits for it (see jwksKey).
	jwksOnDemandBudget = 5 * time.Second
	jwksMaxBody        = 1 << 20
)

// The scopes of service tokens. A token carrying either is a service
// token (see Claims.IsService), which cannot act as a user.
const (
	// ScopePapersWrite lets the host push papers and registry records.
	ScopePapersWrite = "papers:write"
	// ScopeUsersWrite lets the host erase a user it deleted (DELETE
	// /v1/users/{sub}).
	ScopeUsersWrite = "users:write"
)

// VerifierConfig says where verification keys come from and what claims must
// say. At least one of JWKSURL, PublicKeyPEM and HS256Secret must be set.
type VerifierConfig struct {
	// JWKSURL is an http(s) JWKS endpoint. Only its asymmetric keys are used
	// (RS256/RS384/RS512/PS256, ES256/ES384, EdDSA); "oct" keys are ignored.
	JWKSURL string
	// PublicKeyPEM is the contents of AUTH_PUBLIC_KEY_FILE: one or more
	// "PUBLIC KEY" (PKIX: RSA, ECDSA P-256/P-384, Ed25519), "RSA PUBLIC KEY"
	// or "CERTIFICATE" blocks. Empty means no PEM keys.
	PublicKeyPEM []byte
	// HS256Secret enables HS256 tokens, checked against this secret only.
	HS256Secret []byte
	// Issuer, when non-empty, must equal the iss claim.
	Issuer string
	// Audience, when non-empty, must be one of the aud claim's values.
	Audience string
	// Leeway is the clock-skew allowance for exp, nbf and iat; negative
	// values count as 0 and values above MaxLeeway as MaxLeeway.
	Leeway time.Duration
	// HTTPClient fetches the JWKS; nil means httpclient.New(10s, 1 MiB).
	HTTPClient *http.Client
	// Logger receives JWKS fetch failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxLifetime caps a token's lifetime, exp - iat (exp - now without
	// iat); 0 means DefaultMaxLifetime.
	MaxLifetime time.Duration
	// DemoHS256Secret, when set, is a development-only key: it verifies
	// HS256 tokens whose header names kid DemoKeyID, and then only for the
	// subject DemoSubject (the /embed/demo page's user).
	DemoHS256Secret []byte
}

// The key sources a SourceError names.
const (
	SourceJWKS = "jwks" // VerifierConfig.JWKSURL
	SourcePEM  = "pem"  // VerifierConfig.PublicKeyPEM
	SourceNone = "none" // no source was configured at all
)

// SourceError is a NewVerifier failure of one key source, so a caller can
// name the setting to fix. Every NewVerifier error is one.
type SourceError struct {
	Source string // SourceJWKS, SourcePEM or SourceNone
	Err    error
}

func (e *SourceError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *SourceError) Unwrap() error { return e.Err }

// Verifier checks bearer tokens. It is safe for concurrent use and does not
// change after NewVerifier, except for the JWKS key cache it refreshes.
type Verifier struct {
	methods  []string           // the algorithms the configured sources allow
	hsSecret []byte             // nil unless HS256 is allowed
	pemKeys  []crypto.PublicKey // from PublicKeyPEM
	jwks     keyfunc.Keyfunc    // nil without JWKSURL
	jwksURL  string             // redacted, for messages
	limiter  *rate.Limiter      // unknown-kid refreshes; shared with jwkset
	parser   *jwt.Parser
	issuer   string
	audience string
	leeway   time.Duration
	maxLife  time.Duration
	demo     []byte // the development demo key; nil in production
	now      func() time.Time
}

// NewVerifier builds a Verifier from cfg. It fails, with a *SourceError
// naming the source, if no key source is set,
// if PublicKeyPEM holds a block it cannot use (the error names the block and
// why), or if JWKSURL is not an http(s) URL. It fetches the JWKS once, but a
// JWKS endpoint that is down or slow (up to 10 s) does not fail it: the
// failure is logged and keys are fetched later, hourly and when a token names
// an unknown kid. The background refresh stops when ctx ends.
func NewVerifier(ctx context.Context, cfg VerifierConfig) (*Verifier, error) {
	v := &Verifier{
		issuer:   cfg.Issuer,
		audience: cfg.Audience,
		leeway:   min(max(cfg.Leeway, 0), MaxLeeway),
		maxLife:  cfg.MaxLifetime,
		now:      cfg.Now,
	}
	if v.maxLife <= 0 {
		v.maxLife = DefaultMaxLifetime
	}
	if v.now == nil {
		v.now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	allowed := map[string]bool{}
	if len(cfg.HS256Secret) > 0 {
		v.hsSecret = slices.Clone(cfg.HS256Secret)
		allowed["HS256"] = true
	}
	if len(cfg.DemoHS256Secret) > 0 {
		v.demo = slices.Clone(cfg.DemoHS256Secret)
		allowed["HS256"] = true
	}
	if len(cfg.PublicKeyPEM) > 0 {
		keys, err := parsePublicKeysPEM(cfg.PublicKeyPEM)
		if err != nil {
			return nil, &SourceError{Source: SourcePEM, Err: fmt.Errorf("auth: public key PEM: %w", err)}
		}
		v.pemKeys = keys
		for _, k := range keys {
			_, algs := describeKey(k)
			for _, a := range algs {
				allowed[a] = true
			}
		}
	}
	if cfg.JWKSURL != "" {
		u, err := url.Parse(cfg.JWKSURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &SourceError{Source: SourceJWKS, Err: errors.New("auth: JWKS URL must be an absolute http(s) URL")}
		}
		v.jwksURL = u.Redacted()
		client := cfg.HTTPClient
		if client == nil {
			client = httpclient.New(jwksHTTPTimeout, jwksMaxBody)
		}
		v.limiter = rate.NewLimiter(rate.Every(jwksUnknownKIDEvery), 1)
		noErrorFirst := true
		kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
			Client:                    client,
			HTTPTimeout:               jwksHTTPTimeout,
			NoErrorReturnFirstHTTPReq: &noErrorFirst,
			RateLimitWaitMax:          jwksOnDemandBudget,
			RefreshErrorHandlerFunc: func(string) func(context.Context, error) {
				return func(ctx context.Context, err error) {
					logger.WarnContext(ctx, "auth: JWKS fetch failed; keys fetched earlier, if any, stay in use",
						"url", v.jwksURL, "error", err)
				}
			},
			RefreshInterval:   jwksRefreshInterval,
			RefreshUnknownKID: v.limiter,
		})
		if err != nil {
			return nil, &SourceError{Source: SourceJWKS, Err: fmt.Errorf("auth: JWKS %s: %w", v.jwksURL, err)}
		}
		v.jwks = kf
		for _, a := range asymmetricAlgs {
			allowed[a] = true
		}
	}
	if len(allowed) == 0 {
		return nil, &SourceError{Source: SourceNone, Err: errors.New("auth: no key source configured: set a JWKS URL (AUTH_JWKS_URL), public keys (AUTH_PUBLIC_KEY_FILE) or an HS256 secret (AUTH_HS256_SECRET)")}
	}
	for a := range allowed {
		v.methods = append(v.methods, a)
	}
	slices.Sort(v.methods)

	opts := []jwt.ParserOption{
		jwt.WithValidMethods(v.methods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.leeway),
		jwt.WithTimeFunc(v.now),
		// One spelling per token: a signature's last character's unused
		// bits must be zero, or "…g" changed to "…h" was the same token.
		jwt.WithStrictDecoding(),
	}
	if v.issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.issuer))
	}
	if v.audience != "" {
		opts = append(opts, jwt.WithAudience(v.audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Algorithms returns the JWS algorithms this Verifier accepts, sorted.
func (v *Verifier) Algorithms() []string { return slices.Clone(v.methods) }

// Claims is what a verified token says about its bearer.
type Claims struct {
	Subject       string // sub: non-empty, at most MaxSubjectLen bytes
	Email         string
	EmailVerified bool     // email_verified, a bool or the string "true"
	Scopes        []string // from "scope" and "scp", de-duplicated, in order
	Issuer        string
	ExpiresAt     time.Time
}

// HasScope reports whether the token grants scope s (exact match).
func (c *Claims) HasScope(s string) bool { return slices.Contains(c.Scopes, s) }

// IsService reports whether the token is a service token (it carries
// papers:write or users:write); service tokens cannot act as users.
func (c *Claims) IsService() bool { return c.HasScope(ScopePapersWrite) || c.HasScope(ScopeUsersWrite) }

// The VerifyError reasons. They are stable: clients and logs may rely on them.
const (
	ReasonMissing     = "missing"       // no token at all
	ReasonMalformed   = "malformed"     // not a decodable JWS compact JWT
	ReasonTooLarge    = "too-large"     // longer than MaxTokenBytes
	ReasonAlgorithm   = "algorithm"     // alg not accepted, or not usable with the named key
	ReasonSignature   = "signature"     // the signature does not verify
	ReasonUnknownKey  = "unknown-key"   // no configured key for this kid/alg
	ReasonExpired     = "expired"       // exp has passed
	ReasonNotYetValid = "not-yet-valid" // nbf or iat is in the future
	ReasonIssuer      = "issuer"        // iss missing or wrong
	ReasonAudience    = "audience"      // aud missing or wrong
	ReasonClaims      = "claims"        // exp or sub missing, or a claim of the wrong type
)

// VerifyError says why a token was refused. Reason is one of the Reason
// constants; Message is a sentence a developer can act on. Neither ever
// contains the token. A VerifyError unwraps to an *apperr.Error with Code
// apperr.Unauthorized, so apperr.As and errors.As both find a 401.
type VerifyError struct {
	Reason  string
	Message string
}

// Error returns "auth: invalid token (<reason>): <message>".
func (e *VerifyError) Error() string {
	return "auth: invalid token (" + e.Reason + "): " + e.Message
}

// AppErr returns the error as an apperr.Unauthorized error carrying Message.
func (e *VerifyError) AppErr() *apperr.Error {
	return &apperr.Error{Code: apperr.Unauthorized, Message: e.Message}
}

// Unwrap returns AppErr(), so code that only knows apperr maps it to 401.
func (e *VerifyError) Unwrap() error { return e.AppErr() }

func refuse(reason, format string, args ...any) *VerifyError {
	return &VerifyError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// header is the part of the JOSE header Verify looks at before jwt does.
type header struct {
	alg    string
	kid    string
	hasKid bool
}

// Verify checks raw (the token without "Bearer ") and returns its claims. Any
// refusal is a *VerifyError. ctx bounds a JWKS refresh that an unknown kid
// may trigger (at most one per 5 minutes; otherwise Verify does no I/O).
func (v *Verifier) Verify(ctx context.Context, raw string) (*Claims, error) {
	if raw == "" {
		return nil, refuse(ReasonMissing, "no bearer token was sent; send \"Authorization: Bearer <JWT>\"")
	}
	if len(raw) > MaxTokenBytes {
		return nil, refuse(ReasonTooLarge, "the token is %d bytes long; at most %d are accepted", len(raw), MaxTokenBytes)
	}
	// A JWT is base64url and two dots; base64's decoder skips line breaks
	// even when strict, so a token with one was the same token spelled
	// another way.
	if i := strings.IndexFunc(raw, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}); i >= 0 {
		// The whole character, not its first byte ("\xe2" of a "…").
		c, _ := utf8.DecodeRuneInString(raw[i:])
		return nil, refuse(ReasonMalformed, "the token holds %q at byte %d; a JWT is base64url text in three parts joined by dots", c, i)
	}
	h, verr := v.checkHeader(raw)
	if verr != nil {
		return nil, verr
	}
	if verr := checkNumericDates(raw); verr != nil {
		return nil, verr
	}

	var tc tokenClaims
	kf := v.keyfunc(ctx, h)
	if _, err := v.parser.ParseWithClaims(raw, &tc, kf.get); err != nil {
		return nil, v.explain(err, &tc, h, kf)
	}

	switch {
	case tc.Subject == "":
		return nil, refuse(ReasonClaims, "the token has no sub claim; it must name the user or service")
	case len(tc.Subject) > MaxSubjectLen:
		return nil, refuse(ReasonClaims, "the sub claim is %d bytes long; at most %d are accepted", len(tc.Subject), MaxSubjectLen)
	case !utf8.ValidString(tc.Subject) || strings.ContainsFunc(tc.Subject, unicode.IsControl):
		return nil, refuse(ReasonClaims, "the sub claim contains a control character (such as NUL); it must be printable text")
	case kf.demo && tc.Subject != DemoSubject:
		return nil, refuse(ReasonClaims, "a token signed with the demo key may only name the demo user %q", DemoSubject)
	}
	start := v.now()
	if tc.IssuedAt != nil {
		start = tc.IssuedAt.Time
	}
	if life := tc.ExpiresAt.Sub(start); life > v.maxLife {
		return nil, refuse(ReasonClaims, "the token's lifetime (exp - iat, or exp - now without iat) is %v; at most %v is accepted (AUTH_MAX_TOKEN_LIFETIME)",
			life.Round(time.Second), v.maxLife)
	}
	c := &Claims{
		Subject:       tc.Subject,
		Email:         tc.Email,
		EmailVerified: bool(tc.EmailVerified),
		Issuer:        tc.Issuer,
		ExpiresAt:     tc.ExpiresAt.Time,
	}
	for _, s := range slices.Concat(tc.Scope, tc.Scp) {
		if !slices.Contains(c.Scopes, s) {
			c.Scopes = append(c.Scopes, s)
		}
	}
	if kf.demo && len(c.Scopes) > 0 {
		// The demo key is published: it signs in the demo user, never a
		// service (papers:write pushes papers and registry records,
		// users:write erases users).
		return nil, refuse(ReasonClaims, "a token signed with the demo key carries no scope (it had %q): it signs in the demo user only; a service token needs a real key (in development: followfeed token --sub host --scope %s)",
			strings.Join(c.Scopes, " "), ScopePapersWrite)
	}
	return c, nil
}

// checkHeader decodes the JOSE header to refuse unusable algorithms with a
// precise message before jwt parses the token (jwt checks them again).
func (v *Verifier) checkHeader(raw string) (header, *VerifyError) {
	if n := strings.Count(raw, "."); n != 2 {
		return header{}, refuse(ReasonMalformed, "the token is not a JWT: it needs three base64url parts joined by two dots, found %d dot(s)", n)
	}
	seg, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		return header{}, refuse(ReasonMalformed, "the token header is not unpadded base64url")
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return header{}, refuse(ReasonMalformed, "the token header is not a JSON object")
	}
	var h header
	alg, ok := m["alg"].(string)
	if !ok {
		return header{}, refuse(ReasonMalformed, "the token header has no alg string")
	}
	h.alg = alg
	if k, present := m["kid"]; present {
		kid, ok := k.(string)
		if !ok {
			return header{}, refuse(ReasonMalformed, "the token header's kid is not a string")
		}
		h.kid, h.hasKid = kid, true
	}
	if _, present := m["crit"]; present {
		return header{}, refuse(ReasonMalformed, "the token header has a crit parameter; no critical extensions are supported")
	}
	if t, present := m["typ"]; present {
		// Explicit typing (RFC 8725 section 3.11): a token of another kind
		// (a logout token, a DPoP proof, a security event) is never a
		// sign-in, even when the same keys signed it.
		typ, ok := t.(string)
		if !ok || !acceptedTyp(typ) {
			return header{}, refuse(ReasonMalformed, "the token header's typ must be \"JWT\" or \"at+jwt\" when present; this is another kind of token")
		}
	}

	switch {
	case strings.EqualFold(alg, "none"):
		return header{}, refuse(ReasonAlgorithm, "unsigned tokens (alg \"none\") are never accepted")
	case slices.Contains(v.methods, alg):
		return h, nil
	case alg == "HS256":
		return header{}, refuse(ReasonAlgorithm, "HS256 tokens are not accepted: no AUTH_HS256_SECRET configured; accepted algorithms: %s", strings.Join(v.methods, ", "))
	case slices.Contains(asymmetricAlgs, alg):
		return header{}, refuse(ReasonAlgorithm, "%s tokens are not accepted: no configured key fits %s; accepted algorithms: %s", alg, alg, strings.Join(v.methods, ", "))
	}
	return header{}, refuse(ReasonAlgorithm, "algorithm %s is not supported; accepted algorithms: %s", clip(alg), strings.Join(v.methods, ", "))
}

// acceptedTyp reports whether a typ header names a plain JWT or an OAuth
// access token (RFC 9068), with or without "application/", in any case.
func acceptedTyp(typ string) bool {
	t := strings.ToLower(typ)
	t = strings.TrimPrefix(t, "application/")
	return t == "jwt" || t == "at+jwt"
}

// checkNumericDates refuses exp, nbf and iat that are not JSON numbers:
// the jwt package would read "exp": "1700000000" as a date.
func checkNumericDates(raw string) *VerifyError {
	parts := strings.SplitN(raw, ".", 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil // jwt reports the encoding
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil // jwt reports what is wrong with the payload
	}
	for _, name := range []string{"exp", "nbf", "iat"} {
		v, ok := m[name]
		if !ok {
			continue
		}
		if c := v[0]; c != '-' && (c < '0' || c > '9') {
			return refuse(ReasonClaims, "claim %s must be a number (seconds since 1970), not %s", name, jsonKind(c))
		}
	}
	return nil
}

// jsonKind names the JSON type that starts with c, for messages.
func jsonKind(c byte) string {
	switch c {
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "this value"
}

// keyLookup is the jwt.Keyfunc of one Verify call. It remembers what it
// found so a signature failure can be explained.
type keyLookup struct {
	v          *Verifier
	ctx        context.Context
	h          header
	kidInJWKS  bool // the kid named a JWKS key, which alone was tried
	demo       bool // the demo key was used (the subject is then checked)
	triedCount int
}

func (v *Verifier) keyfunc(ctx context.Context, h header) *keyLookup {
	return &keyLookup{v: v, ctx: ctx, h: h}
}

// get picks the keys for the token. HS256 uses the shared secret and nothing
// else; other algorithms use only keys whose type fits the algorithm. A kid
// found in the JWKS selects that key alone; a kid not found there, or no kid,
// selects every fitting PEM key (and, without kid, every fitting JWKS key).
func (l *keyLookup) get(t *jwt.Token) (any, error) {
	v, alg := l.v, t.Method.Alg()
	if alg != l.h.alg || !slices.Contains(v.methods, alg) { // cannot happen: checkHeader ran
		return nil, refuse(ReasonAlgorithm, "algorithm %s is not accepted", clip(alg))
	}
	if alg == "HS256" && l.h.hasKid && l.h.kid == DemoKeyID {
		if len(v.demo) == 0 {
			return nil, refuse(ReasonUnknownKey, "the demo key (kid %q) is not accepted here: it works in development only", DemoKeyID)
		}
		l.demo, l.triedCount = true, 1
		return v.demo, nil
	}
	if alg == "HS256" {
		if len(v.hsSecret) == 0 {
			return nil, refuse(ReasonAlgorithm, "HS256 tokens are not accepted: no AUTH_HS256_SECRET configured")
		}
		l.triedCount = 1
		return v.hsSecret, nil
	}

	if l.h.hasKid && v.jwks != nil {
		if jwk, ok := v.jwksKey(l.ctx, l.h.kid); ok {
			key, why := jwkFor(jwk, alg)
			if why != "" {
				return nil, refuse(ReasonAlgorithm, "the JWKS key with kid %q cannot verify %s tokens: %s", clip(l.h.kid), alg, why)
			}
			l.kidInJWKS, l.triedCount = true, 1
			return key, nil
		}
	}

	var keys []jwt.VerificationKey
	for _, k := range v.pemKeys {
		if keyFits(k, alg) {
			keys = append(keys, k)
		}
	}
	if !l.h.hasKid && v.jwks != nil {
		all, err := v.jwks.Storage().KeyReadAll(l.ctx)
		if err == nil {
			for _, jwk := range all {
				if key, why := jwkFor(jwk, alg); why == "" {
					keys = append(keys, key)
				}
			}
		}
	}
	if len(keys) == 0 {
		if l.h.hasKid && v.jwks != nil {
			return nil, refuse(ReasonUnknownKey, "no key with kid %q is in the JWKS at %s (an unknown kid refreshes it at most every %v) and no PEM key fits %s",
				clip(l.h.kid), v.jwksURL, jwksUnknownKIDEvery, alg)
		}
		return nil, refuse(ReasonUnknownKey, "no configured key can verify %s tokens", alg)
	}
	l.triedCount = len(keys)
	return jwt.VerificationKeySet{Keys: keys}, nil
}

// jwksKey returns the JWKS key with this kid. A kid not in the cache
// triggers a refresh only when the unknown-kid limiter has a token right now;
// otherwise it fails at once instead of waiting for the limiter.
func (v *Verifier) jwksKey(ctx context.Context, kid string) (jwkset.JWK, bool) {
	store := v.jwks.Storage()
	all, err := store.KeyReadAll(ctx)
	if err == nil {
		for _, jwk := range all {
			if jwk.Marshal().KID == kid {
				return jwk, true
			}
		}
	}
	if v.limiter.Tokens() < 1 {
		return jwkset.JWK{}, false
	}
	// KeyRead consumes the limiter token and refetches the JWKS; a failed
	// fetch is logged by the refresh error handler and keeps the old keys.
	jwk, err := store.KeyRead(ctx, kid)
	if err != nil {
		return jwkset.JWK{}, false
	}
	return jwk, true
}

// jwkFor returns the public key of jwk if it may verify alg tokens, or a
// reason why not.
func jwkFor(jwk jwkset.JWK, alg string) (any, string) {
	m := jwk.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return nil, fmt.Sprintf("its use is %q, not \"sig\"", clip(string(m.USE)))
	}
	if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
		return nil, "its key_ops do not include \"verify\""
	}
	if m.ALG != "" && string(m.ALG) != alg {
		return nil, fmt.Sprintf("it is declared for alg %s", clip(string(m.ALG)))
	}
	key := publicOf(jwk.Key())
	if string(m.ALG) == alg && alg == "PS256" && keyFits(key, "RS256") {
		return key, "" // PSS only where the key is declared for it
	}
	if !keyFits(key, alg) {
		desc, _ := describeKey(key)
		if alg == "PS256" && keyFits(key, "RS256") {
			return nil, "it is " + desc + " without alg, which verifies RS256, RS384 and RS512 only; declare \"alg\": \"PS256\" in the JWKS to use RSASSA-PSS"
		}
		return nil, "it is " + desc
	}
	return key, ""
}

// explain turns a jwt parse error into a VerifyError.
func (v *Verifier) explain(err error, tc *tokenClaims, h header, l *keyLookup) *VerifyError {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return explainDecode(err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		switch {
		case l.kidInJWKS:
			return refuse(ReasonSignature, "the signature does not verify with the JWKS key %q", clip(h.kid))
		case h.alg == "HS256":
			return refuse(ReasonSignature, "the signature does not verify with the configured HS256 secret")
		case h.hasKid && v.jwks != nil:
			return refuse(ReasonSignature, "kid %q is not in the JWKS and the signature verifies with none of the %d PEM key(s) that fit %s", clip(h.kid), l.triedCount, h.alg)
		}
		return refuse(ReasonSignature, "the signature verifies with none of the %d configured key(s) that fit %s", l.triedCount, h.alg)
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		return v.explainClaims(err, tc)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return refuse(ReasonAlgorithm, "the token's algorithm cannot be used")
	}
	return refuse(ReasonMalformed, "the token could not be parsed")
}

// explainDecode separates undecodable tokens from claims of the wrong type.
func explainDecode(err error) *VerifyError {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		cte *claimTypeError
		b64 base64.CorruptInputError
		// jwt says this when the payload is JSON but a claim did not decode.
		badClaim = strings.Contains(err.Error(), "could not JSON decode claim")
	)
	switch {
	case errors.As(err, &b64):
		return refuse(ReasonMalformed, "a token part is not unpadded base64url")
	case errors.As(err, &syn):
		return refuse(ReasonMalformed, "the token payload is not valid JSON")
	case errors.As(err, &cte):
		return refuse(ReasonClaims, "%s", cte.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return refuse(ReasonClaims, "the token payload must be a JSON object")
		}
		field := typ.Field[strings.LastIndexByte(typ.Field, '.')+1:] // "RegisteredClaims.sub" -> "sub"
		return refuse(ReasonClaims, "claim %q must be a JSON %s, not %s", clip(field), typ.Type, typ.Value)
	case errors.Is(err, jwt.ErrInvalidType):
		return refuse(ReasonClaims, "claim aud must be a string or an array of strings")
	case badClaim:
		return refuse(ReasonClaims, "the token's claims could not be read: exp, nbf and iat must be numbers (seconds since 1970)")
	}
	return refuse(ReasonMalformed, "the token could not be decoded")
}

// explainClaims names the first failed claim check, in a fixed order. The
// jwt validator decided that the claims are invalid; this only picks words.
func (v *Verifier) explainClaims(err error, tc *tokenClaims) *VerifyError {
	now := v.now().UTC()
	ts := func(d *jwt.NumericDate) string { return d.UTC().Format(time.RFC3339) }
	switch {
	case tc.ExpiresAt == nil:
		return refuse(ReasonClaims, "the token has no exp claim; tokens must expire")
	case errors.Is(err, jwt.ErrTokenExpired):
		return refuse(ReasonExpired, "token expired at %s (server time %s, leeway %v)", ts(tc.ExpiresAt), now.Format(time.RFC3339), v.leeway)
	case errors.Is(err, jwt.ErrTokenNotValidYet) && tc.NotBefore != nil:
		return refuse(ReasonNotYetValid, "token is not valid before %s (server time %s, leeway %v)", ts(tc.NotBefore), now.Format(time.RFC3339), v.leeway)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued) && tc.IssuedAt != nil:
		return refuse(ReasonNotYetValid, "token is issued in the future, at %s (server time %s, leeway %v); check the issuer's clock", ts(tc.IssuedAt), now.Format(time.RFC3339), v.leeway)
	case v.issuer != "" && tc.Issuer == "":
		return refuse(ReasonIssuer, "the token has no iss claim; issuer must be %q", v.issuer)
	case v.issuer != "" && tc.Issuer != v.issuer:
		return refuse(ReasonIssuer, "issuer must be %q, not %q", v.issuer, clip(tc.Issuer))
	case v.audience != "" && !slices.Contains(tc.Audience, v.audience):
		return refuse(ReasonAudience, "audience must be %q", v.audience)
	}
	return refuse(ReasonClaims, "the token's claims are invalid")
}

// clip shortens a token-supplied value before it goes into a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// tokenClaims is the JSON payload Verify reads.
type tokenClaims struct {
	jwt.RegisteredClaims
	Email         string    `json:"email"`
	EmailVerified flexBool  `json:"email_verified"`
	Scope         scopeList `json:"scope"`
	Scp           scopeList `json:"scp"`
}

// claimTypeError is a custom claim of the wrong JSON type.
type claimTypeError struct{ msg string }

func (e *claimTypeError) Error() string { return e.msg }

// flexBool reads true, false, "true", "false" (any case) or null.
type flexBool bool

func (b *flexBool) UnmarshalJSON(data []byte) error {
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	switch x := x.(type) {
	case nil:
		*b = false
	case bool:
		*b = flexBool(x)
	case string:
		switch {
		case strings.EqualFold(x, "true"):
			*b = true
		case strings.EqualFold(x, "false"):
			*b = false
		default:
			return &claimTypeError{`claim email_verified must be true, false, "true" or "false"`}
		}
	default:
		return &claimTypeError{`claim email_verified must be true, false, "true" or "false"`}
	}
	return nil
}

// scopeList reads a space-separated string or an array of strings.
type scopeList []string

func (s *scopeList) UnmarshalJSON(data []byte) error {
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	switch x := x.(type) {
	case nil:
		*s = nil
	case string:
		*s = strings.Fields(x)
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			str, ok := e.(string)
			if !ok {
				return &claimTypeError{"claims scope and scp must be a space-separated string or an array of strings"}
			}
			out = append(out, strings.Fields(str)...)
		}
		*s = out
	default:
		return &claimTypeError{"claims scope and scp must be a space-separated string or an array of strings"}
	}
	return nil
}
