package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"followfeed/account"
	"followfeed/apperr"
	"followfeed/follow"
	"followfeed/ranking"
	"followfeed/relevance"
)

// feedbackJSON is one feedback as the API shows it: value null when the
// paper has none.
type feedbackJSON struct {
	ArxivID   string     `json:"arxiv_id"`
	Title     string     `json:"title"`
	AbsURL    string     `json:"abs_url,omitempty"`
	Value     *string    `json:"value"`
	UpdatedAt *time.Time `json:"updated_at"`
}

func toFeedbackJSON(f ranking.Feedback) feedbackJSON {
	out := feedbackJSON{ArxivID: f.ArxivID, Title: f.Title, AbsURL: f.AbsURL}
	if f.Value != ranking.None {
		v := string(f.Value)
		out.Value = &v
		at := f.UpdatedAt.UTC()
		out.UpdatedAt = &at
	}
	return out
}

// putFeedback is PUT /v1/me/papers/{arxiv_id}/feedback: {"value": "more" |
// "less" | "saved" | null}.
func (a *API) putFeedback(w http.ResponseWriter, r *http.Request, u *account.User) error {
	var body struct {
		Value json.RawMessage `json:"value"`
	}
	if err := decodeJSON(r, &body, false); err != nil {
		return err
	}
	v := ranking.None
	switch string(body.Value) {
	case "":
		return apperr.InvalidField("value", `say what you think of the paper: {"value": "more"}, "less", "saved", or null to clear it`)
	case "null":
	default:
		var s string
		if err := json.Unmarshal(body.Value, &s); err != nil {
			return apperr.InvalidField("value", "must be one of more, less, saved or null")
		}
		var err error
		if v, err = ranking.ParseValue(s); err != nil {
			return err
		}
	}
	fb, err := a.Ranking.Set(r.Context(), u.ID, r.PathValue("arxiv_id"), v)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toFeedbackJSON(fb))
	return nil
}

// listFeedback is GET /v1/me/feedback?cursor=&limit=: the user's feedback,
// newest first.
func (a *API) listFeedback(w http.ResponseWriter, r *http.Request, u *account.User) error {
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > ranking.MaxPage {
			return apperr.InvalidField("limit", "must be a whole number from 1 to %d", ranking.MaxPage)
		}
		limit = n
	}
	page, err := a.Ranking.List(r.Context(), u.ID, q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	topics, behind, err := a.Ranking.Topics(r.Context(), u.ID)
	if err != nil {
		return err
	}
	out := struct {
		Feedback      []feedbackJSON `json:"feedback"`
		Next          string         `json:"next,omitempty"`
		Topics        []topicJSON    `json:"topics"`
		TopicsPending bool           `json:"topics_pending"`
	}{Feedback: make([]feedbackJSON, 0, len(page.Items)), Next: page.Next, Topics: toTopicsJSON(topics), TopicsPending: behind}
	for _, f := range page.Items {
		out.Feedback = append(out.Feedback, toFeedbackJSON(f))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// topicJSON is an arXiv category the user's marks move, as the API shows
// it: the category and its name, the effect ("fewer" or "more"; "none"
// when the marks are cancelled), the marks counted and the share of the
// whole effect reached.
type topicJSON struct {
	Category string  `json:"category"`
	Name     string  `json:"name,omitempty"`
	Effect   string  `json:"effect"`
	Less     int     `json:"less"`
	More     int     `json:"more"`
	Follows  int     `json:"follows"`
	Share    float64 `json:"share"`
}

// toTopicsJSON is topics as the API shows them, in their order; [] for
// none.
func toTopicsJSON(topics []relevance.Topic) []topicJSON {
	out := make([]topicJSON, 0, len(topics))
	for _, t := range topics {
		j := topicJSON{Category: t.Category, Effect: t.Effect(), Less: t.Less, More: t.More, Follows: t.Follows,
			Share: math.Round(float64(t.Share)*100) / 100}
		if c, ok := follow.LookupCategory(t.Category); ok {
			j.Name = c.Name
		}
		out = append(out, j)
	}
	return out
}
