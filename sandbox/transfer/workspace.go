package transfer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/vis-agent/vis-agent/internal/fsutil"
	"github.com/vis-agent/vis-agent/sandbox/realpath"
)

// A fork's own workspace (sandbox fork --new-workspace). The source
// workspace is the session's to shape: its symlinks, FIFOs and folders
// swapped for links are hostile, so it is read through fsutil.Dir (no
// symlink followed on the way, regular files only, never a wait). A
// symlink is copied as a link, never followed; what the session's jail
// would not let it read (vis-agent's sandbox folder inside the
// workspace, files the user cannot read, sockets, devices) is not
// copied.

const (
	// maxWorkspaceEntries bounds the entries of a workspace a fork
	// copies (as the disk budget's walk bounds a session's folder).
	maxWorkspaceEntries = 200_000
	// maxWorkspaceDepth bounds how deep the copy goes: one descriptor a
	// level is open during the walk.
	maxWorkspaceDepth = 100
)

// NewWorkspace is the workspace of a fork, made by ForkWorkspace: Path,
// with the copied files staged beside it until Commit puts them there.
// Discard undoes what ForkWorkspace did unless Commit ran.
type NewWorkspace struct {
	Path string // canonical
	// Files and Bytes are the regular files copied; Left counts the
	// entries not copied (unreadable, special files, vis-agent's own).
	Files, Left int
	Bytes       int64
	stage       string // the copy, until Commit
	made        bool   // Path was made here
	committed   bool
}

