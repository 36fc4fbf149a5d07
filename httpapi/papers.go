package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/follow"
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

// inboxPaperJSON is one paper of GET /v1/me/papers.
type inboxPaperJSON struct {
	ArxivID    string       `json:"arxiv_id"`
	Title      string       `json:"title"`
	Authors    []string     `json:"authors"`
	Categories []string     `json:"categories"`
	AbsURL     string       `json:"abs_url"`
	Reasons    []reasonJSON `json:"reasons"`
	State      string       `json:"state"`
	Feedback   *string      `json:"feedback"`
	Replaced   bool         `json:"replaced,omitempty"`
}

// reasonJSON is a follow of the user that matched a paper.
type reasonJSON struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// parseFollowParam reads ?follow=kind:id (the first colon splits: ids
// may hold colons) as one of the user's follows fs; anything else is a
// 422 naming follow.
func parseFollowParam(s string, fs []follow.Follow) (*follow.Target, error) {
	kind, id, ok := strings.Cut(s, ":")
	if !ok {
		return nil, apperr.InvalidField("follow", `must be kind:id, e.g. category:cs.LG or researcher:openalex:A5023888391`)
	}
	t, err := follow.ParseTarget(kind, id)
	if err != nil {
		// The part that is wrong and why, once: Error adds the cause,
		// which for a query is its reason again.
		msg := err.Error()
		if e, ok := apperr.As(err); ok {
			msg = e.Message
			if e.Field != "" {
				msg = e.Field + ": " + msg
			}
		}
		return nil, apperr.InvalidField("follow", "%s", msg)
	}
	return followed(t, fs)
}

// followed returns t when it is one of the user's follows fs; otherwise
// a 422 naming follow.
func followed(t follow.Target, fs []follow.Follow) (*follow.Target, error) {
	for _, f := range fs {
		if f.Key() == t.Key() {
			return &t, nil
		}
	}
	return nil, apperr.InvalidField("follow", "you do not follow %s", t.DisplayName())
}

// parseStateParam reads ?state=: unread, read, done, or all ("" too).
func parseStateParam(s string) (inbox.State, error) {
	if s = strings.TrimSpace(s); s == "" || strings.EqualFold(s, "all") {
		return "", nil
	}
	st, err := inbox.ParseState(s)
	if err != nil {
		return "", apperr.InvalidField("state", "must be unread, read, done or all")
	}
	return st, nil
}

// parseOrderParam reads an order query parameter (newest, the default, or
// best; any case, as the state parameter and the bodies' values): whether
// it asks for best first.
func parseOrderParam(s string) (best bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "newest":
		return false, nil
	case "best":
		return true, nil
	}
	return false, apperr.InvalidField("order", "must be newest (the default) or best")
}

// listPapers is GET /v1/me/papers?follow=&state=&order=&cursor=&limit=:
// the user's matched papers with reasons, state and feedback, newest
// first or best first.
func (a *API) listPapers(w http.ResponseWriter, r *http.Request, u *account.User) error {
	q := r.URL.Query()
	lq := inbox.ListQuery{Cursor: q.Get("cursor")}
	var err error
	if lq.Best, err = parseOrderParam(q.Get("order")); err != nil {
		return err
	}
	if lq.State, err = parseStateParam(q.Get("state")); err != nil {
		return err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > inbox.MaxPage {
			return apperr.InvalidField("limit", "must be a whole number from 1 to %d", inbox.MaxPage)
		}
		lq.Limit = n
	}
	fs, err := a.Follows.All(r.Context(), u.ID)
	if err != nil {
		return err
	}
	if s := q.Get("follow"); s != "" {
		if lq.Only, err = parseFollowParam(s, fs); err != nil {
			return err
		}
	}
	page, err := a.Inbox.List(r.Context(), u.ID, lq)
	if err != nil {
		return err
	}
	out := struct {
		Papers []inboxPaperJSON `json:"papers"`
		Next   string           `json:"next,omitempty"`
	}{Papers: toInboxPapersJSON(page.Items, fs), Next: page.Next}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// toInboxPapersJSON shows items with the reasons named as the user's
// follows fs name them.
func toInboxPapersJSON(items []inbox.Item, fs []follow.Follow) []inboxPaperJSON {
	labels := follow.ReasonLabels(fs)
	out := make([]inboxPaperJSON, 0, len(items))
	for _, it := range items {
		j := inboxPaperJSON{ArxivID: it.ArxivID, Title: it.Title, Authors: []string{}, Categories: it.Categories, AbsURL: it.AbsURL,
			Reasons: []reasonJSON{}, State: string(it.State), Replaced: it.Replaced}
		if j.Categories == nil {
			j.Categories = []string{}
		}
		for _, au := range it.Authors {
			j.Authors = append(j.Authors, au.Name)
		}
		for _, t := range it.Reasons {
			name := labels[t.Key()]
			if name == "" {
				name = t.DisplayName()
			}
			j.Reasons = append(j.Reasons, reasonJSON{Kind: string(t.Kind), ID: t.ID, Name: name})
		}
		if it.Feedback != "" {
			v := string(it.Feedback)
			j.Feedback = &v
		}
		out = append(out, j)
	}
	return out
}

// markAllRead is POST /v1/me/papers/read, optionally {"follow": {"kind",
// "id"}}: every unread matched paper (of that follow) marked read, the
// newest inbox.MaxMarkAll at most; done papers stay done. 200 with
// {"marked": N}.
func (a *API) markAllRead(w http.ResponseWriter, r *http.Request, u *account.User) error {
	var body struct {
		Follow *struct {
			Kind string `json:"kind"`
			ID   string `json:"id"`
		} `json:"follow"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body, true); err != nil {
			return err
		}
	}
	var only *follow.Target
	if body.Follow != nil {
		fs, err := a.Follows.All(r.Context(), u.ID)
		if err != nil {
			return err
		}
		// The body's follow is an object, as a mute's: its mistakes name
		// follow.kind and follow.id as a mute's do.
		t, err := follow.ParseRef("follow", body.Follow.Kind, body.Follow.ID)
		if err != nil {
			return err
		}
		if only, err = followed(t, fs); err != nil {
			return err
		}
	}
	n, err := a.Inbox.MarkAllRead(r.Context(), u.ID, only, 0)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"marked": n})
	return nil
}
