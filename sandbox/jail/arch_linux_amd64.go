package jail

import "golang.org/x/sys/unix"

// auditArch is the architecture a syscall must come from; x32 marks the
// x32 ABI's syscall numbers, refused as a whole.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)

// forkCalls start a process on this architecture besides clone.
var forkCalls = []uint32{unix.SYS_FORK, unix.SYS_VFORK}

// archPrivileged are this architecture's own administrative calls.
var archPrivileged = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM}
