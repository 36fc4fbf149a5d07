package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"followfeed/apperr"
	"followfeed/auth"
	"followfeed/channels"
	"followfeed/follow"
)

// The settings session's channels page (/settings/channels, template
// _channels.html): the same plain forms, CSRF token and post/redirect/get
// as the other settings pages. Creating a webhook and rotating its secret redirect to a one-time
// page (/settings/channels/secret/{nonce}, channels.Service.OfferSecret)
// that shows the new whsec_ secret once and then answers 404 "already
// shown": reloading it, or going back to it, never submits the form again
// (no second channel, no second rotation).

// channelsData is the section's data.
type channelsData struct {
	CSRF    string
	List    []channelView
	Max     int
	Follows []followJSON // the user's follows, for the checkboxes
	Types   []option
	Modes   []option
	// Add holds the add form's values after a rejected submission.
	Add channelForm
	// Error is a rejected submission's message, shown next to its form:
	// ErrorFor 0 is the add form, otherwise a channel id.
	Error    *fieldError
	ErrorFor int64
	// Secret is a webhook's new signing secret, shown once (ID: its channel).
	Secret *shownSecret
}

type option struct {
	Value, Label string
	Selected     bool
}

// fieldError is a refused channel form's problem: its field (an API path,
// "" for none) and its message.
type fieldError struct{ Field, Message string }

// Text is the problem as the page says it (pageProblem).
func (e *fieldError) Text() string { return pageProblem(e.Field, e.Message) }

type shownSecret struct {
	ID      int64
	Target  string // the webhook URL
	Secret  string
	Rotated bool
}

// channelForm is what the add form was sent with.
type channelForm struct {
	Type, URL, Homeserver, RoomID, Mode string
	Follows                             map[string]bool // "kind/id"
	// Chosen: "Chosen follows" was picked (the boxes apply).
	Chosen bool
}

// channelView is one channel as the page lists it.
type channelView struct {
	ID     int64
	Type   string
	Target string
	Mode   string
	Modes  []option
	// AfterPauses are the choices of what the channel does once the
	// user's pause ends (channels.Spec.AfterPause), one selected.
	AfterPauses []option
	AllFollows  bool
	FollowNames []string
	Follows     []followOption
	// ChosenCount is how many of Follows are checked.
	ChosenCount    int
	Enabled        bool
	DisabledReason string
	FailingSince   string
	RotatingUntil  string
	Last           *deliveryView
	Deliveries     []deliveryView
}

type followOption struct {
	Value, Name string
	Checked     bool
}

type deliveryView struct {
	At, EventType, EventState, Outcome, Status, Response string
	Papers                                               int
	Failed                                               bool
}

var channelTypeLabels = []option{{Value: "webhook", Label: "Webhook (signed JSON)"}, {Value: "slack", Label: "Slack"},
	{Value: "discord", Label: "Discord"}, {Value: "matrix", Label: "Matrix"}}

// afterPauseLabels are the after-pause choices (channels.Spec.AfterPause).
var afterPauseLabels = []option{{Value: channels.AfterPauseCatchUp, Label: "Send what it missed, as one batch"},
	{Value: channels.AfterPauseSkip, Label: "Skip what it missed (your feeds keep it)"}}

var channelModeLabels = []option{{Value: "instant", Label: "Instantly"}, {Value: "daily", Label: "Daily, at your digest hour"},
	{Value: "weekly", Label: "Weekly, at your digest hour and weekday"}}

func options(all []option, selected string) []option {
	out := make([]option, len(all))
	for i, o := range all {
		o.Selected = o.Value == selected
		out[i] = o
	}
	return out
}

// deliveriesShown is how many attempts each channel lists on the page.
const deliveriesShown = 20

