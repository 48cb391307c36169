package jail

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// loadFilter installs the filter on every thread (TSYNC). The calling
// thread must have no_new_privs set.
func loadFilter(raw []bpf.RawInstruction) error {
	insns := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		insns[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return errno
	}
	if r != 0 {
		// TSYNC names the thread it could not synchronise.
		return fmt.Errorf("thread %d cannot take the filter", r)
	}
	return nil
}
