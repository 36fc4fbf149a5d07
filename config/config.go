// Package config reads followfeed's settings from environment variables into
// one typed, validated Config. Nothing here reads the process environment
// directly: callers pass a getenv function, so tests and the CLI control it.
package config

import (
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"followfeed/arxivcal"
)

// Env is the mode the process runs in. Production demands explicit secrets
// and switches logs to JSON; development fills in working defaults.
type Env string

// The two modes APP_ENV accepts.
const (
	Development Env = "development"
	Production  Env = "production"
)

// Development defaults. They are public on purpose: they only ever apply in
// development mode, and `followfeed token` uses the same secret so a person can
// try the API at once.
const (
	DevHS256Secret   = "followfeed-development-hs256-secret-do-not-use-in-production"
	DevSecretKey     = "followfeed-development-secret-key-do-not-use-in-production"
	DevAdminPassword = "followfeed"
	DevDatabaseURL   = "postgres://postgres@127.0.0.1:5432/followfeed?sslmode=disable"
	// DevDemoHS256Secret signs the token the /embed/demo page hands its
	// Follow button in development; the verifier accepts it only for the
	// demo user and only outside production (never AUTH_HS256_SECRET,
	// which may be a real host's secret).
	DevDemoHS256Secret = "followfeed-embed-demo-hs256-key-development-only-never-secret"
)

