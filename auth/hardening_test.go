package auth

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// TestVerifyHardening covers the RFC 8725 findings of issue 15: explicit
// typing, a cap on token lifetime, numeric dates only, one algorithm family
// per RSA key without alg, and subjects that can be stored.
func TestVerifyHardening(t *testing.T) {
	t.Log("hostile: tokens")
	k := sharedKeys()
	jwks := newJWKSServer(t,
		jwkEntry{"rsa-noalg", "", &k.rsaB.PublicKey},
		jwkEntry{"rsa-ps256", jwkset.AlgPS256, &k.rsaC.PublicKey},
	)
	v := newVerifier(t, VerifierConfig{JWKSURL: jwks.URL, PublicKeyPEM: k.pem, HS256Secret: testSecret,
		Issuer: testIss, Audience: testAud, MaxLifetime: 24 * time.Hour})
	withTyp := func(typ any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		tok.Header["typ"] = typ
		s, err := tok.SignedString(testSecret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// rawHS256 signs a hand-written payload (claims jwt would not encode).
	rawHS256 := func(payload string) string {
		unsigned := b64(`{"alg":"HS256","typ":"JWT"}`) + "." + b64(payload)
		sig, err := jwt.SigningMethodHS256.Sign(unsigned, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	exp, iat := testNow.Add(time.Hour).Unix(), testNow.Add(-time.Minute).Unix()
	for _, tc := range []struct {
		name   string
		token  string
		reason string // "" accepted
		msg    string
	}{
		{name: "typ JWT", token: withTyp("JWT", claims())},
		{name: "typ at+jwt", token: withTyp("at+jwt", claims())},
		{name: "typ application/at+JWT", token: withTyp("application/at+JWT", claims())},
		{name: "typ of a logout token", token: withTyp("logout+jwt", claims()), reason: ReasonMalformed, msg: "typ"},
		{name: "typ of a DPoP proof", token: withTyp("dpop+jwt", claims()), reason: ReasonMalformed, msg: "typ"},
		{name: "typ not a string", token: withTyp(7, claims()), reason: ReasonMalformed, msg: "typ"},
		{name: "lifetime at the cap", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("iat", testNow.Unix(), "exp", testNow.Add(24*time.Hour).Unix()))},
		{name: "lifetime over the cap", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("iat", testNow.Unix(), "exp", testNow.Add(24*time.Hour+time.Second).Unix())),
			reason: ReasonClaims, msg: "lifetime"},
		{name: "a year-long token without iat", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("iat", del, "exp", testNow.Add(365*24*time.Hour).Unix())),
			reason: ReasonClaims, msg: "lifetime"},
		{name: "exp as a string", token: rawHS256(`{"sub":"u","iss":"` + testIss + `","aud":"` + testAud + `","iat":` + itoa(iat) + `,"exp":"` + itoa(exp) + `"}`),
			reason: ReasonClaims, msg: "exp"},
		{name: "iat as a string", token: rawHS256(`{"sub":"u","iss":"` + testIss + `","aud":"` + testAud + `","iat":"` + itoa(iat) + `","exp":` + itoa(exp) + `}`),
			reason: ReasonClaims, msg: "iat"},
		{name: "numeric dates", token: rawHS256(`{"sub":"u","iss":"` + testIss + `","aud":"` + testAud + `","iat":` + itoa(iat) + `,"exp":` + itoa(exp) + `.5}`)},
		{name: "RSA JWK without alg, RS256", token: sign(t, jwt.SigningMethodRS256, k.rsaB, "rsa-noalg", claims())},
		{name: "RSA JWK without alg, PS256", token: sign(t, jwt.SigningMethodPS256, k.rsaB, "rsa-noalg", claims()), reason: ReasonAlgorithm, msg: "alg"},
		{name: "RSA JWK declared PS256", token: sign(t, jwt.SigningMethodPS256, k.rsaC, "rsa-ps256", claims())},
		// Only the JWKS key declared PS256 is tried, and it is another key.
		{name: "RSA PEM key, PS256", token: sign(t, jwt.SigningMethodPS256, k.rsaA, "", claims()), reason: ReasonSignature},
		{name: "RSA PEM key, RS384", token: sign(t, jwt.SigningMethodRS384, k.rsaA, "", claims())},
		{name: "sub with NUL", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", "alice\x00")), reason: ReasonClaims, msg: "sub"},
		{name: "sub with a control character", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", "alice\x1b[31m")), reason: ReasonClaims, msg: "sub"},
		{name: "sub in another script", token: sign(t, jwt.SigningMethodHS256, testSecret, "", claims("sub", "читатель-7"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Verify(t.Context(), tc.token)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("should be accepted: %v", err)
				}
				if c.Subject == "" {
					t.Error("no subject")
				}
				return
			}
			ve := checkRefusal(t, tc.token, err, tc.reason)
			if !strings.Contains(ve.Message, tc.msg) {
				t.Errorf("message %q should mention %q", ve.Message, tc.msg)
			}
		})
	}
}

// TestPEMRSAKeyVerifiesOneFamily: a PEM RSA key has no alg; it verifies
// RS256/RS384/RS512, not PS256.
func TestPEMRSAKeyVerifiesOneFamily(t *testing.T) {
	t.Log("hostile: tokens")
	k := sharedKeys()
	v := newVerifier(t, VerifierConfig{PublicKeyPEM: k.pem})
	tok := sign(t, jwt.SigningMethodPS256, k.rsaA, "", claims())
	checkRefusal(t, tok, mustFail(v.Verify(t.Context(), tok)), ReasonAlgorithm)
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS512, k.rsaA, "", claims())); err != nil {
		t.Errorf("RS512 with the PEM RSA key: %v", err)
	}
}

// TestDemoKey: the development demo key signs in the demo user and no
// one else, only with its kid, and never with a scope.
func TestDemoKey(t *testing.T) {
	t.Log("hostile: tokens")
	demo := []byte("demo-key-for-tests-0123456789abcdef")
	v := newVerifier(t, VerifierConfig{HS256Secret: testSecret, DemoHS256Secret: demo, Issuer: testIss, Audience: testAud})
	tok, err := MintDemo(demo, testNow, testIss, testAud)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := v.Verify(t.Context(), tok); err != nil || c.Subject != DemoSubject {
		t.Fatalf("demo token: %v %v", c, err)
	}
	other := jwt.NewWithClaims(jwt.SigningMethodHS256, claims("sub", "alice", "iat", testNow.Unix()))
	other.Header["kid"] = DemoKeyID
	forged, _ := other.SignedString(demo)
	checkRefusal(t, forged, mustFail(v.Verify(t.Context(), forged)), ReasonClaims)
	// The demo key is published: a token of it with a service scope, or
	// any scope, is refused (a security review finding: it minted
	// papers:write tokens).
	for _, scope := range []any{ScopePapersWrite, ScopeUsersWrite, "papers:write openid", []string{ScopePapersWrite}, "profile"} {
		key := "scope"
		if _, ok := scope.([]string); ok {
			key = "scp"
		}
		svc := jwt.NewWithClaims(jwt.SigningMethodHS256, claims("sub", DemoSubject, key, scope))
		svc.Header["kid"] = DemoKeyID
		scoped, _ := svc.SignedString(demo)
		checkRefusal(t, scoped, mustFail(v.Verify(t.Context(), scoped)), ReasonClaims)
	}
	// Without the kid the demo key is not tried: the configured secret is.
	plain := sign(t, jwt.SigningMethodHS256, demo, "", claims("sub", DemoSubject))
	checkRefusal(t, plain, mustFail(v.Verify(t.Context(), plain)), ReasonSignature)
	// A verifier without the demo key refuses demo tokens.
	noDemo := newVerifier(t, VerifierConfig{HS256Secret: testSecret})
	checkRefusal(t, tok, mustFail(noDemo.Verify(t.Context(), tok)), ReasonUnknownKey)
	// And the demo key never verifies tokens of the configured secret's kid-less form.
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodHS256, testSecret, "", claims())); err != nil {
		t.Errorf("regular token: %v", err)
	}
}

func mustFail[T any](_ T, err error) error { return err }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
