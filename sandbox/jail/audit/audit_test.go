package audit_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/pyembed"
	"github.com/vis-agent/vis-agent/pyembed/findpython"
	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/jail/audit"
)

// hookChildEnv carries a hookRequest into the re-executed test binary,
// which loads CPython, installs the hook (and the kernel layer when
// asked) and runs Argv as python would: the hook's tests need no
// user-facing way to set a policy.
const hookChildEnv = "VIS_AUDIT_TEST_CHILD"

type hookRequest struct {
	Library string
	Policy  audit.Policy
	Kernel  *jail.Policy
	Argv    []string
}

func TestMain(m *testing.M) {
	if req := os.Getenv(hookChildEnv); req != "" {
		os.Exit(runHookChild(req))
	}
	os.Exit(m.Run())
}

func runHookChild(req string) int {
	var r hookRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		return 3
	}
	os.Unsetenv(hookChildEnv)
	lib, err := pyembed.Load(r.Library)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err := audit.Install(r.Policy); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err := audit.Install(r.Policy); err == nil {
		fmt.Fprintln(os.Stderr, "a second InstallAuditHook was accepted")
		return 3
	}
	if r.Kernel != nil {
		st, err := jail.Apply(*r.Kernel)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apply:", err)
			return 3
		}
		fmt.Fprintln(os.Stderr, "jail-status:", st)
	}
	return lib.Main(r.Argv, "", "")
}

// hookAttempts runs in one interpreter, each attempt after the last
// refusal (the interpreter stays usable), printing "name: outcome".
const hookAttempts = `import os, sys, io, gc, builtins, socket, shutil, sqlite3, subprocess, threading, mmap, glob, importlib, importlib.util
S, WS, OUT = os.environ["SECRET"], os.environ["WS"], os.environ["OUTSIDE"]
def attempt(name, f):
    try:
        r = f()
        print(name + ": ok", "" if r is None else r)
    except BaseException as e:
        print(name + ": " + type(e).__name__ + ": " + str(e))
open(WS + "/f", "w").write("in the workspace")
os.symlink(os.path.dirname(S), WS + "/door")
attempt("stdin from a file outside the roots", lambda: sys.stdin.read())
attempt("read secret", lambda: open(S).read())
attempt("sibling prefix", lambda: open(WS + "-sibling/f", "w"))
attempt("relative inside", lambda: open("rel.txt", "w").write("r"))
attempt("new folder dotdot", lambda: open(WS + "/nope/../../x", "w"))
attempt("new file deep inside", lambda: open(WS + "/nope/x", "w"))
attempt("write outside", lambda: open(OUT + "/planted", "w"))
attempt("write read-only root", lambda: open(sys.prefix + "/planted", "w"))
attempt("read read-only root", lambda: len(open(os.__file__).read()) > 0)
attempt("os.open write", lambda: os.open(OUT + "/planted", os.O_WRONLY | os.O_CREAT))
attempt("workspace symlink", lambda: open(WS + "/door/secret").read())
attempt("dotdot", lambda: open(WS + "/../" + os.path.relpath(S, os.path.dirname(WS))).read())
attempt("proc self root", lambda: open("/proc/self/root" + S).read())
attempt("remove dir_fd", lambda: os.remove("door/secret", dir_fd=os.open(WS, os.O_RDONLY)))
attempt("rename out", lambda: os.rename(WS + "/f", OUT + "/f"))
attempt("chmod secret", lambda: os.chmod(S, 0o777))
attempt("copy out", lambda: shutil.copyfile(WS + "/f", OUT + "/f"))
attempt("rmtree outside", lambda: shutil.rmtree(OUT))
attempt("sqlite outside", lambda: sqlite3.connect(OUT + "/db"))
attempt("sqlite uri outside", lambda: sqlite3.connect("file:" + OUT + "/db?mode=rwc", uri=True))
attempt("sqlite inside", lambda: sqlite3.connect(WS + "/db").execute("select 1").fetchone())
attempt("mmap inside", lambda: mmap.mmap(os.open(WS + "/f", os.O_RDONLY), 0, prot=mmap.PROT_READ)[:2])
attempt("listdir outside", lambda: os.listdir(OUT))
attempt("subprocess", lambda: subprocess.run(["true"]))
attempt("os.system", lambda: os.system("true"))
attempt("os.popen", lambda: os.popen("true"))
attempt("fork", lambda: os.fork())
attempt("posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
attempt("execv", lambda: os.execv("/bin/true", ["true"]))
attempt("pty spawn", lambda: __import__("pty").spawn("true"))
attempt("kill parent", lambda: os.kill(os.getppid(), 0))
attempt("kill self", lambda: os.kill(os.getpid(), 0))
attempt("import ctypes", lambda: __import__("ctypes").__name__)
attempt("_testcapi", lambda: __import__("_testcapi"))
def renamed():
    so = glob.glob(os.path.join(os.path.dirname(os.__file__), "lib-dynload", "_testcapi.*"))[0]
    spec = importlib.util.spec_from_file_location("x._testcapi", so)
    return importlib.util.module_from_spec(spec)
attempt("_testcapi by another name", renamed)
attempt("socket inet", lambda: socket.socket(socket.AF_INET))
attempt("name lookup", lambda: socket.getaddrinfo("localhost", 80))
attempt("unix socketpair", lambda: socket.socketpair()[0].family.name)
attempt("unix socket outside", lambda: socket.socket(socket.AF_UNIX).connect(OUT + "/service.sock"))
attempt("unix socket inside", lambda: socket.socket(socket.AF_UNIX).bind(WS + "/own.sock"))
attempt("gc finds no policy", lambda: sum(1 for o in gc.get_objects() if "roots" in repr(o)[:200] and S in repr(o)))
sys.addaudithook(lambda *a: None)
builtins.open = io.open = lambda *a, **k: "swapped"
attempt("after swaps", lambda: io.FileIO(S).read())
def spin():
    threading.Event().wait(5)
ts = []
def start_many():
    for _ in range(20):
        t = threading.Thread(target=spin, daemon=True)
        t.start()
        ts.append(t)
attempt("thread cap", start_many)
print("threads started", len(ts))
print("still usable", 6 * 7)
`

