package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/inbox"
	"followfeed/paper"
	"followfeed/ranking"
)

// The inbox page (GET /inbox, a page of the settings session): the
// user's matched papers newest or best first, with reasons, state and
// feedback, filtered by follow and state, through the same inbox.List as
// GET /v1/me/papers. Every button is a CSRF-protected form that works
// without JavaScript (post/redirect/get back to the same view).

// inboxPageSize is how many papers one inbox page lists.
const inboxPageSize = 25

// inboxData is the inbox page's data.
type inboxData struct {
	Papers []inboxRow
	// The filters as asked, and the choices of each.
	Follow, State, Order string
	Follows              []inboxOption
	States               []inboxOption
	Orders               []inboxOption
	// Return is the view's query (filters and cursor), which every form
	// sends back so that its redirect shows the same view.
	Return string
	// More is the next page's link ("" on the last); Newest the first
	// page's ("" on it).
	More, Newest string
	// UpTo is the newest match seq the page selected: "mark all read"
	// stops there, so papers matched since stay unread.
	UpTo int64
	// Undo is the paper whose feedback was just given (nil: none).
	Undo *inboxUndo
	// Error says a filter or the cursor was not valid (the page answers
	// 422 and shows the unfiltered newest instead).
	Error string
}

// inboxOption is a choice of a filter (or a state button).
type inboxOption struct{ Value, Label string }

// inboxRow is one paper of the page.
type inboxRow struct {
	ArxivID, Title, AbsURL, Authors string
	Reasons                         []string
	State                           string
	StateLabel                      string
	// Marks are the state buttons to show: the states the paper is not in.
	Marks    []inboxOption
	Feedback string
	Values   []feedbackButton
	// MuteAuthors are the "Not from …" buttons of a paper marked less
	// like this (as its feedback link's page offers them): its authors
	// with a researcher id, but those the user follows.
	MuteAuthors []muteAuthor
}

type feedbackButton struct {
	Value, Label string
	Pressed      bool
}

// inboxView reads the view's parameters from q (follow kind:id, state,
// order, cursor) as inbox.ListQuery, checked against the user's follows.
func inboxView(q url.Values, fs []follow.Follow) (inbox.ListQuery, error) {
	lq := inbox.ListQuery{Cursor: q.Get("cursor"), Limit: inboxPageSize}
	var err error
	if lq.Best, err = parseOrderParam(q.Get("order")); err != nil {
		return lq, err
	}
	if lq.State, err = parseStateParam(q.Get("state")); err != nil {
		return lq, err
	}
	if s := q.Get("follow"); s != "" {
		if lq.Only, err = parseFollowParam(s, fs); err != nil {
			return lq, err
		}
	}
	return lq, nil
}

// viewQuery is the query string of a view: the filters of q, and cursor.
func viewQuery(q url.Values, cursor string) string {
	out := url.Values{}
	for _, k := range []string{"follow", "state", "order"} {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	if cursor != "" {
		out.Set("cursor", cursor)
	}
	return out.Encode()
}

// inboxPage is GET /inbox.
func (s *Settings) inboxPage(w http.ResponseWriter, r *http.Request) {
	v, _ := s.who(r, "")
	if v == nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	fs, err := s.Follows.All(ctx, v.userID)
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	q := r.URL.Query()
	status := http.StatusOK
	d := &inboxData{Follow: q.Get("follow"), State: q.Get("state"), Order: q.Get("order")}
	lq, err := inboxView(q, fs)
	var list inbox.Page
	if err == nil {
		list, err = s.Inbox.List(ctx, v.userID, lq)
	}
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		d.Error = "That view is not valid (" + e.Field + ": " + e.Message + "); here are your newest papers."
		status = statusFor(err) // Invalid: 422, from problem.go's table
		q = url.Values{}
		d.Follow, d.State, d.Order = "", "", ""
		list, err = s.Inbox.List(ctx, v.userID, inbox.ListQuery{Limit: inboxPageSize})
	}
	if err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	d.Return = viewQuery(q, q.Get("cursor"))
	d.UpTo = list.HighSeq
	if list.Next != "" {
		d.More = "/inbox?" + viewQuery(q, list.Next)
	}
	if q.Get("cursor") != "" {
		d.Newest = "/inbox?" + viewQuery(q, "")
	}
	d.Follows = []inboxOption{{Value: "", Label: "All follows"}}
	for _, f := range fs {
		d.Follows = append(d.Follows, inboxOption{Value: string(f.Kind) + ":" + f.ID, Label: f.DisplayName()})
	}
	d.States = []inboxOption{{"", "All"}, {"unread", "Unread"}, {"read", "Read"}, {"done", "Done"}}
	d.Orders = []inboxOption{{"", "Newest first"}, {"best", "Best first"}}
	labels := follow.ReasonLabels(fs)
	for _, it := range list.Items {
		row := inboxRow{ArxivID: it.ArxivID, Title: it.Title, AbsURL: it.AbsURL, State: string(it.State), StateLabel: it.State.Label(),
			Feedback: string(it.Feedback)}
		for i, au := range it.Authors {
			if i == 6 {
				row.Authors += ", et al."
				break
			}
			if i > 0 {
				row.Authors += ", "
			}
			row.Authors += au.Name
		}
		for _, t := range it.Reasons {
			name := labels[t.Key()]
			if name == "" {
				name = t.DisplayName()
			}
			row.Reasons = append(row.Reasons, name)
		}
		for _, st := range inbox.States {
			if st != it.State {
				label := "Mark " + string(st)
				row.Marks = append(row.Marks, inboxOption{Value: string(st), Label: label})
			}
		}
		for _, val := range ranking.Values {
			row.Values = append(row.Values, feedbackButton{Value: string(val), Label: val.Label(), Pressed: val == it.Feedback})
		}
		d.Papers = append(d.Papers, row)
	}
	if err := s.offerMutes(ctx, v.userID, list.Items, d.Papers); err != nil {
		writeError(w, r, s.Logger, err)
		return
	}
	flash := inboxFlashes[q.Get("done")]
	if q.Get("done") == "feedback" {
		if d.Undo, err = s.feedbackUndo(ctx, v.userID, q.Get("paper")); err != nil {
			writeError(w, r, s.Logger, err)
			return
		}
		if d.Undo != nil {
			flash = "Thanks: “" + d.Undo.Title + "” is marked " + d.Undo.Label + "."
		}
	}
	renderPage(w, r, s.Logger, status, "inbox.html", page{Title: "Inbox", SignedIn: true, CSRF: v.csrf, Nav: settingsNav("/inbox"),
		Flash: flash, Data: d})
}

