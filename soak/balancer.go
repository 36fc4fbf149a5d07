package soak

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
)

// slot is one place a followfeed process runs in the rolling-upgrade
// scenario: an api at a fixed address (its port survives restarts, as a
// load balancer's backend does) or a worker, with the process there now
// and the release it runs.
type slot struct {
	name string // "api 1", "worker 2", …
	mode string // "api" or "worker"
	port int    // fixed for an api, 0 for a worker
	c    *client

	mu      sync.Mutex
	p       *proc
	release string
}

// now returns the process in the slot and its release.
func (s *slot) now() (*proc, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p, s.release
}

// balancer spreads requests over the api slots in its rotation in turn, as
// a load balancer in front of them does. It knows nothing of restarts: a
// request is resent to the next api only when the first one certainly did
// not take it (the connection was refused: the process is gone or not yet
// listening) or, for the idempotent methods HTTP lets a proxy repeat (GET,
// HEAD, PUT, DELETE), when the connection broke before any response
// (nginx's proxy_next_upstream error). Anything else reaches the client: a
// 503, a timeout, a broken POST.
type balancer struct {
	mu    sync.Mutex
	slots []*slot
	next  int
}

func (b *balancer) add(s *slot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.slots = append(b.slots, s)
}

func (b *balancer) remove(s *slot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.slots {
		if x == s {
			b.slots = append(b.slots[:i:i], b.slots[i+1:]...)
			return
		}
	}
}

// pick returns the next slot in turn and the one after it.
func (b *balancer) pick() (*slot, *slot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.next % len(b.slots)
	b.next++
	return b.slots[i], b.slots[(i+1)%len(b.slots)]
}

// lbReply is a reply through the balancer.
type lbReply struct {
	reply
	slot    *slot  // the api that answered (or was tried last)
	release string // the release of the process that answered
	retried string // why the request went to a second api ("" if it did not)
}

// Why a request was resent to another api.
const (
	retryRefused = "connection refused"
	retryBroken  = "connection broken before a response (idempotent method)"
)

// do sends one request through the balancer; body is nil, []byte or a
// value to encode as JSON (once, so a resend carries the same bytes).
func (b *balancer) do(ctx context.Context, method, path, token string, body any, hdr http.Header) lbReply {
	if body != nil {
		if _, raw := body.([]byte); !raw {
			data, err := json.Marshal(body)
			if err != nil {
				return lbReply{reply: reply{err: err}}
			}
			body = data
		}
	}
	first, second := b.pick()
	r := send(ctx, first, method, path, token, body, hdr)
	if r.err == nil || second == first {
		return r
	}
	why := retryReason(method, r.err)
	if why == "" {
		return r
	}
	r2 := send(ctx, second, method, path, token, body, hdr)
	r2.retried = why
	r2.dur += r.dur
	return r2
}

func send(ctx context.Context, s *slot, method, path, token string, body any, hdr http.Header) lbReply {
	_, rel := s.now()
	return lbReply{reply: s.c.do(ctx, method, path, token, body, hdr), slot: s, release: rel}
}

// retryReason says why a failed request may go to another api, or "" when
// it may not.
func retryReason(method string, err error) string {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return retryRefused
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
	default:
		return ""
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "server closed idle connection") {
		return retryBroken
	}
	return ""
}
