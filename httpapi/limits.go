package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"followfeed/apperr"
)

// Limiter is a set of token buckets keyed by client (IP, user): each key may
// make Rate requests per second on average with bursts of Burst. Buckets idle
// for ten minutes are forgotten, so memory stays bounded by active clients.
// A nil *Limiter allows everything.
type Limiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewLimiter returns a limiter of perSecond requests per key, or nil (no
// limit) when perSecond <= 0.
func NewLimiter(perSecond float64, burst int) *Limiter {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &Limiter{rate: rate.Limit(perSecond), burst: burst, buckets: map[string]*bucket{}}
}

// Allow takes one token for key. When none is left it returns false and how
// long until one will be.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > 10*time.Minute {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	l.mu.Unlock()
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// Blocked reports, without taking a token, whether key has none left and
// how long until it will.
func (l *Limiter) Blocked(key string) (bool, time.Duration) {
	if l == nil {
		return false, 0
	}
	now := time.Now()
	l.mu.Lock()
	b, ok := l.buckets[key]
	l.mu.Unlock()
	if !ok {
		return false, 0
	}
	if t := b.lim.TokensAt(now); t < 1 {
		return true, time.Duration((1 - t) / float64(l.rate) * float64(time.Second))
	}
	return false, 0
}

// cors answers preflight requests and adds CORS headers for the host
// origins, on the JSON API only. Other origins get no CORS headers, so
// browsers refuse to hand them responses; their preflights are a 403.
func cors(next http.Handler, origins []string) http.Handler {
	allowed := make([]string, len(origins))
	for i, o := range origins {
		allowed[i] = strings.TrimSuffix(strings.ToLower(o), "/")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !slices.Contains(allowed, strings.ToLower(origin)) {
			if preflight {
				// A plain refusal without CORS headers: the browser then
				// blocks the real request, and the page's developer reads why.
				writeProblem(w, Problem{Type: ProblemType(apperr.Forbidden), Title: titles[apperr.Forbidden], Status: http.StatusForbidden,
					Detail:   "this origin may not call the API from a browser; the operator lists host origins in CORS_ORIGINS",
					Instance: r.URL.Path})
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "Retry-After, Location, ETag")
		if preflight {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, PUT, PATCH, POST, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Max-Age", "86400") // browsers cap this (Chromium: 2 h)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Body caps of the routes that take a body (the route tables' limitBody).
const (
	// maxFormBody bounds a settings or sign-in form.
	maxFormBody = 16 << 10
	// maxLinkBody bounds the body of a mail link's POST (RFC 8058's
	// one-click "List-Unsubscribe=One-Click", or none).
	maxLinkBody = 4 << 10
	// maxAdminBody bounds a request of the job UI's API.
	maxAdminBody = 1 << 20
)

// limitBody caps the request body of a route at max bytes. A request
// whose Content-Length says more is answered 413 (a problem document)
// before anything else of the route runs: no credential is checked and no
// byte is read. Any other body is read through http.MaxBytesReader: a
// chunked body that goes on past max fails the handler's read with an
// *http.MaxBytesError, which problemFor answers 413 too (handlers keep it
// as their error's cause). Every route of the tables whose method can
// carry a body (POST, PUT, PATCH) has it outermost, which
// TestEveryBodyTakingRouteAnswers413 holds.
func limitBody(max int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			p := bodyTooLarge(max)
			p.Instance = redactPath(r.URL.Path)
			writeProblem(w, p)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}

// bodyTooLarge is the 413 of a body over max bytes.
func bodyTooLarge(max int64) Problem {
	return Problem{Type: ProblemType(apperr.TooLarge), Title: titles[apperr.TooLarge], Status: http.StatusRequestEntityTooLarge,
		Detail: "the request body exceeds " + byteSize(max) + "; send less (a batch: split it into several requests)"}
}

// byteSize writes n as MiB or KiB when it is a whole number of them.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
