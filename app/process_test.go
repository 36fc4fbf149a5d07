package app_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"followfeed/internal/testdb"
	"followfeed/internal/testwait"
)

// binary is the followfeed command built once for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "followfeed-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "followfeed")
	out, err := exec.Command("go", "build", "-o", binary, "followfeed/cmd/followfeed").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building followfeed: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// command prepares the binary with exactly env (plus PATH).
func command(t *testing.T, env map[string]string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func baseEnv(t *testing.T, dbURL string) map[string]string {
	return map[string]string{
		"DATABASE_URL":     dbURL,
		"HTTP_ADDR":        "127.0.0.1:0",
		"HARVEST_INTERVAL": "0",
		"MAIL_DIR":         t.TempDir(),
		"SHUTDOWN_TIMEOUT": "10s",
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestInvalidConfigExitsTwoNamingTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, key, value string }{
		{"bad HTTP_ADDR", "HTTP_ADDR", "nonsense"},
		{"bad port", "HTTP_ADDR", "127.0.0.1:70000"},
		{"bad DATABASE_URL", "DATABASE_URL", "postgres://u@host:notaport/db"},
		{"bad APP_ENV", "APP_ENV", "staging"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := baseEnv(t, "postgres://postgres@127.0.0.1:1/none")
			env[tc.key] = tc.value
			var stderr bytes.Buffer
			cmd := command(t, env, "serve")
			cmd.Stderr = &stderr
			err := cmd.Run()
			if code := exitCode(err); code != 2 {
				t.Fatalf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, tc.key) {
				t.Errorf("want one line naming %s, got %q", tc.key, msg)
			}
		})
	}
}

func TestUnknownCommandAndHelp(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := command(t, nil, "--help")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, sub := range []string{"serve", "api", "worker", "migrate", "token"} {
		if !strings.Contains(out.String(), "  "+sub+" ") {
			t.Errorf("--help does not list %s:\n%s", sub, out.String())
		}
	}
	if code := exitCode(command(t, nil, "frobnicate").Run()); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

func TestServeRefusesAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	env := baseEnv(t, testdb.EmptyURL(t))
	var stderr bytes.Buffer
	cmd := command(t, env, "serve")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := exitCode(err); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr %q", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "run `followfeed migrate`") || !strings.Contains(stderr.String(), "serve --migrate") {
		t.Errorf("message should say how to migrate: %q", stderr.String())
	}
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	t.Parallel()
	t.Run("twice in a row", func(t *testing.T) {
		t.Parallel()
		env := baseEnv(t, testdb.EmptyURL(t))
		out1, err := command(t, env, "migrate").CombinedOutput()
		if err != nil {
			t.Fatalf("first migrate: %v\n%s", err, out1)
		}
		if !regexp.MustCompile(`applied \d+ app and \d+ River migrations`).Match(out1) {
			t.Errorf("first migrate output: %s", out1)
		}
		out2, err := command(t, env, "migrate").CombinedOutput()
		if err != nil {
			t.Fatalf("second migrate: %v\n%s", err, out2)
		}
		if !strings.Contains(string(out2), "nothing to do") {
			t.Errorf("second migrate should be a no-op: %s", out2)
		}
	})
	t.Run("two processes at once", func(t *testing.T) {
		t.Parallel()
		env := baseEnv(t, testdb.EmptyURL(t))
		var wg sync.WaitGroup
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i] = command(t, env, "migrate").CombinedOutput()
			}()
		}
		wg.Wait()
		applied := 0
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("migrate %d failed: %v\n%s", i, errs[i], outs[i])
			}
			if strings.Contains(string(outs[i]), "applied") && !strings.Contains(string(outs[i]), "nothing to do") {
				applied++
			}
		}
		if applied != 1 {
			t.Errorf("exactly one process should have applied the migrations, %d did:\n%s\n---\n%s", applied, outs[0], outs[1])
		}
	})
}

