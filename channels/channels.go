package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/catalog"
	"followfeed/database"
	"followfeed/follow"
	"followfeed/mail"
	"followfeed/match"
	"followfeed/ranking"
)

// Type is a kind of channel.
type Type string

// The channel types.
const (
	Webhook Type = "webhook" // Standard Webhooks: signed JSON POST
	Slack   Type = "slack"   // Slack incoming webhook, Block Kit
	Discord Type = "discord" // Discord webhook, embeds
	Matrix  Type = "matrix"  // Matrix client-server API, m.room.message
)

// Mode is when a channel receives papers.
type Mode string

// The modes.
const (
	Instant Mode = "instant" // within a minute of the match job
	Daily   Mode = "daily"   // once a day at the user's digest hour
	Weekly  Mode = "weekly"  // once a week at the user's digest hour and weekday
)

// MaxPerUser is how many channels one user may have.
const MaxPerUser = 10

// RotationOverlap is how long the previous secret keeps signing after a
// rotation.
const RotationOverlap = 24 * time.Hour

// Channel is one push target of a user.
type Channel struct {
	ID     int64
	UserID int64
	Type   Type
	// URL is the webhook URL, or the Matrix homeserver's base URL.
	URL         string
	RoomID      string // Matrix
	accessToken string // Matrix; never leaves the package
	Mode        Mode
	// Follows restricts the channel to some of the user's follows; nil
	// means all of them.
	Follows []follow.Target
	// Secret is set only in the result of Create and RotateSecret: it is
	// shown once.
	Secret string
	// RotatingUntil is when the previous secret stops signing (zero: no
	// rotation under way).
	RotatingUntil  time.Time
	Enabled        bool
	DisabledReason string
	FailingSince   time.Time // zero: healthy
	// PauseCatchUp: after the user's pause (notify's vacation) the
	// channel sends what it missed as one batch, within the budget (true,
	// the default); false skips it (it stays in the feed).
	PauseCatchUp bool
	CreatedAt    time.Time
	// CredentialsUnreadable says that a stored credential does not open
	// under this SECRET_KEY (it was sealed under another): its deliveries
	// fail saying so until the user rotates the webhook's secret or
	// enters the Slack/Discord URL or Matrix token again.
	CredentialsUnreadable bool
	secret                string
	oldSecret             string
}

// Spec is what a user sends to create or change a channel. On update,
// nil fields stay as they are.
type Spec struct {
	Type        *string
	URL         *string
	Homeserver  *string
	RoomID      *string
	AccessToken *string
	Mode        *string
	// Follows: nil leaves them; a pointer to nil means all follows.
	Follows *[]follow.Target
	Enabled *bool
	// AfterPause sets PauseCatchUp: AfterPauseCatchUp or AfterPauseSkip.
	AfterPause *string
}

// The values of Spec.AfterPause.
const (
	AfterPauseCatchUp = "catch_up"
	AfterPauseSkip    = "skip"
)

// AfterPause is c's PauseCatchUp as Spec.AfterPause spells it:
// AfterPauseCatchUp or AfterPauseSkip.
func (c *Channel) AfterPause() string {
	if c.PauseCatchUp {
		return AfterPauseCatchUp
	}
	return AfterPauseSkip
}

// parseAfterPause reads Spec.AfterPause (nil: def).
func parseAfterPause(p *string, def bool) (bool, error) {
	if p == nil {
		return def, nil
	}
	switch strings.TrimSpace(*p) {
	case AfterPauseCatchUp:
		return true, nil
	case AfterPauseSkip:
		return false, nil
	}
	return def, apperr.InvalidField("after_pause", "%q is not one of catch_up, skip", *p)
}

