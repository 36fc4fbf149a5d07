package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"followfeed/apperr"
)

var testNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

const (
	testIss = "https://host.example"
	testAud = "followfeed"
)

// testSecret is also the secret of the FuzzVerify seed tokens.
var testSecret = []byte("test-hs256-secret-0123456789abcdef0123456789")

// testKeys: the A keys are served as PEM, the B keys by the JWKS, C is the
// key the JWKS rotates in, P384 is configured nowhere.
type testKeys struct {
	rsaA, rsaB, rsaC *rsa.PrivateKey
	ecA, ecB, p384   *ecdsa.PrivateKey
	edA, edB         ed25519.PrivateKey
	pem              []byte // rsaA (PKCS #1), ecA (PKIX), edA (certificate)
}

var sharedKeys = sync.OnceValue(func() *testKeys {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	k := &testKeys{}
	var err error
	for _, p := range []**rsa.PrivateKey{&k.rsaA, &k.rsaB, &k.rsaC} {
		*p, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
	}
	k.ecA, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	k.ecB, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	k.p384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(err)
	_, k.edA, err = ed25519.GenerateKey(rand.Reader)
	must(err)
	_, k.edB, err = ed25519.GenerateKey(rand.Reader)
	must(err)

	var buf bytes.Buffer
	buf.WriteString("subject=CN=host identity provider\n")
	must(pem.Encode(&buf, &pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsaA.PublicKey)}))
	der, err := x509.MarshalPKIXPublicKey(&k.ecA.PublicKey)
	must(err)
	must(pem.Encode(&buf, &pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "idp"},
		NotBefore:    testNow.Add(-time.Hour),
		NotAfter:     testNow.Add(time.Hour),
	}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.edA.Public(), k.edA)
	must(err)
	must(pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: cert}))
	k.pem = buf.Bytes()
	return k
})

