package app

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"followfeed/config"
)

// version is the module version the binary was built from ("devel" for a
// build from a work tree), which NodeInfo reports.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// runActivityPub is `followfeed activitypub rotate-key`: a new instance
// signing key becomes every actor's key at an instant
// fediverse.KeyActivationDelay on, when every running process switches to
// it (servers fetch it again when a signature no longer verifies with the
// one they cached).
func runActivityPub(ctx context.Context, args []string, inv invocation) error {
	fs := newFlags("activitypub", inv.stdout, "activitypub rotate-key: replaces the ActivityPub signing key of every actor\n"+
		"(every process switches to the new key at the same instant, two minutes on, and the old key is retired then;\n"+
		"fediverse servers fetch the new one when a signature no longer verifies).")
	// The subcommand comes first (parseFlags refuses any argument left
	// after the flags).
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sub != "rotate-key" {
		return &UsageError{Msg: "activitypub: the only subcommand is rotate-key"}
	}
	cfg, err := config.Load(inv.getenv)
	if err != nil {
		return err
	}
	if !cfg.ActivityPub {
		return &UsageError{Msg: "activitypub: ACTIVITYPUB is off; set ACTIVITYPUB=on"}
	}
	svc, closeAll, err := commandServices(ctx, cfg, "activitypub", inv.stdout, inv.hooks, servicesOptions{})
	if err != nil {
		return err
	}
	defer closeAll()
	id, active, err := svc.fediverse.RotateKey(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "ActivityPub key %d becomes every actor's key at %s (every process switches then)\n",
		id, active.UTC().Format(time.RFC3339))
	return nil
}
