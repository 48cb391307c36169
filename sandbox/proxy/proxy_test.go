package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
	xproxy "golang.org/x/net/proxy"
)

// start serves a proxy with the rules on a loopback port and returns
// its URL and the decisions it logs.
func start(t *testing.T, allow, deny []string, fixed map[string][]netip.Addr) (*url.URL, func() []Decision) {
	t.Helper()
	_, u, decisions := startServer(t, allow, deny, fixed)
	return u, decisions
}

// startServer is start that also returns the proxy.
func startServer(t *testing.T, allow, deny []string, fixed map[string][]netip.Addr) (*Server, *url.URL, func() []Decision) {
	t.Helper()
	rules, err := netpolicy.Parse(allow, deny, "")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []Decision
	s := New(Config{Rules: rules, Fixed: fixed, Log: func(d Decision) {
		mu.Lock()
		log = append(log, d)
		mu.Unlock()
	}})
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { l.Close(); s.Close() })
	return s, &url.URL{Scheme: "http", Host: l.Addr().String()}, func() []Decision {
		mu.Lock()
		defer mu.Unlock()
		return append([]Decision(nil), log...)
	}
}

// waitIdle waits until s keeps a server connection for a later request:
// a client connection that ends hands its server connection back just
// after its client has read the answer.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := len(s.idle)
		s.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy kept no server connection")
		}
	}
}

func client(proxy *url.URL) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func loopback(s string) []netip.Addr { return []netip.Addr{netip.MustParseAddr(s)} }

func TestConnectAndForwardAllowedHost(t *testing.T) {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.URL.Path) })
	tlsSrv := httptest.NewTLSServer(hello)
	defer tlsSrv.Close()
	plain := httptest.NewServer(hello)
	defer plain.Close()
	_, tlsPort, _ := net.SplitHostPort(tlsSrv.Listener.Addr().String())
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	proxy, decisions := start(t, []string{"files.example.test", "*.example.org"}, nil,
		map[string][]netip.Addr{"files.example.test": loopback("127.0.0.1"), "www.example.org": loopback("127.0.0.1")})
	c := client(proxy)
	for _, u := range []string{"https://files.example.test:" + tlsPort + "/a", "http://www.example.org:" + plainPort + "/b"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello /") {
			t.Errorf("GET %s: %s %q", u, resp.Status, body)
		}
	}
	c.CloseIdleConnections()
	// A tunnel is logged when it ends, after the client closed it.
	var got []Decision
	for i := 0; i < 200 && len(got) < 2; i++ {
		time.Sleep(10 * time.Millisecond)
		got = decisions()
	}
	hosts := map[string]bool{}
	for _, d := range got {
		hosts[d.Method+" "+d.Host] = d.Allowed && d.Down > 0
	}
	if len(got) != 2 || !hosts["CONNECT files.example.test"] || !hosts["GET www.example.org"] {
		t.Errorf("decisions: %+v", got)
	}
}

func TestRefusals(t *testing.T) {
	proxy, decisions := start(t, []string{"allowed.test", "localhost", "*.example.org"}, []string{"bad.example.org"},
		map[string][]netip.Addr{"allowed.test": loopback("127.0.0.1")})
	c := client(proxy)
	cases := map[string]string{
		"https://other.test/":      "vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test)",
		"http://other.test/":       "vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test)",
		"https://bad.example.org/": "denied (--deny-host bad.example.org)",
		"https://localhost:1/":     "resolves to 127.0.0.1, a local or private address",
		"http://169.254.169.254/":  "host 169.254.169.254 is not in the session's allow list",
		"https://127.0.0.1:9/":     "host 127.0.0.1 is not in the session's allow list",
	}
	for u, want := range cases {
		resp, err := c.Get(u)
		if err != nil {
			// CONNECT refusals come back as the transport's error, with
			// the reason phrase.
			if !strings.Contains(err.Error(), want) {
				t.Errorf("GET %s: %v, want %q", u, err, want)
			}
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, want) || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s %q, want 403 %q", u, resp.Status, body, want)
		}
	}
	for _, d := range decisions() {
		if d.Allowed {
			t.Errorf("allowed: %+v", d)
		}
	}
}

func TestOversizedHeaderIsDropped(t *testing.T) {
	proxy, _ := start(t, []string{"a.test"}, nil, nil)
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, "GET http://a.test/ HTTP/1.1\r\nX: "+strings.Repeat("a", 200<<10)+"\r\n\r\n")
	data, _ := io.ReadAll(c)
	if len(data) != 0 {
		t.Errorf("answered %q", data[:min(len(data), 80)])
	}
}

