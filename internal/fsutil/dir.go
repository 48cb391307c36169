package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is a folder held open by a descriptor. The commands a user runs in a
// workspace a session has shaped (check --fix, repair, attachment get,
// export, import) open and replace files through one: by a name relative
// to the descriptor, following no symlink on the way, and in the folder
// the descriptor holds whatever is renamed meanwhile. So a symlink the
// session left, or a folder it swaps between a check and a use, never
// leads such a command out of the folder, and a FIFO never blocks it.
type Dir struct {
	f *os.File // O_PATH
}

// OpenDir holds the folder at path open. Symlinks on path are followed:
// the caller's own path (the working folder, a record's folder).
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path)}, nil
}

// Stat is the status of the folder held (not of what its path names now).
func (d *Dir) Stat() (fs.FileInfo, error) { return d.f.Stat() }

// Close lets the folder go.
func (d *Dir) Close() error { return d.f.Close() }

// Fd is the folder's descriptor, for the *at system calls.
func (d *Dir) Fd() int { return int(d.f.Fd()) }

// Path is where the folder is now (the kernel's name for the descriptor),
// or the path it was opened by when the kernel cannot say: what a message
// names as the real place of a file written in it.
func (d *Dir) Path() string {
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(d.Fd())); err == nil && filepath.IsAbs(p) {
		return p
	}
	return d.f.Name()
}

// ErrSymlink is a path with a symbolic link on it, where none is followed.
var ErrSymlink = errors.New("a symbolic link, which vis-agent does not follow here")

// Open opens rel (a relative, clean path) beneath d with flags, following
// no symlink on the way or at its end (openat2 RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS; kernels before 5.6 walk rel a name at a time).
func (d *Dir) Open(rel string, flags int) (*os.File, error) {
	fd, err := OpenBeneath(d.Fd(), rel, flags)
	if err != nil {
		return nil, pathError("open", rel, err)
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// OpenDir holds the folder rel beneath d open, as Open finds it.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	f, err := d.Open(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return &Dir{f: f}, nil
}

// OpenRegular opens rel beneath d for reading when it is a regular file:
// as Open finds it, without waiting on a FIFO or a device (O_NONBLOCK,
// then fstat).
func (d *Dir) OpenRegular(rel string) (*os.File, error) {
	f, err := d.Open(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return regularOnly(f, rel)
}

// Lstat is the status of name, an entry of d (a symlink itself, not what
// it points to); fs.ErrNotExist when there is none.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if strings.Contains(name, "/") {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: errors.New("not a name in the folder")}
	}
	fd, err := unix.Openat(d.Fd(), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Stat()
}

// OpenFolder holds open the folder a user named by path, from the working
// folder wd (or absolute): wd itself, a folder inside wd found beneath it
// and one outside from /, in both cases following no symlink on the way
// or at the end. A workspace's links are the session's to plant: a
// command the user runs there must not follow them out.
func OpenFolder(wd, path string) (*Dir, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(wd, abs)
	}
	if !filepath.IsAbs(abs) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("the working folder is unknown")}
	}
	abs = filepath.Clean(abs)
	if rel, err := filepath.Rel(wd, abs); err == nil && filepath.IsLocal(rel) {
		root, err := OpenDir(wd)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		return root.OpenDir(rel)
	}
	fd, err := OpenNoSymlinks(abs, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	return &Dir{f: os.NewFile(uintptr(fd), abs)}, nil
}

// OpenParent holds open the folder of the file a user named by path (as
// OpenFolder finds it) and returns the file's name in it. The file itself
// is left to the caller (Dir.OpenRegular, an Lstat, a write in the
// folder), which follows no symlink at it either.
func OpenParent(wd, path string) (*Dir, string, error) {
	abs := filepath.Clean(filepath.Join(wd, path))
	if filepath.IsAbs(path) {
		abs = filepath.Clean(path)
	}
	dir, name := filepath.Split(abs)
	if name == "" || name == "." || name == ".." {
		return nil, "", &fs.PathError{Op: "open", Path: path, Err: errors.New("not a file")}
	}
	d, err := OpenFolder(wd, dir)
	if err != nil {
		return nil, "", err
	}
	return d, name, nil
}

// OpenBeneath opens rel (a relative, clean path) below the folder dirfd
// with flags, following no symlink on the way or at its end: the
// descriptor, and the kernel's error as it is (ELOOP at a symlink). Dir
// and the host's tools share it.
func OpenBeneath(dirfd int, rel string, flags int) (int, error) {
	if rel == "" || filepath.IsAbs(rel) || rel != filepath.Clean(rel) || !filepath.IsLocal(rel) {
		return -1, errors.New("not a path inside the folder")
	}
	// No O_NOFOLLOW: RESOLVE_NO_SYMLINKS refuses a symlink at the end too
	// (ELOOP), where O_PATH|O_NOFOLLOW would open the link itself.
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dirfd, rel, how)
	if errors.Is(err, unix.ENOSYS) {
		return openEach(dirfd, strings.Split(rel, "/"), flags)
	}
	return fd, err
}

// OpenNoSymlinks opens the absolute path abs with flags, following no
// symlink on the way (kernels before 5.6 walk it a name at a time from
// /): the descriptor, and the kernel's error as it is.
func OpenNoSymlinks(abs string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, abs, how)
	if !errors.Is(err, unix.ENOSYS) {
		return fd, err
	}
	if abs == "/" {
		return unix.Open("/", flags|unix.O_CLOEXEC, 0)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	return openEach(root, strings.Split(strings.TrimPrefix(abs, "/"), "/"), flags)
}

// openEach opens names below dirfd one at a time, none a symlink: the
// folders on the way, then the last with flags.
func openEach(dirfd int, names []string, flags int) (int, error) {
	fd := dirfd
	for i, name := range names {
		f := unix.O_PATH | unix.O_DIRECTORY
		if i == len(names)-1 {
			f = flags
		}
		next, err := unix.Openat(fd, name, f|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		var st unix.Stat_t
		if errors.Is(err, unix.ENOTDIR) && unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP // O_PATH|O_NOFOLLOW found the link, not a folder
		}
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

// pathError is err about path, ELOOP (a symlink where none is followed)
// said as ErrSymlink.
func pathError(op, path string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		err = ErrSymlink
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// regularOnly is f when it is a regular file; else f is closed and the
// error says what it is.
func regularOnly(f *os.File, path string) (*os.File, error) {
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file (%s)", typeName(st.Mode()))}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// typeName says what kind of file mode is, in words.
func typeName(mode fs.FileMode) string {
	switch mode.Type() {
	case fs.ModeDir:
		return "a folder"
	case fs.ModeNamedPipe:
		return "a named pipe"
	case fs.ModeSocket:
		return "a socket"
	case fs.ModeSymlink:
		return "a symbolic link"
	case fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return "a device"
	}
	return mode.Type().String()
}