// Config is every setting of the service. Load returns it fully validated:
// a Config obtained from Load never needs nil or range checks by its users.
type Config struct {
	Env Env // APP_ENV

	DatabaseURL string // DATABASE_URL
	DBMaxConns  int32  // DB_MAX_CONNS
	// DatabaseReplicaURL is a streaming replica for feed renders, public
	// feeds, follow status and previews ("" for none): DATABASE_REPLICA_URL.
	DatabaseReplicaURL string
	// RiverPollOnly makes the job client poll instead of LISTEN, so a
	// worker can run through a transaction-mode pooler: RIVER_POLL_ONLY.
	RiverPollOnly bool
	HTTPAddr      string // HTTP_ADDR
	// MetricsAddr, when set, is where /metrics is served instead of
	// HTTP_ADDR (METRICS_ADDR): a private interface or port, so the
	// public listener does not show it.
	MetricsAddr string
	PublicURL   *url.URL // PUBLIC_URL
	// PublicURLDefaulted is true when PUBLIC_URL was not set (development):
	// the server then uses the address it actually listens on.
	PublicURLDefaulted bool
	LogLevel           string        // LOG_LEVEL: debug|info|warn|error
	LogFormat          string        // LOG_FORMAT: text|json
	ShutdownWait       time.Duration // SHUTDOWN_TIMEOUT

	Auth AuthConfig

	SecretKey []byte // SECRET_KEY: signs feed, unsubscribe and session tokens

	SMTPURL               *url.URL // SMTP_URL (nil: write .eml files to MailDir)
	MailFrom              *mail.Address
	MailDir               string // MAIL_DIR
	MailUnsubscribeMailto string // MAIL_UNSUBSCRIBE_MAILTO
	// DigestScheduleInterval is how often the scheduler looks for due
	// digests (DIGEST_SCHEDULE_INTERVAL).
	DigestScheduleInterval time.Duration

	// JobTimeout bounds one run of any job (JOB_TIMEOUT); a job still
	// "running" after RescueStuckAfter (JOB_RESCUE_AFTER) belonged to a
	// worker that died and is retried. JobRetryMax caps the backoff between
	// retries (JOB_RETRY_MAX).
	JobTimeout       time.Duration
	RescueStuckAfter time.Duration
	JobRetryMax      time.Duration
	// How long River keeps finished jobs before its cleaner deletes them:
	// completed (JOB_RETENTION_COMPLETED), cancelled
	// (JOB_RETENTION_CANCELLED) and discarded, failed for good
	// (JOB_RETENTION_DISCARDED).
	JobRetentionCompleted time.Duration
	JobRetentionCancelled time.Duration
	JobRetentionDiscarded time.Duration
	// DigestRetention is how long the digest ledger keeps a row
	// (DIGEST_RETENTION; notify.Digester.PruneLedger).
	DigestRetention time.Duration

	ArxivOAIURL     *url.URL      // ARXIV_OAI_URL
	ArxivOAIFormat  string        // ARXIV_OAI_FORMAT: arXivRaw (versions) or arXiv
	ArxivSets       []string      // ARXIV_SETS
	HarvestInterval time.Duration // HARVEST_INTERVAL (0: no periodic harvest)
	// ArxivHolidays are evenings (US Eastern dates) without an arXiv
	// announcement beyond arxivcal's usual holidays (ARXIV_HOLIDAYS).
	ArxivHolidays  []time.Time
	OpenAlexURL    *url.URL // OPENALEX_URL
	OpenAlexMailto string   // OPENALEX_MAILTO
	OpenAlexAPIKey string   // OPENALEX_API_KEY

	CORSOrigins []string // CORS_ORIGINS
	// TrustedProxies are the networks of reverse proxies whose
	// X-Forwarded-For is believed (TRUSTED_PROXIES); empty: the header is
	// ignored and the peer address is the client's.
	TrustedProxies []netip.Prefix
	// RateLimitPerIP and RateLimitPerUser are average requests per second
	// (bursts of twice that); 0 disables the limit.
	RateLimitPerIP   float64 // RATE_LIMIT_PER_IP
	RateLimitPerUser float64 // RATE_LIMIT_PER_USER
	// SearchPreviewBudget bounds one search preview's time
	// (SEARCH_PREVIEW_BUDGET, 2s; 0: no bound): past it the answer covers
	// the newest papers only, marked incomplete.
	SearchPreviewBudget time.Duration
	WebSubHubURL        *url.URL // WEBSUB_HUB_URL (nil: no hub)

	// ChannelAllowHosts are hosts push channels may reach over plain http
	// and at internal addresses (CHANNEL_ALLOW_HOSTS; development and tests
	// only: production refuses it).
	ChannelAllowHosts []string

	// ActivityPub turns on the fediverse actors of public feeds
	// (ACTIVITYPUB=on|off, off by default).
	ActivityPub bool
	// ActivityPubBlockedDomains are domains (and their subdomains) whose
	// Follows are refused and which get no deliveries
	// (ACTIVITYPUB_BLOCKED_DOMAINS).
	ActivityPubBlockedDomains []string
	// ActivityPubCategoryNotes makes category and archive actors post one
	// note per paper instead of a daily summary
	// (ACTIVITYPUB_CATEGORY_NOTES=on|off, off by default).
	ActivityPubCategoryNotes bool

	AdminUser     string // ADMIN_USER
	AdminPassword string // ADMIN_PASSWORD (empty: River UI disabled)
}

// AuthConfig says how bearer JWTs from the host's identity provider are
// verified. At least one key source is set after Load.
type AuthConfig struct {
	JWKSURL       *url.URL      // AUTH_JWKS_URL
	PublicKeyFile string        // AUTH_PUBLIC_KEY_FILE
	HS256Secret   []byte        // AUTH_HS256_SECRET
	Issuer        string        // AUTH_ISSUER
	Audience      string        // AUTH_AUDIENCE
	Leeway        time.Duration // AUTH_LEEWAY, at most 60s
	// MaxTokenLifetime caps exp - iat of accepted tokens
	// (AUTH_MAX_TOKEN_LIFETIME).
	MaxTokenLifetime time.Duration
}

// Error is a configuration problem tied to one variable. Its message names
// the variable so an operator knows what to fix.
type Error struct {
	Var    string
	Reason string
	// More are the other problems Load found, in the order it checks
	// them, so that one start-up reports everything to fix.
	More []*Error
}

// Error is one line: "config: VAR: reason; VAR2: reason2; ...".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config: %s: %s", e.Var, e.Reason)
	for _, m := range e.More {
		fmt.Fprintf(&b, "; %s: %s", m.Var, m.Reason)
	}
	return b.String()
}

