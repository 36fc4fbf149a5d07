package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"followfeed/httpapi"
	"followfeed/internal/testapp"
	"followfeed/internal/testjobs"
	"followfeed/internal/testpaper"
	"followfeed/worker"
)

// undocumented lists the members of v (decoded JSON) that schema does not
// name, by path: a webhook body's fields must all be in openapi.json.
func undocumented(schema *openapi3.Schema, v any, path string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p, ok := schema.Properties[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, undocumented(p.Value, x, path+"."+k)...)
		}
	case []any:
		for i, x := range v {
			out = append(out, undocumented(schema.Items.Value, x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// TestWebhookBudgetAndFeedbackLinks: a user whose digest settings say
// order best with max_papers 2 (PATCH /v1/me) and who marked pulsar papers
// "less" and lensing papers "more" (the rank_train jobs run by the
// service) gets, of five new
// papers, one signed event (verified with the Standard Webhooks library)
// of the two lensing papers, best first, saying three more are in the
// feed; each paper carries its feedback links (this user, this paper, each
// value), and every field of the body is in openapi.json's webhook schema
// and valid there. Two more papers the same day: the channel collects and
// sends nothing.
func TestWebhookBudgetAndFeedbackLinks(t *testing.T) {
	t.Parallel()
	a, c := start(t, "RATE_LIMIT_PER_USER", "0", "RATE_LIMIT_PER_IP", "0", "CHANNEL_ALLOW_HOSTS", "127.0.0.1")
	db := openDB(t, a.DatabaseURL)
	addrs := feedbackChecker(t, a)
	rc := newReceiver(t)
	tok := testapp.Token(t, "budgeted", "")
	c.Do("PUT", "/v1/me/follows/category/astro-ph.CO", tok, nil)
	if r := c.Do("PATCH", "/v1/me", tok, `{"digest": {"order": "best", "max_papers": 2}}`); r.Status != 200 {
		t.Fatalf("settings: %d %s", r.Status, r.Body)
	}
	w := testpaper.NewWriter(9, "2611", "astro-ph.CO")
	var lines []string
	for _, p := range w.Background(100) {
		lines = append(lines, testpaper.PushJSON(p))
	}
	marked := map[string]string{} // arXiv id → value
	for range 5 {
		less, more := w.Paper("pulsar"), w.Paper("lensing")
		marked[less.ArxivID], marked[more.ArxivID] = "less", "more"
		lines = append(lines, testpaper.PushJSON(less), testpaper.PushJSON(more))
	}
	pushPaper(t, c, lines...)
	for id, v := range marked {
		if r := c.Do("PUT", "/v1/me/papers/"+id+"/feedback", tok, `{"value": "`+v+`"}`); r.Status != 200 {
			t.Fatalf("feedback: %d %s", r.Status, r.Body)
		}
	}
	a.Jobs().WaitCompleted(t, db.Pool, worker.RankTrainArgs{}.Kind(), len(marked))
	matchIdle(t, a, db)
	r := c.Do("POST", "/v1/me/channels", tok, map[string]any{"type": "webhook", "url": rc.URL + "/hook", "mode": "instant"})
	var ch channelOut
	r.JSON(t, &ch)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}

	lines = nil
	var lensing []string
	for i := range 5 {
		topic := "pulsar"
		if i%2 == 1 {
			topic = "lensing"
		}
		p := w.Paper(topic)
		if topic == "lensing" {
			lensing = append(lensing, p.ArxivID)
		}
		lines = append(lines, testpaper.PushJSON(p))
	}
	pushPaper(t, c, lines...)
	waitFor(t, "the event", func() bool { return len(rc.got()) == 1 })
	q := rc.got()[0]
	wh, err := standardwebhooks.NewWebhook(ch.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(q.body, q.header); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var ev struct {
		Data struct {
			Papers []struct {
				ArxivID  string `json:"arxiv_id"`
				Feedback struct {
					More, Less, Save string
				} `json:"feedback"`
			} `json:"papers"`
			Order      string `json:"order"`
			MoreInFeed int    `json:"more_in_feed"`
		} `json:"data"`
	}
	if err := json.Unmarshal(q.body, &ev); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, p := range ev.Data.Papers {
		sent = append(sent, p.ArxivID)
		var paperID int64
		if err := db.Pool.QueryRow(context.Background(), `SELECT id FROM papers WHERE arxiv_id = $1`, p.ArxivID).Scan(&paperID); err != nil {
			t.Fatal(err)
		}
		for v, u := range map[string]string{"more": p.Feedback.More, "less": p.Feedback.Less, "saved": p.Feedback.Save} {
			_, pid, value, err := addrs.CheckFeedback(context.Background(), strings.TrimPrefix(u, a.URL+"/feedback/"))
			if err != nil || pid != paperID || value != v || !strings.HasPrefix(u, a.URL+"/feedback/ffl_") {
				t.Errorf("the %s link of %s (%s): paper %d, %q, %v", v, p.ArxivID, u, pid, value, err)
			}
		}
	}
	slices.Sort(sent)
	if !slices.Equal(sent, lensing) || ev.Data.Order != "best" || ev.Data.MoreInFeed != 3 {
		t.Errorf("sent %q (lensing %q), order %q, %d more in the feed:\n%s", sent, lensing, ev.Data.Order, ev.Data.MoreInFeed, q.body)
	}

	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["WebhookEvent"].Value
	var body any
	if err := json.Unmarshal(q.body, &body); err != nil {
		t.Fatal(err)
	}
	if err := schema.VisitJSON(body); err != nil {
		t.Errorf("the body does not match openapi.json's WebhookEvent: %v", err)
	}
	if u := undocumented(schema, body, "event"); len(u) != 0 {
		t.Errorf("fields not in openapi.json's WebhookEvent: %q", u)
	}

	// The same day, the budget is spent: the collection sends nothing.
	pushPaper(t, c, testpaper.PushJSON(w.Paper("lensing")), testpaper.PushJSON(w.Paper("galaxy")))
	matchIdle(t, a, db)
	a.Jobs().WaitIdle(t, db.Pool, worker.ChannelCollectArgs{}.Kind(), worker.ChannelDeliverArgs{}.Kind())
	if n := testjobs.Count(t, db.Pool, worker.ChannelCollectArgs{}.Kind()); n != 2 {
		t.Errorf("%d collections, want 2 (one per batch)", n)
	}
	if got := rc.got(); len(got) != 1 {
		t.Errorf("%d deliveries after the budget was spent: %s", len(got), got[len(got)-1].body)
	}
}
