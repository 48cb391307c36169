package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// networkAttempts reach a loopback server in every way --no-network must
// stop: through CPython's socket module (the audit hook), through libc
// by ctypes, and from child processes (python, MPTCP, UDP, a shell's
// /dev/tcp) and from a C extension calling libc, which no audit hook
// sees. Each prints "reached" with the
// server's answer when it gets through, "refused" otherwise.
const networkAttempts = `import ctypes, os, socket, struct, subprocess, sys
PORT, UDP = int(os.environ["TCP_PORT"]), int(os.environ["UDP_PORT"])
def attempt(name, f):
    try:
        print(name, "reached", f())
    except Exception as e:
        print(name, "refused", type(e).__name__, e)
def module():
    return socket.create_connection(("127.0.0.1", PORT)).recv(100)
def libc():
    c = ctypes.CDLL(None, use_errno=True)
    fd = c.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    a = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(PORT), socket.inet_aton("127.0.0.1"))
    if fd < 0 or c.connect(fd, a, len(a)) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return os.read(fd, 100)
def child(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode:
        raise OSError(r.stderr.strip().splitlines()[-1])
    return r.stdout.strip()
CHILD_TCP = "import socket, os; print(socket.create_connection(('127.0.0.1', %d)).recv(100))" % PORT
CHILD_MPTCP = "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.connect(('127.0.0.1', %d)); print(s.recv(100))" % PORT
CHILD_UDP = "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10); s.sendto(b'x', ('127.0.0.1', %d)); print(s.recv(100))" % UDP
def shell():
    r = subprocess.run(["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3" % PORT], capture_output=True, text=True)
    if r.returncode:
        raise OSError(r.stderr.strip())
    return r.stdout
attempt("module", module)
attempt("libc", libc)
attempt("child-tcp", lambda: child(CHILD_TCP))
attempt("child-mptcp", lambda: child(CHILD_MPTCP))
attempt("child-udp", lambda: child(CHILD_UDP))
attempt("shell", shell)
attempt("c-extension", lambda: __import__("cnet").reach(PORT))
a, b = socket.socketpair(); a.send(b"unix"); print("unix", b.recv(4))
`

var networkAttemptNames = []string{"module", "libc", "child-tcp", "child-mptcp", "child-udp", "shell", "c-extension"}

// TestNoNetworkKernelLayer: with --no-network nothing reaches the
// loopback server, also through ctypes and child processes, and the
// program's own socket use still gets the hook's clear error; without it,
// every attempt reaches the server (so the test can fail).
func TestNoNetworkKernelLayer(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s for the attempts", tool)
		}
	}
	bin := testenv.Binary(t)
	answer := "ANSWER-from-the-loopback-server"
	tcpPort, udpPort := testenv.Loopback(t, answer)
	for _, py := range testenv.Pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			env := append(os.Environ(), "VIS_PYTHON_NATIVE_PATH="+py.Library, "VIS_HOME="+t.TempDir(),
				fmt.Sprintf("TCP_PORT=%d", tcpPort), fmt.Sprintf("UDP_PORT=%d", udpPort), "PYTHONPATH="+buildCExtension(t, py))
			run := func(args ...string) string {
				cmd := exec.Command(bin, append(append([]string{"python"}, args...), "-c", networkAttempts)...)
				cmd.Env, cmd.Dir = env, t.TempDir()
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("vis-agent python %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			out := run("--no-network")
			if strings.Contains(out, answer) || strings.Contains(out, " reached ") {
				t.Errorf("--no-network let the network through:\n%s", out)
			}
			for _, name := range networkAttemptNames {
				if !strings.Contains(out, name+" refused") {
					t.Errorf("attempt %s not refused:\n%s", name, out)
				}
			}
			if !strings.Contains(out, "module refused PermissionError network access is refused: vis-agent python --no-network (socket.getaddrinfo '127.0.0.1')") {
				t.Errorf("the audit hook's message is missing:\n%s", out)
			}
			if !strings.Contains(out, "unix b'unix'") {
				t.Errorf("AF_UNIX sockets must still work:\n%s", out)
			}
			control := run()
			for _, name := range networkAttemptNames {
				if !strings.Contains(control, name+" reached") || !strings.Contains(control, answer) {
					t.Errorf("without --no-network, %s should reach the server:\n%s", name, control)
				}
			}
		})
	}
}

// buildCExtension compiles testdata/cnet.c for py into a new folder and
// returns the folder.
func buildCExtension(t *testing.T, py testenv.Python) string {
	t.Helper()
	paths, err := exec.Command(py.Executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))").Output()
	if err != nil {
		t.Fatal(err)
	}
	include, suffix, _ := strings.Cut(strings.TrimSpace(string(paths)), "\n")
	dir := t.TempDir()
	src, err := filepath.Abs("testdata/cnet.c")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-O1", "-I", include, "-o", filepath.Join(dir, "cnet"+suffix), src).CombinedOutput(); err != nil {
		t.Fatalf("build the C extension: %v\n%s", err, out)
	}
	return dir
}
