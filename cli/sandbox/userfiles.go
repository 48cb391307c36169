package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vis-agent/vis-agent/cli/cmdutil"
	"github.com/vis-agent/vis-agent/internal/atomicfile"
	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// The files a command reads or writes for the user (check, repair and
// run's FILE, import's archive, attachment get's and export's output) are
// often in a workspace whose session's code wrote anything it liked there:
// symlinks to the user's files, FIFOs, folders swapped in a loop. Every
// such file goes through these helpers: its folder held open with nothing
// followed on the way (fsutil.OpenParent), the file itself opened beneath
// it only when regular (never waiting on a FIFO), and written beside its
// name through the same descriptor and renamed there, never re-resolved
// by path.

// namedFile is a regular file the user named, open for reading, with its
// folder held open to write it back through.
type namedFile struct {
	dir  *fsutil.Dir
	name string // in dir
	f    *os.File
}

func (n namedFile) Close() {
	n.f.Close()
	n.dir.Close()
}

// openNamed opens the regular file path names from the working folder.
// Errors name path as the user wrote it.
func openNamed(s cmdutil.Streams, path string) (namedFile, error) {
	dir, name, err := fsutil.OpenParent(s.Dir, path)
	if err != nil {
		return namedFile{}, fmt.Errorf("cannot read %s: %w", path, fsutil.Cause(err))
	}
	f, err := dir.OpenRegular(name)
	if err != nil {
		dir.Close()
		return namedFile{}, fmt.Errorf("cannot read %s: %w", path, fsutil.Cause(err))
	}
	return namedFile{dir: dir, name: name, f: f}, nil
}

// readNamed reads the regular file path names, of at most max bytes; the
// file stays open (to be written back through) until the caller closes
// it.
func readNamed(s cmdutil.Streams, path string, max int64) (namedFile, []byte, error) {
	n, err := openNamed(s, path)
	if err != nil {
		return n, nil, err
	}
	data, err := fsutil.ReadMax(n.f, path, max)
	if err != nil {
		n.Close()
		if errors.Is(err, fsutil.ErrTooLarge) {
			return n, nil, fmt.Errorf("cannot read %s: over %d MiB", path, max>>20)
		}
		return n, nil, fmt.Errorf("cannot read %s: %w", path, fsutil.Cause(err))
	}
	return n, data, nil
}

// writeOut writes r to the file dest names from the working folder, whole
// or not at all (writeIn), and returns where it went and its size.
func writeOut(s cmdutil.Streams, dest string, r io.Reader, overwrite bool) (string, int64, error) {
	dir, name, err := fsutil.OpenParent(s.Dir, dest)
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", dest, fsutil.Cause(err))
	}
	defer dir.Close()
	return writeIn(dir, name, dest, r, overwrite)
}

// writeIn writes r to name in dir (shown as the user named it), whole or
// not at all, and returns the file's real path, for the "wrote" line, and
// its size.
// Without overwrite an existing name is refused, also one made meanwhile.
//
// A symlink at name is refused, with --force too, not replaced: it is what
// a session leaves to redirect a write out of the workspace (notes.pth
// pointing into the user's site-packages), and replacing it would undo a
// link the user may have made on purpose without a word; the message says
// to remove it or write elsewhere. A symlink put there after this check
// is replaced by the rename (never followed): the write stays in dir.
func writeIn(dir *fsutil.Dir, name, shown string, r io.Reader, overwrite bool) (string, int64, error) {
	exists := fmt.Errorf("%s exists: give --force to overwrite it, or -o FILE", shown)
	switch info, err := dir.Lstat(name); {
	case err == nil && info.Mode()&fs.ModeSymlink != 0:
		return "", 0, fmt.Errorf("%s is a symbolic link, which vis-agent neither follows nor replaces: remove it, or give -o FILE", shown)
	case err == nil && info.IsDir():
		return "", 0, fmt.Errorf("%s is a folder: give -o FILE", shown)
	case err == nil && !overwrite:
		return "", 0, exists
	}
	n, err := atomicfile.WriteIn(dir, name, r, 0o644, overwrite)
	if errors.Is(err, fs.ErrExist) {
		return "", 0, exists
	}
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", shown, err)
	}
	return filepath.Join(dir.Path(), name), n, nil
}
