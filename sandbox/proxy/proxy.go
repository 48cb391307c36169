// Package proxy is the HTTP proxy a session host runs for a session with
// an allow list: the only thing its child and its shell() commands can
// reach (their network namespace holds a loopback and this proxy's
// listener, nothing else). It answers CONNECT (TLS passes through
// untouched) and plain HTTP requests in absolute form, decides on the
// host name the client asked for with sandbox/netpolicy, resolves that
// name itself and checks every address, then dials the address it
// checked (or the user's own upstream proxy). Every decision is logged.
package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
)

// Bounds on what a client may hold.
const (
	maxHeaderBytes = 64 << 10         // one request's line and headers
	headerTimeout  = 30 * time.Second // to send them
	dialTimeout    = 30 * time.Second
	// responseTimeout bounds the wait for a server's answer's header.
	responseTimeout = 5 * time.Minute
	maxConns        = 256 // client connections served at once
)

// Decision is one request the proxy decided on, for the log: what was
// asked, whether it went through (Why says why not), and the bytes that
// went each way.
type Decision struct {
	Method  string
	Host    string
	Port    int
	Allowed bool
	Why     string
	Up      int64 // client to server
	Down    int64 // server to client
}

func (d Decision) String() string {
	if !d.Allowed {
		return fmt.Sprintf("network: %s %s:%d refused: %s", d.Method, d.Host, d.Port, d.Why)
	}
	return fmt.Sprintf("network: %s %s:%d allowed, %d bytes sent, %d received", d.Method, d.Host, d.Port, d.Up, d.Down)
}

// Config is what a Server decides with.
type Config struct {
	Rules netpolicy.Rules
	// Fixed are names resolved to these addresses without DNS, as a
	// public DNS answer would be (tests stand a local server in for a
	// named host with it).
	Fixed map[string][]netip.Addr
	// Upstream returns the user's proxy for a URL (nil: direct), as
	// golang.org/x/net/http/httpproxy reads it from the environment.
	Upstream func(*url.URL) (*url.URL, error)
	// Log receives every decision (nil: none).
	Log func(Decision)
}

// Server serves the proxy on any number of listeners.
type Server struct {
	cfg    Config
	slots  chan struct{}
	mu     sync.Mutex
	conns  map[net.Conn]struct{} // clients' and servers'
	idle   []idleUp
	closed bool
}

// New returns a server deciding with cfg.
func New(cfg Config) *Server {
	return &Server{cfg: cfg, slots: make(chan struct{}, maxConns), conns: map[net.Conn]struct{}{}}
}

// Serve accepts on l until it is closed (or the server is).
func (s *Server) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("proxy: accept: %w", err)
		}
		sizeLocal(c)
		s.slots <- struct{}{}
		if !s.track(c, true) {
			c.Close()
			<-s.slots
			return nil
		}
		go func() {
			defer func() { <-s.slots }()
			defer s.track(c, false)
			defer c.Close()
			s.serveConn(c)
		}()
	}
}

// Close ends every connection being served.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

func (s *Server) track(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closed {
			return false
		}
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
	return true
}

func (s *Server) upstream(u *url.URL) (*url.URL, error) {
	if s.cfg.Upstream == nil {
		return nil, nil
	}
	return s.cfg.Upstream(u)
}

func (s *Server) log(d Decision) {
	if s.cfg.Log != nil {
		s.cfg.Log(d)
	}
}

// budget caps what the header of one request may take.
type budget struct {
	r io.Reader
	n atomic.Int64 // < 0: no cap (a body is being read)
}

func (b *budget) Read(p []byte) (int, error) {
	n := b.n.Load()
	if n == 0 {
		return 0, errors.New("request header too large")
	}
	if n > 0 && int64(len(p)) > n {
		p = p[:n]
	}
	k, err := b.r.Read(p)
	if n > 0 {
		b.n.Add(-int64(k))
	}
	return k, err
}

