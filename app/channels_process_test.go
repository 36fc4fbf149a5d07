package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"followfeed/internal/testdb"
	"followfeed/internal/testwait"
)

// TestKilledWorkerLosesNoChannelEvent: a worker process is killed (SIGKILL)
// while a webhook delivery is in flight; the event stays pending in the
// ledger with its job "running", and a second process rescues the job and
// delivers the event under the same webhook-id (at least once).
func TestKilledWorkerLosesNoChannelEvent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ids []string
	inFlight := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		first := len(ids) == 1
		mu.Unlock()
		if first {
			inFlight <- struct{}{}
			select { // hang until the worker is dead
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	defer close(release)

	env := baseEnv(t, testdb.URL(t))
	env["CHANNEL_ALLOW_HOSTS"] = "127.0.0.1"
	env["JOB_TIMEOUT"] = "1s"
	env["JOB_RESCUE_AFTER"] = "3s"
	env["JOB_RETRY_MAX"] = "1s"
	tok, err := command(t, env, "token", "--sub", "lab").Output()
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(tok))
	call := func(base, method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", bearer)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	first, base, _ := startProcess(t, env, "serve")
	code, body := call(base, "POST", "/v1/me/channels", `{"type": "webhook", "url": "`+srv.URL+`"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var ch struct{ ID int64 }
	_ = json.Unmarshal(body, &ch)
	if code, body := call(base, "POST", "/v1/me/channels/"+itoa(ch.ID)+"/test", ""); code != 202 {
		t.Fatalf("test: %d %s", code, body)
	}
	select {
	case <-inFlight:
	case <-time.After(20 * time.Second):
		t.Fatal("the delivery never reached the receiver")
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	_, base2, _ := startProcess(t, env, "serve")
	// River's rescuer looks every 30 s for jobs running past JOB_RESCUE_AFTER.
	if !testwait.Until(75*time.Second, func() bool {
		_, body = call(base2, "GET", "/v1/me/channels/"+itoa(ch.ID)+"/deliveries", "")
		return strings.Contains(string(body), `"event_state":"delivered"`)
	}) {
		t.Fatalf("the event was not delivered after the kill: %s", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) < 2 || ids[0] == "" || ids[len(ids)-1] != ids[0] {
		t.Errorf("webhook-ids %v: the redelivery must carry the first attempt's id", ids)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