// Enqueuer queues the package's jobs inside the caller's transaction
// (implemented by worker.Enqueuer).
type Enqueuer interface {
	// EnqueueChannelCollect queues the job that turns the channels' new
	// matches into events (Service.Collect), due at at.
	EnqueueChannelCollect(ctx context.Context, tx pgx.Tx, channelIDs []int64, at time.Time) error
	// EnqueueChannelDeliveries queues one delivery job per event (Service.Deliver).
	EnqueueChannelDeliveries(ctx context.Context, tx pgx.Tx, eventIDs []int64) error
	// EnqueueChannelDisabled queues the owner's mail about a disabled
	// channel (Service.MailDisabled).
	EnqueueChannelDisabled(ctx context.Context, tx pgx.Tx, channelID int64) error
}

// Matcher is the read-time match query (match.Service).
type Matcher interface {
	MatchedMany(ctx context.Context, qs []match.Query) ([]match.Result, error)
}

// Ranker ranks a user's papers (ranking.Service).
type Ranker interface {
	// RankPapers sorts the user's papers best first.
	RankPapers(ctx context.Context, userID int64, papers []match.Paper) (*ranking.Batch, error)
}

// FeedbackLinks signs a user's one-click feedback link of a paper
// (account.Addresses): one user, their link epoch, one paper (papers.id)
// and one value (package ranking's).
type FeedbackLinks interface {
	FeedbackURL(userID, epoch, paperID int64, value string) string
}

// Config assembles a Service.
type Config struct {
	DB       *database.DB
	Matcher  Matcher
	Follows  *follow.Service
	Enqueuer Enqueuer
	Guard    *Guard
	Sender   mail.Sender // the owner's "channel disabled" mail
	From     *netmail.Address
	BaseURL  string // PUBLIC_URL, for the settings link in that mail
	Logger   *slog.Logger
	Now      func() time.Time
	// SecretKey (SECRET_KEY) seals the signing secrets and access tokens
	// stored in channels (see seal.go); it must not be empty.
	SecretKey []byte
	// Ranking orders the papers of users whose digest settings say order
	// best, best first, and applies their daily budget; nil: every
	// channel sends newest first, without a budget.
	Ranking Ranker
	// Feedback signs the papers' feedback links (PaperJSON.Feedback); nil:
	// papers carry none.
	Feedback FeedbackLinks
}

// Service owns channels, their events (the delivery ledger) and attempts:
// tables channels, channel_events and channel_attempts.
type Service struct {
	db      *database.DB
	matcher Matcher
	follows *follow.Service
	enq     Enqueuer
	guard   *Guard
	sender  mail.Sender
	from    *netmail.Address
	base    string
	logger  *slog.Logger
	now     func() time.Time
	client  httpDoer
	seal    *sealer
	ranker  Ranker
	links   FeedbackLinks
}

// NewService returns the channel service. It panics without a
// Config.SecretKey (the configuration always has one).
func NewService(c Config) *Service {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Guard == nil {
		c.Guard = NewGuard(nil)
	}
	seal, err := newSealer(c.SecretKey)
	if err != nil {
		panic(err)
	}
	return &Service{db: c.DB, matcher: c.Matcher, follows: c.Follows, enq: c.Enqueuer, guard: c.Guard,
		sender: c.Sender, from: c.From, base: strings.TrimSuffix(c.BaseURL, "/"), logger: c.Logger, now: c.Now,
		client: c.Guard.Client(), seal: seal, ranker: c.Ranking, links: c.Feedback}
}

// The chat providers' incoming webhooks: fixed hosts (reached on 443)
// and fixed path shapes, Slack's /services/{team}/{bot}/{token} and
// Discord's /api[/v{n}]/webhooks/{id}/{token}. The patterns admit no dot,
// percent sign or empty segment, so no dot segment (../) or encoded one
// (%2e%2e, %2f) passes.
var (
	slackHosts   = map[string]bool{"hooks.slack.com": true}
	discordHosts = map[string]bool{"discord.com": true, "discordapp.com": true, "ptb.discord.com": true, "canary.discord.com": true}
	slackPath    = regexp.MustCompile(`^/services/[A-Z0-9]{1,32}/[A-Z0-9]{1,32}/[A-Za-z0-9]{1,128}$`)
	discordPath  = regexp.MustCompile(`^/api(/v[0-9]{1,2})?/webhooks/[0-9]{1,20}/[A-Za-z0-9_-]{1,128}$`)
	slackQuery   = regexp.MustCompile(`^$`)
	discordQuery = regexp.MustCompile(`^(thread_id=[0-9]{1,20})?$`)
	matrixRoomID = regexp.MustCompile(`^![A-Za-z0-9._=\-/+]{1,200}:[A-Za-z0-9.\-:\[\]]{1,255}$`)
)