// Vars lists every variable Load reads, in the order the README documents them.
var Vars = []string{
	"APP_ENV", "DATABASE_URL", "DB_MAX_CONNS", "DATABASE_REPLICA_URL", "RIVER_POLL_ONLY", "HTTP_ADDR", "METRICS_ADDR", "PUBLIC_URL", "LOG_LEVEL", "LOG_FORMAT",
	"SHUTDOWN_TIMEOUT", "AUTH_JWKS_URL", "AUTH_PUBLIC_KEY_FILE", "AUTH_HS256_SECRET", "AUTH_ISSUER",
	"AUTH_AUDIENCE", "AUTH_LEEWAY", "AUTH_MAX_TOKEN_LIFETIME", "SECRET_KEY", "SMTP_URL", "MAIL_FROM", "MAIL_DIR",
	"MAIL_UNSUBSCRIBE_MAILTO", "DIGEST_SCHEDULE_INTERVAL", "DIGEST_RETENTION", "JOB_TIMEOUT", "JOB_RESCUE_AFTER", "JOB_RETRY_MAX",
	"JOB_RETENTION_COMPLETED", "JOB_RETENTION_CANCELLED", "JOB_RETENTION_DISCARDED", "ARXIV_OAI_URL", "ARXIV_OAI_FORMAT", "ARXIV_SETS", "HARVEST_INTERVAL", "ARXIV_HOLIDAYS", "OPENALEX_URL",
	"OPENALEX_MAILTO", "OPENALEX_API_KEY", "CORS_ORIGINS", "TRUSTED_PROXIES", "RATE_LIMIT_PER_IP", "RATE_LIMIT_PER_USER", "SEARCH_PREVIEW_BUDGET", "WEBSUB_HUB_URL", "CHANNEL_ALLOW_HOSTS",
	"ACTIVITYPUB", "ACTIVITYPUB_BLOCKED_DOMAINS", "ACTIVITYPUB_CATEGORY_NOTES", "ADMIN_USER", "ADMIN_PASSWORD",
}

// Load reads and validates the configuration. Problems are returned as one
// *Error naming the first variable at fault, with every other problem found
// in More (one start-up shows everything to fix).
func Load(getenv func(string) string) (*Config, error) {
	l := loader{getenv: getenv}
	c := &Config{}

	switch env := Env(l.str("APP_ENV", string(Development))); env {
	case Development, Production:
		c.Env = env
	default:
		return nil, &Error{Var: "APP_ENV", Reason: fmt.Sprintf("%q is not a mode; use development or production", env)}
	}
	prod := c.Env == Production

	// Each step reads a group of variables and records their problems;
	// More lists them in the order of the steps.
	l.database(c, prod)
	l.server(c, prod)
	l.auth(c, prod)
	l.secretKey(c, prod)
	l.mail(c, prod)
	l.jobs(c)
	l.sources(c)
	l.clients(c, prod)
	l.activityPub(c)
	l.admin(c, prod)

	if len(l.errs) > 0 {
		first := l.errs[0]
		first.More = l.errs[1:]
		return nil, first
	}
	return c, nil
}

// database reads DATABASE_URL (required in production), DB_MAX_CONNS,
// DATABASE_REPLICA_URL and RIVER_POLL_ONLY.
func (l *loader) database(c *Config, prod bool) {
	c.DatabaseURL = l.required(prod, "DATABASE_URL", DevDatabaseURL)
	if c.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			l.fail("DATABASE_URL", "not a PostgreSQL connection string (postgres://user@host:5432/db): "+redactErr(err, c.DatabaseURL))
		}
	}
	c.DBMaxConns = int32(l.int("DB_MAX_CONNS", 20, 2, 1000))
	c.DatabaseReplicaURL = l.str("DATABASE_REPLICA_URL", "")
	if c.DatabaseReplicaURL != "" {
		if _, err := pgxpool.ParseConfig(c.DatabaseReplicaURL); err != nil {
			l.fail("DATABASE_REPLICA_URL", "not a PostgreSQL connection string (postgres://user@replica:5432/db), or leave it unset to read from DATABASE_URL only: "+redactErr(err, c.DatabaseReplicaURL))
		}
	}
	switch v := l.str("RIVER_POLL_ONLY", "false"); v {
	case "true", "1":
		c.RiverPollOnly = true
	case "false", "0":
	default:
		l.fail("RIVER_POLL_ONLY", fmt.Sprintf("%q is not true or false", v))
	}
}

