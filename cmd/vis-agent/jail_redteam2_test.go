package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
)

// The third red team's part of the escape corpus (issue 31, after the
// jail let the child start processes): attacks on the child's processes,
// its tree and its sockets, each run with the C audit hook and without it
// (the test-only binary), on the oldest and newest CPython.

// forkFromEveryThread is a block that makes every thread of the child but
// the one running it fork: a C signal handler (ctypes) that forks, sent
// to each thread (tgkill: a process may signal its own threads). The
// child's threads that are not Python's are the Go runtime's; a process
// forked by one starts in that thread's pids cgroup. Each forked process
// leaves the child's session and process group and writes its pid to
// pids.txt, then waits.
const forkFromEveryThread = `import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
PIDS = os.path.abspath("pids.txt")
def forked(sig):
    if libc.fork() == 0:
        libc.setsid()
        with open(PIDS, "a") as f:
            f.write("%d\n" % os.getpid())
        while True:
            time.sleep(1)
HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int)(forked)
class Sigaction(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16), ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]
act = Sigaction(handler=ctypes.cast(HANDLER, ctypes.c_void_p).value, flags=0x10000000)  # SA_RESTART
SIG = 40  # a real-time signal no one sends
assert libc.sigaction(SIG, ctypes.byref(act), None) == 0
# The threads' ids follow the process's (no /proc needed): tgkill with
# no signal says which are its threads.
me, pid = libc.syscall(186), os.getpid()  # gettid
others = [t for t in range(pid, pid + 400) if t != me and libc.syscall(234, pid, t, 0) == 0]
for tid in others:
    libc.syscall(234, pid, tid, SIG)  # tgkill
for _ in range(100):
    if os.path.exists(PIDS) and len(open(PIDS).read().split()) >= len(others):
        break
    time.sleep(0.05)
print("threads", len(others), "forked", len(open(PIDS).read().split()) if os.path.exists(PIDS) else 0)
`

// TestSandboxJailForkFromARuntimeThread: the child's pids cgroup held its
// Python thread only (cgroup v1 moved the calling thread), not the threads
// the Go runtime had started before: a process forked from one of those
// (a signal handler the block set, then a signal to that thread) started
// outside the session's cgroup, so the session's cap did not count it and
// sandbox stop did not end it; it lived on in the jail's tree, writing the
// workspace. Every process the child starts must end with it.
func TestSandboxJailForkFromARuntimeThread(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		r := sb.block("f", forkFromEveryThread, 0, "--timeout", "60s")
		// What the forked processes wrote, read again when the test ends
		// (one may write late): the test ends those that outlived it.
		forked := func() []int {
			data, _ := os.ReadFile(filepath.Join(sb.ws, "pids.txt"))
			var pids []int
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return pids
		}
		t.Cleanup(func() {
			for _, pid := range forked() {
				if processAlive(pid) && strings.Contains(cmdline(pid), "sandbox") {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		if len(forked()) == 0 {
			t.Fatalf("no thread forked (the attack did not run):\n%s%s", r.stdout, r.stderr)
		}
		sb.ok("stop", "--session", "f")
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			alive := false
			for _, pid := range forked() {
				alive = alive || processAlive(pid)
			}
			if !alive {
				return
			}
		}
		for _, pid := range forked() {
			if processAlive(pid) {
				t.Errorf("process %d, forked by a thread of the child, outlived sandbox stop (its cgroups: %s)", pid, pidsCgroup(pid))
			}
		}
	})
}

// TestSandboxJailSocketInAReadOnlyRoot: a unix socket file of a service
// (an agent, a database, a desktop bus) inside a read-only root is a way
// out of the jail: connecting to it is no write to the file, so the
// read-only mount does not refuse it, and a kernel whose Landlock cannot
// confine socket files (ABI < 9) neither. Read-only roots give no access
// to services; the workspace's own sockets stay usable.
func TestSandboxJailSocketInAReadOnlyRoot(t *testing.T) {
	t.Parallel()
	// Unix socket paths must stay short: a folder of their own under /tmp.
	dir, err := os.MkdirTemp("", "vis-ro-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	service := filepath.Join(dir, "agent.sock")
	testenv.Answer(t, "unix", service, escapeAnswer)
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		code := fmt.Sprintf(`import os, socket
print("the root shows", os.listdir(%q))
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(%q)
    print("ESC" + "APED", s.recv(100))
except OSError as e:
    print("refused", type(e).__name__)
`, dir, service)
		r := sb.block("s", code, 0, "--read-only-root", dir)
		if escaped(r.stdout + r.stderr) {
			t.Errorf("the jail reached a service's socket in a read-only root:\n%s%s", r.stdout, r.stderr)
		}
		contains(t, "the block", r.stdout, "the root shows ['agent.sock']", "refused")
	})
}

