package host

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"github.com/vis-agent/vis-agent/sandbox/proxy"
)

// testResolveEnv names hosts the proxy resolves without DNS, as
// "name=address,name=address": tests stand a local server in for a named
// host with it. Only the user sets the host's environment.
const testResolveEnv = "VIS_TEST_PROXY_RESOLVE"

// allowSetting is the user's setting that allows hosts, which a refusal
// names beside --allow-host.
const allowSetting = "sandbox.allow_hosts"

// proxies are the host's proxies, one per policy with an allow list
// (the commands of a policy keep theirs across children); all end with
// the host.
type proxies struct {
	mu sync.Mutex
	m  map[string]*netProxy
}

// proxyFor returns the proxy of children and commands under policy, nil
// when its network is not an allow list.
func (h *Host) proxyFor(policy protocol.Policy) (*netProxy, error) {
	if !policy.Proxied() {
		return nil, nil
	}
	key, _ := json.Marshal(policy)
	h.proxies.mu.Lock()
	defer h.proxies.mu.Unlock()
	if np := h.proxies.m[string(key)]; np != nil {
		return np, nil
	}
	np, err := newNetProxy(policy, h.cfg.Log)
	if err != nil {
		return nil, err
	}
	if h.proxies.m == nil {
		h.proxies.m = map[string]*netProxy{}
	}
	h.proxies.m[string(key)] = np
	return np, nil
}

// closeProxies stops every proxy of the host.
func (h *Host) closeProxies() {
	h.proxies.mu.Lock()
	defer h.proxies.mu.Unlock()
	for _, np := range h.proxies.m {
		np.close()
	}
	h.proxies.m = nil
}

// netProxy is the proxy of one child whose network is an allow list,
// and the listeners it serves: the child's, and one per shell() command,
// each in that process's network namespace.
type netProxy struct {
	srv       *proxy.Server
	uv        *proxy.Server // the host's uv's (install()), which notes its refusals
	cfg       proxy.Config
	port      int
	mu        sync.Mutex
	listeners []net.Listener
	// hostURL is the proxy's address on the host's own loopback, for
	// the host's uv (install()); "" until asked for.
	hostURL string
	// refused is the latest refusal of a request of uv's, which
	// install()'s error names (uv's own says only "403 Forbidden").
	refused string
}

// newNetProxy returns the proxy of a child under policy, nil when its
// network is not an allow list. Decisions go to log, one line each.
func newNetProxy(policy protocol.Policy, log io.Writer) (*netProxy, error) {
	if !policy.Proxied() {
		return nil, nil
	}
	rules, err := netpolicy.Parse(policy.Hosts.Allow, policy.Hosts.Deny, "")
	if err != nil {
		return nil, fmt.Errorf("the session's allow list: %w", err)
	}
	rules.Setting = allowSetting
	fixed, err := testResolve(os.Getenv(testResolveEnv))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	cfg := proxy.Config{Rules: rules, Fixed: fixed, Upstream: upstream,
		Log: func(d proxy.Decision) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(log, "vis-agent sandbox host: %s\n", d)
		}}
	return &netProxy{srv: proxy.New(cfg), cfg: cfg}, nil
}

// upstream is the user's own proxy for u, from the host's environment
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), which is the user's.
func upstream(u *url.URL) (*url.URL, error) {
	return http.ProxyFromEnvironment(&http.Request{URL: u})
}

// testResolve parses testResolveEnv's value.
func testResolve(v string) (map[string][]netip.Addr, error) {
	if v == "" {
		return nil, nil
	}
	m := map[string][]netip.Addr{}
	for _, entry := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(entry, "=")
		ip, err := netip.ParseAddr(addr)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: %q is not name=address", testResolveEnv, entry)
		}
		name = strings.ToLower(name)
		m[name] = append(m[name], ip)
	}
	return m, nil
}

// commandsPort is where the proxy listens in each command's namespace
// when the child has none to take its port from: any port is free in a
// new namespace.
const commandsPort = 3128

// receive takes a child's listener from its host-call link (the child
// sends it before it runs any Python) and serves it; the caller closes
// it when the child ends, which ends its namespace. A child that could
// make no namespace says so instead (it runs without the network): nil,
// and commands still get the proxy, each in a namespace of its own, or
// fail to start where none can be made.
func (n *netProxy) receive(conn net.Conn) (net.Listener, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("the host-call link is not a unix socket")
	}
	uc.SetReadDeadline(time.Now().Add(readyTimeout))
	defer uc.SetReadDeadline(time.Time{})
	if first, err := peekByte(uc); err != nil {
		return nil, fmt.Errorf("receive the proxy's listener: %w", err)
	} else if first == protocol.NoNetworkNamespace {
		if _, err := uc.Read(make([]byte, 1)); err != nil {
			return nil, fmt.Errorf("receive the proxy's listener: %w", err)
		}
		n.mu.Lock()
		n.port = commandsPort
		n.mu.Unlock()
		return nil, nil
	}
	l, err := jail.ReceiveListener(uc)
	if err != nil {
		return nil, err
	}
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		l.Close()
		return nil, fmt.Errorf("receive the proxy's listener: it is not on the loopback (%s)", l.Addr())
	}
	n.mu.Lock()
	n.port = addr.Port
	n.mu.Unlock()
	n.Serve(l)
	return l, nil
}

// local returns the proxy's URL on the host's own loopback, listening
// from the first call on: install()'s uv, which the host runs, goes
// through the allow list too.
func (n *netProxy) local() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hostURL != "" {
		return n.hostURL, nil
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("the proxy's listener for uv: %w", err)
	}
	n.listeners = append(n.listeners, l)
	cfg := n.cfg
	cfg.Log = func(d proxy.Decision) {
		n.cfg.Log(d)
		if !d.Allowed {
			n.mu.Lock()
			n.refused = d.Why
			n.mu.Unlock()
		}
	}
	n.uv = proxy.New(cfg)
	go n.uv.Serve(l)
	n.hostURL = "http://" + l.Addr().String()
	return n.hostURL, nil
}

// Port is where the proxy listens in the latest child's namespace: each
// command's listener takes the same port in its own.
func (n *netProxy) Port() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.port
}

// Serve serves l until it is closed (its command or child ended) or the
// proxy is.
func (n *netProxy) Serve(l net.Listener) {
	n.mu.Lock()
	n.listeners = append(n.listeners, l)
	n.mu.Unlock()
	go func() {
		n.srv.Serve(l)
		n.mu.Lock()
		defer n.mu.Unlock()
		for i, o := range n.listeners {
			if o == l {
				n.listeners = append(n.listeners[:i], n.listeners[i+1:]...)
				break
			}
		}
	}()
}

// close stops serving: the listeners (which keep their namespaces
// alive) and every connection.
func (n *netProxy) close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	for _, l := range n.listeners {
		l.Close()
	}
	n.listeners = nil
	uv := n.uv
	n.mu.Unlock()
	n.srv.Close()
	if uv != nil {
		uv.Close()
	}
}

// takeRefused returns the latest refusal of uv's requests ("" if none)
// and forgets it.
func (n *netProxy) takeRefused() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.refused
	n.refused = ""
	return r
}

// peekByte waits for the first byte on uc and returns it, leaving it to
// be read (with whatever descriptor came with it).
func peekByte(uc *net.UnixConn) (byte, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var b [1]byte
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
		return rerr != unix.EAGAIN
	}); err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	if n == 0 {
		return 0, io.EOF
	}
	return b[0], nil
}
