package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// netWorld is what the network tests reach for: local servers standing
// in for named hosts (the proxy resolves *.example.test to 127.0.0.1
// through VIS_TEST_PROXY_RESOLVE; the kernel path is the real one), a
// TCP service answering ESCAPED and a UDP "resolver" counting what
// reaches it, outside any allow list.
type netWorld struct {
	plain, tls  *httptest.Server
	plainPort   string
	tlsPort     string
	outsidePort string
	udp         string // 127.0.0.1:port
	udpHits     atomic.Int64
	machineIP   string // a non-loopback address of this machine, or ""
	resolveEnv  string
}

func newNetWorld(t *testing.T, files string) *netWorld {
	t.Helper()
	w := &netWorld{}
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if files != "" && r.URL.Path != "/" {
			http.FileServer(http.Dir(files)).ServeHTTP(rw, r)
			return
		}
		io.WriteString(rw, "served "+r.Host)
	})
	w.plain = httptest.NewServer(handler)
	w.tls = httptest.NewTLSServer(handler)
	t.Cleanup(w.plain.Close)
	t.Cleanup(w.tls.Close)
	_, w.plainPort, _ = net.SplitHostPort(w.plain.Listener.Addr().String())
	_, w.tlsPort, _ = net.SplitHostPort(w.tls.Listener.Addr().String())
	// On every address: the machine's own address is tried too.
	l := testenv.Answer(t, "tcp", ":0", "ESCAPED over TCP\n")
	_, w.outsidePort, _ = net.SplitHostPort(l.Addr().String())
	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := u.ReadFrom(buf); err != nil {
				return
			}
			w.udpHits.Add(1)
		}
	}()
	w.udp = u.LocalAddr().String()
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				w.machineIP = ipn.IP.String()
				break
			}
		}
	}
	var names []string
	for _, n := range []string{"files.example.test", "www.example.test", "evil.example.test", "git.example.test", "pypi.example.test"} {
		names = append(names, n+"=127.0.0.1")
	}
	w.resolveEnv = "VIS_TEST_PROXY_RESOLVE=" + strings.Join(names, ",")
	return w
}

// attempts is Python that tries every way around the proxy and prints
// ESCAPED for each that gets through; the proxy's port is HTTP_PROXY's.
func (w *netWorld) attempts() string {
	targets := []string{fmt.Sprintf("(%q, %s)", "127.0.0.1", w.outsidePort), fmt.Sprintf("(%q, %s)", "127.0.0.1", w.plainPort),
		`("1.1.1.1", 443)`, `("169.254.169.254", 80)`}
	proxyTargets := []string{`"127.0.0.2"`, `"10.0.0.1"`}
	if w.machineIP != "" {
		targets = append(targets, fmt.Sprintf("(%q, %s)", w.machineIP, w.outsidePort))
		proxyTargets = append(proxyTargets, fmt.Sprintf("%q", w.machineIP))
	}
	return fmt.Sprintf(`
import os, socket
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
for addr in [%s] + [(h, port) for h in [%s]]:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
            s.settimeout(3)
            a = addr if family == socket.AF_INET else ("::ffff:" + addr[0], addr[1])
            s.connect(a)
            print("ESCAPED: connected to", a)
        except OSError as e:
            print("tcp refused", addr, e.errno)
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (%q, %s))
    u.sendto(b"x", ("8.8.8.8", 53))
    print("udp sent (must not arrive)")
except OSError as e:
    print("udp refused", e.errno)
try:
    print("ESCAPED: resolved", socket.getaddrinfo("example.com", 443)[0][4])
except OSError as e:
    print("dns refused", e)
for fam in ("AF_NETLINK", "AF_PACKET", "AF_VSOCK"):
    try:
        socket.socket(getattr(socket, fam), socket.SOCK_RAW if fam != "AF_VSOCK" else socket.SOCK_STREAM)
        print("ESCAPED: a socket of", fam)
    except (OSError, AttributeError) as e:
        print(fam, "refused")
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print("ESCAPED: a raw socket")
except OSError as e:
    print("raw refused", e.errno)
# The proxy's SOCKS5, asked for the outside service and for UDP.
for cmd in (1, 3):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"\x05\x01\x00")
    s.recv(2)
    s.sendall(bytes([5, cmd, 0, 1, 127, 0, 0, 1]) + int(%s).to_bytes(2, "big"))
    answer = s.recv(10)
    if answer[1:2] == b"\x00":
        print("ESCAPED: SOCKS5", cmd, s.recv(100))
    else:
        print("socks refused", cmd, answer[1])
`, strings.Join(targets, ", "), strings.Join(proxyTargets, ", "), strings.Split(w.udp, ":")[0], strings.Split(w.udp, ":")[1], w.outsidePort)
}

