package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// TestSandboxNetworkAsAnotherUser: a session with an allow list run by a
// user who is not root (nobody): the child's network namespace is made
// in its own user namespace, the proxy the host runs as that user
// serves it, and nothing gets around it.
func TestSandboxNetworkAsAnotherUser(t *testing.T) {
	t.Parallel()
	w := newNetWorld(t, "")
	_, run := asNobody(t, w.resolveEnv)
	// asNobody stops the default session; this one has its own name.
	t.Cleanup(func() { run("stop", "--session", "nobody-net", "--force") })
	code := `import os
print("uid", os.getuid(), session.access.network)` +
		fetches("https:", "https://files.example.test:"+w.tlsPort+"/") +
		fetches("http:", "http://www.example.test:"+w.plainPort+"/") +
		fetches("other:", "http://other.test:"+w.plainPort+"/") + w.attempts()
	out, err := run(append([]string{"run", "--session", "nobody-net", "-c", code}, allowFlags...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	contains(t, "as nobody", out, "uid 65534 True",
		"https: served files.example.test:"+w.tlsPort,
		"http: served www.example.test:"+w.plainPort,
		"other: HTTPError 403 vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test or sandbox.allow_hosts)",
		"dns refused", "raw refused")
	w.checkNothingArrived(t, "as nobody", out)
}

// upstreamProxy is the user's own proxy, for the tests: CONNECT and
// plain requests in absolute form, after a Basic login, to *.example.test
// mapped to 127.0.0.1; it records what it was asked.
type upstreamProxy struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func newUpstreamProxy(t *testing.T, user, password string) *upstreamProxy {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &upstreamProxy{addr: l.Addr().String()}
	login := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	mapped := func(hostPort string) string {
		host, port, _ := net.SplitHostPort(hostPort)
		if strings.HasSuffix(host, ".example.test") {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, port)
	}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, mapped(addr))
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.Host)
		p.mu.Unlock()
		if r.Header.Get("Proxy-Authorization") != login {
			rw.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		if r.Method != http.MethodConnect {
			r.RequestURI = ""
			r.Header.Del("Proxy-Authorization")
			resp, err := transport.RoundTrip(r)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			for k, v := range resp.Header {
				rw.Header()[k] = v
			}
			rw.Header().Set("Via", "upstream")
			rw.WriteHeader(resp.StatusCode)
			io.Copy(rw, resp.Body)
			return
		}
		server, err := net.Dial("tcp", mapped(r.Host))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer server.Close()
		rw.WriteHeader(http.StatusOK)
		client, buf, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			return
		}
		defer client.Close()
		go func() { io.Copy(server, buf) }() // what the client sent after its CONNECT, then the rest
		io.Copy(client, server)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *upstreamProxy) asked() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.seen, "\n")
}

// TestSandboxNetworkUpstreamProxy: with the user's own proxy in the
// host's environment (HTTPS_PROXY, HTTP_PROXY with a login), the
// session's proxy decides first and then goes through it, for CONNECT
// and plain requests; a refused host never reaches it.
func TestSandboxNetworkUpstreamProxy(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	w := newNetWorld(t, "")
	up := newUpstreamProxy(t, "me", "s3cret")
	proxyURL := "http://me:s3cret@" + up.addr
	sb := newSandbox(t, py, w.resolveEnv, "HTTPS_PROXY="+proxyURL, "HTTP_PROXY="+proxyURL, "NO_PROXY=", "no_proxy=")
	code := fetches("https:", "https://files.example.test:"+w.tlsPort+"/") +
		fetches("http:", "http://www.example.test:"+w.plainPort+"/") +
		fetches("other:", "https://other.test/") + `
import urllib.request
print("via", urllib.request.urlopen("http://www.example.test:` + w.plainPort + `/").headers["Via"])`
	r := sb.block("up", code, 0, allowFlags...)
	contains(t, "the block's output", r.stdout+r.stderr,
		"https: served files.example.test:"+w.tlsPort,
		"http: served www.example.test:"+w.plainPort,
		"other: error <urlopen error Tunnel connection failed: 403 vis-agent: host other.test is not in the session's allow list",
		"via upstream")
	asked := up.asked()
	contains(t, "what the upstream proxy was asked", asked,
		"CONNECT files.example.test:"+w.tlsPort, "GET www.example.test:"+w.plainPort)
	if strings.Contains(asked, "other.test") {
		t.Errorf("a refused host reached the upstream proxy:\n%s", asked)
	}
}

// TestSandboxNetworkInstall: install() in a session with an allow list
// runs the host's uv through the session's proxy: from an index under a
// listed name it installs, under a name the list leaves out it fails
// with the proxy's refusal (the error names the host and the flag, which
// uv's own message does not), and the host logs both.
func TestSandboxNetworkInstall(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	w := newNetWorld(t, "")
	// The index on loopback would be reached directly (a local index is
	// the user's own); under a name it goes through the proxy.
	index := strings.Replace(testwheel.Serve(t, installIndex(t)), "127.0.0.1", "pypi.example.test", 1)
	sb := installSandbox(t, py, index, w.resolveEnv)
	// The user's list replaces the default one (@pypi, which is the index).
	writeUserConfig(t, sb, "[python]\nindex_url = \""+index+"\"\n[sandbox]\nallow_hosts = []\n")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(index, "/simple"), "http://"))
	// First, while uv's cache is empty.
	r := sb.block("refused", `install("vis-tiny")`, 1, "--allow-host", "www.example.test")
	contains(t, "install() to a host not listed", r.stderr, "pypi.example.test:"+port+"/simple) returned a 403 Forbidden",
		"(the session's proxy: vis-agent: host pypi.example.test is not in the session's allow list (to allow it: --allow-host pypi.example.test or sandbox.allow_hosts))")
	sb.hostLog("refused", "network: GET pypi.example.test:"+port+" refused")

	r = sb.block("ok", `r = install("vis-tiny")
import vis_tiny
print(vis_tiny.VALUE)`, 0, "--allow-host", "pypi.example.test")
	contains(t, "install() through the proxy", r.stdout, "tiny dep")
	sb.hostLog("ok", "network: GET pypi.example.test:"+port+" allowed")
}

// TestSandboxNetworkSocks5: a client that speaks only SOCKS5 reaches a
// listed name on the proxy's port (curl with socks5h://, the name sent
// to the proxy, which resolves it), and not another; the host logs both.
func TestSandboxNetworkSocks5(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	w := newNetWorld(t, "")
	sb := newSandbox(t, py, w.resolveEnv)
	cmd := fmt.Sprintf(`socks="socks5h://${HTTP_PROXY#http://}"; curl -sS -x "$socks" http://www.example.test:%[1]s/; echo; `+
		`curl -sS -x "$socks" http://other.test:%[1]s/ || echo REFUSED`, w.plainPort)
	r := sb.block("socks", fmt.Sprintf(`r = shell(%q, timeout=60)
r.wait()
print(r.out, r.err)`, cmd), 0, allowFlags...)
	contains(t, "curl through SOCKS5", r.stdout, "served www.example.test:"+w.plainPort, "REFUSED")
	sb.hostLog("socks", "network: SOCKS5 www.example.test:"+w.plainPort+" allowed",
		"network: SOCKS5 other.test:"+w.plainPort+" refused: vis-agent: host other.test is not in the session's allow list")
}
