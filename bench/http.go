package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FeedURLs are the private Atom feed paths of sampled users (relative,
// "/feeds/fft_….atom").
type FeedURLs []string

// MeasureRender times full renders of private feeds through the real HTTP
// handler (token lookup, feed query, reasons, Atom rendering), server side,
// without conditional headers: a warm-up pass, then the measured one.
func MeasureRender(h http.Handler, paths FeedURLs) ([]time.Duration, int, error) {
	if _, _, err := renderPass(h, paths); err != nil {
		return nil, 0, err
	}
	return renderPass(h, paths)
}

// renderPass times one full render of each of paths through h and returns
// the times and the bodies' average size; any status but 200 is an error.
func renderPass(h http.Handler, paths FeedURLs) ([]time.Duration, int, error) {
	out := make([]time.Duration, 0, len(paths))
	size := 0
	for _, p := range paths {
		req := httptest.NewRequest("GET", p, nil)
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			return nil, 0, fmt.Errorf("GET %s: %d %s", redact(p), rec.Code, rec.Body.String())
		}
		out = append(out, d)
		size += rec.Body.Len()
	}
	return out, size / max(len(paths), 1), nil
}

func redact(p string) string {
	return regexp.MustCompile(`fft_[A-Za-z0-9_-]+`).ReplaceAllString(p, "fft_…")
}

// Throughput drives GET requests at base+paths[i] from `clients` keep-alive
// connections for d and returns requests per second. headers(i) gives each
// request's extra headers (e.g. If-None-Match). Every response must have
// status want.
func Throughput(base string, paths []string, headers func(i int) http.Header, want int, clients int, d time.Duration) (float64, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; time.Now().Before(deadline); i += clients {
				k := i % len(paths)
				req, _ := http.NewRequest("GET", base+paths[k], nil)
				if headers != nil {
					for name, v := range headers(k) {
						req.Header[name] = v
					}
				}
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != want {
						err = fmt.Errorf("status %d, want %d", resp.StatusCode, want)
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds(), firstErr
}

// Serve runs h on a loopback port until the returned stop is called.
func Serve(h http.Handler) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// ServeProcess starts `exe serve` with env and returns its base URL, its
// pid and a stop function. Its output is discarded after the listening line.
func ServeProcess(ctx context.Context, exe string, env []string) (string, int, func(), error) {
	cmd := exec.CommandContext(ctx, exe, "serve")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`msg=listening .*?\baddr=(\S+)`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addr:
		return "http://" + a, cmd.Process.Pid, stop, nil
	case <-time.After(60 * time.Second):
		stop()
		return "", 0, nil, fmt.Errorf("serve did not start within 60s")
	}
}

// PeakRSS reads the peak resident set size (VmHWM) of a process, in bytes.
func PeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
