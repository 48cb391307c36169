package jail

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// reachCalls reach past the socket layer or into other processes, which
// would carry the network (or anything else) out of the jail: io_uring
// runs operations seccomp never sees, ptrace and process_vm_* drive
// another process, pidfd_getfd takes its sockets; module loading, kexec
// and bpf change the kernel itself.
var reachCalls = []uint32{
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_BPF, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
}

// privilegedCalls administer the machine: mounts and namespaces, handles
// that bypass paths, keys, swap, reboot. Without capabilities most fail
// anyway; refusing them here also covers a user namespace's capabilities.
var privilegedCalls = []uint32{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_SETNS, unix.SYS_UNSHARE,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_USERFAULTFD, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_SWAPON,
	unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
}

// otherProcessCalls act on another process named by a descriptor
// (process_madvise, process_mrelease) or compare two (kcmp): no jailed
// process needs them.
var otherProcessCalls = []uint32{unix.SYS_KCMP, unix.SYS_PROCESS_MADVISE, unix.SYS_PROCESS_MRELEASE}

// sysvIPCCalls are System V IPC: shared memory, semaphores and message
// queues, named by keys and ids anyone of the namespace can guess. A
// jailed child has an IPC namespace of its own (early_linux.c), so these
// reach nothing of the user's; refusing them too keeps that true where
// the namespace could not be made, and no program the jail runs needs
// them (multiprocessing's locks are POSIX semaphores, in /dev/shm).
var sysvIPCCalls = []uint32{
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMDT, unix.SYS_SHMCTL,
	unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
	unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
}

// argRule lets a call through only when every listed argument has its
// value; any other call of that number is refused.
type argRule struct {
	nr   uint32
	args []argValue
}

type argValue struct{ index, value uint32 }

// ioprioWhoProcess is IOPRIO_WHO_PROCESS (linux/ioprio.h).
const ioprioWhoProcess = 1

// ownProcessRules are the calls that change a process named by its pid
// (or a process group, or a user's processes): only the caller itself
// (pid 0) may be named. The kernel lets a process without capabilities
// change the limits of any process of its user, and the priority,
// scheduling, CPUs, memory placement and I/O priority of one that has no
// more capabilities than it: another session's jailed child, the user's
// own programs. A process's own threads are not named either
// (pthread_setaffinity_np gets EPERM, which libraries tolerate).
var ownProcessRules = []argRule{
	{unix.SYS_PRLIMIT64, []argValue{{0, 0}}},
	{unix.SYS_SETPRIORITY, []argValue{{0, unix.PRIO_PROCESS}, {1, 0}}},
	{unix.SYS_SCHED_SETAFFINITY, []argValue{{0, 0}}},
	{unix.SYS_SCHED_SETPARAM, []argValue{{0, 0}}},
	{unix.SYS_SCHED_SETSCHEDULER, []argValue{{0, 0}}},
	{unix.SYS_SCHED_SETATTR, []argValue{{0, 0}}},
	{unix.SYS_IOPRIO_SET, []argValue{{0, ioprioWhoProcess}, {1, 0}}},
	{unix.SYS_MIGRATE_PAGES, []argValue{{0, 0}}},
	{unix.SYS_MOVE_PAGES, []argValue{{0, 0}}},
	{unix.SYS_GET_ROBUST_LIST, []argValue{{0, 0}}},
}

// namespaceFlags are clone's flags that make a namespace: refused with
// the other ways to make one (unshare, setns), whose capabilities inside
// would reach mounts and the kernel's less-guarded code.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccomp_data offsets (linux/seccomp.h): the syscall number, the audit
// architecture, then six 64-bit arguments; the low half of an argument
// comes first on the little-endian architectures this builds for. Every
// argument checked here is an int (a pid, a family, flags that fit in
// 32 bits), of which the kernel reads the low half only.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

func argOffset(i uint32) uint32 { return offArg0 + 8*i }

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// sockTypeMask is SOCK_TYPE_MASK: the socket type without SOCK_CLOEXEC
// and SOCK_NONBLOCK.
const sockTypeMask = 0xf

// needsSeccomp says whether p asks for anything the filter enforces.
func needsSeccomp(p Policy) bool {
	return p.ConfineFiles || p.NoNetwork || p.NoNewProcesses || p.DropPrivileges || p.NoOtherProcesses || p.NoSysVIPC || proxied(p)
}

// proxied says whether p's network is its host's proxy alone.
func proxied(p Policy) bool { return p.ProxyPort > 0 && !p.NoNetwork }

