package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
	"github.com/vis-agent/vis-agent/sandbox/session"
)

// installIndex writes a simple index of small wheels: vis-tiny 1.0 (a
// module, a .pth path line, a console script) needing vis-dep, and
// vis-dep 1.0; it returns the index folder.
func installIndex(t *testing.T, more ...string) string {
	t.Helper()
	wheels := t.TempDir()
	for _, w := range more {
		data, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wheels, filepath.Base(w)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testwheel.Build(t, wheels, testwheel.Spec{Name: "vis-tiny", Version: "1.0", Requires: []string{"vis-dep>=1"},
		Files: map[string]string{
			"vis_tiny/__init__.py":               "import vis_dep\nVALUE = 'tiny ' + vis_dep.VALUE\n",
			"vis_tiny_extra.pth":                 "vis_tiny_extra_dir\n",
			"vis_tiny_extra_dir/vis_from_pth.py": "HERE = 'read through the .pth'\n",
		},
		ConsoleScripts: map[string]string{"vis-tiny": "vis_tiny:main"}})
	testwheel.Build(t, wheels, testwheel.Spec{Name: "vis-dep", Version: "1.0", Files: map[string]string{"vis_dep.py": "VALUE = 'dep'\n"}})
	return testwheel.Index(t, wheels, t.TempDir())
}

// installSandbox is a sandbox whose user config names index as
// python.index_url, with HOME (uv's cache) in the test's temp folder.
func installSandbox(t *testing.T, py testenv.Python, index string, extra ...string) *sandbox {
	t.Helper()
	sb := newSandbox(t, py, append([]string{"HOME=" + t.TempDir()}, extra...)...)
	writeUserConfig(t, sb, "[python]\nindex_url = \""+index+"\"\n")
	return sb
}

func writeUserConfig(t *testing.T, sb *sandbox, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(sb.home, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxInstall: on the oldest and newest CPython, a missing module's
// error names install(); install() from a loopback index puts the package
// and its dependency in the session's folder, importable in the same block,
// after the environment's site-packages, with its .pth read, read-only to
// the session, still there after a restart, gone with rm; what is not a
// requirement is refused in one line.
func TestSandboxInstall(t *testing.T) {
	t.Parallel()
	index := testwheel.Serve(t, installIndex(t))
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Version.Short(), func(t *testing.T) {
			sb := installSandbox(t, py, index)
			r := sb.block("i", "import vis_tiny", 1)
			contains(t, "the missing module's error", r.stderr, "ModuleNotFoundError: No module named 'vis_tiny'",
				`install("vis-tiny") installs it into this session (no restart needed)`)
			r = sb.block("i", "import sklearn.linear_model", 1)
			contains(t, "the error of a module known by another name", r.stderr, `install("scikit-learn")`)

			r = sb.block("i", `r = install("vis-tiny>=1.0")
print(r)
import vis_tiny, vis_from_pth
print(vis_tiny.VALUE, vis_from_pth.HERE)
print(sorted((d.name, d.version) for d in r.installed), r.seconds > 0)`, 0)
			contains(t, "install()'s result", r.stdout, "installed 2 packages in ", "vis-dep 1.0", "vis-tiny 1.0",
				"tiny dep read through the .pth", "[('vis-dep', '1.0'), ('vis-tiny', '1.0')] True")
			layer := filepath.Join(sb.folder("i"), "packages", py.Version.Short())
			if _, err := os.Stat(filepath.Join(layer, "vis_tiny", "__init__.py")); err != nil {
				t.Errorf("the package is not in the session's folder: %v", err)
			}
			// Its bytecode, which the session cannot write, comes after.
			pyc := filepath.Join(layer, "vis_tiny", "__pycache__", "__init__.cpython-3"+strconv.Itoa(py.Version.Minor)+".pyc")
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if _, err := os.Stat(pyc); err == nil {
					break
				} else if time.Now().After(deadline) {
					t.Errorf("no bytecode compiled in the background: %v", err)
					break
				}
			}
			r = sb.block("i", `import sys, os
layer = `+strconv.Quote(layer)+`
site = max(i for i, p in enumerate(sys.path) if p.endswith("site-packages") and p != layer)
print("after site-packages:", sys.path.index(layer) > site)
try:
    open(os.path.join(layer, "evil.py"), "w")
except PermissionError:
    print("read-only")
print(install("vis-tiny"))`, 0)
			contains(t, "the layer", r.stdout, "after site-packages: True", "read-only", "nothing new to install")

			for spec, why := range map[string]string{"-e .": "an option", "--index-url=http://127.0.0.1:1/simple": "an option",
				"vis-tiny @ https://example.com/x.whl": "a URL", "./vis_tiny": "a path", "git+https://example.com/x": "a URL",
				"/etc/passwd": "a path", "vis-tiny==1.0 ; evil": "not a requirement"} {
				r := sb.block("i", "install("+strconv.Quote(spec)+")", 1)
				contains(t, "install("+spec+")", r.stderr, "ValueError: install: ", why, "install() takes requirements only")
				if n := strings.Count(strings.TrimSpace(r.stderr[strings.Index(r.stderr, "ValueError"):]), "\n"); n != 0 {
					t.Errorf("install(%q): the error is not one line:\n%s", spec, r.stderr)
				}
			}

			if r := sb.run("restart", "--session", "i"); r.code != 0 {
				t.Fatalf("restart: %+v", r)
			}
			r = sb.block("i", "import vis_tiny, vis_from_pth\nprint(vis_tiny.VALUE)", 0)
			contains(t, "after the restart", r.stdout, "tiny dep")

			if r := sb.run("rm", "--session", "i"); r.code != 0 {
				t.Fatalf("rm: %+v", r)
			}
			if _, err := os.Stat(layer); !os.IsNotExist(err) {
				t.Errorf("the session's packages outlive rm: %v", err)
			}
		})
	}
}

