package soak

import (
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"followfeed/internal/fake/oaipmh"
	"followfeed/internal/fake/openalex"
)

// growingRepo is the record list of a fake OAI-PMH repository that grows
// while a scenario runs (oaipmh.Repository calls records for every run).
type growingRepo struct {
	prefix, day string
	cats        []string

	mu   sync.Mutex
	recs []oaipmh.Record
}

// records returns the records so far.
func (g *growingRepo) records() []oaipmh.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.recs)
}

// grow adds n records (oaipmh.MakeRecords, numbered on).
func (g *growingRepo) grow(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recs = append(g.recs, oaipmh.MakeRecords(g.prefix, len(g.recs), n, g.cats, g.day)...)
}

// upstreams are the fakes a scenario's service talks to: a growing arXiv
// OAI-PMH repository (arXivRaw, today's datestamp, 50 records a page), an
// OpenAlex that knows none of its papers, a recording SMTP sink and a
// webhook receiver.
type upstreams struct {
	repo  *growingRepo
	sink  *mailSink
	hooks *hookSink
	// hookURL is the receiver's base URL; env the service's settings
	// that point at the fakes.
	hookURL string
	env     []string
	closers []func()
}

// startUpstreams starts the fakes: the repository with n records ids
// prefix.00001… over cats, the sink holding each reply smtpDelay.
func startUpstreams(prefix string, n int, cats []string, smtpDelay time.Duration) (*upstreams, error) {
	u := &upstreams{repo: &growingRepo{prefix: prefix, day: time.Now().UTC().Format(time.DateOnly), cats: cats}, hooks: newHookSink()}
	u.repo.grow(n)
	oai := httptest.NewServer(oaipmh.New(u.repo.records, 50))
	oa := httptest.NewServer(openalex.New(nil))
	hooks := httptest.NewServer(u.hooks)
	u.closers = append(u.closers, oai.Close, oa.Close, hooks.Close)
	sink, smtpURL, stopSink, err := startSink(smtpDelay)
	if err != nil {
		u.close()
		return nil, err
	}
	u.sink, u.hookURL = sink, hooks.URL
	u.closers = append(u.closers, stopSink)
	u.env = []string{"ARXIV_OAI_URL=" + oai.URL, "ARXIV_OAI_FORMAT=arXivRaw", "ARXIV_SETS=cs", "OPENALEX_URL=" + oa.URL,
		"SMTP_URL=" + smtpURL, "CHANNEL_ALLOW_HOSTS=127.0.0.1"}
	return u, nil
}

// close stops every fake.
func (u *upstreams) close() {
	for _, c := range u.closers {
		c()
	}
}
