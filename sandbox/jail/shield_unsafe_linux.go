package jail

// #include <stdlib.h>
// int vis_jail_mount_ns_errno(void);
import "C"

import (
	"errors"
	"syscall"
)

// mountNamespace reports whether this process has a mount namespace of
// its own, made by the C constructor (early_linux.c) before any thread.
func mountNamespace() error {
	switch e := int(C.vis_jail_mount_ns_errno()); e {
	case 0:
		return nil
	case -1:
		return errors.New("it was not started as a jailed child")
	default:
		return syscall.Errno(e)
	}
}

// ownNamespaces reports whether the C constructor made this process's
// mount, IPC and UTS namespaces (one unshare).
func ownNamespaces() bool { return mountNamespace() == nil }

// errNoNamespace: Apply goes on without the tree when the shield
// protects nothing inside the roots, and says what is missing.
var errNoNamespace = errors.New("no mount namespace")