// TestForwardSendsTheDecidedHost: a plain request's Host header cannot
// name another site than its URL, which the decision was made on
// (domain fronting on a shared server); net/http's ReadRequest already
// takes an absolute URL's host over the header, this keeps it so.
func TestForwardSendsTheDecidedHost(t *testing.T) {
	data := rawExchange(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host "+r.Host) },
		"GET http://a.test:PORT/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
	if !strings.Contains(data, "host a.test:") {
		t.Errorf("the server saw another host:\n%s", data)
	}
}

// rawExchange serves handler, sends request (PORT is its port) to a
// proxy that allows a.test there, and returns all that came back.
func rawExchange(t *testing.T, handler http.HandlerFunc, request string) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy, _ := start(t, []string{"a.test"}, nil, map[string][]netip.Addr{"a.test": loopback("127.0.0.1")})
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, strings.ReplaceAll(request, "PORT", port))
	data, _ := io.ReadAll(c)
	return string(data)
}

// TestForwardFraming: bodies of every framing go both ways intact
// through the forwarding (known length, chunked, until close, none for
// HEAD), hop-by-hop headers stop at the proxy, and a server connection
// is used again by the next client.
func TestForwardFraming(t *testing.T) {
	var conns sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Hop", r.Header.Get("X-Hop")+"|"+r.Header.Get("Keep-Alive")+r.Header.Get("X-Hop-Private"))
		switch r.URL.Path {
		case "/chunked":
			w.Write(body)
			w.(http.Flusher).Flush()
			w.Write([]byte("+more"))
		case "/close":
			hj, _, _ := w.(http.Hijacker).Hijack()
			io.WriteString(hj, "HTTP/1.1 200 OK\r\nX-Hop: "+w.Header().Get("X-Hop")+"\r\nConnection: close\r\n\r\nuntil close "+string(body))
			hj.Close()
		default:
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		}
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Store(c.RemoteAddr().String(), true)
		}
	}
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ps, proxy, decisions := startServer(t, []string{"a.test"}, nil, map[string][]netip.Addr{"a.test": loopback("127.0.0.1")})
	base := "http://a.test:" + port
	big := strings.Repeat("0123456789", 100_000)
	reusable := false // the last request left a server connection to use again
	cases := []struct {
		method, path, body string
		chunkedUp          bool
		want               string
	}{
		{"POST", "/len", big, false, big},
		{"POST", "/len", "chunked up", true, "chunked up"},
		{"POST", "/chunked", "a", false, "a+more"},
		{"POST", "/close", "b", false, "until close b"},
		{"HEAD", "/len", "", false, ""},
		{"GET", "/len", "", false, ""},
	}
	for _, keep := range []bool{true, false} {
		tr := &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: !keep}
		for _, tc := range cases {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunkedUp {
				body = io.MultiReader(body) // unknown length: sent chunked
			}
			req, _ := http.NewRequest(tc.method, base+tc.path, body)
			req.Header.Set("X-Hop", "end")
			req.Header.Set("Connection", "X-Hop-Private")
			req.Header.Set("Keep-Alive", "timeout=5")
			req.Header.Set("X-Hop-Private", "mine")
			if !keep && reusable {
				// A new client connection: the last one's server
				// connection is handed back after its answer was read.
				waitIdle(t, ps)
			}
			reusable = tc.path != "/close"
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(got) != tc.want || resp.Header.Get("X-Hop") != "end|" {
				t.Errorf("%s %s (keep-alive %v): %v %q (%d bytes), X-Hop %q", tc.method, tc.path, keep, err, got[:min(len(got), 40)], len(got), resp.Header.Get("X-Hop"))
			}
			if tc.method == "HEAD" && resp.ContentLength != 0 {
				t.Errorf("HEAD: Content-Length %d", resp.ContentLength)
			}
		}
		tr.CloseIdleConnections()
	}
	n := 0
	conns.Range(func(any, any) bool { n++; return true })
	// Two requests end their server connection (/close); the others
	// share what the proxy keeps, also after a client that did not keep
	// its own (a chunked answer included).
	if n != 3 {
		t.Errorf("the server saw %d connections for %d requests", n, 2*len(cases))
	}
	for _, d := range decisions() {
		if !d.Allowed {
			t.Errorf("refused: %+v", d)
		}
	}
}

// TestForwardKeptConnectionClosedByServer: a kept server connection the
// server closed meanwhile is not used; the request goes on a new one.
func TestForwardKeptConnectionClosedByServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy, _ := start(t, []string{"a.test"}, nil, map[string][]netip.Addr{"a.test": loopback("127.0.0.1")})
	c := client(proxy)
	for i := 0; i < 4; i++ {
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = c.Get("http://a.test:" + port + "/")
		} else {
			// A body cannot be sent twice: the connection is checked
			// before it goes.
			resp, err = c.Post("http://a.test:"+port+"/", "text/plain", strings.NewReader("body"))
		}
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Errorf("request %d: %s %q", i, resp.Status, body)
		}
		srv.CloseClientConnections()
		time.Sleep(20 * time.Millisecond)
	}
}

