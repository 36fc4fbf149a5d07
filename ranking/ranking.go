// Package ranking puts a user's best papers first: it keeps what each user
// said of papers (feedback: "more like this", "less like this", saved),
// trains and stores each user's ranking model (package relevance: a linear
// model over a paper's words, authors, categories and institutions, learned
// from the user's follows and feedback), and scores and explains papers for
// users in batches, for digests, instant alerts, push channels and the
// ranked feeds.
//
// Training is a job: a change of the user's feedback or follows counts one
// change in ranking_models (in the change's transaction) and queues a job
// (Enqueuer) that retrains from a snapshot and stores the model with the
// changes it saw. A job that finds the model already trained past its
// change does nothing, so duplicate and late jobs are cheap, and no change
// is lost: a snapshot that sees a change's count sees the change. A user
// with no model yet (cold start) gets one trained from their follows alone
// the first time a surface ranks for them.
//
// Words are weighted with the document frequencies of a corpus of the
// newest stored papers that each process keeps (rebuilt every few hours),
// and a paper's features (relevance.Vector) are computed once per process
// and cached: many users rank the same day's papers.
//
// Tables: feedback, ranking_models.
package ranking

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/database"
	"followfeed/match"
	"followfeed/relevance"
)

// Enqueuer queues the jobs of package ranking inside the caller's
// transaction (package worker implements it).
type Enqueuer interface {
	// EnqueueTrain queues a retraining of each user's model: with after
	// 0 at once, a job per call (a feedback click, whose model the user
	// expects within the second); with after > 0 that much later, and
	// coalesced: one waiting job per user takes every change queued
	// before it runs (follows made and removed in a burst train once).
	EnqueueTrain(ctx context.Context, tx pgx.Tx, userIDs []int64, after time.Duration) error
}

// Config is what a Service needs.
type Config struct {
	DB       *database.DB
	Enqueuer Enqueuer
	// Matcher finds the followed persons' own papers (cold start's
	// positive examples) and loads papers.
	Matcher *match.Service
	Logger  *slog.Logger
	// CorpusPapers is how many of the newest stored papers the word
	// frequencies come from (0: DefaultCorpusPapers); CorpusMaxAge how old
	// the corpus may grow before it is rebuilt (0: DefaultCorpusMaxAge).
	CorpusPapers int
	CorpusMaxAge time.Duration
	// Vectors is how many papers' features a process keeps (0:
	// DefaultVectors).
	Vectors int
	// Params are the model's parameters (zero: relevance.DefaultParams).
	Params *relevance.Params
}

// Defaults of Config.
const (
	DefaultCorpusPapers = 20_000
	DefaultCorpusMaxAge = 6 * time.Hour
	DefaultVectors      = 20_000
)

// Service keeps feedback and models and ranks papers. It is safe for
// concurrent use.
type Service struct {
	db      *database.DB
	enq     Enqueuer
	matcher *match.Service
	logger  *slog.Logger
	params  relevance.Params
	texts   *texts
	// lexicons is the lexicon the last batches were scored through,
	// which the next ones reuse when it holds their papers (lexicon.go).
	lexicons lexicons
}

// New returns the service of c.
func New(c Config) *Service {
	p := relevance.DefaultParams()
	if c.Params != nil {
		p = *c.Params
	}
	if c.CorpusPapers <= 0 {
		c.CorpusPapers = DefaultCorpusPapers
	}
	if c.CorpusMaxAge <= 0 {
		c.CorpusMaxAge = DefaultCorpusMaxAge
	}
	if c.Vectors <= 0 {
		c.Vectors = DefaultVectors
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{db: c.DB, enq: c.Enqueuer, matcher: c.Matcher, logger: logger, params: p,
		texts: newTexts(c.DB, p, c.CorpusPapers, c.CorpusMaxAge, c.Vectors)}
}
