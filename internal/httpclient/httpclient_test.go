package httpclient

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUserAgent(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("User-Agent"))
	}))
	defer srv.Close()
	c := New(5*time.Second, 1024)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.Header.Get("User-Agent") != "" {
		t.Error("the caller's request was modified")
	}

	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	req.Header.Set("User-Agent", "custom/2")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if len(got) != 2 || got[0] != UserAgent || got[1] != "custom/2" {
		t.Fatalf("User-Agents seen = %q", got)
	}
}

func TestBodyCap(t *testing.T) {
	t.Log("hostile: limits")
	const limit = 100
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		} else if f, ok := w.(http.Flusher); ok {
			w.Write([]byte(strings.Repeat("y", 10)))
			f.Flush() // forces chunked encoding: no Content-Length
			n -= 10
		}
		w.Write([]byte(strings.Repeat("y", n)))
	}))
	defer srv.Close()
	c := New(5*time.Second, limit)

	for _, tc := range []struct {
		query   string
		wantErr bool
	}{
		{"n=0", false},
		{"n=100", false},
		{"n=101", true},
		{"n=100&chunked=1", false},
		{"n=101&chunked=1", true},
		{"n=100000&chunked=1", true},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, err := c.Get(srv.URL + "/?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if tc.wantErr {
				if !errors.Is(err, ErrBodyTooLarge) {
					t.Fatalf("err = %v, want ErrBodyTooLarge", err)
				}
				if len(b) > limit {
					t.Fatalf("read %d bytes past the cap", len(b))
				}
				// The error sticks.
				if _, err := resp.Body.Read(make([]byte, 10)); !errors.Is(err, ErrBodyTooLarge) {
					t.Fatalf("second Read err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "done")
			return
		}
		http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusFound)
	})
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.org/file", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(5*time.Second, 1024)

	resp, err := c.Get(srv.URL + "/hop/5")
	if err != nil {
		t.Fatalf("5 redirects: %v", err)
	}
	resp.Body.Close()

	if _, err := c.Get(srv.URL + "/hop/6"); err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Fatalf("6 redirects: err = %v", err)
	}
	if _, err := c.Get(srv.URL + "/ftp"); err == nil || !strings.Contains(err.Error(), `scheme "ftp"`) {
		t.Fatalf("redirect to ftp: err = %v", err)
	}
}

// hanging is a server that answers no request until the test ends.
func hanging(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv
}

func TestTimeout(t *testing.T) {
	t.Log("hostile: limits")
	srv := hanging(t)
	c := New(150*time.Millisecond, 1024)
	start := time.Now()
	_, err := c.Get(srv.URL)
	if err == nil {
		t.Fatal("want a timeout error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

func TestDefaults(t *testing.T) {
	c := New(0, 0)
	if c.Timeout != DefaultTimeout {
		t.Errorf("Timeout = %v", c.Timeout)
	}
	if tr := c.Transport.(*transport); tr.maxBody != DefaultMaxBody {
		t.Errorf("maxBody = %d", tr.maxBody)
	}
}
