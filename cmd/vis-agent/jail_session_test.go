package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// escape is one attempt of the session escape corpus. Its code prints E
// (the word "ESCAPED", built at run time so no traceback echoes it) only
// when it got through.
type escape struct {
	name string
	code string
	// noNetwork: run it in the session started with --no-network.
	noNetwork bool
	// jailStops: without the jail the attempt gets through, so the jail is
	// what stops it (asserted with --no-jail).
	jailStops bool
	// want must appear in the jailed block's output (stdout or stderr).
	want string
	// jailedOnly: too slow to repeat without the jail (a retire).
	jailedOnly bool
	// freeWant must appear in the output without the jail: the caps that
	// stay with --no-jail.
	freeWant string
	// mayCrash: the child may die before its output reaches the host.
	mayCrash bool
	timeout  string
}

const (
	escapeSecret = "TOPSECRET-7f3a9c"
	escapeAnswer = "LOOPBACK-ANSWER-51e2"
)

// escapes is the corpus; {P} in a block is replaced with the prelude.
var escapes = []escape{
	{name: "open the secret", code: `print(E, open(S).read())`, jailStops: true, want: "PermissionError"},
	{name: "os.open the secret", code: `print(E, os.read(os.open(S, os.O_RDONLY), 100))`, jailStops: true, want: "PermissionError"},
	{name: "io.open_code the secret", code: `import io; print(E, io.open_code(S).read())`, jailStops: true, want: "PermissionError"},
	{name: "write outside", code: `open(OUT + "/planted", "w").write("x"); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "os.open write outside", code: `os.close(os.open(OUT + "/planted", os.O_CREAT | os.O_WRONLY)); print(E)`, jailStops: true, want: "PermissionError"},
	// A link that leads outside the roots leads nowhere in the jail's
	// tree: the hook sees a dangling link inside the workspace, and the
	// kernel finds nothing.
	{name: "symlink then open", code: `if os.path.lexists("lnk"): os.remove("lnk")
os.symlink(S, "lnk"); print(E, open("lnk").read())`, jailStops: true, want: "FileNotFoundError"},
	{name: "through a workspace symlink", code: `print(E, open("door/secret").read())`, jailStops: true, want: "FileNotFoundError"},
	{name: "dotdot through a workspace symlink", code: `print(E, open("door/../" + os.path.basename(OUT) + "/secret").read())`, jailStops: true, want: "PermissionError"},
	{name: "dotdot from the workspace", code: `print(E, open(WS + "/../" + os.path.relpath(S, os.path.dirname(WS))).read())`, jailStops: true, want: "PermissionError"},
	{name: "/proc/self/root", code: `print(E, open("/proc/self/root" + S).read())`, jailStops: true, want: "PermissionError"},
	{name: "/proc/self/fd of the workspace", code: `fd = os.open(".", os.O_RDONLY); print(E, open("/proc/self/fd/%d/door/secret" % fd).read())`, jailStops: true, want: "FileNotFoundError"},
	{name: "openat with dir_fd", code: `fd = os.open(".", os.O_RDONLY); print(E, os.read(os.open("door/secret", os.O_RDONLY, dir_fd=fd), 100))`, jailStops: true, want: "FileNotFoundError"},
	{name: "mmap the secret", code: `import mmap; f = os.open(S, os.O_RDONLY); print(E, mmap.mmap(f, 0, prot=mmap.PROT_READ)[:])`, jailStops: true, want: "PermissionError"},
	{name: "sqlite3.connect outside", code: `import sqlite3; sqlite3.connect(OUT + "/planted.db").execute("create table t(x)"); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "shutil.copy the secret in", code: `import shutil; shutil.copy(S, "copied"); print(E, open("copied").read())`, jailStops: true, want: "PermissionError"},
	{name: "shutil.copy out", code: `import shutil; open("f", "w").write("x"); shutil.copy("f", OUT + "/planted"); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "os.rename out", code: `open("g", "w").close(); os.rename("g", OUT + "/planted"); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "os.chmod outside", code: `os.chmod(OUT + "/victim", 0o777); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "os.truncate outside", code: `os.truncate(OUT + "/victim", 0); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "hard link out", code: `if os.path.lexists("hl"): os.remove("hl")
os.link(S, "hl"); print(E, open("hl").read())`, jailStops: true, want: "PermissionError"},
	{name: "list outside", code: `print(E, os.listdir(OUT))`, jailStops: true, want: "PermissionError"},
	// Metadata: Landlock refuses opening only; outside the roots nothing
	// exists in the jail's tree (issue 31).
	{name: "stat the secret", code: `st = os.stat(S); print(E, st.st_size, st.st_mtime)`, jailStops: true, want: "FileNotFoundError"},
	{name: "stat the folder outside", code: `print(E, os.stat(OUT).st_mtime)`, jailStops: true, want: "FileNotFoundError"},
	{name: "access and lstat outside", code: `print(os.access(S, os.F_OK), os.path.lexists(OUT)); print(E) if os.path.lexists(S) else None`, jailStops: true, want: "False False"},
	{name: "the home folder's names", code: `print(E, os.stat(os.path.expanduser("~/.bashrc")) if os.path.lexists(os.path.expanduser("~/.bashrc")) else os.stat("/etc/shadow"))`, jailStops: true, want: "FileNotFoundError"},
	{name: "the host's environment", code: `print(E, open("/proc/%d/environ" % os.getppid(), "rb").read()[:20])`, jailStops: true, want: "PermissionError"},
	{name: "the host's files in the session folder", code: `roots = session.access.roots  # none without the jail: the temp folder's real path tells
folder = os.path.dirname(roots[1]) if roots else os.path.dirname(os.path.dirname(os.environ["TMPDIR"]))
open(folder + "/start.lock", "a").close(); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "import from outside the roots", code: `sys.path.insert(0, OUT); import evilmod; print(E, evilmod.X)`, jailStops: true},
	// Processes run in the jail (inside its pids cgroup, under its whole
	// kernel layer): what they reach is what the block reaches.
	{name: "subprocess", code: `import subprocess; r = subprocess.run(["cat", S], capture_output=True); print(E if r.stdout else "failed", r.returncode)`, jailStops: true, want: "failed 1"},
	{name: "os.system", code: `r = os.system("cat " + S); print(E if r == 0 else "failed", r)`, jailStops: true, want: "failed"},
	{name: "os.popen", code: `out = os.popen("cat " + S).read(); print(E if out else "failed")`, jailStops: true, want: "failed"},
	{name: "os.fork", code: `r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.write(w, open(S, "rb").read())
    finally:
        os._exit(0)
os.close(w); os.waitpid(pid, 0); got = os.read(r, 100); print(E if got else "failed", got)`, jailStops: true, want: "failed b''"},
	{name: "os.posix_spawn", code: `pid = os.posix_spawn("/bin/cat", ["cat", S], os.environ); _, st = os.waitpid(pid, 0); print(E if st == 0 else "failed", st)`, jailStops: true, want: "failed"},
	{name: "pty.fork", code: `import pty
try:
    pid, fd = pty.fork()
except OSError as e:
    pid, fd = None, print("failed", e)
if pid == 0:
    os.execv("/bin/cat", ["cat", S])
if pid:
    os.waitpid(pid, 0)
    try:
        print(E if os.read(fd, 200).strip().endswith(open(S, "rb").read()) else "failed")
    except OSError as e:
        print("failed", e)`, jailStops: true, want: "failed"},
	{name: "ctypes CDLL(None).system", code: `import ctypes; r = ctypes.CDLL(None).system(("cat " + S).encode()); print(E if r == 0 else "failed", r)`, jailStops: true, want: "failed"},
	{name: "libc open through ctypes", code: "import ctypes\nlibc = ctypes.CDLL('libc.so.6', use_errno=True)\nfd = libc.open(S.encode(), 0)\nprint(E if fd >= 0 else 'failed', os.read(fd, 100) if fd >= 0 else fd)", jailStops: true, want: "failed"},
	{name: "_ctypes.dlopen", code: `import _ctypes, ctypes
libc = ctypes.CDLL("libc.so.6", handle=_ctypes.dlopen("libc.so.6", 2))
r = libc.system(("cat " + S).encode()); print(E if r == 0 else "failed", r)`, jailStops: true, want: "failed"},
	{name: "a C extension calling system()", code: `sys.path.insert(0, WS + "/ext")
try:
    import evilext
except ImportError as e:
    print("no module init", type(e).__name__)
print(E if os.path.exists(WS + "/ext/leak") and open(WS + "/ext/leak").read() else "nothing leaked")`, jailStops: true},
	{name: "os.kill the host", code: `import signal; os.kill(os.getppid(), signal.SIGCONT); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "os.kill another process", code: `import signal; os.kill(SLEEPER, signal.SIGCONT); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "signal another process through libc", code: "import ctypes, signal\nr = ctypes.CDLL(None).kill(SLEEPER, signal.SIGCONT)\nprint(E if r == 0 else 'failed', r)", jailStops: true, want: "failed"},
	{name: "signal.pthread_kill of its own thread", code: `import signal, threading; signal.pthread_kill(threading.main_thread().ident, 0); print("own thread")`, want: "own thread"},
	// The hook refuses replacing the session's own interpreter (it would
	// end the session); without the hook the program runs in the jail.
	{name: "os.execv", code: `os.execv("/bin/cat", ["cat", S])`, jailStops: true, want: "PermissionError", mayCrash: true},
	// The hook's policy is C memory: nothing a block reaches weakens it.
	{name: "weaken the hook, then open", code: `import builtins, gc, io
saved = builtins.open, io.open
sys.addaudithook(lambda *a: None)
builtins.open = io.open = lambda *a, **k: None
try:
    held = [o for o in gc.get_objects() if isinstance(o, dict) and S in [v for v in o.values() if isinstance(v, str)]]
    print(E, io.FileIO(S).read())
finally:
    builtins.open, io.open = saved`, jailStops: true, want: "PermissionError"},
	// Privileges: refused by the kernel (no capabilities), not the hook.
	{name: "chown in the workspace", code: `open("owned", "w").close(); os.chown("owned", 1234, 1234); print(E)`, jailStops: true, want: "PermissionError"},
	{name: "raw socket", code: `import socket; print(E, socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).fileno())`, jailStops: true, want: "PermissionError"},
	{name: "mptcp without the network", code: `import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(5); s.connect(("127.0.0.1", TCP)); print(E, s.recv(100))`, noNetwork: true, want: "PermissionError"},
	{name: "tcp connect without the network", code: `import socket; print(E, socket.create_connection(("127.0.0.1", TCP), timeout=5).recv(100))`, noNetwork: true, want: "PermissionError"},
	{name: "udp without the network", code: `import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); s.sendto(b"hi", ("127.0.0.1", UDP)); print(E, s.recv(100))`, noNetwork: true, want: "PermissionError"},
	{name: "name lookup without the network", code: `import socket; print(E, socket.getaddrinfo("localhost", 80))`, noNetwork: true, want: "PermissionError"},
	{name: "thread bomb", code: `import threading