// TestSandboxInstallPolicy: without the network install() asks only a
// local index (a loopback one works, another is refused naming the way
// out); a source distribution is not built unless the user's config
// allows it; the project's own python (which the session can rewrite) is
// never run by the host, and the environment's versions are kept.
func TestSandboxInstallPolicy(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	index := testwheel.Serve(t, installIndex(t))
	sb := installSandbox(t, py, index)

	r := sb.block("off", `print(install("vis-dep"))`, 0, "--no-network")
	contains(t, "a loopback index without the network", r.stdout, "installed 1 package")
	writeUserConfig(t, sb, "[python]\nindex_url = \"https://pypi.org/simple\"\n")
	r = sb.block("off", `install("six")`, 1, "--no-network")
	contains(t, "a remote index without the network", r.stderr, "PermissionError: install: the session has no network",
		"file:// or loopback URL")

	// An sdist only: refused without sandbox.allow_builds, and its setup
	// code never runs.
	sdistDir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "built")
	testenv.WriteTree(t, sdistDir, map[string]string{"vis-sdist/index.html": `<a href="vis_sdist-1.0.tar.gz">vis_sdist-1.0.tar.gz</a>`})
	writeSdist(t, filepath.Join(sdistDir, "vis-sdist", "vis_sdist-1.0.tar.gz"), marker)
	testenv.WriteTree(t, sdistDir, map[string]string{"index.html": `<a href="vis-sdist/">vis-sdist</a>`})
	writeUserConfig(t, sb, "[python]\nindex_url = \"file://"+sdistDir+"\"\n")
	r = sb.block("b", `install("vis-sdist")`, 1)
	contains(t, "an sdist without allow_builds", r.stderr, "RuntimeError: install: uv failed")
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the sdist's setup code ran although builds are not allowed")
	}

	// A project whose .venv/bin/python a block rewrote: the host's uv uses
	// the installation's python, never that one.
	proj := t.TempDir()
	testenv.WriteTree(t, proj, map[string]string{"pyproject.toml": "[project]\nname = \"p\"\nversion = \"0\"\n"})
	if out, err := execCommand(py.Executable, "-m", "venv", "--without-pip", filepath.Join(proj, ".venv")); err != nil {
		t.Fatalf("make the venv: %v\n%s", err, out)
	}
	site := filepath.Join(proj, ".venv", "lib", "python"+py.Version.Short(), "site-packages")
	testenv.WriteTree(t, site, map[string]string{"vis_dep.py": "VALUE = 'from the project'\n",
		"vis_dep-0.5.dist-info/METADATA": "Metadata-Version: 2.1\nName: vis-dep\nVersion: 0.5\n"})
	writeUserConfig(t, sb, "[python]\nindex_url = \""+index+"\"\n")
	sb.ws = proj
	pwned := filepath.Join(proj, "pwned")
	r = sb.block("p", `import os
py = os.path.join(".venv", "bin", "python")
os.remove(py)
with open(py, "w") as f:
    f.write("#!/bin/sh\ntouch `+pwned+`\n")
os.chmod(py, 0o755)
try:
    install("vis-tiny")
except RuntimeError as e:
    print("refused:", e)`, 0)
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("the host ran the project's python, which the session wrote")
	}
	contains(t, "install() against the project's vis-dep 0.5", r.stdout, "refused: install: uv failed", "vis-dep")
}

