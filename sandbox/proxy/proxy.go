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
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
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