// TestForwardRefusesUpgrade: a plain request cannot turn its connection
// into something the proxy no longer reads (a WebSocket goes through
// CONNECT, decided the same way).
func TestForwardRefusesUpgrade(t *testing.T) {
	proxy, _ := start(t, []string{"a.test"}, nil, map[string][]netip.Addr{"a.test": loopback("127.0.0.1")})
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://a.test:1/ HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	data, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(data), "HTTP/1.1 400 vis-agent: the proxy does not pass on Upgrade") {
		t.Errorf("answered %q", data)
	}
}

// TestSocks5: the same port speaks SOCKS5 for clients that speak
// nothing else, with the same decisions: a listed name is reached (the
// name resolved by the proxy), others are refused with "not allowed by
// ruleset", and so is a name that resolves to a local address; only
// CONNECT is served, and only without a login.
func TestSocks5(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "socks "+r.Host) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, decisions := start(t, []string{"a.test", "localhost"}, nil, map[string][]netip.Addr{"a.test": loopback("127.0.0.1")})
	dialer, err := xproxy.SOCKS5("tcp", p.Host, nil, xproxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: dialer.(xproxy.ContextDialer).DialContext}}
	resp, err := c.Get("http://a.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "socks a.test:"+port {
		t.Errorf("through SOCKS5: %q", body)
	}
	for _, target := range []string{"other.test:80", "127.0.0.1:" + port, "localhost:" + port} {
		if _, err := dialer.Dial("tcp", target); err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
			t.Errorf("SOCKS5 to %s: %v", target, err)
		}
	}
	raw := func(send []byte, want ...byte) {
		t.Helper()
		conn, err := net.Dial("tcp", p.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(send)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := make([]byte, len(want))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != string(want) {
			t.Errorf("sent %v: answered %v (%v), want %v", send, got, err, want)
		}
	}
	raw([]byte{5, 1, 2}, 5, 0xff)                                     // a login only: no method
	raw([]byte{5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 53}, 5, 0, 5, 7) // UDP ASSOCIATE
	raw([]byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 53}, 5, 0, 5, 7) // BIND
	raw([]byte{5, 1, 0, 5, 1, 0, 9}, 5, 0, 5, 8)                      // an unknown address type
	c.CloseIdleConnections()
	logged := map[string]bool{}
	// A tunnel is logged when it ends.
	for i := 0; i < 200 && !logged["SOCKS5 a.test true"]; i++ {
		time.Sleep(10 * time.Millisecond)
		for _, d := range decisions() {
			logged[d.Method+" "+d.Host+" "+strconv.FormatBool(d.Allowed)] = true
		}
	}
	for _, want := range []string{"SOCKS5 a.test true", "SOCKS5 other.test false", "SOCKS5 127.0.0.1 false", "SOCKS5 localhost false"} {
		if !logged[want] {
			t.Errorf("not logged: %s (%v)", want, logged)
		}
	}
}

// TestForwardKeptConnectionOnlyForItsAddress: a kept server connection
// carries a later request only when that request's own decision allows
// the address it goes to; the proxy does not follow redirects.
func TestForwardKeptConnectionOnlyForItsAddress(t *testing.T) {
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
			return
		}
		io.WriteString(w, r.Context().Value(http.LocalAddrContextKey).(net.Addr).String())
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	proxy, decisions := start(t, []string{"a.test", "b.test"}, nil,
		map[string][]netip.Addr{"a.test": loopback("127.0.0.1"), "b.test": loopback("127.0.0.2")})
	c := client(proxy)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, name := range []string{"a.test", "b.test", "a.test", "b.test"} {
		resp, err := c.Get("http://" + name + ":" + port + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[string]string{"a.test": "127.0.0.1:", "b.test": "127.0.0.2:"}[name] + port
		if string(body) != want {
			t.Errorf("%s was served at %s, want %s", name, body, want)
		}
	}
	resp, err := c.Get("http://a.test:" + port + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("the redirect: %s", resp.Status)
	}
	for _, d := range decisions() {
		if d.Host == "169.254.169.254" {
			t.Errorf("the proxy followed the redirect: %+v", d)
		}
	}
}

// TestForwardChunkedToHTTP10: an HTTP/1.0 client, which reads no
// chunks, gets a chunked answer's body as is, ended by the close.
func TestForwardChunkedToHTTP10(t *testing.T) {
	data := rawExchange(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "one ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "two")
	}, "GET http://a.test:PORT/ HTTP/1.0\r\n\r\n")
	head, body, _ := strings.Cut(data, "\r\n\r\n")
	if body != "one two" || strings.Contains(strings.ToLower(head), "chunked") {
		t.Errorf("answered:\n%s", data)
	}
}

// TestLoopbackBuffers: a connection to a peer on loopback gets the small
// buffers that keep spliced bytes in cache (the kernel doubles what is
// set, for its bookkeeping).
func TestLoopbackBuffers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sizeLocal(c)
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) {
		for _, opt := range []int{syscall.SO_RCVBUF, syscall.SO_SNDBUF} {
			if n, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt); err != nil || n != 2*localBuffer {
				t.Errorf("socket option %d: %d (%v), want %d", opt, n, err, 2*localBuffer)
			}
		}
	})
}