// writeSdist writes a source distribution whose setup.py would create
// marker.
func writeSdist(t *testing.T, path, marker string) {
	t.Helper()
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"vis_sdist-1.0/setup.py": "open(" + strconv.Quote(marker) + ", 'w').close()\nfrom setuptools import setup\nsetup(name='vis-sdist', version='1.0')\n",
		"vis_sdist-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: vis-sdist\nVersion: 1.0\n",
	})
	if out, err := execCommand("tar", "-czf", path, "-C", dir, "vis_sdist-1.0"); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
}

// TestSandboxInstallStops: a block's timeout stops the install, uv gets its
// standard streams and no other descriptor, and the session goes on.
func TestSandboxInstallStops(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // an index that never answers
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	sb := installSandbox(t, py, srv.URL+"/simple")
	sb.block("s", "x = 1", 0)
	host := sb.record(sb.folder("s")).HostPID

	done := make(chan result, 1)
	go func() { done <- sb.run("run", "--session", "s", "--timeout", "4s", "-c", `install("vis-slow")`) }()
	uv := 0
	for deadline := time.Now().Add(10 * time.Second); uv == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// uv pip install (not the check of the pinned uv's version before it)
		for _, pid := range processesOf(host, func(c string) bool { return strings.Contains(c, "/uv\x00pip\x00install\x00") }) {
			uv = pid
		}
	}
	if uv == 0 {
		t.Fatal("no uv process under the host")
	}
	// What the host and its child hold: uv must hold none of it (but the
	// pipe of its own output, descriptors 1 and 2).
	theirs := map[string]bool{}
	for _, pid := range []int{host, sb.record(sb.folder("s")).ChildPID} {
		for _, target := range openFiles(t, pid, 0) {
			theirs[target] = true
		}
	}
	var inherited []string
	for fd, target := range openFiles(t, uv, 3) {
		// anon_inode targets (epoll, eventfd) carry no identity to compare,
		// and /dev/null no authority: uv opens it itself, for the null
		// standard streams of what it runs (a CI run caught fd 10 so).
		if theirs[target] && !strings.HasPrefix(target, "anon_inode:") && target != "/dev/null" {
			inherited = append(inherited, fmt.Sprintf("%d -> %s", fd, target))
		}
	}
	if len(inherited) > 0 {
		t.Errorf("uv holds descriptors it was not given: %v", inherited)
	}
	r := <-done
	if r.code != 1 || !strings.Contains(r.stderr, "KeyboardInterrupt") {
		t.Errorf("the timed-out install: %+v", r)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(uv); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("uv (pid %d) still runs after the block's timeout", uv)
		}
	}
	r = sb.block("s", "print(x)", 0)
	contains(t, "the session after", r.stdout, "1")
}

// openFiles are the targets of process pid's descriptors from min on.
func openFiles(t *testing.T, pid, min int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range entries {
		n, _ := strconv.Atoi(e.Name())
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, n)); err == nil && n >= min {
			out[n] = target
		}
	}
	return out
}

