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

// NetworkFlag, among a child's arguments, and NetworkEnv=1 in the
// environment of any vis-agent command (the program `vis-agent python
// --allow-host` runs, a shell() command without bubblewrap), make the
// jail's C constructor give the process a network namespace of its own,
// with its loopback up and nothing else, before the Go runtime starts a
// thread (a namespace is per thread): the namespace of a proxied network
// (sandbox/jail's Policy.ProxyPort).
const (
	NetworkFlag = "--own-network"
	NetworkEnv  = "VIS_AGENT_OWN_NETWORK"
)

// ChildArgs is the command line, after the executable, of an interpreter
// child of the session in folder dir (`sandbox child --dir DIR
// [--drop-privileges] [--own-network]`): ownNetwork for a proxied network.
func ChildArgs(dir string, dropPrivileges, ownNetwork bool) []string {
	args := []string{"sandbox", "child", "--dir", dir}
	if dropPrivileges {
		args = append(args, DropPrivilegesFlag)
	}
	if ownNetwork {
		args = append(args, NetworkFlag)
	}
	return args
}

// HostReadyFD is the pipe a host inherits from the client that starts it
// (its only descriptor past 2): one line, "ok" or why it could not start.
// sandbox/host/early_argv.h spells it for C, which closes every other.
const HostReadyFD = 3

// File descriptors a child inherits from its host (0-2 are /dev/null and
// pipes to the host). sandbox/host/early_argv.h spells them for C.
const (
	LinkFD   = 3 // the socketpair end carrying this protocol
	StacksFD = 4 // where faulthandler writes every thread's stack on SIGUSR1
	// CallsFD is the socketpair end of the host calls (_vis_host), which
	// pyembed's shim owns.
	CallsFD = 5
)
