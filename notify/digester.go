package notify

import (
	"context"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/arxivcal"
	"followfeed/database"
	"followfeed/mail"
	"followfeed/match"
	"followfeed/paper"
)

// Caps of one digest.
const (
	MaxPerGroup = 20
	// MaxPerDigest keeps a newest-first digest, with each paper's three
	// feedback links, under the 102 KB at which Gmail clips a message
	// (TestDigestSizeWithFeedbackLinks: 88 papers of real titles fit).
	MaxPerDigest = 80
	// candidates is how many of a window's newest papers are grouped; any
	// beyond count in the digest's "and N more".
	candidates = 250
	// catchUpCandidates is candidates for a catch-up digest after a
	// pause, whose window spans the days away: its best are ranked from
	// this many of the newest.
	catchUpCandidates = 1000
)

// DigestEnqueuer queues digest jobs inside the caller's transaction.
type DigestEnqueuer interface {
	// EnqueueDigests queues the send jobs of new ledger rows.
	EnqueueDigests(ctx context.Context, tx pgx.Tx, digestIDs []int64) error
	// EnqueueInstant queues the instant-alert jobs of users, due at at.
	EnqueueInstant(ctx context.Context, tx pgx.Tx, userIDs []int64, at time.Time) error
	// EnqueueDigestRetry queues a send job for the one ledger row
	// digestID, due at at: the retry of a digest that met a temporary
	// failure outside any job (SendNow), which then retries like any send
	// job and fails the row after its last attempt.
	EnqueueDigestRetry(ctx context.Context, tx pgx.Tx, digestID int64, at time.Time) error
}

// OpenedChoice says which of users asked that the papers they open from
// a mail be marked read (inbox.Service implements it).
type OpenedChoice interface {
	RemembersOpened(ctx context.Context, users []int64) (map[int64]bool, error)
}

// Ranker ranks users' papers for best-first digests and instant alerts
// (package ranking's Service, through an adapter in package app).
type Ranker interface {
	// Rank scores, for each user of want, the papers (papers.id) want
	// lists; have may hold papers already loaded (nil: the ranker loads
	// what it needs).
	Rank(ctx context.Context, want map[int64][]int64, have map[int64]*paper.Paper) (RankedBatch, error)
}

// RankedBatch is one Rank's answer.
type RankedBatch interface {
	// Order sorts ids (papers.id) best first for userID, ties in the
	// order given.
	Order(userID int64, ids []int64)
	// Why says why each of paperIDs ranks for userID (out[i] is
	// paperIDs[i]'s), the strongest reason first ("with your co-author
	// Ann One", "like 3 papers you marked"); nil for a paper that was not
	// ranked. A digest asks once for all the papers it shows.
	Why(userID int64, paperIDs []int64) [][]string
}

// The values of the feedback links a digest carries per paper: package
// ranking's feedback values (ranking.More, Less, Saved), which
// account.Addresses.FeedbackURL signs and the link's page records.
const (
	feedbackMore  = "more"
	feedbackLess  = "less"
	feedbackSaved = "saved"
)

// InstantDelay is how long instant alerts wait to gather a burst of matches
// into one mail.
const InstantDelay = 10 * time.Minute

// HarvestHealth tells digests whether the arXiv harvest is behind
// (harvest.Health implements it).
type HarvestHealth interface {
	// HarvestBehind returns a sentence saying how the harvest is behind,
	// "" when it is current.
	HarvestBehind(ctx context.Context) (string, error)
}

// Links builds the absolute URLs a mail carries.
type Links interface {
	// FeedURLs are the users' private Atom feeds.
	FeedURLs(ctx context.Context, userIDs []int64) (map[int64]string, error)
}

