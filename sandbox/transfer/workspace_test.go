package transfer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestForkWorkspaceCopy: the copy keeps files, folders and links (as
// links), and leaves out the hidden folder (vis-agent's own inside the
// workspace) and special files; nothing is at the destination until
// Commit, and Discard leaves nothing. What the jailed process could not
// read by its mode bits is left out even when the test runs as root.
func TestForkWorkspaceCopy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "ws")
	hidden := filepath.Join(src, "vis", "sandbox")
	for name, data := range map[string]string{"a.txt": "a", "sub/b.txt": "bb", "vis/config.toml": "c", "vis/sandbox/sessions/x/state/snapshot.bin": "secret"} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/etc", filepath.Join(src, "etc-link"))
	os.Symlink("../a.txt", filepath.Join(src, "sub", "a-link"))
	syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600)
	os.WriteFile(filepath.Join(src, "mode0.txt"), []byte("unreadable"), 0)
	os.Mkdir(filepath.Join(src, "shut"), 0o300) // no read: not listed in the jail
	os.WriteFile(filepath.Join(src, "shut", "in.txt"), []byte("x"), 0o644)
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "shut"), 0o755) }) // for the temp folder's removal

	dest := filepath.Join(dir, "copy")
	w, err := ForkWorkspace(src, dest, true, 1<<20, []string{hidden})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dest); err == nil {
		t.Error("the copy is at its place before Commit")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Discard() // after Commit: nothing
	if w.Files != 3 || w.Bytes != 4 || w.Left != 4 {
		t.Errorf("files %d, bytes %d, left %d; want 3, 4, 4 (the hidden folder, the FIFO, the mode 0 file, the folder without read)", w.Files, w.Bytes, w.Left)
	}
	for name, want := range map[string]string{"a.txt": "a", "sub/b.txt": "bb", "vis/config.toml": "c"} {
		if data, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(data) != want {
			t.Errorf("%s: %q %v", name, data, err)
		}
	}
	for link, target := range map[string]string{"etc-link": "/etc", "sub/a-link": "../a.txt"} {
		if got, err := os.Readlink(filepath.Join(dest, link)); err != nil || got != target {
			t.Errorf("%s: %q %v", link, got, err)
		}
	}
	for _, gone := range []string{"vis/sandbox", "fifo", "mode0.txt", "shut"} {
		if _, err := os.Lstat(filepath.Join(dest, gone)); err == nil {
			t.Errorf("%s was copied", gone)
		}
	}

	// past the budget: an error, and nothing left beside the destination
	over := filepath.Join(dir, "over")
	if _, err := ForkWorkspace(src, over, true, 3, []string{hidden}); err == nil || !strings.Contains(err.Error(), "more than the session's disk budget") {
		t.Errorf("past the budget: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("left in %s: %v", dir, entries)
	}
	// a destination inside the workspace, and a non-empty one
	if _, err := ForkWorkspace(src, filepath.Join(src, "sub", "in"), false, 1<<20, nil); err == nil || !strings.Contains(err.Error(), "inside the session's workspace") {
		t.Errorf("inside: %v", err)
	}
	if _, err := ForkWorkspace(src, dest, true, 1<<20, nil); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("not empty: %v", err)
	}
}