func execCommand(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

// TestSandboxInstallWheels: on the oldest and newest CPython, install()
// brings pandas (numpy and the rest with it) and matplotlib from a file://
// index of the real wheels, importable at once, and again after a restart.
func TestSandboxInstallWheels(t *testing.T) {
	t.Parallel()
	house := testwheel.Wheelhouse(t)
	index := testwheel.Index(t, house, t.TempDir())
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Version.Short(), func(t *testing.T) {
			t.Parallel()
			sb := installSandbox(t, py, "file://"+index)
			r := sb.block("w", `r = install("pandas", "matplotlib")
print(r)
names = {d.name for d in r.installed}
print(sorted(names & {"numpy", "pandas", "matplotlib", "six"}))
import pandas as pd
df = pd.DataFrame({"a": range(1000)})
print("sum", df.a.sum())`, 0, "--timeout", "10m")
			contains(t, "install(pandas, matplotlib)", r.stdout, "['matplotlib', 'numpy', 'pandas', 'six']", "sum 499500")
			t.Logf("%s", strings.SplitN(r.stdout, "\n", 2)[0])
			sb.run("restart", "--session", "w")
			r = sb.block("w", `import numpy, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig = plt.figure(); plt.plot([1, 2]); print("fig", type(fig).__name__, numpy.__version__, df.a.max())`, 0, "--timeout", "5m")
			contains(t, "after the restart", r.stdout, "fig Figure 2.2.6")
		})
	}
}

// TestSandboxInstallRequirementsFile: install(requirements=...) installs
// a project's requirements file, read in the block (the host receives
// requirements only), with the files its -r lines name; an option in it is
// refused naming its line.
func TestSandboxInstallRequirementsFile(t *testing.T) {
	t.Parallel()
	index := installIndex(t)
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := installSandbox(t, py, "file://"+index)
			testenv.WriteTree(t, sb.ws, map[string]string{
				"requirements.txt":     "# the project's\n-r requirements/dev.txt\n",
				"requirements/dev.txt": "vis-tiny  # and its dependency\n",
				"bad.txt":              "vis-dep\n--index-url https://example.invalid/simple\n",
			})
			r := sb.block("rq", `print(install(requirements="requirements.txt"))
import vis_tiny; print(vis_tiny.VALUE)`, 0)
			contains(t, "install(requirements=)", r.stdout, "vis-tiny 1.0", "tiny dep")
			r = sb.block("rq", `install(requirements="bad.txt")`, 1)
			contains(t, "an option in the file", r.stderr, "bad.txt:2: --index-url is not taken by install()")
		})
	}
}

// TestSandboxInstallProject: install(project=".", extras=[...]) installs
// what the workspace's pyproject.toml declares, read in the block, the
// extras that name the project itself followed; on a CPython without
// tomllib it names tomli, which install() then brings.
func TestSandboxInstallProject(t *testing.T) {
	t.Parallel()
	tomli, _ := filepath.Glob(filepath.Join(testwheel.Wheelhouse(t), "tomli-*.whl"))
	if len(tomli) == 0 {
		t.Fatal("no tomli wheel in the wheelhouse: run make test-wheels")
	}
	index := installIndex(t, tomli...)
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := installSandbox(t, py, "file://"+index)
			testenv.WriteTree(t, sb.ws, map[string]string{"pyproject.toml": `[project]
name = "my-proj"
version = "1"
dependencies = ["vis-dep>=1"]
[project.optional-dependencies]
tests = ["my_proj[more]"]
more = ["vis-tiny"]
`})
			if py.Version.Minor < 11 {
				r := sb.block("pj", `install(project=".", extras=["tests"])`, 1)
				contains(t, "without tomllib", r.stderr, `install("tomli") first`)
				sb.block("pj", `install("tomli")`, 0)
			}
			r := sb.block("pj", `print(install(project=".", extras=["tests"]))
import vis_tiny; print(vis_tiny.VALUE)`, 0)
			contains(t, "install(project=)", r.stdout, "vis-dep 1.0", "vis-tiny 1.0", "tiny dep")
			r = sb.block("pj", `install(project=".", extras=["docs"])`, 1)
			contains(t, "an unknown extra", r.stderr, "no optional dependencies or dependency group 'docs' (it has: more, tests)")
		})
	}
}

