package follow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/database"
	"followfeed/internal/text"
)

// Snooze: a follow snoozed until a date delivers nothing by digest,
// instant alert or push until that date's midnight in the user's time
// zone. Feeds keep it (they are pulled: a snooze is about being notified).
// What it alone matched while snoozed is not caught up afterwards: those
// windows have gone by (they are in the feed). The one place it is
// applied is match's delivery windows (match.Query.At), through
// Snoozed.

// SnoozeDateLayout is how a snooze's date is written: ISO YYYY-MM-DD, a
// day in the user's time zone.
const SnoozeDateLayout = "2006-01-02"

// maxSnoozeYears bounds how far ahead a snooze may end: the same date
// that many years from the user's today, at the latest.
const maxSnoozeYears = 2

// Snoozed says whether f is snoozed at t (a delivery's time).
func (f *Follow) Snoozed(t time.Time) bool {
	return f.SnoozeEndsAt != nil && t.Before(*f.SnoozeEndsAt)
}

// Snooze snoozes the user's follow of t until the date until (a
// SnoozeDateLayout date in the user's time zone, after today there, at
// most two years ahead), or, with until nil, un-snoozes it; now is the
// present. A follow the user does not have is an *apperr.Error naming
// "follow"; a bad date one naming "snoozed_until". The feeds' ETags do not
// change: feeds keep a snoozed follow.
func (s *Service) Snooze(ctx context.Context, userID int64, t Target, until *string, now time.Time) (Follow, error) {
	var f Follow
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var tz string
		if err := tx.QueryRow(ctx, `SELECT timezone FROM `+account.UsersTable+` WHERE id = $1 FOR SHARE`, userID).Scan(&tz); err != nil {
			return database.NotFound(err, fmt.Sprintf("reading user %d", userID))
		}
		var day, ends any
		if until != nil {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				loc = time.UTC
			}
			d, err := time.Parse(SnoozeDateLayout, strings.TrimSpace(*until))
			if err != nil {
				return apperr.InvalidField("snoozed_until", "%q is not a date like 2026-12-24 (YYYY-MM-DD, in your time zone), or null to un-snooze", text.Truncate(*until, 40))
			}
			y, m, dd := now.In(loc).Date()
			today := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
			latest := today.AddDate(maxSnoozeYears, 0, 0)
			switch {
			case !d.After(today):
				return apperr.InvalidField("snoozed_until", "%s is not after today (%s): a snooze lasts until a later day", d.Format(SnoozeDateLayout), today.Format(SnoozeDateLayout))
			case d.After(latest):
				return apperr.InvalidField("snoozed_until", "must be within two years: %s at the latest", latest.Format(SnoozeDateLayout))
			}
			day, ends = d, time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc)
		}
		rows, err := tx.Query(ctx, `
			UPDATE follows SET snoozed_until = $3, snooze_ends_at = $4 WHERE user_id = $1 AND key = $2
			RETURNING `+followColumns, userID, t.Key(), day, ends)
		if err != nil {
			return fmt.Errorf("snoozing follow %s of user %d: %w", t, userID, err)
		}
		fs, err := collectFollows(rows)
		if err != nil {
			return err
		}
		if len(fs) == 0 {
			return apperr.InvalidField("follow", "you do not follow %s; follow it first, then snooze it", t.DisplayName())
		}
		f = fs[0]
		return nil
	})
	return f, err
}
