package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"followfeed/auth"
	"followfeed/config"
)

func runToken(ctx context.Context, args []string, inv invocation) error {
	getenv, stdout := inv.getenv, inv.stdout
	fs := newFlags("token", stdout, "Mints a JWT signed with AUTH_HS256_SECRET (in development, a built-in key) so a\nperson can try the API at once:\n\n  TOKEN=$(followfeed token --sub alice --email alice@example.org)\n  curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8080/v1/me")
	sub := fs.String("sub", "", "the user id (JWT sub claim); required")
	email := fs.String("email", "", "an email address for the email claim")
	unverified := fs.Bool("unverified", false, "mark the email as not verified (email_verified=false)")
	scope := fs.String("scope", "", "space- or comma-separated scopes: papers:write (push papers, registry records) or users:write (erase users) for a service token")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *sub == "" {
		return &UsageError{Msg: "token: --sub is required (the user id the token speaks for)"}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if len(cfg.Auth.HS256Secret) == 0 {
		return &config.Error{Var: "AUTH_HS256_SECRET", Reason: "token signs with HS256: set AUTH_HS256_SECRET (production hosts mint their own tokens)"}
	}
	if *ttl > cfg.Auth.MaxTokenLifetime {
		return &UsageError{Msg: fmt.Sprintf("token: --ttl %v is longer than AUTH_MAX_TOKEN_LIFETIME (%v); the service would refuse the token", *ttl, cfg.Auth.MaxTokenLifetime)}
	}
	tok, err := auth.MintHS256(cfg.Auth.HS256Secret, auth.MintOptions{
		Subject:       *sub,
		Email:         *email,
		EmailVerified: *email != "" && !*unverified,
		Scopes:        strings.FieldsFunc(*scope, func(r rune) bool { return r == ' ' || r == ',' }),
		TTL:           *ttl,
		Issuer:        cfg.Auth.Issuer,
		Audience:      cfg.Auth.Audience,
		Now:           time.Now(),
	})
	if err != nil {
		return &UsageError{Msg: "token: " + err.Error()}
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