func pemOf(t testing.TB, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkixDER(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// del removes a claim in claims().
const del = "\x00delete"

// claims returns valid claims with kv applied (value del removes the key).
func claims(kv ...any) jwt.MapClaims {
	c := jwt.MapClaims{
		"sub": "user-1",
		"iss": testIss,
		"aud": testAud,
		"iat": testNow.Add(-time.Minute).Unix(),
		"exp": testNow.Add(time.Hour).Unix(),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == del {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

func sign(t testing.TB, m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func payloadOf(t testing.TB, c jwt.MapClaims) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// jwksServer serves a switchable JWKS and counts requests.
type jwksServer struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	body []byte
	fail bool
	hang atomic.Bool // handle no request until the client gives up
}

type jwkEntry struct {
	kid string
	alg jwkset.ALG
	pub any
}

func newJWKSServer(t *testing.T, keys ...jwkEntry) *jwksServer {
	s := &jwksServer{}
	s.serve(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if s.hang.Load() {
			<-r.Context().Done()
			return
		}
		s.mu.Lock()
		body, fail := s.body, s.fail
		s.mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(t *testing.T, keys ...jwkEntry) {
	t.Helper()
	var set jwkset.JWKSMarshal
	set.Keys = []jwkset.JWKMarshal{}
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.pub, jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: k.alg, USE: jwkset.UseSig},
		})
		if err != nil {
			t.Fatal(err)
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body, s.fail = body, false
	s.mu.Unlock()
}

func (s *jwksServer) setFail(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

func goodJWKS(k *testKeys) []jwkEntry {
	return []jwkEntry{
		{"rsa-b", jwkset.AlgRS256, &k.rsaB.PublicKey},
		{"ec-b", jwkset.AlgES256, &k.ecB.PublicKey},
		{"ed-b", jwkset.AlgEdDSA, k.edB.Public()},
		{"ec-noalg", "", &k.ecB.PublicKey}, // no "alg": only the key type decides
	}
}

// syncBuffer is a log sink the JWKS refresh goroutine may write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newVerifier(t testing.TB, cfg VerifierConfig) *Verifier {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	v, err := NewVerifier(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// checkRefusal asserts err is a well-formed refusal with the given reason.
func checkRefusal(t testing.TB, raw string, err error, reason string) *VerifyError {
	t.Helper()
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %#v, want *VerifyError", err)
	}
	if ve.Reason != reason {
		t.Errorf("Reason = %q (%s), want %q", ve.Reason, ve.Message, reason)
	}
	if ve.Message == "" {
		t.Error("empty Message")
	}
	if raw != "" && (strings.Contains(ve.Message, raw) || strings.Contains(err.Error(), raw)) {
		t.Errorf("the error message contains the token: %q", ve.Message)
	}
	if apperr.CodeOf(err) != apperr.Unauthorized || ve.AppErr().Code != apperr.Unauthorized || ve.AppErr().Message != ve.Message {
		t.Errorf("does not map to apperr.Unauthorized")
	}
	return ve
}

func TestVerify(t *testing.T) {
	k := sharedKeys()
	jwks := newJWKSServer(t, goodJWKS(k)...)
	full := newVerifier(t, VerifierConfig{
		JWKSURL:      jwks.URL,
		PublicKeyPEM: k.pem,
		HS256Secret:  testSecret,
		Issuer:       testIss,
		Audience:     testAud,
		Leeway:       30 * time.Second,
	})
	pemOnly := newVerifier(t, VerifierConfig{PublicKeyPEM: k.pem, Issuer: testIss})
	hsOnly := newVerifier(t, VerifierConfig{HS256Secret: testSecret})

	valid := sign(t, jwt.SigningMethodRS256, k.rsaB, "rsa-b", claims())
	parts := strings.Split(valid, ".")
	rsaPKIXPEM := pemOf(t, "PUBLIC KEY", pkixDER(t, &k.rsaA.PublicKey))
	rsaPKCS1PEM := pemOf(t, "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&k.rsaA.PublicKey))
	noneHeader := b64(`{"alg":"none"}`) // eyJhbGciOiJub25lIn0
	huge := strings.Repeat("A", 100_000)

	tests := []struct {
		name   string
		v      *Verifier
		token  string
		reason string // "" means accepted
		msg    string // substring of the message
		check  func(t *testing.T, c *Claims)
	}{
		// Accepted, from each source.
		{name: "EdDSA PEM certificate", token: sign(t, jwt.SigningMethodEdDSA, k.edA, "", claims())},
		{name: "RS256 PEM", token: sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims())},
		{name: "RS512 PEM", token: sign(t, jwt.SigningMethodRS512, k.rsaA, "", claims())},
		// An RSA key without alg verifies one family (issue 15): PSS needs a
		// JWKS key declared PS256.
		{name: "PS256 PEM", token: sign(t, jwt.SigningMethodPS256, k.rsaA, "", claims()), reason: ReasonUnknownKey, msg: "PS256"},
		{name: "ES256 PEM", token: sign(t, jwt.SigningMethodES256, k.ecA, "", claims())},
		{name: "ES256 PEM only", v: pemOnly, token: sign(t, jwt.SigningMethodES256, k.ecA, "", claims("aud", del))},
		{name: "RS256 JWKS kid", token: valid, check: func(t *testing.T, c *Claims) {
			if c.Subject != "user-1" || c.Issuer != testIss || !c.ExpiresAt.Equal(testNow.Add(time.Hour)) {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "ES256 JWKS kid", token: sign(t, jwt.SigningMethodES256, k.ecB, "ec-b", claims())},
		{name: "EdDSA JWKS kid", token: sign(t, jwt.SigningMethodEdDSA, k.edB, "ed-b", claims())},
		{name: "RS256 PEM key, kid unknown to JWKS", token: sign(t, jwt.SigningMethodRS256, k.rsaA, "pem-1", claims())},
		{name: "ES256 JWKS without kid", token: sign(t, jwt.SigningMethodES256, k.ecB, "", claims())},
		{name: "HS256", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims())},
		{name: "HS256 only", v: hsOnly, token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims())},
		{name: "HS256 ignores kid", token: sign(t, jwt.SigningMethodHS256, testSecret, "rsa-b", claims())},
		{name: "aud array", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("aud", []string{"other", testAud}))},

		// Time.
		{name: "expired", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", testNow.Add(-2*time.Minute).Unix())),
			reason: ReasonExpired, msg: "token expired at 2026-11-29T09:58:00Z"},
		{name: "expired within leeway", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", testNow.Add(-20*time.Second).Unix()))},
		{name: "nbf in future", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("nbf", testNow.Add(5*time.Minute).Unix())),
			reason: ReasonNotYetValid, msg: "not valid before 2026-11-29T10:05:00Z"},
		{name: "nbf within leeway", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("nbf", testNow.Add(20*time.Second).Unix()))},
		{name: "iat in future", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("iat", testNow.Add(5*time.Minute).Unix())),
			reason: ReasonNotYetValid, msg: "issued in the future"},
		{name: "missing exp", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", del)), reason: ReasonClaims, msg: "no exp"},
		{name: "exp a string", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", "tomorrow")), reason: ReasonClaims},

		// Issuer, audience, subject.
		{name: "wrong iss", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("iss", "https://evil.example")),
			reason: ReasonIssuer, msg: `issuer must be "https://host.example"`},
		{name: "missing iss", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("iss", del)), reason: ReasonIssuer},
		{name: "wrong aud", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("aud", "other")),
			reason: ReasonAudience, msg: `audience must be "followfeed"`},
		{name: "missing aud", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("aud", del)), reason: ReasonAudience},
		{name: "aud a number", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("aud", 5)), reason: ReasonClaims},
		{name: "missing sub", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", del)), reason: ReasonClaims, msg: "no sub"},
		{name: "empty sub", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", "")), reason: ReasonClaims},
		{name: "long sub", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", strings.Repeat("u", 256))), reason: ReasonClaims},
		{name: "sub a number", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", 42)), reason: ReasonClaims, msg: `"sub"`},
		{name: "payload an array", token: b64(`{"alg":"HS256"}`) + "." + b64(`[1]`) + ".c2ln", reason: ReasonClaims},

		// Algorithms and key confusion.
		{name: "alg none empty signature", token: noneHeader + "." + parts[1] + ".", reason: ReasonAlgorithm, msg: `"none"`},
		{name: "alg none no signature part", token: "eyJhbGciOiJub25lIn0." + parts[1], reason: ReasonMalformed},
		{name: "alg none with signature", token: noneHeader + "." + parts[1] + "." + parts[2], reason: ReasonAlgorithm},
		{name: "alg NONE", token: b64(`{"alg":"NONE","typ":"JWT"}`) + "." + parts[1] + ".", reason: ReasonAlgorithm},
		{name: "alg none hs-only", v: hsOnly, token: noneHeader + "." + parts[1] + ".", reason: ReasonAlgorithm},
		{name: "HS256 keyed with RSA PKIX PEM", token: sign(t, jwt.SigningMethodHS256, rsaPKIXPEM, "", claims()), reason: ReasonSignature},
		{name: "HS256 keyed with RSA PKCS1 PEM", token: sign(t, jwt.SigningMethodHS256, rsaPKCS1PEM, "", claims()), reason: ReasonSignature},
		{name: "HS256 keyed with RSA DER", token: sign(t, jwt.SigningMethodHS256, pkixDER(t, &k.rsaA.PublicKey), "", claims()), reason: ReasonSignature},
		{name: "HS256 keyed with the PEM file", token: sign(t, jwt.SigningMethodHS256, k.pem, "", claims()), reason: ReasonSignature},
		{name: "HS256 keyed with RSA PEM, HS256 off", v: pemOnly, token: sign(t, jwt.SigningMethodHS256, rsaPKIXPEM, "", claims()),
			reason: ReasonAlgorithm, msg: "HS256 tokens are not accepted: no AUTH_HS256_SECRET configured"},
		{name: "RS256 with EC kid", token: sign(t, jwt.SigningMethodRS256, k.rsaB, "ec-b", claims()), reason: ReasonAlgorithm, msg: `"ec-b"`},
		{name: "RS256 with EC kid without alg", token: sign(t, jwt.SigningMethodRS256, k.rsaB, "ec-noalg", claims()), reason: ReasonAlgorithm, msg: "it is an ECDSA P-256 key"},
		{name: "ES256 JWKS kid without alg", token: sign(t, jwt.SigningMethodES256, k.ecB, "ec-noalg", claims())},
		{name: "ES256 with RSA kid", token: sign(t, jwt.SigningMethodES256, k.ecB, "rsa-b", claims()), reason: ReasonAlgorithm},
		{name: "PS256 with kid declared RS256", token: sign(t, jwt.SigningMethodPS256, k.rsaB, "rsa-b", claims()), reason: ReasonAlgorithm, msg: "declared for alg RS256"},
		{name: "RS256 hs-only", v: hsOnly, token: valid, reason: ReasonAlgorithm},
		{name: "HS512", token: sign(t, jwt.SigningMethodHS512, testSecret, "", claims()), reason: ReasonAlgorithm},
		{name: "ES512 unsupported", token: b64(`{"alg":"ES512"}`) + "." + parts[1] + "." + parts[2], reason: ReasonAlgorithm},
		{name: "ES384 no P-384 key", token: sign(t, jwt.SigningMethodES384, k.p384, "", claims()), reason: ReasonUnknownKey},
		{name: "EdDSA PEM only no fitting key", v: newVerifier(t, VerifierConfig{PublicKeyPEM: pemOf(t, "PUBLIC KEY", pkixDER(t, &k.ecA.PublicKey))}),
			token: sign(t, jwt.SigningMethodEdDSA, k.edA, "", claims()), reason: ReasonAlgorithm},

		// Signatures.
		{name: "tampered payload", token: parts[0] + "." + payloadOf(t, claims("sub", "admin")) + "." + parts[2], reason: ReasonSignature},
		{name: "JWKS kid, other key", token: sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-b", claims()), reason: ReasonSignature, msg: `JWKS key "rsa-b"`},
		{name: "RS256 unknown key no kid", token: sign(t, jwt.SigningMethodRS256, k.rsaC, "", claims()), reason: ReasonSignature},
		{name: "ES256 truncated signature", token: func() string {
			// 86 characters (64 bytes) cut to 80: 60 bytes, whole
			// base64url, so the signature's length is what is wrong.
			s := sign(t, jwt.SigningMethodES256, k.ecA, "", claims())
			return s[:len(s)-6]
		}(), reason: ReasonSignature},
		{name: "signature in another spelling", token: func() string {
			// The last character's unused bits set: the same bytes to a
			// lenient decoder, so the same token; a token has one spelling.
			s := sign(t, jwt.SigningMethodES256, k.ecA, "", claims())
			const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			i := strings.IndexByte(alphabet, s[len(s)-1])
			return s[:len(s)-1] + string(alphabet[i|1])
		}(), reason: ReasonMalformed},
		{name: "signature with a line break", token: func() string {
			// base64's decoder skips it even when strict.
			s := sign(t, jwt.SigningMethodES256, k.ecA, "", claims())
			return s[:len(s)-5] + "\n" + s[len(s)-5:]
		}(), reason: ReasonMalformed},
		{name: "HS256 wrong secret", token: sign(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123"), "", claims()), reason: ReasonSignature},

		// Garbage.
		{name: "empty", token: "", reason: ReasonMissing},
		{name: "garbage", token: "garbage", reason: ReasonMalformed},
		{name: "two dots", token: "..", reason: ReasonMalformed},
		{name: "a.b.c", token: "a.b.c", reason: ReasonMalformed},
		{name: "four parts", token: valid + ".x", reason: ReasonMalformed},
		{name: "bearer prefix", token: "Bearer " + valid, reason: ReasonMalformed},
		{name: "100 KB", token: huge, reason: ReasonTooLarge},
		{name: "100 KB JWT-shaped", token: parts[0] + "." + huge + "." + parts[2], reason: ReasonTooLarge},
		{name: "8 KiB + 1", token: parts[0] + "." + strings.Repeat("A", MaxTokenBytes-len(parts[0])-len(parts[2])-1) + "." + parts[2], reason: ReasonTooLarge},
		{name: "header not JSON", token: b64("nope") + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "header JSON null", token: b64("null") + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "header alg a number", token: b64(`{"alg":256}`) + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "header no alg", token: b64(`{"typ":"JWT"}`) + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "header kid a number", token: b64(`{"alg":"RS256","kid":7}`) + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "header crit", token: b64(`{"alg":"RS256","kid":"rsa-b","crit":["exp"]}`) + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "padded header", token: base64.URLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"rsa-b"}`)) + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "payload not base64", token: parts[0] + ".!!!." + parts[2], reason: ReasonMalformed},
		{name: "payload not JSON", token: parts[0] + "." + b64("{") + "." + parts[2], reason: ReasonMalformed},
		{name: "signature not base64", token: parts[0] + "." + parts[1] + ".***", reason: ReasonMalformed},

		// Scopes and email.
		{name: "scope string", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("scope", "papers:write  feeds:read")), check: func(t *testing.T, c *Claims) {
			if !slices.Equal(c.Scopes, []string{"papers:write", "feeds:read"}) || !c.HasScope("feeds:read") || !c.IsService() {
				t.Errorf("Scopes = %q", c.Scopes)
			}
		}},
		{name: "users:write is a service scope", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("scope", "users:write")), check: func(t *testing.T, c *Claims) {
			if !c.IsService() || !c.HasScope(ScopeUsersWrite) || c.HasScope(ScopePapersWrite) {
				t.Errorf("Scopes = %q, IsService %v", c.Scopes, c.IsService())
			}
		}},
		{name: "scp array", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("scp", []string{"a", "b"})), check: func(t *testing.T, c *Claims) {
			if !slices.Equal(c.Scopes, []string{"a", "b"}) || c.IsService() || c.HasScope("papers:write") {
				t.Errorf("Scopes = %q", c.Scopes)
			}
		}},
		{name: "scp string and scope merged", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("scope", "a b", "scp", "b c")), check: func(t *testing.T, c *Claims) {
			if !slices.Equal(c.Scopes, []string{"a", "b", "c"}) {
				t.Errorf("Scopes = %q", c.Scopes)
			}
		}},
		{name: "no scopes", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims()), check: func(t *testing.T, c *Claims) {
			if len(c.Scopes) != 0 || c.IsService() || c.EmailVerified || c.Email != "" {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "scope a number", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("scope", 3)), reason: ReasonClaims, msg: "scope"},
		{name: "scp array of numbers", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("scp", []int{1})), reason: ReasonClaims},
		{name: "email_verified string", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("email", "a@example.org", "email_verified", "true")), check: func(t *testing.T, c *Claims) {
			if c.Email != "a@example.org" || !c.EmailVerified {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "email_verified bool", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("email_verified", true)), check: func(t *testing.T, c *Claims) {
			if !c.EmailVerified {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "email_verified false string", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("email_verified", "false")), check: func(t *testing.T, c *Claims) {
			if c.EmailVerified {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "email_verified yes", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("email_verified", "yes")), reason: ReasonClaims, msg: "email_verified"},
		{name: "email_verified 1", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("email_verified", 1)), reason: ReasonClaims},
		{name: "email a number", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("email", 1)), reason: ReasonClaims, msg: `"email"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			if v == nil {
				v = full
			}
			c, err := v.Verify(t.Context(), tc.token)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.Subject == "" {
					t.Error("empty Subject")
				}
				if tc.check != nil {
					tc.check(t, c)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			if c != nil {
				t.Error("claims returned with an error")
			}
			ve := checkRefusal(t, tc.token, err, tc.reason)
			t.Log(err)
			if tc.msg != "" && !strings.Contains(ve.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", ve.Message, tc.msg)
			}
		})
	}
	// Nothing above may have needed more than the first JWKS fetch plus
	// at most one unknown-kid refresh.
	if n := jwks.hits.Load(); n > 2 {
		t.Errorf("JWKS fetched %d times", n)
	}
}

func TestJWKSRotationAndUnknownKIDRateLimit(t *testing.T) {
	k := sharedKeys()
	jwks := newJWKSServer(t, goodJWKS(k)...)
	v := newVerifier(t, VerifierConfig{JWKSURL: jwks.URL})
	if n := jwks.hits.Load(); n != 1 {
		t.Fatalf("initial fetches = %d, want 1", n)
	}

	// The IdP rotates in rsa-c; a token with that unknown kid makes exactly
	// one refresh, which finds it.
	jwks.serve(t, append(goodJWKS(k), jwkEntry{"rsa-c", jwkset.AlgRS256, &k.rsaC.PublicKey})...)
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k.rsaC, "rsa-c", claims())); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if n := jwks.hits.Load(); n != 2 {
		t.Fatalf("fetches after rotation = %d, want 2", n)
	}
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k.rsaC, "rsa-c", claims())); err != nil {
		t.Fatalf("rotated key, cached: %v", err)
	}

	// Another unknown kid within 5 minutes: no request, fast failure.
	for _, kid := range []string{"rsa-d", "rsa-e"} {
		tok := sign(t, jwt.SigningMethodRS256, k.rsaA, kid, claims())
		start := time.Now()
		_, err := v.Verify(t.Context(), tok)
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("unknown kid took %v", d)
		}
		ve := checkRefusal(t, tok, err, ReasonUnknownKey)
		if !strings.Contains(ve.Message, kid) {
			t.Errorf("Message = %q", ve.Message)
		}
	}
	if n := jwks.hits.Load(); n != 2 {
		t.Fatalf("fetches after unknown kids = %d, want 2", n)
	}
}

