package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"followfeed/account"
	"followfeed/arxivcal"
	"followfeed/auth"
	"followfeed/catalog"
	"followfeed/channels"
	"followfeed/config"
	"followfeed/database"
	"followfeed/fediverse"
	"followfeed/feeds"
	"followfeed/follow"
	"followfeed/harvest"
	"followfeed/httpapi"
	"followfeed/identity"
	"followfeed/inbox"
	"followfeed/internal/httpclient"
	"followfeed/mail"
	"followfeed/match"
	"followfeed/mute"
	"followfeed/notify"
	"followfeed/openalex"
	"followfeed/paper"
	"followfeed/ranking"
	"followfeed/relevance"
	"followfeed/worker"
)

// Services are the domain services of one process, built once by
// NewServices and shared by the HTTP routes, the workers and the commands
// (followfeed-lab's bench drives the same services the product runs).
type Services struct {
	logger   *slog.Logger
	db       *database.DB
	inserter *river.Client[pgx.Tx]
	enqueuer *worker.Enqueuer

	verifier  *auth.Verifier
	users     *account.Users
	addrs     *account.Addresses
	confirms  *notify.Confirmations
	follows   *follow.Service
	registry  *identity.Registry
	papers    *catalog.Store
	matcher   *match.Service
	ranking   *ranking.Service
	inbox     *inbox.Service
	mutes     *mute.Service
	prefs     *notify.Preferences
	harvester *harvest.Harvester
	enricher  *harvest.Enricher
	health    *harvest.Health
	feeds     *feeds.Service
	sender    mail.Sender
	digester  *notify.Digester
	signer    *auth.LinkSigner
	channels  *channels.Service
	fediverse *fediverse.Service // nil unless ACTIVITYPUB=on
	now       func() time.Time
	// previewChunk is Hooks.PreviewChunk.
	previewChunk func(ctx context.Context)
}

// NewServices wires every domain service of a process on db, as configured
// by cfg: the OnAffected hooks (instant alerts, WebSub pings), the job
// enqueuer (River, InsertTx), the mail sender (SMTP_URL or MAIL_DIR) and the
// upstream clients. It starts nothing: no worker runs and nothing listens
// until the caller registers Routes or starts the jobs. hooks.Now nil means
// time.Now. Callers Close the result when done.
func NewServices(ctx context.Context, cfg *config.Config, db *database.DB, logger *slog.Logger, hooks Hooks) (*Services, error) {
	return newServices(ctx, cfg, db, logger, hooks, servicesOptions{})
}

// servicesOptions are what a command changes in the services it wires.
type servicesOptions struct {
	// upstreamRetries, when set, is how many times the upstream clients
	// (OAI-PMH, OpenAlex) retry one request instead of their defaults (5
	// and 4); 0 is none (harvest --once --retries).
	upstreamRetries *int
}

// maxRetries is the MaxRetries of an upstream client's config: 0 (the
// client's default) unless o sets the retries, -1 for none.
func (o servicesOptions) maxRetries() int {
	switch {
	case o.upstreamRetries == nil:
		return 0
	case *o.upstreamRetries == 0:
		return -1
	}
	return *o.upstreamRetries
}

