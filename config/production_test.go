package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// prodEnv is a complete production environment with HS256 tokens; cases
// change one thing.
func prodEnv(kv ...string) map[string]string {
	m := map[string]string{
		"APP_ENV": "production", "DATABASE_URL": "postgres://x@y/z", "PUBLIC_URL": "https://ff.example",
		"AUTH_HS256_SECRET": strings.Repeat("h", 32), "SECRET_KEY": strings.Repeat("k", 32),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestProductionRefusesDevelopmentSecrets: the development secrets are
// published in the source and the README; an instance that accepts them
// in production accepts forged user tokens, service tokens and sessions.
func TestProductionRefusesDevelopmentSecrets(t *testing.T) {
	t.Log("hostile: production-config")
	if _, err := Load(env(prodEnv())); err != nil {
		t.Fatalf("the base production environment should load: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		kv         []string
	}{
		{"dev hs256 secret", "AUTH_HS256_SECRET", []string{"AUTH_HS256_SECRET", DevHS256Secret}},
		{"dev secret key", "SECRET_KEY", []string{"SECRET_KEY", DevSecretKey}},
		{"dev secret key as hs256", "AUTH_HS256_SECRET", []string{"AUTH_HS256_SECRET", DevSecretKey}},
		{"dev hs256 as secret key", "SECRET_KEY", []string{"SECRET_KEY", DevHS256Secret}},
		{"demo key as hs256", "AUTH_HS256_SECRET", []string{"AUTH_HS256_SECRET", DevDemoHS256Secret}},
		{"secret key equals hs256", "SECRET_KEY", []string{"SECRET_KEY", strings.Repeat("h", 32)}},
		{"dev admin password", "ADMIN_PASSWORD", []string{"ADMIN_PASSWORD", DevAdminPassword}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(prodEnv(tc.kv...)))
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %s, got %v", tc.want, err)
			}
		})
	}
	// Development keeps working with its defaults, and with them set.
	if _, err := Load(env(map[string]string{"AUTH_HS256_SECRET": DevHS256Secret, "SECRET_KEY": DevSecretKey})); err != nil {
		t.Errorf("development with the development secrets: %v", err)
	}
}

// TestProductionAsymmetricKeysNeedAudienceAndIssuer: with JWKS or PEM
// keys, a token the same identity provider issued to another application
// would sign users in unless aud and iss are checked (RFC 8725 §3.9-3.11).
func TestProductionAsymmetricKeysNeedAudienceAndIssuer(t *testing.T) {
	t.Log("hostile: production-config")
	for _, tc := range []struct {
		name string
		kv   []string
		want []string // every variable the error must name; nil: loads
	}{
		{"jwks without aud and iss", []string{"AUTH_JWKS_URL", "https://id.example/jwks"}, []string{"AUTH_AUDIENCE", "AUTH_ISSUER"}},
		{"jwks without iss", []string{"AUTH_JWKS_URL", "https://id.example/jwks", "AUTH_AUDIENCE", "followfeed"}, []string{"AUTH_ISSUER"}},
		{"pem without aud", []string{"AUTH_PUBLIC_KEY_FILE", "/etc/k.pem", "AUTH_ISSUER", "https://id.example/"}, []string{"AUTH_AUDIENCE"}},
		{"jwks over http", []string{"AUTH_JWKS_URL", "http://id.example/jwks", "AUTH_AUDIENCE", "ff", "AUTH_ISSUER", "https://id.example/"}, []string{"AUTH_JWKS_URL"}},
		{"jwks complete", []string{"AUTH_JWKS_URL", "https://id.example/jwks", "AUTH_AUDIENCE", "ff", "AUTH_ISSUER", "https://id.example/"}, nil},
		{"hs256 alone needs neither", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(prodEnv(tc.kv...)))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("should load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("should be refused")
			}
			for _, v := range tc.want {
				if !strings.Contains(err.Error(), v) {
					t.Errorf("error %q should name %s", err, v)
				}
			}
		})
	}
	// Development accepts a JWKS over http (a local identity provider).
	if _, err := Load(env(map[string]string{"AUTH_JWKS_URL": "http://127.0.0.1:9/jwks"})); err != nil {
		t.Errorf("development with an http JWKS: %v", err)
	}
}

// TestProductionReportsEveryProblemAtOnce: an operator fixing a production
// environment sees every missing or invalid setting in one message, not
// one per start.
func TestProductionReportsEveryProblemAtOnce(t *testing.T) {
	_, err := Load(env(map[string]string{"APP_ENV": "production", "SECRET_KEY": DevSecretKey, "DB_MAX_CONNS": "lots"}))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %v", err)
	}
	for _, v := range []string{"DATABASE_URL", "DB_MAX_CONNS", "PUBLIC_URL", "AUTH_JWKS_URL", "SECRET_KEY"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q should name %s", err, v)
		}
	}
	if ce.Var != "DATABASE_URL" || len(ce.More) != 4 {
		t.Errorf("first problem %s, %d more; want DATABASE_URL and 4 more", ce.Var, len(ce.More))
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the message should be one line: %q", err)
	}
}

func TestMaxTokenLifetime(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.Auth.MaxTokenLifetime != 24*time.Hour {
		t.Fatalf("default: %v %v", c, err)
	}
	c, err = Load(env(map[string]string{"AUTH_MAX_TOKEN_LIFETIME": "15m"}))
	if err != nil || c.Auth.MaxTokenLifetime != 15*time.Minute {
		t.Fatalf("15m: %v", err)
	}
	if _, err := Load(env(map[string]string{"AUTH_MAX_TOKEN_LIFETIME": "1000h"})); err == nil || !strings.Contains(err.Error(), "AUTH_MAX_TOKEN_LIFETIME") {
		t.Errorf("1000h should be refused: %v", err)
	}
}
