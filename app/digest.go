package app

import (
	"context"
	"errors"
	"fmt"

	"followfeed/config"
	"followfeed/database"
	"followfeed/notify"
)

func runDigest(ctx context.Context, args []string, inv invocation) error {
	getenv, stdout := inv.getenv, inv.stdout
	fs := newFlags("digest", stdout, "Builds the next digest of one user and prints it; with --now sends it at once,\nthrough the same delivery ledger as scheduled digests (so it is never sent twice).")
	sub := fs.String("user", "", "the user's subject (sub claim); required")
	now := fs.Bool("now", false, "send it now instead of printing it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *sub == "" {
		return &UsageError{Msg: "digest: --user is required (the user's sub)"}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	logger := NewLogger(cfg, stdout)
	db, err := OpenDB(ctx, cfg, "digest")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := checkSchema(ctx, db); err != nil {
		return err
	}
	svc, err := NewServices(ctx, cfg, db, logger, inv.hooks)
	if err != nil {
		return err
	}
	defer svc.Close()
	u, err := svc.users.BySub(ctx, *sub)
	if errors.Is(err, database.ErrNotFound) {
		return &UsageError{Msg: fmt.Sprintf("digest: no user with sub %q", *sub)}
	}
	if err != nil {
		return err
	}
	if *now {
		out, err := svc.digester.SendNow(ctx, u.ID)
		fmt.Fprintf(stdout, "digest %d: %s (%d papers) %s\n", out.DigestID, out.State, out.Papers, out.Reply)
		return err
	}
	c, err := svc.digester.Preview(ctx, u.ID)
	if err != nil {
		return err
	}
	text, _, err := notify.RenderDigest(c)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Subject: %s\n\n%s", notify.DigestSubject(c), text)
	return nil
}