func newServices(ctx context.Context, cfg *config.Config, db *database.DB, logger *slog.Logger, hooks Hooks, opts servicesOptions) (*Services, error) {
	if hooks.Now == nil {
		hooks.Now = time.Now
	}
	ins, err := worker.NewInserter(db.Pool, logger)
	if err != nil {
		return nil, err
	}
	s := &Services{logger: logger, db: db, inserter: ins, enqueuer: worker.NewEnqueuer(ins), now: hooks.Now, previewChunk: hooks.PreviewChunk}
	if s.verifier, err = newVerifier(ctx, cfg, logger); err != nil {
		return nil, err
	}
	s.signer = auth.NewLinkSigner(cfg.SecretKey)
	s.users = account.NewUsers(db)
	s.addrs = account.NewAddresses(db, s.signer, cfg.PublicURL, s.enqueuer)
	s.follows = follow.NewService(db)
	s.papers = catalog.NewStore(db, s.enqueuer)
	s.follows.OnFollow(s.papers.BackfillHook(hooks.Now))
	s.registry = identity.NewRegistry(db, s.follows)
	s.registry.LogTo(logger)
	s.papers.ObserveIdentities(s.registry)
	s.matcher = match.NewService(db)
	s.mutes = mute.NewService(db)
	s.ranking = ranking.New(ranking.Config{DB: db, Enqueuer: s.enqueuer, Matcher: s.matcher, Logger: logger})
	// A follow made or removed counts a change of the user's ranking (a
	// user with a model gets it retrained).
	s.follows.OnFollow(s.ranking.FollowChanged)
	s.follows.OnUnfollow(s.ranking.FollowChanged)
	// So does a "not this person": the model learnt the person's papers,
	// the disputed one among them.
	s.registry.OnNotThisPerson(s.ranking.FollowChanged)
	s.inbox = inbox.New(db, s.matcher)
	s.inbox.RankWith(s.ranking)
	s.prefs = notify.NewPreferences(db, s.addrs, hooks.Now)
	s.users.OnConfirm(s.prefs.AddressConfirmed)
	s.addrs.OnDigests(s.prefs)
	// Erasing a user (DELETE /v1/me, the settings page, the host's DELETE
	// /v1/users/{sub}): each package erases its own tables in the one
	// transaction of account.Users.Erase, which erases account's last.
	// Every table that holds a user id has its package's eraser here
	// (httpapi's TestErasureEmptiesEveryUserTable holds the schema to it).
	s.users.OnErase(follow.EraseUser)
	s.users.OnErase(identity.EraseUser)
	s.users.OnErase(ranking.EraseUser)
	s.users.OnErase(inbox.EraseUser)
	s.users.OnErase(channels.EraseUser)
	s.users.OnErase(notify.EraseUser)
	s.users.OnErase(mute.EraseUser)
	// Every retry of an upstream request is logged, so a harvest against
	// a down repository says what it waits for instead of minutes of
	// silence (the harvest command's logs go to the terminal).
	onRetry := func(rawURL string, attempt, maxRetries int, wait time.Duration, err error) {
		logger.Warn("upstream request failed; retrying", "url", rawURL, "attempt", attempt, "retries", maxRetries,
			"wait", wait.Round(time.Second).String(), "error", err.Error())
	}
	oai := harvest.NewOAIClient(harvest.OAIConfig{
		BaseURL:    cfg.ArxivOAIURL.String(),
		Format:     cfg.ArxivOAIFormat,
		Client:     httpclient.New(5*time.Minute, harvest.OAIMaxBodyBytes),
		MaxRetries: opts.maxRetries(),
		OnRetry:    onRetry,
	})
	s.harvester = harvest.NewHarvester(db, oai, s.papers, cfg.ArxivSets, logger, hooks.Now)
	s.harvester.QueueFollowUps(s.enqueuer)
	s.health = harvest.NewHealth(db, cfg.ArxivSets, logger, hooks.Now)
	works := openalex.NewClient(openalex.Config{
		BaseURL:    cfg.OpenAlexURL.String(),
		Mailto:     cfg.OpenAlexMailto,
		APIKey:     cfg.OpenAlexAPIKey,
		Client:     httpclient.New(time.Minute, openalex.MaxBodyBytes),
		MaxRetries: opts.maxRetries(),
		OnRetry:    onRetry,
	})
	s.enricher = harvest.NewEnricher(s.papers, works, harvest.DefaultEnrichPolicy, logger, nil)
	s.enricher.ReportTo(s.health)
	s.enricher.OnIdentities(s.registry.OpenAlexSink())
	s.feeds = feeds.NewService(db, feeds.NewTokens(db, cfg.SecretKey), s.matcher, s.follows, cfg.PublicURL, cfg.WebSubHubURL, cfg.SecretKey)
	// Private feed items carry the user's feedback links; the ranked feed
	// orders by their model.
	s.feeds.Personalize(feeds.Personal{Feedback: s.addrs, Ranking: s.ranking})
	if s.sender, err = newSender(cfg, logger); err != nil {
		return nil, err
	}
	s.digester = notify.NewDigester(notify.DigesterConfig{
		DB: db, Matcher: s.matcher, Sender: s.sender, Enqueuer: s.enqueuer,
		Links: feedLinks{s.feeds}, Addresses: s.addrs, From: cfg.MailFrom, BaseURL: cfg.PublicURL,
		Mailto: cfg.MailUnsubscribeMailto, Logger: logger, Now: hooks.Now,
		Calendar: arxivcal.New(cfg.ArxivHolidays), Health: s.health, LedgerRetention: cfg.DigestRetention,
		Ranker: digestRanker{s.ranking}, OnPauseEnd: channelsPauseHook{s}, Opened: s.inbox,
	})
	s.confirms = notify.NewConfirmations(s.addrs, s.sender, cfg.MailFrom, cfg.PublicURL, hooks.Now)
	// The match job finds new matches only of users with instant
	// delivery (instant_follows); these hooks pick the users they serve.
	s.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
		return s.digester.ScheduleInstant(ctx, tx, res.Users)
	})
	s.channels = channels.NewService(channels.Config{
		DB: db, Matcher: s.matcher, Follows: s.follows, Enqueuer: s.enqueuer,
		Guard: channels.NewGuard(cfg.ChannelAllowHosts), Sender: s.sender, From: cfg.MailFrom,
		BaseURL: cfg.PublicURL.String(), Logger: logger, Now: hooks.Now, SecretKey: cfg.SecretKey,
		Ranking: s.ranking, Feedback: s.addrs,
	})
	s.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
		return s.channels.ScheduleInstant(ctx, tx, res.Users)
	})
	if cfg.ActivityPub {
		s.fediverse = fediverse.NewService(fediverse.Config{
			DB: db, BaseURL: cfg.PublicURL, Guard: channels.NewGuard(cfg.ChannelAllowHosts), Enqueuer: s.enqueuer,
			Identities: s.registry, Names: s.follows, Matcher: s.matcher, HighSeq: s.papers.HighSeq,
			Blocked: cfg.ActivityPubBlockedDomains, CategoryNotes: cfg.ActivityPubCategoryNotes, Logger: logger, Now: hooks.Now,
			SecretKey: cfg.SecretKey,
		})
		// The actors of the public feeds the batch changed get a fan-out
		// job; nothing is sent inside the match job.
		s.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
			return s.fediverse.MatchHook(ctx, tx, slices.Concat(res.NewKeys, res.ReplacedKeys))
		})
	}
	if cfg.WebSubHubURL != nil {
		s.matcher.OnAffected(func(ctx context.Context, tx pgx.Tx, res match.BatchResult) error {
			topics, err := s.feeds.ChangedPublicURLs(ctx, tx, res.NewKeys)
			if err != nil {
				return err
			}
			return s.enqueuer.EnqueueWebSub(ctx, tx, topics)
		})
	}
	return s, nil
}

