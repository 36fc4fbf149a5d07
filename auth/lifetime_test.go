package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestTimeClaims walks the time rules of Verify against the verifier's
// clock (testNow) at their boundaries: exp is accepted while now < exp +
// leeway, nbf and iat while now >= nbf (iat) - leeway, and the lifetime is
// exp - iat when iat is set, wherever iat lies (long before now: a token
// issued long ago and expiring soon is still too long-lived; within the
// leeway after now: the lifetime is shorter than exp - now), and exp - now
// without iat.
func TestTimeClaims(t *testing.T) {
	t.Log("hostile: tokens")
	const leeway = 30 * time.Second
	const life = 2 * time.Hour
	v := newVerifier(t, VerifierConfig{HS256Secret: testSecret, Issuer: testIss, Audience: testAud, Leeway: leeway, MaxLifetime: life})
	strict := newVerifier(t, VerifierConfig{HS256Secret: testSecret}) // no leeway, the default lifetime cap
	at := func(d time.Duration) int64 { return testNow.Add(d).Unix() }
	for _, tc := range []struct {
		name   string
		v      *Verifier
		kv     []any  // claims() changes
		reason string // "" accepted
		msg    string
	}{
		// exp and the leeway.
		{name: "exp in an hour", kv: []any{"exp", at(time.Hour)}},
		{name: "exp now, within the leeway", kv: []any{"exp", at(0)}},
		{name: "exp a second inside the leeway", kv: []any{"exp", at(time.Second - leeway)}},
		{name: "exp at the leeway", kv: []any{"exp", at(-leeway)}, reason: ReasonExpired,
			msg: "token expired at 2026-11-29T09:59:30Z (server time 2026-11-29T10:00:00Z, leeway 30s)"},
		{name: "exp past the leeway", kv: []any{"exp", at(-leeway - time.Second)}, reason: ReasonExpired},
		{name: "no leeway: exp now", v: strict, kv: []any{"exp", at(0)}, reason: ReasonExpired, msg: "leeway 0s"},
		{name: "no leeway: exp in a second", v: strict, kv: []any{"exp", at(time.Second)}},

		// nbf.
		{name: "nbf long past", kv: []any{"nbf", at(-time.Hour)}},
		{name: "nbf now", kv: []any{"nbf", at(0)}},
		{name: "nbf at the leeway", kv: []any{"nbf", at(leeway)}},
		{name: "nbf past the leeway", kv: []any{"nbf", at(leeway + time.Second)}, reason: ReasonNotYetValid,
			msg: "not valid before 2026-11-29T10:00:31Z (server time 2026-11-29T10:00:00Z, leeway 30s)"},
		{name: "no leeway: nbf in a second", v: strict, kv: []any{"nbf", at(time.Second)}, reason: ReasonNotYetValid},

		// iat in the future.
		{name: "iat now", kv: []any{"iat", at(0)}},
		{name: "iat at the leeway", kv: []any{"iat", at(leeway)}},
		{name: "iat past the leeway", kv: []any{"iat", at(leeway + time.Second)}, reason: ReasonNotYetValid,
			msg: "issued in the future, at 2026-11-29T10:00:31Z"},
		{name: "no leeway: iat in a second", v: strict, kv: []any{"iat", at(time.Second)}, reason: ReasonNotYetValid},

		// The lifetime, exp - iat.
		{name: "lifetime at the cap", kv: []any{"iat", at(0), "exp", at(life)}},
		{name: "lifetime a second over the cap", kv: []any{"iat", at(0), "exp", at(life + time.Second)}, reason: ReasonClaims,
			msg: "lifetime (exp - iat, or exp - now without iat) is 2h0m1s; at most 2h0m0s is accepted"},
		{name: "issued long ago, at the cap", kv: []any{"iat", at(-90 * time.Minute), "exp", at(30 * time.Minute)}},
		{name: "issued long ago, over the cap though exp is near", kv: []any{"iat", at(-90 * time.Minute), "exp", at(31 * time.Minute)},
			reason: ReasonClaims, msg: "is 2h1m0s"},
		{name: "issued a day ago, expiring in a minute", kv: []any{"iat", at(-24 * time.Hour), "exp", at(time.Minute)},
			reason: ReasonClaims, msg: "is 24h1m0s"},
		{name: "issued within the leeway ahead, at the cap", kv: []any{"iat", at(20 * time.Second), "exp", at(life + 20*time.Second)}},
		{name: "issued within the leeway ahead, over the cap", kv: []any{"iat", at(20 * time.Second), "exp", at(life + 21*time.Second)},
			reason: ReasonClaims, msg: "is 2h0m1s"},
		{name: "no iat, exp at the cap", kv: []any{"iat", del, "exp", at(life)}},
		{name: "no iat, exp over the cap", kv: []any{"iat", del, "exp", at(life + time.Second)}, reason: ReasonClaims, msg: "is 2h0m1s"},
		{name: "the default cap", v: strict, kv: []any{"iat", at(-time.Hour), "exp", at(23 * time.Hour)}},
		{name: "over the default cap", v: strict, kv: []any{"iat", at(-time.Hour), "exp", at(23*time.Hour + time.Second)},
			reason: ReasonClaims, msg: "at most 24h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ver := tc.v
			if ver == nil {
				ver = v
			}
			token := sign(t, jwt.SigningMethodHS256, testSecret, "", claims(tc.kv...))
			c, err := ver.Verify(t.Context(), token)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("should be accepted: %v", err)
				}
				if c.Subject != "user-1" {
					t.Errorf("claims = %+v", c)
				}
				return
			}
			ve := checkRefusal(t, token, err, tc.reason)
			if !strings.Contains(ve.Message, tc.msg) {
				t.Errorf("message %q should contain %q", ve.Message, tc.msg)
			}
		})
	}
}
