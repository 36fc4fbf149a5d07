package channels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"followfeed/apperr"
)

// Limits of every outbound delivery request.
const (
	// RequestTimeout bounds one request, connecting to reading the body.
	RequestTimeout = 10 * time.Second
	// MaxResponseBytes is how much of a response body is read.
	MaxResponseBytes = 64 << 10
)

// ErrInternalAddress is wrapped by the error of a request whose target
// resolved to an address followfeed never connects to (loopback, private,
// link-local, CGNAT, multicast, unspecified, metadata and the like).
var ErrInternalAddress = errors.New("refusing to connect to an internal address")

// blocked are the IPv4 and IPv6 ranges a delivery never connects to, beyond
// what netip's predicates (loopback, private, link-local, multicast,
// unspecified) cover. IPv4-mapped IPv6 addresses are unmapped first. The
// IPv4 list follows IANA's IPv4 Special-Purpose Address Registry (every
// block that is not globally reachable, and 192.0.0.0/24 whole). IPv6 is
// refused outside 2000::/3, the only space IANA assigns global unicast
// from, so that special-purpose blocks assigned there (such as SRv6's
// 5f00::/16 in 2024) are refused before this list learns their names; inside
// it, the IPv6 registry's blocks that are not globally reachable or embed an
// IPv4 address.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),      // CGNAT (RFC 6598)
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, incl. 169.254.169.254 metadata
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),       // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"),    // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),     // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved, incl. broadcast
	netip.MustParsePrefix("255.255.255.255/32"), // broadcast
	// Outside 2000::/3. 0000::/3: unspecified, loopback, IPv4-compatible
	// ::/96 (deprecated), IPv4-translated ::ffff:0:0:0/96 (RFC 2765), NAT64
	// 64:ff9b::/96 (reaches any IPv4 address) and local-use 64:ff9b:1::/48,
	// discard 100::/64, the dummy prefix 100:0:0:1::/64 (RFC 9780).
	netip.MustParsePrefix("::/3"),
	netip.MustParsePrefix("4000::/2"), // reserved, incl. SRv6 SIDs 5f00::/16 (RFC 9602): an operator's network functions
	// 8000::/1: reserved, unique local fc00::/7 (incl. fd00:ec2::254
	// metadata), link-local fe80::/10, site-local fec0::/10 (deprecated),
	// multicast ff00::/8.
	netip.MustParsePrefix("8000::/1"),
	// Inside 2000::/3.
	netip.MustParsePrefix("2001::/32"),     // Teredo: embeds an IPv4 address
	netip.MustParsePrefix("2001:2::/48"),   // benchmarking (RFC 5180)
	netip.MustParsePrefix("2001:10::/28"),  // ORCHID (deprecated)
	netip.MustParsePrefix("2001:db8::/32"), // documentation
	netip.MustParsePrefix("2002::/16"),     // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
}

