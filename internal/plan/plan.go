// Package plan writes the plans of the fast paths that run before the Go
// runtime starts, and holds the C that reads them (plan.h, plan.c): a plan
// is a file of NUL-terminated fields that Go saves for a command line, and
// that a C constructor acts on when the same command line runs again and
// none of the paths the decision observed has changed. pyembed's
// fastpath.c replays `vis-agent python` runs; sandbox/client/runpath
// carries a warm `sandbox run` block to its session's host.
package plan

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
	"syscall"
	"time"

	"github.com/vis-agent/vis-agent/internal/atomicfile"
)

// racyWindow: a path changed this recently may change again within the
// same timestamp tick without its signature changing, so a plan that
// observed it is not saved (the next run saves one).
const racyWindow = 2 * time.Second

// maxPlans bounds the plans kept in a folder; the oldest go first.
const maxPlans = 64

// errRacy says a plan observed a path that changed too recently.
var errRacy = errors.New("an observed path changed too recently")

// Writer builds a plan of NUL-terminated fields (plan.h).
type Writer struct{ bytes.Buffer }

// Field adds one field.
func (b *Writer) Field(s string) {
	b.WriteString(s)
	b.WriteByte(0)
}

// List adds a count, then the items.
func (b *Writer) List(l []string) {
	b.Field(strconv.Itoa(len(l)))
	for _, s := range l {
		b.Field(s)
	}
}

// Environ adds the hash of environ that plan.c's vis_plan_env_hash
// computes, in hex: a plan keeps no value of the environment (which may be
// secrets).
func (b *Writer) Environ(environ []string) {
	b.Field(fmt.Sprintf("%016x", EnvHash(fnv.New64a(), environ).Sum64()))
}

// Observe adds the observed paths with their signatures; an error when one
// changed too recently for its signature to tell a later change.
func (b *Writer) Observe(paths []string) error {
	b.Field(strconv.Itoa(len(paths)))
	recent := time.Now().Add(-racyWindow)
	for _, path := range paths {
		sig, changed := statSignature(path)
		if changed.After(recent) {
			return errRacy
		}
		b.Field(path)
		b.Field(sig)
	}
	return nil
}

// Save ends the plan and writes it as name in dir, keeping the newest
// maxPlans there.
func (b *Writer) Save(dir, name string) error {
	b.Field("end")
	if err := atomicfile.Write(filepath.Join(dir, name), b.Bytes()); err != nil {
		return fmt.Errorf("save the run's plan: %w", err)
	}
	prune(dir)
	return nil
}

// EnvHash adds each variable, ended by a NUL, to h (plan.c's
// vis_plan_env_hash).
func EnvHash(h hash.Hash64, environ []string) hash.Hash64 {
	for _, kv := range environ {
		h.Write(append([]byte(kv), 0))
	}
	return h
}

// statSignature is plan.c's stat_signature, and the latest change time
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

// prune keeps the newest maxPlans plans in dir.
func prune(dir string) {
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
