package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"followfeed/apperr"
	"followfeed/mute"
)

// The settings page's mutes section (template _mutes.html, included
// from settings.html with one line): the user's mutes, each with a
// Remove button, and a form adding one (a researcher, words in the
// query syntax, or a category's cross-lists; for every follow or
// one). Plain CSRF-protected forms (Settings.post): no script needed.

// mutesData is the mutes section.
type mutesData struct {
	CSRF    string
	List    []muteRow
	Max     int
	Follows []followJSON // the scope choices
}

// muteRow is one mute in the list.
type muteRow struct {
	ID    int64
	Name  string // what is muted, in words (a researcher's name and id)
	Scope string // the follow it is limited to, "" for every follow
}

// mutesSection reads the viewer's mutes (nil in email-only mode: mutes
// are for the signed-in user).
func (s *Settings) mutesSection(ctx context.Context, v *viewer, follows []followJSON) (*mutesData, error) {
	if v.emailOnly || s.Mutes == nil {
		return nil, nil
	}
	ms, err := s.Mutes.List(ctx, v.userID)
	if err != nil {
		return nil, err
	}
	names, err := muteNames(ctx, s.Follows, ms)
	if err != nil {
		return nil, err
	}
	d := &mutesData{CSRF: v.csrf, Max: mute.MaxPerUser, Follows: follows}
	for _, m := range ms {
		row := muteRow{ID: m.ID, Name: muteName(m, names)}
		if m.Scope != nil {
			row.Scope = m.Scope.DisplayName()
		}
		d.List = append(d.List, row)
	}
	return d, nil
}

// postMuteAdd is the section's add form (POST /settings/mutes: csrf, what
// = researcher | words | cross-lists, value, follow = "" for every follow
// or "<kind>/<id>"). Bad input shows the page again with the problem
// (422), as every settings form does.
func (s *Settings) postMuteAdd(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		value := r.PostFormValue("value")
		var in mute.Input
		switch r.PostFormValue("what") {
		case "researcher":
			in.Researcher = &value
		case "words":
			in.Query = &value
		case "cross-lists":
			no := false
			in.Category, in.CrossLists = &value, &no
		default:
			return "", apperr.InvalidField("what", "choose what to mute: a researcher, words, or a category's cross-lists")
		}
		if f := r.PostFormValue("follow"); f != "" {
			kind, id, _ := strings.Cut(f, "/")
			in.HasFollow, in.FollowKind, in.FollowID = true, kind, id
		}
		sp, err := mute.Parse(in)
		if err != nil {
			return "", err
		}
		if _, _, err := s.Mutes.Create(r.Context(), v.userID, sp); err != nil {
			return "", err
		}
		return "muted", nil
	})
}

// postMuteRemove is a mute's Remove button (POST /settings/mutes/{id}:
// csrf). Another user's mute, or one already gone, is 404.
func (s *Settings) postMuteRemove(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || id <= 0 {
			return "", apperr.New(apperr.NotFound, "mute %q does not exist", r.PathValue("id"))
		}
		if err := s.Mutes.Delete(r.Context(), v.userID, id); err != nil {
			return "", err
		}
		return "unmuted", nil
	})
}