// server reads HTTP_ADDR, METRICS_ADDR, PUBLIC_URL (required and https in
// production), the log settings and SHUTDOWN_TIMEOUT.
func (l *loader) server(c *Config, prod bool) {
	c.HTTPAddr = l.str("HTTP_ADDR", "127.0.0.1:8080")
	if err := checkAddr(c.HTTPAddr); err != nil {
		l.fail("HTTP_ADDR", err.Error())
	}
	c.MetricsAddr = l.str("METRICS_ADDR", "")
	if c.MetricsAddr != "" {
		if err := checkAddr(c.MetricsAddr); err != nil {
			l.fail("METRICS_ADDR", err.Error()+"; or leave it unset to serve /metrics on HTTP_ADDR")
		} else if c.MetricsAddr == c.HTTPAddr && !strings.HasSuffix(c.MetricsAddr, ":0") { // :0 is a free port each
			l.fail("METRICS_ADDR", "is HTTP_ADDR; give another address (such as 127.0.0.1:9090) or leave it unset")
		}
	}
	defaultPublic := "http://" + c.HTTPAddr
	if prod {
		defaultPublic = ""
	}
	c.PublicURLDefaulted = l.str("PUBLIC_URL", "") == ""
	publicSchemes := []string{"http", "https"}
	if prod {
		// Feed tokens and one-click unsubscribe links (RFC 8058) travel in
		// these URLs: production serves them over https only.
		publicSchemes = []string{"https"}
	}
	c.PublicURL = l.url("PUBLIC_URL", defaultPublic, prod, publicSchemes...)
	if c.PublicURL != nil {
		c.PublicURL.Path = strings.TrimSuffix(c.PublicURL.Path, "/")
	}

	c.LogLevel = l.oneOf("LOG_LEVEL", "info", "debug", "info", "warn", "error")
	defFormat := "text"
	if prod {
		defFormat = "json"
	}
	c.LogFormat = l.oneOf("LOG_FORMAT", defFormat, "text", "json")
	c.ShutdownWait = l.duration("SHUTDOWN_TIMEOUT", 25*time.Second, time.Second, 10*time.Minute)
}

