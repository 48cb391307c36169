package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// TestSandboxNetworkDefault: a session the user asked nothing of reaches
// the package index their config names (python.index_url, a loopback
// index standing in for PyPI) and nothing else: the block fetches the
// index, install() and a shell() `pip download` get packages from it, and
// another loopback server, a named host and every way around the proxy
// are refused, the refusal naming the host and --allow-host (and
// sandbox.allow_hosts), the block's error a hint line saying what the
// list allows. session.access, sandbox list and the MCP server's
// instructions say the list; network = "on" (and --network on) opens the
// network, --no-network closes it. With the audit hook and without it, on
// the oldest and newest CPython.
func TestSandboxNetworkDefault(t *testing.T) {
	t.Parallel()
	index := testwheel.Serve(t, installIndex(t))
	u, err := url.Parse(index)
	if err != nil {
		t.Fatal(err)
	}
	indexHost := u.Host // 127.0.0.1:PORT
	forHookModes(t, true, func(t *testing.T, py testenv.Python, hook bool) {
		w := newNetWorld(t, "")
		other := w.plain.URL + "/" // another loopback server
		sb := hookSandbox(t, py, hook, "HOME="+t.TempDir(), w.resolveEnv)
		config := "[python]\nindex_url = \"" + index + "\"\n"
		writeUserConfig(t, sb, config)
		code := `print("access", session.access.network, session.access.hosts)` +
			fetches("index:", index+"/vis-dep/") +
			fetches("other:", other) +
			fetches("named:", "http://www.example.test:"+w.plainPort+"/") +
			w.attempts() + `
r = install("vis-tiny")
import vis_tiny
print("installed:", vis_tiny.VALUE)
h = shell("python3 -m pip download -q --no-deps --disable-pip-version-check --no-cache-dir -d /tmp/dl --index-url ` + index + ` vis-dep && ls /tmp/dl", timeout=120)
h.wait()
print("pip:", h.out, h.err)
import urllib.request
urllib.request.urlopen(` + "\"" + other + "\"" + `, timeout=20)`
		r := sb.block("def", code, 1)
		out := r.stdout + r.stderr
		contains(t, "the default session", out,
			"access True {'allow': ['"+indexHost+"', 'files.pythonhosted.org']}",
			"Links for vis-dep",
			"other: HTTPError 403 vis-agent: host 127.0.0.1 is not in the session's allow list (to allow it: --allow-host 127.0.0.1 or sandbox.allow_hosts)",
			"named: HTTPError 403 vis-agent: host www.example.test is not in the session's allow list (to allow it: --allow-host www.example.test or sandbox.allow_hosts)",
			"installed: tiny dep",
			"pip: vis_dep-1.0-py3-none-any.whl",
			"Hint: this session's network reaches only "+indexHost+", files.pythonhosted.org, through the proxy at HTTP_PROXY",
			"--allow-host HOST or sandbox.allow_hosts")
		w.checkNothingArrived(t, "the default session", out)
		if strings.Contains(out, "served 127.0.0.1") {
			t.Errorf("the default session reached another loopback server:\n%s", out)
		}

		l := sb.run("list")
		contains(t, "sandbox list", l.stdout, " allow ", "network allow "+indexHost+", files.pythonhosted.org (def)")
		var rows []struct {
			Name  string
			Hosts struct{ Allow []string }
		}
		if err := json.Unmarshal([]byte(sb.run("list", "--json").stdout), &rows); err != nil || len(rows) != 1 ||
			strings.Join(rows[0].Hosts.Allow, " ") != indexHost+" files.pythonhosted.org" {
			t.Errorf("sandbox list --json: %+v %v", rows, err)
		}

		// network = "on": every host, directly.
		writeUserConfig(t, sb, config+"[sandbox]\nnetwork = \"on\"\n")
		r = sb.block("on", `print("access", session.access.network, session.access.hosts)`+fetches("other:", other), 0)
		contains(t, `network = "on"`, r.stdout, "access True None", "other: served 127.0.0.1:"+w.plainPort)
		if l := sb.run("list"); !strings.Contains(l.stdout, "network allow "+indexHost+", files.pythonhosted.org (def)\n") ||
			strings.Contains(l.stdout, "(def, on)") {
			t.Errorf("sandbox list with a session on:\n%s", l.stdout)
		}
		writeUserConfig(t, sb, config)
		r = sb.block("flag", fetches("other:", other), 0, "--network", "on")
		contains(t, "--network on", r.stdout, "other: served 127.0.0.1:"+w.plainPort)

		// --no-network: nothing, not the index either.
		r = sb.block("off", `print("access", session.access.network, session.access.hosts)`+fetches("index:", index+"/vis-dep/"), 0, "--no-network")
		contains(t, "--no-network", r.stdout, "access False None", "index: error")
		if strings.Contains(r.stdout, "Links for vis-dep") {
			t.Errorf("--no-network reached the index:\n%s", r.stdout)
		}

		// The MCP server's instructions (once: they are the client's).
		if hook && py.Version == oldestAndNewest(t)[0].Version {
			c := connectMCP(t, sb, "--session", "mcp")
			contains(t, "the MCP server's instructions", c.cs.InitializeResult().Instructions,
				"Network: only "+indexHost+", files.pythonhosted.org, through a proxy", "--allow-host HOST or sandbox.allow_hosts")
			text, _ := c.python(fetches("other:", other), false)
			contains(t, "the MCP block", text, "to allow it: --allow-host 127.0.0.1 or sandbox.allow_hosts")
		}
	})
}

