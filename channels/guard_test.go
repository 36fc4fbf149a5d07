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

	"followfeed/apperr"
)

// addrCase is one address and the guard's verdict, with the reason.
type addrCase struct {
	addr     string
	internal bool
	why      string
}

// ipv4Cases go through IANA's IPv4 Special-Purpose Address Registry (RFC
// 6890 and its updates) block by block, with the addresses just outside
// each refused block. Refused: every block that is not globally reachable
// (a host there is on the operator's network, or nowhere), and 192.0.0.0/24
// whole. Allowed: the blocks the registry marks globally reachable, which
// are public anycast services (AS112, AMT) and the deprecated 6to4 relay
// anycast (RFC 7526), none of them inside anybody's network.
var ipv4Cases = []addrCase{
	{"0.0.0.0", true, `"this host on this network" (0.0.0.0/8): connects to the local host`},
	{"0.1.2.3", true, "0.0.0.0/8"},
	{"10.0.0.1", true, "private (RFC 1918)"},
	{"10.255.255.255", true, "private (RFC 1918)"},
	{"100.64.0.1", true, "shared address space, CGNAT (RFC 6598)"},
	{"100.127.255.254", true, "shared address space, CGNAT (RFC 6598)"},
	{"127.0.0.1", true, "loopback"},
	{"127.255.0.9", true, "loopback (127.0.0.0/8)"},
	{"169.254.169.254", true, "link-local: the cloud metadata service"},
	{"169.254.0.1", true, "link-local"},
	{"172.16.0.1", true, "private (RFC 1918)"},
	{"172.31.255.255", true, "private (RFC 1918)"},
	{"192.0.0.1", true, "IETF protocol assignments (192.0.0.0/24), DS-Lite 192.0.0.0/29"},
	{"192.0.0.8", true, "IPv4 dummy address (RFC 7600)"},
	{"192.0.0.9", true, "PCP anycast: globally reachable, but refused with the rest of 192.0.0.0/24"},
	{"192.0.0.170", true, "NAT64/DNS64 discovery (RFC 7050)"},
	{"192.0.0.255", true, "192.0.0.0/24"},
	{"192.0.2.1", true, "documentation, TEST-NET-1"},
	{"192.168.0.1", true, "private (RFC 1918)"},
	{"192.168.255.255", true, "private (RFC 1918)"},
	{"198.18.0.1", true, "benchmarking (RFC 2544)"},
	{"198.19.255.255", true, "benchmarking (198.18.0.0/15)"},
	{"198.51.100.7", true, "documentation, TEST-NET-2"},
	{"203.0.113.9", true, "documentation, TEST-NET-3"},
	{"224.0.0.1", true, "multicast"},
	{"233.252.0.1", true, "multicast, MCAST-TEST-NET (RFC 6676)"},
	{"239.255.255.250", true, "multicast (SSDP)"},
	{"240.0.0.1", true, "reserved (240.0.0.0/4)"},
	{"255.255.255.254", true, "reserved (240.0.0.0/4)"},
	{"255.255.255.255", true, "limited broadcast"},

	{"1.1.1.1", false, "public"},
	{"8.8.8.8", false, "public"},
	{"93.184.215.14", false, "public"},
	{"9.255.255.255", false, "just below 10.0.0.0/8"},
	{"11.0.0.0", false, "just above 10.0.0.0/8"},
	{"100.63.255.255", false, "just below 100.64.0.0/10"},
	{"100.128.0.1", false, "just above 100.64.0.0/10"},
	{"126.255.255.255", false, "just below 127.0.0.0/8"},
	{"128.0.0.1", false, "just above 127.0.0.0/8"},
	{"169.253.255.255", false, "just below 169.254.0.0/16"},
	{"169.255.0.1", false, "just above 169.254.0.0/16"},
	{"172.15.255.255", false, "just below 172.16.0.0/12"},
	{"172.32.0.1", false, "just above 172.16.0.0/12"},
	{"192.0.1.1", false, "between 192.0.0.0/24 and 192.0.2.0/24"},
	{"192.0.3.1", false, "just above 192.0.2.0/24"},
	{"192.31.196.1", false, "AS112-v4 (RFC 7535): globally reachable"},
	{"192.52.193.1", false, "AMT (RFC 7450): globally reachable"},
	{"192.88.99.1", false, "deprecated 6to4 relay anycast (RFC 7526): globally reachable, a public relay"},
	{"192.167.255.255", false, "just below 192.168.0.0/16"},
	{"192.169.0.1", false, "just above 192.168.0.0/16"},
	{"192.175.48.1", false, "direct delegation AS112 (RFC 7534): globally reachable"},
	{"198.17.255.255", false, "just below 198.18.0.0/15"},
	{"198.20.0.1", false, "just above 198.18.0.0/15"},
	{"198.51.99.255", false, "just below 198.51.100.0/24"},
	{"198.51.101.0", false, "just above 198.51.100.0/24"},
	{"203.0.112.255", false, "just below 203.0.113.0/24"},
	{"203.0.114.0", false, "just above 203.0.113.0/24"},
	{"223.255.255.255", false, "just below multicast"},
}

