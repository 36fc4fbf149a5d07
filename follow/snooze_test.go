package follow_test

import (
	"context"
	"testing"
	"time"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/internal/testdb"
)

// TestSnoozeDatesAndUnknownFollows: a snooze ends at its date's midnight
// in the user's time zone; today, the past, a bad date and a follow the
// user does not have are errors naming the field; null un-snoozes.
func TestSnoozeDatesAndUnknownFollows(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	uid := newUser(t, db, "sleepy")
	if _, err := db.Pool.Exec(ctx, `UPDATE users SET timezone = 'Asia/Tokyo' WHERE id = $1`, uid); err != nil {
		t.Fatal(err)
	}
	svc := follow.NewService(db)
	lg := follow.Target{Kind: follow.Category, ID: "cs.LG"}
	if _, _, err := svc.Follow(ctx, uid, lg, follow.Options{}); err != nil {
		t.Fatal(err)
	}
	// 30 November 20:00 UTC is 1 December 05:00 in Tokyo: "today" is the 1st.
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		target follow.Target
		until  *string
		field  string
	}{
		{lg, str("2026-12-01"), "snoozed_until"},
		{lg, str("2026-11-20"), "snoozed_until"},
		{lg, str("1 Dec"), "snoozed_until"},
		{lg, str("2029-12-01"), "snoozed_until"},
		{lg, str("2028-12-02"), "snoozed_until"}, // two years and a day
		{follow.Target{Kind: follow.Category, ID: "cs.AI"}, str("2026-12-05"), "follow"},
		{follow.Target{Kind: follow.Category, ID: "cs.AI"}, nil, "follow"},
	} {
		_, err := svc.Snooze(ctx, uid, tc.target, tc.until, now)
		if ae, ok := apperr.As(err); !ok || ae.Field != tc.field {
			t.Errorf("snooze %s until %v: %v, want an error naming %s", tc.target, tc.until, err, tc.field)
		}
	}
	if _, err := svc.Snooze(ctx, uid, lg, str("2028-12-01"), now); err != nil {
		t.Errorf("a snooze of exactly two years: %v", err)
	}
	f, err := svc.Snooze(ctx, uid, lg, str("2026-12-02"), now)
	if err != nil {
		t.Fatal(err)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if f.SnoozedUntil == nil || f.SnoozedUntil.Format("2006-01-02") != "2026-12-02" || !f.SnoozeEndsAt.Equal(time.Date(2026, 12, 2, 0, 0, 0, 0, tokyo)) {
		t.Fatalf("snoozed: %v %v", f.SnoozedUntil, f.SnoozeEndsAt)
	}
	if !f.Snoozed(now) || f.Snoozed(time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)) {
		t.Error("Snoozed: wrong side of the Tokyo midnight")
	}
	all, _ := svc.All(ctx, uid)
	if len(all) != 1 || all[0].SnoozeEndsAt == nil {
		t.Errorf("All lost the snooze: %+v", all)
	}
	if f, err := svc.Snooze(ctx, uid, lg, nil, now); err != nil || f.SnoozedUntil != nil || f.Snoozed(now) {
		t.Errorf("un-snooze: %+v %v", f, err)
	}
}
