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

// seccomp_data offsets (linux/seccomp.h): the syscall number, the audit
// architecture, then six 64-bit arguments; the low half of an argument
// comes first on the little-endian architectures this builds for.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// needsSeccomp says whether p asks for anything the filter enforces.
func needsSeccomp(p Policy) bool { return p.NoNetwork || p.NoNewProcesses || p.DropPrivileges }

// filter assembles the seccomp program for p. Unknown architectures and
// x32 get ENOSYS for every call; refused calls get EPERM, so a program sees
// "Operation not permitted"; clone3 gets ENOSYS under NoNewProcesses
// (its flags are behind a pointer a filter cannot read), so libc falls
// back to clone, whose flags it can.
// denyConnect refuses connect(2) whatever the socket.
func filter(p Policy, denyConnect bool) ([]bpf.RawInstruction, error) {
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
	if p.NoNetwork || p.DropPrivileges {
		denied = append(denied, reachCalls...)
	}
	if p.DropPrivileges {
		denied = append(denied, privilegedCalls...)
		denied = append(denied, archPrivileged...)
	}
	if denyConnect {
		denied = append(denied, unix.SYS_CONNECT)
	}
	if p.NoNewProcesses {
		denied = append(denied, forkCalls...)
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
	if p.NoNetwork {
		// socket(family, ...): AF_UNIX only. The family is an int, so its
		// low half is all the kernel reads.
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_SOCKET, SkipFalse: 4},
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow})
	}
	if p.NoNewProcesses {
		// clone(flags, ...): threads (CLONE_THREAD) only.
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: 4},
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM},
			bpf.RetConstant{Val: retAllow})
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
	}
	return raw, nil
}
