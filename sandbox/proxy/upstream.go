package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"syscall"
	"time"
)

// dialUpstream connects to the user's proxy up.
func dialUpstream(ctx context.Context, up *url.URL) (net.Conn, error) {
	if up.Scheme != "http" && up.Scheme != "" {
		return nil, fmt.Errorf("the upstream proxy %s: only http:// proxies are supported", up.Redacted())
	}
	hostPort := up.Host
	if up.Port() == "" {
		hostPort = net.JoinHostPort(up.Hostname(), "80")
	}
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", hostPort)
	if err != nil {
		return nil, fmt.Errorf("the upstream proxy %s: %w", up.Redacted(), err)
	}
	sizeLocal(c)
	return c, nil
}

// proxyAuthorization is the header line with the login of up's URL, ""
// without one.
func proxyAuthorization(up *url.URL) string {
	if up.User == nil {
		return ""
	}
	pw, _ := up.User.Password()
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(up.User.Username()+":"+pw)) + "\r\n"
}

// connectUpstream opens a tunnel to authority through the user's proxy.
func connectUpstream(ctx context.Context, up *url.URL, authority string) (net.Conn, error) {
	c, err := dialUpstream(ctx, up)
	if err != nil {
		return nil, err
	}
	req := "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n"
	req += proxyAuthorization(up)
	c.SetDeadline(time.Now().Add(dialTimeout))
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, fmt.Errorf("the upstream proxy %s: %w", up.Redacted(), err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		c.Close()
		if err == nil {
			err = fmt.Errorf("answered %s", resp.Status)
		}
		return nil, fmt.Errorf("the upstream proxy %s: %w", up.Redacted(), err)
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("the upstream proxy %s sent data before the tunnel opened", up.Redacted())
	}
	return c, nil
}

// upConn is a connection forwarded requests go over: to a server, at an
// address decide checked, or to the user's upstream proxy. A client
// connection keeps its last one for its next request to the same place.
type upConn struct {
	conn  net.Conn
	br    *bufio.Reader // over a budget: a response header is bounded too
	lim   *budget
	proxy *url.URL // the upstream proxy it goes to; nil: the server itself
}

// fits reports whether u can carry a request for addrs:port (direct) or
// through the upstream proxy up.
func (u *upConn) fits(addrs []netip.Addr, port int, up *url.URL) bool {
	if u == nil {
		return false
	}
	if up != nil || u.proxy != nil {
		return up != nil && u.proxy != nil && up.String() == u.proxy.String()
	}
	remote, err := netip.ParseAddrPort(u.conn.RemoteAddr().String())
	return err == nil && int(remote.Port()) == port && slices.Contains(addrs, remote.Addr().Unmap())
}

// dialUp opens a connection for a request to addrs:port, or through up.
func (s *Server) dialUp(ctx context.Context, addrs []netip.Addr, port int, up *url.URL) (*upConn, error) {
	var c net.Conn
	var err error
	if up != nil {
		c, err = dialUpstream(ctx, up)
	} else {
		c, err = dial(ctx, addrs, port)
	}
	if err != nil {
		return nil, err
	}
	if !s.track(c, true) {
		c.Close()
		return nil, net.ErrClosed
	}
	lim := &budget{r: c}
	return &upConn{conn: c, br: bufio.NewReaderSize(lim, 32<<10), lim: lim, proxy: up}, nil
}

// Bounds on the server connections kept for later requests.
const (
	maxIdle     = 32
	idleTimeout = 60 * time.Second
)

// idleUp is a server connection that no client connection holds.
type idleUp struct {
	u     *upConn
	timer *time.Timer // closes it after idleTimeout
}

// putIdle keeps u (nil: nothing) for a later request to the same place:
// a client that opens a connection for each request then pays one
// connection set-up, not two.
func (s *Server) putIdle(u *upConn) {
	if u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || u.br.Buffered() > 0 {
		u.conn.Close()
		delete(s.conns, u.conn)
		return
	}
	if len(s.idle) == maxIdle && s.idle[0].timer.Stop() {
		s.idle[0].u.conn.Close()
		delete(s.conns, s.idle[0].u.conn)
		s.idle = s.idle[1:]
	}
	var timer *time.Timer
	timer = time.AfterFunc(idleTimeout, func() {
		s.mu.Lock()
		s.idle = slices.DeleteFunc(s.idle, func(i idleUp) bool { return i.timer == timer })
		s.mu.Unlock()
		s.closeUp(u)
	})
	s.idle = append(s.idle, idleUp{u, timer})
}

// takeIdle returns a kept connection that fits a request, nil if none
// does.
func (s *Server) takeIdle(addrs []netip.Addr, port int, up *url.URL) *upConn {
	for {
		s.mu.Lock()
		i := slices.IndexFunc(s.idle, func(i idleUp) bool { return i.u.fits(addrs, port, up) })
		if i < 0 {
			s.mu.Unlock()
			return nil
		}
		found := s.idle[i]
		s.idle = slices.Delete(s.idle, i, i+1)
		s.mu.Unlock()
		if !found.timer.Stop() {
			continue // being closed
		}
		if quiet(found.u.conn) {
			return found.u
		}
		s.closeUp(found.u)
	}
}

// quiet reports whether nothing arrived on an idle connection, not even
// its end: the server has not closed it.
func quiet(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = err == syscall.EAGAIN
		return true
	})
	return alive
}

func (s *Server) closeUp(u *upConn) {
	if u != nil {
		u.conn.Close()
		s.track(u.conn, false)
	}
}