// channelsData reads the user's channels with their last attempts;
// follows is the user's follow list (names as the page shows them).
func (s *Settings) channelsData(ctx context.Context, v *viewer, follows []followJSON, loc *time.Location) (*channelsData, error) {
	userID := v.userID
	cs, err := s.Channels.List(ctx, userID)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(follows))
	for _, f := range follows {
		names[f.Kind+"/"+f.ID] = f.Name
	}
	when := func(t time.Time) string { return t.In(loc).Format("2 Jan 15:04 MST") }
	d := &channelsData{CSRF: v.csrf, Max: channels.MaxPerUser, Follows: follows, Types: options(channelTypeLabels, "webhook"),
		Modes: options(channelModeLabels, "instant"), Add: channelForm{Type: "webhook", Mode: "instant"}}
	for _, c := range cs {
		cv := channelView{ID: c.ID, Type: string(c.Type), Mode: string(c.Mode), Modes: options(channelModeLabels, string(c.Mode)),
			AfterPauses: options(afterPauseLabels, c.AfterPause()), AllFollows: c.Follows == nil, Enabled: c.Enabled, DisabledReason: c.DisabledReason}
		cv.Target = c.ShownURL()
		if c.Type == channels.Matrix {
			cv.Target = c.RoomID + " on " + c.URL
		}
		if !c.FailingSince.IsZero() {
			cv.FailingSince = when(c.FailingSince)
		}
		if !c.RotatingUntil.IsZero() {
			cv.RotatingUntil = when(c.RotatingUntil)
		}
		on := map[string]bool{}
		for _, t := range c.Follows {
			k := string(t.Kind) + "/" + t.ID
			on[k] = true
			name := names[k]
			if name == "" {
				name = t.DisplayName() // unfollowed since: still carried, by its own name
			}
			cv.FollowNames = append(cv.FollowNames, name)
		}
		for _, f := range follows {
			k := f.Kind + "/" + f.ID
			cv.Follows = append(cv.Follows, followOption{Value: k, Name: f.Name, Checked: on[k]})
			if on[k] {
				cv.ChosenCount++
			}
		}
		ds, err := s.Channels.Deliveries(ctx, userID, c.ID)
		if err != nil {
			return nil, err
		}
		for i, x := range ds {
			if i == deliveriesShown {
				break
			}
			dv := deliveryView{At: when(x.At), EventType: x.EventType, EventState: string(x.EventState), Outcome: x.Outcome,
				Response: x.Response, Papers: x.Papers, Failed: x.Outcome != "delivered", Status: "no response"}
			if x.Status != nil {
				dv.Status = "HTTP " + strconv.Itoa(*x.Status)
			}
			cv.Deliveries = append(cv.Deliveries, dv)
		}
		if len(cv.Deliveries) > 0 {
			cv.Last = &cv.Deliveries[0]
		}
		d.List = append(d.List, cv)
	}
	return d, nil
}

var channelFlashes = map[string]string{
	"channel-added":    "Channel added.",
	"channel-saved":    "Channel saved.",
	"channel-deleted":  "Channel deleted.",
	"channel-test":     "Test event queued: it appears under the channel's deliveries within a few seconds.",
	"channel-webhook":  "Webhook channel added. Copy its signing secret now: it is not shown again.",
	"channel-rotating": "New signing secret below. Copy it now: it is not shown again. The old one keeps signing for 24 hours.",
}

// channelAction is a channel form's outcome: a redirect to the page with
// a flash (done), or to a one-time secret page of channel reveal (rotated:
// after a rotation), or a rejected field.
type channelAction struct {
	done    string
	reveal  int64
	rotated bool
}

// channelPost runs a channel form for a signed-in user (manage links
// cannot), after the CSRF check. Invalid input, a conflict (the channel
// limit, rotating a channel without a secret, testing a disabled channel)
// or a rate limit (too many tests) re-renders the page with the message
// next to the form it came from (errorFor: 0 the add form, or the channel
// id) and the error's status (statusFor: 422, 409, 429 with Retry-After).
func (s *Settings) channelPost(w http.ResponseWriter, r *http.Request, errorFor int64, act func(v *viewer) (channelAction, error)) {
	v := s.formViewer(w, r, false)
	if v == nil {
		return
	}
	res, err := act(v)
	var fe *fieldError
	status := http.StatusOK
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid && e.Code != apperr.Conflict && e.Code != apperr.RateLimited {
			writeError(w, r, s.Logger, err)
			return
		}
		fe, status = &fieldError{Field: e.Field, Message: e.Message}, statusFor(err)
		if e.RetryAfter > 0 {
			setRetryAfter(w, e.RetryAfter)
		}
	}
	if fe == nil && res.reveal != 0 {
		nonce, err := s.Channels.OfferSecret(r.Context(), v.userID, res.reveal, res.rotated)
		if err != nil {
			writeError(w, r, s.Logger, err)
			return
		}
		http.Redirect(w, r, "/settings/channels/secret/"+nonce+"#new-secret", http.StatusSeeOther)
		return
	}
	if fe == nil {
		http.Redirect(w, r, sectionPath("channels")+"?done="+res.done, http.StatusSeeOther)
		return
	}
	d, err := s.data(r, v, "channels")
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	d.Channels.Error, d.Channels.ErrorFor = fe, errorFor
	if errorFor == 0 {
		d.Channels.Add = addFormOf(r)
		d.Channels.Types = options(channelTypeLabels, d.Channels.Add.Type)
		d.Channels.Modes = options(channelModeLabels, d.Channels.Add.Mode)
	}
	s.render(w, r, status, v, d, "Not saved — the form below says why.")
}

// secretPage is the one-time page of a new signing secret: the channels
// page with the secret on top, once (200); opened again, expired, or not
// the user's: the settings page with a 404 and a notice that says what
// to do. Never cached (renderPage's no-store), no referrer.
func (s *Settings) secretPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	v, err := s.who(r, "")
	if err != nil && !errors.Is(err, auth.ErrBadLink) {
		writeError(w, r, s.Logger, err)
		return
	}
	if v == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	rv, err := s.Channels.RevealSecret(r.Context(), v.userID, r.PathValue("nonce"))
	status, flash := http.StatusOK, ""
	var shown *shownSecret
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.NotFound {
			writeError(w, r, s.Logger, err)
			return
		}
		status, flash = statusFor(err), "Not shown again: "+e.Message+"."
	} else {
		shown = &shownSecret{ID: rv.ChannelID, Target: rv.URL, Secret: rv.Secret, Rotated: rv.Rotated}
		flash = channelFlashes["channel-webhook"]
		if rv.Rotated {
			flash = channelFlashes["channel-rotating"]
		}
	}
	d, err := s.data(r, v, "channels")
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	d.Channels.Secret = shown
	s.render(w, r, status, v, d, flash)
}