// serveConn answers the requests of one client connection in turn.
func (s *Server) serveConn(c net.Conn) {
	b := &budget{r: c}
	br := bufio.NewReader(b)
	var cur *upConn
	defer func() { s.putIdle(cur) }()
	c.SetReadDeadline(time.Now().Add(headerTimeout))
	b.n.Store(maxHeaderBytes)
	if first, err := br.Peek(1); err != nil {
		return
	} else if first[0] == 5 {
		s.socks(c, br)
		return
	}
	for {
		b.n.Store(maxHeaderBytes)
		c.SetReadDeadline(time.Now().Add(headerTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		b.n.Store(-1)
		if req.Method == http.MethodConnect {
			s.connect(c, br, req)
			return
		}
		if !s.forward(c, br, req, &cur) {
			return
		}
	}
}

// target is a request's host and port, from CONNECT's authority or an
// absolute URL.
func target(req *http.Request) (string, int, error) {
	authority := req.Host
	defPort := 80
	if req.Method != http.MethodConnect {
		if req.URL == nil || !req.URL.IsAbs() || req.URL.Host == "" {
			return "", 0, errors.New("vis-agent: the proxy takes CONNECT or absolute http:// URLs")
		}
		if req.URL.Scheme != "http" {
			return "", 0, fmt.Errorf("vis-agent: the proxy forwards http:// URLs (%s:// goes through CONNECT)", req.URL.Scheme)
		}
		authority = req.URL.Host
	}
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		if req.Method == http.MethodConnect {
			return "", 0, fmt.Errorf("vis-agent: CONNECT needs host:port, not %q", authority)
		}
		host, portText = authority, strconv.Itoa(defPort)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("vis-agent: bad address %q", authority)
	}
	return strings.Trim(host, "[]"), port, nil
}

// decide checks host:port against the rules and returns the addresses
// to dial, every one checked. With an upstream proxy, a name that does
// not resolve here is left to it.
func (s *Server) decide(ctx context.Context, host string, port int, upstream bool) ([]netip.Addr, error) {
	if err := s.cfg.Rules.CheckName(host, port); err != nil {
		return nil, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, s.cfg.Rules.CheckAddr(host, ip, port)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if fixed, ok := s.cfg.Fixed[name]; ok {
		for _, a := range fixed {
			if err := s.cfg.Rules.CheckDenied(host, a, port); err != nil {
				return nil, err
			}
		}
		return fixed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		if upstream {
			return nil, nil
		}
		return nil, &netpolicy.Refusal{Message: fmt.Sprintf("vis-agent: host %s does not resolve: %v", host, err)}
	}
	for _, a := range addrs {
		if err := s.cfg.Rules.CheckAddr(host, a, port); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// dial connects to the first of addrs that answers.
func dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, error) {
	var d net.Dialer
	d.Timeout = dialTimeout
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			sizeLocal(c)
			return c, nil
		}
		last = err
	}
	if last == nil {
		last = errors.New("no address")
	}
	return nil, last
}

// refuse answers 403 with the refusal as the reason phrase, which
// Python's http.client shows in its "Tunnel connection failed" error.
func refuse(w io.Writer, code int, msg string) {
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, "\r", " "), "\n", " ")
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", code, msg, len(msg)+1, msg)
}

// connect serves a CONNECT: decide, dial, answer 200 and copy both ways.
func (s *Server) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := target(req)
	d := Decision{Method: "CONNECT", Host: host, Port: port}
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadRequest, err.Error())
		return
	}
	server, err := s.open(host, port)
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		code := http.StatusForbidden
		var r *netpolicy.Refusal
		if !errors.As(err, &r) {
			code = http.StatusBadGateway
		}
		refuse(c, code, err.Error())
		return
	}
	s.relay(c, br, server, "HTTP/1.1 200 Connection established\r\n\r\n", d)
}

// open decides on host:port and connects to it, or through the user's
// upstream proxy with a CONNECT of its own.
func (s *Server) open(host string, port int) (net.Conn, error) {
	ctx := context.Background()
	authority := net.JoinHostPort(host, strconv.Itoa(port))
	up, _ := s.upstream(&url.URL{Scheme: "https", Host: authority})
	addrs, err := s.decide(ctx, host, port, up != nil)
	if err != nil {
		return nil, err
	}
	var server net.Conn
	if up != nil {
		server, err = connectUpstream(ctx, up, authority)
	} else {
		server, err = dial(ctx, addrs, port)
	}
	if err != nil {
		return nil, fmt.Errorf("vis-agent: cannot reach %s:%d: %w", host, port, err)
	}
	return server, nil
}

// relay answers the client with ok, then copies both ways between c
// (whose first bytes may wait in br) and server until both ends closed,
// and logs d with the bytes.
func (s *Server) relay(c net.Conn, br *bufio.Reader, server net.Conn, ok string, d Decision) {
	defer server.Close()
	d.Allowed = true
	if _, err := io.WriteString(c, ok); err != nil {
		s.log(d)
		return
	}
	// What the client sent after its request (a TLS hello) is in br;
	// after it, TCP to TCP, io.Copy splices in the kernel.
	var sent, received int64
	done := make(chan struct{})
	go func() {
		received, _ = io.Copy(c, server)
		closeWrite(c)
		close(done)
	}()
	if n := br.Buffered(); n > 0 {
		k, _ := io.CopyN(server, br, int64(n))
		sent += k
	}
	k, _ := io.Copy(server, c)
	sent += k
	closeWrite(server)
	<-done
	d.Up, d.Down = sent, received
	s.log(d)
}

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

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

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

// localBuffer is the socket buffer size (each way) of a connection to a
// peer on loopback.
const localBuffer = 128 << 10

