package app_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"followfeed/app"
	"followfeed/harvest"
	"followfeed/internal/testapp"
)

// TestHarvestOnceTellsEachRetry: `harvest --once` against a repository
// that keeps answering 503 says what it harvests, then logs every retry
// with its attempt and wait (it used to be silent for minutes), and exits
// with an error naming the failure. It retries twice unless --retries
// says otherwise (0: none).
func TestHarvestOnceTellsEachRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		retries int
	}{{nil, 2}, {[]string{"--retries", "3"}, 3}, {[]string{"--retries=0"}, 0}} {
		var hits atomic.Int64
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		}))
		env := testapp.Env(t)
		env["ARXIV_OAI_URL"] = down.URL + "/oai"
		env["ARXIV_SETS"] = "cs"
		var out strings.Builder
		err := testapp.RunCommand(t, env, &out, append([]string{"harvest", "--once"}, tc.args...)...)
		down.Close()
		if err == nil || !strings.Contains(err.Error(), "503") {
			t.Errorf("%v: harvest against a down repository: %v, want an error naming the 503", tc.args, err)
		}
		text := out.String()
		if !strings.HasPrefix(text, "harvest: sets cs from "+down.URL+"/oai;") {
			t.Errorf("%v: harvest does not first say what it harvests:\n%s", tc.args, text)
		}
		retries := regexp.MustCompile(`msg="upstream request failed; retrying" url=\S+ attempt=(\d) retries=(\d) wait=1s error="HTTP 503`).FindAllStringSubmatch(text, -1)
		if len(retries) != tc.retries || int(hits.Load()) != tc.retries+1 {
			t.Fatalf("%v: %d retries logged for %d requests, want %d for %d:\n%s", tc.args, len(retries), hits.Load(), tc.retries, tc.retries+1, text)
		}
		for i, m := range retries {
			if m[1] != string(rune('1'+i)) || m[2] != strconv.Itoa(tc.retries) {
				t.Errorf("%v: retry %d logged as attempt %s of %s", tc.args, i+1, m[1], m[2])
			}
		}
	}
	var out strings.Builder
	err := testapp.RunCommand(t, testapp.Env(t), &out, "harvest", "--once", "--retries", "-1")
	var ue *app.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--retries must be between 0 and 20") {
		t.Errorf("--retries -1: %v", err)
	}
}

// TestHarvestOnceSaysAtOnceThatTheRepositoryIsUnreachable: against a
// repository whose name does not resolve (nonexistent.invalid: the
// resolver's NXDOMAIN) or one that refuses the connection (a closed port),
// `harvest --once` makes one request, retries nothing, and says that the
// repository cannot be reached and why (it used to retry for 2 m 35 s).
func TestHarvestOnceSaysAtOnceThatTheRepositoryIsUnreachable(t *testing.T) {
	t.Parallel()
	if _, err := net.DefaultResolver.LookupHost(t.Context(), "nonexistent.invalid"); !isNotFound(err) {
		t.Fatalf("this machine's resolver does not answer nonexistent.invalid with NXDOMAIN (%v); the test needs one that does", err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/oai"
	closed.Close()
	for _, tc := range []struct{ url, why string }{
		{"http://nonexistent.invalid/oai", "cannot reach nonexistent.invalid: its name does not resolve (DNS: no such host)"},
		{closedURL, "cannot reach " + closed.Addr().String() + ": it refused the connection"},
	} {
		env := testapp.Env(t)
		env["ARXIV_OAI_URL"] = tc.url
		env["ARXIV_SETS"] = "cs,math"
		var out strings.Builder
		err := testapp.RunCommand(t, env, &out, "harvest", "--once", "--retries", "5")
		if !errors.Is(err, harvest.ErrUnreachable) || strings.Count(err.Error(), tc.why) != 2 {
			t.Errorf("%s: err = %v, want each set's error to say %q", tc.url, err, tc.why)
		}
		text := out.String()
		if strings.Contains(text, "retrying") {
			t.Errorf("%s: an unreachable repository was retried:\n%s", tc.url, text)
		}
		if !strings.Contains(text, "harvest: the repository "+tc.url+" cannot be reached (not retried); check ARXIV_OAI_URL, DNS and the network") {
			t.Errorf("%s: no verdict line:\n%s", tc.url, text)
		}
	}
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
