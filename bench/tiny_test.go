package bench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"followfeed/app"
	"followfeed/config"
	"followfeed/httpapi"
	"followfeed/internal/testdb"
)

// tiny builds scale s's dataset in a test database and the real services
// over it, wired as followfeed-lab bench wires them (rate limits off: the
// load comes from one address), and returns a run's Deps (no Exe or
// SearchSizes; Log is stderr under -v) and the services, closed when the
// test ends.
func tiny(t testing.TB, s Scale) (Deps, *app.Services) {
	t.Helper()
	db := testdb.New(t)
	ctx := context.Background()
	if err := Generate(ctx, db, s, io.Discard); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MAIL_DIR": t.TempDir()}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.RateLimitPerIP, cfg.RateLimitPerUser = 0, 0
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := app.NewServices(ctx, cfg, db, logger, app.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	d := Deps{DB: db, Papers: svc.Papers(), Matcher: svc.Matcher(), Identities: svc.Identities(), Tokens: svc.FeedTokens(),
		Digester: svc.Digester(), Ranking: svc.Ranking(), Log: io.Discard, AuthSecret: cfg.Auth.HS256Secret,
		Handler: httpapi.NewHandler(httpapi.Options{Logger: logger, Routes: svc.Routes(cfg)})}
	if testing.Verbose() {
		d.Log = os.Stderr
	}
	return d, svc
}