ev = threading.Event(); n = 0
try:
    while n < 5000:
        threading.Thread(target=ev.wait, daemon=True).start(); n += 1
except RuntimeError as e:
    print("stopped at", n, type(e).__name__, e)
finally:
    ev.set()`, want: "RuntimeError", freeWant: "the cap of 48 threads is reached"},
	// Past the Python layer (3.10/3.11's wrapper; 3.12+ has the C hook):
	// the pids cgroup stops it near the cap, long before the address-space
	// cap would (about 500 threads of 8 MiB stacks in 4 GiB).
	// Where neither holds (3.10/3.11 without a pids cgroup it can write,
	// as root in a container: TestSandboxJailWithoutHelpers), the
	// address-space cap ends it, later.
	{name: "thread bomb past the Python layer", code: threadBomb + `
held = session.access.thread_cap or session.access.kernel.get("max_tasks")
print("stopped at", n, stopped, "" if n < 100 or not held else "ESCAPED")`, want: "RuntimeError"},
	{name: "memory bomb", code: "hog = []\nwhile True: hog.append(bytearray(256 << 20))", want: "MemoryError", freeWant: "MemoryError"},
	{name: "recursion crash", code: "sys.setrecursionlimit(10**7)\ndef f(n): return f(n + 1)\nf(0)", mayCrash: true},
	{name: "SIGINT ignored and a busy loop", code: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", timeout: "3s", jailedOnly: true},
	// Last: without the jail these lift the memory cap and leave the
	// child chrooted.
	// The memory cap holds without the jail too.
	{name: "setrlimit raise", code: `import resource; resource.setrlimit(resource.RLIMIT_AS, (-1, -1)); print(E)`, want: "Error"},
	{name: "chroot", code: `os.chroot("."); print(E)`, jailStops: true, want: "PermissionError"},
}

// threadBomb starts threads, past Python's layer of the thread cap (the
// wrapper of start_new_thread on 3.10/3.11), until one fails: n threads
// started, stopped is the exception's type and message.
const threadBomb = `import _thread, threading
for c in getattr(_thread.start_new_thread, "__closure__", None) or ():
    if getattr(c.cell_contents, "__name__", "") == "start_new_thread":
        _thread.start_new_thread = threading._start_new_thread = c.cell_contents
