package tools

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// Tree is a folder the host holds open (the workspace), whose files it
// reads and replaces for checks: every path is relative to the held
// descriptor and opened beneath it refusing any symlink on the way
// (fsutil.OpenBeneath), so what the session's code wrote there never
// leads the host out of it, and a swapped folder cannot redirect it.
type Tree struct {
	dir *fsutil.Dir
}

// OpenTree holds the folder at path open.
func OpenTree(path string) (*Tree, error) {
	d, err := fsutil.OpenDir(path)
	if err != nil {
		return nil, err
	}
	return &Tree{dir: d}, nil
}

// Close lets the folder go.
func (t *Tree) Close() error { return t.dir.Close() }

// open opens rel beneath the tree with flags, following no symlink.
func (t *Tree) open(rel string, flags int) (*os.File, error) {
	return openBeneath(t.dir.Fd(), rel, flags)
}

// openBeneath opens rel beneath the folder dirfd with flags, following
// no symlink, the kernel's error named by rel.
func openBeneath(dirfd int, rel string, flags int) (*os.File, error) {
	// O_NOFOLLOW as well: a symlink where a folder is wanted is "not a
	// directory", as the host's tools have always said.
	fd, err := fsutil.OpenBeneath(dirfd, rel, flags|unix.O_NOFOLLOW)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// parent holds open the folder of rel (the tree's own descriptor when rel
// is a name in it) and returns rel's name there, and how to let it go.
func (t *Tree) parent(rel string) (dirfd int, name string, done func(), err error) {
	dir, name := path.Split(rel)
	if dir == "" {
		return t.dir.Fd(), name, func() {}, nil
	}
	d, err := t.open(strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, "", nil, err
	}
	return int(d.Fd()), name, func() { d.Close() }, nil
}

// Stat is the status of rel itself (a symlink is not followed).
func (t *Tree) Stat(rel string) (unix.Stat_t, error) {
	dirfd, name, done, err := t.parent(rel)
	if err != nil {
		return unix.Stat_t{}, err
	}
	defer done()
	return statAt(dirfd, name, rel)
}

// statAt is the status of name in the folder dirfd (a symlink is not
// followed), an error naming rel.
func statAt(dirfd int, name, rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
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
	// One descriptor of the folder for the check and the write: a folder
	// swapped between them cannot take the write elsewhere.
	dirfd, name, done, err := t.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	now, err := statAt(dirfd, name, rel)
	if err != nil {
		return err
	}
	if now.Ino != read.Ino || now.Dev != read.Dev || now.Size != read.Size || now.Mtim != read.Mtim {
		return fmt.Errorf("%s changed since it was read", rel)
	}
	return replaceFile(dirfd, name, content, now)
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