// filter assembles the seccomp program for p. Unknown architectures and
// x32 get ENOSYS for every call; refused calls get EPERM, so a program sees
// "Operation not permitted"; clone3 gets ENOSYS under NoNewProcesses and
// DropPrivileges (its flags are behind a pointer a filter cannot read), so
// libc falls back to clone, whose flags it can.
//
// noUnix refuses new unix sockets: socket(AF_UNIX, ...), and socketpair
// but of stream sockets. A unix socket reaches any socket file by its
// path (connect, or a datagram's sendmsg to an address, which a datagram
// socketpair can do too) and any abstract name; where Landlock cannot
// confine socket files, that is a way to a local service or to a
// session's own host. A stream socketpair can reach nothing: it is
// connected to its pair for good (connect says EISCONN, sendmsg with an
// address EISCONN too).
func filter(p Policy, noUnix bool) ([]bpf.RawInstruction, error) {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retENOSYS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: retENOSYS})
	}
	var denied []uint32
	if p.NoNetwork || p.DropPrivileges || proxied(p) {
		denied = append(denied, reachCalls...)
	}
	// No namespace: privilegedCalls refuses unshare and setns too.
	noNamespaces := p.DropPrivileges || proxied(p)
	if proxied(p) {
		denied = append(denied, unix.SYS_UNSHARE, unix.SYS_SETNS)
	}
	if p.DropPrivileges {
		denied = append(denied, privilegedCalls...)
		denied = append(denied, archPrivileged...)
	}
	if p.NoOtherProcesses {
		denied = append(denied, otherProcessCalls...)
	}
	if p.NoSysVIPC {
		denied = append(denied, sysvIPCCalls...)
	}
	if p.NoNetwork && noUnix {
		// AF_UNIX was the one family left.
		denied = append(denied, unix.SYS_SOCKET)
	}
	if p.NoNewProcesses {
		denied = append(denied, forkCalls...)
	}
	if p.NoNewProcesses || noNamespaces {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
			bpf.RetConstant{Val: retENOSYS})
	}
	seen := map[uint32]bool{}
	for _, nr := range denied {
		if seen[nr] {
			continue
		}
		seen[nr] = true
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	// What follows looks at arguments: each block starts with the number
	// in the accumulator and returns.
	switch {
	case proxied(p):
		prog = append(prog, proxiedSockets(noUnix)...)
	case p.NoNetwork && !noUnix:
		// socket(family, ...): AF_UNIX only.
		prog = append(prog, onlyArgs(argRule{unix.SYS_SOCKET, []argValue{{0, unix.AF_UNIX}}})...)
	case noUnix && !p.NoNetwork:
		// socket(family, ...): any family but AF_UNIX and AF_VSOCK (the
		// network a user turned on is the machine's; vsock reaches a
		// virtual machine's host, past it).
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 5},
			bpf.LoadAbsolute{Off: argOffset(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_VSOCK, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow})
	case !p.NoNetwork && p.ConfineFiles:
		// The same with unix sockets allowed: any family but AF_VSOCK.
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 4},
			bpf.LoadAbsolute{Off: argOffset(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_VSOCK, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow})
	}
	if noUnix {
		// socketpair(domain, type, ...): stream sockets only.
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKETPAIR, SkipFalse: 5},
			bpf.LoadAbsolute{Off: argOffset(1), Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow})
	}
	if p.NoNewProcesses || noNamespaces {
		// clone(flags, ...): threads (CLONE_THREAD) only under
		// NoNewProcesses; no namespace under DropPrivileges or a proxy.
		block := []bpf.Instruction{bpf.LoadAbsolute{Off: argOffset(0), Size: 4}}
		if p.NoNewProcesses {
			block = append(block,
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipTrue: 1},
				bpf.RetConstant{Val: retEPERM})
		}
		if noNamespaces {
			block = append(block,
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: namespaceFlags, SkipFalse: 1},
				bpf.RetConstant{Val: retEPERM})
		}
		block = append(block, bpf.RetConstant{Val: retAllow})
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: uint8(len(block))})
		prog = append(prog, block...)
	}
	if p.NoOtherProcesses {
		for _, r := range ownProcessRules {
			prog = append(prog, onlyArgs(r)...)
		}
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
	}
	return raw, nil
}

// proxiedSockets is the socket(2) block of a proxied network: inet and
// inet6 sockets of the stream and datagram types (no raw ones, which root
// could open in its namespace), unix ones unless noUnix, nothing else (no
// netlink, packet or vsock: a vsock reaches the hypervisor whatever the
// namespace).
func proxiedSockets(noUnix bool) []bpf.Instruction {
	// The tail, from its end: type checks, then the allow.
	const typeChecks = 6 // load, and, two compares, EPERM, allow
	var families []bpf.Instruction
	if !noUnix {
		// To the allow, past the two inet compares, the EPERM and the
		// type checks but the allow.
		families = append(families, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 3 + typeChecks - 1})
	}
	families = append(families,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: argOffset(1), Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_DGRAM, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow})
	block := append([]bpf.Instruction{bpf.LoadAbsolute{Off: argOffset(0), Size: 4}}, families...)
	return append([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: uint8(len(block))}}, block...)
}

// onlyArgs is the block that lets r's call through only with r's
// argument values: for each one, load it and go to EPERM when it
// differs; then allow.
func onlyArgs(r argRule) []bpf.Instruction {
	n := len(r.args)
	block := []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: uint8(2*n + 2)}}
	for i, a := range r.args {
		block = append(block,
			bpf.LoadAbsolute{Off: argOffset(a.index), Size: 4},
			// To the EPERM after the allow: past the checks left and it.
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.value, SkipFalse: uint8(2*(n-i-1) + 1)})
	}
	return append(block, bpf.RetConstant{Val: retAllow}, bpf.RetConstant{Val: retEPERM})
}