// startProcess runs `followfeed serve` and returns its base URL once it
// listens.
func startProcess(t *testing.T, env map[string]string, args ...string) (*exec.Cmd, string, *lockedBuffer) {
	t.Helper()
	cmd := command(t, env, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("process output:\n%s", logs.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`msg=listening .*?\baddr=(\S+)`)
		sent := false
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
	}()
	select {
	case a := <-addr:
		return cmd, "http://" + a, logs
	case <-time.After(30 * time.Second):
		t.Fatalf("process did not listen within 30s:\n%s", logs.String())
	}
	return nil, "", nil
}

func TestTokenMintedByTheCommandWorksAgainstTheService(t *testing.T) {
	t.Parallel()
	env := baseEnv(t, testdb.URL(t))
	_, base, logs := startProcess(t, env, "serve")
	tok, err := command(t, env, "token", "--sub", "alice", "--email", "alice@example.org").Output()
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	req, _ := http.NewRequest("GET", base+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"sub":"alice"`) || !strings.Contains(string(body), `"email_confirmed":true`) {
		t.Fatalf("GET /v1/me with a minted token: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	// In development the start-up output says how to get a token and
	// where to use it.
	hinted := func() bool {
		out := logs.String()
		return strings.Contains(out, "token --sub") && strings.Contains(out, base+"/v1/me")
	}
	if !testwait.Until(5*time.Second, hinted) {
		t.Errorf("start-up output does not say how to try the service:\n%s", logs.String())
	}
}

// TestSIGTERMLetsTheRequestInFlightFinish sends SIGTERM while a client is
// still uploading a request body: the server must stop accepting new
// connections, finish that request, answer it, and exit 0 within the soft
// timeout.
func TestSIGTERMLetsTheRequestInFlightFinish(t *testing.T) {
	t.Parallel()
	env := baseEnv(t, testdb.URL(t))
	cmd, base, logs := startProcess(t, env, "serve")
	tok, err := command(t, env, "token", "--sub", "slow-client").Output()
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"label": "slowly sent"}`
	fmt.Fprintf(conn, "PUT /v1/me/follows/category/cs.LG HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		host, strings.TrimSpace(string(tok)), len(body))
	fmt.Fprint(conn, body[:5]) // the handler is now waiting for the rest
	// The server must have read the headers and be in the handler when
	// SIGTERM comes; nothing crosses the process boundary to say so.
	time.Sleep(300 * time.Millisecond)

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The listener closes promptly: new connections are refused.
	if !testwait.Until(5*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	}) {
		t.Fatal("server still accepts connections 5s after SIGTERM")
	}
	// The request stays in flight a while after the listener closed: the
	// shutdown must wait for it, not merely outrun it.
	time.Sleep(500 * time.Millisecond)
	fmt.Fprint(conn, body[5:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the in-flight response: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(got), "slowly sent") {
		t.Fatalf("in-flight request: %d %s", resp.StatusCode, got)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0\n%s", code, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("process did not exit within the 10s soft timeout (+5s)")
	}
	if time.Since(start) > 12*time.Second {
		t.Errorf("shutdown took %s", time.Since(start))
	}
	if !strings.Contains(logs.String(), "msg=stopped") {
		t.Errorf("no clean stop logged:\n%s", logs.String())
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestHarvestOnceCommand(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../harvest/testdata/oai/listrecords-arXiv-complete-list.xml")
	if err != nil {
		t.Fatal(err)
	}
	oai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	defer oai.Close()
	env := baseEnv(t, testdb.URL(t))
	env["ARXIV_OAI_URL"] = oai.URL
	env["ARXIV_OAI_FORMAT"] = "arXiv"
	out, err := command(t, env, "harvest", "--once").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "harvest: 1 pages, 2 records: 2 new") {
		t.Fatalf("harvest --once: %v\n%s", err, out)
	}
	out, err = command(t, env, "harvest", "--once").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 new") {
		t.Fatalf("second harvest --once: %v\n%s", err, out)
	}
	if code := exitCode(command(t, env, "harvest").Run()); code != 2 {
		t.Errorf("harvest without --once: exit %d, want 2", code)
	}
}
