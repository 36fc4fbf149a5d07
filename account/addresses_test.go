package account_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/database"
	"followfeed/internal/testdb"
	"followfeed/internal/testjobs"
	"followfeed/worker"
)

// TestConfirmationCapsCountMailsNotRequests: the caps counted requests,
// so a user who changed their address ten times before any mail went
// out was capped for a day by nine mails nobody got (a review finding).
// Each change queues a real River job; the mail job asks ConfirmationDue,
// which forgets a mail that is no longer due. The caps still hold for
// mails that are sent: ten per user, three per address whoever asks.
func TestConfirmationCapsCountMailsNotRequests(t *testing.T) {
	t.Log("hostile: limits")
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	ins, err := worker.NewInserter(db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://followfeed.test")
	addrs := account.NewAddresses(db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, worker.NewEnqueuer(ins))
	users := account.NewUsers(db)
	user := func(sub string) int64 {
		u, err := users.Ensure(ctx, &auth.Claims{Subject: sub})
		if err != nil {
			t.Fatal(err)
		}
		return u.ID
	}
	setEmail := func(uid int64, email string) error {
		return db.InTx(ctx, func(tx pgx.Tx) error {
			if err := account.LockUser(ctx, tx, uid); err != nil {
				return err
			}
			_, err := addrs.SetContact(ctx, tx, uid, email, "UTC")
			return err
		})
	}
	done := map[int64]bool{}
	// runMailJobs does what the mail job does before it sends: asks
	// whether each queued confirmation is still due. It returns the mails
	// that would be sent.
	runMailJobs := func() (sent []string) {
		for _, j := range testjobs.List(t, db.Pool, worker.ConfirmArgs{}.Kind()) {
			if done[j.ID] {
				continue
			}
			done[j.ID] = true
			var a worker.ConfirmArgs
			if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
				t.Fatal(err)
			}
			_, due, err := addrs.ConfirmationDue(ctx, a.UserID, a.Email)
			if err != nil {
				t.Fatal(err)
			}
			if due {
				sent = append(sent, a.Email)
			}
		}
		return sent
	}
	limited := func(err error) bool { return apperr.CodeOf(err) == apperr.RateLimited }

	// Ten changes in a burst: ten mails queued, the cap's worth.
	eve := user("eve")
	for i := range account.MaxConfirmationsPerUser {
		if err := setEmail(eve, fmt.Sprintf("eve%d@example.org", i)); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	if err := setEmail(eve, "eve-more@example.org"); !limited(err) {
		t.Fatalf("an eleventh change while ten mails are queued: %v", err)
	}
	// Only the last address gets its mail; the nine others stop counting.
	if sent := runMailJobs(); len(sent) != 1 || sent[0] != "eve9@example.org" {
		t.Fatalf("mails sent: %v", sent)
	}
	for i := range account.MaxConfirmationsPerUser - 1 {
		if err := setEmail(eve, fmt.Sprintf("eve-again%d@example.org", i)); err != nil {
			t.Fatalf("change %d after the mail jobs ran: %v", i, err)
		}
		runMailJobs() // each is due: sent, and counted
	}
	if err := setEmail(eve, "eve-last@example.org"); !limited(err) {
		t.Errorf("an eleventh mail in a day: %v", err)
	}

	// Per address: three mails to the victim, from three accounts; the
	// fourth account is refused, whatever the case of the address.
	for i := range account.MaxConfirmationsPerAddress {
		if err := setEmail(user(fmt.Sprintf("mallory%d", i)), "victim@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	if sent := runMailJobs(); len(sent) != account.MaxConfirmationsPerAddress {
		t.Fatalf("mails to the victim: %v", sent)
	}
	if err := setEmail(user("trudy"), "Victim@Example.org"); !limited(err) {
		t.Errorf("a fourth mail to one address in a day: %v", err)
	}
}

// TestFeedbackLinks: a feedback link names one user, one paper and one
// value; a forged or altered link, a link of another action, and every
// link after RevokeLinks are auth.ErrBadLink.
func TestFeedbackLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	base, _ := url.Parse("https://followfeed.test/")
	signer := auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef"))
	addrs := account.NewAddresses(db, signer, base, nil)
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	link := addrs.FeedbackURL(u.ID, 1, 4242, "less") // a new user's link epoch is 1
	tok, ok := strings.CutPrefix(link, "https://followfeed.test/feedback/")
	if !ok {
		t.Fatalf("link %s", link)
	}
	uid, pid, v, err := addrs.CheckFeedback(ctx, tok)
	if err != nil || uid != u.ID || pid != 4242 || v != "less" {
		t.Fatalf("CheckFeedback: %d %d %q %v", uid, pid, v, err)
	}
	if l, err := addrs.CheckFeedbackLink(ctx, tok); err != nil || l != (account.FeedbackLink{UserID: u.ID, Epoch: 1, PaperID: 4242, Value: "less"}) {
		t.Fatalf("CheckFeedbackLink: %+v %v", l, err)
	}
	dispute := strings.TrimPrefix(addrs.DisputeURL(u.ID, 1, "2611.00001", "host:1"), "https://followfeed.test/not-this-person/")
	for name, bad := range map[string]string{
		"forged":         tok[:len(tok)-2] + "AA",
		"another action": dispute,
		"no value":       signer.Sign(auth.Link{Action: auth.ActionFeedback, UserID: u.ID, Epoch: 1, Data: binary.AppendVarint(nil, 4242)}),
		"another user":   signer.Sign(auth.Link{Action: auth.ActionFeedback, UserID: u.ID + 1000, Epoch: 1, Data: append(binary.AppendVarint(nil, 4242), "more"...)}),
	} {
		if _, _, _, err := addrs.CheckFeedback(ctx, bad); !errors.Is(err, auth.ErrBadLink) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := addrs.RevokeLinks(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := addrs.CheckFeedback(ctx, tok); !errors.Is(err, auth.ErrBadLink) {
		t.Errorf("after RevokeLinks: %v", err)
	}
	if l, err := addrs.CheckFeedbackLink(ctx, tok); !errors.Is(err, auth.ErrBadLink) || l != (account.FeedbackLink{}) {
		t.Errorf("CheckFeedbackLink after RevokeLinks: %+v %v", l, err)
	}
}

// TestEveryLinkEpochMoveBumpsTheFeed: a private feed's items carry
// feedback links signed with the user's link epoch, and its ETag holds the
// feed version, not the epoch: so each way the epoch moves (RevokeLinks,
// Reconfirm, a new address) bumps the feed version in its transaction,
// and a change that keeps the epoch (the same address, another time zone)
// does not. The epoch the feed reads (QueueLinkEpochIn, LinkEpoch) is the
// one new links are signed with.
func TestEveryLinkEpochMoveBumpsTheFeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	base, _ := url.Parse("https://followfeed.test/")
	addrs := account.NewAddresses(db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, nil)
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	state := func() (epoch, version int64) {
		t.Helper()
		var b pgx.Batch
		account.QueueLinkEpochIn(&b, u.ID, func(e int64) { epoch = e })
		b.Queue(`SELECT version FROM `+account.FeedsTable+` WHERE user_id = $1`, u.ID).QueryRow(func(r pgx.Row) error { return r.Scan(&version) })
		err := db.InTx(ctx, func(tx pgx.Tx) error {
			if err := tx.SendBatch(ctx, &b).Close(); err != nil {
				return err
			}
			e, err := account.LinkEpoch(ctx, tx, u.ID)
			if err == nil && e != epoch {
				err = fmt.Errorf("LinkEpoch %d, QueueLinkEpochIn %d", e, epoch)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return epoch, version
	}
	setContact := func(email, tz string) {
		t.Helper()
		if err := db.InTx(ctx, func(tx pgx.Tx) error {
			if err := account.LockUser(ctx, tx, u.ID); err != nil {
				return err
			}
			_, err := addrs.SetContact(ctx, tx, u.ID, email, tz)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	e0, v0 := state()
	steps := []struct {
		name  string
		do    func()
		moves bool
	}{
		{"a new address", func() { setContact("alice@example.org", "UTC") }, true},
		{"the same address, another time zone", func() { setContact("Alice@example.org", "Europe/Paris") }, false},
		{"RevokeLinks", func() {
			if err := addrs.RevokeLinks(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"Reconfirm", func() {
			if err := addrs.Reconfirm(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, s := range steps {
		s.do()
		e, v := state()
		if moved := e != e0; moved != s.moves {
			t.Fatalf("%s: the epoch went from %d to %d", s.name, e0, e)
		}
		if bumped := v != v0; bumped != s.moves {
			t.Errorf("%s: epoch %d → %d, feed version %d → %d", s.name, e0, e, v0, v)
		}
		e0, v0 = e, v
	}
	if err := addrs.RevokeLinks(ctx, u.ID+1000); !errors.Is(err, database.ErrNotFound) {
		t.Errorf("RevokeLinks of nobody: %v", err)
	}
}

// TestSignedLinksLiveUnderThePublicURL: every signed link is the public
// URL (its path prefix kept, with or without a trailing slash; its query
// or fragment after the link's path), the link's path and its token,
// which its check takes back.
func TestSignedLinksLiveUnderThePublicURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	signer := auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef"))
	u, err := account.NewUsers(db).Ensure(ctx, &auth.Claims{Subject: "links"})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"https://example.org/ff", "https://example.org/ff/", "https://example.org/ff?src=mail", "https://example.org/ff#top"} {
		base, _ := url.Parse(raw)
		addrs := account.NewAddresses(db, signer, base, nil)
		token := func(link, path string) string {
			// A base's query or fragment follows the link's path.
			tok, ok := strings.CutPrefix(link, "https://example.org/ff"+path)
			tok, _, _ = strings.Cut(tok, "?src=mail")
			tok, _, _ = strings.Cut(tok, "#top")
			if !ok || tok == "" || strings.ContainsAny(tok, "/?#%") {
				t.Fatalf("public URL %s: link %s, want it under %s", raw, link, path)
			}
			return tok
		}
		if _, _, _, err := addrs.CheckFeedback(ctx, token(addrs.FeedbackURL(u.ID, 1, 7, "more"), "/feedback/")); err != nil {
			t.Errorf("feedback: %v", err)
		}
		if uid, arxivID, _, err := addrs.CheckDispute(ctx, token(addrs.DisputeURL(u.ID, 1, "2611.00001", "host:1"), "/not-this-person/")); err != nil || uid != u.ID || arxivID != "2611.00001" {
			t.Errorf("not this person: %d %s %v", uid, arxivID, err)
		}
		if _, pid, err := addrs.CheckOpen(ctx, token(addrs.OpenURL(u.ID, 1, 9), "/open/")); err != nil || pid != 9 {
			t.Errorf("open: %d %v", pid, err)
		}
		token(addrs.UnsubscribeURL(u.ID, 1), "/unsubscribe/")
		token(addrs.ConfirmURL(u.ID, 1, "a@example.org"), "/confirm/")
	}
}
