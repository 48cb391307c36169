// Package roots decides which folders beyond a session's own its jail
// opens, given that the jailed code can change everything under its
// writable roots (the workspace, the session's state and temp folders,
// the user's --root folders) between two runs: a real folder there can
// become a symlink to anywhere.
//
//   - A root the user gives (--root, --read-only-root, the [sandbox]
//     roots of config.toml) is refused when it lies inside a writable
//     root, as written or through any folder its resolution passes.
//   - An import root a configuration names (python.source_paths, a
//     project's src layout or pytest pythonpath) is resolved once: inside
//     a writable root it is an import path only (the jail reads it
//     already); outside, it becomes a read-only root only when the file
//     naming it lies outside the writable roots too (the user's
//     config.toml, a project above the workspace) and its resolution
//     passes through none of them.
package roots

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// Writable is a folder the jailed code may change, and how to name it in
// a message ("the workspace").
type Writable struct {
	Path string // resolved
	Name string
}

// holding is the first of ws that holds path, or nil.
func holding(path string, ws []Writable) *Writable {
	for i := range ws {
		if realpath.Within(path, ws[i].Path) {
			return &ws[i]
		}
	}
	return nil
}

// reaches is the first of ws that path's resolution passes (or ends in),
// or nil.
func reaches(real string, passed []string, ws []Writable) *Writable {
	for _, p := range append(passed, real) {
		if w := holding(p, ws); w != nil {
			return w
		}
	}
	return nil
}

// ErrMissing is a root that does not exist.
var ErrMissing = errors.New("does not exist")

// CheckUser resolves a root the user gave (absolute) and refuses it when
// it lies inside one of ws, as written or through any folder on the way:
// the jailed code could swap it, or a folder above it, for a symlink
// before the next run resolves it again. It returns the resolved path.
func CheckUser(path string, ws []Writable) (string, error) {
	real, passed, err := realpath.Walk(filepath.Clean(path))
	if err != nil {
		return "", ErrMissing
	}
	if w := reaches(real, passed, ws); w != nil {
		where := real
		if real != filepath.Clean(path) {
			where = fmt.Sprintf("%s (resolved: %s)", path, real)
		}
		return "", fmt.Errorf("%s is inside %s %s, which the jailed code can change (a root there could become a symlink to anywhere before the next run): give a folder outside it", where, w.Name, w.Path)
	}
	return real, nil
}

// Import is what an import root a configuration file names becomes in a
// jailed session: the path to put on sys.path ("" when it is dropped,
// with why) and whether the jail must open it read-only. trusted says the
// file naming it lies outside ws (see Trusted).
func Import(path string, trusted bool, ws []Writable) (importPath string, readOnly bool, why string) {
	real, passed, err := realpath.Walk(filepath.Clean(path))
	if err != nil {
		return "", false, "it does not exist"
	}
	if holding(real, ws) != nil {
		return real, false, "" // the jail reads it already
	}
	if !trusted {
		return "", false, "it is outside the workspace, and a file the jailed code can change names it"
	}
	if w := reaches(real, passed, ws); w != nil {
		return "", false, fmt.Sprintf("it leads out of %s %s through a symlink the jailed code can change", w.Name, w.Path)
	}
	return real, true, ""
}

// Trusted reports whether a configuration file lies outside ws, so that
// the jailed code cannot have written it (or a folder on its way).
func Trusted(file string, ws []Writable) bool {
	real, passed, err := realpath.Walk(filepath.Clean(file))
	return err == nil && reaches(real, passed, ws) == nil
}