// auth reads how the host's tokens are verified (AUTH_*). Production
// needs a key source, refuses the development secret and a JWKS over
// http, and with an identity provider's keys needs AUTH_AUDIENCE and
// AUTH_ISSUER.
func (l *loader) auth(c *Config, prod bool) {
	jwksSchemes := []string{"http", "https"}
	if prod {
		// The keys that sign users in must not be replaceable in transit.
		jwksSchemes = []string{"https"}
	}
	c.Auth.JWKSURL = l.url("AUTH_JWKS_URL", "", false, jwksSchemes...)
	c.Auth.PublicKeyFile = l.str("AUTH_PUBLIC_KEY_FILE", "")
	hsDefault := ""
	if !prod {
		hsDefault = DevHS256Secret
	}
	if s := l.str("AUTH_HS256_SECRET", hsDefault); s != "" {
		switch {
		case len(s) < 32:
			l.fail("AUTH_HS256_SECRET", "too short: use at least 32 characters (e.g. `openssl rand -hex 32`)")
		case prod && isDevSecret(s):
			l.fail("AUTH_HS256_SECRET", "is a published development secret; production needs your own (e.g. `openssl rand -hex 32`)")
		}
		c.Auth.HS256Secret = []byte(s)
	}
	if prod && c.Auth.JWKSURL == nil && c.Auth.PublicKeyFile == "" && c.Auth.HS256Secret == nil {
		l.fail("AUTH_JWKS_URL", "production needs a way to verify the host's tokens: set AUTH_JWKS_URL, AUTH_PUBLIC_KEY_FILE or AUTH_HS256_SECRET")
	}
	c.Auth.Issuer = l.str("AUTH_ISSUER", "")
	c.Auth.Audience = l.str("AUTH_AUDIENCE", "")
	if prod && (l.str("AUTH_JWKS_URL", "") != "" || c.Auth.PublicKeyFile != "") {
		// An identity provider signs tokens for many applications with the
		// same keys: without aud and iss, a token issued to any of them
		// would sign users in here (RFC 8725 sections 3.9-3.11).
		if c.Auth.Audience == "" {
			l.fail("AUTH_AUDIENCE", "required in production with AUTH_JWKS_URL or AUTH_PUBLIC_KEY_FILE: the aud your identity provider puts in tokens for followfeed")
		}
		if c.Auth.Issuer == "" {
			l.fail("AUTH_ISSUER", "required in production with AUTH_JWKS_URL or AUTH_PUBLIC_KEY_FILE: the iss of your identity provider's tokens")
		}
	}
	c.Auth.Leeway = l.duration("AUTH_LEEWAY", 30*time.Second, 0, 60*time.Second)
	c.Auth.MaxTokenLifetime = l.duration("AUTH_MAX_TOKEN_LIFETIME", 24*time.Hour, time.Minute, 30*24*time.Hour)
}

// secretKey reads SECRET_KEY: required in production, never a development
// secret there nor AUTH_HS256_SECRET (read by auth before it).
func (l *loader) secretKey(c *Config, prod bool) {
	secret := l.required(prod, "SECRET_KEY", DevSecretKey)
	switch {
	case secret != "" && len(secret) < 32:
		l.fail("SECRET_KEY", "too short: use at least 32 characters (e.g. `openssl rand -hex 32`)")
	case prod && isDevSecret(secret):
		l.fail("SECRET_KEY", "is a published development secret; production needs your own (e.g. `openssl rand -hex 32`)")
	case prod && secret != "" && secret == string(c.Auth.HS256Secret):
		// Whoever holds the host's HS256 secret could then forge feed
		// tokens, email links and sessions too.
		l.fail("SECRET_KEY", "must differ from AUTH_HS256_SECRET, which the host also knows")
	}
	c.SecretKey = []byte(secret)
}

// mail reads SMTP_URL (in production, TLS to any relay off this machine),
// MAIL_FROM, MAIL_DIR and MAIL_UNSUBSCRIBE_MAILTO.
func (l *loader) mail(c *Config, prod bool) {
	c.SMTPURL = l.url("SMTP_URL", "", false, "smtp", "smtps")
	if prod && c.SMTPURL != nil && !isLoopback(c.SMTPURL.Hostname()) {
		// Digests carry signed unsubscribe and feed links; a relay on
		// another machine is reached over TLS only.
		switch c.SMTPURL.Query().Get("tls") {
		case "none", "opportunistic":
			l.fail("SMTP_URL", fmt.Sprintf("tls=%s sends mail (with its signed links) in plain text to %s; production needs STARTTLS (drop ?tls=) or smtps://, or a relay on localhost",
				c.SMTPURL.Query().Get("tls"), c.SMTPURL.Hostname()))
		}
	}
	from := l.str("MAIL_FROM", "followfeed <followfeed@localhost>")
	if a, err := mail.ParseAddress(from); err != nil {
		l.fail("MAIL_FROM", fmt.Sprintf("%q is not an address like \"followfeed <digest@example.org>\"", from))
	} else {
		c.MailFrom = a
	}
	c.MailDir = l.str("MAIL_DIR", "var/mail")
	c.MailUnsubscribeMailto = l.str("MAIL_UNSUBSCRIBE_MAILTO", "")
	if c.MailUnsubscribeMailto != "" {
		if _, err := mail.ParseAddress(c.MailUnsubscribeMailto); err != nil {
			l.fail("MAIL_UNSUBSCRIBE_MAILTO", "not an email address")
		}
	}
}