// Digester schedules, builds and sends digests (the address they go to is
// account's: see account.Addresses), and keeps the delivery
// ledger (table digests): one row per (user, period), state pending →
// sending → sent | failed | skipped | unknown, with the SMTP reply.
//
// Delivery policy (at most once): a row is marked "sending" and committed
// right before the SMTP transaction. The transaction itself is never
// abandoned half-way by a cancelled job (see mail.SMTPSender). If the process
// dies between the server's reply and the ledger commit, or the connection
// breaks after the whole body was sent, the row ends "unknown" and the
// digest is not sent again: a duplicate is the worse failure for a digest
// people keep, and the papers stay in the user's feed. 4xx replies and network
// errors before the body put the row back to "pending" and a River job
// retries it with backoff, the same row and Message-ID: the send job that
// carries it, or, for a digest sent outside any job (SendNow), a send job
// queued for it in the transaction that records the failure. A 5xx on the
// recipient fails the row and suppresses the address. Every outcome (sent,
// skipped, failed, unknown, will be retried) is logged once, at INFO or,
// for the last three, WARN, with the user, the digest and the SMTP reply.
type Digester struct {
	db      *database.DB
	matcher *match.Service
	sender  mail.Sender
	enq     DigestEnqueuer
	links   Links
	addrs   *account.Addresses
	from    *netmail.Address
	base    *url.URL
	mailto  string
	logger  *slog.Logger
	now     func() time.Time
	cal     *arxivcal.Calendar
	health  HarvestHealth
	// retention is how long PruneLedger keeps a final row.
	retention time.Duration
	ranker    Ranker
	// onPauseEnd is told of users whose pause ended (nil: nobody).
	onPauseEnd PauseHook
	opened     OpenedChoice
	// parts keeps papers' renderings across batches (partsCache).
	parts *partsCache
}

// DigesterConfig assembles a Digester.
type DigesterConfig struct {
	DB       *database.DB
	Matcher  *match.Service
	Sender   mail.Sender
	Enqueuer DigestEnqueuer
	Links    Links
	// Addresses make the manage and unsubscribe links and suppress an
	// address that bounced.
	Addresses *account.Addresses
	From      *netmail.Address
	BaseURL   *url.URL // PUBLIC_URL
	Mailto    string   // MAIL_UNSUBSCRIBE_MAILTO
	Logger    *slog.Logger
	Now       func() time.Time
	// Calendar, when set, makes an empty digest whose window holds no
	// arXiv announcement say so (and be skipped, by the user's
	// preference).
	Calendar *arxivcal.Calendar
	// Health, when set, makes a digest say when the harvest is behind.
	Health HarvestHealth
	// LedgerRetention is how long PruneLedger keeps a ledger row
	// (DIGEST_RETENTION): 0 is DefaultLedgerRetention, less than
	// MinLedgerRetention is MinLedgerRetention.
	LedgerRetention time.Duration
	// Ranker, when set, puts the papers of users who chose OrderBest
	// best first, within their budget; without it every digest is newest
	// first.
	Ranker Ranker
	// OnPauseEnd, when set, is told in the scheduler's transaction of
	// users whose pause ended (package channels: push channels catch
	// up or skip what they missed).
	OnPauseEnd PauseHook
	// Opened, when set, says which users turned "remember what I opened"
	// on: their digests' papers get an open link (FeedbackLinks.Open).
	Opened OpenedChoice
}

// NewDigester returns a Digester.
func NewDigester(c DigesterConfig) *Digester {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LedgerRetention == 0 {
		c.LedgerRetention = DefaultLedgerRetention
	}
	return &Digester{db: c.DB, matcher: c.Matcher, sender: c.Sender, enq: c.Enqueuer, links: c.Links,
		addrs: c.Addresses, from: c.From, base: c.BaseURL, mailto: c.Mailto, logger: c.Logger, now: c.Now,
		cal: c.Calendar, health: c.Health, retention: max(c.LedgerRetention, MinLedgerRetention), ranker: c.Ranker,
		onPauseEnd: c.OnPauseEnd, opened: c.Opened, parts: newPartsCache(partsCacheSize)}
}
