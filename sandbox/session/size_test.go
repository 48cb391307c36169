package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSnapshotSizeBounded: the walk counts regular files once (a hard
// link too), leaves out the host's files and the skipped folders, follows
// no link, and stops at its bounds of entries and depth, saying so.
func TestSnapshotSizeBounded(t *testing.T) {
	f := Folder{Dir: t.TempDir()}
	outside := t.TempDir()
	write := func(rel string, n int) {
		t.Helper()
		p := filepath.Join(f.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("snapshot.pkl", 1000)
	write("state/spill/a.npy", 200)
	write("tmp/big", 1<<20)
	write("state/cache/big", 1<<20)
	write(metaFile, 5000)
	if err := os.Link(filepath.Join(f.Dir, "snapshot.pkl"), filepath.Join(f.Dir, "state", "history-1.pkl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"state/out", "state/big"} {
		if err := os.Symlink(filepath.Join(outside, filepath.Base(link)), filepath.Join(f.Dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if n, cut := f.SnapshotSize(); n != 1200 || cut {
		t.Errorf("the size: %d (cut %v), want 1200", n, cut)
	}

	deep := filepath.Join(f.Dir, "state", strings.Repeat("d/", sizeMaxDepth+5))
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if n, cut := f.SnapshotSize(); n != 1200 || !cut {
		t.Errorf("a tree %d deep: %d (cut %v), want at least 1200", sizeMaxDepth+5, n, cut)
	}
	os.RemoveAll(filepath.Join(f.Dir, "state", "d"))

	defer func(n int) { sizeMaxEntries = n }(sizeMaxEntries)
	sizeMaxEntries = 500
	for i := range 2000 {
		write(fmt.Sprintf("state/many/%d", i), 1)
	}
	start := time.Now()
	n, cut := f.SnapshotSize()
	if !cut || n < 1 || n > 1200+int64(sizeMaxEntries) {
		t.Errorf("2000 files past a bound of %d entries: %d (cut %v)", sizeMaxEntries, n, cut)
	}
	t.Logf("%d bytes counted before the bound, in %s", n, time.Since(start))
}