// jobs reads DIGEST_SCHEDULE_INTERVAL, DIGEST_RETENTION, the job run
// limits and River's retention of finished jobs (JOB_*).
func (l *loader) jobs(c *Config) {
	c.DigestScheduleInterval = l.duration("DIGEST_SCHEDULE_INTERVAL", 5*time.Minute, time.Second, time.Hour)
	// notify.DefaultLedgerRetention and notify.MinLedgerRetention (config
	// imports no domain package; TestRetentionDefaults holds them equal).
	c.DigestRetention = l.retention("DIGEST_RETENTION", 90*day, 14*day, 3650*day)
	c.JobTimeout = l.duration("JOB_TIMEOUT", 10*time.Minute, time.Second, 2*time.Hour)
	c.RescueStuckAfter = l.duration("JOB_RESCUE_AFTER", c.JobTimeout+5*time.Minute, 2*time.Second, 24*time.Hour)
	if c.RescueStuckAfter <= c.JobTimeout {
		l.fail("JOB_RESCUE_AFTER", fmt.Sprintf("must be longer than JOB_TIMEOUT (%s), or running jobs would be rescued", c.JobTimeout))
	}
	c.JobRetryMax = l.duration("JOB_RETRY_MAX", time.Hour, time.Second, 24*time.Hour)
	c.JobRetentionCompleted = l.retention("JOB_RETENTION_COMPLETED", day, time.Hour, 90*day)
	c.JobRetentionCancelled = l.retention("JOB_RETENTION_CANCELLED", 7*day, time.Hour, 90*day)
	c.JobRetentionDiscarded = l.retention("JOB_RETENTION_DISCARDED", 7*day, time.Hour, 90*day)
}

// day is a day, for retentions.
const day = 24 * time.Hour

// sources reads the arXiv harvest (ARXIV_*, HARVEST_INTERVAL) and
// OpenAlex (OPENALEX_*) settings.
func (l *loader) sources(c *Config) {
	c.ArxivOAIURL = l.url("ARXIV_OAI_URL", "https://oaipmh.arxiv.org/oai", false, "http", "https")
	c.ArxivSets = l.list("ARXIV_SETS", "cs")
	switch f := l.str("ARXIV_OAI_FORMAT", "arXivRaw"); strings.ToLower(f) {
	case "arxivraw":
		c.ArxivOAIFormat = "arXivRaw"
	case "arxiv":
		c.ArxivOAIFormat = "arXiv"
	default:
		l.fail("ARXIV_OAI_FORMAT", fmt.Sprintf("%q is not arXivRaw or arXiv", f))
	}
	c.HarvestInterval = l.duration("HARVEST_INTERVAL", time.Hour, 0, 7*24*time.Hour)
	if c.HarvestInterval != 0 && c.HarvestInterval < time.Minute {
		l.fail("HARVEST_INTERVAL", "must be 0 (off) or at least 1m")
	}
	if days, err := arxivcal.ParseDates(l.str("ARXIV_HOLIDAYS", "")); err != nil {
		l.fail("ARXIV_HOLIDAYS", err.Error()+" (a comma-separated list of dates)")
	} else {
		c.ArxivHolidays = days
	}
	c.OpenAlexURL = l.url("OPENALEX_URL", "https://api.openalex.org", false, "http", "https")
	c.OpenAlexMailto = l.str("OPENALEX_MAILTO", "")
	c.OpenAlexAPIKey = l.str("OPENALEX_API_KEY", "")
}