ev = threading.Event(); n = 0; stopped = None
try:
    while n < 5000:
        threading.Thread(target=ev.wait, daemon=True).start(); n += 1
except RuntimeError as e:
    stopped = "%s %s" % (type(e).__name__, e)
finally:
    ev.set()`

// escaped: the output carries the marker, the secret or a server's answer.
func escaped(out string) bool {
	return strings.Contains(out, "ESCAPED") || strings.Contains(out, escapeSecret) || strings.Contains(out, escapeAnswer)
}

// escapePrelude defines the names the attempts use.
const escapePrelude = `import os, sys
E = "ESC" + "APED"
S, OUT, WS = %q, %q, os.getcwd()
TCP, UDP, SLEEPER = %d, %d, %d
`

// TestSandboxJailEscapes runs the escape corpus through the built binary
// in jailed sessions (the network on, and off for the network attempts),
// then without the jail, on the oldest and the newest CPython: jailed, no
// output holds the secret, the loopback server's answer or the escape
// marker, nothing changes outside the roots, the host lives and the next
// block runs; without the jail, the attempts marked jailStops get
// through. The no-hook subtests run the same attempts through the
// test-only build without the C audit hook: the kernel layer alone
// stops them all (their messages are the kernel's, so want is not
// asked, and the slow ones and the pass without the jail are not
// repeated).
func TestSandboxJailEscapes(t *testing.T) {
	t.Parallel()
	hookModes(t, true, runEscapes)
}

func runEscapes(t *testing.T, sb *sandbox, hook bool) {
	// A thread cap from the settings.
	testenv.WriteTree(t, sb.home, map[string]string{"config.toml": "[sandbox]\nmax_threads = 48\n"})
	out := t.TempDir()
	testenv.WriteTree(t, out, map[string]string{"secret": escapeSecret, "victim": "v", "evilmod.py": "X = 'imported from outside'\n"})
	if err := os.Symlink(out, filepath.Join(sb.ws, "door")); err != nil {
		t.Fatal(err)
	}
	buildEvilExtension(t, filepath.Join(sb.ws, "ext"), filepath.Join(out, "secret"))
	tcp, udp := testenv.Loopback(t, escapeAnswer)
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	prelude := fmt.Sprintf(escapePrelude, filepath.Join(out, "secret"), out, tcp, udp, sleeper.Process.Pid)

	before := treeState(t, out)
	hosts := map[string]int{}
	run := func(session, code, timeout string, flags ...string) result {
		t.Helper()
		args := append([]string{"run", "--session", session, "--timeout", timeout, "-c", prelude + code}, flags...)
		r := sb.run(args...)
		if pid, ok := hosts[session]; !ok {
			hosts[session] = sb.record(sb.folder(session)).HostPID
		} else if !processAlive(pid) {
			t.Fatalf("session %s's host %d died", session, pid)
		}
		return r
	}
	// Jailed.
	for _, e := range escapes {
		if !hook && e.jailedOnly {
			continue
		}
		session, flags := "jailed", []string{"--network", "on"}
		if e.noNetwork {
			session, flags = "nonet", []string{"--no-network"}
		}
		timeout := e.timeout
		if timeout == "" {
			timeout = "60s"
		}
		r := run(session, `print("block ran")`+"\n"+e.code, timeout, flags...)
		all := r.stdout + r.stderr
		if escaped(r.stdout + r.stderr) {
			t.Errorf("jailed: %s got through:\n%s", e.name, all)
		}
		if !e.mayCrash && !strings.Contains(r.stdout, "block ran") {
			t.Errorf("jailed: %s: the block did not run:\n%s", e.name, all)
		}
		want := e.want
		if e.name == "thread bomb" {
			want = "the cap of 48 threads is reached"
		}
		if hook && want != "" && !strings.Contains(all, want) {
			t.Errorf("jailed: %s: output lacks %q:\n%s", e.name, want, all)
		}
		if after := treeState(t, out); after != before {
			t.Fatalf("jailed: %s changed the folder outside the roots:\nbefore %s\nafter  %s", e.name, before, after)
		}
		if next := run(session, `print("next", 6 * 7)`, "60s", flags...); !strings.Contains(next.stdout, "next 42") {
			t.Errorf("jailed: after %s the next block did not run:\n%s%s", e.name, next.stdout, next.stderr)
		}
	}
	if leak, err := os.ReadFile(filepath.Join(sb.ws, "ext", "leak")); strings.Contains(string(leak), escapeSecret) {
		t.Errorf("jailed: the C extension's system() read the secret: %v", err)
	}
	if !hook {
		return
	}

	// Without the jail: what the jail is what stops.
	var stopped []string
	for _, e := range escapes {
		if e.jailedOnly || e.noNetwork {
			continue
		}
		r := run("free", e.code, "60s", "--no-jail", "--network", "on")
		if e.jailStops && !escaped(r.stdout+r.stderr) {
			t.Errorf("without the jail, %s did not get through, so the corpus does not show the jail stops it:\n%s%s", e.name, r.stdout, r.stderr)
		}
		if e.freeWant != "" && !strings.Contains(r.stdout+r.stderr, e.freeWant) {
			t.Errorf("without the jail, %s: output lacks %q:\n%s%s", e.name, e.freeWant, r.stdout, r.stderr)
		}
		if e.jailStops {
			stopped = append(stopped, e.name)
		}
	}
	t.Logf("%s: the jail is what stops %d attempts: %s", t.Name(), len(stopped), strings.Join(stopped, "; "))
	if sleeper.ProcessState != nil || syscall.Kill(sleeper.Process.Pid, 0) != nil {
		t.Errorf("the sleeper process died")
	}
}

// treeState is a folder's files, their modes and contents, for comparison.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var rows []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		data := ""
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			data = string(b)
		}
		rows = append(rows, fmt.Sprintf("%s %v %q", p, info.Mode(), data))
		return nil
	})
	sort.Strings(rows)
	return strings.Join(rows, "\n")
}

// buildEvilExtension compiles, into dir, a shared library Python imports
// as an extension module whose load runs system() to copy the secret into
// dir/leak. Without a C compiler the attempt fails as a plain import.
func buildEvilExtension(t *testing.T, dir, secret string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "evil.c")
	code := fmt.Sprintf("#include <stdlib.h>\n__attribute__((constructor)) static void evil(void) { system(\"cat %s > %s\"); }\n",
		secret, filepath.Join(dir, "leak"))
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Log("no C compiler: the C extension attempt is only an import")
		return
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "evilext.so"), src).CombinedOutput(); err != nil {
		t.Fatalf("build the C extension: %v\n%s", err, out)
	}
}

// TestSandboxJailPolicy: session.access says what is in force, a run
// asking for another policy restarts the child with the notice, list shows
// it, and extra roots are writable or readable as asked.
func TestSandboxJailPolicy(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	extra, ref := t.TempDir(), t.TempDir()
	testenv.WriteTree(t, ref, map[string]string{"data.txt": "reference"})

	r := sb.block("p", `x = 7