// Identities is the identity registry (researchers and institutions).
func (s *Services) Identities() *identity.Registry { return s.registry }

// Close releases what the services hold (pooled SMTP connections); the
// database stays open (it belongs to the caller).
func (s *Services) Close() {
	if c, ok := s.sender.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// Papers is the paper store (the path every new paper takes).
func (s *Services) Papers() *catalog.Store { return s.papers }

// Matcher is the match service (match jobs and the user-match query).
func (s *Services) Matcher() *match.Service { return s.matcher }

// FeedTokens are the private-feed tokens.
func (s *Services) FeedTokens() *feeds.Tokens { return s.feeds.Tokens() }

// Health is the source health store (GET /v1/status, the source metrics).
func (s *Services) Health() *harvest.Health { return s.health }

// Digester builds and sends digests through the configured sender.
func (s *Services) Digester() *notify.Digester { return s.digester }

// Ranking keeps users' feedback and ranking models and ranks papers for
// them (the ranked feed, best-first digests and push).
func (s *Services) Ranking() *ranking.Service { return s.ranking }

// newSender delivers mail over SMTP_URL, or writes .eml files to MAIL_DIR.
func newSender(cfg *config.Config, logger *slog.Logger) (mail.Sender, error) {
	if cfg.SMTPURL == nil {
		return mail.NewDirSender(cfg.MailDir), nil
	}
	snd, err := mail.NewSMTPSender(cfg.SMTPURL.String(), mail.SMTPOptions{Logger: logger, HeloName: cfg.PublicURL.Hostname()})
	if err != nil {
		return nil, &config.Error{Var: "SMTP_URL", Reason: err.Error()}
	}
	return snd, nil
}

// digestRanker is notify's Ranker over package ranking: best-first
// digests and instant alerts rank through the process's ranking service
// (its corpus and cache of paper vectors), and read why a paper ranks as
// the reasons' texts.
type digestRanker struct{ ranking *ranking.Service }

func (r digestRanker) Rank(ctx context.Context, want map[int64][]int64, have map[int64]*paper.Paper) (notify.RankedBatch, error) {
	b, err := r.ranking.Rank(ctx, want, have)
	if err != nil {
		return nil, err
	}
	return rankedBatch{b}, nil
}

// rankedBatch is a ranking.Batch as notify reads it.
type rankedBatch struct{ *ranking.Batch }

// Why is the texts of ranking.Batch.WhyMany.
func (b rankedBatch) Why(userID int64, paperIDs []int64) [][]string {
	return reasonTexts(b.Batch.WhyMany(userID, paperIDs))
}

// reasonTexts are the reasons' texts: one string holds all of them
// (relevance.Reason.AppendText), each text a piece of it, rather than a
// string each (a best-first digest explains some 75 papers).
func reasonTexts(reasons [][]relevance.Reason) [][]string {
	n := 0
	for _, rs := range reasons {
		n += len(rs)
	}
	buf := make([]byte, 0, 40*n) // most texts are shorter
	ends := make([]int, 0, n)
	for _, rs := range reasons {
		for _, r := range rs {
			buf = r.AppendText(buf)
			ends = append(ends, len(buf))
		}
	}
	all := string(buf)
	texts := make([]string, len(ends))
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		texts[i] = all[start:end]
	}
	out := make([][]string, len(reasons))
	for i, rs := range reasons {
		out[i], texts = texts[:len(rs):len(rs)], texts[len(rs):]
	}
	return out
}