// ipv6Cases go through IANA's IPv6 Special-Purpose Address Registry and
// the forms that embed or reach an IPv4 address. A translator (NAT64,
// 6to4, Teredo) reaches whatever IPv4 address the operator's network
// routes it to, so those prefixes are refused whatever they embed; a
// public host has an address of its own.
var ipv6Cases = []addrCase{
	{"::", true, "unspecified"},
	{"::1", true, "loopback"},
	{"::7f00:1", true, "IPv4-compatible (::/96, deprecated) of 127.0.0.1"},
	{"::808:808", true, "IPv4-compatible (::/96, deprecated) of a public address: never a destination"},
	{"64:ff9b::7f00:1", true, "NAT64 (RFC 6052) to 127.0.0.1"},
	{"64:ff9b::a00:1", true, "NAT64 to 10.0.0.1"},
	{"64:ff9b::a9fe:a9fe", true, "NAT64 to 169.254.169.254"},
	{"64:ff9b::808:808", true, "NAT64 to a public address: the operator's translator, refused whole"},
	{"64:ff9b:1::a00:1", true, "local-use NAT64 (RFC 8215)"},
	{"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", true, "local-use NAT64 (64:ff9b:1::/48)"},
	{"::ffff:0:a00:1", true, "IPv4-translated (::ffff:0:0:0/96, RFC 2765) of 10.0.0.1"},
	{"100::1", true, "discard-only (RFC 6666)"},
	{"100:0:0:1::1", true, "dummy prefix (RFC 9780)"},
	{"200::1", true, "reserved by the IETF (outside 2000::/3)"},
	{"1fff:ffff::1", true, "reserved by the IETF, just below 2000::/3"},
	{"2001:2::1", true, "benchmarking (RFC 5180)"},
	{"2001:2:0:ffff::1", true, "benchmarking (2001:2::/48)"},
	{"3fff::1", true, "documentation (RFC 9637)"},
	{"3fff:fff:ffff::1", true, "documentation (3fff::/20)"},
	{"4000::1", true, "reserved by the IETF, just above 2000::/3"},
	{"5f00::1", true, "SRv6 SIDs (RFC 9602): network functions inside an operator's domain"},
	{"5f00:ffff::1", true, "SRv6 SIDs (5f00::/16)"},
	{"8000::1", true, "reserved by the IETF"},
	{"2001::1", true, "Teredo (2001::/32)"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true, "Teredo (RFC 4380's example): embeds a client IPv4 address"},
	{"2001:10::1", true, "ORCHID (deprecated)"},
	{"2001:db8::1", true, "documentation"},
	{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true, "documentation (2001:db8::/32)"},
	{"2002:7f00:1::", true, "6to4 (RFC 3056) of 127.0.0.1"},
	{"2002:a00:1::1", true, "6to4 of 10.0.0.1"},
	{"2002:808:808::1", true, "6to4 of a public address: a relay, refused whole"},
	{"fc00::1", true, "unique local (fc00::/7)"},
	{"fd00:ec2::254", true, "unique local: the EC2 IPv6 metadata service"},
	{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true, "unique local (fc00::/7)"},
	{"fe80::1", true, "link-local"},
	{"fe80::1%eth0", true, "link-local with a zone"},
	{"febf:ffff::1", true, "link-local (fe80::/10)"},
	{"fec0::1", true, "site-local (deprecated, RFC 3879)"},
	{"feff:ffff::1", true, "site-local (fec0::/10)"},
	{"ff02::1", true, "multicast, link-local all nodes"},
	{"ff05::1:3", true, "multicast, site-local DHCP servers"},
	{"ff0e::1", true, "multicast, global scope: never a webhook"},

	{"2606:4700::6810:84e5", false, "public"},
	{"2a00:1450:4001:81c::200e", false, "public"},
	{"2001:4860:4860::8888", false, "public (a public resolver inside 2001::/16)"},
	{"2001:200::1", false, "public, just above 2001::/23"},
	{"2001:3::1", false, "AMT (RFC 7450): globally reachable"},
	{"2001:4:112::1", false, "AS112-v6 (RFC 7535): globally reachable"},
	{"2001:2:1::1", false, "just above 2001:2::/48"},
	{"3ffe:ffff::1", false, "just below 3fff::/20 (the old 6bone, returned: global unicast)"},
	{"3fff:1000::1", false, "just above 3fff::/20"},
	{"2c0f:f248::1", false, "public (AfriNIC)"},
	{"2001:db7:ffff::1", false, "just below 2001:db8::/32"},
	{"2001:db9::1", false, "just above 2001:db8::/32"},
	{"2003::1", false, "public, just above 2002::/16"},
	{"2620:4f:8000::1", false, "direct delegation AS112 (RFC 7534): globally reachable"},
}

