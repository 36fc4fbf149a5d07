package cert

import (
	"crypto/tls"
	"net"
	"testing"
)

// The pool trusts the certificate for every loopback name, and a client
// without the pool refuses it.
func TestSelfSignedIsTrustedOnlyThroughItsPool(t *testing.T) {
	c, pool, err := SelfSigned("fake")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{c}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	for _, name := range []string{"127.0.0.1", "localhost"} {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: name})
		if err != nil {
			t.Errorf("%s with the pool: %v", name, err)
			continue
		}
		conn.Close()
	}
	if conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{ServerName: "127.0.0.1"}); err == nil {
		conn.Close()
		t.Error("a client without the pool trusted the certificate")
	}
	if ip := net.ParseIP("::1"); !c.Leaf.IPAddresses[1].Equal(ip) {
		t.Errorf("IP addresses %v lack ::1", c.Leaf.IPAddresses)
	}
}