func TestJWKSDownAfterFirstLoadKeepsCachedKeys(t *testing.T) {
	k := sharedKeys()
	jwks := newJWKSServer(t, goodJWKS(k)...)
	var logs syncBuffer
	v := newVerifier(t, VerifierConfig{JWKSURL: jwks.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	jwks.setFail(true)
	// An unknown kid makes the verifier refetch; the endpoint answers 500.
	tok := sign(t, jwt.SigningMethodRS256, k.rsaC, "rsa-c", claims())
	_, err := v.Verify(t.Context(), tok)
	checkRefusal(t, tok, err, ReasonUnknownKey)
	if n := jwks.hits.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2", n)
	}
	if !strings.Contains(logs.String(), "JWKS fetch failed") || !strings.Contains(logs.String(), "500") {
		t.Errorf("refresh failure not logged with the Logger: %q", logs.String())
	}
	// The last good keys still verify.
	for _, tok := range []string{
		sign(t, jwt.SigningMethodRS256, k.rsaB, "rsa-b", claims()),
		sign(t, jwt.SigningMethodEdDSA, k.edB, "ed-b", claims()),
		sign(t, jwt.SigningMethodES256, k.ecB, "", claims()),
	} {
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Errorf("cached key: %v", err)
		}
	}
}

func TestJWKSDownAtStart(t *testing.T) {
	k := sharedKeys()
	jwks := newJWKSServer(t, goodJWKS(k)...)
	jwks.setFail(true)
	var logs syncBuffer
	v := newVerifier(t, VerifierConfig{
		JWKSURL:     jwks.URL,
		HS256Secret: testSecret,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if !strings.Contains(logs.String(), "JWKS fetch failed") {
		t.Errorf("first fetch failure not logged: %q", logs.String())
	}
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodHS256, testSecret, "", claims())); err != nil {
		t.Fatalf("HS256 while JWKS is down: %v", err)
	}
	// No JWKS keys yet: a kid-less RS256 token finds no key.
	tok := sign(t, jwt.SigningMethodRS256, k.rsaB, "", claims())
	_, err := v.Verify(t.Context(), tok)
	checkRefusal(t, tok, err, ReasonUnknownKey)

	// The endpoint recovers; a token with a kid fetches the keys.
	jwks.setFail(false)
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k.rsaB, "rsa-b", claims())); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if n := jwks.hits.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2", n)
	}
}