// feedLinks gives mail the user's private feed URL.
type feedLinks struct{ feeds *feeds.Service }

func (l feedLinks) FeedURLs(ctx context.Context, userIDs []int64) (map[int64]string, error) {
	toks, err := l.feeds.Tokens().TokensMany(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(toks))
	for id, tok := range toks {
		out[id] = l.feeds.PrivateURL(tok, feeds.Atom, nil)
	}
	return out, nil
}

func newVerifier(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*auth.Verifier, error) {
	vc := auth.VerifierConfig{
		HS256Secret: cfg.Auth.HS256Secret,
		Issuer:      cfg.Auth.Issuer,
		Audience:    cfg.Auth.Audience,
		Leeway:      cfg.Auth.Leeway,
		MaxLifetime: cfg.Auth.MaxTokenLifetime,
		HTTPClient:  httpclient.New(10*time.Second, 1<<20),
		Logger:      logger,
	}
	if !cfg.IsProduction() {
		// The /embed/demo page's token: its own key, never the host's
		// secret, and only for the demo user.
		vc.DemoHS256Secret = []byte(config.DevDemoHS256Secret)
	}
	if cfg.Auth.JWKSURL != nil {
		vc.JWKSURL = cfg.Auth.JWKSURL.String()
	}
	if cfg.Auth.PublicKeyFile != "" {
		pem, err := os.ReadFile(cfg.Auth.PublicKeyFile)
		if err != nil {
			return nil, &config.Error{Var: "AUTH_PUBLIC_KEY_FILE", Reason: fmt.Sprintf("cannot read: %v", err)}
		}
		vc.PublicKeyPEM = pem
	}
	v, err := auth.NewVerifier(ctx, vc)
	if err != nil {
		name := "AUTH_JWKS_URL" // a JWKS problem, or no key source at all
		var se *auth.SourceError
		if errors.As(err, &se) && se.Source == auth.SourcePEM {
			name = "AUTH_PUBLIC_KEY_FILE"
		}
		return nil, &config.Error{Var: name, Reason: err.Error()}
	}
	return v, nil
}

// enrichInterval is how often papers due for an OpenAlex lookup are looked
// up (a harvest run after which papers are due also asks at once).
const enrichInterval = 15 * time.Minute

// channelScheduleInterval is how often daily and weekly channels whose
// window closed are looked for.
const channelScheduleInterval = time.Minute

