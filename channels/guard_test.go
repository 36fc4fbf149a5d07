package channels

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestInternalAddressesAreRefused(t *testing.T) {
	t.Log("hostile: deliveries never connect to internal addresses")
	for _, s := range []string{
		"127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "10.0.0.1", "172.16.0.1",
		"192.168.0.1", "169.254.169.254", "169.254.1.1", "fe80::1", "100.64.0.1", "100.127.255.254", "224.0.0.1",
		"ff02::1", "0.0.0.0", "::", "fd00:ec2::254", "fc00::1", "64:ff9b::7f00:1", "2002:7f00:1::", "255.255.255.255",
		"::7f00:1", "198.18.0.1", "fe80::1%eth0",
	} {
		if !Internal(netip.MustParseAddr(s)) {
			t.Errorf("%s is not refused", s)
		}
	}
	for _, s := range []string{"93.184.215.14", "2606:4700::6810:84e5", "1.1.1.1", "100.128.0.1"} {
		if Internal(netip.MustParseAddr(s)) {
			t.Errorf("public %s is refused", s)
		}
	}
}

// TestConnectTimeCheckFollowsResolution: the check runs on the resolved
// address, so a public-looking name that resolves inside (here
// "localhost.", standing in for DNS rebinding) is refused when connecting,
// as are literal forms; an allow-listed host is reached.
func TestConnectTimeCheckFollowsResolution(t *testing.T) {
	hit := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit++
		http.Redirect(w, r, "http://example.org/", http.StatusFound)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	g := NewGuard(nil)
	c := g.Client()
	for _, host := range []string{"localhost", "127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+host+":"+port+"/", nil)
		_, err := c.Do(req)
		cancel()
		if !errors.Is(err, ErrInternalAddress) {
			t.Errorf("%s: %v, want ErrInternalAddress", host, err)
		}
	}
	if hit != 0 {
		t.Fatalf("the guarded client reached the server %d times", hit)
	}
	resp, err := NewGuard([]string{"127.0.0.1"}).Client().Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hit != 1 {
		t.Errorf("allow-listed: %d after %d requests; the redirect must not be followed", resp.StatusCode, hit)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h, body string
		want    time.Duration
	}{
		{"7", "", 7 * time.Second},
		{now.Add(90 * time.Second).Format(http.TimeFormat), "", 90 * time.Second},
		{"", `{"retry_after": 2.5}`, 2500 * time.Millisecond},
		{"", `{"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 3000}`, 3 * time.Second},
		{"", "", defaultRetryAfter},
		{"999999", "", maxRetryAfter},
	} {
		if got := retryAfter(c.h, []byte(c.body), now); got != c.want {
			t.Errorf("%q %q: %s, want %s", c.h, c.body, got, c.want)
		}
	}
}