// addFormOf keeps what the add form was sent with (never the access
// token: it is not echoed into a page).
func addFormOf(r *http.Request) channelForm {
	f := channelForm{Type: r.PostFormValue("type"), URL: r.PostFormValue("url"), Homeserver: r.PostFormValue("homeserver"),
		RoomID: r.PostFormValue("room_id"), Mode: r.PostFormValue("mode"), Follows: map[string]bool{}}
	f.Chosen = r.PostFormValue("follows_scope") == "chosen" || r.PostFormValue("follows_scope") == "" && len(r.PostForm["follow"]) > 0
	for _, k := range r.PostForm["follow"] {
		f.Follows[k] = true
	}
	return f
}

// formFollows reads a channel form's follow choice: follows_scope "all"
// (every follow, the checkboxes ignored) or "chosen" (the checked "follow"
// boxes, "kind/id", at least one); without follows_scope (an older page, a
// script) none checked is every follow. Every follow is a pointer to nil.
func formFollows(r *http.Request) (*[]follow.Target, error) {
	vals := r.PostForm["follow"]
	switch r.PostFormValue("follows_scope") {
	case "all":
		return new([]follow.Target), nil
	case "chosen":
		if len(vals) == 0 {
			return nil, apperr.InvalidField("follows", "choose at least one follow under Chosen follows, or pick All follows")
		}
	case "":
	default:
		return nil, apperr.InvalidField("follows_scope", "must be all or chosen")
	}
	if len(vals) == 0 {
		return new([]follow.Target), nil
	}
	ts := make([]follow.Target, 0, len(vals))
	for _, v := range vals {
		kind, id, ok := strings.Cut(v, "/")
		if !ok {
			return nil, apperr.InvalidField("follows", "each checked follow must be kind/id, like category/cs.LG")
		}
		t, err := follow.ParseTarget(kind, id)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return &ts, nil
}

func (s *Settings) postChannelAdd(w http.ResponseWriter, r *http.Request) {
	s.channelPost(w, r, 0, func(v *viewer) (channelAction, error) {
		field := func(name string) *string {
			val := strings.TrimSpace(r.PostFormValue(name))
			return &val
		}
		typ := field("type")
		spec := channels.Spec{Type: typ}
		if m := field("mode"); *m != "" {
			spec.Mode = m // left out: instant
		}
		// Only the fields of the chosen type: the page shows both groups.
		if strings.EqualFold(*typ, string(channels.Matrix)) {
			spec.Homeserver, spec.RoomID, spec.AccessToken = field("homeserver"), field("room_id"), field("access_token")
		} else {
			spec.URL = field("url")
		}
		fs, err := formFollows(r)
		if err != nil {
			return channelAction{}, err
		}
		if len(*fs) > 0 {
			spec.Follows = fs
		}
		c, err := s.Channels.Create(r.Context(), v.userID, spec)
		if err != nil {
			return channelAction{}, err
		}
		if c.Secret != "" {
			return channelAction{reveal: c.ID}, nil
		}
		return channelAction{done: "channel-added"}, nil
	})
}

// postChannel is every form of one listed channel: action save (mode,
// after_pause, follows, enabled; a form without after_pause, as an older
// page's, leaves it), test, rotate or delete.
func (s *Settings) postChannel(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.channelPost(w, r, id, func(v *viewer) (channelAction, error) {
		if id <= 0 {
			return channelAction{}, apperr.New(apperr.NotFound, "channel %q does not exist", r.PathValue("id"))
		}
		ctx := r.Context()
		switch r.PostFormValue("action") {
		case "save":
			mode := r.PostFormValue("mode")
			enabled := r.PostFormValue("enabled") != ""
			fs, err := formFollows(r)
			if err != nil {
				return channelAction{}, err
			}
			spec := channels.Spec{Mode: &mode, Enabled: &enabled, Follows: fs}
			if _, ok := r.PostForm["after_pause"]; ok {
				ap := r.PostFormValue("after_pause")
				spec.AfterPause = &ap
			}
			_, err = s.Channels.Update(ctx, v.userID, id, spec)
			return channelAction{done: "channel-saved"}, err
		case "test":
			_, err := s.Channels.Test(ctx, v.userID, id)
			return channelAction{done: "channel-test"}, err
		case "rotate":
			c, err := s.Channels.RotateSecret(ctx, v.userID, id)
			if err != nil {
				return channelAction{}, err
			}
			return channelAction{reveal: c.ID, rotated: true}, nil
		case "delete":
			return channelAction{done: "channel-deleted"}, s.Channels.Delete(ctx, v.userID, id)
		}
		return channelAction{}, apperr.InvalidField("action", "must be save, test, rotate or delete")
	})
}