// jobs lists the workers and periodic jobs a working process runs.
func (s *Services) jobs(cfg *config.Config) []worker.Registration {
	harvest := worker.Register(&worker.HarvestWorker{Harvester: s.harvester, Logger: s.logger})
	if cfg.HarvestInterval > 0 {
		harvest = harvest.Every(cfg.HarvestInterval, func() river.JobArgs { return worker.HarvestArgs{} }, true)
	}
	hub := ""
	if cfg.WebSubHubURL != nil {
		hub = cfg.WebSubHubURL.String()
	}
	regs := []worker.Registration{
		worker.Register(&worker.MatchWorker{Match: s.matcher, Logger: s.logger}),
		worker.Register(&worker.BackfillWorker{Papers: s.papers, Logger: s.logger}),
		worker.Register(&worker.RankTrainWorker{Ranking: s.ranking, Logger: s.logger}),
		worker.Register(&worker.ScheduleDigestsWorker{Digester: s.digester, Logger: s.logger}).
			Every(cfg.DigestScheduleInterval, func() river.JobArgs { return worker.ScheduleDigestsArgs{} }, true),
		worker.Register(&worker.DigestWorker{Digester: s.digester, Logger: s.logger}),
		worker.Register(&worker.InstantWorker{Digester: s.digester}),
		worker.Register(&worker.ConfirmWorker{Confirmations: s.confirms}),
		worker.Register(&worker.ChannelCollectWorker{Channels: s.channels}),
		worker.Register(&worker.ChannelDeliverWorker{Channels: s.channels, Logger: s.logger}),
		worker.Register(&worker.ChannelDisabledWorker{Channels: s.channels}),
		worker.Register(&worker.ChannelScheduleWorker{Channels: s.channels, Logger: s.logger}).
			Every(channelScheduleInterval, func() river.JobArgs { return worker.ChannelScheduleArgs{} }, true),
		worker.Register(&worker.ChannelPruneWorker{Channels: s.channels, Logger: s.logger}).
			Every(worker.PruneInterval, func() river.JobArgs { return worker.ChannelPruneArgs{} }, true),
		worker.Register(&worker.WebSubWorker{Publisher: feeds.NewPublisher(hub, httpclient.New(30*time.Second, 64<<10))}),
		harvest,
		worker.Register(&worker.CheckWorker{Harvester: s.harvester, Logger: s.logger}),
		worker.Register(&worker.EnrichWorker{Enricher: s.enricher, Logger: s.logger}).
			Every(enrichInterval, func() river.JobArgs { return worker.EnrichArgs{} }, false),
	}
	// The retention prunes of the tables that grow with time (README,
	// Operations: Retention), beside channel_prune and the fediverse's
	// housekeeping; River's own finished jobs go by its cleaner.
	regs = append(regs, worker.Pruners{
		SeqTimes:      s.papers.PruneSeqTimes,
		Digests:       s.digester.PruneLedger,
		Harvest:       s.health.Prune,
		Confirmations: s.addrs.PruneConfirmations,
	}.Registrations(s.logger)...)
	if s.fediverse != nil {
		regs = append(regs,
			// The periodic fan-out only catches what a hook's job could not
			// (it finds nothing due in the ordinary case).
			worker.Register(&worker.APFanoutWorker{Fediverse: s.fediverse, Logger: s.logger}).
				Every(time.Minute, func() river.JobArgs { return worker.APFanoutArgs{} }, false),
			worker.Register(&worker.APDeliverWorker{Fediverse: s.fediverse, Logger: s.logger}),
			worker.Register(&worker.APSummaryWorker{Fediverse: s.fediverse, Logger: s.logger}).
				Every(time.Hour, func() river.JobArgs { return worker.APSummaryArgs{} }, true),
			worker.Register(&worker.APHousekeepingWorker{Fediverse: s.fediverse, Logger: s.logger}).
				Every(10*time.Minute, func() river.JobArgs { return worker.APHousekeepingArgs{} }, false),
		)
	}
	return regs
}

