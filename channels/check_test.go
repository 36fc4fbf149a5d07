package channels_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"followfeed/apperr"
	"followfeed/channels"
	"followfeed/database"
	"followfeed/internal/testwait"
)

// TestChatURLsHaveTheirProvidersShape: a Slack or Discord URL with any
// port, a dot segment or an encoded one in its path was accepted (a
// security review finding). Now only the provider's host on 443, the
// exact path shape, no percent-encoding and no query (Discord: thread_id)
// pass; every other webhook or homeserver URL takes 443 or a port from
// 1024.
func TestChatURLsHaveTheirProvidersShape(t *testing.T) {
	t.Log("hostile: ssrf")
	t.Parallel()
	e := setup(t, time.Now())
	user := e.reader("shapes", "UTC", 8, "monday")
	create := func(typ, u string) (*channels.Channel, error) {
		spec := channels.Spec{Type: &typ}
		if typ == "matrix" {
			room, tok := "!room:example.org", "syt_token_0123456789"
			spec.Homeserver, spec.RoomID, spec.AccessToken = &u, &room, &tok
		} else {
			spec.URL = &u
		}
		c, err := e.ch.Create(e.ctx, user, spec)
		if err == nil {
			if err := e.ch.Delete(e.ctx, user, c.ID); err != nil {
				t.Fatal(err)
			}
		}
		return c, err
	}
	for _, tc := range []struct{ typ, url, want string }{
		{"slack", "https://hooks.slack.com/services/T0123ABC/B0456DEF/abcdefABCDEF0123456789xy", ""},
		{"slack", "https://HOOKS.slack.com:443/services/T0123ABC/B0456DEF/abcdef0123", "https://hooks.slack.com/services/T0123ABC/B0456DEF/abcdef0123"},
		{"discord", "https://discord.com/api/webhooks/1234567890123456789/AbC-dEf_0123456789", ""},
		{"discord", "https://discord.com/api/v10/webhooks/1234567890/tok_en", ""},
		{"discord", "https://canary.discord.com/api/webhooks/1234567890/token?thread_id=987654321", ""},
		{"webhook", "https://example.org:8443/hooks/followfeed", ""},
		{"webhook", "https://example.org:443/hooks/../x", ""}, // a plain webhook's path is its owner's business
		{"matrix", "https://matrix.example.org:8448", ""},
	} {
		c, err := create(tc.typ, tc.url)
		if err != nil {
			t.Errorf("%s %q refused: %v", tc.typ, tc.url, err)
			continue
		}
		want := tc.want
		if want == "" {
			want = tc.url
		}
		if c.URL != want {
			t.Errorf("%s %q stored as %q, want %q", tc.typ, tc.url, c.URL, want)
		}
	}
	for _, tc := range []struct{ typ, url string }{
		{"slack", "https://hooks.slack.com:8443/services/T0/B0/abcdef"},
		{"slack", "https://hooks.slack.com:80/services/T0/B0/abcdef"},
		{"slack", "https://hooks.slack.com/services/T0/B0/../../../api/chat.postMessage"},
		{"slack", "https://hooks.slack.com/services/../services/T0/B0/abcdef"},
		{"slack", "https://hooks.slack.com/services/T0/B0/%2e%2e/abcdef"},
		{"slack", "https://hooks.slack.com/services/T0/B0/%61bcdef"},
		{"slack", "https://hooks.slack.com/services/T0/B0/abc%2Fdef"},
		{"slack", "https://hooks.slack.com/services/T0/B0/abcdef/"},
		{"slack", "https://hooks.slack.com/services/T0//abcdef"},
		{"slack", "https://hooks.slack.com/services/T0/B0/abcdef?x=1"},
		{"slack", "https://hooks.slack.com/services/T0/B0/abcdef?"},
		{"slack", "https://hooks.slack.com./services/T0/B0/abcdef"},
		{"slack", "https://hooks.slack.com.evil.example/services/T0/B0/abcdef"},
		{"slack", "https://hooks.slack.com/workflows/T0/B0/abcdef"},
		{"discord", "https://discord.com:8443/api/webhooks/1/token"},
		{"discord", "https://discord.com/api/webhooks/1/token/../../../users/@me"},
		{"discord", "https://discord.com/api/webhooks/1/%2e%2e/token"},
		{"discord", "https://discord.com/api/webhooks/abc/token"},
		{"discord", "https://discord.com/api/webhooks/1/token/github"},
		{"discord", "https://discord.com/api/webhooks/1/token?wait=true"},
		{"discord", "https://discord.com.evil.example/api/webhooks/1/token"},
		{"webhook", "https://example.org:22/hooks"},
		{"webhook", "https://example.org:25/hooks"},
		{"webhook", "https://example.org:80/hooks"},
		{"webhook", "https://example.org:70000/hooks"},
		{"matrix", "https://matrix.example.org:993"},
	} {
		_, err := create(tc.typ, tc.url)
		if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || e.Message == "" {
			t.Errorf("%s %q: %v, want a 422 naming the field", tc.typ, tc.url, err)
		}
	}
	// A test receiver on CHANNEL_ALLOW_HOSTS is spared the host and port,
	// not the path shape.
	if _, err := create("slack", e.rcv.URL+"/services/T0/B0/abcdef"); err != nil {
		t.Errorf("an allow-listed Slack receiver: %v", err)
	}
	if _, err := create("slack", e.rcv.URL+"/services/T0/B0/../x"); err == nil {
		t.Error("an allow-listed host with ../ in the Slack path was accepted")
	}
}

