// Package earlyargv hands tests the C functions with which the constructors
// that run before main (sandbox/host/early_linux.c, sandbox/jail/early_linux.c,
// pyembed/shim.c and fastpath.c) read their command line, so that a test
// can feed them the command lines Go builds (sandbox/protocol's HostArgs
// and ChildArgs) and compare the C spelling of the child's descriptors with
// protocol's. It includes the headers only: none of the constructors runs
// in a binary that imports it.
package earlyargv

/*
#cgo CFLAGS: -Wall -Wextra -I${SRCDIR}/../..
#include <stdlib.h>
#include "sandbox/host/early_argv.h"
#include "sandbox/jail/early_argv.h"
#include "pyembed/argv.h"

// own_network_wanted is the jail constructor's reading of its command line
// and of its environment variable, as early_linux.c calls it.
static int own_network_wanted(int argc, char **argv) {
	return vis_own_network_wanted(argc, argv, getenv(VIS_OWN_NETWORK_ENV));
}
*/
import "C"

import "unsafe"

// The descriptors a child inherits, and a host's ready pipe, as the host's
// constructor spells them.
const (
	HostReadyFD = C.VIS_HOST_READY_FD
	LinkFD      = C.VIS_LINK_FD
	StacksFD    = C.VIS_STACKS_FD
	CallsFD     = C.VIS_CALLS_FD
)

// cArgv is args as a C argv (NULL-terminated); free releases it.
func cArgv(args []string) (argc C.int, argv **C.char, free func()) {
	ptrs := C.malloc(C.size_t(len(args)+1) * C.size_t(unsafe.Sizeof((*C.char)(nil))))
	s := unsafe.Slice((**C.char)(ptrs), len(args)+1)
	for i, a := range args {
		s[i] = C.CString(a)
	}
	s[len(args)] = nil
	return C.int(len(args)), (**C.char)(ptrs), func() {
		for _, p := range s[:len(args)] {
			C.free(unsafe.Pointer(p))
		}
		C.free(ptrs)
	}
}

// test runs the C test f on argv.
func test(argv []string, f func(C.int, **C.char) C.int) bool {
	argc, a, free := cArgv(argv)
	defer free()
	return f(argc, a) != 0
}

// SandboxCommand is the host constructors' test for `vis-agent sandbox
// NAME ...` (argv[0] included).
func SandboxCommand(argv []string, name string) bool {
	argc, a, free := cArgv(argv)
	defer free()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.vis_sandbox_command(argc, a, cname) != 0
}

// Arg is the value of the option name as the host's constructor reads it.
func Arg(argv []string, name string) (string, bool) {
	argc, a, free := cArgv(argv)
	defer free()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	v := C.vis_arg(argc, a, cname)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// PolicyJailed is the host constructor's reading of a --policy value.
func PolicyJailed(policy string) bool {
	p := C.CString(policy)
	defer C.free(unsafe.Pointer(p))
	return C.vis_policy_jailed(p) != 0
}

// PolicyProxied is the host constructor's reading of a --policy value:
// an allow list.
func PolicyProxied(policy string) bool {
	p := C.CString(policy)
	defer C.free(unsafe.Pointer(p))
	return C.vis_policy_proxied(p) != 0
}

// ChildArgs is the command line the host's constructor starts its early
// child with.
func ChildArgs(argv0, dir string, dropPrivileges, ownNetwork bool) []string {
	a0, d := C.CString(argv0), C.CString(dir)
	defer C.free(unsafe.Pointer(a0))
	defer C.free(unsafe.Pointer(d))
	var args [8]*C.char
	C.vis_child_args(&args[0], a0, d, cBool(dropPrivileges), cBool(ownNetwork))
	var out []string
	for _, p := range args {
		if p == nil {
			break
		}
		out = append(out, C.GoString(p))
	}
	return out
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// DropPrivilegesWanted is the jail constructor's test of its command line.
func DropPrivilegesWanted(argv []string) bool {
	return test(argv, func(argc C.int, a **C.char) C.int { return C.vis_drop_privileges_wanted(argc, a) })
}

// OwnNetworkWanted is the jail constructor's test for a network namespace
// of the process's own: its command line and this process's environment.
func OwnNetworkWanted(argv []string) bool {
	return test(argv, func(argc C.int, a **C.char) C.int { return C.own_network_wanted(argc, a) })
}

// PythonCommand is pyembed's test for `vis-agent python ...`.
func PythonCommand(argv []string) bool {
	return test(argv, func(argc C.int, a **C.char) C.int { return C.vis_python_command(argc, a) })
}

// LoadsPython is the prefetch's test for a command line that loads
// libpython at once.
func LoadsPython(argv []string) bool {
	return test(argv, func(argc C.int, a **C.char) C.int { return C.vis_loads_python(argc, a) })
}

// LoadsNoLibrary is the prefetch's guess that a python command line only
// execs uv.
func LoadsNoLibrary(argv []string) bool {
	return test(argv, func(argc C.int, a **C.char) C.int { return C.vis_loads_no_library(argc, a) })
}
