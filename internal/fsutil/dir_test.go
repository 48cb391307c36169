package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tree makes, in a new folder (the working folder of the test), a file,
// a folder with a file, a FIFO and symlinks to a folder and a file
// outside, and returns it and the outside folder.
func tree(t *testing.T) (wd, outside string) {
	t.Helper()
	wd, outside = t.TempDir(), t.TempDir()
	for path, text := range map[string]string{"wd/f.py": "x = 1\n", "wd/sub/g.py": "y = 2\n", "out/secret.py": "s = 3\n"} {
		p := filepath.Join(wd, strings.TrimPrefix(path, "wd/"))
		if strings.HasPrefix(path, "out/") {
			p = filepath.Join(outside, strings.TrimPrefix(path, "out/"))
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	syscall.Mkfifo(filepath.Join(wd, "pipe.py"), 0o600)
	os.Symlink(outside, filepath.Join(wd, "out"))
	os.Symlink(filepath.Join(outside, "secret.py"), filepath.Join(wd, "link.py"))
	return wd, outside
}

// TestOpenParentFollowsNoSymlink: a file is found beneath the working
// folder or from /, and a symlink at it or on the way to it is refused
// (ErrSymlink), inside the working folder and outside it alike; a FIFO is
// refused at once.
func TestOpenParentFollowsNoSymlink(t *testing.T) {
	wd, outside := tree(t)
	read := func(path string) (string, error) {
		d, name, err := OpenParent(wd, path)
		if err != nil {
			return "", err
		}
		defer d.Close()
		f, err := d.OpenRegular(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		data, err := ReadMax(f, path, 100)
		return string(data), err
	}
	for _, path := range []string{"f.py", "./sub/../f.py", filepath.Join(wd, "f.py"), filepath.Join(outside, "secret.py")} {
		if _, err := read(path); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	for _, path := range []string{"link.py", "out/secret.py", filepath.Join(wd, "out", "secret.py"), filepath.Join(wd, "link.py")} {
		if got, err := read(path); !errors.Is(err, ErrSymlink) {
			t.Errorf("%s: %q, %v: want ErrSymlink", path, got, err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := read("pipe.py"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the FIFO's open waits")
	}
	if _, _, err := OpenParent(wd, "/"); err == nil {
		t.Error("/ is not a file")
	}
}

// TestOpenFolder: the working folder itself, a folder inside it and one
// outside are held; a symlink to a folder is not followed, and Path names
// where the folder really is.
func TestOpenFolder(t *testing.T) {
	wd, outside := tree(t)
	for path, want := range map[string]string{".": wd, "sub": filepath.Join(wd, "sub"), outside: outside, wd: wd} {
		d, err := OpenFolder(wd, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := d.Path(); got != want {
			t.Errorf("%s: Path %s, want %s", path, got, want)
		}
		d.Close()
	}
	for _, path := range []string{"out", filepath.Join(wd, "out")} {
		if _, err := OpenFolder(wd, path); !errors.Is(err, ErrSymlink) {
			t.Errorf("%s: %v, want ErrSymlink", path, err)
		}
	}
	// A symlinked working folder is the user's own: followed.
	alias := filepath.Join(t.TempDir(), "alias")
	os.Symlink(wd, alias)
	d, err := OpenFolder(alias, "sub")
	if err != nil || d.Path() != filepath.Join(wd, "sub") {
		t.Errorf("from a symlinked working folder: %v", err)
	} else {
		d.Close()
	}
}

// TestOpenEach: the walk of kernels without openat2 refuses a symlink on
// the way and at the end as openat2 does (ELOOP).
func TestOpenEach(t *testing.T) {
	wd, _ := tree(t)
	root, err := OpenDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, c := range []struct {
		names []string
		flags int
		want  error
	}{
		{[]string{"sub", "g.py"}, unix.O_RDONLY, nil},
		{[]string{"out", "secret.py"}, unix.O_RDONLY, unix.ELOOP},
		{[]string{"link.py"}, unix.O_RDONLY, unix.ELOOP},
		{[]string{"out"}, unix.O_PATH | unix.O_DIRECTORY, unix.ELOOP},
	} {
		fd, err := openEach(root.Fd(), c.names, c.flags)
		if err == nil {
			unix.Close(fd)
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%v: %v, want %v", c.names, err, c.want)
		}
	}
}

// TestLstat: Lstat tells a symlink from what it points to, and takes a
// name, not a path.
func TestLstat(t *testing.T) {
	wd, _ := tree(t)
	d, err := OpenDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if info, err := d.Lstat("link.py"); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.py: %v %v", info, err)
	}
	if info, err := d.Lstat("sub"); err != nil || !info.IsDir() {
		t.Errorf("sub: %v %v", info, err)
	}
	if _, err := d.Lstat("missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := d.Lstat("sub/g.py"); err == nil {
		t.Error("a path was taken for a name")
	}
}