a = session.access
print(a.is_jailed, a.network, a.max_threads, a.memory_mb, session.workspace in a.roots)
print(a.kernel["files"], a.kernel["seccomp"], a.kernel["no_caps"])`, 0)
	if !strings.Contains(r.stdout, "True True 64 4096 True") || !strings.Contains(r.stdout, "True True True") {
		t.Errorf("session.access:\n%s", r.stdout)
	}

	r = sb.block("p", `print(session.access.is_jailed, session.access.network, x)`, 0, "--no-jail", "--no-network")
	contains(t, "the run with --no-jail --no-network", r.stdout, "[Sandbox restarted]", "jail off, network off", "False False 7")
	l := sb.run("list")
	contains(t, "list", l.stdout, "JAIL", "NETWORK")
	if !regexp.MustCompile(`(?m)^p\s+running.*\boff\s+off\s`).MatchString(l.stdout) {
		t.Errorf("list does not show the jail and network off:\n%s", l.stdout)
	}

	// The kernel caps threads through a pids cgroup where it can; where it
	// cannot, on CPython 3.10/3.11 the cap is Python's only, and list says so.
	r = sb.block("p", `print("max_tasks", session.access.kernel.get("max_tasks", 0))`, 0, "--no-jail", "--no-network")
	kernelCap := !strings.Contains(r.stdout, "max_tasks 0")
	if says := regexp.MustCompile(`(?m)^the kernel layer lacks: threads.*\(p\)$`).MatchString(l.stdout); says == kernelCap {
		t.Errorf("list and session.access disagree on the thread cap on %s (%s):\n%s", py.Name, strings.TrimSpace(r.stdout), l.stdout)
	}

	// The same policy again: no restart.
	r = sb.block("p", `print("same")`, 0, "--no-jail", "--no-network")
	if strings.Contains(r.stdout, "[Sandbox restarted]") {
		t.Errorf("the same policy restarted the child:\n%s", r.stdout)
	}

	r = sb.block("p", fmt.Sprintf(`EXTRA, REF = %q, %q
