package jail

// This file builds early_linux.c: a C constructor that, for a child given
// protocol.DropPrivilegesFlag (a host passes it to a child whose policy
// has the jail), drops the capability bounding set and sets no_new_privs
// before the Go runtime starts any thread; Apply then finds both done on
// every thread and skips the per-thread calls.

// #cgo CFLAGS: -Wall -Wextra
import "C"
