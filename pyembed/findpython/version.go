// Package findpython finds the CPython vis-agent loads, in pure Go: which
// shared library (VIS_PYTHON_NATIVE_PATH, the release bundle, the recorded
// runtime, the machine's python3), which installation it belongs to, and
// its version. Loading it is pyembed's job; this package needs no cgo, so
// the packages that only reason about an installation (packages, the front
// ends) build without it.
package findpython

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// MinVersion is the oldest CPython minor version vis-agent runs.
var MinVersion = Version{3, 10, 0}

// Version is a CPython version number.
type Version struct{ Major, Minor, Micro int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Micro) }

// Short is the major.minor form used in file names (python3.12).
func (v Version) Short() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Micro < w.Micro
}

// ParseVersion reads the leading "X.Y.Z" of a Py_GetVersion string such as
// "3.12.1 (main, ...) [GCC 12.2.0]"; a release suffix like "3.13.0rc1" is
// ignored.
func ParseVersion(s string) (Version, error) {
	head, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	parts := strings.SplitN(head, ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("unrecognised version %q", s)
	}
	var v Version
	var err error
	if v.Major, err = strconv.Atoi(parts[0]); err != nil {
		return Version{}, fmt.Errorf("unrecognised version %q", s)
	}
	if v.Minor, err = strconv.Atoi(parts[1]); err != nil {
		return Version{}, fmt.Errorf("unrecognised version %q", s)
	}
	if len(parts) == 3 {
		digits := strings.IndexFunc(parts[2], func(r rune) bool { return r < '0' || r > '9' })
		if digits < 0 {
			digits = len(parts[2])
		}
		v.Micro, _ = strconv.Atoi(parts[2][:digits])
	}
	return v, nil
}

// LoadError says why a library cannot be used; its message names the path,
// the platform and the problem on one line.
type LoadError struct {
	Path    string
	Problem string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("cannot use libpython %s on %s/%s: %s", e.Path, runtime.GOOS, runtime.GOARCH, e.Problem)
}
