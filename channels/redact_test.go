package channels_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/channels"
	fakesmtp "followfeed/internal/fake/smtp"
	"followfeed/mail"
	"followfeed/worker"
)

// closedPort returns a 127.0.0.1 address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestFailedDeliveriesNeverCarryTheCredential: a Slack or Discord URL is
// the credential, and a Matrix access token is one; on a DNS, connect or
// TLS failure the request's error named the whole URL, and that text went
// to the ledger, the deliveries list, disabled_reason, the "channel
// disabled" mail, River's job error and the log (a review finding). Each
// channel below fails at the network level against a real destination
// (an unresolvable host, a closed port, a plain-HTTP server spoken to in
// TLS, a certificate nobody trusts); the error Deliver returns (what River
// records and the worker logs) still says what went wrong and where, and
// neither it nor any row, list, log line or mail holds a credential.
func TestFailedDeliveriesNeverCarryTheCredential(t *testing.T) {
	t.Log("hostile: secrets")
	t.Parallel()
	e := setup(t, time.Now())
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(untrusted.Close)
	closed := closedPort(t)
	smtpd := fakesmtp.Start(t, fakesmtp.Options{})
	sender, err := mail.NewSMTPSender(smtpd.URL(), mail.SMTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer // the service logs from the test's goroutine only (Deliver runs here)
	ins, err := worker.NewInserter(e.db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := channels.NewService(channels.Config{DB: e.db, Matcher: e.matcher, Follows: e.follows, Enqueuer: worker.NewEnqueuer(ins),
		Guard:  channels.NewGuard([]string{"127.0.0.1", "hooks.slack.invalid"}),
		Sender: sender, From: &netmail.Address{Address: "followfeed@example.org"}, BaseURL: "https://followfeed.test",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), SecretKey: testSecretKey})
	owner, err := account.NewUsers(e.db).Ensure(e.ctx, &auth.Claims{Subject: "owner", Email: "owner@example.org", EmailVerified: true})
	if err != nil {
		t.Fatal(err)
	}

	const (
		slackToken   = "SlackTokenSecret0123456789"
		discordToken = "Discord-Token_Secret-0123456789abcdef"
		matrixToken  = "syt_b3duZXI_MatrixAccessTokenSecret_0123"
	)
	secrets := []string{slackToken, discordToken, matrixToken}
	type target struct {
		name, typ, url, homeserver, failure string
	}
	targets := []target{
		{name: "slack, unresolvable host", typ: "slack", url: "https://hooks.slack.invalid/services/T0SECRET/B0SECRET/" + slackToken, failure: "no such host"},
		{name: "discord, closed port", typ: "discord", url: "http://" + closed + "/api/webhooks/123456789/" + discordToken, failure: "connection refused"},
		{name: "slack, plain HTTP spoken to in TLS", typ: "slack", url: strings.Replace(plain.URL, "http:", "https:", 1) + "/services/T0SECRET/B0SECRET/" + slackToken, failure: "HTTP response to HTTPS client"},
		{name: "discord, untrusted certificate", typ: "discord", url: untrusted.URL + "/api/v10/webhooks/123456789/" + discordToken, failure: "certificate"},
		{name: "matrix, untrusted certificate", typ: "matrix", homeserver: untrusted.URL, failure: "certificate"},
		{name: "matrix, closed port", typ: "matrix", homeserver: "http://" + closed, failure: "connection refused"},
	}
	ids := make([]int64, len(targets))
	for i, tg := range targets {
		spec := channels.Spec{Type: &tg.typ}
		if tg.typ == "matrix" {
			room, tok := "!room:example.org", matrixToken
			spec.Homeserver, spec.RoomID, spec.AccessToken = &tg.homeserver, &room, &tok
		} else {
			spec.URL = &tg.url
		}
		c, err := svc.Create(e.ctx, owner.ID, spec)
		if err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		ids[i] = c.ID
	}
	leaks := func(where, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds a credential (%s…): %q", where, s[:6], text)
			}
		}
	}
	deliver := func(id int64) error {
		t.Helper()
		if _, err := svc.Test(e.ctx, owner.ID, id); err != nil {
			t.Fatal(err)
		}
		var eid int64
		if err := e.db.Pool.QueryRow(e.ctx, `SELECT max(id) FROM channel_events WHERE channel_id = $1`, id).Scan(&eid); err != nil {
			t.Fatal(err)
		}
		return svc.Deliver(e.ctx, eid)
	}

	for i, tg := range targets {
		err := deliver(ids[i])
		var re *channels.RetryError
		if !errors.As(err, &re) {
			t.Fatalf("%s: Deliver = %v, want a RetryError", tg.name, err)
		}
		// What River records and the worker logs: still says why and where.
		msg := err.Error()
		leaks(tg.name+": the delivery's error", msg)
		host := tg.url
		if tg.typ == "matrix" {
			host = tg.homeserver
		}
		host = strings.Split(strings.SplitN(host, "://", 2)[1], "/")[0]
		if !strings.Contains(msg, tg.failure) || !strings.Contains(msg, host) {
			t.Errorf("%s: the error %q does not say %q at %s", tg.name, msg, tg.failure, host)
		}
	}
	// A day of failures later, the next failure disables each channel
	// and queues its owner's mail.
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET failing_since = now() - interval '25 hours' WHERE user_id = $1`, owner.ID); err != nil {
		t.Fatal(err)
	}
	for i, tg := range targets {
		if err := deliver(ids[i]); err != nil {
			t.Errorf("%s: the disabling delivery: %v", tg.name, err)
		}
		c, err := svc.Get(e.ctx, owner.ID, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if c.Enabled || !strings.Contains(c.DisabledReason, tg.failure) {
			t.Errorf("%s: enabled %v, disabled_reason %q", tg.name, c.Enabled, c.DisabledReason)
		}
		leaks(tg.name+": disabled_reason", c.DisabledReason)
		if err := svc.MailDisabled(e.ctx, ids[i]); err != nil {
			t.Fatal(err)
		}
		ds, err := svc.Deliveries(e.ctx, owner.ID, ids[i])
		if err != nil || len(ds) != 2 {
			t.Fatalf("%s: deliveries %v %v", tg.name, ds, err)
		}
		for _, d := range ds {
			leaks(tg.name+": a delivery's response", d.Response)
		}
	}
	for _, m := range smtpd.WaitMessages(t, len(targets), 10*time.Second) {
		decoded, _ := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(m.Data)))
		leaks("the channel-disabled mail", string(m.Data)+string(decoded))
		if !strings.Contains(string(decoded), "Last error:") {
			t.Errorf("the mail does not say the last error:\n%s", decoded)
		}
	}
	// Every row of the ledger, not only what the API reads back.
	rows, err := e.db.Pool.Query(e.ctx, `
		SELECT response FROM channel_attempts
		UNION ALL SELECT last_response FROM channel_events
		UNION ALL SELECT disabled_reason FROM channels
		UNION ALL SELECT url FROM channels WHERE type IN ('slack', 'discord')`)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) < 3*len(targets) {
		t.Errorf("only %d ledger texts", len(texts))
	}
	for _, s := range texts {
		leaks("a row", s)
	}
	leaks("the log", logs.String())
	if !strings.Contains(logs.String(), "channel disabled") {
		t.Errorf("no log line of the disabling:\n%s", logs.String())
	}

	// A row written before responses were redacted is redacted when read.
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channel_attempts SET response = $2 WHERE channel_id = $1`,
		ids[0], `Post "`+targets[0].url+`": dial tcp: lookup hooks.slack.invalid: no such host`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET disabled_reason = $2 WHERE id = $1`, ids[0], "last: Post \""+targets[0].url+"\""); err != nil {
		t.Fatal(err)
	}
	ds, err := svc.Deliveries(e.ctx, owner.ID, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Get(e.ctx, owner.ID, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	leaks("an old row, read back", ds[0].Response+c.DisabledReason)
	if !strings.Contains(ds[0].Response, "https://hooks.slack.invalid/…") {
		t.Errorf("the old row reads %q, want the masked URL", ds[0].Response)
	}
}

// TestMaskURL: scheme, host and at most the path's last four characters.
func TestMaskURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0123/B0456/abcdefghijklmnop":     "https://hooks.slack.com/…mnop",
		"https://discord.com/api/webhooks/1/x":                              "https://discord.com/…/1/x",
		"https://discord.com/api/x":                                         "https://discord.com/…",
		"https://user:pw@example.org/hooks/secret-path-here?token=abc#frag": "https://example.org/…here",
		"not a url": "…",
		"":          "…",
	} {
		if got := channels.MaskURL(raw); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestMigrationRedactsOldLedgerText: rows an older release wrote, with
// the whole Slack or Discord URL in them, lose it to migration 00024
// (its Up statements run again here over such rows); other text stays.
func TestMigrationRedactsOldLedgerText(t *testing.T) {
	t.Log("hostile: secrets")
	t.Parallel()
	e := setup(t, time.Now())
	user := e.reader("old-rows", "UTC", 8, "monday")
	id := e.webhook(user, "old", "instant")
	if _, err := e.ch.Test(e.ctx, user, id); err != nil {
		t.Fatal(err)
	}
	e.run()
	const (
		slack   = `Post "https://hooks.slack.com/services/T0AAA/B0BBB/SlackSecretToken0123": dial tcp: lookup hooks.slack.com: no such host`
		discord = `Post "https://discord.com:443/api/v10/webhooks/1234/DiscordSecret-Token_0123": dial tcp 1.2.3.4:443: connect: connection refused`
		other   = `Post "https://example.org/hooks/kept": HTTP 500`
	)
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channel_attempts SET response = $2 WHERE channel_id = $1`, id, slack); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channel_events SET last_response = $2 WHERE channel_id = $1`, id, discord+"; "+other); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE channels SET disabled_reason = $2 WHERE id = $1`, id, "last: "+strings.ToUpper(slack[:40])+"…"); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../migrations/sql/00024_channel_text_redacted.sql")
	if err != nil {
		t.Fatal(err)
	}
	up, _, ok := strings.Cut(strings.SplitN(string(src), "-- +goose Up", 2)[1], "-- +goose Down")
	if !ok {
		t.Fatal("the migration has no Down section")
	}
	if _, err := e.db.Pool.Exec(e.ctx, up); err != nil {
		t.Fatal(err)
	}
	var response, last, reason string
	if err := e.db.Pool.QueryRow(e.ctx, `
		SELECT a.response, e.last_response, c.disabled_reason
		FROM channel_attempts a JOIN channel_events e ON e.id = a.event_id JOIN channels c ON c.id = a.channel_id
		WHERE c.id = $1`, id).Scan(&response, &last, &reason); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{response, last, reason} {
		if strings.Contains(s, "Secret") || strings.Contains(strings.ToLower(s), "/services/") || strings.Contains(s, "webhooks") {
			t.Errorf("after the migration: %q", s)
		}
	}
	if want := `Post "https://hooks.slack.com/…": dial tcp: lookup hooks.slack.com: no such host`; response != want {
		t.Errorf("response %q, want %q", response, want)
	}
	if want := `Post "https://discord.com/…": dial tcp 1.2.3.4:443: connect: connection refused; ` + other; last != want {
		t.Errorf("last_response %q, want %q", last, want)
	}
}
