package testenv

import (
	"net"
	"sync/atomic"
	"testing"
)

// Loopback starts a TCP and a UDP server on 127.0.0.1 that answer every
// connection and every datagram with answer, for tests that show a
// program cannot reach the network; the test stops them.
func Loopback(t testing.TB, answer string) (tcpPort, udpPort int) {
	t.Helper()
	ln := Answer(t, "tcp4", "127.0.0.1:0", answer)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(answer), addr)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, pc.LocalAddr().(*net.UDPAddr).Port
}

// Answer listens on addr ("tcp4", "unix": a socket file or "@abstract")
// and writes answer to every connection, then closes it: a service
// outside the jail that an attack must not reach. The test stops it.
func Answer(t testing.TB, network, addr, answer string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(answer))
			c.Close()
		}
	}()
	return ln
}

// Datagrams binds a datagram unix socket at path and counts what reaches
// it (no datagram may come from a jail). The test stops it.
func Datagrams(t testing.TB, path string) *atomic.Int32 {
	t.Helper()
	dl, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dl.Close() })
	got := new(atomic.Int32)
	go func() {
		buf := make([]byte, 100)
		for {
			if _, err := dl.Read(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	return got
}