// clients reads who may reach the service and what it may reach:
// CORS_ORIGINS, TRUSTED_PROXIES, the rate limits and the search preview's
// budget, WEBSUB_HUB_URL and CHANNEL_ALLOW_HOSTS (refused in production).
func (l *loader) clients(c *Config, prod bool) {
	c.CORSOrigins = l.list("CORS_ORIGINS", "")
	for _, o := range c.CORSOrigins {
		u, err := url.Parse(o)
		if o == "*" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			l.fail("CORS_ORIGINS", fmt.Sprintf("%q is not an origin like https://papers.example.org", o))
			break
		}
	}
	for _, p := range l.list("TRUSTED_PROXIES", "") {
		prefix, err := parsePrefix(p)
		if err != nil {
			l.fail("TRUSTED_PROXIES", fmt.Sprintf("%q is not an address or network like 10.0.0.0/8 or ::1", p))
			break
		}
		c.TrustedProxies = append(c.TrustedProxies, prefix)
	}
	c.RateLimitPerIP = l.float("RATE_LIMIT_PER_IP", 50, 0, 1e6)
	c.RateLimitPerUser = l.float("RATE_LIMIT_PER_USER", 10, 0, 1e6)
	c.SearchPreviewBudget = l.duration("SEARCH_PREVIEW_BUDGET", 2*time.Second, 0, time.Minute)
	c.WebSubHubURL = l.url("WEBSUB_HUB_URL", "", false, "http", "https")
	c.ChannelAllowHosts = l.list("CHANNEL_ALLOW_HOSTS", "")
	if prod && len(c.ChannelAllowHosts) > 0 {
		l.fail("CHANNEL_ALLOW_HOSTS", "lets channels reach plain-http and internal addresses; unset it in production")
	}
	for _, h := range c.ChannelAllowHosts {
		if strings.ContainsAny(h, "/:@ ") && !strings.HasPrefix(h, "[") && strings.Count(h, ":") < 2 {
			l.fail("CHANNEL_ALLOW_HOSTS", fmt.Sprintf("%q is not a host name or IP address (no scheme or port)", h))
		}
	}
}

// activityPub reads the fediverse's settings (ACTIVITYPUB,
// ACTIVITYPUB_CATEGORY_NOTES, ACTIVITYPUB_BLOCKED_DOMAINS): off by default.
// In production the actors are behind an https PUBLIC_URL, as fediverse
// servers need: server refuses any other PUBLIC_URL there.
func (l *loader) activityPub(c *Config) {
	c.ActivityPub = l.oneOf("ACTIVITYPUB", "off", "on", "off") == "on"
	c.ActivityPubCategoryNotes = l.oneOf("ACTIVITYPUB_CATEGORY_NOTES", "off", "on", "off") == "on"
	for _, d := range l.list("ACTIVITYPUB_BLOCKED_DOMAINS", "") {
		d = strings.ToLower(strings.Trim(d, "."))
		if d == "" || strings.ContainsAny(d, "/:@ *") {
			l.fail("ACTIVITYPUB_BLOCKED_DOMAINS", fmt.Sprintf("%q is not a domain like spam.example (no scheme, port or wildcard: a domain covers its subdomains)", d))
			continue
		}
		c.ActivityPubBlockedDomains = append(c.ActivityPubBlockedDomains, d)
	}
}

// admin reads the job UI's credential (ADMIN_USER, ADMIN_PASSWORD): in
// production never the development password, and at least 12 characters.
func (l *loader) admin(c *Config, prod bool) {
	c.AdminUser = l.str("ADMIN_USER", "admin")
	adminDefault := ""
	if !prod {
		adminDefault = DevAdminPassword
	}
	c.AdminPassword = l.str("ADMIN_PASSWORD", adminDefault)
	switch {
	case prod && c.AdminPassword == DevAdminPassword:
		l.fail("ADMIN_PASSWORD", "is the published development password; set your own (at least 12 characters) or leave it empty to turn the job UI off")
	case prod && c.AdminPassword != "" && len(c.AdminPassword) < 12:
		l.fail("ADMIN_PASSWORD", "too short for production: use at least 12 characters")
	}
}

// isLoopback reports whether host names this machine (localhost or a
// loopback address), where a plain connection never leaves it.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isDevSecret reports whether s is one of the built-in development secrets,
// which are public and so never a secret in production.
func isDevSecret(s string) bool {
	return s == DevHS256Secret || s == DevSecretKey || s == DevDemoHS256Secret
}

