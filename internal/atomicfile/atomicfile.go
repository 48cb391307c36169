// Package atomicfile replaces files so that a concurrent reader sees the
// old content or the new, never a part: vis-agent's records are read by
// every start, and several runs may write them at once; a file a command
// writes for the user (a fixed source, an attachment, an archive) appears
// whole or not at all.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// Write replaces path with data, making its folder if needed.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir, err := fsutil.OpenDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, fsutil.Cause(err))
	}
	defer dir.Close()
	if _, err := WriteIn(dir, filepath.Base(path), bytes.NewReader(data), 0o644, true); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteIn writes what r holds to name in dir, whole or not at all: a new
// file beside it with mode perm (not the umask's), made and renamed
// through dir's descriptor, so no path is resolved again once dir is
// open. With replace, the file takes name's place whatever was there (a
// symlink at name is replaced, never followed); without, it is linked to
// name only when none exists (fs.ErrExist), so a file made meanwhile is
// never replaced. It returns the file's size.
func WriteIn(dir *fsutil.Dir, name string, r io.Reader, perm fs.FileMode, replace bool) (int64, error) {
	dfd := dir.Fd()
	tmp, f, err := create(dfd, name)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
	case replace:
		if err = unix.Renameat(dfd, tmp, dfd, name); err == nil {
			return n, nil
		}
	default:
		err = unix.Linkat(dfd, tmp, dfd, name, 0)
		if errors.Is(err, unix.EEXIST) {
			err = fs.ErrExist
		}
	}
	unix.Unlinkat(dfd, tmp, 0)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// create makes a new file in the folder dfd, named after name: its name
// and the file.
func create(dfd int, name string) (string, *os.File, error) {
	for try := 0; ; try++ {
		tmp := "." + name + "-" + strconv.FormatUint(uint64(rand.Uint32()), 36)
		fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return tmp, os.NewFile(uintptr(fd), tmp), nil
		}
		if !errors.Is(err, unix.EEXIST) || try == 100 {
			return "", nil, fmt.Errorf("a temporary file: %w", err)
		}
	}
}
