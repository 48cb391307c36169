// Package audit is the jail's layer inside the interpreter: a CPython audit
// hook written in C (audit.c), its policy in C memory, installed before the
// interpreter starts. It refuses, with a clear Python error, what the jail
// refuses: files outside the roots, new processes, signals to others,
// CPython's test modules, the network, threads past a cap. It is no
// boundary (ctypes or any C extension can undo it); the kernel layer
// (package jail) is, and holds without it.
//
// Its owners are the sandbox child, whose jail puts it in force (roots and
// processes from jail.SessionRoots and protocol.KernelStatus), and
// `vis-agent python --no-network` (pyrun), which pairs it with the jail's
// kernel layer; the loader (pyembed) only has to have loaded libpython,
// whose C API the hook finds in the global namespace.
package audit

/*
#cgo CFLAGS: -Wall -Wextra -I${SRCDIR}/../../..
#include <stdlib.h>
#include "audit.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vis-agent/vis-agent/pyembed/findpython"
)

// Policy is what the C audit hook refuses. The hook runs for every
// audit event CPython raises, from before the first line of Python; its
// policy lives in C memory, out of Python's reach, and is fixed once
// installed.
type Policy struct {
	// Jail confines files to the roots (reads to ReadWrite and ReadOnly,
	// writes to ReadWrite), and refuses new processes, signals to other
	// processes and CPython's test modules.
	Jail bool
	// Processes lets the jail start processes and signal any (the kernel
	// layer holds them: protocol.KernelStatus.Processes).
	Processes bool
	ReadWrite []string
	ReadOnly  []string
	// NoNetwork refuses sockets but AF_UNIX, internet addresses and name
	// lookups, also without the jail.
	NoNetwork bool
	// MaxThreads caps the interpreter's Python threads (a RuntimeError
	// naming the cap), also without the jail; 0 or less: no cap. CPython
	// 3.10 and 3.11 raise no event when a thread starts, so there the cap
	// is not enforced (ThreadCapHeld says so).
	MaxThreads int
	// Name names the policy in every refusal: "the sandbox jail",
	// "vis-agent python --no-network".
	Name string
}

// ThreadCapHeld reports whether CPython version v raises the audit event
// the thread cap needs (3.12+).
func ThreadCapHeld(v findpython.Version) bool {
	return !v.Less(findpython.Version{Major: 3, Minor: 12})
}

// Install installs the hook with policy p, once libpython is loaded
// (pyembed) and before the interpreter starts (Main or Interp); a process
// installs it once. (The test-only build skips it when asked:
// nohook_test_build.go.)
func Install(p Policy) error {
	if p.Name == "" {
		return errors.New("the audit policy needs a name for its refusals")
	}
	if hookSkipped() {
		return nil
	}
	for _, roots := range []struct {
		paths    []string
		writable C.int
	}{{p.ReadWrite, 1}, {p.ReadOnly, 0}} {
		for _, r := range roots.paths {
			cr := C.CString(r)
			msg := C.vis_audit_add_root(cr, roots.writable)
			C.free(unsafe.Pointer(cr))
			if msg != nil {
				return fmt.Errorf("audit hook: %s", C.GoString(msg))
			}
		}
	}
	maxThreads := C.int(-1)
	if p.MaxThreads > 0 {
		maxThreads = C.int(p.MaxThreads)
	}
	network := C.int(1)
	if p.NoNetwork {
		network = 0
	}
	jail := C.int(0)
	if p.Jail {
		jail = 1
	}
	name := C.CString(p.Name)
	defer C.free(unsafe.Pointer(name))
	processes := C.int(0)
	if p.Processes {
		processes = 1
	}
	if msg := C.vis_audit_install(jail, processes, network, maxThreads, name); msg != nil {
		return fmt.Errorf("audit hook: %s", C.GoString(msg))
	}
	return nil
}