// Routes returns a function that registers every product route (the
// route tables of httpapi.Product: the API, feeds, pages) on a mux, for
// httpapi.Options.Routes.
func (s *Services) Routes(cfg *config.Config) func(*http.ServeMux) {
	api := &httpapi.API{
		Logger:     s.logger,
		Verifier:   s.verifier,
		Users:      s.users,
		Identities: s.registry,
		Addresses:  s.addrs,
		Follows:    s.follows,
		Papers:     s.papers,
		// One value for the API and the settings page: a user's previews
		// run one at a time wherever they come from.
		Previews: &httpapi.Previews{Papers: s.papers, Budget: cfg.SearchPreviewBudget, OnChunk: s.previewChunk},
		Health:   s.health,
		Prefs:    s.prefs,
		Digests:  s.digester,
		Feeds:    s.feeds,
		Channels: s.channels,
		Ranking:  s.ranking,
		Inbox:    s.inbox,
		Mutes:    s.mutes,
		Matcher:  s.matcher,
		PerIP:    httpapi.NewLimiter(cfg.RateLimitPerIP, int(2*cfg.RateLimitPerIP)+1),
		PerUser:  httpapi.NewLimiter(cfg.RateLimitPerUser, int(2*cfg.RateLimitPerUser)+1),
	}
	feedRoutes := &httpapi.FeedRoutes{
		Logger: s.logger,
		Feeds:  s.feeds,
		// A user's feed reader polls a handful of feeds; 20 unknown tokens a minute from
		// one address is guessing.
		Misses: httpapi.NewLimiter(20.0/60, 20),
		PerIP:  api.PerIP,
	}
	status := &httpapi.StatusRoutes{Logger: s.logger, Health: s.health, Calendar: arxivcal.New(cfg.ArxivHolidays), PerIP: api.PerIP, Now: s.now}
	emailPages := &httpapi.EmailPages{Logger: s.logger, Addresses: s.addrs, Identities: s.registry, PerIP: api.PerIP,
		Ranking: s.ranking, Matcher: s.matcher, Follows: s.follows, Inbox: s.inbox, Mutes: s.mutes}
	settings := httpapi.NewSettings(httpapi.Settings{Logger: s.logger, Verifier: s.verifier, Users: s.users, Addresses: s.addrs, Follows: s.follows,
		Feeds: s.feeds, Prefs: s.prefs, Digester: s.digester, Channels: s.channels, Signer: s.signer, Identities: s.registry, Previews: api.Previews, Ranking: s.ranking, Inbox: s.inbox, Mutes: s.mutes, Secure: cfg.PublicURL.Scheme == "https",
		DevLogin: !cfg.IsProduction(), HostOrigins: cfg.CORSOrigins, PerIP: api.PerIP, PerUser: api.PerUser}, cfg.SecretKey)
	embed := &httpapi.Embed{Logger: s.logger, FrameOrigins: cfg.CORSOrigins, PublicURL: cfg.PublicURL.String()}
	if !cfg.IsProduction() {
		// The demo page signs its button in as the demo user, with the
		// development-only demo key: a token it hands out is worth nothing
		// anywhere else, even when AUTH_HS256_SECRET is a real host's.
		embed.DemoToken = func() (string, error) {
			return auth.MintDemo([]byte(config.DevDemoHS256Secret), time.Now(), cfg.Auth.Issuer, cfg.Auth.Audience)
		}
	}
	product := &httpapi.Product{API: api, Feeds: feedRoutes, Status: status, Email: emailPages, Settings: settings, Embed: embed}
	if s.fediverse != nil {
		feedRoutes.ActorURL = s.fediverse.ActorURL
		product.Fediverse = &httpapi.ActivityPubRoutes{Logger: s.logger, Fediverse: s.fediverse, Feeds: s.feeds, PerIP: api.PerIP,
			Version: version()}
	}
	return product.Register
}

// channelsPauseHook forwards the end of a user's pause (notify) to the
// push channels (made after the digester): they catch up or skip.
type channelsPauseHook struct{ s *Services }

// PauseEnded is notify.PauseHook's method: channels.Service.PauseEnded.
func (h channelsPauseHook) PauseEnded(ctx context.Context, tx pgx.Tx, userIDs []int64, endedAt []time.Time) error {
	if h.s.channels == nil {
		return nil
	}
	return h.s.channels.PauseEnded(ctx, tx, userIDs, endedAt)
}
