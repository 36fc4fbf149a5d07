package config

import (
	"errors"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"followfeed/notify"
	"followfeed/worker"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestDevelopmentDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Env != Development || c.HTTPAddr != "127.0.0.1:8080" || c.PublicURL.String() != "http://127.0.0.1:8080" {
		t.Errorf("defaults: env=%s addr=%s public=%s", c.Env, c.HTTPAddr, c.PublicURL)
	}
	if !c.PublicURLDefaulted {
		t.Error("PublicURLDefaulted should be true when PUBLIC_URL is unset")
	}
	if string(c.Auth.HS256Secret) != DevHS256Secret || string(c.SecretKey) != DevSecretKey {
		t.Error("development secrets should default")
	}
	if c.LogFormat != "text" || c.SMTPURL != nil || c.MailDir != "var/mail" {
		t.Errorf("log=%s smtp=%v maildir=%s", c.LogFormat, c.SMTPURL, c.MailDir)
	}
	if c.ArxivOAIURL == nil || len(c.ArxivSets) != 1 || c.ArxivSets[0] != "cs" || c.HarvestInterval != time.Hour {
		t.Errorf("harvest defaults: %v %v %v", c.ArxivOAIURL, c.ArxivSets, c.HarvestInterval)
	}
	if c.JobTimeout != 10*time.Minute || c.RescueStuckAfter != 15*time.Minute || c.JobRetryMax != time.Hour {
		t.Errorf("job defaults: timeout %v rescue %v retry max %v", c.JobTimeout, c.RescueStuckAfter, c.JobRetryMax)
	}
	c, err = Load(env(map[string]string{"JOB_TIMEOUT": "30m"}))
	if err != nil || c.RescueStuckAfter != 35*time.Minute {
		t.Errorf("JOB_RESCUE_AFTER should follow JOB_TIMEOUT: %v %v", c.RescueStuckAfter, err)
	}
}

func TestErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad addr", map[string]string{"HTTP_ADDR": "not-an-addr"}, "HTTP_ADDR"},
		{"bad port", map[string]string{"HTTP_ADDR": "127.0.0.1:99999"}, "HTTP_ADDR"},
		{"bad metrics addr", map[string]string{"METRICS_ADDR": "metrics"}, "METRICS_ADDR"},
		{"metrics on the public address", map[string]string{"HTTP_ADDR": ":8080", "METRICS_ADDR": ":8080"}, "METRICS_ADDR"},
		{"bad dsn", map[string]string{"DATABASE_URL": "postgres://a@b:notaport/x"}, "DATABASE_URL"},
		{"bad env", map[string]string{"APP_ENV": "staging"}, "APP_ENV"},
		{"bad public url", map[string]string{"PUBLIC_URL": "ftp://x"}, "PUBLIC_URL"},
		{"short hs256", map[string]string{"AUTH_HS256_SECRET": "short"}, "AUTH_HS256_SECRET"},
		{"leeway too long", map[string]string{"AUTH_LEEWAY": "2m"}, "AUTH_LEEWAY"},
		{"bad smtp scheme", map[string]string{"SMTP_URL": "http://mail"}, "SMTP_URL"},
		{"bad mail from", map[string]string{"MAIL_FROM": "nobody"}, "MAIL_FROM"},
		{"bad cors", map[string]string{"CORS_ORIGINS": "*"}, "CORS_ORIGINS"},
		{"cors with path", map[string]string{"CORS_ORIGINS": "https://a.example/path"}, "CORS_ORIGINS"},
		{"trusted proxy not an address", map[string]string{"TRUSTED_PROXIES": "proxy.internal"}, "TRUSTED_PROXIES"},
		{"trusted proxy bad network", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, "TRUSTED_PROXIES"},
		{"harvest too often", map[string]string{"HARVEST_INTERVAL": "5s"}, "HARVEST_INTERVAL"},
		{"rescue before timeout", map[string]string{"JOB_TIMEOUT": "20m", "JOB_RESCUE_AFTER": "15m"}, "JOB_RESCUE_AFTER"},
		{"bad job timeout", map[string]string{"JOB_TIMEOUT": "forever"}, "JOB_TIMEOUT"},
		{"bad max conns", map[string]string{"DB_MAX_CONNS": "lots"}, "DB_MAX_CONNS"},
		{"prod without db", map[string]string{"APP_ENV": "production"}, "DATABASE_URL"},
		{"prod without public url", map[string]string{"APP_ENV": "production", "DATABASE_URL": "postgres://x@y/z"}, "PUBLIC_URL"},
		{"prod without auth", map[string]string{"APP_ENV": "production", "DATABASE_URL": "postgres://x@y/z", "PUBLIC_URL": "https://ff.example"}, "AUTH_JWKS_URL"},
		{"prod without secret", map[string]string{"APP_ENV": "production", "DATABASE_URL": "postgres://x@y/z", "PUBLIC_URL": "https://ff.example",
			"AUTH_JWKS_URL": "https://id.example/jwks", "AUTH_AUDIENCE": "ff", "AUTH_ISSUER": "https://id.example/"}, "SECRET_KEY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.env))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("want *Error, got %v", err)
			}
			if ce.Var != tc.want || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should name %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error should be one line: %q", err)
			}
		})
	}
}