// TestTestEventsNeedAnEnabledChannelAndAreLimited: a disabled channel
// accepted 19 test events in a burst (a security review finding). Now a
// disabled channel's test is a Conflict that says to enable it first, a
// test queued before it was disabled is failed without a request, and a
// channel takes TestsPerWindow tests per TestWindow however they race.
func TestTestEventsNeedAnEnabledChannelAndAreLimited(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	e := setup(t, time.Now())
	user := e.reader("tester", "UTC", 8, "monday")
	id := e.webhook(user, "tests", "instant")

	var wg sync.WaitGroup
	errs := make([]error, 19)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.ch.Test(e.ctx, user, id)
		}()
	}
	wg.Wait()
	queued := 0
	for _, err := range errs {
		var ae *apperr.Error
		switch {
		case err == nil:
			queued++
		case errors.As(err, &ae) && ae.Code == apperr.RateLimited:
			if ae.RetryAfter <= 0 || ae.RetryAfter > channels.TestWindow {
				t.Errorf("Retry-After %v, want within %v", ae.RetryAfter, channels.TestWindow)
			}
		default:
			t.Errorf("a test in the burst: %v", err)
		}
	}
	if queued != channels.TestsPerWindow {
		t.Errorf("a burst of 19 queued %d test events, want %d", queued, channels.TestsPerWindow)
	}
	// A test that waited on the channel's row lock while the window's
	// tests were committed (here: their created_at set to the clock under
	// the lock, after the waiting test's transaction began) still says to
	// retry within the window: its wait is counted from the clock, not
	// from its transaction's start.
	lock, err := e.db.Pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(e.ctx) }()
	if _, err := lock.Exec(e.ctx, `SELECT 1 FROM channels WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := e.ch.Test(e.ctx, user, id)
		waited <- err
	}()
	if !testwait.Until(10*time.Second, func() bool {
		var n int
		_ = e.db.Pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return n > 0
	}) {
		t.Fatal("the test did not come to wait for the channel's lock")
	}
	if _, err := lock.Exec(e.ctx, `UPDATE channel_events SET created_at = clock_timestamp() WHERE channel_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if err := lock.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if ae, ok := apperr.As(<-waited); !ok || ae.Code != apperr.RateLimited || ae.RetryAfter <= 0 || ae.RetryAfter > channels.TestWindow {
		t.Errorf("a test that waited on the lock: %v, want rate limited with a Retry-After within %v", ae, channels.TestWindow)
	}
	e.run()
	if got := len(e.rcv.papers("tests")); got != channels.TestsPerWindow {
		t.Errorf("the receiver got %d tests, want %d", got, channels.TestsPerWindow)
	}
	// The window passes: tests are accepted again.
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channel_events SET created_at = created_at - $2::interval WHERE channel_id = $1`,
		id, channels.TestWindow.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ch.Test(e.ctx, user, id); err != nil {
		t.Fatalf("a test after the window: %v", err)
	}

	// Queued, then the channel was disabled: failed, never sent.
	off := false
	if _, err := e.ch.Update(e.ctx, user, id, channels.Spec{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	e.run()
	if got := len(e.rcv.papers("tests")); got != channels.TestsPerWindow {
		t.Errorf("a disabled channel's queued test was sent (%d requests)", got)
	}
	_, err = e.ch.Test(e.ctx, user, id)
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.Conflict {
		t.Errorf("testing a disabled channel: %v, want a Conflict", err)
	}
	if _, err := e.ch.Test(e.ctx, user+1000, id); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("testing another user's channel: %v", err)
	}
}