// fetches is Python that fetches url and prints what came, or the error.
func fetches(label, url string) string {
	return fmt.Sprintf(`
import ssl, urllib.request, urllib.error
try:
    print(%[1]q, urllib.request.urlopen(%[2]q, context=ssl._create_unverified_context(), timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print(%[1]q, "HTTPError", e.code, e.reason)
except Exception as e:
    print(%[1]q, "error", e)
`, label, url)
}

func (w *netWorld) checkNothingArrived(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, "ESCAPED") {
		t.Errorf("%s: got around the proxy:\n%s", what, out)
	}
	if n := w.udpHits.Swap(0); n != 0 {
		t.Errorf("%s: %d datagrams reached the outside resolver", what, n)
	}
}

var allowFlags = []string{"--allow-host", "*.example.test", "--allow-host", "localhost", "--deny-host", "evil.example.test"}

// TestSandboxNetworkAllowList: a jailed session with an allow list
// reaches the allowed named hosts over HTTPS (CONNECT) and HTTP through
// its host's proxy, gets 403 with the host and the flag for the others
// (a denied one, a name resolving to loopback), and nothing around the
// proxy gets out: TCP to a service or to the proxy's port elsewhere,
// IPv4-mapped addresses, UDP, DNS, netlink, packet, vsock and raw
// sockets, the proxy's SOCKS5 asked for an unlisted address or for UDP;
// with the audit hook and without it, on the oldest and newest
// CPython. The host logs each decision.
func TestSandboxNetworkAllowList(t *testing.T) {
	t.Parallel()
	forHookModes(t, true, func(t *testing.T, py testenv.Python, hook bool) {
		w := newNetWorld(t, "")
		sb := hookSandbox(t, py, hook, w.resolveEnv)
		code := `print("access", session.access.network, session.access.hosts)` +
			fetches("https:", "https://files.example.test:"+w.tlsPort+"/") +
			fetches("http:", "http://www.example.test:"+w.plainPort+"/") +
			fetches("other:", "https://other.test/") +
			fetches("plain other:", "http://other.test:"+w.plainPort+"/") +
			fetches("denied:", "https://evil.example.test:"+w.tlsPort+"/") +
			fetches("private:", "http://localhost:"+w.plainPort+"/") +
			fetches("metadata:", "http://169.254.169.254/latest/meta-data/") +
			w.attempts()
		r := sb.block("net", code, 0, allowFlags...)
		out := r.stdout + r.stderr
		contains(t, "the block's output", out,
			"access True {'allow': ['pypi.org', 'files.pythonhosted.org', '*.example.test', 'localhost'], 'deny': ['evil.example.test']}",
			"https: served files.example.test:"+w.tlsPort,
			"http: served www.example.test:"+w.plainPort,
			"other: error <urlopen error Tunnel connection failed: 403 vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test or sandbox.allow_hosts)",
			"plain other: HTTPError 403 vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test or sandbox.allow_hosts)",
			"denied: error <urlopen error Tunnel connection failed: 403 vis-agent: host evil.example.test is denied (--deny-host evil.example.test)",
			// localhost is 127.0.0.1 or ::1, as the machine's /etc/hosts has it.
			"private: HTTPError 403 vis-agent: host localhost resolves to ", ", a local or private address, which the session reaches only when the allow list names the address",
			"metadata: HTTPError 403 vis-agent: host 169.254.169.254 is not in the session's allow list",
			"dns refused", "raw refused", "socks refused 1 2", "socks refused 3 7")
		w.checkNothingArrived(t, "the block", out)
		sb.hostLog("net",
			"network: CONNECT files.example.test:"+w.tlsPort+" allowed",
			"network: GET www.example.test:"+w.plainPort+" allowed",
			"network: CONNECT other.test:443 refused")
	})
}

