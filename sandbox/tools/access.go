package tools

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/jail"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// Access is what the session's code may touch. Unconfined (the session's
// --no-jail) lifts every file check and runs commands unconfined.
type Access struct {
	// Workspace is the default working directory and the base of relative
	// paths.
	Workspace string
	// ReadWrite and ReadOnly are absolute roots: files may be read under
	// both and written under ReadWrite only.
	ReadWrite, ReadOnly []string
	// Unconfined turns the jail off: files anywhere, commands unconfined.
	Unconfined bool
	// Network lets commands use the network.
	Network bool
	// Proxy, with Network, is the session's allow list: commands run in
	// a network namespace of their own with a loopback only, where each
	// one's listener for the proxy is made and handed to Proxy.
	Proxy Proxy
	// Hidden are files and folders under the roots that the session's
	// code may not touch (the host's socket, its store): the file tools
	// refuse them, and confined commands find an empty read-only folder
	// or an unreadable file there.
	Hidden []string
	// Shield is what the session's child keeps read-only inside its
	// writable roots ($VIS_HOME, .git) and out of sight (other
	// sessions): the file tools refuse to write the one and to read the
	// other, and confined commands get the same mounts.
	Shield jail.Shield
	// Python is the session's python as confined commands find it first
	// on PATH; its folders are read-only roots (in ReadOnly already).
	Python CommandPython
}

// CommandPython is what a confined command is given of the session's
// python: Bin, the folders put first on PATH (the session's environment's
// python, its package folder's scripts, pip's stand-in); PythonPath, the
// session's package folder, which python imports from.
type CommandPython struct {
	Bin        []string
	PythonPath string
}

// Proxy is the session host's proxy, as commands need it.
type Proxy interface {
	// Port is where the proxy listens in a command's namespace.
	Port() int
	// Serve serves the proxy on a command's listener until the
	// command's namespace is gone.
	Serve(l net.Listener)
}

// resolved is a path checked against an Access: Real is the canonical
// path (no symlink, no ..) every operation uses, Shown is how the caller
// wrote it, for messages.
type resolved struct {
	Real, Shown string
}

// resolve makes path absolute (relative to the workspace), resolves its
// symlinks and .., and checks the result is inside the roots: any root
// for reading, a writable root when write is set.
func (a Access) resolve(path string, write bool) (resolved, error) {
	if path == "" {
		path = "."
	}
	shown := path
	if !filepath.IsAbs(path) {
		if !filepath.IsAbs(a.Workspace) {
			return resolved{}, fmt.Errorf("relative path %s: the session has no absolute workspace (%q)", path, a.Workspace)
		}
		path = a.Workspace + "/" + path // not Join: ".." must meet symlinks first
	}
	real, err := realpath.Resolve(path)
	if err != nil {
		return resolved{}, fmt.Errorf("%s: %w", shown, err)
	}
	r := resolved{Real: real, Shown: shown}
	if a.Unconfined {
		return r, nil
	}
	where := shown
	if real != filepath.Clean(path) || strings.Contains(shown, "..") {
		where = fmt.Sprintf("%s (resolves to %s)", shown, real)
	}
	if under(real, a.Hidden) || a.Shield.Sessions != "" && under(real, []string{a.Shield.Sessions}) && !under(real, a.Shield.Keep()) {
		return resolved{}, failure(errRefused, "hidden from the session: %s", where)
	}
	if write && a.Shield.ReadOnlyAt(real) {
		return resolved{}, failure(errRefused, "read-only to the session: %s (vis-agent's own files, .git and the top of your home folder hold what runs outside the jail)", where)
	}
	if under(real, a.ReadWrite) {
		return r, nil
	}
	if under(real, a.ReadOnly) {
		if write {
			return resolved{}, failure(errRefused, "read-only root: %s (the session may change files only under %s)", where, strings.Join(a.ReadWrite, ", "))
		}
		return r, nil
	}
	return resolved{}, failure(errRefused, "outside the session's roots: %s", where)
}

// under reports whether path is one of roots or inside one; each root is
// made canonical first, so a root given through a symlink still matches.
func under(path string, roots []string) bool {
	for _, root := range roots {
		if !filepath.IsAbs(root) {
			continue
		}
		if real, err := realpath.Resolve(root); err == nil {
			root = real
		}
		if realpath.Within(path, root) {
			return true
		}
	}
	return false
}

// openNoSymlinks opens a canonical path refusing any symlink on the way,
// so a link swapped in after resolve cannot lead outside the roots.
func openNoSymlinks(path string, flags int) (*os.File, error) {
	fd, err := fsutil.OpenNoSymlinks(path, flags)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// open opens real, a canonical path from resolve, beneath the root that
// holds it: the root is held open and real is opened relative to it
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS), so
// whatever the session's code swaps in the meantime (a folder for a
// symlink, a ".." trick), the file opened is below that root. Without the
// jail the root is /.
func (a Access) open(real string, flags int) (*os.File, error) {
	root := a.rootOf(real)
	if root == "" {
		return nil, failure(errRefused, "outside the session's roots: %s", real)
	}
	if root == real {
		return openNoSymlinks(real, flags)
	}
	dir, err := openNoSymlinks(root, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	rel := strings.TrimPrefix(strings.TrimPrefix(real, root), "/")
	f, err := openBeneath(int(dir.Fd()), rel, flags)
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		// Named as the caller knows it, not relative to the root.
		return nil, &os.PathError{Op: "open", Path: real, Err: pe.Err}
	}
	return f, err
}

// rootOf is the innermost root (canonical) holding the canonical path
// real, "/" without the jail, "" when none does.
func (a Access) rootOf(real string) string {
	if a.Unconfined {
		return "/"
	}
	best := ""
	for _, r := range append(append([]string(nil), a.ReadWrite...), a.ReadOnly...) {
		if !filepath.IsAbs(r) {
			continue
		}
		if c, err := realpath.Resolve(r); err == nil {
			r = c
		}
		if realpath.Within(real, r) && len(r) > len(best) {
			best = r
		}
	}
	return best
}
