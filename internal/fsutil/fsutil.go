// Package fsutil holds the small file-system helpers vis-agent's packages
// share, so messages about files read the same everywhere.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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

// MaxConfigBytes bounds a configuration file vis-agent reads (config.toml,
// vis.toml, pyproject.toml, pyvenv.cfg): those of a workspace are written
// by whatever runs there, a jailed session's code included.
const MaxConfigBytes = 4 << 20

// ErrTooLarge is a file ReadRegular found over its limit.
var ErrTooLarge = errors.New("file too large")

// OpenRegular opens path for reading when it is a regular file, without
// following a symlink at its last element and without waiting on a FIFO
// or a device: how an unjailed process opens a file the jailed code may
// have replaced.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regularOnly(f, path)
}

// ReadRegular reads a regular file of at most max bytes (OpenRegular's
// rules); a larger one is ErrTooLarge, read no further than max+1 bytes.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadMax(f, path, max)
}

// ReadMax reads r (the file path names) to its end when that is at most
// max bytes; a longer one is ErrTooLarge, read no further than max+1.
func ReadMax(r io.Reader, path string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)}
	}
	return data, nil
}

// PlainName reports whether s is a plain name: 1 to max letters, digits,
// '.', '_' and '-', not starting with '.' or '-' (never hidden, never read
// as an option, never a path).
func PlainName(s string, max int) bool {
	if s == "" || len(s) > max || s[0] == '-' || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
