package jail

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// world is what an escape attempt reaches for: a secret file outside the
// roots, a folder outside them to plant files in, a loopback TCP and UDP
// server whose answers must never reach the jailed program, and a process
// outside the jail to signal or trace.
type world struct {
	secret, secretText string
	outside, ws        string
	answer             string
	tcpPort, udpPort   int
	unixSock           string
	// dgramSock is a datagram unix socket outside the roots; got counts
	// the datagrams it received (none may come from the jail).
	dgramSock string
	got       *atomic.Int32
	// abstract is the name of an abstract unix socket outside the jail.
	abstract string
	// sleeper is a process of the same user outside the jail; peer one
	// without capabilities, as another session's jailed process is: the
	// kernel lets a process without capabilities change the priority or
	// scheduling of a process that has none more than it.
	sleeper, peer *exec.Cmd
	// handle is the secret's folder, open: a jailed process that holds
	// it (on descriptor 3) gets no more than its roots through it.
	handle *os.File
}

func token(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newWorld(t *testing.T) *world {
	w := &world{secretText: "SECRET-" + token(t), answer: "ANSWER-" + token(t)}
	secretDir := t.TempDir()
	w.secret = filepath.Join(secretDir, "secret")
	if err := os.WriteFile(w.secret, []byte(w.secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	w.outside = t.TempDir()
	if err := os.WriteFile(filepath.Join(w.outside, "evil.py"), []byte("print('ESC' + 'APED imported')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.ws = t.TempDir()
	// A workspace symlink to the secret's folder: `..` and symlinks
	// through the workspace.
	if err := os.Symlink(secretDir, filepath.Join(w.ws, "door")); err != nil {
		t.Fatal(err)
	}

	handle, err := os.Open(secretDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { handle.Close() })
	w.handle = handle
	w.tcpPort, w.udpPort = testenv.Loopback(t, w.answer)
	// A local service on a unix socket file outside the roots, like a
	// container daemon's.
	w.unixSock = filepath.Join(t.TempDir(), "service.sock")
	testenv.Answer(t, "unix", w.unixSock, w.answer)
	w.dgramSock = filepath.Join(t.TempDir(), "dgram.sock")
	w.got = testenv.Datagrams(t, w.dgramSock)
	w.abstract = "vis-jail-test-" + token(t)
	testenv.Answer(t, "unix", "@"+w.abstract, w.answer)

	w.sleeper = exec.Command("sleep", "600")
	if err := w.sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.sleeper.Process.Kill(); w.sleeper.Wait() })
	req, _ := json.Marshal(childRequest{Policy: Policy{DropPrivileges: true}, Argv: []string{w.sleeper.Path, "600"}})
	w.peer = exec.Command(os.Args[0])
	w.peer.Env = append(os.Environ(), childEnv+"="+string(req))
	if err := w.peer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.peer.Process.Kill(); w.peer.Wait() })
	return w
}

func (w *world) env() []string {
	return append(os.Environ(),
		"SECRET="+w.secret, "OUTSIDE="+w.outside, "WS="+w.ws,
		fmt.Sprintf("TCP_PORT=%d", w.tcpPort), fmt.Sprintf("UDP_PORT=%d", w.udpPort),
		fmt.Sprintf("SLEEPER=%d", w.sleeper.Process.Pid), fmt.Sprintf("PEER=%d", w.peer.Process.Pid), "UNIX_SOCK="+w.unixSock, "DGRAM_SOCK="+w.dgramSock,
		"ABSTRACT="+w.abstract)
}

// sessionPolicy is a jailed session's policy for this world: the
// workspace writable, the CPython installation readable, no network;
// the Go runtime and CPython take about 1.5 GiB of the address space.
func sessionPolicy(w *world, py testenv.Python) Policy {
	return Session([]string{w.ws}, []string{py.Prefix, py.Executable}, false, 4<<30)
}

// runJailed runs argv in a re-executed test binary that applies p first.
// files are inherited from descriptor 3 on.
func runJailed(t *testing.T, p Policy, argv []string, env []string, files ...*os.File) (string, error) {
	t.Helper()
	req, err := json.Marshal(childRequest{Policy: p, Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(env, childEnv+"="+string(req))
	cmd.ExtraFiles = files
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// escape is one attempt. Printing ESCAPED means it got through. control:
// without the jail the same code gets through on this machine (as root),
// which shows it is the jail that stops it.
type escape struct {
	name, code string
	control    bool
	want       string // in the jailed output, when set
}

const prelude = `import os, sys, socket, ctypes, errno
S, WS, OUT = os.environ["SECRET"], os.environ["WS"], os.environ["OUTSIDE"]
TCP, UDP = int(os.environ["TCP_PORT"]), int(os.environ["UDP_PORT"])
SLEEPER, PEER = int(os.environ["SLEEPER"]), int(os.environ["PEER"])
libc = ctypes.CDLL(None, use_errno=True)
E = "ESC" + "APED"  # built at run time: a traceback quoting the source must not match
# Syscall numbers of this architecture that Python has no function for.
SYS = {"x86_64": {"ioprio_set": 251, "kcmp": 312}, "aarch64": {"ioprio_set": 30, "kcmp": 272}}[os.uname().machine]
def sockaddr(port):
    import struct
    return struct.pack("=HH4s8x", socket.AF_INET, socket.htons(port), socket.inet_aton("127.0.0.1"))
`

var escapes = []escape{
	{"read secret", `print(E, open(S).read())`, true, "PermissionError"},
	{"write outside", `open(OUT + "/planted", "w").write("x"); print(E)`, true, "PermissionError"},
	{"symlink out of the root", `os.symlink(S, WS + "/link"); print(E, open(WS + "/link").read())`, true, "PermissionError"},
	{"workspace symlink", `print(E, open(WS + "/door/secret").read())`, true, "PermissionError"},
	{"dotdot", `print(E, open(WS + "/../" + os.path.relpath(S, os.path.dirname(WS))).read())`, true, "PermissionError"},
	{"proc self root", `print(E, open("/proc/self/root" + S).read())`, true, "PermissionError"},
	{"proc self fd", `fd = os.open(WS, os.O_RDONLY); print(E, open("/proc/self/fd/%d/door/secret" % fd).read())`, true, "PermissionError"},
	{"an inherited handle of a folder outside", `print(E, open("/proc/self/fd/3/secret").read())`, true, "PermissionError"},
	{"openat on an inherited handle", `print(E, os.read(os.open("secret", os.O_RDONLY, dir_fd=3), 100))`, true, "PermissionError"},
	{"openat dir_fd", `fd = os.open(WS, os.O_RDONLY); print(E, os.read(os.open("door/secret", os.O_RDONLY, dir_fd=fd), 100))`, true, "PermissionError"},
	{"os.open write outside", `os.open(OUT + "/planted", os.O_CREAT | os.O_WRONLY); print(E)`, true, "PermissionError"},
	{"hard link out", `os.link(S, WS + "/hl"); print(E, open(WS + "/hl").read())`, true, ""},
	{"rename out", `open(WS + "/f", "w").close(); os.rename(WS + "/f", OUT + "/planted"); print(E)`, true, ""},
	{"libc open through ctypes", `fd = libc.open(S.encode(), 0)
if fd >= 0: print(E, os.read(fd, 100))
else: print("refused", os.strerror(ctypes.get_errno()))`, true, "refused"},
	{"mmap secret", `import mmap; f = os.open(S, os.O_RDONLY); print(E, mmap.mmap(f, 0, prot=mmap.PROT_READ)[:])`, true, "PermissionError"},
	{"import from outside", `sys.path.insert(0, OUT); import evil`, true, "ModuleNotFoundError"},
	{"tcp connect", `print(E, socket.create_connection(("127.0.0.1", TCP)).recv(100))`, true, "PermissionError"},
	{"tcp connect through ctypes", `fd = libc.socket(2, 1, 0)
a = sockaddr(TCP)
if fd >= 0 and libc.connect(fd, a, len(a)) == 0: print(E, os.read(fd, 100))
else: print("refused", os.strerror(ctypes.get_errno()))`, true, "refused"},
	{"udp", `s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); s.sendto(b"hi", ("127.0.0.1", UDP)); print(E, s.recv(100))`, true, "PermissionError"},
	{"mptcp", `s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.connect(("127.0.0.1", TCP)); print(E, s.recv(100))`, true, "PermissionError"},
	{"unix socket outside the roots", `s = socket.socket(socket.AF_UNIX); s.connect(os.environ["UNIX_SOCK"]); print(E, s.recv(100))`, true, "PermissionError"},
	// A datagram goes to any socket file by its path, connected or not:
	// neither a new unix socket nor a datagram socketpair may be had.
	{"sendmsg to a datagram socket outside the roots", `s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendmsg([b"hi"], [], 0, os.environ["DGRAM_SOCK"]); print(E)`, true, "PermissionError"},
	{"a datagram socketpair's sendmsg outside the roots", `a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendmsg([b"hi"], [], 0, os.environ["DGRAM_SOCK"]); print(E)`, true, "PermissionError"},
	{"an abstract unix socket outside the jail", `s = socket.socket(socket.AF_UNIX); s.connect("\0" + os.environ["ABSTRACT"]); print(E, s.recv(100))`, true, "PermissionError"},
	// Other processes of the user (here root's): their limits, priority,
	// CPUs, scheduling and I/O priority, and what kcmp says of them.
	{"prlimit of another process", `import resource; resource.prlimit(SLEEPER, resource.RLIMIT_CORE, (0, 0)); print(E)`, true, "PermissionError"},
	{"setpriority of another process", `os.setpriority(os.PRIO_PROCESS, PEER, 5); print(E)`, true, "PermissionError"},
	{"sched_setaffinity of another process", `os.sched_setaffinity(PEER, {0}); print(E)`, true, "PermissionError"},
	{"sched_setscheduler of another process", `os.sched_setscheduler(PEER, os.SCHED_BATCH, os.sched_param(0)); print(E)`, true, "PermissionError"},
	{"ioprio_set of another process", `r = libc.syscall(SYS["ioprio_set"], 1, PEER, (2 << 13) | 4)
print(E if r == 0 else "refused", r)`, true, "refused"},
	{"kcmp with another process", `r = libc.syscall(SYS["kcmp"], os.getpid(), PEER, 0, 0, 0)
print(E if r >= 0 else "refused", r)`, true, "refused"},
	{"ipv6", `print(E, socket.socket(socket.AF_INET6).fileno())`, true, "PermissionError"},
	{"raw socket", `print(E, socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).fileno())`, true, "PermissionError"},
	{"packet socket", `print(E, socket.socket(socket.AF_PACKET, socket.SOCK_RAW).fileno())`, true, "PermissionError"},
	{"netlink", `print(E, socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).fileno())`, true, "PermissionError"},
	{"name lookup", `print(E, socket.gethostbyname("localhost"))`, true, "gaierror"},
	{"io_uring", `p = ctypes.create_string_buffer(120); fd = libc.syscall(425, 4, p)
print(E if fd >= 0 else "refused", fd)`, true, "refused"},
	{"ptrace another process", `r = libc.ptrace(16, SLEEPER, 0, 0)
print(E if r == 0 else "refused", r)`, true, "refused"},
	{"process_vm_readv", `buf = ctypes.create_string_buffer(8)
class iov(ctypes.Structure): _fields_ = [("b", ctypes.c_void_p), ("n", ctypes.c_size_t)]
r = libc.process_vm_readv(SLEEPER, ctypes.byref(iov(ctypes.addressof(buf), 8)), 1, ctypes.byref(iov(4096, 8)), 1, 0)
print("refused" if ctypes.get_errno() == errno.EPERM else E, r, ctypes.get_errno())`, true, "refused"},
	{"chroot", `os.chroot(WS); print(E)`, true, "PermissionError"},
	{"mount", `r = libc.mount(b"none", WS.encode(), b"tmpfs", 0, None)
print(E if r == 0 else "refused", r)`, false, "refused"},
	{"unshare user namespace", `r = libc.unshare(0x10000000)
print(E if r == 0 else "refused", r)`, true, "refused"},
	{"setrlimit raise", `import resource; resource.setrlimit(resource.RLIMIT_AS, (-1, -1)); print(E)`, true, "ValueError"},
	{"chown", `open(WS + "/c", "w").close(); os.chown(WS + "/c", 1234, 1234); print(E)`, true, "PermissionError"},
	{"signal the parent", `os.kill(os.getppid(), 0); print(E)`, true, "PermissionError"},
	{"kill another process", `import signal; os.kill(SLEEPER, signal.SIGKILL); print(E)`, false, "PermissionError"},
	{"fork", `pid = os.fork()
if pid == 0: os._exit(0)
print(E)`, true, "PermissionError"},
	{"fork bomb", `n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            os._exit(0)
        n += 1
finally:
    print("forks", n)
print(E)`, false, "forks 0"},
	{"subprocess", `import subprocess; print(E, subprocess.run(["cat", S], capture_output=True).stdout)`, true, "PermissionError"},
	{"libc system through ctypes", `r = libc.system(("cat " + S).encode())
print(E if r == 0 else "refused", r)`, true, "refused"},
	{"posix_spawn", `print(E, os.posix_spawn("/bin/cat", ["cat", S], os.environ))`, true, ""},
	// The i386 socket call (359) through int 0x80 from a 64-bit process:
	// a filter that checks numbers without the architecture lets it by.
	{"i386 syscall", `import mmap, platform
if platform.machine() != "x86_64":
    print("refused: not x86_64")
else:
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(bytes.fromhex("53b867010000bb02000000b90100000031d2cd805bc3"))
    fd = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()
    print(E if fd >= 0 else "refused", fd)`, true, "refused"},
	{"memory bomb", `b = bytes(8 << 30); print(E, len(b))`, false, "MemoryError"},
}

// TestEscapes runs the corpus against the kernel layer alone (no audit
// hook: the real python of each CPython, exec'ed after Apply), and its
// control without the jail on one CPython.
func TestEscapes(t *testing.T) {
	w := newWorld(t)
	pythons := testenv.Pythons(t)
	for _, py := range pythons {
		t.Run(py.Name, func(t *testing.T) {
			for _, e := range escapes {
				out, _ := runJailed(t, sessionPolicy(w, py), []string{py.Executable, "-c", prelude + e.code}, w.env(), w.handle)
				w.check(t, e, out)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		py := pythons[0]
		for _, e := range escapes {
			if !e.control {
				continue
			}
			cmd := exec.Command(py.Executable, "-c", prelude+e.code)
			cmd.Env, cmd.ExtraFiles = w.env(), []*os.File{w.handle}
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), "ESCAPED") {
				t.Errorf("%s: without the jail the attempt should get through, got:\n%s", e.name, out)
			}
			w.cleanOutside(t)
			w.got.Store(0)
		}
	})
}

// check fails the test when an attempt got anything out of the jail.
func (w *world) check(t *testing.T, e escape, out string) {
	t.Helper()
	if !strings.Contains(out, "jail-status:") {
		t.Fatalf("%s: the jail was not applied:\n%s", e.name, out)
	}
	for _, leak := range []string{"ESCAPED", w.secretText, w.answer} {
		if strings.Contains(out, leak) {
			t.Errorf("%s: got %q through the jail:\n%s", e.name, leak, out)
		}
	}
	if e.want != "" && !strings.Contains(out, e.want) {
		t.Errorf("%s: want %q in the output:\n%s", e.name, e.want, out)
	}
	time.Sleep(10 * time.Millisecond) // the datagram reader's turn
	if n := w.got.Swap(0); n != 0 {
		t.Errorf("%s: %d datagrams reached the socket outside the roots", e.name, n)
	}
	if entries, _ := os.ReadDir(w.outside); len(entries) != 1 {
		t.Errorf("%s: a file appeared outside the roots: %v", e.name, entries)
	}
	w.cleanOutside(t)
	for _, p := range []*exec.Cmd{w.sleeper, w.peer} {
		if err := p.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("%s: the process outside the jail died: %v", e.name, err)
		}
	}
}

// cleanOutside removes what an attempt left, so the next one starts
// from the same world.
func (w *world) cleanOutside(t *testing.T) {
	entries, _ := os.ReadDir(w.outside)
	for _, e := range entries {
		if e.Name() != "evil.py" {
			os.RemoveAll(filepath.Join(w.outside, e.Name()))
		}
	}
	os.Remove(filepath.Join(w.ws, "link"))
	os.Remove(filepath.Join(w.ws, "hl"))
	os.Remove(filepath.Join(w.ws, "c"))
}

// TestJailStillWorks: inside the roots, the jailed program reads, writes,
// renames, starts threads and imports C extensions.
func TestJailStillWorks(t *testing.T) {
	w := newWorld(t)
	py := testenv.First(t)
	code := prelude + `import threading, json, _ssl, hashlib
open(WS + "/a", "w").write("hello")
os.makedirs(WS + "/d/e", exist_ok=True)
os.rename(WS + "/a", WS + "/d/e/b")
ts = [threading.Thread(target=lambda: None) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
a, b = socket.socketpair(); a.send(b"unix"); assert b.recv(4) == b"unix"
print("OK", open(WS + "/d/e/b").read(), hashlib.sha256(b"x").hexdigest()[:8])
`
	out, err := runJailed(t, sessionPolicy(w, py), []string{py.Executable, "-c", code}, w.env())
	if err != nil || !strings.Contains(out, "OK hello 2d711642") {
		t.Fatalf("jailed program failed inside its roots: %v\n%s", err, out)
	}
	t.Log(firstLine(out))
}

// TestThreadCap: the pids cgroup stops threads near the cap whatever
// starts them (here plain CPython with no hook), long before the
// address-space cap would.
func TestThreadCap(t *testing.T) {
	py := testenv.First(t)
	code := `import threading
ev = threading.Event(); n = 0
try:
    while n < 2000:
        threading.Thread(target=ev.wait, daemon=True).start(); n += 1
except RuntimeError as e:
    print("stopped at", n)
finally:
    ev.set()
`
	out, err := runJailed(t, Policy{MaxThreads: 20, MemoryBytes: 4 << 30}, []string{py.Executable, "-c", code}, os.Environ())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "threads: the kernel does not cap them") {
		t.Fatalf("no pids cgroup on this machine (tests run as root here):\n%s", out)
	}
	var n int
	_, stop, _ := strings.Cut(out, "stopped at")
	if _, err := fmt.Sscanf(stop, "%d", &n); err != nil || n < 19 || n > 19+taskHeadroom+8 {
		t.Fatalf("the thread cap of 20 did not stop the threads near 20:\n%s", out)
	}
	t.Log(strings.TrimSpace(out))
}

// TestThreadsBeforeApply: threads running before Apply are restricted too
// (psx for Landlock and capabilities, TSYNC for seccomp).
func TestThreadsBeforeApply(t *testing.T) {
	w := newWorld(t)
	p := Policy{ConfineFiles: true, ReadOnly: []string{"/proc"}, NoNetwork: true, DropPrivileges: true}
	req, _ := json.Marshal(childRequest{Policy: p, Threads: 6, Secret: w.secret})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(req))
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "thread ") {
			continue
		}
		n++
		if !strings.Contains(line, "open=true socket=true caps=0/<nil>") {
			t.Errorf("a thread started before Apply is not restricted: %s", line)
		}
	}
	if n != 6 {
		t.Fatalf("want 6 thread lines:\n%s", out)
	}
	if !strings.Contains(out, "no capabilities") || !strings.Contains(out, "seccomp") {
		t.Errorf("status does not show the layers:\n%s", out)
	}
}

// TestInterruptFromParent: with signals scoped, the parent still
// interrupts the jailed interpreter (KeyboardInterrupt), while the jailed
// program cannot signal its parent (TestEscapes).
func TestInterruptFromParent(t *testing.T) {
	w := newWorld(t)
	py := testenv.First(t)
	req, _ := json.Marshal(childRequest{Policy: sessionPolicy(w, py), Argv: []string{py.Executable, "-u", "-c",
		"try:\n    print('ready', flush=True)\n    while True: pass\nexcept KeyboardInterrupt:\n    print('interrupted')\n"}})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(w.env(), childEnv+"="+string(req))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child did not start: %q %v", line, err)
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan string, 1)
	go func() { line, _ := r.ReadString('\n'); done <- line }()
	select {
	case line := <-done:
		if line != "interrupted\n" {
			t.Fatalf("got %q, want interrupted", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGINT from the parent did not interrupt the jailed interpreter")
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
