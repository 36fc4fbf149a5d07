package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"followfeed/app"
	"followfeed/fediverse"
	"followfeed/internal/testapp"
)

// TestRotateKeyCommand: `followfeed activitypub rotate-key`, a process of
// its own beside a serving one, stores a new key and prints its activation
// instant (fediverse.KeyActivationDelay on). The serving process, which
// reads the keys again within that time, keeps publishing the old key
// until that instant and publishes the new one from it, so that it and
// every other process sign with the key they publish.
func TestRotateKeyCommand(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Now()}
	env := testapp.Env(t)
	env["ACTIVITYPUB"] = "on"
	a := testapp.StartWith(t, env, app.Hooks{Now: clk.Now})
	c := a.Client(t)
	published := func() string {
		t.Helper()
		r := c.Do("GET", "/ap/actors/cs.LG", "", nil, "Accept", "application/activity+json")
		var doc struct {
			PublicKey struct {
				PublicKeyPem string `json:"publicKeyPem"`
			} `json:"publicKey"`
		}
		if err := json.Unmarshal(r.Body, &doc); err != nil || r.Status != 200 || doc.PublicKey.PublicKeyPem == "" {
			t.Fatalf("actor: %d %s %v", r.Status, r.Body, err)
		}
		return doc.PublicKey.PublicKeyPem
	}
	before := published()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{{"activitypub"}, {"activitypub", "rotate"}, {"activitypub", "rotate-key", "now"}} {
		var ue *app.UsageError
		if err := app.Run(ctx, args, func(k string) string { return env[k] }, &out); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	out.Reset()
	if err := app.RunWith(ctx, []string{"activitypub", "rotate-key"}, func(k string) string { return env[k] }, &out, app.Hooks{Now: clk.Now}); err != nil {
		t.Fatalf("rotate-key: %v\n%s", err, out.String())
	}
	active := clk.Now().Add(fediverse.KeyActivationDelay)
	if want := "becomes every actor's key at " + active.UTC().Format(time.RFC3339); !strings.Contains(out.String(), want) {
		t.Errorf("rotate-key printed %q, want …%s…", out.String(), want)
	}
	clk.Set(active.Add(-time.Second))
	if published() != before {
		t.Error("the serving process published the new key before its activation")
	}
	clk.Set(active)
	if published() == before {
		t.Error("the serving process did not publish the new key at its activation")
	}
}