func TestErrorNeverShowsDatabasePassword(t *testing.T) {
	_, err := Load(env(map[string]string{"DATABASE_URL": "postgres://u:hunter2secret@h:bad/db"}))
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("error must not leak the password: %v", err)
	}
}

func TestProductionComplete(t *testing.T) {
	c, err := Load(env(map[string]string{
		"APP_ENV": "production", "DATABASE_URL": "postgres://x@y/z", "PUBLIC_URL": "https://ff.example/",
		"AUTH_JWKS_URL": "https://id.example/jwks", "SECRET_KEY": strings.Repeat("k", 32),
		"AUTH_AUDIENCE": "followfeed", "AUTH_ISSUER": "https://id.example/",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.LogFormat != "json" || c.Auth.HS256Secret != nil || c.AdminPassword != "" || c.PublicURL.String() != "https://ff.example" {
		t.Errorf("production: format=%s hs=%v admin=%q public=%s", c.LogFormat, c.Auth.HS256Secret, c.AdminPassword, c.PublicURL)
	}
}

// Production sends mail to a relay on another machine over TLS only: a
// plain or downgradable SMTP_URL is refused at start-up, one on the
// loopback interface is not.
func TestProductionRefusesPlainSMTPToAnotherHost(t *testing.T) {
	base := map[string]string{
		"APP_ENV": "production", "DATABASE_URL": "postgres://x@y/z", "PUBLIC_URL": "https://ff.example/",
		"AUTH_JWKS_URL": "https://id.example/jwks", "SECRET_KEY": strings.Repeat("k", 32),
		"AUTH_AUDIENCE": "followfeed", "AUTH_ISSUER": "https://id.example/",
	}
	for smtpURL, refused := range map[string]bool{
		"smtp://relay.example:25?tls=none":           true,
		"smtp://relay.example:587?tls=opportunistic": true,
		"smtp://relay.example:587":                   false,
		"smtp://relay.example:587?tls=required":      false,
		"smtps://relay.example:465":                  false,
		"smtp://127.0.0.1:25?tls=none":               false,
		"smtp://localhost:25?tls=none":               false,
		"smtp://[::1]:25?tls=opportunistic":          false,
	} {
		e := maps.Clone(base)
		e["SMTP_URL"] = smtpURL
		_, err := Load(env(e))
		var ce *Error
		switch {
		case refused && (!errors.As(err, &ce) || ce.Var != "SMTP_URL" || !strings.Contains(err.Error(), "plain text")):
			t.Errorf("%s: want a SMTP_URL error naming plain text, got %v", smtpURL, err)
		case !refused && err != nil:
			t.Errorf("%s: refused: %v", smtpURL, err)
		}
	}
	e := maps.Clone(base)
	e["APP_ENV"], e["SMTP_URL"] = "development", "smtp://relay.example:25?tls=none"
	delete(e, "SECRET_KEY")
	if _, err := Load(env(e)); err != nil {
		t.Errorf("development refuses tls=none: %v", err)
	}
}

// TestEveryVariableIsDocumented: Vars is exactly what Load reads (in
// development and in production), and the README's configuration table
// and .env.example name every one of them.
func TestEveryVariableIsDocumented(t *testing.T) {
	read := map[string]bool{}
	for _, mode := range []string{"development", "production"} {
		Load(func(k string) string {
			read[k] = true
			if k == "APP_ENV" {
				return mode
			}
			return ""
		})
	}
	for _, v := range Vars {
		if !read[v] {
			t.Errorf("Vars lists %s, which Load does not read", v)
		}
		delete(read, v)
	}
	for v := range read {
		t.Errorf("Load reads %s, which Vars does not list", v)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Vars {
		if !regexp.MustCompile("(?m)^\\| [^|]*`" + v + "`[^|]*\\|").Match(readme) {
			t.Errorf("README.md's configuration table has no row for %s", v)
		}
		if !regexp.MustCompile(`(?m)^(# )?` + v + `=`).Match(example) {
			t.Errorf(".env.example does not list %s", v)
		}
	}
}

// TestRetentionSettings: the retentions default to the owners' defaults,
// read days ("90d") or durations ("36h"), and refuse what is outside
// their bounds (the ledger's shortest is notify.MinLedgerRetention),
// naming the variable.
func TestRetentionSettings(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DigestRetention != notify.DefaultLedgerRetention || c.JobRetentionCompleted != worker.CompletedRetention ||
		c.JobRetentionCancelled != worker.CancelledRetention || c.JobRetentionDiscarded != worker.DiscardedRetention {
		t.Errorf("defaults: digests %s, jobs %s / %s / %s", c.DigestRetention, c.JobRetentionCompleted, c.JobRetentionCancelled, c.JobRetentionDiscarded)
	}
	c, err = Load(env(map[string]string{"DIGEST_RETENTION": "400d", "JOB_RETENTION_COMPLETED": "36h", "JOB_RETENTION_DISCARDED": "30d"}))
	if err != nil || c.DigestRetention != 400*24*time.Hour || c.JobRetentionCompleted != 36*time.Hour || c.JobRetentionDiscarded != 30*24*time.Hour {
		t.Errorf("set: %v, %s, %s, %s", err, c.DigestRetention, c.JobRetentionCompleted, c.JobRetentionDiscarded)
	}
	if c, err := Load(env(map[string]string{"DIGEST_RETENTION": "14d"})); err != nil || c.DigestRetention != notify.MinLedgerRetention {
		t.Errorf("the shortest ledger retention: %v", err)
	}
	for name, v := range map[string]string{"DIGEST_RETENTION": "13d", "JOB_RETENTION_CANCELLED": "forever", "JOB_RETENTION_COMPLETED": "30m"} {
		_, err := Load(env(map[string]string{name: v}))
		var ce *Error
		if !errors.As(err, &ce) || ce.Var != name || !strings.Contains(err.Error(), "90d") {
			t.Errorf("%s=%s: %v", name, v, err)
		}
	}
}

// TestActivityPubSettings: ACTIVITYPUB and ACTIVITYPUB_CATEGORY_NOTES are
// off unless set on; ACTIVITYPUB_BLOCKED_DOMAINS is a list of bare
// domains (lower-cased, dots trimmed), and an entry with a scheme, port,
// user, wildcard or space stops start-up with an error naming the
// variable and the entry; production refuses a plain-http PUBLIC_URL with
// ACTIVITYPUB=on (fediverse servers fetch actors over https only).
func TestActivityPubSettings(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.ActivityPub || c.ActivityPubCategoryNotes || len(c.ActivityPubBlockedDomains) != 0 {
		t.Errorf("defaults: ACTIVITYPUB %v, ACTIVITYPUB_CATEGORY_NOTES %v, blocked %v; want off, off, none",
			c.ActivityPub, c.ActivityPubCategoryNotes, c.ActivityPubBlockedDomains)
	}
	c, err = Load(env(map[string]string{"ACTIVITYPUB": "on"}))
	if err != nil || !c.ActivityPub || c.ActivityPubCategoryNotes {
		t.Errorf("ACTIVITYPUB=on alone: %v, category notes %v (%v); want on, off", c.ActivityPub, c.ActivityPubCategoryNotes, err)
	}
	c, err = Load(env(map[string]string{"ACTIVITYPUB": "on", "ACTIVITYPUB_CATEGORY_NOTES": "on",
		"ACTIVITYPUB_BLOCKED_DOMAINS": "Spam.Example, .bad.example. ,ok.example"}))
	if err != nil || !c.ActivityPubCategoryNotes || strings.Join(c.ActivityPubBlockedDomains, " ") != "spam.example bad.example ok.example" {
		t.Errorf("set: category notes %v, blocked %q (%v)", c.ActivityPubCategoryNotes, c.ActivityPubBlockedDomains, err)
	}
	for _, tc := range []struct{ name, value, entry string }{
		{"ACTIVITYPUB", "yes", ""},
		{"ACTIVITYPUB_CATEGORY_NOTES", "true", ""},
		{"ACTIVITYPUB_BLOCKED_DOMAINS", "ok.example, https://spam.example", `"https://spam.example"`},
		{"ACTIVITYPUB_BLOCKED_DOMAINS", "spam.example:443", `"spam.example:443"`},
		{"ACTIVITYPUB_BLOCKED_DOMAINS", "*.spam.example", `"*.spam.example"`},
		{"ACTIVITYPUB_BLOCKED_DOMAINS", "bot@spam.example", `"bot@spam.example"`},
		{"ACTIVITYPUB_BLOCKED_DOMAINS", "spam example", `"spam example"`},
		{"ACTIVITYPUB_BLOCKED_DOMAINS", "spam.example/users", `"spam.example/users"`},
	} {
		_, err := Load(env(map[string]string{"ACTIVITYPUB": "on", tc.name: tc.value}))
		var ce *Error
		if !errors.As(err, &ce) || ce.Var != tc.name || !strings.Contains(err.Error(), tc.entry) {
			t.Errorf("%s=%q: %v, want an error naming %s and %s", tc.name, tc.value, err, tc.name, tc.entry)
		}
	}
	if c, err := Load(env(prodEnv("ACTIVITYPUB", "on"))); err != nil || !c.ActivityPub {
		t.Errorf("production with an https PUBLIC_URL: %v", err)
	}
	_, err = Load(env(prodEnv("ACTIVITYPUB", "on", "PUBLIC_URL", "http://ff.example")))
	var ce *Error
	if !errors.As(err, &ce) || ce.Var != "PUBLIC_URL" || !strings.Contains(err.Error(), "https") {
		t.Errorf("production, ACTIVITYPUB=on, PUBLIC_URL over http: %v, want PUBLIC_URL refused", err)
	}
}
