package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"followfeed/internal/httpclient"
)

func TestCleanArxivID(t *testing.T) {
	cases := map[string]string{
		"2202.02326":          "2202.02326",
		" 2202.02326v12 ":     "2202.02326",
		"hep-th/9504118v1":    "hep-th/9504118",
		"math.GT/0309136":     "math.GT/0309136",
		"0704.0001":           "0704.0001",
		"":                    "",
		"no-digits":           "",
		"2202.02326 junk":     "",
		"../../etc/passwd1":   "",
		"a|b1":                "",
		"2202.02326,2101.001": "",
	}
	for in, want := range cases {
		got, ok := CleanArxivID(in)
		if got != want || ok != (want != "") {
			t.Errorf("CleanArxivID(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestPublicNamesTheFailureNotItsText: each upstream failure, as the
// retrying getter really returns it, gets its fixed public sentence, which
// carries no host, port, URL or body; an error of anything else is not
// described.
func TestPublicNamesTheFailureNotItsText(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "secret body text", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "secret body text", http.StatusNotFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 2048)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()
	g := &httpclient.Getter{Client: httpclient.New(200*time.Millisecond, 1024), MaxRetries: 1, MaxBody: 1024,
		Now: time.Now, Sleep: func(ctx context.Context, d time.Duration) error { return nil }}
	get := func(u string) error {
		resp, err := Fetch(t.Context(), g, u)
		if err == nil && resp.Status/100 != 2 {
			err = resp.StatusError()
		}
		return err
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{get(closedURL), "the source cannot be reached: it refused the connection (nothing listens on that port)"},
		{get(srv.URL + "/down"), "the source answered HTTP 503 Service Unavailable"},
		{get(srv.URL + "/gone"), "the source answered HTTP 404 Not Found"},
		{get(srv.URL + "/big"), "the source's response exceeded the size cap"},
		{get(srv.URL + "/slow"), "the source did not answer in time"},
		{fmt.Errorf("parsing: %w: unexpected EOF at %s", ErrMalformed, srv.URL), "the source's response could not be used (malformed, truncated or not the expected document)"},
	} {
		got, ok := Public(tc.err)
		if !ok || got != tc.want {
			t.Errorf("Public(%v) = %q, %v; want %q", tc.err, got, ok, tc.want)
		}
		if strings.Contains(got, "127.0.0.1") || strings.Contains(got, "secret") {
			t.Errorf("Public(%v) = %q shows the error's text", tc.err, got)
		}
	}
	if got, ok := Public(errors.New(`ERROR: value "2147483648" is out of range for type integer (SQLSTATE 22003)`)); ok {
		t.Errorf("an internal error was described as %q", got)
	}
}
