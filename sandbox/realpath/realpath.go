// Package realpath resolves a path the way the kernel would, one element
// at a time, for every check of where a jailed session's path leads: the
// roots the jail opens (sandbox/roots, sandbox/jail's tree and shield),
// the files the tools let a block touch (sandbox/tools), the workspace
// the host scans and a fork copies. One walker, so that each check sees a path the
// way the others do; the jailed code can plant a symlink anywhere under
// its writable roots, so a check that resolved differently (".." taken
// lexically, a link followed once more or once less) would be a way out.
package realpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxLinks bounds the symlinks one resolution follows, as the kernel's 40.
const MaxLinks = 40

// Walk resolves an absolute path that must exist, and returns where it
// really is with every real folder the resolution passed on the way (each
// prefix of the path, and of each symlink's target, once resolved): a
// symlink lies in the folder passed before it, so a writable folder
// there could have planted it.
func Walk(path string) (real string, passed []string, err error) {
	if !filepath.IsAbs(path) {
		return "", nil, fmt.Errorf("%s: not an absolute path", path)
	}
	real, err = walk(path, false, &passed, nil)
	if err != nil {
		return "", nil, err
	}
	return real, passed, nil
}

// Resolve resolves a path that need not exist: from the first element
// that does not, the rest is appended as written (cleaned), so a path not
// made yet is judged by where it would be created. The path is read from
// / whether or not it starts with one; its callers make it absolute
// first.
func Resolve(path string) (string, error) {
	return walk(path, true, nil, nil)
}

// Eval is where path really is, as filepath.EvalSymlinks answers but by
// this package's walker (the kernel's 40 links, ".." from where a link
// led): the path must exist; a relative one is read from the working
// folder.
func Eval(path string) (string, error) {
	switch {
	case path == "":
		return "", &os.PathError{Op: "resolve", Path: path, Err: syscall.ENOENT}
	case !filepath.IsAbs(path):
		// Not filepath.Abs: it cleans, taking "link/.." lexically.
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		path = wd + "/" + path
	}
	return walk(path, false, nil, nil)
}

// Canonical is Eval(path), or path cleaned where it cannot be resolved
// (it does not exist, or a link loops).
func Canonical(path string) string {
	if real, err := Eval(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

// Trace resolves an absolute path as Eval does, and returns every name
// the resolution looked up on the way, each in the real folder holding
// it: the real folders, the symlinks, and the first name missing, where
// the resolution stopped (real is then ""). Whoever can change one of
// these names (make, remove, replace it) changes where the path leads.
func Trace(path string) (real string, names []string) {
	if !filepath.IsAbs(path) {
		return "", nil
	}
	real, err := walk(path, false, nil, &names)
	if err != nil {
		return "", names
	}
	return real, names
}

// walk is Walk, Resolve and Trace: a symlink is replaced by its target
// and a ".." goes up from where the path really is, so "link/.." is
// link's parent, not the folder holding link. missing lets the path end
// in elements that do not exist; passed, when not nil, collects the real
// folders on the way, and names each name looked up.
func walk(path string, missing bool, passed, names *[]string) (string, error) {
	pass := func(dir string) {
		if passed != nil {
			*passed = append(*passed, dir)
		}
	}
	parts := strings.Split(path, "/")
	real, links := "/", 0
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "", ".":
			continue
		case "..":
			real = filepath.Dir(real)
			pass(real)
			continue
		}
		next := filepath.Join(real, parts[i])
		if names != nil {
			*names = append(*names, next)
		}
		st, err := os.Lstat(next)
		if missing && errors.Is(err, os.ErrNotExist) {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			real = next
			pass(real)
			continue
		}
		if links++; links > MaxLinks {
			return "", &os.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			real = "/"
		}
		parts = append(strings.Split(target, "/"), parts[i+1:]...)
		i = -1
	}
	return real, nil
}

// Within reports whether path is root or below it, at a / boundary (a
// root written with a trailing / too).
func Within(path, root string) bool {
	return root == "/" || path == root || strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/")
}
