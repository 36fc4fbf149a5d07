package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/database"
)

// statusOf is the one table mapping domain error codes to HTTP statuses;
// problemFor adds a missing row, a write for an erased user, a bad signed
// link and an outage.
var statusOf = map[apperr.Code]int{
	apperr.BadRequest:   http.StatusBadRequest,
	apperr.Invalid:      http.StatusUnprocessableEntity,
	apperr.NotFound:     http.StatusNotFound,
	apperr.Conflict:     http.StatusConflict,
	apperr.Unauthorized: http.StatusUnauthorized,
	apperr.Forbidden:    http.StatusForbidden,
	apperr.RateLimited:  http.StatusTooManyRequests,
	apperr.TooLarge:     http.StatusRequestEntityTooLarge,
	apperr.Unavailable:  http.StatusServiceUnavailable,
}

// titles are the short, fixed summaries of each problem type.
var titles = map[apperr.Code]string{
	apperr.BadRequest:   "Bad request",
	apperr.Invalid:      "Invalid input",
	apperr.NotFound:     "Not found",
	apperr.Conflict:     "Conflict",
	apperr.Unauthorized: "Unauthorized",
	apperr.Forbidden:    "Forbidden",
	apperr.RateLimited:  "Too many requests",
	apperr.TooLarge:     "Request too large",
	apperr.Unavailable:  "Service unavailable",
	"internal":          "Internal error",
}

// Problem is an RFC 9457 problem document. Type is a stable URN per error
// code; Field and Errors are extension members.
type Problem struct {
	Type     string          `json:"type"`
	Title    string          `json:"title"`
	Status   int             `json:"status"`
	Detail   string          `json:"detail"`
	Instance string          `json:"instance,omitempty"`
	Field    string          `json:"field,omitempty"`
	Errors   []apperr.Detail `json:"errors,omitempty"`
}

// ProblemType returns the stable `type` URI of a code.
func ProblemType(code apperr.Code) string { return "urn:followfeed:problem:" + string(code) }

// writeError answers err as problem+json. Domain errors keep their message;
// a database outage is a 503 with Retry-After; anything else is logged with
// its detail and answered with a bare "internal error".
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	p := problemFor(err)
	if p.Status >= 500 && p.Status != http.StatusServiceUnavailable {
		logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", routeOf(r), "error", err)
	} else if p.Status == http.StatusServiceUnavailable {
		logger.WarnContext(r.Context(), "request failed: unavailable", "route", routeOf(r), "error", err)
	}
	if p.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "5")
	}
	if e, ok := apperr.As(err); ok && e.RetryAfter > 0 {
		setRetryAfter(w, e.RetryAfter)
	}
	if r.URL != nil {
		p.Instance = redactPath(r.URL.Path)
	}
	writeProblem(w, p)
}

// statusFor is the status problemFor gives err: what writeError answers,
// and what an HTML page answers when it shows err itself.
func statusFor(err error) int { return problemFor(err).Status }

func problemFor(err error) Problem {
	// Before the domain's codes: a body cut off by limitBody is 413
	// whatever error the user that met it wrapped it in.
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return bodyTooLarge(mbe.Limit)
	}
	if e, ok := apperr.As(err); ok {
		status, known := statusOf[e.Code]
		if !known {
			status = http.StatusInternalServerError
		}
		return Problem{Type: ProblemType(e.Code), Title: titles[e.Code], Status: status, Detail: e.Message, Field: e.Field, Errors: e.Details}
	}
	if errors.Is(err, database.ErrNotFound) {
		return Problem{Type: ProblemType(apperr.NotFound), Title: titles[apperr.NotFound], Status: http.StatusNotFound,
			Detail: "the requested resource does not exist"}
	}
	if database.IsUserGone(err) {
		// A write for a user erased after the request found them.
		return Problem{Type: ProblemType(apperr.NotFound), Title: titles[apperr.NotFound], Status: http.StatusNotFound,
			Detail: "this account no longer exists: it was erased"}
	}
	if errors.Is(err, auth.ErrBadLink) {
		return Problem{Type: ProblemType(apperr.NotFound), Title: titles[apperr.NotFound], Status: http.StatusNotFound,
			Detail: "this link is not valid: it may be incomplete, or a newer one replaced it"}
	}
	if database.IsUnavailable(err) || errors.Is(err, context.DeadlineExceeded) {
		return Problem{Type: ProblemType(apperr.Unavailable), Title: titles[apperr.Unavailable], Status: http.StatusServiceUnavailable,
			Detail: "the database is not reachable right now; try again in a few seconds"}
	}
	return Problem{Type: ProblemType("internal"), Title: titles["internal"], Status: http.StatusInternalServerError, Detail: "internal error"}
}

func writeProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Del("ETag")
	w.Header().Del("Last-Modified")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// setRetryAfter sets Retry-After to d in whole seconds, rounded up, at
// least 1.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(d.Seconds()+0.999))))
}

// rateLimited answers 429 with Retry-After.
func rateLimited(w http.ResponseWriter, r *http.Request, retry time.Duration, detail string) {
	setRetryAfter(w, retry)
	writeProblem(w, Problem{Type: ProblemType(apperr.RateLimited), Title: titles[apperr.RateLimited],
		Status: http.StatusTooManyRequests, Detail: detail, Instance: redactPath(r.URL.Path)})
}
