package harvest

import (
	"errors"

	"followfeed/internal/upstream"
)

// Sentinel errors of the harvest: the upstream clients' (OAI-PMH here,
// OpenAlex in package openalex, the same values) and the OAI-PMH one. Test
// them with errors.Is; the errors returned wrap them with the action that
// failed.
var (
	// ErrMalformed is upstream.ErrMalformed: a response that arrived
	// complete but cannot be used (not the expected document, hostile, or
	// over the body cap). The clients do not retry it.
	ErrMalformed = upstream.ErrMalformed
	// ErrUpstream is upstream.ErrUpstream: an upstream that failed or
	// refused through every retry, or a status not worth retrying.
	ErrUpstream = upstream.ErrUpstream
	// ErrTooLarge is upstream.ErrTooLarge, matched by the ErrMalformed error
	// of a response over the body cap (after decompression): a permanent
	// failure, not one to retry soon.
	ErrTooLarge = upstream.ErrTooLarge
	// ErrUnreachable is upstream.ErrUnreachable: the host cannot be
	// reached in a way retrying soon cannot fix (a name that does not
	// resolve, a refused connection, a certificate that does not verify);
	// the request was made once, not retried.
	ErrUnreachable = upstream.ErrUnreachable
	// ErrBadResumptionToken is matched (errors.Is) by the *OAIError of an
	// OAI-PMH badResumptionToken error: the token expired or is unknown, and
	// the harvest must restart with From set to the last datestamp it stored.
	ErrBadResumptionToken = errors.New("OAI-PMH resumption token rejected")
)