// Internal reports whether a is an address deliveries never connect to:
// loopback, private (RFC 1918, IPv6 ULA), link-local (with the cloud
// metadata address 169.254.169.254), CGNAT, multicast, unspecified,
// benchmarking, documentation, reserved (in IPv6, everything outside global
// unicast 2000::/3, SRv6 SIDs included), and IPv6 forms that embed or reach
// IPv4 (IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4,
// Teredo). An invalid address is internal.
func Internal(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.Unmap().WithZone("")
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range blocked {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Guard decides where deliveries may go. Hosts on its allow-list
// (CHANNEL_ALLOW_HOSTS, for development and tests) may be reached over plain
// http and at any address; every other target must be https and resolve
// to a public address, checked when the connection is made.
type Guard struct {
	allow map[string]bool
}

// NewGuard returns a Guard allowing hosts (names or IP literals, compared
// case-insensitively, without port).
func NewGuard(hosts []string) *Guard {
	g := &Guard{allow: map[string]bool{}}
	for _, h := range hosts {
		h = strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]"))
		if h != "" {
			g.allow[h] = true
		}
	}
	return g
}

// Allowed reports whether host (no port) is on the allow-list.
func (g *Guard) Allowed(host string) bool {
	return g.allow[strings.ToLower(strings.Trim(host, "[]"))]
}

// CheckURL validates a target URL given by a user, for field: an absolute
// https URL (http only for allowed hosts) without credentials, on port
// 443 or an unprivileged port (1024-65535; any port for allowed hosts),
// whose host, when an IP literal or a local name, is not internal. Every failure is an
// apperr.Invalid naming field (a 422). It returns the parsed URL.
func (g *Guard) CheckURL(field, raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, apperr.InvalidField(field, "is required")
	}
	if len(raw) > 2048 {
		return nil, apperr.InvalidField(field, "is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, apperr.InvalidField(field, "must be an absolute URL such as https://example.org/hooks/followfeed")
	}
	if u.User != nil {
		return nil, apperr.InvalidField(field, "must not carry a user name or password")
	}
	if u.Fragment != "" {
		return nil, apperr.InvalidField(field, "must not have a #fragment")
	}
	host := u.Hostname()
	allowed := g.Allowed(host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowed:
	case u.Scheme == "http":
		return nil, apperr.InvalidField(field, "must use https: deliveries are never sent over plain http")
	default:
		return nil, apperr.InvalidField(field, "must be an https URL, not %q", u.Scheme)
	}
	if allowed {
		return u, nil
	}
	if p := u.Port(); p != "" {
		// Port 443, or an unprivileged one (a receiver on :8443, a
		// homeserver on :8448); the other well-known ports are services
		// (SMTP, SSH, ...) a delivery has no business speaking to.
		n, err := strconv.Atoi(p)
		switch {
		case err != nil || n < 1 || n > 65535:
			return nil, apperr.InvalidField(field, "has an invalid port %q", p)
		case n != 443 && n < 1024:
			return nil, apperr.InvalidField(field, "uses port %d; use https's port 443 (or leave the port out) or one from 1024 to 65535", n)
		}
	}
	name, err := dialedName(host)
	if err != nil {
		return nil, apperr.InvalidField(field, "has a host name that is not a valid internationalised domain name (%s)", host)
	}
	if a, err := netip.ParseAddr(name); err == nil {
		if Internal(a) {
			return nil, apperr.InvalidField(field, "points at an internal address (%s); use a public host name", host)
		}
		return u, nil
	}
	lh := strings.TrimRight(name, ".")
	tld := lh[strings.LastIndexByte(lh, '.')+1:]
	if !strings.Contains(lh, ".") || localTLDs[tld] {
		return nil, apperr.InvalidField(field, "names a local host (%s); use a public host name", host)
	}
	if reservedTLDs[tld] {
		return nil, apperr.InvalidField(field, "is under .%s, a name public DNS never resolves (%s); use a public host name", tld, host)
	}
	if _, err := numericHost(lh); err == nil {
		return nil, apperr.InvalidField(field, "spells an IP address in a non-standard form (%s); use a host name", host)
	}
	return u, nil
}

// localTLDs are the top-level names that only the operator's own host or
// network resolves, as single-label names (no dot: search domains, LLMNR)
// are: localhost (RFC 6761: loopback), local (mDNS, RFC 6762), internal
// (ICANN's private-use name) and arpa, the infrastructure domain, whose
// names are the home network's (home.arpa, RFC 8375), the local
// resolver's (resolver.arpa, RFC 9462) or reverse-mapping ones.
var localTLDs = map[string]bool{"localhost": true, "local": true, "internal": true, "arpa": true}

// reservedTLDs are the special-use names public DNS never answers (RFC
// 6761: test, invalid, example; onion, RFC 7686; alt, RFC 9476): an answer
// for one comes from the operator's own resolver, and a delivery there
// otherwise fails until the channel is disabled. (example.com, .net and
// .org are public names.)
var reservedTLDs = map[string]bool{"test": true, "invalid": true, "example": true, "onion": true, "alt": true}

// dialedName is host as the client dials it, lower-cased: net/http maps a
// name that is not ASCII with IDNA's lookup profile (so full-width
// "ｌｏｃａｌｈｏｓｔ" or "１２７.０.０.１" reach localhost and 127.0.0.1), and
// a name it cannot map is not one a delivery can reach.
func dialedName(host string) (string, error) {
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			return idna.Lookup.ToASCII(host)
		}
	}
	return strings.ToLower(host), nil
}

// numericHost recognises hosts made only of digits, dots and hex (such as
// "2130706433" or "0x7f.1"), which some resolvers read as IPv4 addresses.
func numericHost(h string) (string, error) {
	for _, part := range strings.Split(h, ".") {
		p := strings.TrimPrefix(part, "0x")
		if p == "" {
			return "", errors.New("empty")
		}
		for _, c := range p {
			if !(c >= '0' && c <= '9' || part != p && (c >= 'a' && c <= 'f')) {
				return "", errors.New("not numeric")
			}
		}
	}
	return h, nil
}

// Client returns the HTTP client deliveries use: no proxy, no redirects
// followed (a 3xx is the answer), RequestTimeout for the whole exchange,
// and a dialer that checks the resolved address of every connection to a
// host not on the allow-list (so DNS rebinding cannot pass).
func (g *Guard) Client() *http.Client {
	guarded := &net.Dialer{Timeout: RequestTimeout, KeepAlive: 30 * time.Second, Control: controlPublic}
	open := &net.Dialer{Timeout: RequestTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil, // a proxy would connect for us, unchecked
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if g.Allowed(host) {
				return open.DialContext(ctx, network, addr)
			}
			return guarded.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    RequestTimeout,
		ResponseHeaderTimeout:  RequestTimeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Timeout:   RequestTimeout,
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// controlPublic runs after name resolution, right before connect: address
// is the IP the socket is about to reach.
func controlPublic(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrInternalAddress, address)
	}
	a, err := netip.ParseAddr(host)
	if err != nil || Internal(a) {
		return fmt.Errorf("%w: %s", ErrInternalAddress, host)
	}
	return nil
}

// readCapped reads at most MaxResponseBytes of r.
func readCapped(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, MaxResponseBytes))
	return b
}