// inboxUndo is the paper a feedback button was just pressed for, named
// at the top of the inbox with a button that takes it back: in best
// order the paper may have moved off the page.
type inboxUndo struct {
	ArxivID, Title, Label string
}

// feedbackUndo is the undo of the user's feedback on paper arxivID (the
// redirect's ?paper=), nil when it names no stored paper with feedback
// (a link kept from before, or feedback taken back meanwhile).
func (s *Settings) feedbackUndo(ctx context.Context, userID int64, arxivID string) (*inboxUndo, error) {
	fb, err := s.feedbackOn(ctx, userID, arxivID)
	if fb == nil || err != nil || fb.Value == ranking.None {
		return nil, err
	}
	return &inboxUndo{ArxivID: fb.ArxivID, Title: fb.Title, Label: "“" + fb.Value.Label() + "”"}, nil
}

// feedbackOn is the user's feedback on paper arxivID as a redirect's query
// names it (Value None when there is none), nil when that is no arXiv id
// or no stored paper: the inbox's Undo and the feedback list's "Put it
// back" offer nothing then.
func (s *Settings) feedbackOn(ctx context.Context, userID int64, arxivID string) (*ranking.Feedback, error) {
	id, _, err := paper.ParseArxivID(arxivID)
	if err != nil {
		return nil, nil
	}
	fb, err := s.Ranking.Get(ctx, userID, id)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &fb, nil
}

