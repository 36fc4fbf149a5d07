package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/inbox"
)

// paperStateJSON is a user's state of one paper as the API shows it:
// changed_at is absent for unread.
type paperStateJSON struct {
	ArxivID   string     `json:"arxiv_id"`
	Title     string     `json:"title"`
	State     string     `json:"state"`
	ChangedAt *time.Time `json:"changed_at,omitempty"`
}

func toPaperStateJSON(e inbox.Entry) paperStateJSON {
	out := paperStateJSON{ArxivID: e.ArxivID, Title: e.Title, State: string(e.State)}
	if e.State != inbox.Unread && !e.ChangedAt.IsZero() {
		at := e.ChangedAt.UTC()
		out.ChangedAt = &at
	}
	return out
}

// putPaperState is PUT /v1/me/papers/{arxiv_id}/state: {"state": "unread"
// | "read" | "done"}. Any stored paper may be marked (a 404 only for a
// paper not stored here): read and done papers are left out of the
// user's digests, instant alerts, push and ?unread=1 feeds.
func (a *API) putPaperState(w http.ResponseWriter, r *http.Request, u *account.User) error {
	var body struct {
		State *json.RawMessage `json:"state"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.State == nil {
		return apperr.InvalidField("state", `say what you did with the paper: {"state": "read"}, "done" or "unread"`)
	}
	var s string
	if err := json.Unmarshal(*body.State, &s); err != nil {
		return apperr.InvalidField("state", "must be one of unread, read, done")
	}
	st, err := inbox.ParseState(s)
	if err != nil {
		return err
	}
	e, err := a.Inbox.Set(r.Context(), u.ID, r.PathValue("arxiv_id"), st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPaperStateJSON(e))
	return nil
}
