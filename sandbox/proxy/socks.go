package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
)

// SOCKS5's answers (RFC 1928, section 6).
const (
	socksOK          = 0
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksNoCommand   = 7
	socksNoAddrType  = 8
)

// socksReply is an answer with a zero bound address, which CONNECT
// clients do not use.
func socksReply(code byte) string { return string([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0}) }

// socks serves a SOCKS5 client (RFC 1928) for those that speak nothing
// else, on the same port: no authentication (the port is the session's
// own), CONNECT only (no UDP, no BIND), to a name (the socks5h way,
// resolved and decided here as for HTTP) or an address.
func (s *Server) socks(c net.Conn, br *bufio.Reader) {
	c.SetReadDeadline(time.Now().Add(headerTimeout))
	// read returns the next n bytes; after an error, zeros (checked once
	// at each step's end).
	var err error
	read := func(n int) []byte {
		b := make([]byte, n)
		if err == nil {
			_, err = io.ReadFull(br, b)
		}
		return b
	}
	methods := read(int(read(2)[1]))
	if err != nil {
		return
	}
	if !slices.Contains(methods, 0) {
		c.Write([]byte{5, 0xff})
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		return
	}
	req := read(4)
	var host string
	switch req[3] {
	case 1, 4:
		ip, _ := netip.AddrFromSlice(read(map[byte]int{1: 4, 4: 16}[req[3]]))
		host = ip.Unmap().String()
	case 3:
		host = string(read(int(read(1)[0])))
	default:
		if err == nil {
			io.WriteString(c, socksReply(socksNoAddrType))
		}
		return
	}
	p := read(2)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	d := Decision{Method: "SOCKS5", Host: host, Port: int(p[0])<<8 | int(p[1])}
	if req[0] != 5 || req[1] != 1 {
		d.Why = "vis-agent: the proxy's SOCKS5 takes CONNECT only"
		s.log(d)
		io.WriteString(c, socksReply(socksNoCommand))
		return
	}
	server, err := s.open(host, d.Port)
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		code := byte(socksUnreachable)
		var r *netpolicy.Refusal
		if errors.As(err, &r) {
			code = socksNotAllowed
		}
		io.WriteString(c, socksReply(code))
		return
	}
	s.relay(c, br, server, socksReply(socksOK), d)
}