// offerMutes sets the "Not from …" buttons of the rows (of items, in
// their order) the user marked less like this: the authors with an id
// that they do not follow (one read of the follows among those papers'
// authors' ids, none without such a row).
func (s *Settings) offerMutes(ctx context.Context, userID int64, items []inbox.Item, rows []inboxRow) error {
	if s.Mutes == nil {
		return nil
	}
	var ids []string
	for _, it := range items {
		if it.Feedback == ranking.Less {
			for _, a := range it.Authors {
				ids = append(ids, a.IDs...)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	fs, err := s.Follows.Researchers(ctx, userID, ids)
	if err != nil {
		return err
	}
	followed := followedKeys(fs)
	for i, it := range items {
		if it.Feedback == ranking.Less {
			rows[i].MuteAuthors = muteAuthors(it.Authors, followed)
		}
	}
	return nil
}

// inboxFlashes are the inbox's messages after a form (?done=).
var inboxFlashes = map[string]string{
	"state":            "Saved.",
	"read":             "Marked read.",
	"feedback":         "Thanks: your feedback is saved.",
	"feedback-cleared": "Your feedback on that paper is taken back.",
	"muted":            "Muted: that author's papers leave your inbox, feeds, digests, alerts and push channels. Your mutes are under Follows.",
}

// inboxPost runs an inbox form for the signed-in viewer after the CSRF
// check, then redirects to the view the form came from (its "return"
// field: only the view's own parameters are kept) with done set. A bad
// field shows the inbox again with a 422.
func (s *Settings) inboxPost(w http.ResponseWriter, r *http.Request, act func(v *viewer) (string, error)) {
	v := s.formViewer(w, r, false)
	if v == nil {
		return
	}
	back, _ := url.ParseQuery(r.PostFormValue("return"))
	done, err := act(v)
	if err != nil {
		if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.NotFound) {
			msg := pageProblem(e.Field, e.Message)
			renderPage(w, r, s.Logger, statusFor(err), "message.html", page{Title: "Not saved", SignedIn: true,
				Lines: []string{"Not saved — " + msg}, Link: inboxURL(back, ""), LinkText: "Back to your inbox"})
			return
		}
		writeError(w, r, s.Logger, err)
		return
	}
	target := inboxURL(back, done)
	// Back at the paper the form was about (its row's id), not the top
	// of the list: a reader marking papers one by one keeps their place.
	if id, _, err := paper.ParseArxivID(r.PostFormValue("arxiv_id")); err == nil {
		if done == "feedback" {
			// Best first, the paper may have moved off the page (one
			// marked less goes last): the page names it, with an undo.
			target += "&paper=" + url.QueryEscape(id)
		}
		target += "#paper-" + id
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// inboxURL is the inbox's view of back (viewQuery) with done, when set,
// saying what was done: "/inbox", "/inbox?done=state",
// "/inbox?state=unread&done=read".
func inboxURL(back url.Values, done string) string {
	q := viewQuery(back, back.Get("cursor"))
	if done != "" {
		if q != "" {
			q += "&"
		}
		q += "done=" + url.QueryEscape(done)
	}
	if q == "" {
		return "/inbox"
	}
	return "/inbox?" + q
}

// postInboxState is POST /inbox/state: csrf, arxiv_id, state.
func (s *Settings) postInboxState(w http.ResponseWriter, r *http.Request) {
	s.inboxPost(w, r, func(v *viewer) (string, error) {
		st, err := inbox.ParseState(r.PostFormValue("state"))
		if err != nil {
			return "", err
		}
		_, err = s.Inbox.Set(r.Context(), v.userID, r.PostFormValue("arxiv_id"), st)
		return "state", err
	})
}

// postInboxRead is POST /inbox/read ("mark all read"): csrf, follow
// (kind:id, or empty for all), up_to (the newest seq the page showed).
func (s *Settings) postInboxRead(w http.ResponseWriter, r *http.Request) {
	s.inboxPost(w, r, func(v *viewer) (string, error) {
		var only *follow.Target
		if f := r.PostFormValue("follow"); f != "" {
			fs, err := s.Follows.All(r.Context(), v.userID)
			if err != nil {
				return "", err
			}
			if only, err = parseFollowParam(f, fs); err != nil {
				return "", err
			}
		}
		upTo, err := strconv.ParseInt(r.PostFormValue("up_to"), 10, 64)
		if err != nil || upTo < 0 {
			return "", apperr.InvalidField("up_to", "is not a place in your inbox: reload the page and try again")
		}
		_, err = s.Inbox.MarkAllRead(r.Context(), v.userID, only, upTo)
		return "read", err
	})
}

// postInboxMute is POST /inbox/mute: csrf, arxiv_id (the paper whose row
// the form is on, to return to), researcher (an author's id, a "Not from
// …" button): a mute of that researcher for every follow, as the feedback
// link's page makes (a session may mute anyone: the settings' mutes form
// takes any id, so the id is not checked against the paper's authors).
func (s *Settings) postInboxMute(w http.ResponseWriter, r *http.Request) {
	s.inboxPost(w, r, func(v *viewer) (string, error) {
		if s.Mutes == nil { // a server without mutes offers no such button
			return "", apperr.New(apperr.NotFound, "this server keeps no mutes")
		}
		return "muted", muteResearcher(r.Context(), s.Mutes, v.userID, r.PostFormValue("researcher"))
	})
}

// postInboxFeedback is POST /inbox/feedback: csrf, arxiv_id, value (more,
// less, saved; "" clears it).
func (s *Settings) postInboxFeedback(w http.ResponseWriter, r *http.Request) {
	s.inboxPost(w, r, func(v *viewer) (string, error) {
		val := ranking.None
		if raw := r.PostFormValue("value"); raw != "" {
			var err error
			if val, err = ranking.ParseValue(raw); err != nil {
				return "", err
			}
		}
		_, err := s.Ranking.Set(r.Context(), v.userID, r.PostFormValue("arxiv_id"), val)
		if val == ranking.None { // a pressed button pressed again
			return "feedback-cleared", err
		}
		return "feedback", err
	})
}
