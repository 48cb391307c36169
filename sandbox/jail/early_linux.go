package jail

// #cgo CFLAGS: -Wall -Wextra
import "C"

// EarlyFlag, among the arguments of `vis-agent sandbox child`, makes a C
// constructor (early_linux.c) drop the capability bounding set and set
// no_new_privs before the Go runtime starts any thread. A host passes it
// to a child whose Policy has DropPrivileges; Apply then finds both done
// on every thread and skips the per-thread calls.
const EarlyFlag = "--drop-privileges"
