package transfer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vis-agent/vis-agent/sandbox/session"
)

// historyDir holds the snapshots after a session's last blocks, each
// named "<block>-<parent>" (HISTORY_DIR of
// sandbox/child/py/vis_sandbox/history.py).
const historyDir = "history"

// Fork makes the session t names, which must not exist, a copy of src's
// state: its snapshot (at > 0: the one its history keeps after block at),
// its block counter (the fork's blocks number on from the source's) and
// its spill files, copied, never read. Its first block's notice says
// where it came from, and its Meta records it (sandbox list). Not copied:
// the journal, the history, the attachments, the workspace's files. The
// session appears whole or not at all.
func Fork(src Source, at int, t Target) error {
	final := session.Find(t.Sessions, t.Meta)
	if _, err := os.Lstat(final.Dir); err == nil {
		return fmt.Errorf("session %q of workspace %s exists: give another name, or delete it (vis-agent sandbox rm)", t.Meta.Name, t.Meta.Workspace)
	}
	root, err := os.OpenRoot(src.Folder.StateDir())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session %q has no snapshot to fork: it ran no block", src.Meta.Name)
	}
	if err != nil {
		return fmt.Errorf("read the session's state: %w", err)
	}
	defer root.Close()
	snapshot := snapshotFile
	if at > 0 {
		if snapshot, err = historyEntry(root, at); err != nil {
			return fmt.Errorf("session %q: %w", src.Meta.Name, err)
		}
	}
	if err := os.MkdirAll(t.Sessions, 0o700); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	stage, err := os.MkdirTemp(t.Sessions, ".fork-")
	if err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	defer os.RemoveAll(stage)
	t.Meta.ForkOf = &session.ForkOf{Session: src.Meta.Name, Block: at}
	if t.Meta.Workspace != src.Meta.Workspace {
		t.Meta.ForkOf.Workspace = src.Meta.Workspace
	}
	staged, err := session.Create(stage, t.Meta)
	if err != nil {
		return err
	}
	from := src.Meta.Name
	if t.Meta.ForkOf.Workspace != "" {
		from += " of " + src.Meta.Workspace
	}
	where := "its last block"
	if at > 0 {
		where = "block " + strconv.Itoa(at)
	}
	if err := staged.WriteStopped(fmt.Sprintf("the session was forked from session %s after %s (vis-agent sandbox fork)", from, where)); err != nil {
		return err
	}
	dest := staged.StateDir()
	if err := os.MkdirAll(filepath.Join(dest, spillDir), 0o700); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	copies := [][2]string{{snapshot, snapshotFile}, {countFile, countFile}}
	for _, name := range plainFiles(root, spillDir) {
		copies = append(copies, [2]string{spillDir + "/" + name, spillDir + "/" + name})
	}
	budget := src.MaxStateBytes
	for _, c := range copies {
		n, err := copyState(root, c[0], filepath.Join(dest, filepath.FromSlash(c[1])), budget)
		if err != nil {
			return err
		}
		budget -= n
	}
	if err := os.Rename(staged.Dir, final.Dir); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	return nil
}

// historyEntry is the name (under the state folder) of the snapshot the
// history keeps after block, or why there is none.
func historyEntry(root *os.Root, block int) (string, error) {
	prefix := strconv.Itoa(block) + "-"
	var have []int
	for _, name := range plainFiles(root, historyDir) {
		b, parent, ok := strings.Cut(name, "-")
		n, err1 := strconv.Atoi(b)
		_, err2 := strconv.Atoi(parent)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		if strings.HasPrefix(name, prefix) {
			return historyDir + "/" + name, nil
		}
		have = append(have, n)
	}
	if len(have) == 0 {
		return "", fmt.Errorf("its history holds no block (sandbox.history_blocks)")
	}
	return "", fmt.Errorf("block %d is not in its history (it keeps the last blocks, sandbox.history_blocks); sandbox defs names the blocks it holds", block)
}

// plainFiles are the regular files of the folder dir beneath root, by
// plain names (not a temp file of a save under way), through no link.
func plainFiles(root *os.Root, dir string) []string {
	d, err := root.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	entries, _ := d.ReadDir(maxEntries)
	d.Close()
	var out []string
	for _, e := range entries {
		if plainName(e.Name()) && !strings.Contains(e.Name(), ".tmp-") && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out
}

// copyState copies the regular file name beneath root to dest, at most
// max bytes; a name that is not there is no error (a counter not written
// yet). It returns the bytes copied.
func copyState(root *os.Root, name, dest string, max int64) (int64, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) && name != snapshotFile {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the session's %s: %w", name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return 0, fmt.Errorf("the session's %s is not a regular file", name)
	}
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("fork: %w", err)
	}
	n, err := io.Copy(out, io.LimitReader(f, max+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("copy the session's %s: %w", name, err)
	}
	if n > max {
		return n, fmt.Errorf("the session's state is over %d MiB (sandbox.max_snapshot_mb)", max>>20)
	}
	return n, nil
}
