package app

import (
	"errors"
	"followfeed/relevance"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"followfeed/config"
)

// TestVerifierErrorsNameTheirVariable: a JWKS problem names AUTH_JWKS_URL
// and a PEM problem AUTH_PUBLIC_KEY_FILE (issue 15: every verifier error
// blamed the PEM file).
func TestVerifierErrorsNameTheirVariable(t *testing.T) {
	pem := filepath.Join(t.TempDir(), "keys.pem")
	if err := os.WriteFile(pem, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		auth config.AuthConfig
		want string
	}{
		{"jwks url", config.AuthConfig{JWKSURL: &url.URL{Scheme: "ftp", Host: "id.example", Path: "/jwks"}}, "AUTH_JWKS_URL"},
		{"pem file", config.AuthConfig{PublicKeyFile: pem}, "AUTH_PUBLIC_KEY_FILE"},
		{"missing pem file", config.AuthConfig{PublicKeyFile: pem + ".gone"}, "AUTH_PUBLIC_KEY_FILE"},
		{"nothing", config.AuthConfig{}, "AUTH_JWKS_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newVerifier(t.Context(), &config.Config{Env: config.Production, Auth: tc.auth}, nil)
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Var != tc.want {
				t.Fatalf("want a config error naming %s, got %v", tc.want, err)
			}
		})
	}
}

// TestTokenTTLWithinTheLifetimeCap: `followfeed token` refuses to mint a
// token the service would refuse.
func TestTokenTTLWithinTheLifetimeCap(t *testing.T) {
	env := func(k string) string { return map[string]string{"AUTH_MAX_TOKEN_LIFETIME": "2h"}[k] }
	var out strings.Builder
	err := Run(t.Context(), []string{"token", "--sub", "alice", "--ttl", "3h"}, env, &out)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "AUTH_MAX_TOKEN_LIFETIME") {
		t.Fatalf("--ttl over the cap: %v", err)
	}
	if err := Run(t.Context(), []string{"token", "--sub", "alice", "--ttl", "2h"}, env, &out); err != nil || strings.Count(out.String(), ".") != 2 {
		t.Errorf("--ttl at the cap: %v %q", err, out.String())
	}
}

// TestReasonTextsArePerPaper: the texts notify gets are each paper's
// reasons' texts, in order, however many each paper has (none too).
func TestReasonTextsArePerPaper(t *testing.T) {
	reasons := [][]relevance.Reason{
		{{Kind: relevance.ReasonCoauthor, Name: "Ann One"}, {Kind: relevance.ReasonWords, Words: []string{"galaxy", "cluster"}}},
		nil,
		{{Kind: relevance.ReasonMarked, Papers: []string{"2401.00001", "2401.00002"}}},
		{{Kind: relevance.ReasonWords}},
	}
	got := reasonTexts(reasons)
	want := [][]string{{"with your co-author Ann One", "about galaxy and cluster"}, {}, {"like 2 papers you marked"}, {""}}
	if len(got) != len(want) {
		t.Fatalf("%d papers' texts for %d papers", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("paper %d: %q, want %q", i, got[i], want[i])
		}
		for j, r := range reasons[i] {
			if got[i][j] != r.Text() {
				t.Errorf("paper %d, reason %d: %q, Text says %q", i, j, got[i][j], r.Text())
			}
		}
	}
}
