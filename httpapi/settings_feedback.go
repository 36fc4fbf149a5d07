package httpapi

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/notify"
	"followfeed/ranking"
	"followfeed/relevance"
)

// The account page's feedback section (the user's feedback on papers,
// newest first, a page at a time, each with an undo button) and the email
// form's budget controls (order, max papers, keep followed).

// feedbackPageSize is how many feedback rows one settings page lists.
const feedbackPageSize = 20

// feedbackData is the feedback section.
type feedbackData struct {
	Rows []feedbackRow
	// More is the link to the next page ("" on the last); Newest the link
	// back to the first page ("" on it).
	More, Newest string
	// Error says the ?feedback= cursor was not one of this list's (the
	// first page shows instead).
	Error string
	// Restore is the feedback an Undo just removed, offered back ("Put it
	// back"); nil when there is none to offer.
	Restore *feedbackRestore
	// Topics are the arXiv categories the marks move as a whole, as the
	// model learnt them (ranking.Service.Topics); TopicsPending says a
	// change is yet to be learnt.
	Topics        []topicLine
	TopicsPending bool
}

// topicLine is one category the marks move, as the settings page says it:
// "Fewer papers of Computation and Language (cs.CL)" ("Not moved:" when
// the marks are cancelled), then the marks that count ("5 marked “Less
// like this”", the follows' papers that take a "less" back) and, short of
// the whole effect, how much of it they reach.
type topicLine struct {
	Effect, Where, Marks, Part string
}

// topicEffects are the page's words for a topic's effect.
var topicEffects = map[string]string{
	relevance.EffectFewer: "Fewer",
	relevance.EffectMore:  "More",
	relevance.EffectNone:  "Not moved:",
}

// topicLines are topics as the settings page says them.
func topicLines(topics []relevance.Topic) []topicLine {
	var out []topicLine
	for _, t := range topics {
		l := topicLine{Effect: topicEffects[t.Effect()], Where: t.Category}
		if c, ok := follow.LookupCategory(t.Category); ok {
			l.Where = c.Name + " (" + t.Category + ")"
		}
		var marks []string
		if t.Less > 0 {
			marks = append(marks, strconv.Itoa(t.Less)+" marked “Less like this”")
		}
		if t.More > 0 {
			more := strconv.Itoa(t.More) + " “More like this” or saved"
			if len(marks) == 0 {
				more = strconv.Itoa(t.More) + " marked “More like this” or saved"
			}
			marks = append(marks, more)
		}
		l.Marks = strings.Join(marks, ", ")
		if t.Follows > 0 && t.Less > t.More {
			// Each takes a "less" back (relevance.MarkedTopics).
			l.Marks += "; " + strconv.Itoa(t.Follows) + " recent papers there from your follows take back one “less” each"
		}
		if t.Share < 1 && !t.Held() {
			l.Part = strconv.Itoa(int(math.Round(float64(t.Share)*100))) + "% of the full effect so far"
		}
		out = append(out, l)
	}
	return out
}

// feedbackRestore is the feedback an Undo removed: its paper and the value
// it had (and its label). Put back, it is the newest: the button leads to
// the list's first page.
type feedbackRestore struct {
	ArxivID, Title, Label string
	Value                 ranking.Value
}

// feedbackRow is one paper's feedback in the list; Page is the cursor of
// the list's page it is on ("" the first), which its Undo comes back to.
type feedbackRow struct {
	ArxivID, Title, AbsURL, Label, Date, Page string
	Value                                     ranking.Value
}

// maxFeedbackCursor bounds the page cursor an Undo carries back (a list's
// cursor is some 40 bytes; a longer one is not the list's, and the Undo
// then comes back to the first page).
const maxFeedbackCursor = 200

