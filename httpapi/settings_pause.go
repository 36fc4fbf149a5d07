package httpapi

import (
	"net/http"
	"strings"
	"time"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/notify"
)

// The settings page's "Pause, quiet days and snooze" card
// (web/templates/_pause.html): the vacation pause (from, back on, or
// "until I'm back"; end it now), the daily digest's weekdays and a snooze
// per follow, all through one CSRF-protected form route, POST
// /settings/pause, whose action says which.

// pauseData is the card's data.
type pauseData struct {
	CSRF string
	// Set: a pause is set (Active: in effect now).
	Set, Active bool
	// From, Until, Today and Tomorrow are YYYY-MM-DD in the user's time
	// zone (Tomorrow: the first day a snooze or a pause's end may be);
	// Open: no Until ("until I'm back").
	From, Until, Today, Tomorrow string
	Open                         bool
	Days                         []dayOption
	// Follows are the snooze rows, shown collapsed unless Snoozed (how
	// many are snoozed) is above zero: the list is as long as the follows.
	Follows []snoozeRow
	Snoozed int
}

type dayOption struct {
	Value, Label string
	Checked      bool
}

type snoozeRow struct {
	N                     int
	Kind, ID, Name, Until string
}

// pauseData fills the card for a signed-in user.
func (s *Settings) pauseData(v *viewer, p notify.Profile, follows []followJSON, loc *time.Location) *pauseData {
	now := time.Now()
	today := now.In(loc)
	d := &pauseData{CSRF: v.csrf, Today: today.Format(notify.DateLayout), Tomorrow: today.AddDate(0, 0, 1).Format(notify.DateLayout)}
	if pp := p.Pause; pp != nil && !pp.Over(now) { // an ended pause: its catch-up follows
		d.Set, d.Active, d.From, d.Open = true, pp.Active(now), pp.From.Format(notify.DateLayout), pp.Until == nil
		if pp.Until != nil {
			d.Until = pp.Until.Format(notify.DateLayout)
		}
	}
	for i := 1; i <= 7; i++ {
		wd := time.Weekday(i % 7)
		d.Days = append(d.Days, dayOption{Value: strings.ToLower(wd.String()[:3]), Label: wd.String(), Checked: p.Digest.Weekdays.Has(wd)})
	}
	for i, f := range follows {
		row := snoozeRow{N: i, Kind: f.Kind, ID: f.ID, Name: f.Name}
		if f.SnoozedUntil != nil {
			row.Until = *f.SnoozedUntil
			d.Snoozed++
		}
		d.Follows = append(d.Follows, row)
	}
	return d
}

func init() {
	flashes["paused"] = "Pause saved: nothing is sent while it lasts, and one catch-up digest follows when it ends."
	flashes["resumed"] = "Pause ended: your catch-up digest follows within minutes."
	flashes["pause-dropped"] = "Pause removed."
	flashes["weekdays"] = "Digest days saved."
	flashes["snoozed"] = "Snoozed: that follow sends nothing until the date (your feeds keep it)."
	flashes["unsnoozed"] = "Snooze ended."
}

// postPause is POST /settings/pause: action pause (from, until, open),
// resume, weekdays (day, repeated) or snooze (kind, id, until: empty
// un-snoozes).
func (s *Settings) postPause(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		ctx := r.Context()
		switch r.PostFormValue("action") {
		case "pause":
			p := &notify.PausePatch{From: r.PostFormValue("from")}
			if until := strings.TrimSpace(r.PostFormValue("until")); until != "" && r.PostFormValue("open") == "" {
				p.Until = &until
			}
			_, err := s.Prefs.Update(ctx, v.userID, notify.ProfilePatch{Pause: p})
			return "paused", err
		case "resume":
			before, err := s.Prefs.Get(ctx, v.userID)
			if err != nil {
				return "", err
			}
			if _, err := s.Prefs.Update(ctx, v.userID, notify.ProfilePatch{Pause: &notify.PausePatch{Clear: true}}); err != nil {
				return "", err
			}
			if before.Pause.Active(time.Now()) {
				return "resumed", nil
			}
			return "pause-dropped", nil
		case "weekdays":
			days := r.PostForm["day"]
			if days == nil {
				days = []string{}
			}
			_, err := s.Prefs.Update(ctx, v.userID, notify.ProfilePatch{Digest: &notify.DigestPatch{Weekdays: &days}})
			return "weekdays", err
		case "snooze":
			t, err := follow.ParseTarget(r.PostFormValue("kind"), r.PostFormValue("id"))
			if err != nil {
				return "", err
			}
			var until *string
			if u := strings.TrimSpace(r.PostFormValue("until")); u != "" {
				until = &u
			}
			if _, err := s.Follows.Snooze(ctx, v.userID, t, until, time.Now()); err != nil {
				return "", err
			}
			if until == nil {
				return "unsnoozed", nil
			}
			return "snoozed", nil
		}
		return "", apperr.InvalidField("action", "must be pause, resume, weekdays or snooze")
	})
}