// IsProduction reports whether the process runs in production mode.
func (c *Config) IsProduction() bool { return c.Env == Production }

// loader collects every problem (the first one per variable) so Load
// reads as a list of settings.
type loader struct {
	getenv func(string) string
	errs   []*Error
}

func (l *loader) fail(name, reason string) {
	for _, e := range l.errs {
		if e.Var == name {
			return
		}
	}
	l.errs = append(l.errs, &Error{Var: name, Reason: reason})
}

func (l *loader) str(name, def string) string {
	if v := strings.TrimSpace(l.getenv(name)); v != "" {
		return v
	}
	return def
}

// required returns the variable, or in development its default; in
// production an empty value is an error.
func (l *loader) required(prod bool, name, devDefault string) string {
	v := strings.TrimSpace(l.getenv(name))
	if v != "" {
		return v
	}
	if prod {
		l.fail(name, "required in production (APP_ENV=production)")
		return ""
	}
	return devDefault
}

func (l *loader) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(l.str(name, def))
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	l.fail(name, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", ")))
	return def
}

func (l *loader) int(name string, def, min, max int) int {
	s := l.str(name, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		l.fail(name, fmt.Sprintf("%q is not a whole number between %d and %d", s, min, max))
		return def
	}
	return n
}

func (l *loader) float(name string, def, min, max float64) float64 {
	s := l.str(name, "")
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < min || f > max {
		l.fail(name, fmt.Sprintf("%q is not a number between %g and %g", s, min, max))
		return def
	}
	return f
}

func (l *loader) duration(name string, def, min, max time.Duration) time.Duration {
	s := l.str(name, "")
	if s == "" {
		return def
	}
	if s == "0" || s == "off" {
		s = "0s"
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < min || d > max {
		l.fail(name, fmt.Sprintf("%q is not a duration between %s and %s (e.g. 30s, 5m)", s, min, max))
		return def
	}
	return d
}

// retention reads a retention: days ("90d") or a Go duration ("36h"),
// between min and max.
func (l *loader) retention(name string, def, min, max time.Duration) time.Duration {
	s := l.str(name, "")
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		d = time.Duration(days) * day
	}
	if err != nil || d < min || d > max {
		l.fail(name, fmt.Sprintf("%q is not a retention between %s and %s (days like 90d, or a duration like 36h)", s, days(min), days(max)))
		return def
	}
	return d
}

// days writes d in whole days when it is some ("14d"), else as a duration.
func days(d time.Duration) string {
	if d%day == 0 {
		return strconv.Itoa(int(d/day)) + "d"
	}
	return d.String()
}

func (l *loader) url(name, def string, required bool, schemes ...string) *url.URL {
	s := l.str(name, def)
	if s == "" {
		if required {
			l.fail(name, "required in production (APP_ENV=production)")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		l.fail(name, fmt.Sprintf("%q is not an absolute URL", redactURL(s)))
		return nil
	}
	for _, sc := range schemes {
		if u.Scheme == sc {
			return u
		}
	}
	l.fail(name, fmt.Sprintf("scheme %q is not one of %s", u.Scheme, strings.Join(schemes, ", ")))
	return nil
}

func (l *loader) list(name, def string) []string {
	var out []string
	for _, p := range strings.Split(l.str(name, def), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:8080 or :8080)", addr)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		if strings.ContainsAny(host, " /") {
			return fmt.Errorf("%q has an invalid host", addr)
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q has an invalid port (0-65535)", addr)
	}
	return nil
}

// redactURL hides a password in a URL so it never reaches logs or errors.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable)"
	}
	return u.Redacted()
}

// redactErr returns err's message with any occurrence of secret-bearing dsn
// removed; pgx errors may echo the connection string.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, redactURL(dsn))
	}
	if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// parsePrefix reads a network (10.0.0.0/8) or a single address (::1, as
// its /32 or /128).
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
