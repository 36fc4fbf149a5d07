package oaipmh

import (
	"net/http"
	"slices"
	"sync"
)

// Replay serves recorded OAI-PMH responses: First for a request without a
// resumption token (a new run), Next for one with a token. Set the fields
// before it serves; it records every request's query.
type Replay struct {
	// First answers a request without a resumptionToken (it should carry
	// one, for the harvester to come back with).
	First []byte
	// Next answers a request with a resumptionToken.
	Next []byte
	// Expired answers the first resumed request once ExpireNextToken was
	// called (a recorded badResumptionToken error).
	Expired []byte
	// Fail, when set, is given the writer instead of Next; when it returns
	// true it has answered (a fault), otherwise Next is served.
	Fail func(w http.ResponseWriter) bool
	// Identifiers answers every ListIdentifiers request; nil answers an
	// OAI-PMH badVerb error. Those requests are not in Queries.
	Identifiers []byte

	mu       sync.Mutex
	requests []string
	expire   bool
}

// ExpireNextToken makes the next resumed request get Expired instead of
// Next, once.
func (s *Replay) ExpireNextToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire = true
}

// ServeHTTP implements http.Handler.
func (s *Replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("verb") == "ListIdentifiers" {
		if s.Identifiers == nil {
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2015-01-06T12:00:00Z</responseDate><request>http://export.arxiv.org/oai2</request><error code="badVerb">ListIdentifiers is not recorded</error></OAI-PMH>`))
			return
		}
		_, _ = w.Write(s.Identifiers)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.RawQuery)
	fail, expire := s.Fail, s.expire
	s.mu.Unlock()
	q := r.URL.Query()
	switch {
	case q.Get("resumptionToken") == "":
		_, _ = w.Write(s.First)
	case expire:
		s.mu.Lock()
		s.expire = false
		s.mu.Unlock()
		_, _ = w.Write(s.Expired)
	case fail != nil && fail(w):
	default:
		_, _ = w.Write(s.Next)
	}
}

// Queries returns the raw query of every request so far, in order.
func (s *Replay) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}
