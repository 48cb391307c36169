package jail

import "golang.org/x/sys/unix"

// auditArch is the architecture a syscall must come from; arm64 has no
// second syscall ABI to refuse.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)

// forkCalls: arm64 starts every process with clone or clone3.
var forkCalls []uint32

// archPrivileged: arm64 has no port I/O calls.
var archPrivileged []uint32