// pidsCgroup is the pids cgroup line of pid's /proc/PID/cgroup.
func pidsCgroup(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, ":pids:") {
			return line
		}
	}
	return strings.TrimSpace(string(data))
}

// attemptPy defines attempt(name, f) for a block: it prints name, then
// "-> refused" and the error's type, or the marker and what f returned.
const attemptPy = `def attempt(name, f):
    try:
        print(name, "->", "ESC" + "APED", f())
    except Exception as e:
        print(name, "-> refused", type(e).__name__)
`

// TestSandboxJailGitSeparateGitDir: the user's repository keeps its git
// folder inside the workspace under another name (git init
// --separate-git-dir, or a .git file a tool wrote: "gitdir: .repo"). The
// jail kept the .git file read-only, not the folder it names, where git
// finds the hooks and settings it runs as the user at the next commit:
// neither the block nor a shell() command may write there.
func TestSandboxJailGitSeparateGitDir(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		cmd := exec.Command("git", "init", "-q", "--separate-git-dir="+filepath.Join(sb.ws, ".repo"), sb.ws)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		before := treeState(t, filepath.Join(sb.ws, ".repo"))
		r := sb.block("sep", "import os\nE = \"ESC\" + \"APED\"\n"+attemptPy+`attempt("a hook", lambda: open(".repo/hooks/pre-commit", "w").write("#!/bin/sh\n"))
attempt("the config", lambda: open(".repo/config", "a").write("[core]\n\tfsmonitor = evil\n"))
attempt("the folder renamed", lambda: os.rename(".repo", "repo-moved"))
r = shell("E=" + E + "; echo '#!/bin/sh' > .repo/hooks/post-checkout && echo $E hook; echo '[core]' >> .repo/config && echo $E config", wait=60)
print(r.out, r.err)
`, 0)
		all := r.stdout + r.stderr
		if escaped(all) {
			t.Errorf("the session wrote the git folder a .git file names:\n%s", all)
		}
		contains(t, "the attack", r.stdout, "a hook -> refused", "the config -> refused", "the folder renamed -> refused")
		if after := treeState(t, filepath.Join(sb.ws, ".repo")); after != before {
			t.Errorf("the git folder changed (%d bytes of its files and modes before, %d after)", len(before), len(after))
		}
	})
}

// plantedGits are blocks that make, at the top of the workspace, a .git
// whose code is outside it, in a folder the session keeps writing after
// the host made the .git read-only: a .git file naming a git folder of
// the workspace, and a .git folder (moved in whole, one event) whose
// hooks are a link to the workspace or whose commondir names a folder of
// it (git reads the config and hooks there); lead is a file there.
var plantedGits = map[string]struct{ lead, plant string }{
	"a .git file": {".evil/config", `os.makedirs(".evil/objects"); os.makedirs(".evil/refs/heads"); os.makedirs(".evil/hooks")
open(".evil/HEAD", "w").write("ref: refs/heads/main\n")
open(".evil/config", "w").write("[core]\n\trepositoryformatversion = 0\n")
open("dot-git", "w").write("gitdir: .evil\n")
os.rename("dot-git", ".git")`},
	"a hooks link": {".evil-hooks/pre-commit", `os.makedirs("stage/objects"); os.makedirs("stage/refs/heads"); os.makedirs(".evil-hooks")
open("stage/HEAD", "w").write("ref: refs/heads/main\n")
open("stage/config", "w").write("[core]\n\trepositoryformatversion = 0\n")
os.symlink("../.evil-hooks", "stage/hooks")
os.rename("stage", ".git")`},
	"a commondir": {".evil/config", `os.makedirs(".evil/objects"); os.makedirs(".evil/refs/heads"); os.makedirs(".evil/hooks")
open(".evil/config", "w").write("[core]\n\trepositoryformatversion = 0\n")
os.makedirs("stage/objects"); os.makedirs("stage/refs/heads")
open("stage/HEAD", "w").write("ref: refs/heads/main\n")
open("stage/commondir", "w").write("../.evil\n")
os.rename("stage", ".git")`},
}

