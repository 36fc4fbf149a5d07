package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/channels"
	"followfeed/follow"
)

type channelFollowJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

type channelJSON struct {
	ID             int64               `json:"id"`
	Type           string              `json:"type"`
	URL            string              `json:"url,omitempty"`
	Homeserver     string              `json:"homeserver,omitempty"`
	RoomID         string              `json:"room_id,omitempty"`
	Mode           string              `json:"mode"`
	Follows        []channelFollowJSON `json:"follows"`
	Enabled        bool                `json:"enabled"`
	DisabledReason string              `json:"disabled_reason,omitempty"`
	FailingSince   *time.Time          `json:"failing_since,omitempty"`
	Secret         string              `json:"secret,omitempty"`
	RotatingUntil  *time.Time          `json:"rotating_until,omitempty"`
	CreatedAt      time.Time           `json:"created_at"`
	// AfterPause is what the channel does when the user's pause ends:
	// catch_up (one batch of what it missed) or skip.
	AfterPause string `json:"after_pause"`
}

// followNames maps the keys of the user's follows to their names
// (follow.Follow.DisplayName), for the follows channels cs carry; nil, and
// no query, when none of them is restricted to some follows.
func (a *API) followNames(ctx context.Context, userID int64, cs ...*channels.Channel) (map[string]string, error) {
	if !slices.ContainsFunc(cs, func(c *channels.Channel) bool { return c.Follows != nil }) {
		return nil, nil
	}
	fs, err := a.Follows.All(ctx, userID)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(fs))
	for _, f := range fs {
		names[f.Key()] = f.DisplayName()
	}
	return names, nil
}

// writeChannel answers with c (toChannelJSON) and status.
func (a *API) writeChannel(w http.ResponseWriter, r *http.Request, u *account.User, status int, c *channels.Channel) error {
	names, err := a.followNames(r.Context(), u.ID, c)
	if err != nil {
		return err
	}
	writeJSON(w, status, toChannelJSON(c, names))
	return nil
}

// toChannelJSON is c as the API shows it; names are the user's follows'
// (followNames): a follow the channel still carries but the user no longer
// follows is named by its target alone.
func toChannelJSON(c *channels.Channel, names map[string]string) channelJSON {
	out := channelJSON{ID: c.ID, Type: string(c.Type), Mode: string(c.Mode), Enabled: c.Enabled,
		DisabledReason: c.DisabledReason, Secret: c.Secret, CreatedAt: c.CreatedAt.UTC(), AfterPause: c.AfterPause()}
	if c.Type == channels.Matrix {
		out.Homeserver, out.RoomID = c.URL, c.RoomID
	} else {
		out.URL = c.ShownURL()
	}
	if c.Follows != nil {
		out.Follows = make([]channelFollowJSON, 0, len(c.Follows))
		for _, t := range c.Follows {
			name, ok := names[t.Key()]
			if !ok {
				name = t.DisplayName()
			}
			out.Follows = append(out.Follows, channelFollowJSON{Kind: string(t.Kind), ID: t.ID, Name: name})
		}
	}
	if !c.FailingSince.IsZero() {
		t := c.FailingSince.UTC()
		out.FailingSince = &t
	}
	if !c.RotatingUntil.IsZero() {
		t := c.RotatingUntil.UTC()
		out.RotatingUntil = &t
	}
	return out
}

// channelBody is POST and PATCH's body. follows omitted: all follows (on
// PATCH: unchanged); null: all follows.
type channelBody struct {
	Type        *string                       `json:"type"`
	URL         *string                       `json:"url"`
	Homeserver  *string                       `json:"homeserver"`
	RoomID      *string                       `json:"room_id"`
	AccessToken *string                       `json:"access_token"`
	Mode        *string                       `json:"mode"`
	Follows     nullable[[]channelFollowJSON] `json:"follows"`
	Enabled     *bool                         `json:"enabled"`
	AfterPause  *string                       `json:"after_pause"`
}

