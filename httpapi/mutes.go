package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/mute"
)

// Mutes (issue #27, item 2): what a user does not want to see, without
// unfollowing. Package mute keeps them; package match applies them to
// every surface.

// muteTargetJSON names a follow: the scope of a mute.
type muteTargetJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// muteJSON is one mute, the one shape of every mute (openapi.json, Mute):
// the body that creates it (one of researcher, query or category with
// cross_lists false, and an optional follow) with its id, kind, name and
// creation time.
type muteJSON struct {
	ID         int64           `json:"id"`
	Kind       string          `json:"kind"`
	Researcher string          `json:"researcher,omitempty"`
	Query      string          `json:"query,omitempty"`
	Category   string          `json:"category,omitempty"`
	CrossLists *bool           `json:"cross_lists,omitempty"`
	Follow     *muteTargetJSON `json:"follow"`
	// Name is how settings pages name what is muted.
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

func toMuteJSON(m mute.Mute, names map[string]string) muteJSON {
	j := muteJSON{ID: m.ID, Kind: string(m.Kind()), CreatedAt: m.CreatedAt.UTC(), Name: muteName(m, names)}
	switch m.Kind() {
	case mute.Researcher:
		j.Researcher = m.What.ID
	case mute.Query:
		j.Query = m.What.ID
	default:
		no := false
		j.Category, j.CrossLists = m.What.ID, &no
	}
	if m.Scope != nil {
		j.Follow = &muteTargetJSON{Kind: string(m.Scope.Kind), ID: m.Scope.ID}
	}
	return j
}

// muteName is what a mute hides, in words: "researcher Ann Author
// (openalex:A…)" when names (muteNames) has the person's name, else
// "researcher openalex:A…"; "the words abs:\"dark matter\"", "cross-lists
// to cs.LG".
func muteName(m mute.Mute, names map[string]string) string {
	switch m.Kind() {
	case mute.Researcher:
		if n := names[m.What.Key()]; n != "" {
			return "researcher " + n + " (" + m.What.ID + ")"
		}
		return "researcher " + m.What.ID
	case mute.Query:
		return "the words " + m.What.ID
	}
	return "cross-lists to " + m.What.ID
}

// muteNames are the names of the researchers ms mute, by key: the name a
// follow of them would show (follow.Service.Names: the identity
// registry's), read in one statement; none without fs.
func muteNames(ctx context.Context, fs *follow.Service, ms []mute.Mute) (map[string]string, error) {
	var ts []follow.Target
	for _, m := range ms {
		if m.Kind() == mute.Researcher {
			ts = append(ts, m.What)
		}
	}
	if fs == nil || len(ts) == 0 {
		return nil, nil
	}
	return fs.Names(ctx, ts)
}

// postMute is POST /v1/me/mutes: {"researcher": id} | {"query": "..."} |
// {"category": id, "cross_lists": false}, with an optional "follow":
// {"kind", "id"}. 201 with the mute; 200 with it when the user already
// had the same mute.
func (a *API) postMute(w http.ResponseWriter, r *http.Request, u *account.User) error {
	var body struct {
		Researcher *string         `json:"researcher"`
		Query      *string         `json:"query"`
		Category   *string         `json:"category"`
		CrossLists *bool           `json:"cross_lists"`
		Follow     *muteTargetJSON `json:"follow"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	in := mute.Input{Researcher: body.Researcher, Query: body.Query, Category: body.Category, CrossLists: body.CrossLists}
	if body.Follow != nil {
		in.HasFollow, in.FollowKind, in.FollowID = true, body.Follow.Kind, body.Follow.ID
	}
	sp, err := mute.Parse(in)
	if err != nil {
		return err
	}
	m, created, err := a.Mutes.Create(r.Context(), u.ID, sp)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	names, err := muteNames(r.Context(), a.Follows, []mute.Mute{m})
	if err != nil {
		return err
	}
	writeJSON(w, status, toMuteJSON(m, names))
	return nil
}

// listMutes is GET /v1/me/mutes: every mute of the user, oldest first.
func (a *API) listMutes(w http.ResponseWriter, r *http.Request, u *account.User) error {
	ms, err := a.Mutes.List(r.Context(), u.ID)
	if err != nil {
		return err
	}
	names, err := muteNames(r.Context(), a.Follows, ms)
	if err != nil {
		return err
	}
	out := struct {
		Mutes []muteJSON `json:"mutes"`
	}{Mutes: make([]muteJSON, 0, len(ms))}
	for _, m := range ms {
		out.Mutes = append(out.Mutes, toMuteJSON(m, names))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteMute is DELETE /v1/me/mutes/{id}: 204; another user's mute, or
// one that is gone, is 404.
func (a *API) deleteMute(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return apperr.New(apperr.NotFound, "mute %q does not exist; mute ids are positive whole numbers (GET /v1/me/mutes)", r.PathValue("id"))
	}
	if err := a.Mutes.Delete(r.Context(), u.ID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// whyJSON is GET /v1/me/papers/{arxiv_id}/why: whether the paper reaches
// the user, the follows that match it, the ones the mutes leave, and
// the mutes that hide it, with a sentence saying so.
type whyJSON struct {
	ArxivID     string           `json:"arxiv_id"`
	Shown       bool             `json:"shown"`
	Follows     []muteTargetJSON `json:"follows"`
	Kept        []muteTargetJSON `json:"kept"`
	Mutes       []muteJSON       `json:"mutes"`
	Explanation string           `json:"explanation"`
}

func targetsJSON(ts []follow.Target) []muteTargetJSON {
	out := make([]muteTargetJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, muteTargetJSON{Kind: string(t.Kind), ID: t.ID})
	}
	return out
}

// getWhy is GET /v1/me/papers/{arxiv_id}/why: "why (not) this paper",
// with the rules every surface applies (match.Explain). An unknown paper
// is 404.
func (a *API) getWhy(w http.ResponseWriter, r *http.Request, u *account.User) error {
	id, err := follow.ParsePaperID(r.PathValue("arxiv_id"))
	if err != nil {
		return apperr.New(apperr.NotFound, "no paper %q is known; use an arXiv id like 2401.01234", r.PathValue("arxiv_id"))
	}
	ex, err := a.Matcher.Explain(r.Context(), u.ID, id)
	if err != nil {
		return err
	}
	out := whyJSON{ArxivID: id, Shown: ex.Shown, Follows: targetsJSON(ex.Follows), Kept: targetsJSON(ex.Kept), Mutes: []muteJSON{}}
	var hiding []mute.Mute
	if len(ex.Mutes) > 0 {
		ms, err := a.Mutes.List(r.Context(), u.ID)
		if err != nil {
			return err
		}
		for _, m := range ms {
			for _, mid := range ex.Mutes {
				if m.ID == mid {
					hiding = append(hiding, m)
				}
			}
		}
	}
	names, err := muteNames(r.Context(), a.Follows, hiding)
	if err != nil {
		return err
	}
	for _, m := range hiding {
		out.Mutes = append(out.Mutes, toMuteJSON(m, names))
	}
	out.Explanation = explainWhy(id, ex.Shown, ex.Follows, ex.Kept, hiding, names)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// explainWhy is whyJSON's sentence, naming the mutes: "2611.00001 is
// hidden by your mute of researcher openalex:A1 (for every follow)."
func explainWhy(id string, shown bool, follows, kept []follow.Target, hiding []mute.Mute, muteNames map[string]string) string {
	names := func(ts []follow.Target) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.String())
		}
		return strings.Join(out, ", ")
	}
	mutes := func() string {
		var out []string
		for _, m := range hiding {
			s := "your mute of " + muteName(m, muteNames)
			if m.Scope != nil {
				s += " for " + m.Scope.String()
			} else {
				s += " (for every follow)"
			}
			out = append(out, s)
		}
		return strings.Join(out, " and ")
	}
	switch {
	case len(follows) == 0:
		return id + " matches none of your follows."
	case !shown:
		return id + " matches " + names(follows) + " but is hidden by " + mutes() + "."
	case len(hiding) > 0:
		return id + " reaches you through " + names(kept) + "; " + mutes() + " takes out the rest."
	}
	return id + " reaches you through " + names(follows) + "."
}
