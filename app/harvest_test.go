package app_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"followfeed/internal/testapp"
)

// TestHarvestOnceTellsEachRetry: `harvest --once` against a repository
// that keeps answering 503 says what it harvests, then logs every retry
// with its attempt and wait (it used to be silent for minutes), and exits
// with an error naming the failure.
func TestHarvestOnceTellsEachRetry(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	env := testapp.Env(t)
	env["ARXIV_OAI_URL"] = down.URL + "/oai"
	env["ARXIV_SETS"] = "cs"
	var out strings.Builder
	err := testapp.RunCommand(t, env, &out, "harvest", "--once")
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("harvest against a down repository: %v, want an error naming the 503", err)
	}
	text := out.String()
	if !strings.HasPrefix(text, "harvest: sets cs from "+down.URL+"/oai;") {
		t.Errorf("harvest does not first say what it harvests:\n%s", text)
	}
	retries := regexp.MustCompile(`msg="upstream request failed; retrying" url=\S+ attempt=(\d) retries=5 wait=1s error="HTTP 503`).FindAllStringSubmatch(text, -1)
	if len(retries) != 5 || int(hits.Load()) != 6 {
		t.Fatalf("%d retries logged for %d requests, want 5 for 6:\n%s", len(retries), hits.Load(), text)
	}
	for i, m := range retries {
		if m[1] != string(rune('1'+i)) {
			t.Errorf("retry %d logged as attempt %s", i+1, m[1])
		}
	}
}