open(EXTRA + "/w.txt", "w").write("ok"); print(open(REF + "/data.txt").read())
try:
    open(REF + "/w.txt", "w")
except PermissionError as e:
    print("refused", e)`, extra, ref), 0, "--root", extra, "--read-only-root", ref)
	if !strings.Contains(r.stdout, "reference") || !strings.Contains(r.stdout, "refused") {
		t.Errorf("extra roots:\n%s%s", r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(extra, "w.txt")); err != nil || string(b) != "ok" {
		t.Errorf("the extra root was not written: %v", err)
	}

	bad := sb.run("run", "--session", "p", "--root", filepath.Join(extra, "missing"), "-c", "pass")
	if bad.code != 2 || !strings.Contains(bad.stderr, "--root") {
		t.Errorf("a missing --root: status %d, stderr %q", bad.code, bad.stderr)
	}
}

// TestSandboxJailProjectVenv: a jailed session in a subfolder of a project
// reads the project's .venv (outside the workspace) and imports from it.
func TestSandboxJailProjectVenv(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	proj := t.TempDir()
	testenv.WriteTree(t, proj, map[string]string{
		"pyproject.toml": "[project]\nname = \"p\"\nversion = \"0\"\n",
		"sub/README":     "",
	})
	if out, err := exec.Command(py.Executable, "-m", "venv", "--without-pip", filepath.Join(proj, ".venv")).CombinedOutput(); err != nil {
		t.Fatalf("make the venv: %v\n%s", err, out)
	}
	site := filepath.Join(proj, ".venv", "lib", "python"+py.Version.Short(), "site-packages")
	testenv.WriteTree(t, site, map[string]string{"projmod.py": "Y = 'from the project venv'\n"})
	sb.ws = filepath.Join(proj, "sub")
	r := sb.block("v", `import projmod, sys; print(projmod.Y, sys.prefix, session.access.is_jailed)`, 0)
	contains(t, "the block", r.stdout, "from the project venv "+filepath.Join(proj, ".venv")+" True")
}

// TestSandboxJailWithoutHelpers: as root in a container that gives it no
// cgroup to write and no bubblewrap (here: a mount namespace where every
// cgroup hierarchy is read-only and bwrap is /dev/null), a jailed session
// on the oldest CPython still runs and says what it lacks; a thread bomb
// past Python's layer ends in RuntimeError with the host alive; shell()
// refuses, saying how to enable it, and runs nothing; --no-jail runs it.
func TestSandboxJailWithoutHelpers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	dir := t.TempDir()
	inner := filepath.Join(dir, "no-helpers.sh")
	testenv.WriteTree(t, dir, map[string]string{"no-helpers.sh": `set -e