// TestSandboxNetworkShell: shell() commands of a session with an allow
// list go through the proxy unchanged (curl, git, pip from a local
// index standing in for a named one), and cannot go around it.
func TestSandboxNetworkShell(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	// A bare git repository served as files (git's "dumb" HTTP).
	repos := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+repos, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	src := filepath.Join(repos, "src")
	os.Mkdir(src, 0o755)
	git(src, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644)
	git(src, "add", "f")
	git(src, "commit", "-qm", "one")
	git(repos, "clone", "-q", "--bare", "src", "repo.git")
	git(filepath.Join(repos, "repo.git"), "update-server-info")
	// A package index.
	wheels := t.TempDir()
	testwheel.Build(t, wheels, testwheel.Spec{Name: "vis-net", Version: "1.0", Files: map[string]string{"vis_net.py": "VALUE = 'through the proxy'\n"}})
	testwheel.Index(t, wheels, filepath.Join(repos, "simple"))
	w := newNetWorld(t, repos)
	sb := newSandbox(t, py, w.resolveEnv)
	cmd := fmt.Sprintf(`curl -sS http://www.example.test:%[1]s/; echo; curl -sS -k https://files.example.test:%[2]s/; echo; `+
		`curl -sS http://other.test:%[1]s/; echo; curl -sS --noproxy '*' http://127.0.0.1:%[3]s/ && echo ESCAPED; `+
		`git ls-remote http://git.example.test:%[1]s/repo.git; `+
		`python3 -m pip install -q --no-cache-dir --disable-pip-version-check --target /tmp/t --trusted-host pypi.example.test --index-url http://pypi.example.test:%[1]s/simple/ vis-net && PYTHONPATH=/tmp/t python3 -c 'import vis_net; print(vis_net.VALUE)'; `+
		`python3 -c 'import socket; s = socket.socket(); s.settimeout(3); s.connect(("127.0.0.1", %[3]s)); print("ESCAPED")' 2>&1 | tail -1`,
		w.plainPort, w.tlsPort, w.outsidePort)
	code := fmt.Sprintf(`r = shell(%q, timeout=120)
r.wait()
print(r.out); print(r.err); print("kernel", r.kernel.get("proxy_port"))`, cmd)
	r := sb.block("sh", code, 0, allowFlags...)
	out := r.stdout + r.stderr
	contains(t, "the commands' output", out,
		"served www.example.test:"+w.plainPort, "served files.example.test:"+w.tlsPort,
		"vis-agent: host other.test is not in the session's allow list (to allow it: --allow-host other.test or sandbox.allow_hosts)",
		"refs/heads/main", "through the proxy", "Permission denied")
	w.checkNothingArrived(t, "shell()", out)
}

