// Package fsutil holds the small file-system helpers vis-agent's packages
// share, so messages about files read the same everywhere.
package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// IsFile reports whether path is something other than a folder (following
// links).
func IsFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

// Cause drops the operation and path an *fs.PathError repeats, for
// messages that name the path already: "open /x: permission denied"
// becomes "permission denied".
func Cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// FindUp returns the nearest folder at or above dir holding a file name,
// or "": how a project's pyproject.toml and vis.toml are found.
func FindUp(dir, name string) string {
	for {
		if IsFile(filepath.Join(dir, name)) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
