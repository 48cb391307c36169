package jail

import (
	"fmt"

	"github.com/vis-agent/vis-agent/sandbox/realpath"
	"github.com/vis-agent/vis-agent/sandbox/roots"
)

// SessionRoots makes a jailed session child's roots: the folders its code
// may write (the workspace, the session's state and temp folders, the
// extra roots) and read (what its CPython needs to run, vis-agent's own
// files, the import roots that roots.Import lets through, the extra
// read-only roots, and with the network the files name lookups and TLS
// read). What the jail opens is decided here and nowhere else.
type SessionRoots struct {
	rw       []string
	writable []roots.Writable
	// importRO are the import roots the jail opens read-only.
	importRO []string
	warn     func(string)
}

// NewSessionRoots starts the roots of a session whose code may write
// workspace, state, tmp and the extra roots; warn reports a root left out
// (to the host's log).
func NewSessionRoots(workspace, state, tmp string, extra []string, warn func(string)) *SessionRoots {
	j := &SessionRoots{rw: append([]string{workspace, state, tmp}, extra...), warn: warn}
	for _, r := range j.rw {
		if real, _, err := realpath.Walk(r); err == nil {
			j.writable = append(j.writable, roots.Writable{Path: real, Name: "the writable root"})
		}
	}
	if len(j.writable) > 0 {
		j.writable[0].Name = "the workspace"
	}
	return j
}

// ImportRoots is the python-run planner's hook (pyrun.Context): of the
// import roots a file names, those roots.Import keeps, resolved once; the
// others are left out with a warning in the host's log.
func (j *SessionRoots) ImportRoots(paths []string, from string) []string {
	trusted := from != "" && roots.Trusted(from, j.writable)
	var keep []string
	for _, p := range paths {
		path, readOnly, why := roots.Import(p, trusted, j.writable)
		if path == "" {
			j.warn(fmt.Sprintf("import root %s (from %s) is left out of the jailed session: %s", p, from, why))
			continue
		}
		keep = append(keep, path)
		if readOnly {
			j.importRO = append(j.importRO, path)
		}
	}
	return keep
}

// SessionFiles are what a session child reads besides its writable roots.
type SessionFiles struct {
	// Runtime are the CPython's files: its installation prefix, the
	// folder of its library, its home and executable ("" when none).
	Runtime []string
	// EnvDir is the environment the run uses (a venv), which may be a
	// symlink the jailed code planted.
	EnvDir string
	// Own are vis-agent's: the driver, the start-up module, the session's
	// package layer, the trust variables' files.
	Own []string
	// ReadOnlyRoots are the user's extra read-only roots.
	ReadOnlyRoots []string
	// Network opens what name lookups and TLS read.
	Network bool
}

// Roots are the child's writable and read-only roots, symlinks resolved.
func (j *SessionRoots) Roots(f SessionFiles) (rw, ro []string) {
	for _, r := range f.Runtime {
		if r != "" {
			ro = append(ro, r)
		}
	}
	if f.EnvDir != "" {
		if env, _, why := roots.Import(f.EnvDir, true, j.writable); env != "" {
			ro = append(ro, env)
		} else {
			j.warn(fmt.Sprintf("the environment %s is left out of the jailed session: %s", f.EnvDir, why))
		}
	}
	ro = append(append(append(ro, j.importRO...), f.Own...), f.ReadOnlyRoots...)
	if f.Network {
		ro = append(ro, NetworkEtc...)
	}
	return j.rw, resolved(ro)
}

// resolved are the paths with their symlinks resolved, as the kernel
// sees them (a venv's python is a link into the installation); a path
// that does not exist is dropped.
func resolved(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := realpath.Eval(p); err == nil {
			out = append(out, r)
			if r != p {
				out = append(out, p)
			}
		}
	}
	return out
}