for m in $(grep -E ' - cgroup2? ' /proc/self/mountinfo | cut -d' ' -f5); do mount -o bind,remount,ro "$m"; done
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
	if [ -e "$d/bwrap" ]; then mount --bind /dev/null "$d/bwrap"; fi
done
exec "$@"
`})
	unshare := []string{"unshare", "--mount", "--propagation", "private", "/bin/sh", inner}
	if out, err := exec.Command(unshare[0], append(unshare[1:], "/bin/true")...).CombinedOutput(); err != nil {
		t.Skipf("cannot make the mount namespace: %v\n%s", err, out)
	}
	py := testenv.First(t)
	sb := newSandbox(t, py)
	wrapper := filepath.Join(dir, "vis-agent")
	script := fmt.Sprintf("#!/bin/sh\nexec %s %q \"$@\"\n", strings.Join(unshare, " "), sb.bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sb.bin = wrapper

	r := sb.block("h", `print("max_tasks", session.access.kernel.get("max_tasks", 0))
print("says", [m for m in session.access.kernel["missing"] if m.startswith("threads")])
`+threadBomb+`
print("bomb:", n, stopped)`, 0)
	t.Logf("%s: %s", py.Name, r.stdout)
	contains(t, "the thread bomb", r.stdout, "max_tasks 0", "says ['threads: the kernel does not cap them", " RuntimeError ")
	if n := strings.Count(r.stdout, "'threads: "); n != 1 {
		t.Errorf("kernel.missing has %d sentences on threads, want one", n)
	}
	if py.Version.Minor < 12 {
		contains(t, "the thread note", r.stdout, "raises no event when a thread starts")
	}
	host := sb.record(sb.folder("h")).HostPID
	r = sb.block("h", `print("next", 6 * 7)