// sizeLocal gives c, when its peer is on loopback (a session's client,
// always; a server or upstream proxy of this machine), buffers of
// localBuffer. Bytes spliced from one connection to the other then pass
// through the three parties (server, proxy, client) while still in the
// processor's cache: on this 2-core machine a 100 MB download through the
// proxy went from about 0.75 to about 0.95 of direct (BENCHMARKS.md). At
// loopback's round trip such a window still carries gigabytes a second; a
// peer across a network keeps the kernel's autotuned buffers, whose
// window its round trip needs.
func sizeLocal(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if a, ok := tc.RemoteAddr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		return
	}
	tc.SetReadBuffer(localBuffer)
	tc.SetWriteBuffer(localBuffer)
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

// hopHeaders are one connection's own, never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Authenticate", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"}

// endToEnd returns h without the hop-by-hop headers, those its
// Connection header names included.
func endToEnd(h http.Header) http.Header {
	h = h.Clone()
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	return h
}

// forward serves one plain HTTP request over *cur (the client
// connection's server connection, replaced or closed as needed); it
// reports whether the client connection may carry another. Bodies of
// known length go between the two connections with io.CopyN, which
// splices TCP to TCP in the kernel.
func (s *Server) forward(c net.Conn, br *bufio.Reader, req *http.Request, cur **upConn) bool {
	host, port, err := target(req)
	d := Decision{Method: req.Method, Host: host, Port: port}
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadRequest, err.Error())
		return false
	}
	ctx := context.Background()
	up, _ := s.upstream(req.URL)
	addrs, err := s.decide(ctx, host, port, up != nil)
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusForbidden, err.Error())
		return false
	}
	if req.Header.Get("Upgrade") != "" {
		d.Why = "vis-agent: the proxy does not pass on Upgrade (a WebSocket goes through CONNECT)"
		s.log(d)
		refuse(c, http.StatusBadRequest, d.Why)
		return false
	}
	chunked := len(req.TransferEncoding) > 0
	// A client waiting for 100 Continue gets it here: the body is read
	// before the server answers.
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") && (chunked || req.ContentLength > 0) {
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	head := requestHead(req, host, port, up)
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		reused := (*cur).fits(addrs, port, up)
		if reused && !quiet((*cur).conn) {
			// The server closed it (or said something unasked).
			s.closeUp(*cur)
			*cur, reused = nil, false
		}
		if !reused {
			s.putIdle(*cur)
			*cur = s.takeIdle(addrs, port, up)
			reused = *cur != nil
		}
		if !reused {
			u, err := s.dialUp(ctx, addrs, port, up)
			if err != nil {
				d.Why = err.Error()
				s.log(d)
				refuse(c, http.StatusBadGateway, fmt.Sprintf("vis-agent: cannot reach %s:%d: %v", host, port, err))
				return false
			}
			*cur = u
		}
		u := *cur
		d.Up, err = sendRequest(u, head, c, br, req, chunked)
		if err == nil {
			resp, err = readResponse(u, req, c)
		}
		if err == nil {
			break
		}
		s.closeUp(u)
		*cur = nil
		// A kept connection the server closed meanwhile: once more on
		// a new one, when no body went out.
		if reused && attempt == 0 && d.Up == 0 && !chunked && req.ContentLength <= 0 {
			continue
		}
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadGateway, fmt.Sprintf("vis-agent: cannot reach %s:%d: %v", host, port, err))
		return false
	}
	d.Allowed = true
	keep, reuse, down, err := writeResponse(c, *cur, resp, !req.Close, req.ProtoAtLeast(1, 1))
	d.Down = down
	s.log(d)
	if err != nil || !reuse {
		s.closeUp(*cur)
		*cur = nil
	}
	return err == nil && keep
}