func (a *API) decodeChannel(r *http.Request) (channels.Spec, error) {
	var body channelBody
	if err := decodeJSON(r, &body, false); err != nil {
		return channels.Spec{}, err
	}
	spec := channels.Spec{Type: body.Type, URL: body.URL, Homeserver: body.Homeserver, RoomID: body.RoomID,
		AccessToken: body.AccessToken, Mode: body.Mode, Enabled: body.Enabled, AfterPause: body.AfterPause}
	switch {
	case body.Follows.Null:
		spec.Follows = new([]follow.Target) // a pointer to nil: all follows
	case body.Follows.Set:
		ts := make([]follow.Target, 0, len(body.Follows.Value))
		for i, f := range body.Follows.Value {
			t, err := follow.ParseTarget(f.Kind, f.ID)
			if err != nil {
				if e, ok := apperr.As(err); ok {
					return spec, apperr.InvalidField("follows["+strconv.Itoa(i)+"]."+e.Field, "%s", e.Message)
				}
				return spec, err
			}
			ts = append(ts, t)
		}
		spec.Follows = &ts
	}
	return spec, nil
}

func channelID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, apperr.New(apperr.NotFound, "channel %q does not exist; channel ids are positive whole numbers", r.PathValue("id"))
	}
	return id, nil
}

func (a *API) listChannels(w http.ResponseWriter, r *http.Request, u *account.User) error {
	cs, err := a.Channels.List(r.Context(), u.ID)
	if err != nil {
		return err
	}
	names, err := a.followNames(r.Context(), u.ID, cs...)
	if err != nil {
		return err
	}
	out := struct {
		Channels []channelJSON `json:"channels"`
	}{Channels: make([]channelJSON, 0, len(cs))}
	for _, c := range cs {
		out.Channels = append(out.Channels, toChannelJSON(c, names))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) createChannel(w http.ResponseWriter, r *http.Request, u *account.User) error {
	spec, err := a.decodeChannel(r)
	if err != nil {
		return err
	}
	c, err := a.Channels.Create(r.Context(), u.ID, spec)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/me/channels/"+strconv.FormatInt(c.ID, 10))
	return a.writeChannel(w, r, u, http.StatusCreated, c)
}

func (a *API) getChannel(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := channelID(r)
	if err != nil {
		return err
	}
	c, err := a.Channels.Get(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	return a.writeChannel(w, r, u, http.StatusOK, c)
}

func (a *API) patchChannel(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := channelID(r)
	if err != nil {
		return err
	}
	spec, err := a.decodeChannel(r)
	if err != nil {
		return err
	}
	c, err := a.Channels.Update(r.Context(), u.ID, id, spec)
	if err != nil {
		return err
	}
	return a.writeChannel(w, r, u, http.StatusOK, c)
}

func (a *API) deleteChannel(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := channelID(r)
	if err != nil {
		return err
	}
	if err := a.Channels.Delete(r.Context(), u.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) testChannel(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := channelID(r)
	if err != nil {
		return err
	}
	wid, err := a.Channels.Test(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, struct {
		EventID string `json:"event_id"`
	}{wid})
	return nil
}

func (a *API) rotateChannelSecret(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := channelID(r)
	if err != nil {
		return err
	}
	c, err := a.Channels.RotateSecret(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	return a.writeChannel(w, r, u, http.StatusOK, c)
}

type deliveryJSON struct {
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	EventState string    `json:"event_state"`
	Papers     int       `json:"papers"`
	At         time.Time `json:"at"`
	Status     *int      `json:"status"`
	Outcome    string    `json:"outcome"`
	Response   string    `json:"response"`
	DurationMS int64     `json:"duration_ms"`
}

func (a *API) channelDeliveries(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := channelID(r)
	if err != nil {
		return err
	}
	ds, err := a.Channels.Deliveries(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	out := struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}{Deliveries: make([]deliveryJSON, 0, len(ds))}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryJSON{EventID: d.WebhookID, EventType: d.EventType,
			EventState: string(d.EventState), Papers: d.Papers, At: d.At.UTC(), Status: d.Status, Outcome: d.Outcome,
			Response: d.Response, DurationMS: d.DurationMS})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
