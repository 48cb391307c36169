package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/testing/testenv"
	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// The second red team's kernel holes (issue 31): a jailed child shared the
// user's SysV IPC, UTS and cgroup namespaces, and saw the machine's whole
// tree (stat, inotify) though it could open only its roots. Each attack
// goes through a way to C that the hook does not refuse (cffi, installed
// from the wheelhouse).

// cBackend gives a block libc's calls through cffi, a way to C that the
// audit hook does not refuse (ctypes it does, with the hook and without).
const cBackend = `import os, sys
E = "ESC" + "APED"
from cffi import FFI
ffi = FFI()
ffi.cdef("""int shmget(int key, size_t size, int flags); void *shmat(int id, const void *addr, int flags);
int msgget(int key, int flags); int semget(int key, int n, int flags);
int inotify_init1(int flags); int inotify_add_watch(int fd, const char *path, unsigned int mask);""")
libc = ffi.dlopen(None)
errno = lambda: ffi.errno
`

// TestSandboxJailOwnNamespaces: the child has IPC, UTS, cgroup and mount
// namespaces of its own; a 0600 SysV shared memory segment and a message
// queue of another process of the user are out of its reach, by key and
// by id; and outside its roots nothing exists for it: stat, access and an
// inotify watch of a folder outside find nothing, and /proc shows no
// other process.
func TestSandboxJailOwnNamespaces(t *testing.T) {
	t.Parallel()
	wheels := testwheel.Wheelhouse(t)
	hookModes(t, true, func(t *testing.T, sb *sandbox, hook bool) {
		sb.installShared(wheels, "cffi")
		secret := fmt.Sprintf("SYSV-SECRET-%x", rand.Uint64())
		key := int(rand.Int32N(1<<30) + 1)
		shmID, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
		if err != nil {
			t.Fatalf("a SysV segment of the test's own: %v", err)
		}
		t.Cleanup(func() { unix.SysvShmCtl(shmID, unix.IPC_RMID, nil) })
		mem, err := unix.SysvShmAttach(shmID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.SysvShmDetach(mem)
		copy(mem, secret)
		msgID, _, errno := unix.Syscall(unix.SYS_MSGGET, uintptr(key), unix.IPC_CREAT|unix.IPC_EXCL|0o600, 0)
		if errno != 0 {
			t.Fatalf("a SysV message queue of the test's own: %v", errno)
		}
		t.Cleanup(func() { unix.Syscall(unix.SYS_MSGCTL, msgID, unix.IPC_RMID, 0) })
		sendMessage(t, int(msgID), secret)

		out := t.TempDir()
		testenv.WriteTree(t, out, map[string]string{"secret": escapeSecret})
		code := cBackend + fmt.Sprintf(`KEY, SHMID, MSGID, OUT = %d, %d, %d, %q
for name, call in [("shmget by key", lambda: libc.shmget(KEY, 0, 0)), ("msgget by key", lambda: libc.msgget(KEY, 0)),
                   ("semget by key", lambda: libc.semget(KEY, 0, 0))]:
    r = call()
    print(name, E if r >= 0 else "refused %%d" %% errno())
p = libc.shmat(SHMID, ffi.NULL, 0)
print("shmat by id", "refused %%d" %% errno() if int(ffi.cast("intptr_t", p)) == -1 else E)
fd = libc.inotify_init1(0)
r = libc.inotify_add_watch(fd, OUT.encode(), 0xfff)
print("inotify outside", E if r >= 0 else "refused %%d" %% errno())
for path in (OUT + "/secret", OUT):
    try:
        os.stat(path); print("stat", path, E)
    except OSError as e:
        print("stat outside refused", e.errno)
print("access outside", os.access(OUT + "/secret", os.F_OK))
print("other processes", [p for p in (os.getppid(), 1) if os.path.lexists("/proc/%%d" %% p)], os.path.exists("/proc/self/fd"))
for ns in ("ipc", "uts", "cgroup", "mnt"):
    print("ns", ns, os.readlink("/proc/self/ns/" + ns))
k = session.access["kernel"]
print("only roots", k["only_roots"], "namespaces", " ".join(sorted(k.get("namespaces", []))), "sysv", k["no_sysv_ipc"])
`, key, shmID, msgID, out)
		r := sb.block("ns", code, 0)
		all := r.stdout + r.stderr
		if escaped(all) || strings.Contains(all, secret) || strings.Contains(all, escapeSecret) {
			t.Errorf("the jail let the block reach outside:\n%s", all)
		}
		contains(t, "the block", r.stdout, "shmget by key refused 1", "msgget by key refused 1", "semget by key refused 1",
			"shmat by id refused 1", "inotify outside refused 2", "stat outside refused 2\nstat outside refused 2",
			"access outside False", "other processes [] True", "only roots True namespaces cgroup ipc mount network uts", "sysv True")
		host := sb.record(sb.folder("ns")).HostPID
		for _, ns := range []string{"ipc", "uts", "cgroup", "mnt"} {
			hostNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", host, ns))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(r.stdout, "ns "+ns+" "+hostNS+"\n") || !strings.Contains(r.stdout, "ns "+ns+" ") {
				t.Errorf("the child's %s namespace is the host's (%s):\n%s", ns, hostNS, r.stdout)
			}
		}
		if string(mem[:len(secret)]) != secret {
			t.Errorf("the segment changed: %q", mem[:len(secret)])
		}
		if got := receiveMessage(t, int(msgID)); got != secret {
			t.Errorf("the message queue lost its message: %q", got)
		}
	})
}

// TestSandboxJailSeesTheCPUs: the CPUs' topology is read-only in the jail,
// for the child and its commands (psutil.cpu_count(logical=False), and
// with it mypy and loky, raised without it).
func TestSandboxJailSeesTheCPUs(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skip("this machine has no /sys/devices/system/cpu/online")
	}
	wheels := testwheel.Wheelhouse(t)
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, py)
			sb.installShared(wheels, "psutil")
			r := sb.block("cpu", `import glob, os, psutil
print("psutil", psutil.cpu_count(logical=False) >= 1, psutil.cpu_count() >= 1)
print("online", open("/sys/devices/system/cpu/online").read().strip())
print("cores", len(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/core_cpus_list")) > 0, os.cpu_count() > 0)
print("command", shell("cat /sys/devices/system/cpu/online").wait()["out"].strip())
try:
    open("/sys/devices/system/cpu/online", "w")
except OSError as e:
    print("write refused", type(e).__name__)`, 0)
			online := strings.TrimSpace(string(want))
			contains(t, "the block", r.stdout, "psutil True True", "online "+online+"\n", "cores True True", "command "+online+"\n", "write refused")
		})
	}
}
