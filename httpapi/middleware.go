package httpapi

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"followfeed/apperr"
)

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush supports streaming handlers.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack supports handlers that take over the connection.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := s.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("hijack not supported")
}

// httpMetrics are the Prometheus series of the HTTP layer.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "followfeed_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "followfeed_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// routeOf is the matched ServeMux pattern, a bounded label for metrics and
// logs; unmatched requests share one label.
func routeOf(r *http.Request) string {
	if r.Pattern == "" {
		return "unmatched"
	}
	return r.Pattern
}

// observe wraps next with access logging, metrics and panic recovery. The
// logged path has every secret token redacted (see redactPath); the query
// string is never logged.
func observe(next http.Handler, logger *slog.Logger, m *httpMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("X-Content-Type-Options", "nosniff")
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logger.ErrorContext(r.Context(), "panic serving request", "route", routeOf(r), "panic", fmt.Sprint(v))
				if rec.status == 0 {
					writeProblem(rec, problemFor(errors.New("panic")))
				}
			}
			elapsed := time.Since(start)
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			route := routeOf(r)
			m.requests.WithLabelValues(route, r.Method, fmt.Sprint(status)).Inc()
			m.duration.WithLabelValues(route, r.Method).Observe(elapsed.Seconds())
			level := slog.LevelInfo
			if route == "GET /healthz" || route == "GET /readyz" || route == "GET /metrics" {
				level = slog.LevelDebug
			}
			logger.Log(r.Context(), level, "http",
				"method", r.Method, "path", redactPath(r.URL.Path), "route", route,
				"status", status, "bytes", rec.bytes, "duration_ms", float64(elapsed.Microseconds())/1000,
				"remote", clientIP(r))
		}()
		next.ServeHTTP(rec, r)
	})
}

// redactPath hides secrets that travel in URL paths: our own tokens (every
// one starts with "ff" + a letter + "_": fft_ for feeds, ffl_ for signed
// links) and whatever follows /unsubscribe/, /confirm/, /login/ and
// /preferences/. A token segment is replaced whole; only a feed format
// suffix (".atom") is kept, never the part after a dot of a signed link,
// which is its MAC.
func redactPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if isOwnToken(s) {
			segs[i] = s[:4] + "REDACTED" + tokenSuffix(s)
			continue
		}
		if i > 0 && (segs[i-1] == "unsubscribe" || segs[i-1] == "confirm" || segs[i-1] == "login" || segs[i-1] == "preferences") && s != "" {
			segs[i] = "REDACTED"
		}
	}
	return strings.Join(segs, "/")
}

func isOwnToken(s string) bool {
	return len(s) >= 4 && s[0] == 'f' && s[1] == 'f' && s[2] >= 'a' && s[2] <= 'z' && s[3] == '_'
}

// tokenSuffix keeps a feed format extension (".atom") after a redacted
// feed token; anything else after a dot is part of the secret.
func tokenSuffix(s string) string {
	if !strings.HasPrefix(s, "fft_") {
		return ""
	}
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return ""
	}
	switch ext := s[i:]; ext {
	case ".atom", ".rss", ".json", ".opml":
		return ext
	}
	return ""
}

// clientIP is the peer address without port. X-Forwarded-For is not trusted:
// put a proxy's real-IP handling in front if one is used.
// clientIP is the request's client address: the peer's, which forwardedFor
// has replaced with the client's when the peer is a trusted proxy.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// forwardedFor makes r.RemoteAddr the client's address when the request
// comes through trusted reverse proxies: X-Forwarded-For is read from the
// right (each proxy appends the address it received from), past every
// trusted address, and the first other one is the client. A peer that is
// not trusted is the client, whatever the header says (anyone can send
// it), and so is a trusted peer whose header is missing or unparsable.
func forwardedFor(next http.Handler, trusted []netip.Prefix) http.Handler {
	if len(trusted) == 0 {
		return next
	}
	isTrusted := func(a netip.Addr) bool {
		a = a.Unmap()
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !isTrusted(peer.Addr()) {
			next.ServeHTTP(w, r)
			return
		}
		var hops []string
		for _, h := range r.Header.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(h, ",")...)
		}
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed hop: believe nothing further left
			}
			if isTrusted(a) && i > 0 {
				continue
			}
			r2 := r.WithContext(r.Context()) // a shallow copy
			r2.RemoteAddr = netip.AddrPortFrom(a.Unmap(), 0).String()
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminGuard protects the River UI: one user/password pair (compared in
// constant time) with failed attempts limited per signed-in browser or,
// for others, per address and overall (signIns; while a key is over its
// limit nothing it sends is checked, so guessing gains nothing, and a
// guesser cannot lock out a browser that signed in before), unsafe
// methods refused from other origins (http.CrossOriginProtection:
// Sec-Fetch-Site, else Origin against Host), its API's writes accepted as
// application/json only (a cross-site form cannot send that), and its
// pages never framed.
func adminGuard(next http.Handler, realm string, signIns *adminSignIns) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, Problem{Type: ProblemType(apperr.Forbidden), Title: titles[apperr.Forbidden], Status: http.StatusForbidden,
			Detail: "cross-origin requests that change jobs are refused; use the job UI itself", Instance: r.URL.Path})
	}))
	guarded := cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if unsafeMethod(r.Method) && strings.HasPrefix(r.URL.Path, AdminPrefix+"/api/") {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeProblem(w, Problem{Type: ProblemType(unsupportedMediaType), Title: "Unsupported media type", Status: http.StatusUnsupportedMediaType,
					Detail: "the job UI's API accepts application/json bodies only", Instance: r.URL.Path})
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		ip, device := clientIP(r), signIns.device(r)
		if blocked, retry, why := signIns.blocked(device, ip); blocked {
			rateLimited(w, r, retry, why)
			return
		}
		u, p, ok := r.BasicAuth()
		uOK := subtle.ConstantTimeCompare([]byte(u), []byte(signIns.user)) == 1
		pOK := subtle.ConstantTimeCompare([]byte(p), []byte(signIns.password)) == 1
		if !ok || !uOK || !pOK {
			if ok { // a failed attempt, not a first visit without credentials
				signIns.failed(device, ip)
			}
			h.Set("WWW-Authenticate", fmt.Sprintf(`Basic realm=%q, charset="UTF-8"`, realm))
			writeProblem(w, Problem{Type: ProblemType("unauthorized"), Title: "Unauthorized", Status: http.StatusUnauthorized,
				Detail: "the job UI needs the admin credential (ADMIN_USER / ADMIN_PASSWORD)"})
			return
		}
		if device == "" {
			signIns.issueDevice(w)
		}
		guarded.ServeHTTP(w, r)
	})
}

// unsupportedMediaType is the problem type of a 415: an HTTP matter.
const unsupportedMediaType apperr.Code = "unsupported-media-type"

// unsafeMethod reports whether m may change state (RFC 9110 section 9.2.1).
func unsafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}