// TestSandboxNetworkPolicyChange: a block run with another allow list
// restarts the child, and the notice names both policies; the new list
// holds; sandbox list says allow.
func TestSandboxNetworkPolicyChange(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	w := newNetWorld(t, "")
	sb := newSandbox(t, py, w.resolveEnv)
	sb.block("chg", `x = 1`, 0, "--allow-host", "www.example.test")
	r := sb.block("chg", fetches("now:", "http://www.example.test:"+w.plainPort+"/"), 0, "--allow-host", "files.example.test")
	contains(t, "the block's output", r.stdout+r.stderr, "[Sandbox restarted]", "network allow pypi.org, files.pythonhosted.org, files.example.test",
		"network allow pypi.org, files.pythonhosted.org, www.example.test",
		"now: HTTPError 403 vis-agent: host www.example.test is not in the session's allow list")
	if l := sb.run("list"); !strings.Contains(l.stdout, " allow ") {
		t.Errorf("sandbox list does not say allow:\n%s", l.stdout)
	}
}

// TestPythonAllowHost: `vis-agent python --allow-host` reaches the
// allowed host through its proxy, gets 403 for the others, and nothing
// around the proxy gets out, from the program or a process it starts.
func TestPythonAllowHost(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			w := newNetWorld(t, "")
			home := t.TempDir()
			code := fetches("https:", "https://127.0.0.1:"+w.tlsPort+"/") + fetches("other:", "http://127.0.0.2:"+w.plainPort+"/") + w.attempts() +
				fmt.Sprintf(`
import subprocess
print(subprocess.run(["curl", "-sS", "--noproxy", "*", "http://127.0.0.1:%s/"], capture_output=True, text=True).stderr)
print(subprocess.run(["curl", "-sS", "http://127.0.0.1:%s/"], capture_output=True, text=True).stdout)`, w.outsidePort, w.plainPort)
			cmd := exec.Command(testenv.Binary(t), "python", "--allow-host", "127.0.0.1:"+w.tlsPort, "--allow-host", "127.0.0.1:"+w.plainPort, "-c", code)
			cmd.Env = userEnv(py, home, nil)
			cmd.Dir = t.TempDir()
			outb, err := cmd.CombinedOutput()
			out := string(outb)
			if err != nil {
				t.Fatalf("vis-agent python --allow-host: %v\n%s", err, out)
			}
			contains(t, "the program's output", out, "https: served 127.0.0.1:"+w.tlsPort,
				"other: HTTPError 403 vis-agent: host 127.0.0.2 is not in the session's allow list (to allow it: --allow-host 127.0.0.2)",
				curlRefused, "served 127.0.0.1:"+w.plainPort, "dns refused")
			w.checkNothingArrived(t, "vis-agent python", out)
		})
	}
}

// curlRefused is what every curl prints when nothing takes its connection
// to 127.0.0.1: the reason after it is worded differently across curl
// releases ("Couldn't connect to server", "Could not connect to server").
const curlRefused = "curl: (7) Failed to connect to 127.0.0.1"

// TestSandboxNetworkNoJail: --no-jail lifts files and processes, not the
// allow list: the child, a process it starts and a shell() command all
// reach the allowed host through the proxy and nothing else.
func TestSandboxNetworkNoJail(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	w := newNetWorld(t, "")
	sb := newSandbox(t, py, w.resolveEnv)
	curl := fmt.Sprintf(`curl -sS http://www.example.test:%s/; echo; curl -sS --noproxy '*' http://127.0.0.1:%s/`, w.plainPort, w.outsidePort)
	code := fetches("child:", "http://www.example.test:"+w.plainPort+"/") + w.attempts() + fmt.Sprintf(`
import subprocess
p = subprocess.run(%[1]q, shell=True, capture_output=True, text=True)
print("subprocess:", p.stdout, p.stderr)
r = shell(%[1]q)
r.wait()
print("shell:", r.out, r.err)`, curl)
	r := sb.block("nj", code, 0, append([]string{"--no-jail"}, allowFlags...)...)
	out := r.stdout + r.stderr
	contains(t, "the block's output", out, "child: served www.example.test:"+w.plainPort,
		"subprocess: served www.example.test:"+w.plainPort, "shell: served www.example.test:"+w.plainPort, curlRefused)
	w.checkNothingArrived(t, "--no-jail", out)
}