// requestHead is the request line and headers sent on: origin form to
// the server, with the Host the decision was made on (never the
// client's Host header), or absolute form to the upstream proxy.
func requestHead(req *http.Request, host string, port int, up *url.URL) []byte {
	var b strings.Builder
	authority := host
	if strings.Contains(host, ":") {
		authority = "[" + host + "]"
	}
	if port != 80 {
		authority = net.JoinHostPort(host, strconv.Itoa(port))
	}
	uri := req.URL.RequestURI()
	if up != nil {
		uri = "http://" + authority + uri
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, uri, authority)
	h := endToEnd(req.Header)
	h.Del("Host")
	h.Del("Expect")
	h.Write(&b)
	if up != nil {
		b.WriteString(proxyAuthorization(up))
	}
	switch {
	case len(req.TransferEncoding) > 0:
		b.WriteString("Transfer-Encoding: chunked\r\n")
	case req.ContentLength > 0:
		b.WriteString("Content-Length: " + strconv.FormatInt(req.ContentLength, 10) + "\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// sendRequest writes head and the request's body to u; it returns the
// body's bytes sent.
func sendRequest(u *upConn, head []byte, c net.Conn, br *bufio.Reader, req *http.Request, chunked bool) (int64, error) {
	if chunked {
		w := bufio.NewWriterSize(u.conn, 32<<10)
		w.Write(head)
		cw := httputil.NewChunkedWriter(w)
		n, err := io.Copy(cw, req.Body)
		if err == nil {
			err = cw.Close()
		}
		if err == nil {
			_, err = io.WriteString(w, "\r\n")
		}
		if err == nil {
			err = w.Flush()
		}
		return n, err
	}
	if _, err := u.conn.Write(head); err != nil {
		return 0, err
	}
	if req.ContentLength <= 0 {
		return 0, nil
	}
	return copyBody(u.conn, br, c, req.ContentLength)
}

// copyBody copies n bytes: those buffered in br first, then straight
// from the connection under it (spliced).
func copyBody(dst net.Conn, br *bufio.Reader, src net.Conn, n int64) (int64, error) {
	k, err := io.CopyN(dst, br, min(int64(br.Buffered()), n))
	if err == nil && k < n {
		var m int64
		m, err = io.CopyN(dst, src, n-k)
		k += m
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return k, err
}

// readResponse reads the server's answer to req, its header bounded in
// size and time; informational answers go on to the client.
func readResponse(u *upConn, req *http.Request, c net.Conn) (*http.Response, error) {
	u.conn.SetReadDeadline(time.Now().Add(responseTimeout))
	defer u.conn.SetReadDeadline(time.Time{})
	for {
		u.lim.n.Store(maxHeaderBytes)
		resp, err := http.ReadResponse(u.br, req)
		u.lim.n.Store(-1)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 {
			return resp, nil
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("the server switched protocols, which was not asked for")
		}
		w := bufio.NewWriter(c)
		fmt.Fprintf(w, "HTTP/1.1 %s\r\n", resp.Status)
		endToEnd(resp.Header).Write(w)
		io.WriteString(w, "\r\n")
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
}

// writeResponse writes resp to the client: a body of known length, or
// one that ends when the server closes, spliced from the server's
// connection; a chunked one through Response.Write (to an HTTP/1.0
// client, unchunked until the close). keep is whether the client wants
// its connection kept. It returns whether the client's
// connection and the server's can carry another request, and the
// body's bytes.
func writeResponse(c net.Conn, u *upConn, resp *http.Response, keep, http11 bool) (keepClient, reuse bool, n int64, err error) {
	if len(resp.TransferEncoding) > 0 || resp.Trailer != nil {
		down := &counter{r: resp.Body}
		resp.Body = io.NopCloser(down)
		resp.Header = endToEnd(resp.Header)
		if !http11 {
			// An HTTP/1.0 client reads no chunks: the body, then the end.
			keep = false
			resp.TransferEncoding, resp.Trailer, resp.ContentLength = nil, nil, -1
		}
		// resp.Close now says the client's end; whether the server's
		// connection can carry another request is what the server said.
		serverClose := resp.Close
		resp.Close = !keep
		w := bufio.NewWriterSize(c, 32<<10)
		err := resp.Write(onlyWriter{w})
		if err == nil {
			err = w.Flush()
		}
		return keep, !serverClose && err == nil, down.n, err
	}
	length := resp.ContentLength
	if resp.Body == http.NoBody {
		length = 0
	}
	untilClose := length < 0
	keep = keep && !untilClose
	h := endToEnd(resp.Header)
	if resp.Body == http.NoBody && resp.ContentLength > 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10)) // a HEAD answer
	} else if !untilClose && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified {
		h.Set("Content-Length", strconv.FormatInt(length, 10))
	}
	if !keep {
		h.Set("Connection", "close")
	}
	w := bufio.NewWriterSize(c, 8<<10)
	fmt.Fprintf(w, "HTTP/1.1 %s\r\n", resp.Status)
	h.Write(w)
	io.WriteString(w, "\r\n")
	if err := w.Flush(); err != nil {
		return false, false, 0, err
	}
	if untilClose {
		k, _ := io.CopyN(c, u.br, int64(u.br.Buffered()))
		m, err := io.Copy(c, u.conn)
		return false, false, k + m, err
	}
	n, err = copyBody(c, u.br, u.conn, length)
	return keep, !resp.Close && err == nil, n, err
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// onlyWriter hides a writer's ReadFrom, so that a copy into it goes
// through its buffer.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

// Environ is the environment that points clients at a proxy listening
// at 127.0.0.1:port, both spellings (curl reads only the lower-case
// http_proxy), with NO_PROXY empty: nothing is reached directly.
func Environ(port int) []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	return append(env, "NO_PROXY=", "no_proxy=")
}