try:
    shell("touch ran")
except PermissionError as e:
    print("refused:", e)`, 0)
	contains(t, "after the bomb", r.stdout, "next 42",
		"refused: shell: commands of a jailed session run confined by bubblewrap, which is not installed: install it (apt-get install bubblewrap) or run the session with --no-jail")
	if !processAlive(host) || sb.record(sb.folder("h")).HostPID != host {
		t.Errorf("the host %d did not live through the thread bomb", host)
	}
	if _, err := os.Stat(filepath.Join(sb.ws, "ran")); err == nil {
		t.Errorf("shell() ran its command unconfined")
	}
	l := sb.run("list").stdout
	contains(t, "list", l, "the kernel layer lacks: threads: the kernel does not cap them",
		"shell: commands of a jailed session run confined by bubblewrap, which is not installed")
	if !regexp.MustCompile(`(?m)^the kernel layer lacks: threads: .* \(h\)$`).MatchString(l) || !regexp.MustCompile(`(?m)^shell: .* \(h\)$`).MatchString(l) {
		t.Errorf("list does not name the session each note concerns:\n%s", l)
	}
	r = sb.block("h", `print(shell("echo unconfined").out)`, 0, "--no-jail")
	contains(t, "--no-jail", r.stdout, "unconfined")
}

// TestSandboxJailSharedExtension: a C extension installed in the shared
// packages (a read-only root) imports and runs in a jailed session, on the
// oldest and newest CPython, and cannot write the packages.
func TestSandboxJailSharedExtension(t *testing.T) {
	t.Parallel()
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			wheel := testwheel.BuildExtension(t, t.TempDir(), py, testwheel.Spec{Name: "vis-fast", Version: "1.0"}, "vis_fast", visFastSource)
			pkgs := t.TempDir()
			if out, err := exec.Command(py.Executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--target", pkgs, wheel).CombinedOutput(); err != nil {
				t.Fatalf("pip install the extension: %v\n%s", err, out)
			}
			sb := newSandbox(t, py, "VIS_PYTHON_PACKAGES="+pkgs)
			r := sb.block("x", fmt.Sprintf(`import vis_fast
print(vis_fast.add(2, 40), session.access.is_jailed, vis_fast.__file__.startswith(%q))
try:
    open(%q + "/planted", "w")
except PermissionError:
    print("read-only")`, pkgs, pkgs), 0)
			contains(t, "the block", r.stdout, "42 True True", "read-only")
		})
	}
}