func TestNewVerifierErrors(t *testing.T) {
	k := sharedKeys()
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPriv, err := x509.MarshalECPrivateKey(k.ecA)
	if err != nil {
		t.Fatal(err)
	}
	good := pemOf(t, "PUBLIC KEY", pkixDER(t, &k.rsaA.PublicKey))
	for _, tc := range []struct {
		name string
		cfg  VerifierConfig
		want string
	}{
		{"no source", VerifierConfig{Issuer: testIss}, "no key source"},
		{"not PEM", VerifierConfig{PublicKeyPEM: []byte("ssh-rsa AAAA...")}, "no PEM block"},
		{"blank PEM", VerifierConfig{PublicKeyPEM: []byte("\n \n")}, "empty"},
		{"private key", VerifierConfig{PublicKeyPEM: append(good, pemOf(t, "EC PRIVATE KEY", ecPriv)...)}, `PEM block 2 ("EC PRIVATE KEY"): this is a private key`},
		{"bad DER", VerifierConfig{PublicKeyPEM: append(good, pemOf(t, "PUBLIC KEY", []byte("junk"))...)}, `PEM block 2 ("PUBLIC KEY"): not a valid PKIX public key`},
		{"bad certificate", VerifierConfig{PublicKeyPEM: pemOf(t, "CERTIFICATE", []byte("junk"))}, "PEM block 1"},
		{"weak RSA", VerifierConfig{PublicKeyPEM: pemOf(t, "PUBLIC KEY", pkixDER(t, &weak.PublicKey))}, "RSA 1024-bit key (too weak)"},
		{"P-521", VerifierConfig{PublicKeyPEM: pemOf(t, "PUBLIC KEY", pkixDER(t, &p521.PublicKey))}, "P-521"},
		{"unknown type", VerifierConfig{PublicKeyPEM: pemOf(t, "OPENSSH KEY", []byte("x"))}, "unsupported block type"},
		{"JWKS URL not http", VerifierConfig{JWKSURL: "file:///etc/jwks.json"}, "http(s)"},
		{"JWKS URL relative", VerifierConfig{JWKSURL: "/jwks.json"}, "http(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := NewVerifier(t.Context(), tc.cfg)
			if err == nil {
				t.Fatalf("NewVerifier succeeded: %v", v.Algorithms())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestAlgorithms(t *testing.T) {
	k := sharedKeys()
	for _, tc := range []struct {
		name string
		cfg  VerifierConfig
		want []string
	}{
		{"hs", VerifierConfig{HS256Secret: testSecret}, []string{"HS256"}},
		{"pem", VerifierConfig{PublicKeyPEM: k.pem}, []string{"ES256", "EdDSA", "RS256", "RS384", "RS512"}},
		{"ec pem", VerifierConfig{PublicKeyPEM: pemOf(t, "PUBLIC KEY", pkixDER(t, &k.p384.PublicKey))}, []string{"ES384"}},
		{"jwks", VerifierConfig{JWKSURL: newJWKSServer(t).URL}, []string{"ES256", "ES384", "EdDSA", "PS256", "RS256", "RS384", "RS512"}},
	} {
		if got := newVerifier(t, tc.cfg).Algorithms(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Algorithms() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLeewayIsClamped(t *testing.T) {
	v := newVerifier(t, VerifierConfig{HS256Secret: testSecret, Leeway: 10 * time.Minute})
	ok := sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", testNow.Add(-50*time.Second).Unix()))
	if _, err := v.Verify(t.Context(), ok); err != nil {
		t.Errorf("expired 50s ago: %v", err)
	}
	late := sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", testNow.Add(-90*time.Second).Unix()))
	_, err := v.Verify(t.Context(), late)
	checkRefusal(t, late, err, ReasonExpired)

	v = newVerifier(t, VerifierConfig{HS256Secret: testSecret, Leeway: -time.Minute})
	now := sign(t, jwt.SigningMethodHS256, testSecret, "", claims("exp", testNow.Unix()))
	_, err = v.Verify(t.Context(), now)
	checkRefusal(t, now, err, ReasonExpired)
}

func TestVerifyErrorMapping(t *testing.T) {
	var err error = &VerifyError{Reason: ReasonExpired, Message: "token expired at 2026-11-29T10:00:00Z"}
	if got := err.Error(); got != "auth: invalid token (expired): token expired at 2026-11-29T10:00:00Z" {
		t.Errorf("Error() = %q", got)
	}
	ae, ok := apperr.As(err)
	if !ok || ae.Code != apperr.Unauthorized || ae.Message != "token expired at 2026-11-29T10:00:00Z" {
		t.Errorf("apperr.As = %+v, %v", ae, ok)
	}
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Reason != ReasonExpired {
		t.Error("errors.As *VerifyError failed")
	}
}

func TestMintHS256(t *testing.T) {
	v := newVerifier(t, VerifierConfig{HS256Secret: testSecret, Issuer: testIss, Audience: testAud})
	tok, err := MintHS256(testSecret, MintOptions{
		Subject: "svc-host", Email: "svc@example.org", EmailVerified: true,
		Scopes: []string{ScopePapersWrite, "feeds:read"}, TTL: 2 * time.Hour,
		Issuer: testIss, Audience: testAud, Now: testNow.Add(-time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("Verify(minted): %v", err)
	}
	want := Claims{Subject: "svc-host", Email: "svc@example.org", EmailVerified: true,
		Scopes: []string{ScopePapersWrite, "feeds:read"}, Issuer: testIss, ExpiresAt: testNow.Add(time.Hour + 59*time.Minute)}
	if c.Subject != want.Subject || c.Email != want.Email || !c.EmailVerified || !slices.Equal(c.Scopes, want.Scopes) ||
		c.Issuer != want.Issuer || !c.ExpiresAt.Equal(want.ExpiresAt) || !c.IsService() {
		t.Errorf("claims = %+v, want %+v", c, want)
	}

	// Raw payload: scope is one space-separated string; iat and jti are set.
	var payload map[string]any
	seg := strings.Split(tok, ".")[1]
	b, _ := base64.RawURLEncoding.DecodeString(seg)
	if err := json.Unmarshal(b, &payload); err != nil {
		t.Fatal(err)
	}
	if payload["scope"] != "papers:write feeds:read" || payload["iat"] == nil || payload["jti"] == "" || payload["jti"] == nil {
		t.Errorf("payload = %v", payload)
	}
	tok2, _ := MintHS256(testSecret, MintOptions{Subject: "svc-host", Now: testNow})
	b, _ = base64.RawURLEncoding.DecodeString(strings.Split(tok2, ".")[1])
	var p2 map[string]any
	json.Unmarshal(b, &p2)
	if p2["jti"] == payload["jti"] {
		t.Error("jti is not random")
	}
	if exp := int64(p2["exp"].(float64)); exp != testNow.Add(DefaultMintTTL).Unix() {
		t.Errorf("default TTL: exp = %d", exp)
	}

	// Default Now: the token is valid for a verifier on the real clock.
	real := newVerifier(t, VerifierConfig{HS256Secret: testSecret, Now: time.Now})
	tok3, err := MintHS256(testSecret, MintOptions{Subject: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := real.Verify(t.Context(), tok3); err != nil {
		t.Errorf("minted now: %v", err)
	}

	for _, tc := range []struct {
		name   string
		secret []byte
		o      MintOptions
	}{
		{"no secret", nil, MintOptions{Subject: "u"}},
		{"no subject", testSecret, MintOptions{}},
		{"long subject", testSecret, MintOptions{Subject: strings.Repeat("u", 256)}},
		{"negative TTL", testSecret, MintOptions{Subject: "u", TTL: -time.Second}},
		{"TTL too long", testSecret, MintOptions{Subject: "u", TTL: 31 * 24 * time.Hour}},
		{"scope with space", testSecret, MintOptions{Subject: "u", Scopes: []string{"a b"}}},
		{"empty scope", testSecret, MintOptions{Subject: "u", Scopes: []string{""}}},
	} {
		if _, err := MintHS256(tc.secret, tc.o); err == nil {
			t.Errorf("%s: MintHS256 succeeded", tc.name)
		}
	}
}

func TestVerifyConcurrent(t *testing.T) {
	k := sharedKeys()
	jwks := newJWKSServer(t, goodJWKS(k)...)
	v := newVerifier(t, VerifierConfig{JWKSURL: jwks.URL, PublicKeyPEM: k.pem, HS256Secret: testSecret})
	toks := []string{
		sign(t, jwt.SigningMethodRS256, k.rsaB, "rsa-b", claims()),
		sign(t, jwt.SigningMethodES256, k.ecA, "", claims()),
		sign(t, jwt.SigningMethodHS256, testSecret, "", claims()),
	}
	bad := sign(t, jwt.SigningMethodRS256, k.rsaC, "rsa-zz", claims())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if _, err := v.Verify(t.Context(), toks[(i+j)%len(toks)]); err != nil {
					t.Error(err)
				}
				if _, err := v.Verify(t.Context(), bad); err == nil {
					t.Error("bad token accepted")
				}
			}
		})
	}
	wg.Wait()
	if n := jwks.hits.Load(); n > 2 {
		t.Errorf("JWKS fetched %d times", n)
	}
}

func TestVerifyHonoursContextDuringRefresh(t *testing.T) {
	k := sharedKeys()
	srv := newJWKSServer(t, goodJWKS(k)...)
	v := newVerifier(t, VerifierConfig{JWKSURL: srv.URL})
	srv.hang.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	tok := sign(t, jwt.SigningMethodRS256, k.rsaC, "rsa-c", claims())
	start := time.Now()
	_, err := v.Verify(ctx, tok)
	checkRefusal(t, tok, err, ReasonUnknownKey)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Verify ignored ctx: took %v", d)
	}
}

// fuzzConfig is the verifier FuzzVerify attacks. The valid_* seeds in
// testdata/fuzz/FuzzVerify are HS256 tokens it accepts.
func fuzzConfig(k *testKeys) VerifierConfig {
	return VerifierConfig{PublicKeyPEM: k.pem, HS256Secret: testSecret, Issuer: testIss, Leeway: 30 * time.Second}
}

func TestFuzzSeedsReachAcceptance(t *testing.T) {
	t.Log("hostile: decoders")
	v := newVerifier(t, fuzzConfig(sharedKeys()))
	files, err := filepath.Glob("testdata/fuzz/FuzzVerify/*")
	if err != nil || len(files) < 10 {
		t.Fatalf("seed corpus: %d files, %v", len(files), err)
	}
	accepted := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lit, ok := strings.CutPrefix(string(b), "go test fuzz v1\nstring(")
		lit, ok2 := strings.CutSuffix(strings.TrimSpace(lit), ")")
		raw, err := strconv.Unquote(lit)
		if !ok || !ok2 || err != nil {
			t.Fatalf("%s: not a string seed", name)
		}
		_, verr := v.Verify(t.Context(), raw)
		if isValid := strings.HasPrefix(filepath.Base(name), "valid_"); isValid != (verr == nil) {
			t.Errorf("%s: Verify err = %v", filepath.Base(name), verr)
		}
		if verr == nil {
			accepted++
		}
	}
	if accepted == 0 {
		t.Error("no seed is accepted; the fuzzer would never reach the accept path")
	}
}

// FuzzVerify checks that no input panics, that an accepted token is always
// signed with an accepted algorithm, and that refusals are well-formed.
func FuzzVerify(f *testing.F) {
	f.Log("hostile: decoders")
	k := sharedKeys()
	f.Add("")
	f.Add(sign(f, jwt.SigningMethodRS256, k.rsaA, "", claims()))
	f.Add(sign(f, jwt.SigningMethodEdDSA, k.edA, "kid", claims("scope", "a b")))
	f.Add(sign(f, jwt.SigningMethodHS256, testSecret, "", claims("email_verified", "true")))
	v := newVerifier(f, fuzzConfig(k))
	reasons := []string{ReasonMissing, ReasonMalformed, ReasonTooLarge, ReasonAlgorithm, ReasonSignature, ReasonUnknownKey,
		ReasonExpired, ReasonNotYetValid, ReasonIssuer, ReasonAudience, ReasonClaims}

	f.Fuzz(func(t *testing.T, raw string) {
		c, err := v.Verify(context.Background(), raw)
		if err == nil {
			parts := strings.Split(raw, ".")
			if len(parts) != 3 || parts[2] == "" {
				t.Fatalf("accepted a token without signature: %q", raw)
			}
			hb, herr := base64.RawURLEncoding.DecodeString(parts[0])
			var h struct{ Alg string }
			if herr != nil || json.Unmarshal(hb, &h) != nil || !slices.Contains(v.Algorithms(), h.Alg) {
				t.Fatalf("accepted alg %q: %q", h.Alg, raw)
			}
			if c == nil || c.Subject == "" || len(c.Subject) > MaxSubjectLen {
				t.Fatalf("accepted with claims %+v", c)
			}
			return
		}
		var ve *VerifyError
		if !errors.As(err, &ve) {
			t.Fatalf("err %T is not a *VerifyError: %v", err, err)
		}
		if !slices.Contains(reasons, ve.Reason) || ve.Message == "" {
			t.Fatalf("bad refusal %+v", ve)
		}
		// Messages quote header/claim values, never the token; a JWT-shaped
		// input cannot appear in them by accident.
		if strings.Count(raw, ".") == 2 && len(raw) >= 8 && strings.Contains(ve.Message, raw) {
			t.Fatalf("message %q contains the token", ve.Message)
		}
	})
}