// TestInternal: every address of the registries' blocks gets the verdict
// of its case, an IPv4 address also in its IPv4-mapped form (::ffff:a.b.c.d,
// which dials the IPv4 address), and CheckURL and the connect-time check
// agree with Internal.
func TestInternal(t *testing.T) {
	t.Log("hostile: ssrf")
	g := NewGuard(nil)
	check := func(c addrCase) {
		t.Helper()
		a := netip.MustParseAddr(c.addr)
		if got := Internal(a); got != c.internal {
			t.Errorf("Internal(%s) = %v, want %v: %s", c.addr, got, c.internal, c.why)
		}
		host := c.addr
		if a.Is6() {
			host = "[" + strings.Replace(c.addr, "%", "%25", 1) + "]"
		}
		_, err := g.CheckURL("url", "https://"+host+"/hook")
		if refused := err != nil; refused != c.internal {
			t.Errorf("CheckURL(https://%s/hook) = %v, want refused %v: %s", host, err, c.internal, c.why)
		} else if refused && !strings.Contains(err.Error(), "internal address") {
			t.Errorf("CheckURL(https://%s/hook) = %v, want the internal-address message", host, err)
		}
		err = controlPublic("tcp6", net.JoinHostPort(a.WithZone("").String(), "443"), nil)
		if refused := errors.Is(err, ErrInternalAddress); refused != c.internal {
			t.Errorf("connect-time check of %s = %v, want refused %v: %s", c.addr, err, c.internal, c.why)
		}
	}
	for _, c := range ipv4Cases {
		check(c)
		mapped := netip.AddrFrom16(netip.MustParseAddr(c.addr).As16())
		check(addrCase{mapped.String(), c.internal, "IPv4-mapped, " + c.why})
	}
	for _, c := range ipv6Cases {
		check(c)
	}
	if !Internal(netip.Addr{}) {
		t.Error("the zero Addr is not refused")
	}
}

