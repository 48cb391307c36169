package pyembed

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vis-agent/vis-agent/internal/plan"
)

// Plan is a python run as fastpath.c replays it, before the Go runtime
// starts, when the same command line runs again in the same folder with
// the same environment and none of the observed paths has changed.
type Plan struct {
	// Cwd is the working folder as os.Getwd named it, Environ the
	// process's whole environment, which is also the program's: with the
	// first argument after `python` they name the plan's file. The plan
	// keeps only a hash of Environ, whose values may be secrets.
	Cwd     string
	Environ []string
	// Args are the leading arguments after `python` the decision was made
	// from (options, the program selector, a script's or module's name);
	// Need more must follow them (a -c's code), and with Exact none may.
	Args  []string
	Need  int
	Exact bool
	// Observed are the paths the decision read, or whose absence it
	// relied on; a replay needs each to be as it was.
	Observed []string
	// What the run does: load Library (3.Minor) and run CPython's main
	// with Argv0, then ArgvHead for Args, then the arguments that followed
	// them, with Home and Startup (see Library.Main).
	Library  string
	Minor    int
	Home     string
	Startup  string
	Argv0    string
	ArgvHead []string
	// Exec, when set, is a program to exec with the same arguments instead:
	// uv for `vis-agent python uv …`. Its environment is the process's,
	// without the empty variables when DropEmpty, then AddEnv.
	Exec      string
	DropEmpty bool
	AddEnv    []string
}

// ExecEnv is the environment Exec gets from environ.
func (p Plan) ExecEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if _, v, _ := strings.Cut(kv, "="); v != "" || !p.DropEmpty {
			env = append(env, kv)
		}
	}
	return append(env, p.AddEnv...)
}

// FastPathMissed reports whether this `vis-agent python` run looked for a
// plan to replay and found none that holds: then it should save its own.
func FastPathMissed() bool { return C.vis_fastpath_missed() != 0 }

// SavePlan writes p where fastpath.c finds it, under stateDir
// (~/.vis/python). A plan whose observed paths changed too recently is not
// written.
func SavePlan(stateDir string, p Plan) error {
	var b plan.Writer
	b.Field(C.VIS_FASTPATH_MAGIC)
	b.Field(p.Cwd)
	b.Environ(p.Environ)
	b.List(p.Args)
	b.Field(strconv.Itoa(p.Need))
	b.Field(flag(p.Exact))
	if err := b.Observe(p.Observed); err != nil {
		return err
	}
	b.Field(p.Library)
	b.Field(strconv.Itoa(p.Minor))
	b.Field(p.Home)
	b.Field(p.Startup)
	b.Field(p.Argv0)
	b.List(p.ArgvHead)
	b.Field(p.Exec)
	b.Field(flag(p.DropEmpty))
	b.List(p.AddEnv)
	return b.Save(filepath.Join(stateDir, C.VIS_FASTPATH_DIR), planName(p.Cwd, p.Environ, p.Args))
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// planName is fastpath.c's plan_name: FNV-1a of the working folder, each
// variable, the first argument and uv's subcommand, each ended by a NUL,
// with a 1 before the arguments.
func planName(cwd string, environ, args []string) string {
	first, sub := "", ""
	if len(args) > 0 {
		first = args[0]
	}
	if first == "uv" && len(args) > 1 {
		sub = args[1]
	}
	h := fnv.New64a()
	h.Write(append([]byte(cwd), 0))
	plan.EnvHash(h, environ)
	h.Write([]byte{1})
	h.Write(append([]byte(first), 0))
	h.Write(append([]byte(sub), 0))
	return fmt.Sprintf("%016x", h.Sum64())
}