// ForkWorkspace checks dir (absolute) as the workspace of a fork of a
// session whose workspace is src (canonical): not src nor inside it, and,
// with copy, new or an empty folder. Without copy it makes dir when it
// does not exist; with copy it copies src's files into a folder staged
// beside dir, at most max bytes (the session's disk budget: past it,
// nothing is copied), leaving out hidden (paths in src the
// session's jail does not show).
func ForkWorkspace(src, dir string, copy bool, max int64, hidden []string) (*NewWorkspace, error) {
	parent, err := realpath.Eval(filepath.Dir(dir))
	if err != nil {
		return nil, fmt.Errorf("the new workspace %s: its parent folder: %w", dir, fsutil.Cause(err))
	}
	w := &NewWorkspace{Path: filepath.Join(parent, filepath.Base(dir))}
	st, err := os.Stat(w.Path)
	exists := err == nil
	switch {
	case exists && !st.IsDir():
		return nil, fmt.Errorf("the new workspace %s is not a folder", dir)
	case exists:
		if w.Path, err = realpath.Eval(w.Path); err != nil {
			return nil, fmt.Errorf("the new workspace %s: %w", dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("the new workspace %s: %w", dir, fsutil.Cause(err))
	}
	if realpath.Within(w.Path, src) {
		return nil, fmt.Errorf("the new workspace %s is inside the session's workspace %s: give a folder outside it", dir, src)
	}
	if !copy {
		if !exists {
			if err := os.Mkdir(w.Path, 0o755); err != nil {
				return nil, fmt.Errorf("make the new workspace: %w", err)
			}
			w.made = true
		}
		return w, nil
	}
	if exists {
		if entries, err := os.ReadDir(w.Path); err != nil || len(entries) > 0 {
			return nil, fmt.Errorf("the new workspace %s is not empty: --copy-workspace copies into a new or empty folder", dir)
		}
	}
	real := make([]string, len(hidden))
	for i, h := range hidden {
		real[i] = realpath.Canonical(h)
	}
	if err := w.copyFrom(src, max, real); err != nil {
		w.Discard()
		return nil, err
	}
	return w, nil
}

// Commit puts the copied files at Path (replacing the empty folder there).
func (w *NewWorkspace) Commit() error {
	if w.stage != "" {
		if err := os.Rename(w.stage, w.Path); err != nil {
			return fmt.Errorf("put the copied workspace at %s: %w", w.Path, err)
		}
	}
	w.committed = true
	return nil
}

// Discard removes the staged copy, and the folder made for Path, unless
// Commit ran.
func (w *NewWorkspace) Discard() {
	if w.committed {
		return
	}
	if w.stage != "" {
		os.RemoveAll(w.stage)
	}
	if w.made {
		os.Remove(w.Path)
	}
}

// copyFrom copies src's files into a new stage beside Path: first a walk
// that sums their sizes (past max, nothing is copied), then the copy, in
// which a file grown meanwhile still counts against max.
func (w *NewWorkspace) copyFrom(src string, max int64, hidden []string) error {
	d, err := fsutil.OpenDir(src)
	if err != nil {
		return fmt.Errorf("read the workspace: %w", err)
	}
	defer d.Close()
	var sum int64
	sized := workspaceWalk{src: src, hidden: hidden, visit: func(_ *fsutil.Dir, _, _ string, info fs.FileInfo) error {
		if info.Mode().IsRegular() {
			sum += info.Size()
		}
		return nil
	}}
	if err := sized.walk(d, ".", 0); err != nil {
		return err
	}
	if sum > max {
		return fmt.Errorf("the workspace's files take %s, more than the session's disk budget (sandbox.max_disk_mb = %d): nothing was copied", mib(sum), max>>20)
	}
	if w.stage, err = os.MkdirTemp(filepath.Dir(w.Path), ".vis-fork-"); err != nil {
		return fmt.Errorf("copy the workspace: %w", err)
	}
	if st, err := os.Stat(src); err == nil {
		os.Chmod(w.stage, st.Mode().Perm()|0o700)
	}
	out, err := os.OpenRoot(w.stage)
	if err != nil {
		return fmt.Errorf("copy the workspace: %w", err)
	}
	defer out.Close()
	budget := max
	copier := &workspaceWalk{src: src, hidden: hidden}
	copier.visit = func(d *fsutil.Dir, name, rel string, info fs.FileInfo) error {
		switch mode := info.Mode(); {
		case mode.IsDir():
			return out.Mkdir(rel, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			target, err := readlinkAt(d, name)
			if err != nil {
				w.Left++ // no longer a link
				return nil
			}
			return out.Symlink(target, rel)
		}
		f, err := d.OpenRegular(name)
		if err != nil {
			w.Left++ // unreadable, or no longer a regular file
			return nil
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !copier.jailReads(st) {
			w.Left++ // swapped, since its status was read, for a file the jail may not read
			return nil
		}
		n, err := copyBounded(out, rel, f, info.Mode().Perm(), budget)
		w.Files, w.Bytes, budget = w.Files+1, w.Bytes+n, budget-n
		if errors.Is(err, errOverBudget) {
			return fmt.Errorf("the workspace's files grew past the session's disk budget (sandbox.max_disk_mb = %d) while they were copied: nothing was copied", max>>20)
		}
		return err
	}
	if err := copier.walk(d, ".", 0); err != nil {
		return err
	}
	w.Left += copier.left
	return nil
}

// errOverBudget is a copy stopped at the disk budget.
var errOverBudget = errors.New("over the disk budget")

// copyBounded copies f to rel beneath out, at most max bytes (past them:
// errOverBudget).
func copyBounded(out *os.Root, rel string, f io.Reader, perm fs.FileMode, max int64) (int64, error) {
	dst, err := out.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, fmt.Errorf("copy the workspace: %w", err)
	}
	n, err := io.Copy(dst, io.LimitReader(f, max+1))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return n, fmt.Errorf("copy the workspace's %s: %w", rel, err)
	case n > max:
		return n, errOverBudget
	}
	return n, nil
}

// workspaceWalk visits the entries of a workspace, parents first,
// through descriptors: a folder is entered only as a folder (not through
// a link), and an entry that cannot be read, hidden ones and special files
// are left (counted in left).
type workspaceWalk struct {
	src     string
	hidden  []string
	visit   func(d *fsutil.Dir, name, rel string, info fs.FileInfo) error
	entries int
	left    int
	groups  []int // this process's, once known
}

func (ww *workspaceWalk) walk(d *fsutil.Dir, rel string, depth int) error {
	if depth > maxWorkspaceDepth {
		return fmt.Errorf("the workspace's folders nest deeper than %d: not copied", maxWorkspaceDepth)
	}
	list, err := d.Open(".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		ww.left++
		return nil
	}
	names, err := list.Readdirnames(maxWorkspaceEntries + 1)
	list.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		ww.left++
		return nil
	}
	for _, name := range names {
		if ww.entries++; ww.entries > maxWorkspaceEntries {
			return fmt.Errorf("the workspace holds more than %d files: not copied", maxWorkspaceEntries)
		}
		r := path.Join(rel, name)
		if ww.isHidden(r) {
			ww.left++
			continue
		}
		info, err := d.Lstat(name)
		if err != nil {
			ww.left++
			continue
		}
		mode := info.Mode()
		if !mode.IsDir() && !mode.IsRegular() && mode&fs.ModeSymlink == 0 || !ww.jailReads(info) {
			ww.left++ // a socket, FIFO or device; or what the jail may not read
			continue
		}
		if err := ww.visit(d, name, r, info); err != nil {
			return err
		}
		if !mode.IsDir() {
			continue
		}
		sub, err := d.OpenDir(name)
		if err != nil {
			ww.left++
			continue
		}
		// What was opened is judged: the session's processes may have
		// swapped the name for a folder the jail may not enter since
		// its status was read.
		if st, err := sub.Stat(); err != nil || !st.IsDir() || !ww.jailReads(st) {
			sub.Close()
			ww.left++
			continue
		}
		err = ww.walk(sub, r, depth+1)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// jailReads says whether the session's jailed process, which runs as
// this user without the capabilities that pass over file modes (root's
// too), may read the file (a folder: list and enter it), by its mode
// bits: the copy, made by the user (root, maybe), must not hand a fork
// what the session could not read.
func (ww *workspaceWalk) jailReads(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || info.Mode()&fs.ModeSymlink != 0 {
		return true
	}
	need := uint32(4)
	if info.IsDir() {
		need = 5 // read and search
	}
	perm := st.Mode & 0o777
	switch {
	case int(st.Uid) == os.Geteuid():
		return perm>>6&need == need
	case ww.inGroup(int(st.Gid)):
		return perm>>3&need == need
	}
	return perm&need == need
}

// inGroup says whether this process is in group gid.
func (ww *workspaceWalk) inGroup(gid int) bool {
	if ww.groups == nil {
		ww.groups, _ = os.Getgroups()
		ww.groups = append(ww.groups, os.Getegid())
	}
	return slices.Contains(ww.groups, gid)
}

// isHidden says whether rel (in the workspace) is or is inside one of
// the hidden paths.
func (ww *workspaceWalk) isHidden(rel string) bool {
	p := filepath.Join(ww.src, filepath.FromSlash(rel))
	for _, h := range ww.hidden {
		if realpath.Within(p, h) {
			return true
		}
	}
	return false
}

// readlinkAt is the target of the symlink name in d.
func readlinkAt(d *fsutil.Dir, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(d.Fd(), name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// mib is n bytes in MiB, for a message.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
