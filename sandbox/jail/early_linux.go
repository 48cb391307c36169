package jail

// #cgo CFLAGS: -Wall -Wextra
// int vis_jail_net_ns_errno(void);
import "C"

import (
	"errors"
	"syscall"
)

// EarlyFlag, among the arguments of `vis-agent sandbox child`, makes a C
// constructor (early_linux.c) drop the capability bounding set and set
// no_new_privs before the Go runtime starts any thread. A host passes it
// to a child whose Policy has DropPrivileges; Apply then finds both done
// on every thread and skips the per-thread calls.
const EarlyFlag = "--drop-privileges"

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
