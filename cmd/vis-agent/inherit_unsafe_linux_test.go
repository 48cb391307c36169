package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// execInheriting gives every catchable signal the disposition mode and
// execs argv. It calls rt_sigaction and rt_sigprocmask itself: os/signal
// never sets SIG_IGN for some signals (SIGPROF, the synchronous ones) nor
// SIG_DFL at all, and blocks nothing.
func execInheriting(mode string, argv []string) error {
	var handler uintptr // SIG_DFL
	var mask uint64     // nothing blocked
	switch mode {
	case inheritIgnored:
		handler = 1 // SIG_IGN
	case inheritDefault:
	case inheritFewFiles:
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return err
		}
		// Setrlimit also stops Go from restoring its own start's limit at
		// the exec below.
		lim.Cur = min(256, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return err
		}
	case inheritBlocked:
		mask = ^uint64(0)
	default:
		return fmt.Errorf("unknown disposition %q", mode)
	}
	// The kernel's struct sigaction: handler, flags, restorer (on the
	// architectures that have one) and mask; all but the handler zero.
	act := [4]uintptr{handler}
	for sig := 1; sig <= 64; sig++ {
		// SIGKILL and SIGSTOP cannot be caught; 32 and 33 are glibc's.
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) || sig == 32 || sig == 33 {
			mask &^= 1 << (sig - 1)
			continue
		}
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("signal %d: %w", sig, errno)
		}
	}
	// The mask is the thread's: the exec must happen on this thread.
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 2 /* SIG_SETMASK */, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0); errno != 0 {
		return fmt.Errorf("signal mask: %w", errno)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, inheritEnv+"=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(argv[0], argv, env)
}
