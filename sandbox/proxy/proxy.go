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
	maxConns       = 256 // client connections served at once
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
	cfg       Config
	slots     chan struct{}
	transport *http.Transport
	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	closed    bool
}

// New returns a server deciding with cfg.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, slots: make(chan struct{}, maxConns), conns: map[net.Conn]struct{}{}}
	s.transport = &http.Transport{
		DialContext:           s.dialChecked,
		Proxy:                 func(r *http.Request) (*url.URL, error) { return s.upstream(r.URL) },
		MaxIdleConns:          32,
		IdleConnTimeout:       60 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
		ReadBufferSize:        copyBuffer,
	}
	return s
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
	s.transport.CloseIdleConnections()
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

// serveConn answers the requests of one client connection in turn.
func (s *Server) serveConn(c net.Conn) {
	b := &budget{r: c}
	br := bufio.NewReader(b)
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
		if !s.forward(c, req) {
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
	ctx := context.Background()
	up, _ := s.upstream(&url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port))})
	addrs, err := s.decide(ctx, host, port, up != nil)
	var server net.Conn
	if err == nil {
		if up != nil {
			server, err = connectUpstream(ctx, up, net.JoinHostPort(host, strconv.Itoa(port)))
		} else {
			server, err = dial(ctx, addrs, port)
		}
		if err != nil {
			err = fmt.Errorf("vis-agent: cannot reach %s:%d: %w", host, port, err)
		}
	}
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
	defer server.Close()
	d.Allowed = true
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
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

// connectUpstream opens a tunnel to authority through the user's proxy.
func connectUpstream(ctx context.Context, up *url.URL, authority string) (net.Conn, error) {
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
	req := "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n"
	if up.User != nil {
		pw, _ := up.User.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(up.User.Username()+":"+pw)) + "\r\n"
	}
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

// checkedKey carries the checked addresses of a request to its dial.
type checkedKey struct{}

type checked struct {
	addrs []netip.Addr
	port  int
}

// dialChecked dials the addresses decide checked for the request, never
// a name (which could resolve elsewhere by now); the upstream proxy's
// own address is the user's choice.
func (s *Server) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	if ch, ok := ctx.Value(checkedKey{}).(checked); ok && len(ch.addrs) > 0 {
		return dial(ctx, ch.addrs, ch.port)
	}
	d := net.Dialer{Timeout: dialTimeout}
	return d.DialContext(ctx, network, addr)
}

// forward serves one plain HTTP request; it reports whether the client
// connection may carry another.
func (s *Server) forward(c net.Conn, req *http.Request) bool {
	host, port, err := target(req)
	d := Decision{Method: req.Method, Host: host, Port: port}
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadRequest, err.Error())
		return false
	}
	up, _ := s.upstream(req.URL)
	addrs, err := s.decide(req.Context(), host, port, up != nil)
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusForbidden, err.Error())
		return false
	}
	body := &counter{r: req.Body}
	ctx := req.Context()
	if up == nil {
		ctx = context.WithValue(ctx, checkedKey{}, checked{addrs, port})
	}
	out := req.Clone(ctx)
	out.RequestURI = ""
	// The client's "Connection: close" is its own hop's: the server's
	// connection stays in the pool.
	out.Close = false
	out.Body = io.NopCloser(body)
	if req.ContentLength == 0 {
		out.Body = nil
	}
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		d.Why = err.Error()
		s.log(d)
		refuse(c, http.StatusBadGateway, fmt.Sprintf("vis-agent: cannot reach %s:%d: %v", host, port, err))
		return false
	}
	defer resp.Body.Close()
	d.Allowed = true
	keep := !req.Close && !resp.Close
	down, err := writeResponse(c, resp, keep)
	d.Up, d.Down = body.n, down
	s.log(d)
	return err == nil && keep
}

// writeResponse writes resp to the client: a body of known length in
// large pieces straight from the server's connection (Response.Write
// copies 32 KiB at a time), any other through Response.Write. It
// returns the body's bytes.
func writeResponse(c net.Conn, resp *http.Response, keep bool) (int64, error) {
	if resp.ContentLength < 0 || len(resp.TransferEncoding) > 0 || resp.Trailer != nil {
		down := &counter{r: resp.Body}
		resp.Body = io.NopCloser(down)
		resp.Close = !keep
		w := bufio.NewWriterSize(c, copyBuffer)
		err := resp.Write(onlyWriter{w})
		if err == nil {
			err = w.Flush()
		}
		return down.n, err
	}
	w := bufio.NewWriterSize(c, 8<<10)
	fmt.Fprintf(w, "HTTP/1.1 %s\r\n", resp.Status)
	h := resp.Header.Clone()
	h.Del("Connection")
	h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	if !keep {
		h.Set("Connection", "close")
	}
	h.Write(w)
	io.WriteString(w, "\r\n")
	if err := w.Flush(); err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(onlyWriter{c}, io.LimitReader(resp.Body, resp.ContentLength), make([]byte, copyBuffer))
	if err == nil && n < resp.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// copyBuffer is the size of the writes of a forwarded response.
const copyBuffer = 256 << 10

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