// TestSandboxInstallBehindACompanyCA: install() trusts the system's
// certificate store, where a company that inspects TLS puts its authority
// (an MCP client starts the server without SSL_CERT_FILE): uv's own roots
// refused the index with UnknownIssuer. Without the authority anywhere,
// the failure names SSL_CERT_FILE. The store is swapped for one holding
// the test's authority in a mount namespace of the session's own (root).
func TestSandboxInstallBehindACompanyCA(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the system's trust store is swapped in a mount namespace, which needs root")
	}
	index, ca := testwheel.ServeTLS(t, installIndex(t))
	store := t.TempDir()
	if err := os.WriteFile(filepath.Join(store, "ca-certificates.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := installSandbox(t, py, index)
			// As an MCP client starts the server: without the trust
			// variables this machine may have.
			sb.env = slices.DeleteFunc(sb.env, func(kv string) bool {
				k, _, _ := strings.Cut(kv, "=")
				return session.Trust(k)
			})
			cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
				`mount --bind "$0" /etc/ssl/certs && exec "$@"`, store,
				sb.bin, "sandbox", "run", "--session", "ca", "-c", `print(install("vis-tiny"))`)
			cmd.Env, cmd.Dir = sb.env, sb.ws
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "vis-tiny") {
				t.Errorf("install() with the authority in the system's store: %v\n%s", err, out)
			}
			// Another user and cache, whose system store lacks the authority.
			other := installSandbox(t, py, index)
			other.env = append(slices.Clone(sb.env), "HOME="+t.TempDir(), "VIS_HOME="+other.home)
			r := other.block("noca", `install("vis-tiny")`, 1)
			contains(t, "install() trusting nothing of the index", r.stderr, "certificate", "SSL_CERT_FILE")
			// A later client with SSL_CERT_FILE fixes the host that the
			// first started without it; one without it again unsets it.
			caFile := filepath.Join(store, "ca-certificates.crt")
			other.env = append(other.env, "SSL_CERT_FILE="+caFile)
			r = other.block("noca", `print(install("vis-tiny"))`, 0)
			contains(t, "install() after a client with SSL_CERT_FILE", r.stdout, "vis-tiny")
			other.env = other.env[:len(other.env)-1]
			r = other.block("noca", `install("vis-absent")`, 1)
			contains(t, "install() after a client without it", r.stderr, "certificate", "SSL_CERT_FILE")
		})
	}
}

// TestMCPInstall: the install tool installs from the user's index into the
// session the python tool runs in (importable in the next call), says what
// it installed, refuses what is not a requirement, and its description says what it does.
func TestMCPInstall(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := installSandbox(t, py, testwheel.Serve(t, installIndex(t)))
	c := connectMCP(t, sb, "--session", "mi")
	tools, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "install" {
			contains(t, "install's description", tl.Description, "requirements", "no paths, URLs or options", "user's index", "stay across restarts")
		}
	}
	text := c.tool("install", map[string]any{"packages": []string{"vis-tiny>=1"}})
	contains(t, "the install tool's result", text, "installed 2 packages in ", "vis-tiny 1.0", "vis-dep 1.0")
	text, _ = c.python("import vis_tiny\nprint(vis_tiny.VALUE)", false)
	contains(t, "the next python call", text, "tiny dep")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, bad := range []string{"-e .", "vis-tiny @ https://example.com/x.whl", "../x"} {
		text, _, isErr, err := c.call(ctx, "install", map[string]any{"packages": []string{bad}}, false)
		if err != nil || !isErr || !strings.Contains(text, "install() takes requirements only") {
			t.Errorf("install %q: %v %v %q", bad, err, isErr, text)
		}
	}
}
