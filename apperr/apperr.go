// Package apperr defines the error codes domain packages use to say what went
// wrong without knowing about HTTP. The HTTP layer maps each Code to a status
// in one table; anything that is not an *Error is an internal error.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an error for callers. Values are stable: they appear in the
// `type` of problem+json responses.
type Code string

// The codes. Keep httpapi's status table in step when adding one.
const (
	Invalid      Code = "invalid"      // the input is malformed or out of range (422)
	BadRequest   Code = "bad-request"  // the request cannot be read at all (400)
	NotFound     Code = "not-found"    // the thing does not exist (404)
	Conflict     Code = "conflict"     // a rule or limit forbids it now (409)
	Unauthorized Code = "unauthorized" // no or bad credentials (401)
	Forbidden    Code = "forbidden"    // credentials lack the right (403)
	RateLimited  Code = "rate-limited" // too many requests (429)
	TooLarge     Code = "too-large"    // body or batch exceeds a limit (413)
	Unavailable  Code = "unavailable"  // a dependency is down; try again (503)
)

// Error is a domain error with a message a person can act on. Field names the
// offending input when there is one; Details carries per-item problems (e.g.
// one per invalid record of a batch).
type Error struct {
	Code    Code
	Field   string
	Message string
	Details []Detail
	// Err is an underlying cause; it is never shown to clients.
	Err error
	// RetryAfter is, for a RateLimited error, how long until the request
	// may succeed (0: not known); the HTTP layer sends it as Retry-After.
	RetryAfter time.Duration
}

// Detail is one problem of a multi-part input.
type Detail struct {
	Index  int    `json:"index"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return fmt.Sprintf("%s (%v)", msg, e.Err)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField returns an Invalid error naming field.
func InvalidField(field, format string, args ...any) *Error {
	return &Error{Code: Invalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Refield returns err with its field renamed to field, in its Details
// too (a copy: err is left as it is), when err holds an *Error; any other
// error is returned as it is. A parser's message stays and names where
// the caller's input put the value ("follow.kind" for a parser's "kind").
func Refield(err error, field string) error {
	e, ok := As(err)
	if !ok {
		return err
	}
	c := *e
	c.Field = field
	c.Details = append([]Detail(nil), e.Details...)
	for i := range c.Details {
		c.Details[i].Field = field
	}
	return &c
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// CodeOf returns err's Code, or "" when err carries none.
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return ""
}
