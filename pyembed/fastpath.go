package pyembed

/*
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
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

// racyWindow: a path changed this recently may change again within the
// same timestamp tick without its signature changing, so a plan that
// observed it is not saved (the next run saves one).
const racyWindow = 2 * time.Second

// maxPlans bounds the plans kept; the oldest go first.
const maxPlans = 64

// errRacy says a plan observed a path that changed too recently.
var errRacy = errors.New("an observed path changed too recently")

// SavePlan writes p where fastpath.c finds it, under stateDir
// (~/.vis/python). A plan whose observed paths changed too recently is not
// written.
func SavePlan(stateDir string, p Plan) error {
	var b planWriter
	b.field(C.VIS_FASTPATH_MAGIC)
	b.field(p.Cwd)
	b.field(fmt.Sprintf("%016x", envHash(fnv.New64a(), p.Environ).Sum64()))
	b.list(p.Args)
	b.field(strconv.Itoa(p.Need))
	b.field(flag(p.Exact))
	if err := b.observe(p.Observed); err != nil {
		return err
	}
	b.field(p.Library)
	b.field(strconv.Itoa(p.Minor))
	b.field(p.Home)
	b.field(p.Startup)
	b.field(p.Argv0)
	b.list(p.ArgvHead)
	b.field(p.Exec)
	b.field(flag(p.DropEmpty))
	b.list(p.AddEnv)
	return b.save(filepath.Join(stateDir, C.VIS_FASTPATH_DIR), planName(p.Cwd, p.Environ, p.Args))
}

// planWriter builds a plan of NUL-terminated fields (plan.h).
type planWriter struct{ bytes.Buffer }

func (b *planWriter) field(s string) {
	b.WriteString(s)
	b.WriteByte(0)
}

// list is a count, then the items.
func (b *planWriter) list(l []string) {
	b.field(strconv.Itoa(len(l)))
	for _, s := range l {
		b.field(s)
	}
}

// observe adds the observed paths with their signatures; errRacy when one
// changed too recently for its signature to tell a later change.
func (b *planWriter) observe(paths []string) error {
	b.field(strconv.Itoa(len(paths)))
	recent := time.Now().Add(-racyWindow)
	for _, path := range paths {
		sig, changed := statSignature(path)
		if changed.After(recent) {
			return errRacy
		}
		b.field(path)
		b.field(sig)
	}
	return nil
}

// save ends the plan and writes it as name in dir, keeping the newest
// maxPlans there.
func (b *planWriter) save(dir, name string) error {
	b.field("end")
	if err := atomicfile.Write(filepath.Join(dir, name), b.Bytes()); err != nil {
		return fmt.Errorf("save the run's plan: %w", err)
	}
	prunePlans(dir)
	return nil
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
	envHash(h, environ)
	h.Write([]byte{1})
	h.Write(append([]byte(first), 0))
	h.Write(append([]byte(sub), 0))
	return fmt.Sprintf("%016x", h.Sum64())
}

// envHash adds each variable, ended by a NUL, to h (fastpath.c's
// env_hash).
func envHash(h hash.Hash64, environ []string) hash.Hash64 {
	for _, kv := range environ {
		h.Write(append([]byte(kv), 0))
	}
	return h
}

// statSignature is fastpath.c's stat_signature, and the latest change time
// it covers.
func statSignature(path string) (sig string, changed time.Time) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return "-", time.Time{}
	}
	format := func(st *syscall.Stat_t) string {
		t := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
		if m := time.Unix(st.Mtim.Sec, st.Mtim.Nsec); m.After(t) {
			t = m
		}
		if t.After(changed) {
			changed = t
		}
		return fmt.Sprintf("%d:%d:%o:%d:%d.%09d:%d.%09d", st.Dev, st.Ino, st.Mode, st.Size,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	sig = format(&st)
	if st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		return sig, changed
	}
	if err := syscall.Stat(path, &st); err != nil {
		return sig + ">-", changed
	}
	return sig + ">" + format(&st), changed
}

// prunePlans keeps the newest maxPlans plans in dir.
func prunePlans(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= maxPlans {
		return
	}
	type plan struct {
		name string
		mod  time.Time
	}
	var plans []plan
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			plans = append(plans, plan{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(plans, func(a, b plan) int { return b.mod.Compare(a.mod) })
	for _, p := range plans[min(maxPlans, len(plans)):] {
		os.Remove(filepath.Join(dir, p.name))
	}
}