// validated is a channel's target after checks.
type validated struct {
	typ                      Type
	url, roomID, accessToken string
	mode                     Mode
	follows                  []string // keys; nil: all
}

func parseType(s string) (Type, error) {
	switch t := Type(strings.ToLower(strings.TrimSpace(s))); t {
	case Webhook, Slack, Discord, Matrix:
		return t, nil
	case "":
		return "", apperr.InvalidField("type", "is required: webhook, slack, discord or matrix")
	}
	return "", apperr.InvalidField("type", "must be webhook, slack, discord or matrix")
}

func parseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case Instant, Daily, Weekly:
		return m, nil
	}
	return "", apperr.InvalidField("mode", "must be instant, daily or weekly")
}

// check validates v's target for its type.
func (s *Service) check(v *validated) error {
	if v.typ == Matrix {
		u, err := s.guard.CheckURL("homeserver", v.url)
		if err != nil {
			return err
		}
		if u.RawQuery != "" {
			return apperr.InvalidField("homeserver", "must be the homeserver's base URL, without a query")
		}
		v.url = strings.TrimSuffix(u.String(), "/")
		if !matrixRoomID.MatchString(v.roomID) {
			return apperr.InvalidField("room_id", "must be a Matrix room id such as !abcdefgh:matrix.org (not an alias)")
		}
		if v.accessToken == "" || len(v.accessToken) > 1024 || strings.ContainsAny(v.accessToken, " \t\r\n") {
			return apperr.InvalidField("access_token", "must be the posting account's access token (no spaces, at most 1024 characters)")
		}
		return nil
	}
	u, err := s.guard.CheckURL("url", v.url)
	if err != nil {
		return err
	}
	if v.typ == Slack || v.typ == Discord {
		if err := s.checkChat(v.typ, u); err != nil {
			return err
		}
	}
	v.url = u.String()
	return nil
}

// checkChat holds a Slack or Discord URL to its provider's shape (see
// slackPath, discordPath): https on the provider's host and port 443
// (normalised away), the exact path shape, percent-encoding nowhere, no
// query (Discord: thread_id alone). A host on CHANNEL_ALLOW_HOSTS (a test
// receiver) is exempt from the host, scheme and port, not from the path.
func (s *Service) checkChat(typ Type, u *url.URL) error {
	hosts, path, msg := slackHosts, slackPath, "must be a Slack incoming webhook URL such as https://hooks.slack.com/services/T0123/B0456/abcdef (as Slack shows it)"
	query := slackQuery
	if typ == Discord {
		hosts, path, query, msg = discordHosts, discordPath, discordQuery, "must be a Discord webhook URL such as https://discord.com/api/webhooks/123456/abcdef (as Discord shows it)"
	}
	host := strings.ToLower(u.Hostname())
	if !s.guard.Allowed(host) {
		if u.Scheme != "https" || !hosts[host] || (u.Port() != "" && u.Port() != "443") {
			return apperr.InvalidField("url", "%s", msg)
		}
		u.Host = host // the default port, spelt or not, is the same URL
	}
	if u.RawPath != "" || !path.MatchString(u.Path) || !query.MatchString(u.RawQuery) || u.ForceQuery {
		return apperr.InvalidField("url", "%s", msg)
	}
	return nil
}