// TestAuditHook runs the attempts under the hook alone on every CPython:
// each refusal is a PermissionError (RuntimeError for threads) naming the
// operation, the path or target, and the policy; what the roots allow
// still works, and the interpreter stays usable.
func TestAuditHook(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			out, ws, outside := runHookAttempts(t, py, false)
			want := []string{
				"read secret: PermissionError: open /",
				"/secret: refused by the test jail (outside its roots)",
				"write outside: PermissionError: open /",
				"write read-only root: PermissionError: open " + py.Prefix,
				"(outside its writable roots)",
				"stdin from a file outside the roots: ok given on stdin",
				"read read-only root: ok True",
				"sibling prefix: PermissionError: open " + ws + "-sibling/f: refused by the test jail (outside its writable roots)",
				"relative inside: ok 1",
				"new folder dotdot: PermissionError: open " + ws + "/nope/../../x: refused by the test jail (the path cannot be resolved inside its roots)",
				"new file deep inside: FileNotFoundError",
				"os.open write: PermissionError: open ",
				"workspace symlink: PermissionError: open ",
				"dotdot: PermissionError: open ",
				"proc self root: PermissionError: open ",
				"remove dir_fd: PermissionError: os.remove ",
				"rename out: PermissionError: os.rename ",
				"chmod secret: PermissionError: os.chmod ",
				"copy out: PermissionError: shutil.copyfile ",
				"rmtree outside: PermissionError: shutil.rmtree ",
				"sqlite outside: PermissionError: sqlite3.connect ",
				"sqlite uri outside: PermissionError: sqlite3.connect ",
				"sqlite inside: ok (1,)",
				"mmap inside: ok b'in'",
				"listdir outside: PermissionError: os.listdir ",
				"subprocess: PermissionError: subprocess.Popen: refused by the test jail (no new processes)",
				"os.system: PermissionError: os.system: refused by the test jail",
				"os.popen: PermissionError: subprocess.Popen: refused",
				"fork: PermissionError: os.fork: refused",
				"posix_spawn: PermissionError: os.posix_spawn: refused",
				"execv: PermissionError: os.exec: refused",
				"pty spawn: PermissionError: os.fork", // forkpty or fork, by version
				"kill parent: PermissionError: os.kill ",
				"(only this process may be signalled)",
				"kill self: ok",
				// ctypes imports: the hook is no boundary, the kernel is.
				"import ctypes: ok ctypes",
				"_testcapi: ImportError: import _testcapi: refused by the test jail (CPython's test modules reach the interpreter's internals)",
				"_testcapi by another name: ImportError: import x._testcapi: refused by the test jail",
				"socket inet: PermissionError: network access is refused: the test jail (socket.__new__ family 2)",
				"name lookup: PermissionError: network access is refused: the test jail (socket.getaddrinfo 'localhost')",
				"unix socketpair: ok AF_UNIX",
				"unix socket outside: PermissionError: socket.connect " + outside + "/service.sock: refused by the test jail (outside its writable roots)",
				"unix socket inside: ok",
				"after swaps: PermissionError: open ",
				"gc finds no policy: ok 0",
				"still usable 42",
			}
			if py.Version.Less(findpython.Version{Major: 3, Minor: 12}) {
				want = append(want, "thread cap: ok", "threads started 20")
			} else {
				want = append(want, "thread cap: RuntimeError: can't start a new thread: the cap of 4 threads is reached (the test jail)", "threads started 3")
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in:\n%s", w, out)
				}
			}
		})
	}
}

// TestAuditHookOverKernel: the hook and the kernel layer together, as a
// jailed session's child has them: the hook's clear errors come first,
// and CPython starts and works under both.
func TestAuditHookOverKernel(t *testing.T) {
	for _, py := range testenv.Pythons(t) {
		out, _, _ := runHookAttempts(t, py, true)
		for _, w := range []string{"jail-status: kernel layer: landlock ABI", "read secret: PermissionError: open /", "sqlite inside: ok (1,)", "still usable 42"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: want %q in:\n%s", py.Name, w, out)
			}
		}
	}
}

