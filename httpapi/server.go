// Package httpapi is followfeed's HTTP surface: the JSON API under /v1, feeds,
// pages, and the operations endpoints, each a route table in routes.go. It
// translates HTTP to calls of the domain packages and their errors back to
// statuses (problem.go); it holds no business rules of its own.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"followfeed/apperr"
	"followfeed/internal/rawerrors"
)

// AdminPrefix is where the River UI is mounted.
const AdminPrefix = "/admin/jobs"

// Options assemble a handler. Only Logger is required; a nil API serves the
// operations endpoints alone (the worker process).
type Options struct {
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// Queried are the metrics read from the database at scrape time
	// (River's job counts, the sources' health): served beside
	// Registry's, gathered at most once a second, so scrapes cost at most
	// one round of those queries a second.
	Queried prometheus.Gatherer
	// MetricsApart leaves GET /metrics out of this handler: it is served
	// on METRICS_ADDR instead (NewMetricsHandler).
	MetricsApart bool
	// Ready reports whether the process can serve: database reachable and
	// schema current.
	Ready func(context.Context) error
	// Admin is the River UI handler, mounted under AdminPrefix behind basic
	// auth; nil when disabled.
	Admin         http.Handler
	AdminUser     string
	AdminPassword string
	// SecretKey (SECRET_KEY) signs the job UI's device cookies, which
	// spare a browser that signed in before from the limit on others'
	// failed sign-ins; nil: a key of this process only.
	SecretKey []byte
	// SecureCookies marks those cookies Secure (PUBLIC_URL is https).
	SecureCookies bool
	// Routes registers the product routes on the mux (Product.Register:
	// the API, feeds and pages).
	Routes func(mux *http.ServeMux)
	// CORSOrigins are the host origins allowed to call /v1 from browsers.
	CORSOrigins []string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (config TRUSTED_PROXIES); per-address limits, the job UI's
	// failed sign-ins and logs then see each client, not the proxy.
	TrustedProxies []netip.Prefix
}

// methodNotAllowed is the problem type of a 405: an HTTP matter, not a
// domain error.
const methodNotAllowed apperr.Code = "method-not-allowed"

// muxProblems answers what the mux itself refuses (no such route: 404; a
// path served for other methods only: 405 with Allow; a request for "*",
// which names no resource: 400) as problem+json, like every other error,
// instead of the mux's plain text or empty body.
//
// What net/http's server refuses before any handler runs (a request it
// cannot parse, 400; a header block over MaxHeaderBytes, 431; a
// Transfer-Encoding other than chunked, 501; an HTTP version other than
// 1.x, 505) never reaches this handler: http.Server has no hook for it and
// writes its plain text to the connection, which Listener's connections
// answer as problem+json instead. TestEveryOwnBadRequestIsAProblem holds
// both.
func muxProblems(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.RequestURI == "*" { // not OPTIONS, which net/http answers itself
			w.Header().Set("Connection", "close") // as the mux does
			writeProblem(w, Problem{Type: ProblemType(apperr.BadRequest), Title: titles[apperr.BadRequest], Status: http.StatusBadRequest,
				Detail: `The request target "*" names no resource; ask for a path such as /v1/status.`})
			return
		}
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(&refusal{ResponseWriter: w, r: r, page: pagePath(r)}, r)
	})
}

// pagePath says whether r is a browser's GET of an address under the
// settings pages or the inbox, where a reader who mistyped it or followed
// an old link is answered with a page, not a problem document.
func pagePath(r *http.Request) bool {
	p := r.URL.Path
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(strings.HasPrefix(p, "/settings/") || strings.HasPrefix(p, "/inbox/"))
}

// refusal rewrites the mux's 404 and 405 answers (a page, for a
// pagePath); anything else (the mux's redirects to a cleaned path) passes
// through.
type refusal struct {
	http.ResponseWriter
	r        *http.Request
	page     bool
	replaced bool
}

func (x *refusal) WriteHeader(code int) {
	if x.replaced {
		return
	}
	switch {
	case x.page && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed):
		// A GET of a form's address (POST only) is a page that is not
		// there either, for the reader.
		x.replaced = true
		renderPage(x.ResponseWriter, x.r, slog.Default(), code, "message.html", page{Title: "Page not found",
			Lines: []string{"There is no page at this address: the link may be mistyped or out of date."},
			Link:  "/settings", LinkText: "Your settings"})
	case code == http.StatusNotFound:
		x.replaced = true
		writeProblem(x.ResponseWriter, Problem{Type: ProblemType(apperr.NotFound), Title: titles[apperr.NotFound], Status: code,
			Detail: "There is nothing at this address; /openapi.json lists the routes.", Instance: redactPath(x.r.URL.Path)})
	case code == http.StatusMethodNotAllowed:
		x.replaced = true
		writeProblem(x.ResponseWriter, Problem{Type: ProblemType(methodNotAllowed), Title: "Method not allowed", Status: code,
			Detail:   fmt.Sprintf("This address does not accept %s; it accepts %s.", x.r.Method, x.Header().Get("Allow")),
			Instance: redactPath(x.r.URL.Path)})
	default:
		x.ResponseWriter.WriteHeader(code)
	}
}

func (x *refusal) Write(p []byte) (int, error) {
	if x.replaced {
		return len(p), nil // the mux's plain-text body
	}
	return x.ResponseWriter.Write(p)
}

func readyHandler(ready func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ready == nil {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			w.Header().Set("Retry-After", "5")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

// maxHeaderBytes bounds a request's line and headers (net/http reads 4 KiB
// more before its 431).
const maxHeaderBytes = 32 << 10

// Listener wraps ln, the listener a NewServer serves, so that what
// net/http's server refuses before any handler runs (a request it cannot
// parse, 400; headers over maxHeaderBytes, 431; a Transfer-Encoding other
// than chunked, 501; an HTTP version other than 1.x, 505) is answered as
// problem+json like every other error, not as net/http's plain text (see
// internal/rawerrors).
func Listener(ln net.Listener) net.Listener {
	return rawerrors.Listener(ln, rawerrors.Config{
		Type:           func(code string) string { return ProblemType(apperr.Code(code)) },
		MaxHeaderBytes: maxHeaderBytes,
	})
}

// NewServer wraps h in an http.Server with every timeout set, so slow or
// stalled clients cannot hold connections forever.
func NewServer(addr string, h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       60 * time.Second, // a 20 MiB ingest over a slow link
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