// followKeys checks that every target is one of the user's follows and
// returns their keys (nil for nil: all follows).
func (s *Service) followKeys(ctx context.Context, userID int64, ts []follow.Target) ([]string, error) {
	if ts == nil {
		return nil, nil
	}
	if len(ts) == 0 {
		return nil, apperr.InvalidField("follows", "is empty; leave it out (or null) to deliver every follow")
	}
	if len(ts) > 200 {
		return nil, apperr.InvalidField("follows", "lists more than 200 follows; leave it out to deliver every follow")
	}
	keys := make([]string, 0, len(ts))
	for i, t := range ts {
		if _, err := s.follows.Get(ctx, userID, t); err != nil {
			if errors.Is(err, database.ErrNotFound) {
				return nil, apperr.InvalidField(fmt.Sprintf("follows[%d]", i), "you do not follow %s; follow it first", t)
			}
			return nil, err
		}
		keys = append(keys, t.Key())
	}
	return keys, nil
}

// Create validates spec and adds a channel for userID. A webhook gets a new
// signing secret, returned in Channel.Secret (only here). The channel
// starts from now: papers matched before it are not sent. More than
// MaxPerUser channels is an apperr.Conflict; bad input an apperr.Invalid
// naming the field.
func (s *Service) Create(ctx context.Context, userID int64, spec Spec) (*Channel, error) {
	var v validated
	var err error
	if spec.Type == nil {
		return nil, apperr.InvalidField("type", "is required: webhook, slack, discord or matrix")
	}
	if v.typ, err = parseType(*spec.Type); err != nil {
		return nil, err
	}
	v.mode = Instant
	if spec.Mode != nil {
		if v.mode, err = parseMode(*spec.Mode); err != nil {
			return nil, err
		}
	}
	if spec.Enabled != nil && !*spec.Enabled {
		return nil, apperr.InvalidField("enabled", "a new channel starts enabled; disable it with PATCH")
	}
	catchUp, err := parseAfterPause(spec.AfterPause, true)
	if err != nil {
		return nil, err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	if v.typ == Matrix {
		if spec.URL != nil {
			return nil, apperr.InvalidField("url", "a Matrix channel takes homeserver, room_id and access_token instead")
		}
		v.url, v.roomID, v.accessToken = str(spec.Homeserver), str(spec.RoomID), str(spec.AccessToken)
	} else {
		if spec.Homeserver != nil || spec.RoomID != nil || spec.AccessToken != nil {
			return nil, apperr.InvalidField("homeserver", "only Matrix channels take homeserver, room_id and access_token")
		}
		v.url = str(spec.URL)
	}
	if err := s.check(&v); err != nil {
		return nil, err
	}
	if spec.Follows != nil {
		if v.follows, err = s.followKeys(ctx, userID, *spec.Follows); err != nil {
			return nil, err
		}
	}
	secret := ""
	if v.typ == Webhook {
		secret = NewSecret()
	}
	var id int64
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		// The user's row lock serialises concurrent creates, so the count
		// below cannot be passed by two at once.
		if err := account.LockUser(ctx, tx, userID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM channels WHERE user_id = $1`, userID).Scan(&n); err != nil {
			return err
		}
		if n >= MaxPerUser {
			return apperr.New(apperr.Conflict, "you have %d channels, the most allowed; delete one first", n)
		}
		next, err := s.nextWindow(ctx, tx, userID, v.mode)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			INSERT INTO channels (user_id, type, url, room_id, access_token, mode, follows, secret, next_at, watermark, pause_catch_up)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, `+catalog.HighSeqSQL+`, $10)
			RETURNING id`, userID, v.typ, s.seal.url(v.typ, userID, v.url), v.roomID, s.seal.seal(credToken, userID, v.accessToken), v.mode, v.follows,
			s.seal.seal(credSecret, userID, secret), next, catchUp).Scan(&id)
	})
	if err != nil {
		return nil, err
	}
	c, err := s.Get(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	c.Secret = secret
	return c, nil
}

const channelColumns = `id, user_id, type, url, room_id, access_token, mode, follows, secret, old_secret,
	coalesce(old_secret_until, 'epoch'), enabled, disabled_reason, coalesce(failing_since, 'epoch'), created_at, pause_catch_up`