// runHookAttempts runs hookAttempts in a child with the test jail's hook
// (and kernel layer), in a fresh workspace; it returns the output, the
// workspace and the folder outside the roots.
func runHookAttempts(t *testing.T, py testenv.Python, kernel bool) (out, ws, outside string) {
	t.Helper()
	secretDir := t.TempDir()
	outside, ws = t.TempDir(), t.TempDir()
	// A sibling whose name extends the workspace's: roots match at '/'.
	if err := os.Mkdir(ws+"-sibling", 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte("SECRET-TEXT"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := hookRequest{
		Library: py.Library,
		Policy: audit.Policy{Jail: true, NoNetwork: true, MaxThreads: 4, Name: "the test jail",
			ReadWrite: []string{ws, "/dev/null"}, ReadOnly: []string{py.Prefix}},
		Argv: []string{py.Executable, "-c", hookAttempts},
	}
	if kernel {
		kernel := jail.Session([]string{ws}, []string{py.Prefix}, false, 0)
		req.Kernel = &kernel
	}
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// stdin is a file outside the roots: CPython wraps the descriptor it
	// inherited, which the hook lets through.
	stdin := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(stdin, []byte("given on stdin"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(stdin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Dir, cmd.Stdin = ws, f
	cmd.Env = append(os.Environ(), hookChildEnv+"="+string(data), "SECRET="+secret, "WS="+ws, "OUTSIDE="+outside)
	raw, err := cmd.CombinedOutput()
	out = string(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "SECRET-TEXT") {
		t.Errorf("the secret got out:\n%s", out)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files appeared outside the roots: %v", entries)
	}
	if _, err := os.Stat(ws + "-sibling/f"); err == nil {
		t.Errorf("a file appeared in a sibling of the workspace")
	}
	os.RemoveAll(ws + "-sibling")
	return out, ws, outside
}

// TestAuditPolicyErrors: a policy the hook cannot hold is an error before
// anything is installed.
func TestAuditPolicyErrors(t *testing.T) {
	if err := audit.Install(audit.Policy{Jail: true}); err == nil || !strings.Contains(err.Error(), "needs a name") {
		t.Errorf("a policy without a name: %v", err)
	}
	err := audit.Install(audit.Policy{Jail: true, Name: "x", ReadOnly: []string{"relative/root"}})
	if err == nil || !strings.Contains(err.Error(), "root relative/root: not an absolute path") {
		t.Errorf("a relative root: %v", err)
	}
}

// TestThreadCapWithoutJail: the cap holds without the jail too, on every
// CPython that raises the thread-start event (3.12+).
func TestThreadCapWithoutJail(t *testing.T) {
	ran := false
	for _, py := range testenv.Pythons(t) {
		if py.Version.Less(findpython.Version{Major: 3, Minor: 12}) {
			continue
		}
		ran = true
		req, _ := json.Marshal(hookRequest{Library: py.Library, Policy: audit.Policy{MaxThreads: 3, Name: "the test cap"},
			Argv: []string{py.Executable, "-c", `import threading
ev = threading.Event()
ts = []
try:
    for _ in range(10):
        t = threading.Thread(target=ev.wait); t.start(); ts.append(t)
except RuntimeError as e:
    print(e)
ev.set(); [t.join() for t in ts]
print("started", len(ts))
t = threading.Thread(target=print, args=("a thread after the others ended",)); t.start(); t.join()
`}})
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), hookChildEnv+"="+string(req))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", py.Name, err, out)
		}
		want := "can't start a new thread: the cap of 3 threads is reached (the test cap)\nstarted 2\na thread after the others ended\n"
		if string(out) != want {
			t.Errorf("%s: got\n%s\nwant\n%s", py.Name, out, want)
		}
	}
	if !ran {
		t.Skip("no CPython 3.12+ here")
	}
}

// TestInterruptUnderKernel: CPython running in this Go process, under the
// hook and the kernel layer with signals scoped, is still interrupted by
// a SIGINT from its parent (KeyboardInterrupt), as a session's child must
// be by its host.
func TestInterruptUnderKernel(t *testing.T) {
	py := testenv.First(t)
	ws := t.TempDir()
	kernel := jail.Session([]string{ws}, []string{py.Prefix}, false, 0)
	req, _ := json.Marshal(hookRequest{Library: py.Library, Kernel: &kernel,
		Policy: audit.Policy{Jail: true, NoNetwork: true, Name: "the test jail", ReadWrite: []string{ws}, ReadOnly: []string{py.Prefix}},
		Argv:   []string{py.Executable, "-u", "-c", "try:\n    print('ready')\n    while True: pass\nexcept KeyboardInterrupt:\n    print('interrupted')\n"}})
	cmd := exec.Command(os.Args[0])
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), hookChildEnv+"="+string(req))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("no answer from the jailed interpreter")
			return ""
		}
	}
	if l := next(); l != "ready" {
		t.Fatalf("got %q, want ready", l)
	}
	cmd.Process.Signal(os.Interrupt)
	if l := next(); l != "interrupted" {
		t.Fatalf("got %q after SIGINT, want interrupted", l)
	}
}
