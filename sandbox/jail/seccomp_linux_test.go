package jail

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// decide runs the assembled filter on one syscall in x/net/bpf's VM. The
// VM loads words big-endian where the kernel loads them native-endian,
// so the words are written big-endian here.
func decide(t *testing.T, p Policy, denyConnect bool, arch, nr uint32, arg0 uint32) uint32 {
	t.Helper()
	raw, err := filter(p, denyConnect)
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
	binary.BigEndian.PutUint32(data[offArg0:], arg0)
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func TestFilterDecisions(t *testing.T) {
	session := Policy{NoNetwork: true, NoNewProcesses: true, DropPrivileges: true}
	noNet := NoNetwork()
	for _, c := range []struct {
		name        string
		p           Policy
		denyConnect bool
		arch, nr    uint32
		arg0        uint32
		want        uint32
	}{
		{"read", session, false, auditArch, unix.SYS_READ, 0, retAllow},
		{"unix socket", noNet, false, auditArch, unix.SYS_SOCKET, unix.AF_UNIX, retAllow},
		{"inet socket", noNet, false, auditArch, unix.SYS_SOCKET, unix.AF_INET, retEPERM},
		{"inet6 socket", noNet, false, auditArch, unix.SYS_SOCKET, unix.AF_INET6, retEPERM},
		{"netlink socket", noNet, false, auditArch, unix.SYS_SOCKET, unix.AF_NETLINK, retEPERM},
		{"inet socket, network on", Policy{DropPrivileges: true}, false, auditArch, unix.SYS_SOCKET, unix.AF_INET, retAllow},
		{"io_uring", noNet, false, auditArch, unix.SYS_IO_URING_SETUP, 0, retEPERM},
		{"ptrace", noNet, false, auditArch, unix.SYS_PTRACE, 0, retEPERM},
		{"mount, --no-network", noNet, false, auditArch, unix.SYS_MOUNT, 0, retAllow},
		{"mount, session", session, false, auditArch, unix.SYS_MOUNT, 0, retEPERM},
		{"chroot, session", session, false, auditArch, unix.SYS_CHROOT, 0, retEPERM},
		{"thread", session, false, auditArch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, retAllow},
		{"process", session, false, auditArch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_VFORK, retEPERM},
		{"process, --no-network", noNet, false, auditArch, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_VFORK, retAllow},
		{"clone3", session, false, auditArch, unix.SYS_CLONE3, 0, retENOSYS},
		{"connect", session, false, auditArch, unix.SYS_CONNECT, 0, retAllow},
		{"connect refused", session, true, auditArch, unix.SYS_CONNECT, 0, retEPERM},
		{"another architecture", noNet, false, unix.AUDIT_ARCH_I386, 359, unix.AF_INET, retENOSYS},
	} {
		if got := decide(t, c.p, c.denyConnect, c.arch, c.nr, c.arg0); got != c.want {
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
	var st Status
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
