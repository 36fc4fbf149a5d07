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
// unspecified) cover. IPv4-mapped IPv6 addresses are unmapped first.
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
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("::/96"),              // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),       // NAT64: reaches any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),     // local-use NAT64
	netip.MustParsePrefix("100::/64"),           // discard
	netip.MustParsePrefix("2001:db8::/32"),      // documentation
	netip.MustParsePrefix("2002::/16"),          // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("fc00::/7"),           // unique local (incl. fd00:ec2::254 metadata)
	netip.MustParsePrefix("fe80::/10"),          // link-local
	netip.MustParsePrefix("fec0::/10"),          // site-local (deprecated)
	netip.MustParsePrefix("ff00::/8"),           // multicast
	netip.MustParsePrefix("2001::/32"),          // Teredo: embeds an IPv4 address
	netip.MustParsePrefix("2001:10::/28"),       // ORCHID
	netip.MustParsePrefix("255.255.255.255/32"), // broadcast
}

// Internal reports whether a is an address deliveries never connect to:
// loopback, private (RFC 1918, IPv6 ULA), link-local (with the cloud
// metadata address 169.254.169.254), CGNAT, multicast, unspecified,
// documentation, reserved, and IPv6 forms that embed or reach IPv4
// (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo). An invalid address
// is internal.
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

// CheckURL validates a target URL given by a reader, for field: an absolute
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
		return nil, apperr.InvalidField(field, "must use https (plain http only for hosts in CHANNEL_ALLOW_HOSTS)")
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
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if Internal(a) {
			return nil, apperr.InvalidField(field, "points at an internal address (%s); use a public host name", host)
		}
		return u, nil
	}
	lh := strings.ToLower(strings.TrimSuffix(host, "."))
	if lh == "localhost" || strings.HasSuffix(lh, ".localhost") || strings.HasSuffix(lh, ".local") ||
		strings.HasSuffix(lh, ".internal") || !strings.Contains(lh, ".") {
		return nil, apperr.InvalidField(field, "names a local host (%s); use a public host name", host)
	}
	if _, err := numericHost(lh); err == nil {
		return nil, apperr.InvalidField(field, "spells an IP address in a non-standard form (%s); use a host name", host)
	}
	return u, nil
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