// TestSandboxJailGitPlantedPointer: a block makes a .git at the top of
// the workspace that leads git out of it, to a folder of the workspace
// (see plantedGits). The host sees the .git, replaces the child and keeps
// the .git read-only, and its notice names what in the .git could run
// code (gitSuspects: hooks that are not samples, settings git init does
// not write, hard links) so that the user looks before running git
// there; what these .git lead to was named nowhere, and the session
// could change it at any later block: the user's next git status ran
// what it wrote there. The next block may not write it.
func TestSandboxJailGitPlantedPointer(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		i := 0
		for what, p := range plantedGits {
			i++
			ws := filepath.Join(sb.ws, strconv.Itoa(i))
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			name := "p" + strconv.Itoa(i)
			first := sb.run("run", "--session", name, "--workspace", ws, "-c", "import os\n"+p.plant)
			r := sb.block(name, fmt.Sprintf(`try:
    open(%q, "a").write("[core]\\n\\tfsmonitor = evil\\n")
    print("ESC" + "APED")
except OSError as e:
    print("refused", type(e).__name__)`, p.lead), 0, "--workspace", ws)
			notice := first.stdout + first.stderr + r.stdout + r.stderr
			contains(t, what, notice, ".git appeared", "refused")
			if escaped(r.stdout) {
				t.Errorf("%s: the next block wrote %s:\n%s", what, p.lead, r.stdout)
			}
			if !strings.Contains(notice, "look at") {
				t.Errorf("%s: the notice does not tell the user to look at what the .git leads git to:\n%s", what, notice)
			}
		}
	})
}

// TestSandboxJailForgedResult: a block writes on the child's link to the
// host (descriptor 3, which a process it forks without Python's at-fork
// handlers keeps too: os.fork from C) a result event with no result. The
// host took the event's result without looking and died of a nil pointer
// (a Go panic in host.log): every session's child writes what it likes
// there, and the host must answer it with an error, not end.
func TestSandboxJailForgedResult(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.block("r", "x = 1", 0)
		before := sb.record(sb.folder("r")).HostPID
		r := sb.run("run", "--session", "r", "-c", `import ctypes
line = b'{"ev":"result"}\n'
ctypes.CDLL(None).write(3, line, len(line))
import time; time.sleep(2)`)
		after := sb.run("run", "--session", "r", "-c", "print('next', x)")
		if !strings.Contains(after.stdout, "next 1") || sb.record(sb.folder("r")).HostPID != before {
			t.Errorf("the session did not go on in the same host (%d before):\nforged: %s%s\nnext: %s%s", before, r.stdout, r.stderr, after.stdout, after.stderr)
		}
	})
}

// TestSandboxJailProcessesEndWithTheHost: what a session's code started
// ends with the session also when its host dies (a crash such as
// TestSandboxJailForgedResult's, the kernel's OOM killer, kill -9): the
// child dies with the host (its parent-death signal), but the host is
// what ends the child's pids cgroup (EndTaskGroup), so a process the
// block started in a session of its own lived on, in the jail's tree,
// writing the workspace, and no later host knew of it.
func TestSandboxJailProcessesEndWithTheHost(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		r := sb.block("h", `import subprocess
p = subprocess.Popen(["sleep", "600"], start_new_session=True)
print("pid", p.pid)`, 0)
		var sleeper int
		if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "pid %d", &sleeper); err != nil || !processAlive(sleeper) {
			t.Fatalf("the background process did not start: %q", r.stdout)
		}
		t.Cleanup(func() {
			if processAlive(sleeper) && strings.Contains(cmdline(sleeper), "sleep") {
				syscall.Kill(sleeper, syscall.SIGKILL)
			}
		})
		host := sb.record(sb.folder("h")).HostPID
		if host <= 0 || !strings.Contains(cmdline(host), "sandbox") {
			t.Fatalf("no host: %d", host)
		}
		syscall.Kill(host, syscall.SIGKILL)
		for deadline := time.Now().Add(5 * time.Second); processAlive(sleeper) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if processAlive(sleeper) {
			t.Errorf("a process the session started outlived its host (%s)", pidsCgroup(sleeper))
		}
	})
}

