// Package dns is a DNS server for tests that answers every question with
// NXDOMAIN ("no such host") over UDP on 127.0.0.1, and a resolver that asks
// only it: a name that does not resolve, whatever the machine's own
// resolver or network does.
package dns

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
)

// Server answers every DNS query it receives with NXDOMAIN. It is closed
// when the test ends.
type Server struct {
	conn    net.PacketConn
	queries atomic.Int32
}

// NXDomain starts a Server on a free UDP port of 127.0.0.1.
func NXDomain(t testing.TB) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn}
	t.Cleanup(func() { conn.Close() })
	go s.serve()
	return s
}

// Queries is how many queries the server answered.
func (s *Server) Queries() int { return int(s.queries.Load()) }

// Resolver is a pure-Go resolver that sends every query to s (and to no
// other server).
func (s *Server) Resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if n < 12 {
			continue
		}
		s.queries.Add(1)
		// The answer is the query with its header changed: QR (a
		// response), the query's opcode and RD kept, RA, RCODE 3
		// (NXDOMAIN); the question is echoed, no records follow.
		resp := make([]byte, n)
		copy(resp, buf[:n])
		flags := binary.BigEndian.Uint16(buf[2:4])
		flags = 0x8000 | flags&0x7900 | 0x0080 | 3
		binary.BigEndian.PutUint16(resp[2:4], flags)
		binary.BigEndian.PutUint16(resp[6:8], 0)   // ANCOUNT
		binary.BigEndian.PutUint16(resp[8:10], 0)  // NSCOUNT
		binary.BigEndian.PutUint16(resp[10:12], 0) // ARCOUNT
		resp = resp[:12+questionLen(buf[12:n])]
		_, _ = s.conn.WriteTo(resp, from)
	}
}

// questionLen is the length of the question section of a query with one
// question (name labels, then type and class), at most len(b).
func questionLen(b []byte) int {
	i := 0
	for i < len(b) && b[i] != 0 {
		i += int(b[i]) + 1
	}
	return min(i+1+4, len(b))
}
