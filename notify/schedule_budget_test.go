package notify_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/auth"
	"followfeed/internal/testdb"
	"followfeed/notify"
)

// TestUserScheduleReadsTheBudget: UserSchedule, what push channels read a
// user's settings with, gives the budget as the settings hold it (order,
// max_papers, keep_followed), and the defaults (newest first, no budget,
// followed papers kept) for a user who never saved settings.
func TestUserScheduleReadsTheBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	base, _ := url.Parse("https://followfeed.test")
	prefs := notify.NewPreferences(db, account.NewAddresses(db, auth.NewLinkSigner([]byte("0123456789abcdef0123456789abcdef")), base, nil), nil)
	users := account.NewUsers(db)
	read := func(id int64) notify.DigestSettings {
		t.Helper()
		var s notify.DigestSettings
		if err := db.InTx(ctx, func(tx pgx.Tx) error {
			var err error
			s, _, err = notify.UserSchedule(ctx, tx, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	fresh, err := users.Ensure(ctx, &auth.Claims{Subject: "fresh"})
	if err != nil {
		t.Fatal(err)
	}
	if s := read(fresh.ID); s.Order != notify.OrderNewest || s.MaxPapers != 0 || !s.KeepFollowed {
		t.Errorf("defaults: %+v", s)
	}
	set, err := users.Ensure(ctx, &auth.Claims{Subject: "set"})
	if err != nil {
		t.Fatal(err)
	}
	best, five, no := "best", 5, false
	if _, err := prefs.Update(ctx, set.ID, notify.ProfilePatch{Digest: &notify.DigestPatch{Order: &best, MaxPapers: &five, KeepFollowed: &no}}); err != nil {
		t.Fatal(err)
	}
	if s := read(set.ID); s.Order != notify.OrderBest || s.MaxPapers != 5 || s.KeepFollowed {
		t.Errorf("after the settings: %+v", s)
	}
}
