package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"followfeed/config"
	"followfeed/database"
	"followfeed/notify"
)

func runDigest(ctx context.Context, args []string, inv invocation) error {
	getenv, stdout := inv.getenv, inv.stdout
	fs := newFlags("digest", stdout, "Prints the next digest of one user; with --now sends it at once, through the same\n"+
		"delivery ledger as scheduled digests (never twice), and says what happened: sent N papers,\n"+
		"will be retried (a temporary SMTP failure: a send job retries it), nothing new, already\n"+
		"sent for this period, or why the user's settings rule it out.")
	sub := fs.String("user", "", "the user's subject (sub claim); required")
	now := fs.Bool("now", false, "send it now instead of printing it")
	force := fs.Bool("force", false, "with --now, send even an empty digest to a user who did not ask for empty ones")
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
	svc, closeAll, err := commandServices(ctx, cfg, "digest", stdout, inv.hooks, servicesOptions{})
	if err != nil {
		return err
	}
	defer closeAll()
	u, err := svc.users.BySub(ctx, *sub)
	if errors.Is(err, database.ErrNotFound) {
		return &UsageError{Msg: fmt.Sprintf("digest: no user with sub %q", *sub)}
	}
	if err != nil {
		return err
	}
	if *force && !*now {
		return &UsageError{Msg: "digest: --force only goes with --now"}
	}
	if *now {
		res, err := svc.digester.SendNow(ctx, u.ID, *force)
		fmt.Fprintln(stdout, nowReport(res, zoneOf(u.Timezone)))
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

func zoneOf(name string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return time.UTC
}

// nowReport is the line `digest --now` prints: what happened (and, for a
// digest that met a temporary failure, when its send job retries it), when
// the next digest is due and what waits for it.
func nowReport(r notify.NowResult, loc *time.Location) string {
	const layout = "Mon 2 Jan 2006 15:04 MST"
	var b strings.Builder
	switch r.Status {
	case notify.NowSent:
		fmt.Fprintf(&b, "digest %d (%s): sent %s", r.DigestID, r.Period, papers(r.Papers))
		if more := r.Papers - r.Shown; more > 0 && r.Shown > 0 {
			// A budget or the caps listed some and counted the rest.
			fmt.Fprintf(&b, " (%d listed, %d more counted with a link to the feed)", r.Shown, more)
		}
	case notify.NowNothingNew:
		b.WriteString("nothing new since the last digest: nothing sent (the user does not want empty digests; --force sends one)")
	case notify.NowAlreadySent:
		fmt.Fprintf(&b, "digest %d (%s): already %s at %s for this period; not sent again", r.DigestID, r.Period, r.State, r.At.In(loc).Format(layout))
	case notify.NowRuledOut:
		b.WriteString("not sent: " + r.Reason)
	case notify.NowRetrying:
		fmt.Fprintf(&b, "digest %d (%s): %s (%s): %s; will be retried at %s by a send job in the mail queue (the same digest, never a second one)",
			r.DigestID, r.Period, r.State, papers(r.Papers), r.Reason, r.RetryAt.In(loc).Format(layout))
	default:
		fmt.Fprintf(&b, "digest %d (%s): %s (%s)", r.DigestID, r.Period, r.State, papers(r.Papers))
		if r.Reason != "" {
			b.WriteString(": " + r.Reason)
		}
	}
	if !r.NextAt.IsZero() {
		b.WriteString("; next digest due " + r.NextAt.In(loc).Format(layout))
	}
	if r.Waiting > 0 || (r.Status != notify.NowSent && r.Status != notify.NowRetrying) {
		fmt.Fprintf(&b, "; %s waiting", papers(r.Waiting))
	}
	return b.String()
}

func papers(n int) string {
	if n == 1 {
		return "1 paper"
	}
	return strconv.Itoa(n) + " papers"
}
