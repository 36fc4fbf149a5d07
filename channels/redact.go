package channels

import (
	"errors"
	"net/url"
	"strings"
)

// Credentials outside their sealed column: a Slack or Discord URL is the
// credential (whoever has it can post), as is a Matrix access token. They
// are sealed at rest (seal.go) and shown masked, and nothing derived from
// a delivery may carry them either: the error of a failed request names
// its URL (*url.Error), and an error's text reaches the ledger
// (channel_attempts.response, channel_events.last_response,
// channels.disabled_reason), the deliveries list, the channel's
// disabled_reason, the "channel disabled" mail, River's job errors and the
// worker's log. So every error and response text is redacted where it is
// made (Channel.redactErr, Channel.redact): a *url.Error's URL becomes
// the masked form, and any remaining occurrence of a credential is
// replaced. Text read back from the ledger is redacted again, for rows
// written before this rule.

// minSecret is the shortest credential part redact replaces on its own
// (a chat URL's token segment): shorter strings would match ordinary
// words of a message, and no real token is that short.
const minSecret = 8

// MaskURL is the form of a channel's URL that may be shown, stored
// outside its sealed column, logged or mailed: scheme and host, then "/…"
// and the path's last four characters when the path is long enough (at
// least 16 characters) that four give nothing away. It never returns a
// URL's query, user information or the rest of its path; what does not
// parse as an absolute URL is "…".
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "…"
	}
	out := u.Scheme + "://" + u.Host + "/…"
	if p := u.EscapedPath(); len(p) >= 16 {
		out += p[len(p)-4:]
	}
	return out
}

// ShownURL is the channel's target as the API, the settings page and
// mail show it: a webhook's URL and a Matrix homeserver as they are, a
// Slack or Discord URL masked (MaskURL).
func (c *Channel) ShownURL() string {
	if c.Type == Slack || c.Type == Discord {
		return MaskURL(c.URL)
	}
	return c.URL
}

// secrets are the credential strings of c that no text outside the
// sealed columns may contain, longest first: a chat URL whole, its path
// (escaped and not) and its last segment (the token); the Matrix access
// token; the signing secrets.
func (c *Channel) secrets() []string {
	var out []string
	add := func(s string) {
		if len(s) >= minSecret {
			out = append(out, s)
		}
	}
	if c.Type == Slack || c.Type == Discord {
		add(c.URL)
		if u, err := url.Parse(c.URL); err == nil {
			add(u.EscapedPath())
			add(u.Path)
			add(u.Path[strings.LastIndexByte(u.Path, '/')+1:])
		}
	}
	add(c.accessToken)
	add(c.secret)
	add(c.oldSecret)
	return out
}

// redact returns s with every credential of c replaced by "…" (a chat URL
// whole by its masked form).
func (c *Channel) redact(s string) string {
	for _, secret := range c.secrets() {
		if !strings.Contains(s, secret) {
			continue
		}
		with := "…"
		if secret == c.URL {
			with = MaskURL(c.URL)
		}
		s = strings.ReplaceAll(s, secret, with)
	}
	return s
}

// redactedError is an error whose text has been redacted; errors.Is and
// errors.As still see what it wraps (an ErrInternalAddress, a timeout).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err as it may be recorded, logged and returned: the
// URL of every *url.Error in its chain replaced by its masked form
// (MaskURL), and its text redacted of c's credentials. nil stays nil.
func (c *Channel) redactErr(err error) error {
	if err == nil {
		return nil
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ue, ok := e.(*url.Error); ok {
			ue.URL = MaskURL(ue.URL)
		}
	}
	return &redactedError{msg: c.redact(err.Error()), err: err}
}