// TestCheckURL: a target is an absolute https URL without credentials or
// fragment whose host is neither an internal address, nor a local name
// (one label; localhost and *.localhost, RFC 6761; *.local, mDNS, RFC
// 6762; *.internal, ICANN's private-use name; *.arpa, home.arpa and
// resolver.arpa among them), nor a special-use name public DNS never
// answers (.test, .invalid, .example, .onion, .alt), nor a number spelled
// unlike an IP address; an allow-listed host may be anything over http or
// https. Every refusal is a 422 of the field with a message saying what
// to do.
func TestCheckURL(t *testing.T) {
	t.Log("hostile: ssrf")
	g := NewGuard([]string{"hooks.internal", "127.0.0.1", "[::1]"})
	for _, c := range []struct {
		url  string
		want string // "" accepted, else a part of the refusal
	}{
		{"https://example.org/hooks/followfeed", ""},
		{"https://hooks.slack.com/services/T0/B0/x", ""},
		{"  https://example.org/h  ", ""},
		{"https://EXAMPLE.org./h", ""},
		{"https://example.org:8443/h?x=1", ""},
		{"https://localhost.example.org/h", ""},
		{"https://intranet.example.com/h", ""},
		{"https://93.184.215.14/h", ""},
		{"https://[2606:4700::6810:84e5]:8443/h", ""},
		{"http://hooks.internal/h", ""},
		{"https://HOOKS.internal/h", ""},
		{"http://127.0.0.1:8080/h", ""},
		{"http://[::1]:9/h", ""},

		{"", "is required"},
		{"   ", "is required"},
		{"https://example.org/" + strings.Repeat("a", 2030), "longer than 2048"},
		{"not a url", "absolute URL"},
		{"/hooks/followfeed", "absolute URL"},
		{"https:example.org", "absolute URL"},
		{"https://", "absolute URL"},
		{"https://user:pw@example.org/h", "user name or password"},
		{"https://token@example.org/h", "user name or password"},
		{"https://example.org/h#x", "#fragment"},
		{"http://example.org/h", "must use https"},
		{"ftp://example.org/h", `not "ftp"`},
		{"javascript://example.org/%0aalert(1)", `not "javascript"`},

		{"https://intranet/hook", "names a local host"},
		{"https://intranet./hook", "names a local host"},
		{"https://INTRANET/hook", "names a local host"},
		{"https://localhost/hook", "names a local host"},
		{"https://LocalHost./hook", "names a local host"},
		{"https://api.localhost/hook", "names a local host"},
		{"https://printer.local/hook", "names a local host"},
		{"https://metadata.google.internal/computeMetadata/v1/", "names a local host"},
		{"https://db.internal./hook", "names a local host"},
		{"https://2130706433/hook", "names a local host"},
		{"https://router.home.arpa/hook", "names a local host"},
		{"https://nas.Home.Arpa./hook", "names a local host"},
		{"https://x.resolver.arpa/hook", "names a local host"},
		{"https://ipv4only.arpa/hook", "names a local host"},
		{"https://1.0.0.127.in-addr.arpa/hook", "names a local host"},
		{"https://hooks.test/hook", "under .test, a name public DNS never resolves"},
		{"https://hooks.invalid/hook", "under .invalid"},
		{"https://hooks.example/hook", "under .example"},
		{"https://duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion/", "under .onion"},
		{"https://x.alt/hook", "under .alt"},
		{"https://example.com/hook", ""},
		{"https://www.example.net/hook", ""},
		{"https://test.example.org/hook", ""},
		{"https://arpa.example.org/hook", ""},
		{"https://home.arpa.example.org/hook", ""},
		{"https://local.example.com/hook", ""},
		{"https://onion.example.org/hook", ""},
		{"https://0x7f.0.0.1/hook", "non-standard form"},
		{"https://127.1/hook", "non-standard form"},
		{"https://0177.0.0.1/hook", "non-standard form"},
		{"https://127.0.0.1./hook", "non-standard form"},
		{"https://10.0.0.1.5/hook", "non-standard form"},
		{"http://127.0.0.2/hook", "must use https"},
		{"https://[::ffff:7f00:1]/hook", "internal address"},
		// The host as the client dials it: net/http maps a name that is not
		// ASCII with IDNA (full-width letters and digits, the ideographic
		// full stop), and a resolver ignores trailing dots.
		{"https://bücher.example.org/h", ""},
		{"https://ＥＸＡＭＰＬＥ.org/h", ""},
		{"https://ｆｏｏ.ｌｏｃａｌ/hook", "names a local host"},
		{"https://printer。local/hook", "names a local host"},
		{"https://ＬＯＣＡＬＨＯＳＴ/hook", "names a local host"},
		{"https://１２７.０.０.１/hook", "internal address"},
		{"https://１６９.２５４.１６９.２５４/latest/meta-data", "internal address"},
		{"https://localhost../hook", "names a local host"},
		{"https://printer.local../hook", "names a local host"},
		{"https://\u05d0a.org/h", "not a valid internationalised domain name"},
		{"https://[fe80::1%25eth0]/hook", "internal address"},
	} {
		u, err := g.CheckURL("url", c.url)
		if c.want == "" {
			if err != nil || u == nil {
				t.Errorf("CheckURL(%q) = %v, want accepted", c.url, err)
			}
			continue
		}
		ae, ok := apperr.As(err)
		if !ok || ae.Code != apperr.Invalid || ae.Field != "url" || !strings.Contains(ae.Message, c.want) {
			t.Errorf("CheckURL(%q) = %v, want a 422 of url saying …%s…", c.url, err, c.want)
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
	// "１２７.０.０.１" is dialled as 127.0.0.1: net/http maps it with IDNA
	// (CheckURL reads hosts the same way).
	for _, host := range []string{"localhost", "127.0.0.1", "[::ffff:127.0.0.1]", "[::1]", "１２７.０.０.１"} {
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