// TestSandboxNetworkWithoutNamespace: where the child can make no network
// namespace (every vis-agent process under a filter that refuses
// namespaces, as without user namespaces or in a container), a default
// session still starts, its code with no network at all (kernel.missing
// says why and how to open it), and install() still gets packages from
// the index, through the host's proxy. With the audit hook and without
// it, on the oldest and newest CPython.
func TestSandboxNetworkWithoutNamespace(t *testing.T) {
	t.Parallel()
	// A named index: the host's uv reaches it through the proxy.
	index := strings.Replace(testwheel.Serve(t, installIndex(t)), "127.0.0.1", "pypi.example.test", 1)
	u, err := url.Parse(index)
	if err != nil {
		t.Fatal(err)
	}
	forHookModes(t, true, func(t *testing.T, py testenv.Python, hook bool) {
		w := newNetWorld(t, "")
		sb := hookSandbox(t, py, hook, "HOME="+t.TempDir(), w.resolveEnv)
		writeUserConfig(t, sb, "[python]\nindex_url = \""+index+"\"\n")
		withoutNamespaces(t, sb)
		r := sb.block("nons", `E = "ESC" + "APED"
print("network:", session.access.network, session.access.hosts, *[m for m in session.access.kernel["missing"] if m.startswith("network:")])`+
			fetches("fetch:", index+"/vis-dep/")+`
import socket
for addr in [("127.0.0.1", `+w.plainPort+`), ("127.0.0.1", `+w.outsidePort+`)]:
    try:
        print(E, socket.create_connection(addr, timeout=5).recv(100))
    except OSError as e:
        print("connect refused", e)
print(install("vis-tiny"))
import vis_tiny
print(vis_tiny.VALUE)`, 0)
		contains(t, "a default session without a network namespace", r.stdout,
			"network: False {'allow': ['"+u.Host+"', 'files.pythonhosted.org']} network: the allow list needs a network namespace, which could not be made",
			"so the session's code has no network; install() still reaches the allow list's hosts, through the host",
			"fetch: error", "connect refused", "installed 2 packages", "tiny dep")
		w.checkNothingArrived(t, "without a network namespace", r.stdout)
		// Without the jail, a command gets no namespace either: it does
		// not run, rather than run with the whole network.
		r = sb.block("nons-free", `r = shell("curl -sS --noproxy '*' http://127.0.0.1:`+w.outsidePort+`/ && echo ESC''APED", wait=60)
print(r.status, r.exit, r.out, r.err)`, 1, "--no-jail")
		contains(t, "a command without a network namespace", r.stderr, "PermissionError: shell: the command's kernel layer",
			"the allow list needs a network namespace", "nothing ran")
		if escaped(r.stdout + r.stderr) {
			t.Errorf("--no-jail without a network namespace: a command reached out:\n%s%s", r.stdout, r.stderr)
		}
		w.checkNothingArrived(t, "a command without a network namespace", r.stdout)
	})
}
