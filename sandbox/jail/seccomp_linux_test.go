package jail

import (
	"encoding/binary"
	"testing"

	"github.com/vis-agent/vis-agent/sandbox/protocol"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// decide runs the assembled filter on one syscall in x/net/bpf's VM. The
// VM loads words big-endian where the kernel loads them native-endian,
// so the words are written big-endian here (the low halves of the
// arguments, all the filter reads).
func decide(t *testing.T, p Policy, noUnix bool, arch, nr uint32, args ...uint32) uint32 {
	t.Helper()
	raw, err := filter(p, noUnix)
	if err != nil {
		t.Fatal(err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter has instructions x/net/bpf cannot decode")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], nr)
	binary.BigEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[argOffset(uint32(i)):], a)
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func TestFilterDecisions(t *testing.T) {
	session := Session(nil, nil, false, 0)
	online := Session(nil, nil, true, 0)
	noNet := NoNetwork()
	const self, other = 0, 4242
	for _, c := range []struct {
		name     string
		p        Policy
		noUnix   bool
		arch, nr uint32
		args     []uint32
		want     uint32
	}{
		{"read", session, false, auditArch, unix.SYS_READ, nil, retAllow},
		{"unix socket", noNet, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_UNIX}, retAllow},
		{"inet socket", noNet, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_INET}, retEPERM},
		{"inet6 socket", noNet, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_INET6}, retEPERM},
		{"netlink socket", noNet, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_NETLINK}, retEPERM},
		{"inet socket, network on", Policy{DropPrivileges: true}, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_INET}, retAllow},
		{"unix socket, no unix", session, true, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_UNIX}, retEPERM},
		{"unix socket, no unix, network on", online, true, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_UNIX}, retEPERM},
		{"inet socket, no unix, network on", online, true, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_INET}, retAllow},
		{"netlink socket, no unix, network on", online, true, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_NETLINK}, retAllow},
		{"vsock socket, no unix, network on", online, true, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_VSOCK}, retEPERM},
		{"unix socket, network on", online, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_UNIX}, retAllow},
		{"vsock socket, network on", online, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_VSOCK}, retEPERM},
		{"inet socket, network on, unix allowed", online, false, auditArch, unix.SYS_SOCKET, []uint32{unix.AF_INET}, retAllow},
		{"stream socketpair, no unix", session, true, auditArch, unix.SYS_SOCKETPAIR, []uint32{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, retAllow},
		{"datagram socketpair, no unix", session, true, auditArch, unix.SYS_SOCKETPAIR, []uint32{unix.AF_UNIX, unix.SOCK_DGRAM}, retEPERM},
		{"seqpacket socketpair, no unix", session, true, auditArch, unix.SYS_SOCKETPAIR, []uint32{unix.AF_UNIX, unix.SOCK_SEQPACKET | unix.SOCK_NONBLOCK}, retEPERM},
		{"datagram socketpair", session, false, auditArch, unix.SYS_SOCKETPAIR, []uint32{unix.AF_UNIX, unix.SOCK_DGRAM}, retAllow},
		{"connect", session, true, auditArch, unix.SYS_CONNECT, nil, retAllow},
		{"io_uring", noNet, false, auditArch, unix.SYS_IO_URING_SETUP, nil, retEPERM},
		{"ptrace", noNet, false, auditArch, unix.SYS_PTRACE, nil, retEPERM},
		{"shmget, session", session, false, auditArch, unix.SYS_SHMGET, nil, retEPERM},
		{"shmat, session", session, false, auditArch, unix.SYS_SHMAT, nil, retEPERM},
		{"msgrcv, session", session, false, auditArch, unix.SYS_MSGRCV, nil, retEPERM},
		{"semop, session", session, false, auditArch, unix.SYS_SEMOP, nil, retEPERM},
		{"shmget, command", Command(nil, nil, true, 0), false, auditArch, unix.SYS_SHMGET, nil, retEPERM},
		{"shmget, --no-network", noNet, false, auditArch, unix.SYS_SHMGET, nil, retAllow},
		{"mount, --no-network", noNet, false, auditArch, unix.SYS_MOUNT, nil, retAllow},
		{"mount, session", session, false, auditArch, unix.SYS_MOUNT, nil, retEPERM},
		{"chroot, session", session, false, auditArch, unix.SYS_CHROOT, nil, retEPERM},
		{"thread", session, false, auditArch, unix.SYS_CLONE, []uint32{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, retAllow},
		{"process", session, false, auditArch, unix.SYS_CLONE, []uint32{unix.CLONE_VM | unix.CLONE_VFORK}, retEPERM},
		{"process, --no-network", noNet, false, auditArch, unix.SYS_CLONE, []uint32{unix.CLONE_VM | unix.CLONE_VFORK}, retAllow},
		{"process, no privileges", Policy{DropPrivileges: true}, false, auditArch, unix.SYS_CLONE, []uint32{uint32(unix.SIGCHLD)}, retAllow},
		{"user namespace, no privileges", Policy{DropPrivileges: true}, false, auditArch, unix.SYS_CLONE, []uint32{unix.CLONE_NEWUSER | uint32(unix.SIGCHLD)}, retEPERM},
		{"net namespace thread, session", session, false, auditArch, unix.SYS_CLONE, []uint32{unix.CLONE_THREAD | unix.CLONE_NEWNET}, retEPERM},
		{"clone3", session, false, auditArch, unix.SYS_CLONE3, nil, retENOSYS},
		{"clone3, no privileges", Policy{DropPrivileges: true}, false, auditArch, unix.SYS_CLONE3, nil, retENOSYS},
		{"clone3, --no-network", noNet, false, auditArch, unix.SYS_CLONE3, nil, retAllow},
		{"prlimit of itself", session, false, auditArch, unix.SYS_PRLIMIT64, []uint32{self, unix.RLIMIT_AS}, retAllow},
		{"prlimit of another", session, false, auditArch, unix.SYS_PRLIMIT64, []uint32{other, unix.RLIMIT_AS}, retEPERM},
		{"prlimit of another, --no-network", noNet, false, auditArch, unix.SYS_PRLIMIT64, []uint32{other}, retAllow},
		{"setpriority of itself", session, false, auditArch, unix.SYS_SETPRIORITY, []uint32{unix.PRIO_PROCESS, self, 5}, retAllow},
		{"setpriority of another", session, false, auditArch, unix.SYS_SETPRIORITY, []uint32{unix.PRIO_PROCESS, other, 5}, retEPERM},
		{"setpriority of its group", session, false, auditArch, unix.SYS_SETPRIORITY, []uint32{unix.PRIO_PGRP, self, 5}, retEPERM},
		{"setpriority of its user", session, false, auditArch, unix.SYS_SETPRIORITY, []uint32{unix.PRIO_USER, self, 5}, retEPERM},
		{"sched_setaffinity of itself", session, false, auditArch, unix.SYS_SCHED_SETAFFINITY, []uint32{self}, retAllow},
		{"sched_setaffinity of another", session, false, auditArch, unix.SYS_SCHED_SETAFFINITY, []uint32{other}, retEPERM},
		{"sched_setattr of another", session, false, auditArch, unix.SYS_SCHED_SETATTR, []uint32{other}, retEPERM},
		{"ioprio_set of itself", session, false, auditArch, unix.SYS_IOPRIO_SET, []uint32{ioprioWhoProcess, self}, retAllow},
		{"ioprio_set of its user", session, false, auditArch, unix.SYS_IOPRIO_SET, []uint32{3, self}, retEPERM},
		{"move_pages of another", session, false, auditArch, unix.SYS_MOVE_PAGES, []uint32{other}, retEPERM},
		{"kcmp", session, false, auditArch, unix.SYS_KCMP, []uint32{self, self}, retEPERM},
		{"process_madvise", session, false, auditArch, unix.SYS_PROCESS_MADVISE, nil, retEPERM},
		{"another architecture", noNet, false, unix.AUDIT_ARCH_I386, 359, []uint32{unix.AF_INET}, retENOSYS},
	} {
		if got := decide(t, c.p, c.noUnix, c.arch, c.nr, c.args...); got != c.want {
			t.Errorf("%s: filter returns %#x, want %#x", c.name, got, c.want)
		}
	}
	if x32Bit != 0 {
		if got := decide(t, noNet, false, auditArch, x32Bit|unix.SYS_SOCKET, unix.AF_INET); got != retENOSYS {
			t.Errorf("x32 socket: filter returns %#x, want ENOSYS", got)
		}
	}
}

