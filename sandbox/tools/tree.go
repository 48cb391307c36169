package tools

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Tree is a folder the host holds open (the workspace), whose files it
// reads and replaces for checks: every path is relative to the held
// descriptor and opened beneath it refusing any symlink on the way
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so what the session's
// code wrote there never leads the host out of it, and a swapped folder
// cannot redirect it.
type Tree struct {
	dir *os.File
}

// OpenTree holds the folder at path open.
func OpenTree(path string) (*Tree, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &Tree{dir: os.NewFile(uintptr(fd), path)}, nil
}

// Close lets the folder go.
func (t *Tree) Close() error { return t.dir.Close() }

// open opens rel beneath the tree with flags, following no symlink.
// Kernels without openat2 (before 5.6) walk rel a name at a time.
func (t *Tree) open(rel string, flags int) (*os.File, error) {
	if rel == "" || path.IsAbs(rel) || rel != path.Clean(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s: not a path inside the folder", rel)
	}
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(int(t.dir.Fd()), rel, how)
	if errors.Is(err, unix.ENOSYS) {
		fd, err = openEach(int(t.dir.Fd()), rel, flags)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// openEach opens rel below dirfd one name at a time, none a symlink.
func openEach(dirfd int, rel string, flags int) (int, error) {
	names := strings.Split(rel, "/")
	fd := dirfd
	for i, name := range names {
		f := unix.O_PATH | unix.O_DIRECTORY
		if i == len(names)-1 {
			f = flags
		}
		next, err := unix.Openat(fd, name, f|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// Stat is the status of rel itself (a symlink is not followed).
func (t *Tree) Stat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	dir, name := path.Split(rel)
	d := t.dir
	if dir != "" {
		var err error
		if d, err = t.open(strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY); err != nil {
			return st, err
		}
		defer d.Close()
	}
	if err := unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	return st, nil
}

// ReadFile reads the regular file rel, of at most max bytes.
func (t *Tree) ReadFile(rel string, max int64) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := t.open(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, st, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, st, fmt.Errorf("%s: not a regular file", rel)
	}
	if st.Size > max {
		return nil, st, fmt.Errorf("%s: %d bytes, over the %d read for a check", rel, st.Size, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s: grew over the %d bytes read for a check", rel, max)
	}
	return data, st, err
}

// Replace writes content over the file rel (atomically, with its mode and
// owner, as patch does) if rel is still the file whose status read was,
// unchanged since.
func (t *Tree) Replace(rel, content string, read unix.Stat_t) error {
	dirRel, name := path.Split(rel)
	dir := t.dir
	if dirRel != "" {
		var err error
		if dir, err = t.open(strings.TrimSuffix(dirRel, "/"), unix.O_PATH|unix.O_DIRECTORY); err != nil {
			return err
		}
		defer dir.Close()
	}
	var now unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	if now.Ino != read.Ino || now.Dev != read.Dev || now.Size != read.Size || now.Mtim != read.Mtim {
		return fmt.Errorf("%s changed since it was read", rel)
	}
	return replaceFile(dir, name, content, now)
}

// Changed lists the regular files below the tree, as relative paths,
// modified at or after since whose names want keeps, visiting folders
// breadth first and at most maxEntries entries (complete is false when
// it stopped there). Folders skip names are not entered; symlinks are
// not followed.
func (t *Tree) Changed(since time.Time, maxEntries int, want func(rel string) bool, skip func(name string) bool) (files []string, complete bool) {
	queue := []string{"."}
	seen := 0
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		d, err := t.open(rel, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		for {
			entries, err := d.ReadDir(256)
			for _, e := range entries {
				if seen++; seen > maxEntries {
					d.Close()
					return files, false
				}
				child := path.Join(rel, e.Name())
				switch {
				case e.Type().IsDir():
					if !skip(e.Name()) {
						queue = append(queue, child)
					}
				case e.Type().IsRegular() && want(child):
					var st unix.Stat_t
					if unix.Fstatat(int(d.Fd()), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
						!time.Unix(st.Mtim.Unix()).Before(since) {
						files = append(files, child)
					}
				}
			}
			if err != nil || len(entries) == 0 {
				break
			}
		}
		d.Close()
	}
	return files, true
}
