package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/sandbox/netpolicy"
)

// start serves a proxy with the rules on a loopback port and returns
// its URL and the decisions it logs.
func start(t *testing.T, allow, deny []string, fixed map[string][]netip.Addr) (*url.URL, func() []Decision) {
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
	return &url.URL{Scheme: "http", Host: l.Addr().String()}, func() []Decision {
		mu.Lock()
		defer mu.Unlock()
		return append([]Decision(nil), log...)
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
		"https://other.test/":      "vis-agent: host other.test is not in the session's allow list (--allow-host)",
		"http://other.test/":       "vis-agent: host other.test is not in the session's allow list (--allow-host)",
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host "+r.Host) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	proxy, _ := start(t, []string{"allowed.test"}, nil, map[string][]netip.Addr{"allowed.test": loopback("127.0.0.1")})
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
	data, _ := io.ReadAll(c)
	if !strings.Contains(string(data), "host allowed.test:"+port) {
		t.Errorf("the server saw another host:\n%s", data)
	}
}
