package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vis-agent/vis-agent/internal/fsutil"
)

// TestWriteIn: a file is written whole with the mode asked; without
// replace an existing name (a symlink too) is kept, with replace a
// symlink at the name is replaced, its target untouched; no temporary
// file is left.
func TestWriteIn(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "target")
	os.WriteFile(target, []byte("outside\n"), 0o644)
	os.Symlink(target, filepath.Join(dir, "link"))
	d, err := fsutil.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n, err := WriteIn(d, "new", strings.NewReader("one"), 0o640, false); err != nil || n != 3 {
		t.Fatal(n, err)
	}
	if info, err := os.Stat(filepath.Join(dir, "new")); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("new: %v %v", info, err)
	}
	for _, name := range []string{"new", "link"} {
		if _, err := WriteIn(d, name, strings.NewReader("two"), 0o644, false); !errors.Is(err, fs.ErrExist) {
			t.Errorf("%s without replace: %v", name, err)
		}
	}
	if _, err := WriteIn(d, "link", strings.NewReader("three"), 0o644, true); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(target); string(data) != "outside\n" {
		t.Errorf("the symlink's target was written: %q", data)
	}
	if info, err := os.Lstat(filepath.Join(dir, "link")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("link was not replaced: %v %v", info, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left: %v", entries)
	}
}

// TestWrite: Write makes the folder and replaces the file.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "rec.json")
	for _, text := range []string{"1", "2"} {
		if err := Write(path, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(path); string(data) != "2" {
		t.Errorf("%q", data)
	}
}
