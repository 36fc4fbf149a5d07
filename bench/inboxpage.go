package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"followfeed/account"
	"followfeed/auth"
)

// The inbox page's cost (issue 27): GET /inbox, a page of the settings
// session, through the real HTTP handler, for users signed in as the host
// site's sign-in link signs them in (POST /login with a token the host
// would mint, untimed). A session is a signed cookie: signing in writes
// nothing for a user who exists and whose token carries no address, so
// the measurement leaves the dataset as it found it.

// sessionCookieName is the settings session's cookie (httpapi's
// sessionCookie).
const sessionCookieName = "ff_session"

// InboxResult holds the inbox page's measurement.
type InboxResult struct {
	// Renders are the measured pass's times, one per user; Size is the
	// pages' average bytes and Papers the rows they listed on average.
	Renders []time.Duration
	Size    int
	Papers  float64
}

// SignIn signs users in through h as the host's sign-in link does: a
// development HS256 token (secret: the service's AUTH_HS256_SECRET) for
// each user's sub, without an address, handed over with POST /login. It
// returns each user's session cookie, in the order of users. Any answer
// but a redirect with a session cookie is an error.
func SignIn(ctx context.Context, d Deps, users []int64) ([]*http.Cookie, error) {
	if len(d.AuthSecret) == 0 {
		return nil, fmt.Errorf("no AUTH_HS256_SECRET to sign the users in with")
	}
	accounts := account.NewUsers(d.DB)
	out := make([]*http.Cookie, len(users))
	for i, u := range users {
		user, err := accounts.Get(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("user %d: %w", u, err)
		}
		tok, err := auth.MintHS256(d.AuthSecret, auth.MintOptions{Subject: user.Sub, TTL: 10 * time.Minute, Now: time.Now()})
		if err != nil {
			return nil, err
		}
		req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			if c.Name == sessionCookieName && c.Value != "" {
				out[i] = c
			}
		}
		if rec.Code != http.StatusSeeOther || out[i] == nil {
			return nil, fmt.Errorf("signing user %d in: %d %.200s", u, rec.Code, rec.Body.String())
		}
	}
	return out, nil
}

// MeasureInbox times GET /inbox (the first page, newest first, no filter)
// through the real HTTP handler for each user, signed in first (SignIn,
// untimed): the session's check, the user's follows, inbox.List (the
// matched papers with their reasons and states), the feedback buttons and
// the page's rendering; a warm-up pass, then the measured one, the time
// from request to the last byte written. Any status but 200 is an error.
func MeasureInbox(ctx context.Context, d Deps, users []int64) (*InboxResult, error) {
	cookies, err := SignIn(ctx, d, users)
	if err != nil {
		return nil, err
	}
	res := &InboxResult{}
	for pass := range 2 {
		res.Renders, res.Size, res.Papers = res.Renders[:0], 0, 0
		for i, c := range cookies {
			req := httptest.NewRequest("GET", "/inbox", nil)
			req.AddCookie(c)
			rec := httptest.NewRecorder()
			start := time.Now()
			d.Handler.ServeHTTP(rec, req)
			took := time.Since(start)
			if rec.Code != http.StatusOK {
				return nil, fmt.Errorf("GET /inbox of user %d (pass %d): %d %.300s", users[i], pass, rec.Code, rec.Body.String())
			}
			res.Renders = append(res.Renders, took)
			res.Size += rec.Body.Len()
			// Each paper's row carries data-paper (and an id before it).
			res.Papers += float64(strings.Count(rec.Body.String(), ` data-paper="`))
		}
	}
	res.Size /= max(len(cookies), 1)
	res.Papers /= float64(max(len(cookies), 1))
	return res, nil
}

// inboxFigure is the inbox page's figure, judged by t.Inbox, and its
// paragraph.
func inboxFigure(t Targets, res *InboxResult) (Figure, string) {
	p50, p99 := Percentiles(res.Renders)
	f := Figure{Key: "inbox", Name: "the inbox page (GET /inbox): the first page, newest first, server side", Target: "p99 ≤ " + msTarget(t.Inbox),
		Result: fmt.Sprintf("p50 %s, p99 %s (%.1f papers, %d KiB)", ms(p50), ms(p99), res.Papers, res.Size>>10), Value: msf(p99), Pass: p99 <= t.Inbox}
	detail := fmt.Sprintf("Inbox page: `GET /inbox` through the real HTTP handler in-process for the %d users of the full render, each signed in first as the host's sign-in link "+
		"signs a user in (a token for their sub handed over with `POST /login`, untimed; the session is a signed cookie); the session check, the user's follows, `inbox.List` "+
		"(the newest %d matched papers with their reasons and read states) and the page with its state and feedback forms, %.1f papers listed on average; "+
		"warm-up pass, then the measured pass; time from request to the last byte written.",
		len(res.Renders), inboxPageSize, res.Papers)
	return f, detail
}

// inboxPageSize is how many papers the inbox's first page lists
// (httpapi's inboxPageSize).
const inboxPageSize = 25
