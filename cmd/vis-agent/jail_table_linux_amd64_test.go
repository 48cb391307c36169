package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/testing/testwheel"
)

// docTable is the rows of the table that follows `<!-- table: name -->`
// in a Markdown page, up to `<!-- end -->`, without its header and
// rule: each row its cells, trimmed.
func docTable(t *testing.T, page, name string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(page, "<!-- table: "+name+" -->")
	body, _, ok2 := strings.Cut(rest, "<!-- end -->")
	if !ok || !ok2 {
		t.Fatalf("no table %q in the page", name)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n")[2:] {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

// nsFiles are the namespace rows' files in /proc/PID/ns.
var nsFiles = map[string]string{"mount": "mnt", "ipc": "ipc", "uts": "uts", "cgroup": "cgroup", "pid": "pid", "net": "net"}

// syscallProbes are the calls of docs/jail.md's system call table, each
// with arguments that reach past the jail where the call is allowed:
// OTHER is another process (the session's host), KEY a System V key.
var syscallProbes = map[string]struct {
	nr   uintptr
	args string
}{
	"shmget": {unix.SYS_SHMGET, "KEY, 4096, 0o1600"}, "shmat": {unix.SYS_SHMAT, "0, 0, 0"},
	"shmctl": {unix.SYS_SHMCTL, "0, 2, 0"}, "semget": {unix.SYS_SEMGET, "KEY, 1, 0o1600"},
	"semop": {unix.SYS_SEMOP, "0, 0, 0"}, "semctl": {unix.SYS_SEMCTL, "0, 0, 2, 0"},
	"msgget": {unix.SYS_MSGGET, "KEY, 0o1600"}, "msgsnd": {unix.SYS_MSGSND, "0, 0, 0, 0"},
	"msgrcv": {unix.SYS_MSGRCV, "0, 0, 0, 0, 0"}, "msgctl": {unix.SYS_MSGCTL, "0, 2, 0"},
	"fork": {unix.SYS_FORK, ""}, "clone": {unix.SYS_CLONE, "17, 0, 0, 0, 0"},
	"clone3": {unix.SYS_CLONE3, "0, 0"},
	"mount":  {unix.SYS_MOUNT, "b'none', b'/tmp', b'tmpfs', 0, 0"}, "umount2": {unix.SYS_UMOUNT2, "b'/proc', 2"},
	"pivot_root": {unix.SYS_PIVOT_ROOT, "b'.', b'.'"}, "chroot": {unix.SYS_CHROOT, "b'.'"},
	"open_tree": {unix.SYS_OPEN_TREE, "-100, b'/', 1"}, "move_mount": {unix.SYS_MOVE_MOUNT, "-1, b'', -100, b'/tmp', 4"},
	"fsopen": {unix.SYS_FSOPEN, "b'tmpfs', 0"}, "fsmount": {unix.SYS_FSMOUNT, "-1, 0, 0"},
	"mount_setattr": {unix.SYS_MOUNT_SETATTR, "-100, b'/', 0, 0, 0"},
	"unshare":       {unix.SYS_UNSHARE, "0x08000000"}, "setns": {unix.SYS_SETNS, "-1, 0"},
	"ptrace": {unix.SYS_PTRACE, "16, OTHER, 0, 0"}, "process_vm_readv": {unix.SYS_PROCESS_VM_READV, "OTHER, 0, 0, 0, 0, 0"},
	"process_vm_writev": {unix.SYS_PROCESS_VM_WRITEV, "OTHER, 0, 0, 0, 0, 0"}, "pidfd_getfd": {unix.SYS_PIDFD_GETFD, "-1, 0, 0"},
	"io_uring_setup": {unix.SYS_IO_URING_SETUP, "8, 0"},
	"bpf":            {unix.SYS_BPF, "0, 0, 0"}, "perf_event_open": {unix.SYS_PERF_EVENT_OPEN, "0, 0, -1, -1, 0"},
	"userfaultfd": {unix.SYS_USERFAULTFD, "0"}, "keyctl": {unix.SYS_KEYCTL, "0, -3, 0"},
	"add_key": {unix.SYS_ADD_KEY, "b'user', b'x', b'y', 1, -3"}, "open_by_handle_at": {unix.SYS_OPEN_BY_HANDLE_AT, "-100, 0, 0"},
	"init_module": {unix.SYS_INIT_MODULE, "0, 0, b''"}, "kexec_load": {unix.SYS_KEXEC_LOAD, "0, 0, 0, 0"},
	"swapon": {unix.SYS_SWAPON, "b'/nowhere', 0"}, "reboot": {unix.SYS_REBOOT, "0, 0, 0, 0"},
	"acct": {unix.SYS_ACCT, "0"}, "syslog": {unix.SYS_SYSLOG, "10, 0, 0"},
	"kcmp": {unix.SYS_KCMP, "OTHER, os.getpid(), 0, 0, 0"}, "process_madvise": {unix.SYS_PROCESS_MADVISE, "-1, 0, 0, 0, 0"},
	"prlimit64": {unix.SYS_PRLIMIT64, "OTHER, 4, 0, 0"}, "setpriority": {unix.SYS_SETPRIORITY, "0, OTHER, 0"},
	"sched_setaffinity": {unix.SYS_SCHED_SETAFFINITY, "OTHER, 0, 0"}, "sched_setscheduler": {unix.SYS_SCHED_SETSCHEDULER, "OTHER, 0, 0"},
	"ioprio_set": {unix.SYS_IOPRIO_SET, "1, OTHER, 0"}, "kill": {unix.SYS_KILL, "OTHER, 0"},
	"socket (unix)": {unix.SYS_SOCKET, "1, 1, 0"}, "socket (netlink)": {unix.SYS_SOCKET, "16, 3, 0"},
}

// TestJailTable: docs/jail.md's namespace and system call tables hold for
// a jailed session of the test-only build without the audit hook, on the
// oldest and newest CPython: each namespace the child and a shell()
// command have is their own or the machine's as the table says (the
// network's with the network off and with an allow list), and each call
// the table names gets the errno its row gives the child. Every call of
// the table has a probe here, and every probe a row.
func TestJailTable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "jail.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	nsRows, callRows := docTable(t, page, "namespaces"), docTable(t, page, "syscalls")
	wheels := testwheel.Wheelhouse(t)
	var calls []tableCall
	named := map[string]bool{}
	backticked := regexp.MustCompile("`([a-z_0-9]+)`( \\((unix|netlink)\\))?")
	for _, row := range callRows {
		for _, m := range backticked.FindAllStringSubmatch(row[0], -1) {
			name := m[1]
			if m[3] != "" {
				name += " (" + m[3] + ")"
			}
			if _, ok := syscallProbes[name]; !ok {
				t.Errorf("docs/jail.md names %s, which the test has no probe for", name)
				continue
			}
			named[name] = true
			want := strings.TrimRight(strings.Fields(row[1])[0], ":,")
			calls = append(calls, tableCall{name, want})
		}
	}
	for name := range syscallProbes {
		if !named[name] {
			t.Errorf("the probe of %s has no row in docs/jail.md", name)
		}
	}
	for _, py := range oldestAndNewest(t) {
		t.Run(py.Name, func(t *testing.T) {
			t.Parallel()
			tableHolds(t, hookSandbox(t, py, false), wheels, nsRows, calls)
		})
	}
}

// tableCall is a call of the system call table and what the child gets.
type tableCall struct{ name, want string }

// tableHolds runs TestJailTable's checks in sb, a sandbox of the build
// without the hook.
func tableHolds(t *testing.T, sb *sandbox, wheels string, nsRows [][]string, calls []tableCall) {
	sb.installShared(wheels, "cffi")
	// Namespaces, in sessions with the network off and with an allow
	// list, for the child and for a command.
	sessions := map[string][]string{"off": {"--no-network"}, "allow": {"--allow-host", "example.invalid"}}
	for _, row := range nsRows {
		ns, setting, _ := strings.Cut(row[0], ", ")
		file, ok := nsFiles[ns]
		if !ok {
			t.Errorf("docs/jail.md: a namespace the test does not know: %q", row[0])
			continue
		}
		session := "off"
		if setting == "allow list" {
			session = "allow"
		}
		mine, err := os.Readlink("/proc/self/ns/" + file)
		if err != nil {
			t.Fatal(err)
		}
		r := sb.block(session, fmt.Sprintf(`import os
print("child", os.readlink("/proc/self/ns/%s"))
print("command", shell("readlink /proc/self/ns/%s").wait()["out"].strip())`, file, file), 0, sessions[session]...)
		for i, who := range []string{"child", "command"} {
			own := !strings.Contains(r.stdout, who+" "+mine+"\n")
			if !strings.Contains(r.stdout, who+" "+file+":[") {
				t.Errorf("%s: the %s's namespace is not shown:\n%s%s", row[0], who, r.stdout, r.stderr)
				continue
			}
			if want := strings.HasPrefix(row[i+1], "own"); own != want {
				t.Errorf("%s of the %s: own %v, docs/jail.md says %q (the test's %s):\n%s", row[0], who, own, row[i+1], mine, r.stdout)
			}
		}
	}
	// System calls, through cffi (ctypes imports in no jailed
	// session), against the session's host.
	var probes []string
	sort.Slice(calls, func(i, j int) bool { return calls[i].name < calls[j].name })
	for _, c := range calls {
		p := syscallProbes[c.name]
		probes = append(probes, fmt.Sprintf("(%q, %d, [%s])", c.name, p.nr, p.args))
	}
	code := fmt.Sprintf(`import os, errno
from cffi import FFI
ffi = FFI()
ffi.cdef("long syscall(long number, ...);")
libc = ffi.dlopen(None)
OTHER, KEY = os.getppid(), 0x5f3a
def arg(a):
    return ffi.new("char[]", a) if isinstance(a, bytes) else ffi.cast("long", a)
for name, nr, args in [%s]:
    r = libc.syscall(ffi.cast("long", nr), *[arg(a) for a in args])
    if r == 0 and name in ("fork", "clone"):
        os._exit(0)
    print("call", name, "allowed" if r >= 0 else errno.errorcode.get(ffi.errno, str(ffi.errno)))
`, strings.Join(probes, ", "))
	r := sb.block("off", code, 0, sessions["off"]...)
	for _, c := range calls {
		if !strings.Contains(r.stdout, "call "+c.name+" "+c.want+"\n") {
			t.Errorf("%s in the child: docs/jail.md says %s:\n%s%s", c.name, c.want, r.stdout, r.stderr)
		}
	}
}