// TestSandboxJailProcessesHold: what the child's processes can do that
// the child could not before, tried from processes it started (all hold):
// no cgroup file to leave the session's pids cgroup by, no signal to the
// host, no privileges through a setuid program, /dev/shm capped (its pages
// are the machine's memory), and a chain of processes, each forking the
// next and ending at once, does not outrun the kill of the session's
// cgroup at stop.
func TestSandboxJailProcessesHold(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		r := sb.block("ph", `import os, subprocess, sys, time
probe = r'''
import os, ctypes, subprocess
`+attemptPy+`attempt("the cgroup files", lambda: os.listdir("/sys/fs/cgroup"))
attempt("a signal to the host", lambda: os.kill(int(os.environ["HOST"]), 0))
out = subprocess.run(["su", "-c", "echo ESC""APED"], capture_output=True, text=True)
print("su", out.returncode, "ESC" + "APED" in out.stdout)
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
ctypes.CDLL(None).capget(hdr, data)
print("capabilities", sum(data))
try:
    with open("/dev/shm/fill", "wb") as f:
        for _ in range(200):
            f.write(b"x" * (1 << 20))
    print("shm", "ESC" + "APED")
except OSError as e:
    print("shm full", e.errno)
os.remove("/dev/shm/fill")
'''
out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=dict(os.environ, HOST=str(os.getppid())))
print(out.stdout, out.stderr[-500:])
chain = os.fork()
if chain == 0:
    os.setsid()
    start = time.time()
    while time.time() - start < 6:
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError:
            pass
    open("chain-survived", "w").write(str(os.getpid()))
    os._exit(0)
time.sleep(0.5)`, 0)
		contains(t, "the probes", r.stdout, "the cgroup files -> refused FileNotFoundError", "a signal to the host -> refused PermissionError",
			"su 1 False", "capabilities 0", "shm full 28")
		if escaped(r.stdout + r.stderr) {
			t.Errorf("a process got through:\n%s%s", r.stdout, r.stderr)
		}
		sb.ok("stop", "--session", "ph")
		time.Sleep(7 * time.Second)
		if data, err := os.ReadFile(filepath.Join(sb.ws, "chain-survived")); err == nil {
			t.Errorf("a chain of processes outran the session's end: %s", data)
		}
	})
}

// TestSandboxJailShellTmpfsBounded: a shell() command's /tmp and /dev are
// tmpfs mounts bubblewrap made at its default size, half the machine's
// memory each, and the command may write both: pages of the machine's
// memory that no address-space cap counts (the child's own /dev/shm is
// capped for that reason), so a few commands filling them run the
// machine out of memory. Each tmpfs a command can write holds no more
// than the session's memory cap (here the least one may set).
func TestSandboxJailShellTmpfsBounded(t *testing.T) {
	t.Parallel()
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		writeUserConfig(t, sb, "[sandbox]\nmemory_mb = 2048\n")
		r := sb.block("t", `r = shell("""python3 -c '
import os
for d in ("/tmp", "/dev/shm", "/dev"):
    s = os.statvfs(d)
    print(d, s.f_blocks * s.f_frsize >> 20, os.access(d, os.W_OK))
'; stat -f -c "%n %T" /tmp /dev/shm /dev""", wait=60)
print(r.out, r.err)
print("cap", session.access["memory_mb"])`, 0)
		cap := -1
		kinds := map[string]string{}
		sizes := map[string]int{}
		for _, line := range strings.Split(r.stdout, "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "cap":
				cap, _ = strconv.Atoi(f[1])
			case len(f) == 2:
				kinds[f[0]] = f[1]
			case len(f) == 3 && f[2] == "True":
				sizes[f[0]], _ = strconv.Atoi(f[1])
			}
		}
		if cap <= 0 || len(kinds) != 3 {
			t.Fatalf("the command's mounts were not read:\n%s%s", r.stdout, r.stderr)
		}
		for d, mib := range sizes {
			if kinds[d] == "tmpfs" && mib > cap {
				t.Errorf("a shell() command may write %d MiB of the machine's memory at %s (a tmpfs), past the session's memory cap of %d MiB", mib, d, cap)
			}
		}
	})
}