// TestMissingLandlock: a kernel without Landlock leaves the file, TCP and
// scope layers to say what is missing instead of failing.
func TestMissingLandlock(t *testing.T) {
	var st protocol.KernelStatus
	if err := applyLandlock(Policy{ConfineFiles: true, NoNetwork: true}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Files || st.TCP || len(st.Missing) != 1 {
		t.Fatalf("status %+v", st)
	}
	if got := st.String(); got != "kernel layer: none; missing: "+st.Missing[0] {
		t.Errorf("String() = %q", got)
	}
}

// TestFilterProxied: a proxied network makes inet and inet6 stream and
// datagram sockets only (unix ones where allowed), and no namespace.
func TestFilterProxied(t *testing.T) {
	p := Policy{ProxyPort: 3128}
	for _, c := range []struct {
		family, typ uint32
		noUnix      bool
		want        uint32
	}{
		{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, false, retAllow},
		{unix.AF_INET6, unix.SOCK_DGRAM, false, retAllow},
		{unix.AF_INET, unix.SOCK_RAW, false, retEPERM},
		{unix.AF_INET6, unix.SOCK_SEQPACKET, false, retEPERM},
		{unix.AF_UNIX, unix.SOCK_DGRAM, false, retAllow},
		{unix.AF_UNIX, unix.SOCK_STREAM, true, retEPERM},
		{unix.AF_NETLINK, unix.SOCK_RAW, false, retEPERM},
		{unix.AF_PACKET, unix.SOCK_DGRAM, false, retEPERM},
		{unix.AF_VSOCK, unix.SOCK_STREAM, false, retEPERM},
	} {
		if got := decide(t, p, c.noUnix, auditArch, unix.SYS_SOCKET, c.family, c.typ); got != c.want {
			t.Errorf("socket(%d, %#x) noUnix=%v: %#x, want %#x", c.family, c.typ, c.noUnix, got, c.want)
		}
	}
	for _, nr := range []uint32{unix.SYS_SETNS, unix.SYS_UNSHARE, unix.SYS_PTRACE} {
		if got := decide(t, p, false, auditArch, nr); got != retEPERM {
			t.Errorf("syscall %d: %#x, want EPERM", nr, got)
		}
	}
	if got := decide(t, p, false, auditArch, unix.SYS_CLONE, unix.CLONE_NEWNET); got != retEPERM {
		t.Errorf("clone(CLONE_NEWNET): %#x", got)
	}
	if got := decide(t, p, false, auditArch, unix.SYS_CLONE, uint32(unix.SIGCHLD)); got != retAllow {
		t.Errorf("fork: %#x", got)
	}
	if p.NoNetwork = true; decide(t, p, false, auditArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM) != retEPERM {
		t.Error("NoNetwork wins over a proxy port")
	}
}