// feedbackSection lists the viewer's feedback from cursor (a Next of an
// earlier page; "" for the newest). A cursor the list did not make shows
// the first page with Error set (the page answers 422).
func (s *Settings) feedbackSection(r *http.Request, v *viewer, cursor string) (*feedbackData, error) {
	d := &feedbackData{}
	page, err := s.Ranking.List(r.Context(), v.userID, cursor, feedbackPageSize)
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid && cursor != "" {
		d.Error = "That page of your feedback list is no longer valid; here are the newest."
		cursor = ""
		page, err = s.Ranking.List(r.Context(), v.userID, "", feedbackPageSize)
	}
	if err != nil {
		return nil, err
	}
	for _, f := range page.Items {
		d.Rows = append(d.Rows, feedbackRow{ArxivID: f.ArxivID, Title: f.Title, AbsURL: f.AbsURL, Value: f.Value,
			Label: f.Value.Label(), Date: f.UpdatedAt.Format("2 January 2006"), Page: cursor})
	}
	if page.Next != "" {
		d.More = sectionPath("account") + "?feedback=" + url.QueryEscape(page.Next) + "#feedback"
	}
	if cursor != "" {
		d.Newest = sectionPath("account") + "#feedback"
	}
	q := r.URL.Query()
	if d.Restore, err = s.feedbackRestore(r, v, q.Get("undone"), q.Get("was")); err != nil {
		return nil, err
	}
	topics, pending, err := s.Ranking.Topics(r.Context(), v.userID)
	if err != nil {
		return nil, err
	}
	d.Topics, d.TopicsPending = topicLines(topics), pending
	return d, nil
}

// feedbackRestore is the offer to put back the feedback an Undo removed:
// the redirect's ?undone= (the paper) and ?was= (the value it had), nil
// when they name no stored paper or no value, or when the paper has
// feedback again (put back, or given again from another tab).
func (s *Settings) feedbackRestore(r *http.Request, v *viewer, undone, was string) (*feedbackRestore, error) {
	if undone == "" || r.Method != http.MethodGet {
		return nil, nil
	}
	val, err := ranking.ParseValue(was)
	if err != nil || val == ranking.None {
		return nil, nil
	}
	fb, err := s.feedbackOn(r.Context(), v.userID, undone)
	if fb == nil || err != nil || fb.Value != ranking.None {
		return nil, err
	}
	return &feedbackRestore{ArxivID: fb.ArxivID, Title: fb.Title, Label: val.Label(), Value: val}, nil
}

// postFeedback is the feedback list's undo button (POST /settings/feedback:
// csrf, arxiv_id, value "" to clear, or more, less, saved; page, the
// cursor of the list's page the button is on; was, the value an Undo
// removes): an Undo comes back to that page of the list (an older page's
// Undo no longer lands on the newest), where its feedback is offered back;
// a value put back comes to the first page, where it now is.
func (s *Settings) postFeedback(w http.ResponseWriter, r *http.Request) {
	s.post(w, r, false, func(v *viewer) (string, error) {
		val := ranking.None
		if raw := r.PostFormValue("value"); raw != "" {
			var err error
			if val, err = ranking.ParseValue(raw); err != nil {
				return "", err
			}
		}
		if _, err := s.Ranking.Set(r.Context(), v.userID, r.PostFormValue("arxiv_id"), val); err != nil {
			return "", err
		}
		if val != ranking.None {
			// A value given (Put it back) is the newest feedback, on the
			// first page: the list shows it there.
			return "feedback-set", nil
		}
		// An Undo comes back to its page, which offers its value back
		// (its form says what the row had).
		done := "feedback"
		if page := r.PostFormValue("page"); page != "" && len(page) <= maxFeedbackCursor {
			done += "&feedback=" + url.QueryEscape(page)
		}
		if was, err := ranking.ParseValue(r.PostFormValue("was")); err == nil && was != ranking.None {
			done += "&undone=" + url.QueryEscape(r.PostFormValue("arxiv_id")) + "&was=" + url.QueryEscape(string(was))
		}
		return done, nil
	})
}

// budgetPatch reads the email form's budget controls into d: order,
// max_papers (0 to notify.MaxPapersLimit) and the keep_followed checkbox.
// A form without them (order absent: an older page, a script) leaves the
// budget as it is; an unchecked box is sent as no field, so it is read
// only with the order it comes with.
func budgetPatch(r *http.Request, d *notify.DigestPatch) error {
	if _, ok := r.PostForm["order"]; !ok {
		return nil
	}
	order := r.PostFormValue("order")
	d.Order = &order
	if raw, ok := r.PostForm["max_papers"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(raw[0]))
		if err != nil {
			return apperr.InvalidField("digest.max_papers", "must be a whole number of papers from 0 (as many as a mail holds) to %d", notify.MaxPapersLimit)
		}
		d.MaxPapers = &n
	}
	keep := r.PostFormValue("keep_followed") != ""
	d.KeepFollowed = &keep
	return nil
}
