package protocol

import "encoding/json"

// The command lines of a session's processes. C constructors read them
// before the Go runtime starts (sandbox/host/early_linux.c starts a host's
// first child from --dir and --policy, sandbox/jail/early_linux.c drops
// privileges for DropPrivilegesFlag, pyembed/shim.c prefetches libpython
// for a child), so they are built here and nowhere else, and
// internal/earlyargv's test feeds what these functions build to the C
// matchers: a change on one side fails there.

// DropPrivilegesFlag, among a child's arguments, makes the jail's C
// constructor drop the capability bounding set and set no_new_privs before
// Go starts a thread; a host passes it to a child whose policy has the
// jail.
const DropPrivilegesFlag = "--drop-privileges"

// HostArgs is the command line, after the executable, of the host of the
// session in folder dir (`sandbox host --dir DIR [--policy JSON]`). The
// policy's JSON starts with "jail": the host's C constructor reads only
// that prefix to know whether the early child drops privileges.
func HostArgs(dir string, policy *Policy) []string {
	args := []string{"sandbox", "host", "--dir", dir}
	if policy != nil {
		// A Policy is plain values: marshalling it cannot fail.
		pj, _ := json.Marshal(policy)
		args = append(args, "--policy", string(pj))
	}
	return args
}

// ChildArgs is the command line, after the executable, of an interpreter
// child of the session in folder dir (`sandbox child --dir DIR
// [--drop-privileges]`).
func ChildArgs(dir string, dropPrivileges bool) []string {
	args := []string{"sandbox", "child", "--dir", dir}
	if dropPrivileges {
		args = append(args, DropPrivilegesFlag)
	}
	return args
}

// File descriptors a child inherits from its host (0-2 are /dev/null and
// pipes to the host). sandbox/host/early_linux.h spells them for C.
const (
	LinkFD   = 3 // the socketpair end carrying this protocol
	StacksFD = 4 // where faulthandler writes every thread's stack on SIGUSR1
	// CallsFD is the socketpair end of the host calls (_vis_host), which
	// pyembed's shim owns.
	CallsFD = 5
)
