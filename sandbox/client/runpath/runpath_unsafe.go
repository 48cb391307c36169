// Package runpath carries a warm `sandbox run -c CODE` to its session
// before the Go runtime starts: runpath.c, a C constructor, is a second
// client of the session's socket (with its JSON in json.c) that sends the
// block with a request Go saved for the same command line, shows the
// host's events as cli's runBlock does, and exits; this file saves that
// request (Save) and tells Go when the constructor looked and could not
// carry the block (Missed). The plans' format is internal/plan's.
package runpath

/*
#cgo CFLAGS: -Wall -Wextra -I${SRCDIR}/../../..
#include "runpath.h"
*/
import "C"

import (
	"fmt"
	"hash/fnv"
	"path/filepath"

	"github.com/vis-agent/vis-agent/internal/plan"
)

// Plan is a warm `sandbox run -c CODE` as runpath.c carries it to the
// session's running host (or a remote session's running multiplexer)
// before the Go runtime starts, when the same command line (up to the
// code) runs again in the same workspace with the same environment and
// none of the observed paths has changed.
type Plan struct {
	// Workspace is the working folder as the kernel names it (getcwd),
	// which is the session's workspace; Environ the process's environment,
	// of which the plan keeps a hash.
	Workspace string
	Environ   []string
	// Args are the arguments between `run` and the code, ending with -c or
	// --code.
	Args []string
	// Observed are the paths the request was decided from (the user's
	// settings, the binary).
	Observed []string
	// Socket and Key are the session's socket and key file, or, for a
	// session on another machine, its multiplexer's (remotemux).
	Socket, Key string
	// Header is a remote session's stream header (remotemux: the first
	// line, without its newline, that names the session there), and URL
	// its --host, which errors name; both empty for a local session.
	Header, URL string
	// Request is the run request's JSON object without its code and
	// client, which runpath.c adds.
	Request []byte
}

// ProtocolVersion and MaxLine (also as text) are what runpath.c speaks
// (runpath.h): runpath_test.go holds them to package protocol's; MuxAck
// is the multiplexer's ack it reads, which cli's tests hold to
// remotemux.Ack.
const (
	ProtocolVersion = C.VIS_RUNPATH_VERSION
	MaxLine         = C.VIS_RUNPATH_MAX_LINE
	MaxLineText     = C.VIS_RUNPATH_MAX_LINE_TEXT
	MuxAck          = C.VIS_RUNPATH_MUX_ACK
)

// Missed reports whether this `sandbox run` looked for a run plan
// and could not carry its block: then it should save its own.
func Missed() bool { return C.vis_runpath_missed() != 0 }

// Save writes p where runpath.c finds it, under stateDir
// (~/.vis/python).
func Save(stateDir string, p Plan) error {
	if len(p.Request) < 2 || p.Request[0] != '{' || p.Request[len(p.Request)-1] != '}' {
		return fmt.Errorf("save the run's plan: the request %q is not a JSON object", p.Request)
	}
	var b plan.Writer
	b.Field(C.VIS_RUNPATH_MAGIC)
	b.Field(p.Workspace)
	b.Environ(p.Environ)
	b.List(p.Args)
	if err := b.Observe(p.Observed); err != nil {
		return err
	}
	b.Field(p.Socket)
	b.Field(p.Key)
	b.Field(p.Header)
	b.Field(p.URL)
	b.Field(string(p.Request[1:]))
	return b.Save(filepath.Join(stateDir, C.VIS_RUNPATH_DIR), planName(p.Workspace, p.Environ, p.Args))
}

// planName is runpath.c's run_name: FNV-1a of the workspace, each
// variable and each argument, each ended by a NUL, with a 2 before the
// arguments.
func planName(workspace string, environ, args []string) string {
	h := fnv.New64a()
	h.Write(append([]byte(workspace), 0))
	plan.EnvHash(h, environ)
	h.Write([]byte{2})
	for _, a := range args {
		h.Write(append([]byte(a), 0))
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