// scanChannel reads a row of channelColumns, credentials opened.
func (s *Service) scanChannel(row pgx.Row) (*Channel, error) {
	var c Channel
	var keys []string
	var until, failing time.Time
	if err := row.Scan(&c.ID, &c.UserID, &c.Type, &c.URL, &c.RoomID, &c.accessToken, &c.Mode, &keys, &c.secret,
		&c.oldSecret, &until, &c.Enabled, &c.DisabledReason, &failing, &c.CreatedAt, &c.PauseCatchUp); err != nil {
		return nil, err
	}
	if keys != nil {
		c.Follows = make([]follow.Target, 0, len(keys))
		for _, k := range keys {
			if t, err := follow.TargetFromKey(k); err == nil {
				c.Follows = append(c.Follows, t)
			}
		}
	}
	if until.Unix() > 0 {
		c.RotatingUntil = until
	}
	if failing.Unix() > 0 {
		c.FailingSince = failing
	}
	s.seal.openChannel(&c)
	c.DisabledReason = c.redact(c.DisabledReason) // rows written before reasons were redacted
	return &c, nil
}

// Get returns the user's channel id, or an error wrapping
// database.ErrNotFound (also for another user's channel).
func (s *Service) Get(ctx context.Context, userID, id int64) (*Channel, error) {
	c, err := s.scanChannel(s.db.Pool.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, database.Missing("channel %d does not exist", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading channel %d: %w", id, err)
	}
	s.expireRotation(c)
	return c, nil
}

func (s *Service) expireRotation(c *Channel) {
	if !c.RotatingUntil.IsZero() && !s.now().Before(c.RotatingUntil) {
		c.RotatingUntil, c.oldSecret = time.Time{}, ""
	}
}

// List returns the user's channels, oldest first (at most MaxPerUser).
func (s *Service) List(ctx context.Context, userID int64) ([]*Channel, error) {
	// channels_user_idx.
	rows, err := s.db.Pool.Query(ctx, `SELECT `+channelColumns+` FROM channels WHERE user_id = $1 ORDER BY id`, userID)
	if err != nil {
		return nil, fmt.Errorf("listing channels of user %d: %w", userID, err)
	}
	defer rows.Close()
	out := []*Channel{}
	for rows.Next() {
		c, err := s.scanChannel(rows)
		if err != nil {
			return nil, err
		}
		s.expireRotation(c)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Update applies spec to the user's channel. The type cannot change.
// Enabling a disabled channel clears its failure record; changing the mode
// starts the new schedule from now without losing papers (the watermark
// stays).
func (s *Service) Update(ctx context.Context, userID, id int64, spec Spec) (*Channel, error) {
	cur, err := s.Get(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	if spec.Type != nil {
		if t, err := parseType(*spec.Type); err != nil || t != cur.Type {
			return nil, apperr.InvalidField("type", "cannot change; create a new channel of the other type")
		}
	}
	if cur.CredentialsUnreadable && cur.Type != Webhook && spec.URL == nil && spec.AccessToken == nil {
		field := "url"
		if cur.Type == Matrix {
			field = "access_token"
		}
		return nil, apperr.InvalidField(field, "this channel's stored credential cannot be read (the server's SECRET_KEY changed); send it again with this change")
	}
	v := validated{typ: cur.Type, url: cur.URL, roomID: cur.RoomID, accessToken: cur.accessToken, mode: cur.Mode}
	if cur.Follows != nil {
		for _, t := range cur.Follows {
			v.follows = append(v.follows, t.Key())
		}
	}
	set := func(dst *string, p *string) {
		if p != nil {
			*dst = strings.TrimSpace(*p)
		}
	}
	if cur.Type == Matrix {
		if spec.URL != nil {
			return nil, apperr.InvalidField("url", "a Matrix channel takes homeserver, room_id and access_token instead")
		}
		set(&v.url, spec.Homeserver)
		set(&v.roomID, spec.RoomID)
		set(&v.accessToken, spec.AccessToken)
	} else {
		if spec.Homeserver != nil || spec.RoomID != nil || spec.AccessToken != nil {
			return nil, apperr.InvalidField("homeserver", "only Matrix channels take homeserver, room_id and access_token")
		}
		set(&v.url, spec.URL)
	}
	if spec.URL != nil || spec.Homeserver != nil || spec.RoomID != nil || spec.AccessToken != nil {
		if err := s.check(&v); err != nil {
			return nil, err
		}
	}
	modeChanged := false
	if spec.Mode != nil {
		m, err := parseMode(*spec.Mode)
		if err != nil {
			return nil, err
		}
		modeChanged, v.mode = m != cur.Mode, m
	}
	if spec.Follows != nil {
		if v.follows, err = s.followKeys(ctx, userID, *spec.Follows); err != nil {
			return nil, err
		}
	}
	enabled := cur.Enabled
	if spec.Enabled != nil {
		enabled = *spec.Enabled
	}
	catchUp, err := parseAfterPause(spec.AfterPause, cur.PauseCatchUp)
	if err != nil {
		return nil, err
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		next, err := s.nextWindow(ctx, tx, userID, v.mode)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE channels SET url = $3, room_id = $4, access_token = $5, mode = $6, follows = $7,
				next_at = CASE WHEN $8 OR (next_at IS NULL) <> ($9::timestamptz IS NULL) THEN $9 ELSE next_at END,
				enabled = $10,
				disabled_reason = CASE WHEN $10 THEN '' ELSE disabled_reason END,
				failing_since = CASE WHEN $10 AND NOT enabled THEN NULL ELSE failing_since END,
				pause_catch_up = $11,
				updated_at = now()
			WHERE id = $1 AND user_id = $2`, id, userID, s.seal.url(v.typ, userID, v.url), v.roomID, s.seal.seal(credToken, userID, v.accessToken), v.mode, v.follows,
			modeChanged, next, enabled, catchUp)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating channel %d: %w", id, err)
	}
	return s.Get(ctx, userID, id)
}

// Delete removes the user's channel with its ledger; pending deliveries
// find it gone and stop.
func (s *Service) Delete(ctx context.Context, userID, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM channels WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fmt.Errorf("deleting channel %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return database.Missing("channel %d does not exist", id)
	}
	return nil
}

// RotateSecret gives the user's webhook channel a new signing secret,
// returned in Channel.Secret (only here). For RotationOverlap the previous
// secret signs alongside it (two signatures in webhook-signature), so the
// receiver can switch without losing a delivery.
func (s *Service) RotateSecret(ctx context.Context, userID, id int64) (*Channel, error) {
	secret := NewSecret()
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var typ Type
		var current string
		if err := tx.QueryRow(ctx, `SELECT type, secret FROM channels WHERE id = $1 AND user_id = $2 FOR UPDATE`, id, userID).Scan(&typ, &current); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return database.Missing("channel %d does not exist", id)
			}
			return err
		}
		if typ != Webhook {
			return apperr.New(apperr.Conflict, "only webhook channels have a signing secret; this one is %s", typ)
		}
		// The previous secret keeps signing during the overlap, unless it
		// no longer opens (sealed under another SECRET_KEY): then the new
		// one signs alone.
		old := current
		if _, err := s.seal.open(credSecret, userID, current); err != nil {
			old = ""
		}
		_, err := tx.Exec(ctx, `
			UPDATE channels SET old_secret = $5, old_secret_until = $3, secret = $4, updated_at = now()
			WHERE id = $1 AND user_id = $2`, id, userID, s.now().Add(RotationOverlap), s.seal.seal(credSecret, userID, secret), old)
		return err
	})
	if err != nil {
		return nil, err
	}
	c, err := s.Get(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	c.Secret = secret
	return c, nil
}

// signingSecrets are the secrets that sign now: the current one, and the
// previous one during a rotation.
func (c *Channel) signingSecrets() []string {
	if c.oldSecret != "" && !c.RotatingUntil.IsZero() {
		return []string{c.secret, c.oldSecret}
	}
	return []string{c.secret}
}
