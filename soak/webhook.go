package soak

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hookSink is a webhook receiver: it records every request (its path, which
// names the channel, its webhook-id, the papers it carries and whether its
// Standard Webhooks signature verifies with the channel's secret) and
// answers 204, or 503 while fail is set.
type hookSink struct {
	fail atomic.Bool

	mu      sync.Mutex
	secrets map[string]string // path → whsec_ secret
	got     []hookMsg
}

// hookMsg is one request the receiver answered.
type hookMsg struct {
	path, id, typ string
	papers        []string // arXiv ids
	at            time.Time
	status        int  // what the receiver answered
	signed        bool // the signature verified with the path's secret
}

func newHookSink() *hookSink { return &hookSink{secrets: map[string]string{}} }

// addChannel creates, for the user of token, an instant webhook channel
// posting to the receiver (base) at path, and expects its signing secret.
func (h *hookSink) addChannel(ctx context.Context, c *client, token, base, path string) error {
	r, err := c.must(ctx, "POST", "/v1/me/channels", token, map[string]any{"type": "webhook", "url": base + path, "mode": "instant"}, 201)
	if err != nil {
		return err
	}
	secret, err := jsonField(r.body, "secret")
	h.expect(path, secret)
	return err
}

// expect sets the signing secret of the channel posting to path.
func (h *hookSink) expect(path, secret string) {
	h.mu.Lock()
	h.secrets[path] = secret
	h.mu.Unlock()
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Papers []struct {
				ArxivID string `json:"arxiv_id"`
			} `json:"papers"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	m := hookMsg{path: r.URL.Path, id: r.Header.Get("webhook-id"), typ: ev.Type, at: time.Now(), status: http.StatusNoContent}
	for _, p := range ev.Data.Papers {
		m.papers = append(m.papers, p.ArxivID)
	}
	if h.fail.Load() {
		m.status = http.StatusServiceUnavailable
	}
	h.mu.Lock()
	m.signed = verifyWebhook(h.secrets[m.path], m.id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body)
	h.got = append(h.got, m)
	h.mu.Unlock()
	w.WriteHeader(m.status)
}

// received returns every request answered so far, in order.
func (h *hookSink) received() []hookMsg {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// verifyWebhook checks a Standard Webhooks signature: one of the
// space-separated "v1,<base64>" values is the HMAC-SHA256 of
// "id.timestamp.body" keyed with the secret's base64 part.
func verifyWebhook(secret, id, ts, sigs string, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, ok := strings.CutPrefix(s, "v1,")
		if !ok {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(v); err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// hookTally is what the receiver got, for one set of channels' paths.
type hookTally struct {
	requests, accepted, unsigned int
	// repeats are webhook-ids accepted (2xx) more than once; inFlight
	// of them were first accepted before cut (a worker killed between the
	// receiver's answer and the ledger's commit: at least once).
	repeats, inFlight int
	// paperTwice counts (channel, paper) pairs carried by more than one
	// distinct accepted event; papers maps each channel's path to the
	// papers its accepted events carried.
	paperTwice int
	papers     map[string]map[string]bool
}

// tallyHooks counts msgs: accepted requests, unsigned ones, repeated
// webhook-ids (and those first accepted before cut), and papers that
// reached a channel in two different events.
func tallyHooks(msgs []hookMsg, cut time.Time) hookTally {
	t := hookTally{papers: map[string]map[string]bool{}}
	first := map[string]time.Time{} // webhook-id → first accepted
	seen := map[string]bool{}
	events := map[string]map[string]string{} // path → paper → webhook-id
	for _, m := range msgs {
		t.requests++
		if !m.signed {
			t.unsigned++
		}
		if m.status/100 != 2 {
			continue
		}
		t.accepted++
		if at, ok := first[m.id]; ok {
			t.repeats++
			if at.Before(cut) {
				t.inFlight++
			}
			continue
		}
		first[m.id] = m.at
		if m.typ != "papers.matched" {
			continue
		}
		if events[m.path] == nil {
			events[m.path], t.papers[m.path] = map[string]string{}, map[string]bool{}
		}
		for _, p := range m.papers {
			if id, ok := events[m.path][p]; ok && id != m.id && !seen[m.path+" "+p] {
				t.paperTwice++
				seen[m.path+" "+p] = true
			}
			events[m.path][p] = m.id
			t.papers[m.path][p] = true
		}
	}
	return t
}
