package httpapi

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
// one starts with "ff" + a letter + "_", e.g. fft_ for feeds) and whatever
// follows /unsubscribe/, /confirm/ and /login/.
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
	return len(s) > 8 && s[0] == 'f' && s[1] == 'f' && s[2] >= 'a' && s[2] <= 'z' && s[3] == '_'
}

// tokenSuffix keeps a feed format extension (".atom") after a redacted token.
func tokenSuffix(s string) string {
	if i := strings.LastIndexByte(s, '.'); i > 0 {
		return s[i:]
	}
	return ""
}

// clientIP is the peer address without port. X-Forwarded-For is not trusted:
// put a proxy's real-IP handling in front if one is used.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// basicAuth guards next with one user/password pair, compared in constant
// time.
func basicAuth(next http.Handler, user, password, realm string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		uOK := subtle.ConstantTimeCompare([]byte(u), []byte(user)) == 1
		pOK := subtle.ConstantTimeCompare([]byte(p), []byte(password)) == 1
		if !ok || !uOK || !pOK {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Basic realm=%q, charset="UTF-8"`, realm))
			writeProblem(w, Problem{Type: ProblemType("unauthorized"), Title: "Unauthorized", Status: http.StatusUnauthorized,
				Detail: "the job UI needs the admin credential (ADMIN_USER / ADMIN_PASSWORD)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
