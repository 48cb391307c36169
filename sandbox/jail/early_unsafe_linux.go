package jail

// This file builds early_linux.c: a C constructor that, for a child given
// protocol.DropPrivilegesFlag (a host passes it to a child whose policy
// has the jail), drops the capability bounding set and sets no_new_privs
// before the Go runtime starts any thread; Apply then finds both done on
// every thread and skips the per-thread calls. For protocol.NetworkFlag or
// NetworkEnv it also makes the process's network namespace.

// #cgo CFLAGS: -Wall -Wextra
// int vis_jail_net_ns_errno(void);
import "C"

import (
	"errors"
	"syscall"
)

// NetworkNamespaceErr says why the C constructor could not make the
// process's network namespace; nil when it did or was not asked.
func NetworkNamespaceErr() error {
	switch e := int(C.vis_jail_net_ns_errno()); e {
	case 0, -1:
		return nil
	default:
		return errors.New(syscall.Errno(e).Error())
	}
}
